"""notes_delete over stdio: the official SDK client against a real server process.

The server runs behind `tee` on both pipes, so every line it wrote is validated against
the 2026-07-28 schema, matched to the request that caused it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.conftest import Deployment
from tests.schema import check_server_message

pytestmark = pytest.mark.anyio


def server_command(deployment: Deployment) -> list[str]:
    return [sys.executable, "-m", "notewarden", "serve", "--config", str(deployment.config)]


@asynccontextmanager
async def recorded_client(deployment: Deployment, **kwargs: Any) -> AsyncIterator[Client]:
    """An SDK client on a stdio server whose two pipes are recorded, then checked against the schema."""
    sent, received = deployment.root / "stdin.jsonl", deployment.root / "stdout.jsonl"
    inner = " ".join(shlex.quote(a) for a in server_command(deployment))
    script = f"tee -a {shlex.quote(str(sent))} | {inner} | tee -a {shlex.quote(str(received))}"
    params = StdioServerParameters(command="/bin/sh", args=["-c", script], env=dict(os.environ))
    async with Client(params, mode="auto", **kwargs) as client:
        yield client
    check_recorded(sent, received)


def check_recorded(sent: Path, received: Path) -> None:
    methods = {}
    for line in sent.read_text().splitlines():
        message = json.loads(line)
        if "id" in message and "method" in message:
            methods[message["id"]] = message["method"]
    lines = received.read_text().splitlines()
    assert lines, "the server wrote nothing"
    for line in lines:
        message = json.loads(line)
        check_server_message(methods.get(message.get("id")), message)


def choose(title_part: str, action: str = "accept", confirm: bool = True) -> Any:
    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        options = params.requested_schema["properties"]["note_id"]["oneOf"]
        picked = next(o["const"] for o in options if title_part in o["title"])
        if action != "accept":
            return types.ElicitResult(action=action)
        return types.ElicitResult(action="accept", content={"note_id": picked, "confirm": confirm})

    return callback


@pytest.mark.resolves_files
async def test_sdk_client_drives_the_whole_delete(deployment: Deployment) -> None:
    async with recorded_client(deployment, elicitation_callback=choose("2019")) as client:
        result = await client.call_tool(
            "notes_delete", {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
        )
    assert not result.is_error
    assert result.structured_content["outcome"] == "deleted"
    assert [d["id"] for d in result.structured_content["deleted"]] == ["reports/tps-2019.md"]
    assert not (deployment.notes / "reports/tps-2019.md").exists()
    assert (deployment.notes / "reports/tps-2026-q3.md").exists()


@pytest.mark.parametrize(("action", "outcome"), [("decline", "declined"), ("cancel", "cancelled")])
async def test_decline_and_cancel_delete_nothing(deployment: Deployment, action: str, outcome: str) -> None:
    async with recorded_client(deployment, elicitation_callback=choose("2019", action)) as client:
        result = await client.call_tool(
            "notes_delete", {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
        )
    assert result.structured_content["outcome"] == outcome
    assert (deployment.notes / "reports/tps-2019.md").exists()


async def test_manual_rounds_replay_and_binding(deployment: Deployment) -> None:
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    async with recorded_client(deployment, elicitation_callback=choose("2019")) as client:
        first = await client.session.call_tool("notes_delete", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        answer = {
            "delete_choice": types.ElicitResult(
                action="accept", content={"note_id": "reports/tps-2019.md", "confirm": True}
            )
        }
        with pytest.raises(MCPError) as changed:
            await client.session.call_tool(
                "notes_delete",
                {**args, "title": "TPS"},
                input_responses=answer,
                request_state=first.request_state,
                allow_input_required=True,
            )
        assert changed.value.code == -32602
        done = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult) and done.structured_content["outcome"] == "deleted"
        replay = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(replay, types.CallToolResult) and replay.is_error


async def test_client_without_elicitation_gets_32021(deployment: Deployment) -> None:
    async with recorded_client(deployment) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "TPS"})
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def test_discover_and_tools_list(deployment: Deployment) -> None:
    async with recorded_client(deployment) as client:
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == sorted(t.name for t in tools.tools)
        assert client.server_capabilities.tools is not None


def raw_exchange(
    deployment: Deployment, lines: list[dict[str, Any]], timeout: float = 20
) -> list[dict[str, Any]]:
    """Write JSON-RPC lines to a fresh server, read one reply per request, then close its stdin."""
    proc = subprocess.Popen(
        server_command(deployment), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
    proc.stdin.flush()
    expected = sum(1 for m in lines if "id" in m)
    out = [json.loads(proc.stdout.readline()) for _ in range(expected)]
    proc.stdin.close()
    assert proc.wait(timeout=timeout) == 0
    assert proc.stdout.read() == b"", "nothing may follow the replies (notifications get none)"
    methods = {m["id"]: m["method"] for m in lines if "id" in m}
    for message in out:
        check_server_message(methods.get(message.get("id")), message)
    return sorted(out, key=lambda m: m.get("id", 0))


def _meta(**overrides: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    m.update(overrides)
    return {k: v for k, v in m.items() if v is not None}


def test_stdio_notifications_get_no_response_and_errors_are_exact(deployment: Deployment) -> None:
    out = raw_exchange(
        deployment,
        [
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": _meta()}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/list",
                "params": {"_meta": _meta(**{"io.modelcontextprotocol/protocolVersion": "1900-01-01"})},
            },
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/list",
                "params": {"_meta": _meta(**{"io.modelcontextprotocol/protocolVersion": None})},
            },
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {
                    "name": "notes_delete",
                    "arguments": {"workspaceUri": deployment.notes_uri, "title": "TPS"},
                    "_meta": _meta(
                        **{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}}
                    ),
                },
            },
            {"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": {"_meta": _meta()}},
        ],
    )
    assert [m.get("id") for m in out] == [1, 2, 3, 4, 5]
    by_id = {m["id"]: m for m in out}
    assert "tools" in by_id[1]["result"]
    assert by_id[2]["error"]["code"] == -32022
    assert by_id[2]["error"]["data"]["requested"] == "1900-01-01"
    assert set(by_id[2]["error"]["data"]) == {"supported", "requested"}
    assert by_id[3]["error"]["code"] == -32602
    assert by_id[4]["error"]["code"] == -32021
    assert by_id[4]["error"]["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    assert by_id[5]["result"]["resultType"] == "complete"


def test_stdio_server_exits_on_eof(deployment: Deployment) -> None:
    proc = subprocess.run(server_command(deployment), input=b"", capture_output=True, timeout=15, check=False)
    assert proc.returncode == 0
    assert proc.stdout == b""
