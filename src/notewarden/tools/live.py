"""`subscriptions/listen` (2026-07-28, SEP-2575): live changes of notes, per principal (issue 27).

The SDK serves the stream (`mcp.server.subscriptions.ListenHandler`: the acknowledgment first, the
subscription id on every frame, graceful close with a result, a stream that stops reading ended at
its backlog cap). Its bus has no idea of principals, so each stream gets a bus of its own, fed
only by this module, which decides what that stream's principal may hear.

Rule 1 (who hears what): a stream's principal is the request's (the bearer credential over HTTP,
the `[stdio] principal`), narrowed by the credential's rights, as for a tool. An event is delivered
only if, **when it is delivered**, that caller holds `read` at the note (`resources/updated`) or at
the folder of a note that appeared, moved or went (`resources/list_changed`): rights are per
folder and the configuration is re-read before each delivery (`Grants.refresh`), so a revoked or
narrowed grant ends its notifications at once. A URI of another principal's workspace, or of a
folder the caller may not read, is acknowledged like any URI and never fires: the acknowledgment
says nothing about what exists.

Rule 2 (coalescing): events are level triggers ("look again"). A stream delivers what it collected
at once, then collects for `WINDOW_SECONDS` before delivering again: at most one
`resources/updated` per note URI and one `resources/list_changed` per window. 1,000 writes to one
note in T seconds give at most T / `WINDOW_SECONDS` + 1 notifications to each subscriber.

Rule 3 (bounds): at most `MAX_STREAMS` open streams in the process and `MAX_STREAMS_PER_PRINCIPAL`
per principal (a listen over either is refused with -32603 before its acknowledgment, saying which
bound); at most `MAX_URIS` URIs per listen (-32602 over it); a stream collects at most
`MAX_PENDING` distinct changes per window: one that overflows is closed (the SDK's graceful close),
and the client re-listens and reads again. Nothing a writer does waits for a stream: the feed's
callback adds to the stream's set under a lock and wakes its task (`notes.live` Rule 3).

Rule 4 (lifetime): a stream's task, its feed subscription and its hold on the watch drain and the
PostgreSQL relay end with the stream: on the client's disconnect (the SDK cancels the handler), on
an overflow, and at shutdown (`close`: every stream ends gracefully, with its result; `cli.serve`
calls it on SIGTERM, before uvicorn waits for open responses). The acknowledgment is sent once the
drain has read each of the stream's workspaces once and the relay LISTENs (`HOLD_WAIT_SECONDS` at
most), so that a change made after it is heard.

Rule 5 (tools and prompts): which tools and prompts a principal is offered follows its rights, so a
stream that asked for `toolsListChanged` or `promptsListChanged` checks them every
`RIGHTS_CHECK_SECONDS` (the configuration as its file is now) and hears the list changed when they
did. `announce` tells every such stream (a list changed for everyone; the shipped server never
changes its tools while running, the conformance fixtures do).

Rule 6 (the credential): over HTTP a stream lives longer than the request that authenticated it,
so its bearer token is verified again (`verify`, the transport's own verifier) every
`RIGHTS_CHECK_SECONDS` and before each delivery: a token revoked from the configuration, an
expired JWT, or one that now names another principal ends the stream (the SDK's graceful close),
and nothing is delivered after. The token is held only by the request, as for any request; it is
never logged. On stdio the process's principal is the configuration's, checked by Rule 1.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    SubscriptionFilter,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)

from notewarden.notes.live import NoteEvent
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Caller, Right
from notewarden.scope.uri import UriError, parse_file_uri
from notewarden.services import Services

__all__ = [
    "MAX_PENDING",
    "MAX_STREAMS",
    "MAX_STREAMS_PER_PRINCIPAL",
    "MAX_URIS",
    "WINDOW_SECONDS",
    "LiveChanges",
]

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 0.5
MAX_STREAMS = 256
MAX_STREAMS_PER_PRINCIPAL = 8
MAX_URIS = 1000
MAX_PENDING = 4096
RIGHTS_CHECK_SECONDS = 1.0
"""How often a stream that asked for the tool or prompt list checks its principal's rights (Rule 5),
and an HTTP stream its credential (Rule 6)."""
HOLD_WAIT_SECONDS = 10.0
"""The longest a listen waits, before its acknowledgment, for the watch drain's first pass over its
workspaces and the PostgreSQL relay's LISTEN (a first index build of a large workspace is longer:
the stream is acknowledged anyway, and hears changes from when the build has finished)."""
_BACKLOG = 256
"""Events the SDK buffers for a stream whose client is slow to read; a stream over it is ended."""

Ctx = ServerRequestContext[Any, Any]


class _Stream:
    """One listen stream's interest and what it collected since its last delivery (Rule 2)."""

    def __init__(
        self,
        caller: Caller,
        uris: dict[tuple[str, str], str],
        wanted: SubscriptionFilter,
        rights: frozenset[Right],
        bearer: str | None,
    ) -> None:
        self.caller = caller
        self.bearer = bearer
        """The request's bearer token, verified again before each delivery (Rule 6); None on stdio."""
        self.uris = uris
        """(workspace, note id) → the URI as the client wrote it (what `resources/updated` names)."""
        self.wants_tools = bool(wanted.tools_list_changed)
        self.wants_prompts = bool(wanted.prompts_list_changed)
        self.rights = rights
        """The rights the principal held when its tools and prompts were last announced (Rule 5)."""
        self.announced: set[str] = set()
        """What `LiveChanges.announce` said changed since the last delivery: "tools", "prompts"."""
        self.wants_list = bool(wanted.resources_list_changed)
        self.workspaces = {workspace for workspace, _ in uris}
        self.updated: set[tuple[str, str]] = set()
        self.listed: set[tuple[str, str]] = set()
        """(workspace, folder) where notes appeared, moved or went."""
        self.overflowed = False
        self.lock = threading.Lock()
        self.loop = asyncio.get_running_loop()
        self.wake = asyncio.Event()

    def take(self, events: Sequence[NoteEvent]) -> None:
        """The feed's callback: any thread, never blocks on the stream (Rule 3)."""
        woke = False
        with self.lock:
            before = len(self.updated) + len(self.listed)
            for event in events:
                key = (event.workspace, event.note_id)
                if key in self.uris:
                    self.updated.add(key)
                if event.listed and self.wants_list:
                    folder = event.note_id.rpartition("/")[0]
                    self.listed.add((event.workspace, folder))
            size = len(self.updated) + len(self.listed)
            if size > MAX_PENDING:
                self.overflowed = True
                self.updated.clear()
                self.listed.clear()
            woke = size != before or self.overflowed
        if woke:
            self.loop.call_soon_threadsafe(self.wake.set)

    def drain(self) -> tuple[set[tuple[str, str]], set[tuple[str, str]], bool]:
        with self.lock:
            taken = self.updated, self.listed, self.overflowed
            self.updated, self.listed = set(), set()
            return taken


