"""OAuth 2.1 resource server over a real HTTP server process, with a real authorization server.

Tokens come from oidc-provider (tests/authserver, started once per module with this module's signing
keys; notewarden reads them from its `jwks_uri`). A rejection rule is probed with a variant the
authorization server would never issue (expired, another audience, alg none, ...), minted here with
the same keys so that only that one rule can reject it.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from playwright.sync_api import sync_playwright

from notewarden.web.oauth import ALL_SCOPES
from tests.authserver import CONNECT_CLIENT, SERVICE_CLIENT, AuthorizationServer, start_authorization_server
from tests.conftest import ALICE_TOKEN, Deployment, HttpServer, free_port, sha256, start_http_server
from tests.wire.publishing import CHROMIUM, CHROMIUM_FLAGS, RecordingTarget
from tests.wire.rawhttp import RawMcp, Reply

SUBJECT = SERVICE_CLIENT  # the `sub` of the authorization server's client-credentials tokens: alice


@dataclass
class Keys:
    rsa: rsa.RSAPrivateKey
    ec: ec.EllipticCurvePrivateKey
    stranger: rsa.RSAPrivateKey  # not in the JWKS

    def jwks(self, *, private: bool = False) -> dict[str, Any]:
        rsa_key: Any = self.rsa if private else self.rsa.public_key()
        ec_key: Any = self.ec if private else self.ec.public_key()
        rsa_jwk = RSAAlgorithm.to_jwk(rsa_key, as_dict=True)
        ec_jwk = ECAlgorithm.to_jwk(ec_key, as_dict=True)
        return {
            "keys": [
                {**rsa_jwk, "kid": "rsa-1", "alg": "RS256", "use": "sig"},
                {**ec_jwk, "kid": "ec-1", "alg": "ES256", "use": "sig"},
            ]
        }


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys(
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec.generate_private_key(ec.SECP256R1()),
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
    )


@dataclass
class Authority:
    """The authorization server of this module, and the one address notewarden serves at."""

    server: AuthorizationServer
    port: int
    keys: Keys

    @property
    def resource(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@pytest.fixture(scope="module")
def authority(keys: Keys, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Authority]:
    port = free_port()
    log = tmp_path_factory.mktemp("authserver") / "authserver.log"
    server = start_authorization_server(
        free_port(),
        resource=f"http://127.0.0.1:{port}/mcp",
        private_jwks=keys.jwks(private=True)["keys"],
        redirect_uris=[f"http://127.0.0.1:{port}/connect/oauth/callback"],
        log=log,
    )
    yield Authority(server, port, keys)
    server.stop()


@dataclass
class OAuthServer:
    server: HttpServer
    resource: str
    keys: Keys
    deployment: Deployment
    authority: AuthorizationServer

    @property
    def metadata_url(self) -> str:
        """Where the challenges say the protected-resource metadata is (RFC 9728, path-inserted)."""
        return f"http://127.0.0.1:{self.server.port}/.well-known/oauth-protected-resource/mcp"

    def issue(self, scope: str = "notewarden:read") -> str:
        """A real access token from the authorization server (client credentials, `sub` = alice's)."""
        return self.authority.client_credentials(scope, self.resource)

    def mint(
        self,
        scope: str | None = "notewarden:read",
        *,
        kid: str = "rsa-1",
        key: Any = None,
        alg: str = "RS256",
        **claims: Any,
    ) -> str:
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": self.authority.issuer,
            "aud": self.resource,
            "sub": SUBJECT,
            "iat": now,
            "exp": now + 300,
            "client_id": "test-client",
        }
        if scope is not None:
            payload["scope"] = scope
        payload.update(claims)
        payload = {k: v for k, v in payload.items() if v is not None}
        signing_key = key if key is not None else (self.keys.ec if alg.startswith("ES") else self.keys.rsa)
        return jwt.encode(payload, signing_key, algorithm=alg, headers={"kid": kid})

    def client(self, token: str | None) -> RawMcp:
        return RawMcp(self.server.url, token)


