"""Wiring: the SDK's lowlevel `Server`, our tools, and the two transports.

Everything protocol-level is the official SDK's: JSON-RPC framing, the `_meta`
validation ladder (-32602 / -32020 / -32022 / -32601 and their HTTP statuses), header
checks, `server/discover`, notifications acknowledged with 202, and the sealing of
`requestState` (`RequestStateBoundary`, AES-256-GCM under our shared keys, bound to the
principal this module resolves). This module only decides *who* the caller is and hands
each call to the tool registry.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types import INVALID_REQUEST
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from notewarden.config import Config
from notewarden.jsonrpc import UniqueMemberLines
from notewarden.legacy import live_elicitation
from notewarden.scope.grants import Grants
from notewarden.scope.rights import Caller, Right
from notewarden.sealing import KeyReportingCodec
from notewarden.services import Services
from notewarden.tools.catalog import note_tools
from notewarden.tools.limits import limit_by_right
from notewarden.tools.live import LiveChanges
from notewarden.tools.own_forms import check_own_forms
from notewarden.tools.prompts import NotePrompts
from notewarden.tools.registry import ToolCall, ToolDef, ToolRegistry
from notewarden.tools.resources import NoteResources
from notewarden.version import __version__
from notewarden.web.authz import RefreshConfig, RequireScopes
from notewarden.web.connect import connect_routes
from notewarden.web.envelope import EnvelopeVersionGuard, OmitUnreadableId
from notewarden.web.oauth import (
    BearerVerifier,
    JwtVerifier,
    protected_resource_routes,
    resource_metadata_url,
    rights_of_scopes,
)
from notewarden.web.response_mode import ResponseModeRouter

__all__ = [
    "SERVER_NAME",
    "build_http_app",
    "build_server",
    "default_tools",
    "serve_stdio",
]

logger = logging.getLogger(__name__)

SERVER_NAME = "notewarden"
_INSTRUCTIONS = (
    "Notes kept in workspaces. Every tool takes an explicit workspaceUri (a file: URI of a workspace "
    "granted to you); the URI grants nothing by itself. Find notes with notes_search (words or a question, "
    "filters by tags and front-matter properties), read them with notes_read (outline, section or lines of "
    "a long note) or notes_read_many, change them with small anchored edits (notes_edit: append, replace, "
    "a section, a front-matter key; dryRun previews) or notes_update (pass the version you read), create "
    "with notes_create and reorganize with notes_move. notes_tags, notes_links (links and backlinks) and "
    "notes_recent show how notes connect and what changed; notes_daily opens a day's note. Every replaced "
    "content is kept: notes_history lists versions, notes_revert brings one back. {confirmed} ask the user "
    "to confirm in a form; deleted notes stay in the workspace trash (notes_trash_list, notes_restore) until "
    "it is emptied. Each note is also a resource: its file: URI. Prompts (prompts/list) offer common "
    "workflows: reviewing changes, summarizing a folder, tidying tags, turning a meeting note into tasks."
)


def server_instructions(tools: Iterable[ToolDef]) -> str:
    """What `server/discover` tells the model. The tools that ask for confirmation are those that need
    the delete or purge right (`scope.rights` Rule 1), so a new confirmed tool is named without an edit here."""
    confirmed = [d.tool.name for d in tools if d.right in (Right.DELETE, Right.PURGE)]
    listed = ", ".join(confirmed[:-1]) + f" and {confirmed[-1]}" if len(confirmed) > 1 else "".join(confirmed)
    return _INSTRUCTIONS.format(confirmed=listed or "No tool")


_CACHE_HINTS: dict[CacheableMethod, CacheHint] = {
    "server/discover": CacheHint(ttl_ms=3_600_000, scope="public"),
    "tools/list": CacheHint(ttl_ms=300_000, scope="private"),  # by the caller's rights, which may change
}

PrincipalResolver = Callable[[ServerRequestContext[Any, Any]], str]
ServerHook = Callable[[Server[Any]], None]


def default_tools(services: Services) -> list[ToolDef]:
    return note_tools(services)


def principal_resolver(stdio_principal: str | None) -> PrincipalResolver:
    """Who the caller is: the verified bearer credential over HTTP, the configured principal on stdio."""

    def resolve(ctx: ServerRequestContext[Any, Any]) -> str:
        token = get_access_token()
        if token is not None and token.subject:
            return token.subject
        if token is None and stdio_principal is not None:
            return stdio_principal
        raise MCPError(code=INVALID_REQUEST, message="request is not authenticated")

    return resolve


def credential_rights(ctx: ServerRequestContext[Any, Any]) -> frozenset[Right] | None:
    """What the request's credential narrows its principal's rights to: an HTTP token's scopes (a
    configured token carries the rights it was made with); None on stdio, where the process's
    own limit (`serve --rights`) applies to every request alike."""
    token = get_access_token()
    return None if token is None else rights_of_scopes(token.scopes)


def client_name(ctx: ServerRequestContext[Any, Any]) -> str:
    """The client's own name (`clientInfo`, from `_meta` or `initialize`), for display only."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    return (info.title or info.name) if info is not None else ""


