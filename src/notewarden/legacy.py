"""Serving 2025-11-25 clients from the same tool logic.

A client that opens with `initialize` gets a legacy session: the SDK's dual-era loop on
stdio, a `Mcp-Session-Id` session over HTTP. On such a session a tool cannot answer
`input_required`; it asks with a live server→client `elicitation/create` on that session
(on the POST's SSE stream over HTTP, on stdout over stdio) and waits for the answer.

Rules:
1. Only the back channel differs. Candidates, binding, the outcome table and the
   exactly-once ledger are the tool's own code, shared with the modern path.
2. The era is the connection's, fixed by how the client opened; a modern request never
   gets a `LiveElicitation`, so no 2025 behaviour leaks into it.
3. Capabilities come from the client's `initialize` (`elicitation: {}` means form), and
   authorization from the credential, as on the modern path; legacy roots are never asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["SessionElicitation", "live_elicitation"]


class SessionElicitation:
    """`LiveElicitation` over one legacy request: every message is related to that request."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._session = ctx.session
        self._request_id = ctx.request_id

    async def form(self, message: str, requested_schema: Mapping[str, Any]) -> types.ElicitResult:
        return await self._session.elicit_form(message, dict(requested_schema), self._request_id)

    async def url(self, message: str, url: str, elicitation_id: str) -> types.ElicitResult:
        return await self._session.elicit_url(message, url, elicitation_id, self._request_id)

    async def completed(self, elicitation_id: str) -> None:
        await self._session.send_elicit_complete(elicitation_id, self._request_id)


def live_elicitation(ctx: ServerRequestContext[Any, Any]) -> SessionElicitation | None:
    """The back channel of a 2025-11-25 session; `None` for a 2026-07-28 request."""
    if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    return SessionElicitation(ctx)
