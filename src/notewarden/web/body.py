"""Read a request body up to a limit and hand it on unchanged, for middlewares that must look first."""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.types import Message, Receive

__all__ = ["BufferedBody", "buffer_body"]


@dataclass
class BufferedBody:
    """The ASGI messages read so far; `complete` is False when the body went past the limit."""

    messages: list[Message] = field(default_factory=list)
    complete: bool = True

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages)

    def replay(self, receive: Receive) -> Receive:
        pending = list(self.messages)

        async def replayed() -> Message:
            return pending.pop(0) if pending else await receive()

        return replayed


async def buffer_body(receive: Receive, limit: int) -> BufferedBody:
    """Read until the body ends or exceeds `limit` bytes (the rest stays unread for the app)."""
    buffered = BufferedBody()
    size, more = 0, True
    while more and size <= limit:
        message = await receive()
        buffered.messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    buffered.complete = not more
    return buffered
