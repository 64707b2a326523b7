"""Who is calling over HTTP, and what the credential allows: OAuth 2.1 resource server + dev tokens.

Rule 1: a credential is a bearer token in the Authorization header, nothing else. Two kinds:
static tokens (their SHA-256 listed under a `[[principal]]`: all of its rights, or under
`[[principal.token]]` with fewer) and, with an `[oauth]` table, JWT access tokens from one
authorization server. Only the second kind has a `resource` (the audience it was verified for):
`from_authorization_server` tells them apart, since only there can asking again for a scope help.

Rule 2: a JWT is accepted only when all of these hold (PyJWT does the checking):

| check                         | source                                                         |
|-------------------------------|----------------------------------------------------------------|
| `alg` in `[oauth] algorithms` | asymmetric only (no `none`, no HMAC); must equal the key's alg |
| signature                     | the key whose `kid` matches, from `jwks_file` or `jwks_url`    |
| `iss`                         | equals `[oauth] issuer`                                        |
| `aud`                         | names `[oauth] resource` (RFC 8707: issued for this server)    |
| `exp`, `nbf`                  | with `leeway_seconds` of clock skew                            |
| `sub`                         | required; mapped to a principal by `oauth_subjects`            |

An unknown `kid` refreshes the key set at most once per cooldown (URL) or when the file changed.

Rule 3: scopes are rights (`scope.rights`): one scope per right, `notewarden:read`,
`notewarden:write`, `notewarden:delete`, `notewarden:purge`, `notewarden:publish` (`scope` as a
space-separated string, or `scp` as a list). A token narrows its principal's grants to the
rights of its scopes, never widens them; every MCP request needs `notewarden:read`, a tool call
the scope of the tool's right. The hierarchy is the rights': every scope includes
`notewarden:read`, and nothing else includes anything.
Rule 3a: tokens issued for the three scopes before rights (`notes:read`, `notes:write`,
`notes:delete`, which meant "by tool kind") keep working while `[oauth] accept_legacy_scopes` is
true (the default), each read as the rights it fully covered and nothing more, so no old token
gains anything: `notes:read` = read; `notes:write` = read, publish; `notes:delete` = read,
delete, purge. Editing (the right write) needs a token with `notewarden:write`: a client with an
old token gets the `403` step-up naming it.

Rule 4: rejection reasons are logged (never the token) and the client sees the RFC 6750 challenge
of `web.authz`; the token never leaves this module.

Rule 5: the protected-resource metadata (RFC 9728) states `resource` and `authorization_servers`
exactly as configured, character for character: a client compares the issuer it is given with the
authorization server's own `issuer` (RFC 8414 §3.3) and the `resource` with the URL it asked about
(RFC 9728 §3.3) as strings, so no URL type may normalize them (`https://auth.example.com` must not
come back as `https://auth.example.com/`). `scopes_supported` is `ALL_SCOPES`, one per right; the
legacy scopes of Rule 3a are accepted but never advertised.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import anyio.to_thread
import jwt
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import cors_middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from notewarden.config import Config, OAuthSettings
from notewarden.scope.rights import ALL_RIGHTS, Right, implied

__all__ = [
    "ALL_SCOPES",
    "LEGACY_SCOPES",
    "METADATA_PATH",
    "BearerVerifier",
    "InvalidToken",
    "JwtVerifier",
    "challenge_scopes",
    "from_authorization_server",
    "protected_resource_metadata",
    "protected_resource_routes",
    "resource_metadata_url",
    "rights_of_scopes",
    "scope_of",
]

logger = logging.getLogger(__name__)

SCOPE_PREFIX: Final = "notewarden:"
ALL_SCOPES: Final = tuple(SCOPE_PREFIX + right for right in Right)
LEGACY_SCOPES: Final[dict[str, frozenset[Right]]] = {
    "notes:read": frozenset({Right.READ}),
    "notes:write": frozenset({Right.READ, Right.PUBLISH}),
    "notes:delete": frozenset({Right.READ, Right.DELETE, Right.PURGE}),
}
"""Rule 3a: the scopes before rights, each as the rights all of whose tools it allowed."""
URL_KEYS_COOLDOWN_SECONDS: Final = 30.0
METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
METADATA_MAX_AGE_SECONDS: Final = 3600


def scope_of(right: Right) -> str:
    return SCOPE_PREFIX + right


_RIGHT_OF_SCOPE: Final = {scope_of(r): r for r in Right}


def rights_of_scopes(scopes: Iterable[str], *, legacy: bool = False) -> frozenset[Right]:
    """Rule 3: the rights a token's scopes carry (unknown scopes carry none; `legacy`: Rule 3a's too).
    A verified token's scopes are already this server's own (`BearerVerifier`). Asked twice on every
    HTTP request (the scopes a call needs, the credential's narrowing), of a handful of distinct
    scope lists: remembered."""
    return _rights_of(tuple(scopes), legacy)


@functools.lru_cache(maxsize=256)
def _rights_of(scopes: tuple[str, ...], legacy: bool) -> frozenset[Right]:
    rights: set[Right] = set()
    for scope in scopes:
        right = _RIGHT_OF_SCOPE.get(scope)
        if right is not None:
            rights.add(right)
        elif legacy:
            rights |= LEGACY_SCOPES.get(scope, frozenset())
    return implied(rights)


def challenge_scopes(needed: Iterable[Right]) -> list[str]:
    """The fewest scopes that carry every needed right (every scope includes read)."""
    wanted = set(needed)
    if len(wanted) > 1:
        wanted.discard(Right.READ)
    return [scope_of(r) for r in Right if r in wanted]


def from_authorization_server(token: AccessToken) -> bool:
    """Rule 1: a verified JWT access token (another, with more scopes, can be asked for), not a
    configured token (whose rights are fixed in the configuration)."""
    return token.resource is not None


class InvalidToken(Exception):
    """The credential is not acceptable; the message is for the log, never for the client."""


class _KeySet:
    """Signing keys from a JWKS file (re-read when it changes) or URL (PyJWKClient, with cooldown)."""

    def __init__(self, settings: OAuthSettings) -> None:
        self._file = settings.jwks_file
        self._client = (
            jwt.PyJWKClient(
                settings.jwks_url, lifespan=300, timeout=5, cooldown_duration=URL_KEYS_COOLDOWN_SECONDS
            )
            if settings.jwks_url
            else None
        )
        self._file_keys: tuple[int | None, jwt.PyJWKSet | None] = (None, None)

    def key(self, kid: str | None) -> jwt.PyJWK:
        if self._client is not None and kid is not None:
            try:
                return self._client.get_signing_key(kid)  # refreshes once per cooldown on an unknown kid
            except jwt.PyJWKClientError as exc:
                raise InvalidToken(f"no signing key: {exc}") from None
        try:
            keys = self._client.get_signing_keys() if self._client is not None else self._load_file().keys
        except jwt.PyJWKClientError as exc:
            raise InvalidToken(f"no signing key: {exc}") from None
        if kid is None:
            if len(keys) != 1:
                raise InvalidToken("token has no kid and the key set has more than one key")
            return keys[0]
        for key in keys:
            if key.key_id == kid:
                return key
        raise InvalidToken(f"no signing key with kid {kid!r}")

    def _load_file(self) -> jwt.PyJWKSet:
        assert self._file is not None
        try:
            mtime: int | None = os.stat(self._file).st_mtime_ns
        except OSError as exc:
            raise InvalidToken(f"JWKS file unreadable: {exc.strerror}") from None
        cached_mtime, cached = self._file_keys
        if cached is not None and cached_mtime == mtime:
            return cached
        try:
            keys = jwt.PyJWKSet.from_json(Path(self._file).read_text(encoding="utf-8"))
        except (OSError, ValueError, jwt.PyJWTError) as exc:
            raise InvalidToken(f"JWKS file unusable: {exc}") from None
        self._file_keys = (mtime, keys)
        return keys


class JwtVerifier:
    """Rule 2, for one authorization server."""

    def __init__(self, settings: OAuthSettings) -> None:
        self.settings = settings
        self._keys = _KeySet(settings)

    async def claims(self, token: str) -> dict[str, Any]:
        """Verified in a worker thread: the key set may be fetched (URL) or re-read (file), and
        neither may block the event loop."""
        return await anyio.to_thread.run_sync(self._claims, token)

    def _claims(self, token: str) -> dict[str, Any]:
        s = self.settings
        try:
            header = jwt.get_unverified_header(token)
            alg = header.get("alg")
            if alg not in s.algorithms:
                raise InvalidToken(f"alg {alg!r} is not one of {list(s.algorithms)}")
            kid = header.get("kid")
            if kid is not None and not isinstance(kid, str):
                raise InvalidToken("kid is not a string")
            claims: dict[str, Any] = jwt.decode(
                token,
                key=self._keys.key(kid),
                algorithms=[alg],
                audience=s.resource,
                issuer=s.issuer,
                leeway=s.leeway_seconds,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"{type(exc).__name__}: {exc}") from None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise InvalidToken("sub is not a non-empty string")
        return claims


def token_scopes(claims: dict[str, Any]) -> list[str]:
    """A JWT's scopes as it states them: `scope` (space-separated) or `scp` (a list or a string)."""
    scope, scp = claims.get("scope"), claims.get("scp")
    if isinstance(scope, str):
        return scope.split()
    if isinstance(scp, list):
        return [s for s in scp if isinstance(s, str)]
    if isinstance(scp, str):
        return scp.split()
    return []


@dataclass(frozen=True, slots=True)
class BearerVerifier:
    """The SDK's TokenVerifier: static dev tokens first, then JWTs (Rule 1).

    `AccessToken.subject` is the notewarden principal, or None for a valid JWT whose `sub`
    no `[[principal]] oauth_subjects` lists (web.authz answers that with 403).
    """

    config: Callable[[], Config]
    jwt_verifier: JwtVerifier | None

    async def verify_token(self, token: str) -> AccessToken | None:
        config = self.config()
        found = config.credential_for_token(token)
        if found is not None:
            owner, rights = found
            carried = ALL_RIGHTS if rights is None else rights
            scopes = [scope_of(r) for r in Right if r in carried]
            return AccessToken(token="", client_id=owner, subject=owner, scopes=scopes)
        if self.jwt_verifier is None:
            logger.info("bearer token rejected: not a configured token", extra={"event": "auth_rejected"})
            return None
        try:
            claims = await self.jwt_verifier.claims(token)
        except InvalidToken as exc:
            logger.info("bearer token rejected: %s", exc, extra={"event": "auth_rejected"})
            return None
        subject = claims["sub"]
        principal = config.principal_for_subject(subject)
        if principal is None:
            logger.warning(
                "valid token for subject %r, which no [[principal]] oauth_subjects lists",
                subject,
                extra={"event": "auth_unmapped_subject"},
            )
        client = claims.get("client_id") or claims.get("azp") or subject
        exp = claims["exp"]
        return AccessToken(
            token="",
            client_id=str(client),
            subject=principal,
            scopes=self.scopes(claims),
            # the SDK's backend compares expires_at with now; exp was already checked with leeway
            expires_at=int(exp + self.jwt_verifier.settings.leeway_seconds),
            resource=self.jwt_verifier.settings.resource,
            claims={"iss": claims.get("iss"), "sub": subject},
        )

    def scopes(self, claims: dict[str, Any]) -> list[str]:
        """The JWT's scopes as this server's own (Rule 3; Rule 3a's legacy ones read as their rights)."""
        assert self.jwt_verifier is not None
        legacy = self.jwt_verifier.settings.accept_legacy_scopes
        carried = rights_of_scopes(token_scopes(claims), legacy=legacy)
        return [scope_of(r) for r in Right if r in carried]


def resource_metadata_url(settings: OAuthSettings) -> str:
    """RFC 9728 §3.1: the well-known path inserted between `resource`'s host and its path (a path of
    just `/` is dropped), on `resource` as configured."""
    parts = urlsplit(settings.resource)
    path = "" if parts.path == "/" else parts.path
    return f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{path}"


def protected_resource_metadata(settings: OAuthSettings) -> dict[str, Any]:
    """Rule 5: the RFC 9728 document, with the configured strings as given."""
    return {
        "resource": settings.resource,
        "authorization_servers": list(settings.authorization_servers),
        "scopes_supported": list(ALL_SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": "notewarden",
    }


def protected_resource_routes(settings: OAuthSettings) -> list[Route]:
    """RFC 9728 metadata at the path-inserted well-known URL of `resource` and at the root one, for
    GET and the CORS preflight (a browser-based client reads it from another origin)."""
    body = json.dumps(protected_resource_metadata(settings)).encode()
    headers = {"Cache-Control": f"public, max-age={METADATA_MAX_AGE_SECONDS}"}

    async def metadata(_: Request) -> Response:
        return Response(body, media_type="application/json", headers=headers)

    endpoint = cors_middleware(metadata, ["GET", "OPTIONS"])
    paths = {METADATA_PATH, urlsplit(resource_metadata_url(settings)).path}
    return [Route(p, endpoint=endpoint, methods=["GET", "OPTIONS"]) for p in sorted(paths)]