def oauth_table(resource: str, issuer: str, jwks: str, extra: str = "") -> str:
    return (
        f'[oauth]\nresource = "{resource}"\nissuer = "{issuer}"\n{jwks}\n'
        f'authorization_servers = ["{issuer}"]\nleeway_seconds = 5\n{extra}'
    )


def start_oauth_server(
    deployment: Deployment,
    authority: Authority,
    jwks_line: str,
    log: str,
    *,
    alice_rights: list[str] | None = None,
    alice_extra: str = "",
    oauth_extra: str = "",
) -> OAuthServer:
    """`alice_rights`: her grant's rights (default: every right); `alice_extra`: tables of hers;
    `oauth_extra`: lines of `[oauth]`."""
    issuer = authority.server.issuer
    deployment.write_config(
        alice_subjects=[SUBJECT],
        alice_rights=alice_rights,
        alice_extra=alice_extra,
        extra=oauth_table(authority.resource, issuer, jwks_line, oauth_extra),
    )
    server = start_http_server(deployment.config, deployment.root / log, port=authority.port)
    return OAuthServer(server, authority.resource, authority.keys, deployment, authority.server)


@pytest.fixture
def oauth(deployment: Deployment, authority: Authority) -> Iterator[OAuthServer]:
    """notewarden reading the authorization server's keys from its jwks_uri."""
    running = start_oauth_server(
        deployment, authority, f'jwks_url = "{authority.server.jwks_url}"', "oauth.log"
    )
    yield running
    running.server.stop()


def challenge(header: str) -> dict[str, str]:
    assert header.startswith("Bearer "), header
    out = {}
    for part in header[len("Bearer ") :].split('", '):
        key, _, value = part.partition("=")
        out[key.strip()] = value.strip('"')
    return out


def list_notes(client: RawMcp, deployment: Deployment) -> Any:
    return client.call("notes_list", {"workspaceUri": deployment.notes_uri})


# --- accepted tokens -------------------------------------------------------------------------


@pytest.mark.parametrize("issued", ["by the authorization server", "ES256, with its EC key"])
def test_valid_token_is_the_mapped_principal(oauth: OAuthServer, issued: str) -> None:
    token = oauth.issue() if issued.startswith("by") else oauth.mint(alg="ES256", kid="ec-1")
    client = oauth.client(token)
    reply = list_notes(client, oauth.deployment)
    assert reply.status == 200
    assert "reports/tps-2019.md" in [n["id"] for n in reply.result["structuredContent"]["notes"]]
    # the subject is alice: bob's workspace is not hers
    other = client.call("notes_list", {"workspaceUri": oauth.deployment.private_uri}).result
    assert other["structuredContent"]["error"]["code"] == "workspace_not_granted"
    assert "alice" in other["content"][0]["text"]
    client.close()


def test_scp_list_claim_and_leeway_are_accepted(oauth: OAuthServer) -> None:
    now = int(time.time())
    token = oauth.mint(scope=None, scp=["notewarden:read"], exp=now - 2, nbf=now + 2)  # within 5 s leeway
    client = oauth.client(token)
    assert list_notes(client, oauth.deployment).status == 200
    client.close()


def test_static_development_tokens_still_work(oauth: OAuthServer) -> None:
    client = oauth.client(ALICE_TOKEN)
    assert list_notes(client, oauth.deployment).status == 200
    reply = client.call("notes_delete", {"workspaceUri": oauth.deployment.notes_uri, "title": "TPS"})
    assert reply.result["resultType"] == "input_required"
    client.close()


# --- rejected tokens: 401 ----------------------------------------------------------------------


