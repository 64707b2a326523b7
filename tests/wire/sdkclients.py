"""The official SDK client on either transport, every server message recorded and schema-checked.

stdio: the server's pipes are teed (`test_stdio.recorded_client`). HTTP: a real server process,
the SDK's Streamable HTTP client over an httpx2 transport that keeps a copy of every response
body (JSON or SSE) with the method of the request it answered. On exit every message is checked
with `check_server_message`, and every successful tool result against the tool's outputSchema
and its mirrored text block.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import ALICE_TOKEN, Deployment, start_http_server
from tests.schema import check_server_message
from tests.wire.test_stdio import recorded_client

TRANSPORTS = ["stdio", "http"]


class _Tee(httpx2.AsyncByteStream):
    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        sink: list[tuple[str | None, dict[str, Any]]],
        method: str | None,
        sse: bool,
    ) -> None:
        self.inner, self.sink, self.method, self.sse = inner, sink, method, sse
        self.body = bytearray()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.body.extend(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()
        text = self.body.decode()
        if self.sse:
            for event in text.replace("\r\n", "\n").split("\n\n"):
                data = [line[5:].strip() for line in event.splitlines() if line.startswith("data:")]
                if data:
                    self.sink.append((self.method, json.loads("\n".join(data))))
        elif text.strip():
            self.sink.append((self.method, json.loads(text)))


class RecordingTransport(httpx2.AsyncBaseTransport):
    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.messages: list[tuple[str | None, dict[str, Any]]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        method = None
        try:
            body = json.loads(request.content)
            method = body.get("method") if isinstance(body, dict) else None
        except ValueError:
            pass
        response = await self.inner.handle_async_request(request)
        ctype = response.headers.get("content-type", "")
        if not ctype.startswith(("application/json", "text/event-stream")):
            return response
        stream = _Tee(response.stream, self.messages, method, ctype.startswith("text/event-stream"))  # type: ignore[arg-type]
        return httpx2.Response(
            response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def sdk_client(transport: str, deployment: Deployment, **kwargs: Any) -> AsyncIterator[Client]:
    kwargs.setdefault("cache", None)
    if transport == "stdio":
        async with recorded_client(deployment, **kwargs) as client:
            yield client
        return
    server = start_http_server(deployment.config, deployment.root / "sdk-http.log")
    recorder = RecordingTransport()
    try:
        async with (
            httpx2.AsyncClient(
                transport=recorder, headers={"Authorization": f"Bearer {ALICE_TOKEN}"}, timeout=60
            ) as http,
            Client(streamable_http_client(server.url, http_client=http), mode="auto", **kwargs) as client,
        ):
            yield client
    finally:
        server.stop()
    assert recorder.messages, "the server sent nothing"
    for method, message in recorder.messages:
        check_server_message(method, message)


async def call(client: Client, name: str, arguments: dict[str, Any], **kwargs: Any) -> types.CallToolResult:
    """Call a tool; a successful result must match the tool's outputSchema and mirror it in text."""
    result = await client.call_tool(name, arguments, **kwargs)
    if not result.is_error and result.structured_content is not None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools[name].output_schema
        assert schema is not None
        errors = list(Draft202012Validator(schema).iter_errors(result.structured_content))
        assert not errors, errors[0].message
        texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
        if name not in ("notes_delete",):  # notes_delete answers in a sentence (the seed's choice)
            assert json.loads(texts[0]) == result.structured_content
    return result


def error_code(result: types.CallToolResult) -> str:
    assert result.is_error, result
    assert result.structured_content is not None
    return str(result.structured_content["error"]["code"])
