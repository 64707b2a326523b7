"""Two fixes around the SDK's HTTP validation ladder.

`OmitUnreadableId`: when the request id could not be read (a parse error, a body that is not
one request object), the SDK answers `"id": null` (JSON-RPC 2.0 §5). The MCP 2026-07-28 schema
has no null RequestId: the id is omitted instead. This rewrites exactly those JSON error
bodies; everything else, and every SSE stream, passes through untouched.

`EnvelopeVersionGuard`, in front of the ladder: a body over `[http] max_body_bytes` is answered
413 with the limit and the size received (the SDK's 413 names neither); a body with a member name
twice (`notewarden.jsonrpc`) is answered -32700 with HTTP 400 and no id; and one precedence fix:

The spec (basic/index, `_meta`) makes a *missing or invalid* required envelope key a
-32602 with HTTP 400. The SDK's ladder checks the `MCP-Protocol-Version` header against
the body before it checks the body value's type, so over HTTP a non-string
`io.modelcontextprotocol/protocolVersion` (a number, a list, null) surfaces as -32020
HeaderMismatch instead. This guard answers exactly that case, and passes every other
request through unchanged (the body is replayed byte for byte); all other rungs stay the
SDK's.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from notewarden.jsonrpc import DuplicateMember, parse_error
from notewarden.web.body import peek_body

__all__ = ["EnvelopeVersionGuard", "OmitUnreadableId"]

_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


class EnvelopeVersionGuard:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        buffered, receive = await peek_body(scope, receive, self.max_body_bytes)
        if not buffered.complete:
            await _send_json(send, 413, self.too_large(scope))
            return
        if isinstance(buffered.decoded, DuplicateMember):
            await _send_json(send, 400, parse_error(buffered.decoded))
            return
        rejection = _non_string_version(buffered.decoded)
        if rejection is not None:
            await _send_json(send, 400, rejection)
            return
        await self.app(scope, receive, send)

    def too_large(self, scope: Scope) -> dict[str, Any]:
        declared = dict(scope["headers"]).get(b"content-length", b"")
        size = f"{int(declared)} bytes" if declared.isdigit() else f"more than {self.max_body_bytes} bytes"
        return {
            "error": "request_too_large",
            "error_description": f"the request body is too large: {size} received; at most "
            f"{self.max_body_bytes} bytes are accepted ([http] max_body_bytes)",
        }


class OmitUnreadableId:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def rewriting(message: Message) -> None:
            if message["type"] == "http.response.start":
                ctype = dict(message.get("headers", [])).get(b"content-type", b"")
                if message["status"] >= 400 and ctype.startswith(b"application/json"):
                    held.append(message)
                    return
            elif held:
                held.append(message)
                if message.get("more_body", False):
                    return
                start, *chunks = held
                held.clear()
                body = _without_null_id(b"".join(m.get("body", b"") for m in chunks))
                headers = [(k, v) for k, v in start.get("headers", []) if k != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, rewriting)


def _without_null_id(body: bytes) -> bytes:
    if b'"id":null' not in body.replace(b" ", b""):
        return body
    try:
        decoded = json.loads(body)
    except ValueError:
        return body
    if isinstance(decoded, dict) and "error" in decoded and decoded.get("id", 0) is None:
        del decoded["id"]
        return json.dumps(decoded, separators=(",", ":")).encode()
    return body


def _non_string_version(decoded: Any) -> dict[str, Any] | None:
    if not isinstance(decoded, dict) or isinstance(decoded.get("id"), bool):
        return None
    if not isinstance(decoded.get("id"), str | int):
        return None
    params = decoded.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or _VERSION_KEY not in meta or isinstance(meta[_VERSION_KEY], str):
        return None
    return {
        "jsonrpc": "2.0",
        "id": decoded["id"],
        "error": {
            "code": -32602,
            "message": f"params._meta[{_VERSION_KEY!r}] must be a string naming a protocol version, "
            f"got {type(meta[_VERSION_KEY]).__name__}",
        },
    }


async def _send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