def bad_tokens(o: OAuthServer) -> dict[str, str]:
    now = int(time.time())
    return {
        "expired": o.mint(exp=now - 60),
        "nbf in the future": o.mint(nbf=now + 120),
        "wrong iss": o.mint(iss="https://other-issuer.test"),
        "another resource's token": o.mint(aud="http://127.0.0.1:1/mcp"),
        "wrong aud": o.mint(aud="https://other-server.test/mcp"),
        "aud of another path": o.mint(aud=o.resource + "/x"),
        "no exp": o.mint(exp=None),
        "no sub": o.mint(sub=None),
        "bad signature": o.mint(key=o.keys.stranger),
        "unknown kid": o.mint(kid="rsa-9"),
        "alg not the key's": o.mint(alg="PS256", kid="rsa-1"),
        "HS256 with the public key as secret": jwt.encode(
            {
                "iss": o.authority.issuer,
                "aud": o.resource,
                "sub": SUBJECT,
                "exp": now + 60,
                "scope": "notewarden:read",
            },
            "not-a-key-we-know-of-at-all-0123456789",
            algorithm="HS256",
            headers={"kid": "rsa-1"},
        ),
        "alg none": jwt.encode(
            {"iss": o.authority.issuer, "aud": o.resource, "sub": SUBJECT, "exp": now + 60},
            None,
            algorithm="none",
            headers={"kid": "rsa-1"},
        ),
        "garbage": "not.a.jwt",
    }


def test_bad_tokens_get_401_invalid_token_with_the_challenge(oauth: OAuthServer) -> None:
    metadata_url = f"http://127.0.0.1:{oauth.server.port}/.well-known/oauth-protected-resource/mcp"
    for label, token in bad_tokens(oauth).items():
        client = oauth.client(token)
        reply = list_notes(client, oauth.deployment)
        client.close()
        assert reply.status == 401, label
        params = challenge(reply.headers["www-authenticate"])
        assert params["error"] == "invalid_token", label
        assert params["resource_metadata"] == metadata_url, label
        assert params["scope"] == "notewarden:read", label
        assert "nor an access token valid here" in json.loads(reply.text)["error_description"], label
        assert "Traceback" not in reply.text
    log = oauth.server.log.read_text()
    for token in bad_tokens(oauth).values():
        assert token not in log
    for reason in ("ExpiredSignatureError", "ImmatureSignatureError", "InvalidIssuerError"):
        assert reason in log


def test_no_credentials_get_401_without_error_attribute(oauth: OAuthServer) -> None:
    client = oauth.client(None)
    reply = client.call("notes_delete", {"workspaceUri": oauth.deployment.notes_uri, "title": "TPS"})
    assert reply.status == 401
    header = reply.headers["www-authenticate"]
    assert "error=" not in header
    params = challenge(header)
    assert params["scope"] == "notewarden:delete"  # what this request needs
    assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
    assert "an OAuth access token" in json.loads(reply.text)["error_description"]
    client.close()


# --- scopes are rights: 403 and the step-up ----------------------------------------------------------

TPS = "reports/tps-2019.md"
READ_TOOLS = {
    "notes_list", "notes_search", "notes_read", "notes_read_many", "notes_history", "notes_tags",
    "notes_links", "notes_recent", "notes_trash_list", "notes_similar", "notes_health",
}  # fmt: skip
"""The eleven tools that need only `read` (docs/permissions.md)."""


def refused_for_scope(oauth: OAuthServer, reply: Reply, scope: str) -> None:
    """The step-up challenge: 403, `insufficient_scope`, the scope asked for, the metadata's URL."""
    assert reply.status == 403, reply.text
    params = challenge(reply.headers["www-authenticate"])
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == scope
    assert params["resource_metadata"] == oauth.metadata_url


def right_missing(reply: Reply) -> dict[str, Any]:
    """Past the gate (200, no challenge), refused by the tool: its `structuredContent.error`."""
    assert reply.status == 200 and "www-authenticate" not in reply.headers, reply.text
    error: dict[str, Any] = reply.result["structuredContent"]["error"]
    assert reply.result["isError"] is True and error["code"] == "right_missing", error
    return error


