"""Signing a person in at the authorization server: authorization code with PKCE (RFC 6749, 7636).

Used by the connect pages when `[oauth] connect_client_id` names notewarden's public client at the
authorization server. The pieces are the SDK's (`PKCEParameters`, the RFC 8414 / OIDC discovery
URLs, `OAuthMetadata`, `OAuthToken`); this module only runs the two requests.

Rules:
1. The access token is requested for this server's `resource` (RFC 8707), so it is the same kind
   of token an MCP client sends, and `BearerVerifier` maps its `sub` to the principal exactly as
   it does on /mcp. The token is used once, to learn who signed in, and dropped.
2. Metadata is fetched once per process (again after a failure); a failure says which URL
   answered what, never echoes a token or a code.
"""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import urlencode, urlsplit

import httpx2
from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls
from mcp.shared.auth import OAuthMetadata, OAuthToken
from pydantic import ValidationError

from notewarden.config import OAuthSettings

__all__ = ["AuthorizationServer", "SignInFailed", "code_challenge"]

TIMEOUT_SECONDS = 10.0


class SignInFailed(Exception):
    """The authorization server could not be used; the message is safe to show."""


def code_challenge(verifier: str) -> str:
    """RFC 7636 S256."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


class AuthorizationServer:
    def __init__(self, settings: OAuthSettings) -> None:
        assert settings.connect_client_id is not None
        self.settings = settings
        self.client_id = settings.connect_client_id
        self.name = urlsplit(settings.authorization_servers[0]).netloc
        self._metadata: OAuthMetadata | None = None

    async def metadata(self) -> OAuthMetadata:
        if self._metadata is not None:
            return self._metadata
        issuer = self.settings.authorization_servers[0]
        urls = build_oauth_authorization_server_metadata_discovery_urls(issuer, self.settings.resource)
        async with httpx2.AsyncClient(timeout=TIMEOUT_SECONDS, trust_env=False) as http:
            for url in urls:
                try:
                    response = await http.get(url)
                    if response.status_code == 200:
                        self._metadata = OAuthMetadata.model_validate_json(response.content)
                        return self._metadata
                except (httpx2.HTTPError, ValidationError):
                    continue
        raise SignInFailed(f"the authorization server {issuer} could not be reached; try again later")

    async def authorize_url(self, *, redirect_uri: str, state: str, verifier: str) -> str:
        metadata = await self.metadata()
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "scope": self.settings.connect_scope,
            "state": state,
            "code_challenge": code_challenge(verifier),
            "code_challenge_method": "S256",
            "resource": self.settings.resource,
        }
        return f"{metadata.authorization_endpoint}?{urlencode(query)}"

    async def exchange(self, code: str, *, redirect_uri: str, verifier: str) -> str:
        """Rule 1: the code for an access token for this resource."""
        metadata = await self.metadata()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": self.client_id,
            "code_verifier": verifier,
            "resource": self.settings.resource,
        }
        try:
            async with httpx2.AsyncClient(timeout=TIMEOUT_SECONDS, trust_env=False) as http:
                response = await http.post(str(metadata.token_endpoint), data=form)
        except httpx2.HTTPError:
            raise SignInFailed("the authorization server could not be reached; try again") from None
        if response.status_code != 200:
            raise SignInFailed(f"the authorization server refused the sign-in (HTTP {response.status_code})")
        try:
            return OAuthToken.model_validate_json(response.content).access_token
        except ValidationError:
            raise SignInFailed("the authorization server's answer had no access token") from None
