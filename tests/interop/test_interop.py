"""Real TypeScript clients against a real notewarden, over stdio and Streamable HTTP.

* `@modelcontextprotocol/sdk@1.32.2`: a 2025-11-25 client (initialize handshake; the server
  asks with a live `elicitation/create`).
* `@modelcontextprotocol/client@2.4.0`: a 2026-07-28 client pinned to the modern era (the
  server answers `input_required`; the client fulfils it and retries).

Both are pinned in tests/interop/package-lock.json (`npm ci` by scripts/services) and run
on the machine's Node (>= 20). Over stdio the server's output is recorded and validated
against the official schema of the era the client speaks.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ALICE_TOKEN, BOB_TOKEN, Deployment, HttpServer
from tests.wire.legacy_schema import check_legacy_recording
from tests.wire.publishing import RecordingTarget, add_publish_config
from tests.wire.test_stdio import check_recorded

HERE = Path(__file__).resolve().parent
CLIENTS = {
    "sdk-1.32.2 (2025-11-25)": "sdk_v1_legacy.mjs",
    "client-2.4.0 (2026-07-28)": "client_v2_modern.mjs",
}
LEGACY, MODERN = CLIENTS


def node() -> str:
    path = shutil.which("node")
    assert path, "node is not on PATH (Node 20+ is needed for tests/interop)"
    assert (HERE / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(), (
        "tests/interop/node_modules is missing: run ./scripts/services (npm ci in tests/interop)"
    )
    return path


def run_client(client: str, scenario: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        [node(), str(HERE / CLIENTS[client]), json.dumps(scenario)],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"{client} printed nothing (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return dict(json.loads(lines[-1]))


def stdio_scenario(deployment: Deployment, **scenario: Any) -> dict[str, Any]:
    """The server behind `tee` on both pipes, so its every line can be validated afterwards."""
    sent, received = deployment.root / "stdin.jsonl", deployment.root / "stdout.jsonl"
    server = shlex.join([sys.executable, "-m", "notewarden", "serve", "--config", str(deployment.config)])
    script = f"tee -a {shlex.quote(str(sent))} | {server} | tee -a {shlex.quote(str(received))}"
    return {"transport": "stdio", "command": ["/bin/sh", "-c", script], **scenario}


def check_stdio_recording(deployment: Deployment, client: str) -> None:
    sent, received = deployment.root / "stdin.jsonl", deployment.root / "stdout.jsonl"
    if client == LEGACY:
        check_legacy_recording(sent, received)
    else:
        check_recorded(sent, received)


def delete_tps(deployment: Deployment, answer: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool": "notes_delete",
        "arguments": {"workspaceUri": deployment.notes_uri, "title": "TPS report"},
        "answer": answer,
    }


@pytest.fixture
def http(http_server: HttpServer) -> Iterator[HttpServer]:
    yield http_server


@pytest.mark.parametrize("client", CLIENTS)
def test_delete_over_stdio(deployment: Deployment, client: str) -> None:
    out = run_client(
        client, stdio_scenario(deployment, **delete_tps(deployment, {"action": "accept", "pick": "2019"}))
    )
    assert out["protocolVersion"] == ("2025-11-25" if client == LEGACY else "2026-07-28"), out
    assert [e["mode"] for e in out["elicitations"]] == ["form"]
    assert out["elicitations"][0]["fields"] == ["note_id", "confirm"]
    assert out["result"]["structuredContent"]["outcome"] == "deleted"
    assert [d["id"] for d in out["result"]["structuredContent"]["deleted"]] == ["reports/tps-2019.md"]
    assert not (deployment.notes / "reports/tps-2019.md").exists()
    check_stdio_recording(deployment, client)


@pytest.mark.parametrize("client", CLIENTS)
def test_delete_over_http(deployment: Deployment, http: HttpServer, client: str) -> None:
    scenario = {"transport": "http", "url": http.url, "token": ALICE_TOKEN}
    out = run_client(client, {**scenario, **delete_tps(deployment, {"action": "accept", "pick": "Q3"})})
    assert out["result"]["structuredContent"]["outcome"] == "deleted", out
    assert not (deployment.notes / "reports/tps-2026-q3.md").exists()
    assert (deployment.notes / "reports/tps-2019.md").exists()


@pytest.mark.parametrize(
    ("client", "action", "outcome"), [(LEGACY, "decline", "declined"), (MODERN, "cancel", "cancelled")]
)
def test_decline_and_cancel_over_stdio(
    deployment: Deployment, client: str, action: str, outcome: str
) -> None:
    out = run_client(client, stdio_scenario(deployment, **delete_tps(deployment, {"action": action})))
    assert out["result"]["structuredContent"]["outcome"] == outcome
    assert len(list((deployment.notes / "reports").glob("tps-*.md"))) == 2
    check_stdio_recording(deployment, client)


@pytest.mark.parametrize("client", CLIENTS)
def test_another_principal_gets_no_access(deployment: Deployment, http: HttpServer, client: str) -> None:
    scenario = {"transport": "http", "url": http.url, "token": BOB_TOKEN}
    out = run_client(client, {**scenario, **delete_tps(deployment, {"action": "accept", "pick": "2019"})})
    assert out["result"]["isError"] is True
    assert out["result"]["structuredContent"]["error"]["code"] == "workspace_not_granted"
    assert out["elicitations"] == []
    assert (deployment.notes / "reports/tps-2019.md").exists()


def publish_over_stdio(
    deployment: Deployment, client: str, answer: dict[str, Any]
) -> tuple[dict[str, Any], list]:
    """Run one notes_publish of the 2019 report through `client`; what it saw and what the target got."""
    target = RecordingTarget().start()
    try:
        add_publish_config(deployment, target)
        arguments = {"workspaceUri": deployment.notes_uri, "noteId": "reports/tps-2019.md", "target": "blog"}
        out = run_client(
            client, stdio_scenario(deployment, tool="notes_publish", arguments=arguments, answer=answer)
        )
    finally:
        target.stop()
    check_stdio_recording(deployment, client)
    return out, target.received


def test_legacy_sdk_sees_url_mode_with_an_elicitation_id(deployment: Deployment) -> None:
    out, received = publish_over_stdio(deployment, LEGACY, {"action": "decline"})
    [asked] = out["elicitations"]
    assert asked["mode"] == "url" and asked["elicitationId"] and "/connect/" in asked["url"]
    assert out["result"]["structuredContent"]["outcome"] == "declined"
    assert received == []


def test_modern_client_without_url_mode_gets_32021(deployment: Deployment) -> None:
    out, received = publish_over_stdio(deployment, MODERN, {"action": "accept"})
    assert received == []
    assert out["error"]["code"] == -32021, out
    assert out["error"]["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}