def delete_tps(client: RawMcp, deployment: Deployment) -> dict[str, Any]:
    """Both rounds of deleting the TPS report: the form, then the answer that picks it."""
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    first = client.call("notes_delete", args)
    assert first.status == 200 and first.result["resultType"] == "input_required", first.text
    answer = {"delete_choice": {"action": "accept", "content": {"note_id": TPS, "confirm": True}}}
    done = client.call("notes_delete", args, inputResponses=answer, requestState=first.result["requestState"])
    assert done.status == 200, done.text
    outcome: dict[str, Any] = done.result["structuredContent"]
    return outcome


def trash_ids(client: RawMcp, deployment: Deployment) -> list[str]:
    listed = client.call("notes_trash_list", {"workspaceUri": deployment.notes_uri}).result
    return [entry["id"] for entry in listed["structuredContent"]["entries"]]


def edit_tps(client: RawMcp, deployment: Deployment) -> Reply:
    edits = [{"op": "append", "text": "fixed a typo"}]
    return client.call("notes_edit", {"workspaceUri": deployment.notes_uri, "noteId": TPS, "edits": edits})


@pytest.mark.parametrize(
    "scope",
    [
        "notewarden:read",
        "notewarden:write",
        "notewarden:read notewarden:write notewarden:purge notewarden:publish",
        "notes:write",
        "openid",
    ],
)
def test_a_token_without_notewarden_delete_is_asked_for_it(oauth: OAuthServer, scope: str) -> None:
    # "openid" is a scope a client-credentials grant cannot carry: that one is minted
    client = oauth.client(oauth.mint(scope=scope) if scope == "openid" else oauth.issue(scope))
    reply = client.call("notes_delete", {"workspaceUri": oauth.deployment.notes_uri, "title": "TPS report"})
    refused_for_scope(oauth, reply, "notewarden:delete")
    listing = list_notes(client, oauth.deployment)
    if scope == "openid":
        refused_for_scope(oauth, listing, "notewarden:read")
    else:
        assert listing.status == 200  # every notewarden scope (and notes:write) includes reading
    client.close()
    assert (oauth.deployment.notes / TPS).exists()


def test_a_narrow_token_is_refused_and_one_with_the_asked_scope_deletes(oauth: OAuthServer) -> None:
    narrow = oauth.client(oauth.issue("notewarden:read"))
    reply = narrow.call("notes_delete", {"workspaceUri": oauth.deployment.notes_uri, "title": "TPS report"})
    refused_for_scope(oauth, reply, "notewarden:delete")
    narrow.close()
    asked = challenge(reply.headers["www-authenticate"])["scope"]
    client = oauth.client(oauth.issue(asked))  # the authorization server issues exactly that scope
    assert delete_tps(client, oauth.deployment)["outcome"] == "deleted"
    assert TPS in trash_ids(client, oauth.deployment)  # notewarden:delete includes reading
    assert not (oauth.deployment.notes / TPS).exists()
    client.close()


def test_editing_needs_notewarden_write_even_with_notewarden_delete(oauth: OAuthServer) -> None:
    before = (oauth.deployment.notes / TPS).read_bytes()
    deleter = oauth.client(oauth.issue("notewarden:delete"))
    refused_for_scope(oauth, edit_tps(deleter, oauth.deployment), "notewarden:write")
    deleter.close()
    assert (oauth.deployment.notes / TPS).read_bytes() == before
    editor = oauth.client(oauth.issue("notewarden:write"))
    edited = edit_tps(editor, oauth.deployment)
    assert edited.status == 200 and not edited.result.get("isError"), edited.text
    refused_for_scope(
        oauth,
        editor.call("notes_trash_empty", {"workspaceUri": oauth.deployment.notes_uri}),
        "notewarden:purge",
    )
    editor.close()
    assert (oauth.deployment.notes / TPS).read_bytes().endswith(b"fixed a typo\n")


