"""The gate in front of /mcp: authenticated, a known principal, and the scopes this request needs.

It replaces the SDK's `RequireAuthMiddleware`, whose challenge always says
`error="invalid_token"` and names no scope. Answers (RFC 6750 §3, MCP authorization):

| situation                                   | status | WWW-Authenticate                                                  |
|---------------------------------------------|--------|-------------------------------------------------------------------|
| the config file stopped parsing (running)   | 503    | none; `Retry-After`, JSON body `{"error": "temporarily_unavailable", …}` |
| no credentials                              | 401    | `Bearer resource_metadata="…", scope="…"` (no error attribute)    |
| credentials that do not verify              | 401    | `Bearer error="invalid_token", …, resource_metadata="…", scope="…"` |
| valid token, `sub` mapped to no principal   | 403    | none; JSON body `{"error": "access_denied", …}`                  |
| OAuth token lacking the scope this needs    | 403    | `Bearer error="insufficient_scope", scope="…", resource_metadata="…"` |

The scopes a request needs are the rights it needs (`web.oauth` Rule 3): `notewarden:read` for
every request, and for a `tools/call` the scope of the tool's right; a body over the size cap is
passed on to the SDK, which answers 413. An OAuth access token lacking a right that the
principal's grants hold somewhere gets the step-up challenge (asking the authorization server
again, with that scope, can help). Nothing else is challenged, because no new token could help:
a right the principal holds nowhere, or one a configured token was made without
(`[[principal.token]]`, whose rights are fixed). The request goes on, and the tool refuses it
(`right_missing`) naming the right and who grants it: the operator, or a credential made with it.
`resource_metadata` is present only when `[oauth]` is configured, and the wording of a 401 names
the credentials this server takes: its configured tokens, and OAuth access tokens only with `[oauth]`.
The 503's reason (`Grants.problem`) is safe to show: it says the file is invalid, not what is in it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.types import ASGIApp, Receive, Scope, Send

from notewarden.config import Config
from notewarden.scope.grants import Grants
from notewarden.scope.rights import Right
from notewarden.web.body import peek_body
from notewarden.web.oauth import challenge_scopes, from_authorization_server, rights_of_scopes

__all__ = ["RefreshConfig", "RequireScopes"]

_RETRY_AFTER_SECONDS = b"30"
_NO_CREDENTIALS = {
    False: "this endpoint needs a bearer token: Authorization: Bearer <a token configured for you>",
    True: "this endpoint needs a bearer token: an OAuth access token for this server (or a token "
    "configured for you)",
}
_BAD_CREDENTIALS = {
    False: "the bearer token is not one configured on this server",
    True: "the bearer token is neither one configured on this server nor an access token valid here "
    "(signature, issuer, audience or time)",
}


class RefreshConfig:
    """First on every HTTP request: the configuration is brought up to date with its file before
    the token table is consulted (`Grants.refresh`)."""

    def __init__(self, app: ASGIApp, *, grants: Grants[Config]) -> None:
        self.app = app
        self.grants = grants

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self.grants.refresh()
        await self.app(scope, receive, send)


class RequireScopes:
    def __init__(
        self,
        app: ASGIApp,
        *,
        tool_rights: Mapping[str, Right],
        rights_held: Callable[[str], frozenset[Right]],
        resource_metadata: str | None,
        max_body_bytes: int,
        config_problem: Callable[[], str | None] = lambda: None,
        oauth: bool = False,
    ) -> None:
        self.app = app
        self.tool_rights = dict(tool_rights)
        self.rights_held = rights_held
        self.resource_metadata = resource_metadata
        self.max_body_bytes = max_body_bytes
        self.config_problem = config_problem
        self.oauth = oauth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self.config_problem()
        if problem is not None:
            retry = [(b"retry-after", _RETRY_AFTER_SECONDS)]
            await _send_json(
                send, 503, {"error": "temporarily_unavailable", "error_description": problem}, retry
            )
            return
        required = {Right.READ}
        if scope["method"] == "POST":
            buffered, receive = await peek_body(scope, receive, self.max_body_bytes)
            required |= self.rights_for(buffered.decoded)
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            sent = any(name == b"authorization" for name, _ in scope["headers"])
            await self.challenge(
                send,
                401,
                required,
                error="invalid_token" if sent else None,
                description=(_BAD_CREDENTIALS if sent else _NO_CREDENTIALS)[self.oauth],
            )
            return
        token = user.access_token
        if token.subject is None:
            await _send_json(
                send,
                403,
                {
                    "error": "access_denied",
                    "error_description": "the token is valid but its subject is not a principal of this "
                    "server; the operator maps subjects with oauth_subjects under [[principal]]",
                },
            )
            return
        missing = required - rights_of_scopes(token.scopes)
        askable = missing & self.rights_held(token.subject) if from_authorization_server(token) else set()
        if askable:
            required -= missing - askable  # never ask for a scope that cannot help
            await self.challenge(
                send,
                403,
                required,
                error="insufficient_scope",
                description=f"this request needs the scope {' '.join(challenge_scopes(required))}",
            )
            return
        await self.app(scope, receive, send)

    def rights_for(self, decoded: Any) -> set[Right]:
        """Rights the JSON-RPC message(s) of a decoded body need; unreadable bodies need only read."""
        needed: set[Right] = set()
        for message in decoded if isinstance(decoded, list) else [decoded]:
            if not isinstance(message, dict) or message.get("method") != "tools/call":
                continue
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str) and name in self.tool_rights:
                needed.add(self.tool_rights[name])
        return needed

    async def challenge(
        self, send: Send, status: int, required: set[Right], *, error: str | None, description: str
    ) -> None:
        scopes = " ".join(challenge_scopes(required))
        parts = [f'error="{error}"', f'error_description="{description}"'] if error else []
        if self.resource_metadata:
            parts.append(f'resource_metadata="{self.resource_metadata}"')
        parts.append(f'scope="{scopes}"')
        body = {"error": error or "unauthorized", "error_description": description}
        await _send_json(send, status, body, [(b"www-authenticate", ("Bearer " + ", ".join(parts)).encode())])


async def _send_json(
    send: Send, status: int, payload: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
