"""`notewarden takeover DIR (--config FILE | --state-dir DIR)`, and the trash report `notewarden
doctor` shows: who owns each workspace folder's trash, and what in it no process will settle.

A takeover makes the configured ledger the owner of a folder whose owner ledger is gone, e.g. a
folder restored from a backup next to a fresh state dir (`notes.ownership` Rule 3). It rewrites
the owner marker and nothing else: nothing is moved back, nothing deleted. The old owner's
entries stay in `.notewarden-trash/`, listed with the paths they came from; they are not in this
ledger's `notes_trash_list` (their rows were in the old ledger), and a person may move them back.

Refused (exit 1) while the owner provably still exists: a SQLite ledger file on this host that
still holds the owner's id. Serve with that state dir instead, or move it away first. An owner
this host cannot check (PostgreSQL, another host) is replaced, because the command says so.
Exit 0 when the configured ledger owns the folder afterwards; 2 when DIR is not a workspace.
"""

from __future__ import annotations

import socket
import sqlite3
import sys
from contextlib import closing
from pathlib import Path

from notewarden.config import Config
from notewarden.ledger import Ledger, LedgerUnavailable
from notewarden.notes.ownership import OwnerMarker, TrashReport, inspect_trash, read_owner, take_over
from notewarden.schema import SchemaOutOfDate
from notewarden.scope.fs_errors import FsError
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.uri import FileUri
from notewarden.storage import open_ledger, sqlite_path

__all__ = ["ledger_id_of", "run_takeover", "sqlite_ledger_id", "trash_reports"]


def sqlite_ledger_id(path: Path) -> str | None:
    """The id of the SQLite ledger at `path`, read-only; None when there is none (yet)."""
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT ledger_id FROM ledger_identity").fetchone()
    except sqlite3.Error:
        return None
    return str(row[0]) if row else None


def ledger_id_of(config: Config) -> str | None:
    """The configured ledger's id, changing nothing; None when it does not exist or cannot be read."""
    if config.storage.ledger == "sqlite":
        return sqlite_ledger_id(sqlite_path(config))
    try:
        ledger = open_ledger(config, check_schema=False)
    except (LedgerUnavailable, SchemaOutOfDate):
        return None
    try:
        return ledger.identity.ledger_id
    except Exception:  # no ledger_identity table yet: `db upgrade` has not run
        return None
    finally:
        ledger.close()


def trash_reports(config: Config) -> list[TrashReport | str]:
    """For `notewarden doctor`: per workspace folder, its owner and the intents nobody here settles
    (`TrashReport.lines()` words them), or a line saying why the folder could not be read."""
    if not config.storage.workspaces_are_directories:
        return []
    ledger_id = ledger_id_of(config)
    reports: list[TrashReport | str] = []
    for workspace in config.workspaces:
        try:
            with WorkspaceRoot.open(workspace.path) as root:
                reports.append(inspect_trash(root, str(workspace), ledger_id))
        except (FsError, OSError) as exc:
            reports.append(f"{workspace}: cannot be read ({exc})")
    return reports


def run_takeover(config: Config, folder: str) -> int:
    workspace = _configured(config, folder)
    if workspace is None or not config.storage.workspaces_are_directories:
        folders = (
            ", ".join(w.path for w in config.workspaces) if config.storage.workspaces_are_directories else ""
        )
        print(
            f"notewarden: {folder} is not a workspace folder of {config.source or 'this configuration'}; "
            f"configured: {folders or 'none (its notes are kept in a database)'}",
            file=sys.stderr,
        )
        return 2
    ledger = open_ledger(config)
    try:
        return _take_over(ledger, workspace)
    finally:
        ledger.close()


def _take_over(ledger: Ledger, workspace: FileUri) -> int:
    ours = ledger.identity
    with WorkspaceRoot.open(workspace.path) as root:
        try:
            owner = read_owner(root)
        except ValueError as exc:
            owner = None
            print(f"the owner marker could not be read ({exc}); it is replaced")
        if owner is not None and owner.ledger_id == ours.ledger_id:
            print(f"{workspace}: already owned by this ledger ({ours.ledger_id}); nothing to do")
            return 0
        if owner is not None and _still_there(owner):
            print(
                f"refused: {workspace} is owned by {owner.describe()}, which still exists. Serve the folder "
                f"with that state dir ({owner.state_dir}) instead; or, to replace it on purpose, stop the "
                "servers that use it, move that state dir away, and run this again."
            )
            return 1
        with ledger.critical_section() as txn:  # this ledger's own trash steps wait meanwhile
            txn.lock_workspace(str(workspace))
            take_over(root, ours)
        print(f"{workspace}: now owned by this ledger ({ours.ledger_id}); nothing was moved")
        if owner is not None:
            print(
                f"  previous owner: {owner.describe()} ({owner.ledger_id}); a server still using it refuses now"
            )
        report = inspect_trash(root, str(workspace), ours.ledger_id)
        for line in report.lines()[1:]:
            print(line)
    return 0


def _still_there(owner: OwnerMarker) -> bool:
    return (
        owner.kind == "sqlite"
        and owner.host == socket.gethostname()
        and sqlite_ledger_id(Path(owner.location)) == owner.ledger_id
    )


def _configured(config: Config, folder: str) -> FileUri | None:
    wanted = Path(folder).expanduser().resolve()
    return next((w for w in config.workspaces if Path(w.path).resolve() == wanted), None)