def test_state_is_bound_to_the_principal_not_the_token(oauth: OAuthServer) -> None:
    """A second token of the same subject may finish the confirmation (principal binding)."""
    args = {"workspaceUri": oauth.deployment.notes_uri, "title": "stand-up"}
    first = oauth.client(oauth.issue("notewarden:delete"))
    round1 = first.call("notes_delete", args).result
    state = round1["requestState"]
    options = round1["inputRequests"]["delete_choice"]["params"]
    note_id = options["requestedSchema"]["properties"]["note_id"]["oneOf"][0]["const"]
    second = oauth.client(oauth.issue("notewarden:delete"))
    answer = {"delete_choice": {"action": "decline"}}
    done = second.call("notes_delete", args, inputResponses=answer, requestState=state)
    assert done.result["structuredContent"]["outcome"] == "declined"
    assert (oauth.deployment.notes / note_id).exists()
    first.close()
    second.close()


def test_a_legacy_notes_delete_token_deletes_and_purges_but_is_asked_for_write(oauth: OAuthServer) -> None:
    """`notes:delete` (before rights) is read as read, delete, purge: what it fully covered."""
    client = oauth.client(oauth.issue("notes:delete"))
    assert delete_tps(client, oauth.deployment)["outcome"] == "deleted"
    ws = {"workspaceUri": oauth.deployment.notes_uri}
    first = client.call("notes_trash_empty", ws)
    assert first.status == 200 and first.result["resultType"] == "input_required", first.text
    answer = {"empty_trash": {"action": "accept", "content": {"confirm": True}}}
    emptied = client.call(
        "notes_trash_empty", ws, inputResponses=answer, requestState=first.result["requestState"]
    ).result["structuredContent"]
    assert emptied["outcome"] == "emptied" and emptied["purged"] == 1
    refused_for_scope(oauth, edit_tps(client, oauth.deployment), "notewarden:write")
    client.close()


# a tool per right beyond read, and the arguments that get it past the gate
BY_RIGHT = {
    "write": ("notes_edit", {"noteId": TPS, "edits": [{"op": "append", "text": "x"}], "dryRun": True}),
    "delete": ("notes_delete", {"title": "TPS report"}),
    "purge": ("notes_trash_empty", {}),
    "publish": ("notes_publish", {"noteId": TPS, "target": "blog"}),
}


@pytest.mark.parametrize(
    ("legacy", "carries"),
    [("notes:read", set()), ("notes:write", {"publish"}), ("notes:delete", {"delete", "purge"})],
)
def test_a_legacy_scope_carries_only_the_rights_it_fully_covered(
    oauth: OAuthServer, legacy: str, carries: set[str]
) -> None:
    client = oauth.client(oauth.issue(legacy))
    assert list_notes(client, oauth.deployment).status == 200
    for right, (tool, args) in BY_RIGHT.items():
        reply = client.call(tool, {"workspaceUri": oauth.deployment.notes_uri, **args})
        if right in carries:
            assert reply.status == 200, (legacy, tool, reply.text)
        else:
            refused_for_scope(oauth, reply, f"notewarden:{right}")
    client.close()


def test_legacy_scopes_carry_nothing_once_turned_off(deployment: Deployment, authority: Authority) -> None:
    running = start_oauth_server(
        deployment,
        authority,
        f'jwks_url = "{authority.server.jwks_url}"',
        "oauth-no-legacy.log",
        oauth_extra="accept_legacy_scopes = false\n",
    )
    try:
        legacy = running.client(running.issue("notes:delete"))
        refused_for_scope(running, list_notes(legacy, deployment), "notewarden:read")
        reply = legacy.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "TPS report"})
        refused_for_scope(running, reply, "notewarden:delete")
        legacy.close()
        current = running.client(running.issue("notewarden:delete"))
        assert delete_tps(current, deployment)["outcome"] == "deleted"
        current.close()
    finally:
        running.server.stop()


