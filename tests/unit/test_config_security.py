"""The [oauth], [limits] and [sandbox] tables and oauth_subjects: valid forms and clear errors, and no
error that quotes a secret put in the wrong place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from notewarden.config import ConfigError, parse_config
from notewarden.scope.rights import Right

BASE: dict[str, Any] = {
    "state_dir": "/var/lib/nw",
    "workspace": [{"uri": "file:///srv/notes"}],
    "principal": [{"id": "alice", "workspaces": ["file:///srv/notes"], "oauth_subjects": ["u-1"]}],
}
OAUTH = {
    "resource": "https://notes.example/mcp",
    "issuer": "https://auth.example",
    "jwks_file": "/etc/nw/jwks.json",
}


def config(**tables: Any) -> Any:
    return parse_config({**BASE, **tables})


def test_defaults() -> None:
    c = config()
    assert c.oauth is None
    limits = {right: c.limits.per_minute(right) for right in Right}
    assert limits == {
        Right.READ: None,
        Right.WRITE: 120,
        Right.DELETE: 30,
        Right.PURGE: 10,
        Right.PUBLISH: 30,
    }


def test_the_limit_before_rights_is_read_as_the_delete_limit() -> None:
    c = config(limits={"destructive_per_minute": 7})
    assert c.limits.per_minute(Right.DELETE) == 7 and c.limits.per_minute(Right.WRITE) == 120
    assert c.sandbox.enabled is True and c.sandbox.read_paths == ()
    assert c.principal_for_subject("u-1") == "alice" and c.principal_for_subject("u-2") is None


def test_oauth_table() -> None:
    c = config(oauth={**OAUTH, "algorithms": ["ES256"], "leeway_seconds": 10})
    assert c.oauth is not None
    assert c.oauth.authorization_servers == ("https://auth.example",)  # defaults to the issuer
    assert c.oauth.jwks_file == Path("/etc/nw/jwks.json") and c.oauth.jwks_url is None
    assert c.oauth.algorithms == ("ES256",) and c.oauth.leeway_seconds == 10


@pytest.mark.parametrize(
    ("oauth", "fragment"),
    [
        ({k: v for k, v in OAUTH.items() if k != "jwks_file"}, "exactly one of jwks_file"),
        ({**OAUTH, "jwks_url": "https://auth.example/jwks"}, "exactly one of jwks_file"),
        ({**OAUTH, "jwks_file": "jwks.json"}, "absolute path"),
        ({**OAUTH, "algorithms": ["HS256"]}, "asymmetric"),
        ({**OAUTH, "algorithms": ["none"]}, "asymmetric"),
        ({**OAUTH, "algorithms": []}, "asymmetric"),
        ({**OAUTH, "resource": "notes.example/mcp"}, "http(s) URL"),
        ({**OAUTH, "resource": "https://notes.example/mcp#x"}, "http(s) URL"),
        ({**OAUTH, "issuer": "ftp://auth.example"}, "http(s) URL"),
        ({**OAUTH, "authorization_servers": ["javascript:alert(1)"]}, "http(s) URL"),
        ({**OAUTH, "leeway_seconds": 3600}, "between 0 and 300"),
        ({**OAUTH, "audience": "x"}, "unknown key(s) audience"),
    ],
)
def test_oauth_errors_say_what_is_allowed(oauth: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match="oauth"):
        config(oauth=oauth)
    with pytest.raises(ConfigError) as info:
        config(oauth=oauth)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("tables", "fragment"),
    [
        ({"limits": {"destructive_per_minute": 0}}, "between 1 and 100000"),
        ({"limits": {"destructive_per_minute": True}}, "between 1 and 100000"),
        ({"limits": {"per_hour": 5}}, "unknown key(s) per_hour"),
        ({"sandbox": {"enabled": "no"}}, "true or false"),
        ({"sandbox": {"read_paths": ["relative/dir"]}}, "absolute path"),
    ],
)
def test_limits_and_sandbox_errors(tables: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        config(**tables)
    assert fragment in str(info.value)


def test_a_subject_maps_to_one_principal() -> None:
    two = [
        {"id": "alice", "workspaces": ["file:///srv/notes"], "oauth_subjects": ["u-1"]},
        {"id": "bob", "workspaces": [], "oauth_subjects": ["u-1"]},
    ]
    with pytest.raises(ConfigError, match="share the oauth subject"):
        parse_config({**BASE, "principal": two})


TOKEN = "nw-token-7fQ2xLp9"
"""A bearer token typed where it does not belong: no error may repeat it."""


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        (
            {"principal": [{"id": "alice", "workspaces": ["file:///srv/notes"], "token_sha256": [TOKEN]}]},
            "[[principal]] #1 token_sha256: entries must be 64 lowercase hex digits (the SHA-256 of a token",
        ),
        ({"principal": [{"id": "alice", "workspaces": TOKEN}]}, "[[principal]] #1 workspaces must be a list"),
        ({"principal": [{"workspaces": []}]}, "[[principal]] #1 needs id: a principal name"),
        ({"http": {"port": TOKEN}}, "[http] port must be an integer 0-65535; got a string"),
        ({"http": {"port": 70000}}, "[http] port must be an integer 0-65535; got 70000"),
        (
            {"http": {"allowed_origins": ["http://a", 7]}},
            "allowed_origins must be a list of non-empty strings; item 2 is 7",
        ),
        ({"http": {"token": TOKEN}}, "unknown key(s) token in [http]; allowed: allowed_origins, host,"),
        ({"limits": {"destructive_per_minute": TOKEN}}, "[limits] destructive_per_minute must be an integer"),
        ({"sandbox": {"enabled": TOKEN}}, "[sandbox] enabled must be true or false; got a string"),
        ({"stdio": {"principal": [TOKEN]}}, "[stdio] principal must be a non-empty string; got a list"),
        (
            {"oauth": {**OAUTH, "connect_client_id": 5}},
            "[oauth] connect_client_id must be a non-empty string",
        ),
        (
            {"confirmation_ttl_seconds": TOKEN},
            "confirmation_ttl_seconds must be a number of seconds between 1",
        ),
        ({"storage": {"database_url": 5}}, "[storage] database_url must be a PostgreSQL URL; got 5"),
        (
            {"storage": {"ledger": "postgres", "database_url": f"postgresql://u:{TOKEN}@h/db?x=y=z"}},
            "not a valid",
        ),
        ({"http": TOKEN}, "http must be a table; got a string"),
    ],
)
def test_errors_name_the_key_what_is_allowed_and_what_was_given_but_never_a_secret(
    tables: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        config(**tables)
    assert message in str(info.value)
    assert TOKEN not in str(info.value)
