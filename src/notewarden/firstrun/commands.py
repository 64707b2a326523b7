"""`notewarden init` and `notewarden token add|revoke`: a working config in one command.

    notewarden init [DIR ...] [--http] [--port N] [--principal NAME] [--rights R] [--config FILE]
    notewarden token add PRINCIPAL [--rights R] [--grant URI ...] [--config FILE]
    notewarden token revoke PRINCIPAL [--all] [--config FILE]      # the token on stdin

Rules:
1. A token is printed once, on stdout, and never written anywhere (config_file Rule 1). `init`
   makes one only with `--http`: a stdio client is the configured principal and needs none.
2. `init` never replaces a config: a second run says how to add a token instead.
3. `revoke` reads the token to revoke from stdin (not argv, which `ps` shows); `--all` revokes
   every token of the principal. Running servers stop accepting it on their next request.
4. `--rights R` (comma-separated rights or bundles) is checked before anything is written. For
   `init` it is the principal's rights (default `INIT_RIGHTS`); for `token add` what the token
   carries, at most its principal's (without it, a token carries all of them). Both say what was
   left out and how to run a read-only assistant.
"""

from __future__ import annotations

import getpass
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from notewarden.config import ConfigError, config_for_directories
from notewarden.firstrun.client_entries import (
    TOKEN_ENV,
    ClientEntry,
    ServerLaunch,
    client_entries,
    notewarden_command,
)
from notewarden.firstrun.config_file import (
    INIT_RIGHTS,
    add_token,
    default_config_path,
    new_config_text,
    new_token,
    parse_rights_option,
    principal_rights,
    revoke_tokens,
    token_hash,
    write_config_file,
)
from notewarden.scope.rights import ALL_RIGHTS, Right, describe_rights, parse_rights

__all__ = ["ENTRY_HEADING", "run_init", "run_token"]

ENTRY_HEADING = "── "
_PRINCIPAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")


def default_principal() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        return "me"
    return user if _PRINCIPAL_ID.fullmatch(user) else "me"


def print_entries(entries: Sequence[ClientEntry], out: TextIO) -> None:
    for entry in entries:
        print(f"\n{ENTRY_HEADING}{entry.client} ── {entry.where}", file=out)
        print(entry.text, file=out)


def print_token(principal: str, token: str, out: TextIO) -> None:
    print(f"\nToken for {principal!r}, shown this once (only its SHA-256 is stored):", file=out)
    print(f"  {token}", file=out)
    print(f"Keep it in your password manager; clients read it from ${TOKEN_ENV}:", file=out)
    print(f"  export {TOKEN_ENV}={token}", file=out)


def run_init(
    directories: Sequence[str],
    *,
    http: bool,
    port: int,
    principal: str | None,
    config: str | None,
    state_dir: str | None,
    rights: str | None = None,
    out: TextIO = sys.stdout,
) -> int:
    names = INIT_RIGHTS if rights is None else parse_rights_option("--rights", rights)  # Rule 4
    folders = list(directories) or ["."]
    workspaces = config_for_directories(folders).workspaces  # refuses a folder that does not exist
    who = principal or default_principal()
    if not _PRINCIPAL_ID.fullmatch(who):
        raise ConfigError(f"--principal {who!r} must match {_PRINCIPAL_ID.pattern}")
    path = Path(config).expanduser().absolute() if config else default_config_path()
    token = new_token() if http else None
    text = new_config_text(
        workspaces,
        principal=who,
        state_dir=Path(state_dir).expanduser().absolute() if state_dir else None,
        http_port=port if http else None,
        token_sha256=token_hash(token) if token else None,
        rights=names,
    )
    write_config_file(path, text, replace=False)  # Rule 2
    print(f"Wrote {path} (mode 0600): principal {who!r} may use", file=out)
    for uri in workspaces:
        print(f"  {uri}", file=out)
    print_rights(who, names, path, out)
    if token is not None:
        print_token(who, token, out)
    print("\nCheck it:  notewarden doctor" + ("" if config is None else f" --config {path}"), file=out)
    if http:
        print(f"Serve it:  notewarden serve --config {path} --transport http", file=out)
    http_url = f"http://127.0.0.1:{port}/mcp" if http else None
    launch = ServerLaunch(notewarden_command(), ("serve", "--config", str(path)), http_url)
    print("\nPaste one of these into your client:", file=out)
    print_entries(client_entries(launch), out)
    return 0


def print_rights(principal: str, names: Sequence[str], path: Path, out: TextIO) -> None:
    """Rule 4: what the principal may do, what that leaves out, and the read-only assistant."""
    held = parse_rights(names)
    print(f"with the rights {describe_rights(held)} ({', '.join(names)}).", file=out)
    left_out = ALL_RIGHTS - held
    if left_out:
        print(f'Left out: {describe_rights(left_out)}; add them with rights = ["owner"] in {path}.', file=out)
    print("\nA read-only assistant (it may read and search, never change a note):", file=out)
    print(f"  notewarden serve --config {path} --read-only", file=out)
    print(f"  or over HTTP, a token of its own: notewarden token add {principal} --rights reader", file=out)


def print_token_rights(
    principal: str, names: Sequence[str] | None, granted: frozenset[Right], out: TextIO
) -> None:
    """Rule 4: what the new token carries: its rights, never more than its principal's grants."""
    if names is None:
        print(f"It carries all of {principal!r}'s rights ({describe_rights(granted)}).", file=out)
        return
    asked = parse_rights(names)
    print(f"It carries only {describe_rights(asked & granted)} ({', '.join(names)}).", file=out)
    beyond = asked - granted
    if beyond:
        print(
            f"{principal!r} is not granted {describe_rights(beyond)}, so neither is the token: a token "
            "narrows its principal's rights, never widens them.",
            file=out,
        )


def run_token(
    action: str,
    principal: str,
    *,
    config: str | None,
    grant: Sequence[str] = (),
    rights: str | None = None,
    revoke_all: bool = False,
    stdin: TextIO = sys.stdin,
    out: TextIO = sys.stdout,
) -> int:
    path = Path(config).expanduser() if config else default_config_path()
    if action == "add":
        names = None if rights is None else parse_rights_option("--rights", rights)  # Rule 4
        token = add_token(path, principal, grant=grant, rights=names)
        print(f"Added a token for {principal!r} to {path}.", file=out)
        print_token_rights(principal, names, principal_rights(path, principal), out)
        print_token(principal, token, out)
        return 0
    if rights is not None:
        raise ConfigError("--rights goes with `token add`; `token revoke` finds a token whatever its rights")
    if revoke_all:
        removed = revoke_tokens(path, principal, token=None)
    else:
        if stdin.isatty():
            given = getpass.getpass(f"Token of {principal!r} to revoke (not echoed): ")
        else:
            given = stdin.readline()
        given = given.strip()
        if not given:
            raise ConfigError("no token given on stdin; pass the token to revoke, or --all")
        removed = revoke_tokens(path, principal, token=given)
    print(
        f"Revoked {removed} token(s) of {principal!r} in {path}; servers refuse it from their next request.",
        file=out,
    )
    return 0