def test_a_right_the_grant_lacks_is_not_asked_for_the_tool_refuses_it(
    deployment: Deployment, authority: Authority
) -> None:
    """No token could help, so no scope is asked for: the request passes the gate and the tool says
    who grants the right (the operator)."""
    running = start_oauth_server(
        deployment,
        authority,
        f'jwks_url = "{authority.server.jwks_url}"',
        "oauth-reader.log",
        alice_rights=["reader"],
    )
    before = (deployment.notes / TPS).read_bytes()
    try:
        for scope in ("notewarden:read", "notewarden:read notewarden:write notewarden:delete"):
            client = running.client(running.issue(scope))
            listed = client.request("tools/list")
            assert {t["name"] for t in listed.result["tools"]} == READ_TOOLS, scope
            args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
            error = right_missing(client.call("notes_delete", args))
            assert error["right"] == "delete"
            assert "server's operator" in error["message"], error
            error = right_missing(edit_tps(client, deployment))
            assert error["right"] == "write", error
            client.close()
    finally:
        running.server.stop()
    assert (deployment.notes / TPS).read_bytes() == before


@pytest.mark.parametrize(
    ("scope", "shown"),
    [
        ("notewarden:read", READ_TOOLS),
        ("notewarden:delete", READ_TOOLS | {"notes_delete"}),
        ("notewarden:write", READ_TOOLS | {
            "notes_create", "notes_update", "notes_edit", "notes_move", "notes_restore", "notes_revert",
            "notes_daily",
        }),
    ],
)  # fmt: skip
def test_tools_list_shows_only_the_tools_of_the_token_s_rights(
    oauth: OAuthServer, scope: str, shown: set[str]
) -> None:
    client = oauth.client(oauth.issue(scope))
    listed = client.request("tools/list").result
    assert sorted(t["name"] for t in listed["tools"]) == sorted(shown)  # each once
    client.close()


def test_unmapped_subject_is_403_access_denied(oauth: OAuthServer) -> None:
    client = oauth.client(oauth.mint(sub="someone-else"))
    reply = list_notes(client, oauth.deployment)
    assert reply.status == 403
    assert json.loads(reply.text)["error"] == "access_denied"
    assert "someone-else" not in reply.text
    client.close()


def test_a_configured_token_with_fewer_rights_is_not_challenged(
    deployment: Deployment, authority: Authority
) -> None:
    """A `[[principal.token]]` carries fixed rights: no authorization server can widen it, so the
    gate asks for nothing and the tool refuses, naming the credential."""
    reader_token = "alice-reader-token-" + "r" * 20
    running = start_oauth_server(
        deployment,
        authority,
        f'jwks_url = "{authority.server.jwks_url}"',
        "oauth-static.log",
        alice_extra=f'[[principal.token]]\nsha256 = "{sha256(reader_token)}"\nrights = ["reader"]\n',
    )
    try:
        client = running.client(reader_token)
        assert {t["name"] for t in client.request("tools/list").result["tools"]} == READ_TOOLS
        error = right_missing(
            client.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "TPS"})
        )
        assert error["right"] == "delete"
        assert "your credential carries only read: use one with delete" in error["message"], error
        client.close()
    finally:
        running.server.stop()
    assert (deployment.notes / TPS).exists()


