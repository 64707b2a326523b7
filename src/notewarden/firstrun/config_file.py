"""Writing the TOML config people then edit by hand: `init` creates it, `token` edits it.

Rules:
1. Only a token's SHA-256 is ever written (`token_hash`: the exact bytes of the token, no
   trailing newline, which is the `echo … | sha256sum` trap). The token itself is shown once.
2. An edit keeps every comment and key the person wrote (tomlkit), is checked by the same
   parser the server uses before it replaces the file, and replaces it atomically (a server
   reloading the file sees the old or the new one, never half). The mode stays 0600.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
from collections.abc import Sequence
from pathlib import Path

import tomlkit
from tomlkit.items import AoT, Array, Table

from notewarden.config import ConfigError, default_state_dir, parse_config
from notewarden.scope.uri import FileUri

__all__ = [
    "TOKEN_PREFIX",
    "add_token",
    "default_config_path",
    "new_config_text",
    "new_token",
    "revoke_tokens",
    "token_hash",
    "write_config_file",
]

TOKEN_PREFIX = "nw_"


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "notewarden" / "notewarden.toml"


def new_token() -> str:
    """A bearer token: 256 random bits, URL-safe, with a prefix that secret scanners can match."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """Rule 1: what the config stores, and what `Config.principal_for_token` compares."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_config_text(
    workspaces: Sequence[FileUri],
    *,
    principal: str,
    state_dir: Path | None,
    http_port: int | None,
    token_sha256: str | None,
) -> str:
    """A commented config for `init`: the folders, one principal, stdio and (optionally) HTTP."""
    state = state_dir or default_state_dir()
    lines = [
        "# notewarden configuration, written by `notewarden init`. Edit freely: servers reload it on",
        "# the next request. Check it with `notewarden doctor --config THIS_FILE`.",
        "",
        "# Where the confirmation ledger, the sealing key and the search index live. Every server",
        "# that serves these folders must use this same state_dir (one exactly-once domain).",
        f"state_dir = {_quoted(str(state))}",
        "",
        "# How long a delete confirmation stays usable after the form is shown.",
        "confirmation_ttl_seconds = 600",
        "",
    ]
    for uri in workspaces:
        lines += ["[[workspace]]", f"uri = {_quoted(str(uri))}", ""]
    lines += [
        "# Who may use which workspace. A stdio client is the [stdio] principal; an HTTP client is",
        "# whoever its bearer token belongs to (`notewarden token add NAME` adds one).",
        "[[principal]]",
        f"id = {_quoted(principal)}",
        f"workspaces = [{', '.join(_quoted(str(u)) for u in workspaces)}]",
    ]
    if token_sha256 is not None:
        lines.append(f'token_sha256 = ["{token_sha256}"]   # SHA-256 of a token; the token is never stored')
    lines += ["", "[stdio]", f"principal = {_quoted(principal)}", ""]
    if http_port is not None:
        lines += [
            "# `notewarden serve --config THIS_FILE --transport http`",
            "[http]",
            'host = "127.0.0.1"   # loopback only; put a TLS proxy in front to serve others (docs/deployment.md)',
            f"port = {http_port}",
            "",
        ]
    text = "\n".join(lines)
    parse_config(tomlkit.parse(text).unwrap())  # Rule 2: what we write, the server reads
    return text


def _quoted(text: str) -> str:
    return tomlkit.string(text).as_string()


def write_config_file(path: Path, text: str, *, replace: bool) -> None:
    """Rule 2: write atomically with mode 0600; `replace=False` refuses an existing file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if the file appeared meanwhile
    except FileExistsError:
        raise ConfigError(
            f"{path} already exists; add a token with `notewarden token add NAME --config {path}` "
            "or choose another file with --config"
        ) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _load(path: Path) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist; create one with `notewarden init`") from None
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _save(path: Path, document: tomlkit.TOMLDocument) -> None:
    parse_config(document.unwrap(), source=path)  # Rule 2
    write_config_file(path, tomlkit.dumps(document), replace=True)


def _principals(document: tomlkit.TOMLDocument) -> AoT | list[Table]:
    entries = document.get("principal")
    return entries if entries is not None else []


def add_token(path: Path, principal: str, *, grant: Sequence[str] = ()) -> str:
    """A new token for `principal` (created with `grant` if it does not exist); returns the token."""
    document = _load(path)
    entries = _principals(document)
    entry = next((p for p in entries if p.get("id") == principal), None)
    if entry is None:
        if not grant:
            known = ", ".join(str(p.get("id")) for p in entries) or "none"
            raise ConfigError(
                f"no [[principal]] {principal!r} in {path} (principals: {known}); to create it, name its "
                "workspaces: --grant file:///path/to/folder (repeatable)"
            )
        entry = tomlkit.table()
        entry["id"] = principal
        entry["workspaces"] = list(grant)
        if "principal" not in document:
            document["principal"] = tomlkit.aot()
        document["principal"].append(entry)
    token = new_token()
    hashes = entry.get("token_sha256")
    if not isinstance(hashes, Array):
        hashes = tomlkit.array()
        entry["token_sha256"] = hashes
    hashes.append(token_hash(token))
    _save(path, document)
    return token


def revoke_tokens(path: Path, principal: str, *, token: str | None) -> int:
    """Remove one token (by its value) or, with `token=None`, every token of `principal`."""
    document = _load(path)
    entry = next((p for p in _principals(document) if p.get("id") == principal), None)
    hashes = entry.get("token_sha256") if entry is not None else None
    if entry is None or not isinstance(hashes, Array):
        raise ConfigError(f"principal {principal!r} has no tokens in {path}")
    keep = [h for h in hashes if token is not None and h != token_hash(token)]
    removed = len(hashes) - len(keep)
    if removed == 0:
        raise ConfigError(f"that token is not one of {principal!r}'s; nothing was changed")
    if keep:
        entry["token_sha256"] = keep
    else:
        del entry["token_sha256"]
    _save(path, document)
    return removed
