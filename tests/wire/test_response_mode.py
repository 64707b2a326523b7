"""Each 2026-07-28 request is framed by what it can receive: JSON unless it asked for notifications.

Against the real HTTP application in a real process (tests/conformance/serve.py: the shipped
app plus the test-only tool that reports progress), over raw HTTP; every message is
validated against the 2026-07-28 schema by RawMcp.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from notewarden.web.body import decode_json
from notewarden.web.response_mode import may_stream
from tests.conftest import ALICE_TOKEN, Deployment, HttpServer, free_port
from tests.wire.rawhttp import RawMcp, meta

SERVE = Path(__file__).resolve().parents[1] / "conformance" / "serve.py"


@pytest.fixture
def fixture_server(deployment: Deployment) -> Iterator[HttpServer]:
    port = free_port()
    log = deployment.root / "serve.log"
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [sys.executable, str(SERVE), "--config", str(deployment.config), "--port", str(port)],
            stdout=sink,
            stderr=sink,
            env={**os.environ, "NOTEWARDEN_CONFORMANCE_TOKEN": ALICE_TOKEN},
        )
    server = HttpServer(f"http://127.0.0.1:{port}/mcp", port, process, log)
    try:
        _wait(server)
        yield server
    finally:
        server.stop()


def _wait(server: HttpServer) -> None:
    import socket
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert server.process.poll() is None, server.log.read_text()[-2000:]
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"serve.py did not listen: {server.log.read_text()[-2000:]}")


def progress_call(mcp: RawMcp, **extra: Any) -> Any:
    params = {"name": "test_tool_with_progress", "arguments": {}, "_meta": meta(**extra)}
    return mcp.request("tools/call", params)


def test_a_request_with_a_progress_token_gets_its_progress_on_a_stream(fixture_server: HttpServer) -> None:
    mcp = RawMcp(fixture_server.url, ALICE_TOKEN)
    try:
        reply = progress_call(mcp, progressToken="p-1")
    finally:
        mcp.close()
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    progress = [
        m["params"]["progress"] for m in reply.messages if m.get("method") == "notifications/progress"
    ]
    assert progress == [0.0, 50.0, 100.0]
    assert reply.result["resultType"] == "complete"


def test_a_request_without_one_is_answered_as_plain_json(fixture_server: HttpServer) -> None:
    mcp = RawMcp(fixture_server.url, ALICE_TOKEN)
    try:
        reply = progress_call(mcp)
        listing = mcp.request("tools/list")
    finally:
        mcp.close()
    for r in (reply, listing):
        assert r.status == 200
        assert r.headers["content-type"].startswith("application/json")
        assert len(r.messages) == 1
    assert reply.result["resultType"] == "complete"
    assert any(t["name"] == "notes_delete" for t in listing.result["tools"])


@pytest.mark.parametrize(
    ("body", "streams"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{}}}', False),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', False),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":7}}}', True),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
            b'"params":{"_meta":{"io.modelcontextprotocol/logLevel":"info"}}}',
            True,
        ),
        (b'{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}', True),
        (b"not json", True),
        (b"[1, 2]", True),
    ],
)
def test_may_stream(body: bytes, streams: bool) -> None:
    assert may_stream(decode_json(body)) is streams
