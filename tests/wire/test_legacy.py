"""2025-11-25 clients: the official Python SDK `Client(mode="legacy")` over stdio and HTTP.

The same server process serves both eras; on a legacy session the tools ask with a live
`elicitation/create` request, and every line the server writes over stdio is checked
against the official 2025-11-25 schema.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import ALICE_TOKEN, BOB_TOKEN, Deployment, HttpServer
from tests.wire.legacy_schema import check_legacy_recording
from tests.wire.publishing import BrowserVisit, RecordingTarget, visit_connect_page

pytestmark = pytest.mark.anyio
TPS = "TPS report"


@asynccontextmanager
async def legacy_stdio(deployment: Deployment, **kwargs: Any) -> AsyncIterator[Client]:
    sent, received = deployment.root / "stdin.jsonl", deployment.root / "stdout.jsonl"
    command = [sys.executable, "-m", "notewarden", "serve", "--config", str(deployment.config)]
    script = f"tee -a {shlex.quote(str(sent))} | {shlex.join(command)} | tee -a {shlex.quote(str(received))}"
    params = StdioServerParameters(command="/bin/sh", args=["-c", script], env=dict(os.environ))
    async with Client(params, mode="legacy", **kwargs) as client:
        yield client
    out = check_legacy_recording(sent, received)
    assert out[0]["result"]["protocolVersion"] == "2025-11-25"


@asynccontextmanager
async def legacy_http(server: HttpServer, token: str, **kwargs: Any) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with Client(
        streamable_http_client(server.url, http_client=http), mode="legacy", **kwargs
    ) as client:
        yield client


def pick(title_part: str, action: str = "accept", confirm: bool = True, seen: list[Any] | None = None) -> Any:
    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        if seen is not None:
            seen.append(params)
        options = params.requested_schema["properties"]["note_id"]["oneOf"]
        if action != "accept":
            return types.ElicitResult(action=action)
        picked = next(o["const"] for o in options if title_part in o["title"])
        return types.ElicitResult(action="accept", content={"note_id": picked, "confirm": confirm})

    return callback


async def test_legacy_stdio_delete_asks_live_and_trashes_once(deployment: Deployment) -> None:
    seen: list[Any] = []
    async with legacy_stdio(deployment, elicitation_callback=pick("2019", seen=seen)) as client:
        assert client.session.protocol_version == "2025-11-25"
        result = await client.call_tool("notes_delete", {"workspaceUri": deployment.notes_uri, "title": TPS})
    assert result.structured_content["outcome"] == "deleted"
    assert [d["id"] for d in result.structured_content["deleted"]] == ["reports/tps-2019.md"]
    assert not (deployment.notes / "reports/tps-2019.md").exists()
    [form] = seen
    titles = [o["title"] for o in form.requested_schema["properties"]["note_id"]["oneOf"]]
    assert len(titles) == 3, "the same candidates as the modern path"


@pytest.mark.parametrize(
    ("action", "confirm", "outcome"),
    [("decline", True, "declined"), ("cancel", True, "cancelled"), ("accept", False, "not_confirmed")],
)
async def test_legacy_stdio_outcome_table(
    deployment: Deployment, action: str, confirm: bool, outcome: str
) -> None:
    async with legacy_stdio(deployment, elicitation_callback=pick("2019", action, confirm)) as client:
        result = await client.call_tool("notes_delete", {"workspaceUri": deployment.notes_uri, "title": TPS})
    assert result.structured_content["outcome"] == outcome
    assert "retriableUntil" not in result.structured_content, "a live answer cannot be given again"
    assert (deployment.notes / "reports/tps-2019.md").exists()


async def test_legacy_stdio_invalid_answer_deletes_nothing(deployment: Deployment) -> None:
    async def off_list(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(
            action="accept", content={"note_id": "../private/secret.md", "confirm": True}
        )

    async with legacy_stdio(deployment, elicitation_callback=off_list) as client:
        result = await client.call_tool("notes_delete", {"workspaceUri": deployment.notes_uri, "title": TPS})
    assert result.is_error and result.structured_content["error"]["code"] == "invalid_answer"
    assert len(list(deployment.notes.rglob("*.md"))) >= 3


async def test_legacy_client_without_elicitation_is_refused(deployment: Deployment) -> None:
    async with legacy_stdio(deployment) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("notes_delete", {"workspaceUri": deployment.notes_uri, "title": TPS})
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def test_legacy_roots_never_widen_authorization(deployment: Deployment) -> None:
    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=deployment.private_uri, name="bob's")])  # type: ignore[arg-type]

    async with legacy_stdio(
        deployment, list_roots_callback=roots, elicitation_callback=pick("TPS")
    ) as client:
        result = await client.call_tool(
            "notes_delete", {"workspaceUri": deployment.private_uri, "title": "TPS"}
        )
    assert result.is_error and result.structured_content["error"]["code"] == "workspace_not_granted"
    assert (deployment.private / "secret-tps.md").exists()


@pytest.fixture
def http_server(publishing_server: HttpServer) -> HttpServer:
    return publishing_server


async def test_legacy_http_delete_is_bound_to_the_bearer_principal(
    deployment: Deployment, http_server: HttpServer
) -> None:
    async with legacy_http(http_server, ALICE_TOKEN, elicitation_callback=pick("2019")) as client:
        result = await client.call_tool("notes_delete", {"workspaceUri": deployment.notes_uri, "title": TPS})
    assert result.structured_content["outcome"] == "deleted"
    async with legacy_http(http_server, BOB_TOKEN, elicitation_callback=pick("2026")) as client:
        refused = await client.call_tool("notes_delete", {"workspaceUri": deployment.notes_uri, "title": TPS})
    assert refused.is_error and refused.structured_content["error"]["code"] == "workspace_not_granted"
    assert (deployment.notes / "reports/tps-2026-q3.md").exists()


async def test_legacy_http_publish_waits_for_the_browser_then_completes(
    deployment: Deployment, http_server: HttpServer, target: RecordingTarget
) -> None:
    """2025-11-25 URL mode: elicitationId, accept = consent, the server waits for its own record."""
    visits: list[BrowserVisit] = []
    notices: list[Any] = []
    threads: list[threading.Thread] = []

    async def consent_then_browse(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams) and params.elicitation_id
        browse = threading.Thread(
            target=lambda: visits.append(
                visit_connect_page(params.url, token=ALICE_TOKEN, credential="k" * 20)
            )
        )
        browse.start()
        threads.append(browse)
        return types.ElicitResult(action="accept")  # before the page is done: consent only

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            notices.append(message.params.elicitation_id)

    args = {"workspaceUri": deployment.notes_uri, "noteId": "reports/tps-2019.md", "target": "blog"}
    async with legacy_http(
        http_server, ALICE_TOKEN, elicitation_callback=consent_then_browse, message_handler=on_message
    ) as client:
        result = await client.call_tool("notes_publish", args)
    for t in threads:
        t.join(timeout=60)
    assert result.structured_content["outcome"] == "published", result
    assert [v.completion for v in visits] == ["completed"]
    assert len(notices) == 1
    assert [r.headers["authorization"] for r in target.received] == ["Bearer " + "k" * 20]


async def test_legacy_publish_decline(
    deployment: Deployment, http_server: HttpServer, target: RecordingTarget
) -> None:
    async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    args = {"workspaceUri": deployment.notes_uri, "noteId": "reports/tps-2019.md", "target": "blog"}
    async with legacy_http(http_server, ALICE_TOKEN, elicitation_callback=decline) as client:
        result = await client.call_tool("notes_publish", args)
    assert result.structured_content["outcome"] == "declined"
    assert target.received == []
