"""A request body read once, up to a limit, for the middlewares that must look at it before the SDK.

RequireScopes (the scopes a call needs), EnvelopeVersionGuard (the protocol version's type) and
ResponseModeRouter (may the request stream) all inspect the JSON-RPC body in front of the SDK.
The first of them to call `peek_body` reads the body and keeps it in the request's scope; the
others get the same object, parsed at most once, and the SDK gets the bytes replayed unchanged.
It is parsed with unique member names (`notewarden.jsonrpc`): a body with a name twice decodes to
its `DuplicateMember`, which `EnvelopeVersionGuard` answers before the SDK ever parses the body.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Final

from starlette.types import Message, Receive, Scope

from notewarden.jsonrpc import DuplicateMember, loads_unique

__all__ = ["UNREADABLE", "BufferedBody", "decode_json", "peek_body"]

_SCOPE_KEY: Final = "notewarden.body"


class _Unreadable:
    def __repr__(self) -> str:
        return "UNREADABLE"


UNREADABLE: Final = _Unreadable()
"""What `BufferedBody.decoded` is for a body that went past the limit or is not JSON."""


def decode_json(body: bytes) -> Any:
    """The body's JSON; its `DuplicateMember` when a name appears twice; else `UNREADABLE`."""
    try:
        return loads_unique(body)
    except DuplicateMember as exc:
        return exc
    except (ValueError, RecursionError):
        return UNREADABLE


@dataclass
class BufferedBody:
    """The ASGI messages read so far; `complete` is False when the body went past the limit."""

    messages: list[Message] = field(default_factory=list)
    complete: bool = True

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages)

    @functools.cached_property
    def decoded(self) -> Any:
        """The body's JSON, parsed on first use; `UNREADABLE` when incomplete or not JSON."""
        return decode_json(self.body) if self.complete else UNREADABLE

    def replay(self, receive: Receive) -> Receive:
        pending = list(self.messages)

        async def replayed() -> Message:
            return pending.pop(0) if pending else await receive()

        return replayed


async def peek_body(scope: Scope, receive: Receive, limit: int) -> tuple[BufferedBody, Receive]:
    """This request's body (read until it ends or exceeds `limit` bytes) and the receive to pass on.

    The first caller reads from `receive` and gets back a receive that replays what was read (the
    rest of an over-long body stays unread for the app); a later caller on the same request, which
    was handed that replaying receive, gets the same `BufferedBody` and its `receive` unchanged.
    """
    known = scope.get(_SCOPE_KEY)
    if isinstance(known, BufferedBody):
        return known, receive
    buffered = BufferedBody()
    size, more = 0, True
    while more and size <= limit:
        message = await receive()
        buffered.messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    buffered.complete = not more and size <= limit
    scope[_SCOPE_KEY] = buffered
    return buffered, buffered.replay(receive)
