"""Rate limits per principal, by the right a tool needs.

Rule 1: every tool that changes something is limited by its right (`[limits]`): writes
(`write_per_minute`, 120), moves to the trash (`delete_per_minute`, 30), the permanent
operations (`purge_per_minute`, 10) and publishing (`publish_per_minute`, 30). Editing is not
deleting: an assistant tidying forty notes is not throttled like one emptying trashes. Reading
is not limited.
Rule 2: each principal may make that many calls per rolling minute (a token bucket of that size,
refilled continuously), one bucket per right. Both rounds of a confirmed call count. A call over
the limit runs nothing and is a tool error `rate_limited` whose
`structuredContent.error.retryAfterSeconds` says when one call will be allowed again.
Rule 3: the buckets live in this process: N processes behind one address allow N times the rate.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable

import mcp_types as types

from notewarden.scope.rights import Right
from notewarden.tools.registry import ToolCall, ToolDef, ToolResult

__all__ = ["RateLimiter", "limit_by_right"]


class RateLimiter:
    """Token buckets keyed by principal: `per_minute` capacity, refilled at `per_minute`/60 per second."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, principal: str) -> float:
        """Take one token: 0.0 when allowed, else the seconds until the next token."""
        with self._lock:
            now = self._clock()
            tokens, last = self._buckets.get(principal, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[principal] = (tokens - 1.0, now)
                return 0.0
            self._buckets[principal] = (tokens, now)
            return (1.0 - tokens) / self.rate


def rate_limited(tool: str, right: Right, per_minute: int, retry_after: float) -> types.CallToolResult:
    seconds = max(1, math.ceil(retry_after))
    message = (
        f"{tool} was not run: you made more than {per_minute} calls needing the right {right} in the "
        f"last minute (the server's [limits] {right}_per_minute). Retry after {seconds} s."
    )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)],
        structured_content={
            "error": {"code": "rate_limited", "message": message, "retryAfterSeconds": seconds}
        },
        is_error=True,
    )


def limit_by_right(
    tools: Iterable[ToolDef],
    per_minute: Callable[[Right], int | None],
    *,
    clock: Callable[[], float] = time.monotonic,
) -> list[ToolDef]:
    """The same tools, each whose right is limited (`per_minute(right)`, `config.LimitSettings`)
    wrapped so that every call first takes a token of that right's bucket (Rule 2)."""
    limiters: dict[Right, RateLimiter] = {}
    for right in Right:
        limit = per_minute(right)
        if limit is not None:
            limiters[right] = RateLimiter(limit, clock=clock)

    def wrap(tool: ToolDef, limiter: RateLimiter) -> ToolDef:
        handler = tool.handler

        async def limited(call: ToolCall) -> ToolResult:
            wait = limiter.acquire(call.principal)
            if wait > 0:
                return rate_limited(call.name, tool.right, int(limiter.capacity), wait)
            return await handler(call)

        return ToolDef(tool=tool.tool, handler=limited, right=tool.right)

    return [wrap(t, limiters[t.right]) if t.right in limiters else t for t in tools]
