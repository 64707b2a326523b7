"""Writing the TOML config people then edit by hand: `init` creates it, `token` edits it.

Rules:
1. Only a token's SHA-256 is ever written (`token_hash`: the exact bytes of the token, no
   trailing newline, which is the `echo … | sha256sum` trap). The token itself is shown once.
2. An edit keeps every comment and key the person wrote (tomlkit), is checked by the same
   parser the server uses before it replaces the file, and replaces it atomically (a server
   reloading the file sees the old or the new one, never half). The mode stays 0600.
3. A token made with rights is a `[[principal.token]]` table `{sha256, rights}`, its rights written
   as given (names of rights or bundles: what the person typed is what they read back); one made
   without is a `token_sha256` entry and carries all of its principal's rights. Revoking finds a
   token in either form.
4. `init` writes every principal's rights explicitly (`INIT_RIGHTS` unless told otherwise), with a
   comment that lists the bundles and says what the default leaves out.
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

from notewarden.config import ConfigError, default_state_dir, parse_config, read_config_text
from notewarden.scope.rights import BUNDLES, Right, describe_rights, parse_rights
from notewarden.scope.uri import FileUri

__all__ = [
    "INIT_RIGHTS",
    "TOKEN_PREFIX",
    "add_token",
    "default_config_path",
    "new_config_text",
    "new_token",
    "parse_rights_option",
    "principal_rights",
    "revoke_tokens",
    "token_hash",
    "write_config_file",
]

TOKEN_PREFIX = "nw_"
INIT_RIGHTS = ("maintainer",)
"""Rule 4: what `init` grants unless `--rights` says otherwise: a grant's default, written out (it
leaves out purge and publish, as `_rights_comment` says)."""


def parse_rights_option(option: str, text: str) -> tuple[str, ...]:
    """Comma-separated rights or bundles from a command line, as given, after checking every name
    with `parse_rights`: a typo is a `ConfigError` naming the option and what is allowed, raised
    before anything is written."""
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    if not names:
        raise ConfigError(f"{option} needs at least one right or bundle, e.g. {option} reader")
    try:
        parse_rights(names)
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from None
    return names


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
    rights: Sequence[str] = INIT_RIGHTS,
) -> str:
    """A commented config for `init`: the folders, one principal with its rights written out (Rule 4),
    stdio and (optionally) HTTP."""
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
    hashes = f'"{token_sha256}"' if token_sha256 is not None else ""
    lines += [
        "# Who may use which workspace, and what they may do there (docs/permissions.md). A stdio",
        "# client is the [stdio] principal; an HTTP client is whoever its bearer token belongs to.",
        "[[principal]]",
        f"id = {_quoted(principal)}",
        f"workspaces = [{', '.join(_quoted(str(u)) for u in workspaces)}]",
        *_rights_comment(),
        f"rights = [{', '.join(_quoted(r) for r in rights)}]",
        "# SHA-256 of bearer tokens with all of these rights (`notewarden token add NAME`; with",
        "# `--rights reader` a token carries fewer, as a [[principal.token]]). Tokens are never stored.",
        f"token_sha256 = [{hashes}]",
        "# More rights in one folder (grants add up; there is no deny), for example the permanent",
        "# operations only in an Archive folder:",
        "# [[principal.grant]]",
        f"# uri = {_quoted(str(workspaces[0].joinpath(('Archive',))))}",
        '# rights = ["purge"]',
    ]
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


_BUNDLE_USES = {
    "reader": "look, don't touch",
    "editor": "edit but never delete",
    "maintainer": "everyday work with a trash (a grant's default)",
    "owner": "everything",
}


def _rights_comment() -> list[str]:
    """Rule 4: the bundles, each with its rights, and what the default leaves out."""
    width = max(map(len, BUNDLES))
    spelled = {name: describe_rights(held) for name, held in BUNDLES.items()}
    column = max(map(len, spelled.values()))
    return [
        '# rights: what it may do there. Rights and bundles mix, e.g. ["editor", "publish"]:',
        *(f"#   {n:<{width}} = {spelled[n]:<{column}}   {_BUNDLE_USES[n]}" for n in BUNDLES),
        f'# "{INIT_RIGHTS[0]}" leaves out purge (emptying the trash and purging saved versions, for',
        '# good) and publish (sending a note to another service): add them with rights = ["owner"].',
    ]


def _quoted(text: str) -> str:
    return tomlkit.string(text).as_string()


def write_config_file(path: Path, text: str, *, replace: bool) -> None:
    """Rule 2: write atomically with mode 0600; `replace=False` refuses an existing file."""
    if path.is_dir():
        raise ConfigError(
            f"{path} is a folder, not a config file", fix=f"name a file: --config {path / 'notewarden.toml'}"
        )
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
        return tomlkit.parse(read_config_text(path))
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _save(path: Path, document: tomlkit.TOMLDocument) -> None:
    parse_config(document.unwrap(), source=path)  # Rule 2
    write_config_file(path, tomlkit.dumps(document), replace=True)


def _principals(document: tomlkit.TOMLDocument) -> AoT | list[Table]:
    entries = document.get("principal")
    return entries if entries is not None else []


def add_token(
    path: Path, principal: str, *, grant: Sequence[str] = (), rights: Sequence[str] | None = None
) -> str:
    """A new token for `principal` (created with `grant` if it does not exist); returns the token.
    With `rights` (names of rights or bundles) it carries only those (Rule 3)."""
    if rights is not None:
        try:
            parse_rights(rights)  # an unknown right is named before the file is even read
        except ValueError as exc:
            raise ConfigError(f"token rights: {exc}") from None
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
    if rights is None:
        hashes = entry.get("token_sha256")
        if not isinstance(hashes, Array):
            hashes = tomlkit.array()
            entry["token_sha256"] = hashes
        hashes.append(token_hash(token))
    else:
        narrowed = tomlkit.table()
        narrowed["sha256"] = token_hash(token)
        narrowed["rights"] = list(rights)
        narrowed.add(tomlkit.nl())
        tables = entry.get("token")
        if not isinstance(tables, AoT):
            tables = tomlkit.aot()
            entry["token"] = tables
        tables.append(narrowed)
    _save(path, document)
    return token


def principal_rights(path: Path, principal: str) -> frozenset[Right]:
    """Every right `principal` holds somewhere in the config at `path` (what a token can carry at most)."""
    config = parse_config(_load(path).unwrap(), source=path)
    found = config.principals.get(principal)
    return frozenset(r for held in (found.grants.values() if found else ()) for g in held for r in g.rights)


def revoke_tokens(path: Path, principal: str, *, token: str | None) -> int:
    """Remove one token (by its value) or, with `token=None`, every token of `principal`, whether
    it is a `token_sha256` entry or a `[[principal.token]]` table (Rule 3)."""
    document = _load(path)
    entry = next((p for p in _principals(document) if p.get("id") == principal), None)
    hashes = entry.get("token_sha256") if entry is not None else None
    tables = entry.get("token") if entry is not None else None
    hashes = hashes if isinstance(hashes, Array) else None
    tables = tables if isinstance(tables, AoT) else None
    if entry is None or (not hashes and not tables):
        raise ConfigError(f"principal {principal!r} has no tokens in {path}")
    digest = token_hash(token) if token is not None else None
    removed = 0
    if hashes is not None:
        keep = [h for h in hashes if digest is not None and h != digest]
        removed += len(hashes) - len(keep)
        if not keep:
            del entry["token_sha256"]
        elif len(keep) < len(hashes):
            entry["token_sha256"] = keep
    if tables is not None:
        gone = [i for i, t in enumerate(tables) if digest is None or t.get("sha256") == digest]
        for i in reversed(gone):
            del tables[i]
        removed += len(gone)
        if not len(tables):
            del entry["token"]
    if removed == 0:
        raise ConfigError(f"that token is not one of {principal!r}'s; nothing was changed")
    _save(path, document)
    return removed
