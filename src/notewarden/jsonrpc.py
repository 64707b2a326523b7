"""JSON-RPC text as notewarden reads it: every object's member names appear once.

Rule: RFC 8259 leaves duplicate names to the parser ("names SHOULD be unique"); Python's `json` and
pydantic keep the last one, other parsers the first. A proxy, a firewall or a log in front of the
server that keeps the first would disagree with it on what runs (two `method`s, two `id`s, two
`workspaceUri`s). So a message with a name twice in any object, at any depth, is refused with
JSON-RPC `-32700` (Parse error: the text has no one meaning) before the SDK parses it: over HTTP in
`web.envelope.EnvelopeVersionGuard` (HTTP 400, the SDK's status for a parse error), over stdio by
`UniqueMemberLines`. No handler ever sees it. As for any parse error, the reply carries no `id`:
which id was meant is exactly what cannot be known.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from notewarden.display import visible

__all__ = ["DuplicateMember", "UniqueMemberLines", "loads_unique", "parse_error"]

logger = logging.getLogger(__name__)

_NAME_SHOWN = 64


class DuplicateMember(ValueError):
    """A JSON object names a member twice; `name` is the first name found twice."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    @property
    def message(self) -> str:
        shown = visible(self.name[:_NAME_SHOWN]) + ("…" if len(self.name) > _NAME_SHOWN else "")
        return (
            f"Parse error: the member name {json.dumps(shown, ensure_ascii=False)} appears twice in one "
            "JSON object; every name must appear once"
        )


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise DuplicateMember(name)
            seen.add(name)
    return members


def loads_unique(text: str | bytes) -> Any:
    """`json.loads`, refusing duplicate member names (`DuplicateMember`, a `ValueError`)."""
    return json.loads(text, object_pairs_hook=_unique)


def parse_error(problem: DuplicateMember) -> dict[str, Any]:
    """The JSON-RPC error message refusing a text with a duplicated member name."""
    return {"jsonrpc": "2.0", "error": {"code": types.PARSE_ERROR, "message": problem.message}}


class UniqueMemberLines:
    """The stdio transport's input lines, less those with a duplicated member name: each of those
    is answered here with `parse_error` on the transport's write stream (`answer_on`) and never
    reaches the SDK. Other lines, valid or not, pass through unchanged for the SDK to read."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines
        self._replies: Any = None
        self._ready = anyio.Event()

    def answer_on(self, write_stream: Any) -> None:
        self._replies = write_stream
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            try:
                loads_unique(line)
            except DuplicateMember as exc:
                logger.warning(
                    "refused a message with a duplicated member name", extra={"event": "parse_error"}
                )
                reply = types.JSONRPCError.model_construct(
                    jsonrpc="2.0", error=types.ErrorData(code=types.PARSE_ERROR, message=exc.message)
                )  # no id: model_construct leaves it unset, so it is omitted on the wire
                await self._ready.wait()
                await self._replies.send(SessionMessage(reply))
                continue
            except (ValueError, RecursionError):
                pass  # not JSON at all: the SDK's reader decides
            yield line
