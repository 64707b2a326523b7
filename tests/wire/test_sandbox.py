"""The Landlock self-sandbox and the start-up lines of real server processes.

A test-only entry point (tests/sandbox/serve.py) starts the shipped server plus `debug_file`, a
tool that opens whatever path it is given: a simulated tool bug. Sandboxed, that bug reaches
nothing outside the workspaces; with --no-sandbox the same calls succeed (so the test has teeth).
tests/sandbox/seccomp_exec.py makes syscalls fail the way containers and systemd filters do.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ALICE_TOKEN, Deployment, HttpServer, start_http_server
from tests.unit.fsroot_cases import snapshot
from tests.wire.rawhttp import RawMcp

REPO = Path(__file__).resolve().parents[2]
SERVE_WITH_BUG = [sys.executable, str(REPO / "tests" / "sandbox" / "serve.py")]
SECCOMP_EXEC = [sys.executable, str(REPO / "tests" / "sandbox" / "seccomp_exec.py")]
NOTEWARDEN = [sys.executable, "-m", "notewarden", "serve"]


def log_events(log: Path, event: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [entry for entry in lines if entry.get("event") == event]


@pytest.fixture
def layout(tmp_path: Path) -> Deployment:
    """Workspaces, state and an outside dir under tmp_path; the config alone in tmp_path/etc."""
    from notewarden.demo import write_sample_workspace

    notes = write_sample_workspace(tmp_path / "notes")
    private = tmp_path / "private"
    private.mkdir()
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (tmp_path / "etc").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret\n")
    (outside / "victim.txt").write_text("do not delete\n")
    (notes / "esc").symlink_to(outside)
    (notes / "leak.md").symlink_to(outside / "secret.txt")
    d = Deployment(tmp_path, notes, private, state, tmp_path / "etc" / "notewarden.toml")
    d.write_config()
    return d


def debug_file(client: RawMcp, op: str, path: Path | str) -> dict[str, Any]:
    reply = client.call("debug_file", {"op": op, "path": str(path)})
    assert reply.status == 200, reply.text
    return reply.result["structuredContent"]


@pytest.fixture(params=["sandboxed", "unsandboxed"])
def buggy_server(request: pytest.FixtureRequest, layout: Deployment) -> Iterator[tuple[str, HttpServer]]:
    mode = str(request.param)
    extra = ["--no-sandbox"] if mode == "unsandboxed" else []
    server = start_http_server(
        layout.config, layout.root / f"{mode}.log", argv=SERVE_WITH_BUG, extra_args=extra
    )
    yield mode, server
    server.stop()


def test_a_tool_bug_reaches_nothing_outside_the_allowances(
    buggy_server: tuple[str, HttpServer], layout: Deployment
) -> None:
    mode, server = buggy_server
    outside = layout.root / "outside"
    before = snapshot(outside)
    client = RawMcp(server.url, ALICE_TOKEN)
    try:
        # inside the allowances: works either way
        assert debug_file(client, "read", layout.notes / "todo.md")["ok"] is True
        assert debug_file(client, "write", layout.notes / "scratch.txt")["ok"] is True
        assert debug_file(client, "write", "/dev/null")["ok"] is True
        escapes = [
            ("read", outside / "secret.txt"),
            ("read", layout.notes / "esc" / "secret.txt"),  # through a directory symlink
            ("read", layout.notes / "leak.md"),  # through a file symlink
            ("read", "/etc/passwd"),
            ("read", "/proc/self/environ"),
            ("list", layout.root),
            ("list", "/tmp"),
            ("write", outside / "new.txt"),
            ("write", layout.notes / "esc" / "new.txt"),
            ("unlink", layout.notes / "esc" / "victim.txt"),
        ]
        results = {f"{op} {path}": debug_file(client, op, path) for op, path in escapes}
    finally:
        client.close()
    log = server.log
    if mode == "sandboxed":
        assert {k: (r["ok"], r["errno"]) for k, r in results.items()} == {
            k: (False, "EACCES") for k in results
        }
        assert snapshot(outside) == before
        [line] = log_events(log, "sandbox")
        assert line["sandbox"] == "enforced" and line["abi"] >= 1
        assert str(layout.notes) in line["read_write"] and str(layout.state) in line["read_write"]
    else:
        assert all(r["ok"] for r in results.values()), results  # the same bug, unconfined, escapes
        assert not (outside / "victim.txt").exists()
        [line] = log_events(log, "sandbox")
        assert line["sandbox"] == "disabled"


def test_shipped_http_server_is_sandboxed_and_serves(layout: Deployment) -> None:
    server = start_http_server(layout.config, layout.root / "http.log")
    client = RawMcp(server.url, ALICE_TOKEN)
    try:
        args = {"workspaceUri": layout.notes_uri, "title": "TPS report"}
        state = client.call("notes_delete", args).result["requestState"]
        answer = {
            "delete_choice": {
                "action": "accept",
                "content": {"note_id": "reports/tps-2019.md", "confirm": True},
            }
        }
        done = client.call("notes_delete", args, inputResponses=answer, requestState=state)
        assert done.result["structuredContent"]["outcome"] == "deleted"
        refused = client.call("notes_delete", {"workspaceUri": layout.notes_uri + "/esc", "title": "secret"})
        assert refused.result["isError"] is True
    finally:
        client.close()
        server.stop()
    [line] = log_events(server.log, "sandbox")
    assert line["sandbox"] == "enforced" and line["bind_port"] == server.port
    assert (layout.root / "outside" / "secret.txt").exists()


@pytest.mark.parametrize("how", ["flag", "config"])
def test_explicit_opt_out_is_logged(layout: Deployment, how: str) -> None:
    if how == "config":
        layout.write_config(extra="[sandbox]\nenabled = false\n")
    server = start_http_server(
        layout.config, layout.root / "optout.log", extra_args=["--no-sandbox"] if how == "flag" else []
    )
    server.stop()
    [line] = log_events(server.log, "sandbox")
    assert line["sandbox"] == "disabled" and line["level"] == "warning"


def test_stdio_server_is_sandboxed(layout: Deployment) -> None:
    done = subprocess.run(
        [*NOTEWARDEN, "--workspace", str(layout.notes), "--state-dir", str(layout.state)],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    log = layout.root / "stdio.log"
    log.write_bytes(done.stderr)
    [line] = log_events(log, "sandbox")
    assert line["sandbox"] == "enforced" and line["bind_port"] is None


@pytest.mark.parametrize("err", ["ENOSYS", "EPERM"])
def test_kernel_without_landlock_degrades_with_a_clear_line(layout: Deployment, err: str) -> None:
    """landlock_create_ruleset answering ENOSYS (a kernel without Landlock) or EPERM (a seccomp filter)."""
    launcher = [*SECCOMP_EXEC, f"landlock_create_ruleset={err}", "--", *NOTEWARDEN]
    server = start_http_server(layout.config, layout.root / "nolandlock.log", argv=launcher)
    client = RawMcp(server.url, ALICE_TOKEN)
    try:
        assert client.call("notes_list", {"workspaceUri": layout.notes_uri}).status == 200
    finally:
        client.close()
        server.stop()
    [line] = log_events(server.log, "sandbox")
    assert line["sandbox"] == "unavailable" and line["level"] == "warning"
    assert ("Landlock" if err == "ENOSYS" else "EPERM") in line["msg"]


@pytest.mark.parametrize(("switch", "resolver"), [("1", "walk"), ("0", "openat2")])
def test_start_up_line_names_the_resolver(layout: Deployment, switch: str, resolver: str) -> None:
    server = start_http_server(
        layout.config, layout.root / "resolver.log", env={"NOTEWARDEN_FORCE_FALLBACK": switch}
    )
    server.stop()
    [line] = log_events(server.log, "workspaces_opened")
    assert line["resolver"] == resolver and line["workspaces"] == 2


def test_openat2_refused_with_eperm_falls_back_under_the_sandbox(layout: Deployment) -> None:
    """What systemd's SystemCallFilter= with SystemCallErrorNumber=EPERM does to openat2."""
    launcher = [*SECCOMP_EXEC, "openat2=EPERM", "--", *NOTEWARDEN]
    server = start_http_server(layout.config, layout.root / "eperm.log", argv=launcher)
    client = RawMcp(server.url, ALICE_TOKEN)
    try:
        args = {"workspaceUri": layout.notes_uri, "title": "stand-up"}
        round1 = client.call("notes_delete", args).result
        options = round1["inputRequests"]["delete_choice"]["params"]["requestedSchema"]["properties"]
        note_id = options["note_id"]["oneOf"][0]["const"]
        answer = {"delete_choice": {"action": "accept", "content": {"note_id": note_id, "confirm": True}}}
        done = client.call("notes_delete", args, inputResponses=answer, requestState=round1["requestState"])
        assert done.result["structuredContent"]["outcome"] == "deleted"
        assert not (layout.notes / note_id).exists()
    finally:
        client.close()
        server.stop()
    [opened] = log_events(server.log, "workspaces_opened")
    assert opened["resolver"] == "walk"
    [sandbox] = log_events(server.log, "sandbox")
    assert sandbox["sandbox"] == "enforced"
