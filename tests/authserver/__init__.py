"""A real authorization server for the OAuth tests: panva's oidc-provider (npm, pinned), run by node.

The tests hand it their signing keys, so the tokens it issues and the tampered variants a test
mints to probe one rejection rule are signed by the same keys, published at its `jwks_uri`.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from notewarden.web.oauth import ALL_SCOPES, LEGACY_SCOPES
from tests.conftest import stop_process

HERE = Path(__file__).resolve().parent
NODE = (
    HERE / "node_modules" / ".bin" / "node"
)  # Node 22, pinned in package-lock.json (oidc-provider 9 wants it)
CONNECT_CLIENT = "notewarden-connect"
SERVICE_CLIENT = "resource-tests"
SERVICE_SECRET = "resource-tests-secret-" + "s" * 24
SCOPES = (*ALL_SCOPES, *LEGACY_SCOPES)
"""What it issues: notewarden's scope per right, and the three from before rights (web/oauth.py)."""


@dataclass
class AuthorizationServer:
    issuer: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    def client_credentials(self, scope: str, resource: str) -> str:
        """A JWT access token for `resource`, issued to the service client (its `sub`)."""
        response = httpx2.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            auth=(SERVICE_CLIENT, SERVICE_SECRET),
            timeout=10,
        )
        assert response.status_code == 200, response.text
        return str(response.json()["access_token"])

    def stop(self) -> None:
        stop_process(self.process)


def start_authorization_server(
    port: int, *, resource: str, private_jwks: list[dict[str, Any]], redirect_uris: list[str], log: Path
) -> AuthorizationServer:
    clients = [
        {
            "client_id": CONNECT_CLIENT,
            "token_endpoint_auth_method": "none",
            "redirect_uris": redirect_uris,
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        },
        {
            "client_id": SERVICE_CLIENT,
            "client_secret": SERVICE_SECRET,
            "grant_types": ["client_credentials"],
            "response_types": [],
            "redirect_uris": [],
            "scope": " ".join(SCOPES),
        },
    ]
    config = {
        "port": port,
        "resource": resource,
        "scopes": list(SCOPES),
        "jwks": {"keys": private_jwks},
        "clients": clients,
    }
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [str(NODE), str(HERE / "server.mjs"), json.dumps(config)], stdout=sink, stderr=sink, cwd=HERE
        )
    issuer = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the authorization server exited: {log.read_text()[-2000:]}")
        try:
            if httpx2.get(f"{issuer}/.well-known/openid-configuration", timeout=1).status_code == 200:
                return AuthorizationServer(issuer, process, log)
        except httpx2.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the authorization server did not start: {log.read_text()[-2000:]}")
