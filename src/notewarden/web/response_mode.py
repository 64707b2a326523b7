"""Answer each 2026-07-28 request as plain JSON unless it can receive notifications.

On the 2026-07-28 Streamable HTTP transport a request's response stream carries, before
the result, only notifications *for that request*: `notifications/progress` when its
`_meta` has a `progressToken`, `notifications/message` when its `_meta` asks for a
`io.modelcontextprotocol/logLevel`. A request with neither can only ever get its one
result, so it goes to the SDK's JSON-response mode, which answers `application/json`
directly. The SSE-capable mode spends two extra tasks, a memory stream and a disconnect
watcher on every request to be ready to stream (measured in docs/performance.md).

Everything else stays on the SSE-capable manager: handshake-era (2025) requests and their
sessions, GET/DELETE, `subscriptions/listen`, bodies that do not parse (the SDK answers
those), and any request that names a progress token or a log level. Both managers wrap
the same server, so the answer is the same; only its framing differs. One behaviour
differs by design: in JSON mode a client that disconnects does not cancel its handler.
"""

from __future__ import annotations

from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

from notewarden.web.body import peek_body

__all__ = ["ResponseModeRouter", "may_stream"]

_VERSION_HEADER = b"mcp-protocol-version"
_STREAMING_META_KEYS = ("progressToken", "io.modelcontextprotocol/logLevel")


def may_stream(decoded: Any) -> bool:
    """Whether the decoded request may receive notifications before its result (or is not one we route)."""
    if not isinstance(decoded, dict) or decoded.get("method") == "subscriptions/listen":
        return True
    params = decoded.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and any(key in meta for key in _STREAMING_META_KEYS)


class ResponseModeRouter:
    def __init__(self, *, streaming: ASGIApp, single: ASGIApp, max_body_bytes: int) -> None:
        self.streaming = streaming
        self.single = single
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not _modern(scope):
            await self.streaming(scope, receive, send)
            return
        buffered, receive = await peek_body(scope, receive, self.max_body_bytes)
        app = self.streaming if may_stream(buffered.decoded) else self.single  # UNREADABLE may stream
        await app(scope, receive, send)


def _modern(scope: Scope) -> bool:
    """The SDK's own routing rule: a version header that is not a handshake-era version."""
    version = next((v.decode("latin-1") for k, v in scope["headers"] if k == _VERSION_HEADER), None)
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS
