"""Rate limits per principal on destructive tools.

Rule 1: a tool is destructive unless it is marked read-only or says `destructiveHint: false`
(the MCP default), so a new tool is limited unless it declares otherwise.
Rule 2: each principal may make `[limits] destructive_per_minute` calls of destructive tools per
rolling minute (a token bucket of that size, refilled continuously). Both rounds of a confirmed
delete count. A call over the limit runs nothing and is a tool error `rate_limited` whose
`structuredContent.error.retryAfterSeconds` says when one call will be allowed again.
Rule 3: the buckets live in this process: N processes behind one address allow N times the rate.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable

import mcp_types as types

from notewarden.tools.registry import ToolCall, ToolDef, ToolResult

__all__ = ["RateLimiter", "is_destructive", "limit_destructive"]


def is_destructive(tool: types.Tool) -> bool:
    hints = tool.annotations
    return not (hints is not None and (hints.read_only_hint or hints.destructive_hint is False))


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


def rate_limited(tool: str, retry_after: float) -> types.CallToolResult:
    seconds = max(1, math.ceil(retry_after))
    message = (
        f"{tool} was not run: too many destructive calls from you in the last minute. "
        f"Retry after {seconds} s."
    )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)],
        structured_content={
            "error": {"code": "rate_limited", "message": message, "retryAfterSeconds": seconds}
        },
        is_error=True,
    )


def limit_destructive(tools: Iterable[ToolDef], limiter: RateLimiter) -> list[ToolDef]:
    """The same tools, destructive ones wrapped so every call first takes a token (Rule 2)."""

    def wrap(tool: ToolDef) -> ToolDef:
        handler = tool.handler

        async def limited(call: ToolCall) -> ToolResult:
            wait = limiter.acquire(call.principal)
            if wait > 0:
                return rate_limited(call.name, wait)
            return await handler(call)

        return ToolDef(tool=tool.tool, handler=limited)

    return [wrap(t) if is_destructive(t.tool) else t for t in tools]