def client_version(ctx: ServerRequestContext[Any, Any]) -> str:
    """The version the client gives in `clientInfo` (unverified), for the record of a change."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    return info.version if info is not None else ""


def build_server(
    services: Services,
    *,
    stdio_principal: str | None,
    tools: Iterable[ToolDef] | None = None,
    configure_server: ServerHook | None = None,
    refresh_config: bool = True,
    live: LiveChanges | None = None,
) -> Server[Any]:
    """`refresh_config=False` when the transport already brings the configuration up to date
    before each request reaches the server (HTTP: `RefreshConfig`, first of its middleware)."""
    broken = check_own_forms()
    if broken:
        raise RuntimeError(f"this server would emit forms that fail lint-form: {broken}")
    resolve_principal = principal_resolver(stdio_principal)
    grants = services.grants
    tools = default_tools(services) if tools is None else list(tools)
    registry = ToolRegistry(
        limit_by_right(tools, services.config.limits.per_minute),
        rights_held=lambda call: grants.rights_held(call.principal, call.credential_rights),
    )
    resources = NoteResources(services, resolve_principal)
    prompts = NotePrompts(
        services, lambda ctx: Caller(resolve_principal(ctx), credential_rights=credential_rights(ctx))
    )

    async def complete(
        ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        if isinstance(params.ref, types.PromptReference):
            return await prompts.complete(ctx, params)
        return await resources.complete(ctx, params)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return registry.listing(grants.rights_held(resolve_principal(ctx), credential_rights(ctx)))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        call = ToolCall(
            name=params.name,
            principal=resolve_principal(ctx),
            arguments=params.arguments or {},
            capabilities=ctx.session.client_capabilities,
            input_responses=params.input_responses or {},
            request_state=params.request_state,
            report_progress=ctx.session.report_progress
            if progress_token_from_params(ctx.params) is not None
            else None,
            live=live_elicitation(ctx),
            client_name=client_name(ctx),
            client_version=client_version(ctx),
            credential_rights=credential_rights(ctx),
        )
        return await registry.call(call)

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        title="notewarden",
        instructions=server_instructions(tools),
        cache_hints=_CACHE_HINTS,
        get_tool_input_schema=registry.input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=resources.list_resources,
        on_list_resource_templates=resources.list_templates,
        on_read_resource=resources.read_resource,
        on_completion=complete,
        on_list_prompts=prompts.list_prompts,
        on_get_prompt=prompts.get_prompt,
        # resources.subscribe and listChanged follow from serving it (tools.live)
        on_subscriptions_listen=live or LiveChanges(services, resolve_principal, credential_rights),
    )
    if configure_server is not None:
        configure_server(server)  # test-only additions (tests/conformance); the shipped CLI passes none
    security = RequestStateSecurity(
        codec=KeyReportingCodec(services.sealing_keys),
        ttl=services.config.confirmation_ttl_seconds,
        bind_principal=resolve_principal,
    )
    server.middleware.append(RequestStateBoundary(security, default_audience=SERVER_NAME))
    if refresh_config:
        server.middleware.insert(0, FreshConfig(services.grants))
    return server


class FreshConfig:
    """Every request starts on the configuration as its file is now (`Grants.refresh`); on stdio,
    where no HTTP middleware ran before."""

    def __init__(self, grants: Grants[Config]) -> None:
        self.grants = grants

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        await self.grants.refresh()
        return await call_next(ctx)


async def serve_stdio(services: Services) -> None:
    principal = services.config.stdio_principal
    if principal is None:
        raise SystemExit(
            "the config has no [stdio] principal: say who a stdio client is, or use --transport http"
        )
    live = LiveChanges(services, principal_resolver(principal), credential_rights)
    server = build_server(services, stdio_principal=principal, live=live)
    # The SDK's transport, fed lines that went through the duplicate-member check first.
    lines = UniqueMemberLines(
        anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    )
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.answer_on(write_stream)
        try:
            await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            live.close()


def transport_security(config: Config) -> TransportSecuritySettings:
    host = config.http.host
    hosts = [f"{host}:*", host]
    origins = list(config.http.allowed_origins)
    if host in ("127.0.0.1", "localhost", "::1"):
        hosts += ["127.0.0.1:*", "localhost:*", "[::1]:*"]
        origins += ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def build_http_app(
    services: Services,
    *,
    tools: Iterable[ToolDef] | None = None,
    configure_server: ServerHook | None = None,
) -> Starlette:
    """The Streamable HTTP application: every request authenticated and scoped, Origin and Host validated."""
    tools = list(default_tools(services) if tools is None else tools)
    # RefreshConfig (below) refreshes before the token table is consulted: once per request is enough
    oauth = services.config.oauth
    verifier = BearerVerifier(lambda: services.grants.config, JwtVerifier(oauth) if oauth else None)
    live = LiveChanges(services, principal_resolver(None), credential_rights, verify=verifier.verify_token)
    server = build_server(
        services,
        stdio_principal=None,
        tools=tools,
        configure_server=configure_server,
        refresh_config=False,
        live=live,
    )
    manager, json_manager = (
        StreamableHTTPSessionManager(
            app=server,
            json_response=json_response,
            security_settings=transport_security(services.config),
            max_request_body_size=services.config.http.max_body_bytes,
        )
        for json_response in (False, True)
    )
    endpoint = RequireScopes(
        EnvelopeVersionGuard(
            OmitUnreadableId(
                ResponseModeRouter(  # application/json for requests that cannot receive notifications
                    streaming=StreamableHTTPASGIApp(manager),
                    single=StreamableHTTPASGIApp(json_manager),
                    max_body_bytes=services.config.http.max_body_bytes,
                )
            ),
            max_body_bytes=services.config.http.max_body_bytes,
        ),
        tool_rights={t.tool.name: t.right for t in tools},
        rights_held=lambda principal: services.grants.rights_held(principal, None),
        resource_metadata=resource_metadata_url(oauth) if oauth else None,
        max_body_bytes=services.config.http.max_body_bytes,
        config_problem=lambda: services.grants.problem,
        oauth=oauth is not None,
    )
    connect = connect_routes(services, verifier.verify_token)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run(), json_manager.run():
            try:
                yield
            finally:
                live.close()

    app = Starlette(
        routes=[
            Route("/mcp", endpoint=endpoint),
            *(protected_resource_routes(oauth) if oauth else []),
            *connect,
        ],
        middleware=[
            Middleware(RefreshConfig, grants=services.grants),  # before the token table is consulted
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lifespan,
    )
    app.state.live = live  # `cli.serve` ends the listen streams when the server is told to stop
    return app