# --- protected resource metadata ------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
)
def test_protected_resource_metadata(oauth: OAuthServer, path: str) -> None:
    response = httpx2.get(f"http://127.0.0.1:{oauth.server.port}{path}", timeout=10)
    assert response.status_code == 200
    assert response.json() == {
        "resource": oauth.resource,
        "authorization_servers": [oauth.authority.issuer],  # oidc-provider's issuer has no trailing slash
        "scopes_supported": [
            "notewarden:read", "notewarden:write", "notewarden:delete", "notewarden:purge", "notewarden:publish",
        ],
        "bearer_methods_supported": ["header"],
        "resource_name": "notewarden",
    }  # fmt: skip
    preflight = httpx2.options(
        f"http://127.0.0.1:{oauth.server.port}{path}",
        headers={"Origin": "https://client.example", "Access-Control-Request-Method": "GET"},
        timeout=10,
    )
    assert preflight.status_code == 200 and "GET" in preflight.headers["access-control-allow-methods"]


@pytest.mark.parametrize(
    ("resource", "issuer", "servers"),
    [
        ("https://notes.example.com", "https://auth.example.com", None),
        (
            "https://notes.example.com/team/mcp",
            "https://login.example.org/tenants/team-a",
            ["https://login.example.org/tenants/team-a", "https://auth.example.com/"],
        ),
    ],
)
def test_the_metadata_states_the_configured_urls_byte_for_byte(
    deployment: Deployment, keys: Keys, resource: str, issuer: str, servers: list[str] | None
) -> None:
    """RFC 8414 §3.3 / RFC 9728 §3.3: a client compares these as strings, so they come back exactly
    as configured: no slash added to a bare issuer, none taken from one that has it."""
    jwks = deployment.root / "etc" / "jwks.json"
    jwks.parent.mkdir()
    jwks.write_text(json.dumps(keys.jwks()))
    table = f'[oauth]\nresource = "{resource}"\nissuer = "{issuer}"\njwks_file = "{jwks}"\n'
    if servers is not None:
        table += f"authorization_servers = {json.dumps(servers)}\n"
    deployment.write_config(alice_subjects=[SUBJECT], extra=table)
    server = start_http_server(deployment.config, deployment.root / "metadata.log")
    try:
        path = urlsplit(resource).path
        metadata_url = f"https://notes.example.com/.well-known/oauth-protected-resource{path}"
        unauthenticated = RawMcp(server.url, None)
        asked = list_notes(unauthenticated, deployment).headers["www-authenticate"]
        unauthenticated.close()
        assert challenge(asked)["resource_metadata"] == metadata_url
        for served in {urlsplit(metadata_url).path, "/.well-known/oauth-protected-resource"}:
            response = httpx2.get(f"http://127.0.0.1:{server.port}{served}", timeout=10)
            assert response.status_code == 200, served
            doc = response.json()
            assert doc["resource"] == resource
            assert doc["authorization_servers"] == (servers or [issuer])
            for configured in [resource, *(servers or [issuer])]:
                assert json.dumps(configured).encode() in response.content  # the bytes as configured
            assert doc["scopes_supported"] == list(ALL_SCOPES)
    finally:
        server.stop()


# --- keys from a URL -----------------------------------------------------------------------------


class _JwksHandler(http.server.BaseHTTPRequestHandler):
    jwks: bytes = b""
    hits: int = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.jwks)))
        self.end_headers()
        self.wfile.write(self.jwks)

    def log_message(self, *args: object) -> None:
        pass


def test_keys_from_a_jwks_file(deployment: Deployment, authority: Authority) -> None:
    jwks = deployment.root / "etc" / "jwks.json"
    jwks.parent.mkdir()
    jwks.write_text(json.dumps(authority.keys.jwks()))
    running = start_oauth_server(deployment, authority, f'jwks_file = "{jwks}"', "oauth-file.log")
    try:
        client = running.client(running.issue())
        assert list_notes(client, deployment).status == 200
        client.close()
    finally:
        running.server.stop()


