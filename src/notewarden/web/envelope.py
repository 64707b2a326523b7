"""One precedence fix in front of the SDK's HTTP validation ladder.

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

from starlette.types import ASGIApp, Receive, Scope, Send

from notewarden.web.body import buffer_body

__all__ = ["EnvelopeVersionGuard"]

_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


class EnvelopeVersionGuard:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        buffered = await buffer_body(receive, self.max_body_bytes)
        if buffered.complete:
            rejection = _non_string_version(buffered.body)
            if rejection is not None:
                await _send_json(send, 400, rejection)
                return
        await self.app(scope, buffered.replay(receive), send)


def _non_string_version(body: bytes) -> dict[str, Any] | None:
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return None
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