class LiveChanges:
    """The `on_subscriptions_listen` handler (module rules)."""

    def __init__(
        self,
        services: Services,
        resolve_principal: Callable[[Ctx], str],
        credential_rights: Callable[[Ctx], frozenset[Right] | None],
        verify: Callable[[str], Awaitable[AccessToken | None]] | None = None,
    ) -> None:
        self.services = services
        self.resolve_principal = resolve_principal
        self.credential_rights = credential_rights
        self.verify = verify
        """The HTTP transport's token verifier (Rule 6); None on stdio."""
        self._open: dict[str, int] = {}
        self._handlers: set[ListenHandler] = set()
        self._streams: set[_Stream] = set()
        self._closing = False

    @property
    def open_streams(self) -> int:
        return sum(self._open.values())

    def close(self) -> None:
        """Shutdown: every open stream ends gracefully (its result is the last frame), none opens."""
        self._closing = True
        for handler in list(self._handlers):
            handler.close()

    def announce(self, *, tools: bool = False, prompts: bool = False) -> None:
        """The tool or prompt list changed for everyone (Rule 5): every stream that asked hears it."""
        for stream in self._streams:
            stream.announced |= {"tools"} if tools else set()
            stream.announced |= {"prompts"} if prompts else set()
            stream.wake.set()

    async def __call__(self, ctx: Ctx, params: SubscriptionsListenRequestParams) -> SubscriptionsListenResult:
        caller = Caller(self.resolve_principal(ctx), credential_rights=self.credential_rights(ctx))
        wanted = params.notifications
        uris = self._note_uris(wanted.resource_subscriptions or [])
        principal = caller.principal
        if self._closing:
            raise MCPError(code=INTERNAL_ERROR, message="the server is shutting down; listen again later")
        if self.open_streams >= MAX_STREAMS:
            raise MCPError(
                code=INTERNAL_ERROR,
                message=f"this server has {MAX_STREAMS} listen streams open, its limit; try again later",
            )
        if self._open.get(principal, 0) >= MAX_STREAMS_PER_PRINCIPAL:
            raise MCPError(
                code=INTERNAL_ERROR,
                message=f"{principal} has {MAX_STREAMS_PER_PRINCIPAL} listen streams open, the most allowed; "
                "close one (or listen to several URIs on one stream) first",
            )
        rights = self.services.grants.rights_held(caller.principal, caller.credential_rights)
        stream = _Stream(caller, uris, wanted, rights, self._bearer(ctx))
        bus = InMemorySubscriptionBus()
        handler = ListenHandler(bus, max_subscriptions=1, max_buffered_events=_BACKLOG)
        self._open[principal] = self._open.get(principal, 0) + 1
        self._handlers.add(handler)
        self._streams.add(stream)
        unsubscribe = self.services.feed.subscribe(stream.take)
        release: Callable[[], None] = lambda: None  # noqa: E731
        try:
            readable = {str(w) for w in self.services.grants.granted_workspaces(caller)}
            held = readable if stream.wants_list else readable & stream.workspaces
            # the acknowledgment (the SDK handler's first frame) comes once the sources watch (Rule 4)
            release = await anyio.to_thread.run_sync(
                functools.partial(self.services.liveness.hold, sorted(held), wait=HOLD_WAIT_SECONDS)
            )
            if self._closing:
                raise MCPError(code=INTERNAL_ERROR, message="the server is shutting down; listen again later")
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._deliver, stream, bus, handler)
                try:
                    result = await handler(ctx, params)
                finally:
                    tasks.cancel_scope.cancel()
            return result
        finally:
            unsubscribe()
            release()
            self._handlers.discard(handler)
            self._streams.discard(stream)
            left = self._open.get(principal, 0) - 1
            if left > 0:
                self._open[principal] = left
            else:
                self._open.pop(principal, None)

    def _note_uris(self, uris: Sequence[str]) -> dict[tuple[str, str], str]:
        """The subscribed URIs that can name a note, by (workspace, note id) of a configured
        workspace; others are acknowledged and never fire (Rule 1)."""
        if len(uris) > MAX_URIS:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"resourceSubscriptions lists {len(uris)} URIs; at most {MAX_URIS} per listen",
            )
        workspaces = self.services.grants.config.workspaces
        found: dict[tuple[str, str], str] = {}
        for uri in uris:
            try:
                parsed = parse_file_uri(uri)
            except UriError:
                continue
            for workspace in workspaces:
                below = parsed.relative_to(workspace)
                if below:
                    found[(str(workspace), "/".join(below))] = uri
                    break
        return found

    def _bearer(self, ctx: Ctx) -> str | None:
        """Rule 6: the bearer token of an HTTP listen request, to verify again while it streams."""
        headers = getattr(ctx.request, "headers", None)
        if self.verify is None or headers is None:
            return None
        scheme, _, token = str(headers.get("authorization", "")).partition(" ")
        return token.strip() if scheme.lower() == "bearer" and token.strip() else None

    async def _credential_holds(self, stream: _Stream) -> bool:
        """Rule 6: the stream's token still verifies, unexpired, as the same principal."""
        if stream.bearer is None or self.verify is None:
            return True
        token = await self.verify(stream.bearer)
        return (
            token is not None
            and token.subject == stream.caller.principal
            and (token.expires_at is None or token.expires_at > time.time())
        )

    async def _deliver(self, stream: _Stream, bus: InMemorySubscriptionBus, handler: ListenHandler) -> None:
        checked = stream.wants_tools or stream.wants_prompts or stream.bearer is not None
        while True:
            with anyio.move_on_after(RIGHTS_CHECK_SECONDS if checked else math.inf):
                await stream.wake.wait()
            stream.wake.clear()
            updated, listed, overflowed = stream.drain()
            if overflowed:
                logger.warning(
                    "listen stream collected too many changes; closing it",
                    extra={"principal": stream.caller.principal, "limit": MAX_PENDING},
                )
                handler.close()
                return
            await self.services.grants.refresh()
            if not await self._credential_holds(stream):
                logger.info(
                    "listen stream's credential no longer verifies; closing it",
                    extra={"event": "listen_credential_ended", "principal": stream.caller.principal},
                )
                handler.close()
                return
            if stream.wants_tools or stream.wants_prompts:
                held = self.services.grants.rights_held(
                    stream.caller.principal, stream.caller.credential_rights
                )
                changed = {"tools", "prompts"} if held != stream.rights else stream.announced
                stream.rights, stream.announced = held, set()
                if stream.wants_tools and "tools" in changed:
                    await bus.publish(ToolsListChanged())
                if stream.wants_prompts and "prompts" in changed:
                    await bus.publish(PromptsListChanged())
            if not (updated or listed):
                continue
            scopes: dict[str, WorkspaceScope | None] = {}
            # a folder is readable where a note in it would be: probe with a name inside it
            if any(self._may_read(stream.caller, w, f"{f}/x" if f else "x", scopes) for w, f in listed):
                await bus.publish(ResourcesListChanged())
            for key in sorted(updated):
                if self._may_read(stream.caller, key[0], key[1], scopes):
                    await bus.publish(ResourceUpdated(uri=stream.uris[key]))
            await anyio.sleep(WINDOW_SECONDS)

    def _may_read(
        self, caller: Caller, workspace: str, note_id: str, scopes: dict[str, WorkspaceScope | None]
    ) -> bool:
        """Rule 1: whether the caller may read `note_id` now."""
        if workspace not in scopes:
            try:
                scopes[workspace] = self.services.grants.authorize_workspace(caller, workspace)
            except Exception:  # not granted (any more), the file broken: nothing is heard
                scopes[workspace] = None
        scope = scopes[workspace]
        return scope is not None and scope.contains(
            note_id + "x" if note_id.endswith("/") or not note_id else note_id
        )