def test_keys_from_a_jwks_url(deployment: Deployment, authority: Authority) -> None:
    """The key set is cached; an unknown kid refreshes it at most once per cooldown."""
    handler = type(
        "Handler", (_JwksHandler,), {"jwks": json.dumps(authority.keys.jwks()).encode(), "hits": 0}
    )
    jwks_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=jwks_server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{jwks_server.server_address[1]}/jwks.json"
    running = start_oauth_server(deployment, authority, f'jwks_url = "{url}"', "oauth-url.log")
    try:
        good = running.client(running.mint(alg="ES256", kid="ec-1"))
        assert list_notes(good, deployment).status == 200
        assert list_notes(good, deployment).status == 200
        good.close()
        unknown = running.client(running.mint(kid="rotated-away"))
        assert list_notes(unknown, deployment).status == 401
        assert list_notes(unknown, deployment).status == 401
        unknown.close()
        assert 1 <= handler.hits <= 2  # cached; an unknown kid refreshes at most once per cooldown
    finally:
        running.server.stop()
        jwks_server.shutdown()
        thread.join(5)


# --- the connect page signs people in at the authorization server ---------------------------------


def test_connect_page_signs_in_at_the_authorization_server(
    deployment: Deployment, authority: Authority
) -> None:
    """Authorization code + PKCE in headless Chromium: the person signs in at oidc-provider, nobody
    pastes a token; their `sub` maps to the principal through oauth_subjects as on /mcp."""
    target = RecordingTarget().start()
    issuer = authority.server.issuer
    publish = (
        f'connect_client_id = "{CONNECT_CLIENT}"\n[publish]\n'
        f'[[publish.target]]\nid = "blog"\ntitle = "Team blog"\nurl = "{target.url}"\nauth = "bearer"\n'
    )
    deployment.write_config(
        alice_subjects=[SUBJECT, "alice-person"],
        extra=oauth_table(authority.resource, issuer, f'jwks_url = "{authority.server.jwks_url}"') + publish,
    )
    server = start_http_server(deployment.config, deployment.root / "connect.log", port=authority.port)
    client = RawMcp(server.url, authority.server.client_credentials("notewarden:publish", authority.resource))
    try:
        args = {"workspaceUri": deployment.notes_uri, "noteId": "reports/tps-2019.md", "target": "blog"}
        first = client.call("notes_publish", args, capabilities={"elicitation": {"url": {}}}).result
        link = first["inputRequests"]["publish_connect"]["params"]["url"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
            try:
                for login, expected in (("mallory", "bad-credential"), ("alice-person", "completed")):
                    page = browser.new_context().new_page()
                    page.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
                    page.goto(link)
                    assert page.query_selector("#token") is not None, (
                        "static-token sign-in stays for development"
                    )
                    page.click("#oauth-sign-in")
                    page.wait_for_url(f"{issuer}/**")
                    page.fill("input[name=login]", login)
                    page.fill("input[name=password]", "any")
                    page.click("button[type=submit]")
                    page.wait_for_selector("button[type=submit]:has-text('Continue')")
                    page.click("button[type=submit]")  # consent
                    page.wait_for_url(f"http://127.0.0.1:{authority.port}/connect/**")
                    if expected == "bad-credential":  # a subject no [[principal]] lists
                        assert page.get_attribute("[data-outcome]", "data-outcome") == expected
                        assert "not a notewarden principal" in page.inner_text("body")
                        assert "Team blog" not in page.inner_text("body")
                        continue
                    page.click("#continue")
                    assert page.inner_text("#principal") == "alice"
                    page.fill("#credential", "blog-credential-" + "o" * 16)
                    page.click("#connect")
                    page.wait_for_selector("[data-outcome=completed]")
            finally:
                browser.close()
        done = client.call(
            "notes_publish",
            args,
            capabilities={"elicitation": {"url": {}}},
            inputResponses={"publish_connect": {"action": "accept"}},
            requestState=first["requestState"],
        ).result
        assert done["structuredContent"]["outcome"] == "published"
        assert target.received[0].headers["authorization"] == "Bearer blog-credential-" + "o" * 16
    finally:
        client.close()
        server.stop()
        target.stop()
