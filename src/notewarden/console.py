"""The start-up block: what a person reads when `notewarden serve` is up.

Rules:
1. One block, written once the server can answer (`logs` Rule 4): where it listens (the URL, or
   stdio and who its client is), the workspaces with who owns each one's trash, how clients
   authenticate, where notes and confirmations are kept, and the sandbox. The same facts are the
   fields of the JSON `started` record.
2. It names no secret: token counts and principals, never a token or its hash; the database as
   the ledger describes it (`user@host:port/db`, never a password).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notewarden.config import Config
from notewarden.notes.ownership import Relation, describe_ledger
from notewarden.scope.rights import ALL_RIGHTS, Right, describe_rights
from notewarden.scope.sandbox import SandboxReport
from notewarden.services import Services
from notewarden.storage import NOTE_STORES
from notewarden.version import __version__

__all__ = ["startup_block"]

_SANDBOX = {
    "enforced": "Landlock ABI {abi}: read-write only beneath the workspaces and the state dir",
    "unavailable": "not confined: this kernel offers no Landlock (authorization and containment still hold)",
    "disabled": "not confined: turned off (--no-sandbox or [sandbox] enabled = false)",
}


def _trash(services: Services, workspace: str) -> str:
    trash = services.trash.get(workspace)
    if trash is None:
        return ""
    if trash.relation is Relation.REFUSED:
        return "trash refused: owned by a ledger this server cannot use (see the warning above)"
    if trash.relation is Relation.SHARED and trash.owner is not None:
        return f"trash shared with {trash.owner.describe()} (see the warning above)"
    return "trash marked now for this server's ledger" if trash.marked_now else "trash owned by this server"


def _authentication(config: Config, transport: str) -> str:
    if transport == "stdio":
        return f"stdio: every request is principal {config.stdio_principal} ([stdio] principal); no token"
    holders = {p.id: len(p.tokens) for p in config.principals.values() if p.tokens}
    shown = ", ".join(f"{who} ({n})" for who, n in holders.items()) or "none yet (notewarden token add NAME)"
    oauth = f"; OAuth access tokens from {config.oauth.issuer}" if config.oauth is not None else ""
    return f"bearer tokens of {shown}{oauth}; Host and Origin checked"


def startup_block(
    services: Services,
    *,
    transport: str,
    url: str | None,
    sandbox: SandboxReport,
    cap: frozenset[Right] = ALL_RIGHTS,
) -> tuple[list[str], dict[str, Any]]:
    """Rule 1: the lines of the block, and the same facts as the `started` record's fields."""
    config = services.config
    where = f"over HTTP at {url}" if url is not None else "over stdio"
    identity = services.ledger.identity
    storage = (
        f"notes in {'the workspace folders' if NOTE_STORES[config.storage.notes].kept_as == 'files' else config.storage.notes}; "
        f"confirmations in {describe_ledger(identity.kind, identity.location)}"
    )
    workspaces = [
        f"{uri} ({_trash(services, str(uri))})" if _trash(services, str(uri)) else str(uri)
        for uri in config.workspaces
    ]
    rows: Mapping[str, str | list[str]] = {
        "workspaces": workspaces,
        "authentication": _authentication(config, transport),
        "storage": storage,
        "sandbox": _SANDBOX.get(sandbox.status, sandbox.status).format(abi=sandbox.abi),
    }
    if cap != ALL_RIGHTS:
        rows = {**rows, "rights": f"at most {describe_rights(cap)} for every caller (serve --rights)"}
    lines = [f"notewarden {__version__} is serving {where}"]
    for name, value in rows.items():
        values = value if isinstance(value, list) else [value]
        for i, text in enumerate(values or ["none"]):
            lines.append(f"  {name if i == 0 else '':<15} {text}")
    lines.append("Stop it with Ctrl-C." if transport == "http" else "It answers the client on stdin/stdout.")
    fields: dict[str, Any] = {
        "version": __version__,
        "transport": transport,
        "url": url,
        **{k: "; ".join(v) if isinstance(v, list) else v for k, v in rows.items()},
    }
    return lines, fields
