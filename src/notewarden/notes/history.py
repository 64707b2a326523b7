"""Version history: every content a write replaced stays recoverable, per note, within retention.

Rule 1: a write that replaces a note's content (update, edit, revert, link rewrites) first saves
the content it replaces as a history entry, in the same ledger transaction as the write's own
bookkeeping: the row in `note_history` (one table, both dialects, every store), the bytes in the
row (`body`, SQL stores) or in the workspace's `.notewarden-history/<version_id>` (files store, `fsroot.keep_version`,
reached through the directory handle; `body` is NULL). An entry is immutable once written.

Rule 2: history belongs to a note's id and follows it: a move re-keys the rows (`follow_move`);
a delete hands them to the trash entry (`to_trash`: `trash_id` set, so the id's history is empty
for any new note there), a restore hands them back (`from_trash`, under the restored id), and
emptying the trash purges them with it (`drop_trashed`). All in the transaction that moves the
note or its trash row.

Rule 3: retention (`[history] max_versions`, `max_age_days`) is applied on each write: the
note keeps its newest `max_versions` entries, and entries of the workspace older than
`max_age_days` go; entries of trashed notes stay as long as their trash entry. Purging on request
(`notes_history_purge`) is confirmed like emptying the trash; it selects with `select` and
deletes with `delete`, bound to the digest of what the user saw (`tools.confirmed`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from notewarden.ledger import SqlSession
from notewarden.schema import SchemaComponent

__all__ = [
    "HISTORY_COLUMNS",
    "HISTORY_SCHEMA",
    "Change",
    "HistoryEntry",
    "HistoryLog",
    "Retention",
    "new_version_id",
]

HISTORY_SCHEMA = SchemaComponent(
    "note_history",
    tables=("note_history",),
    sqlite=(
        """
        CREATE TABLE note_history (
            version_id TEXT PRIMARY KEY,
            workspace  TEXT NOT NULL,
            note_id    TEXT NOT NULL,
            trash_id   TEXT,
            saved_at   REAL NOT NULL,
            principal  TEXT NOT NULL,
            tool       TEXT NOT NULL,
            summary    TEXT NOT NULL,
            size       INTEGER NOT NULL,
            version    TEXT NOT NULL,
            body       TEXT
        );
        CREATE INDEX note_history_by_note ON note_history (workspace, note_id, saved_at);
        CREATE INDEX note_history_by_age ON note_history (workspace, saved_at);
        CREATE INDEX note_history_by_trash ON note_history (trash_id);
        """,
    ),
    postgres=(
        """
        CREATE TABLE note_history (
            version_id text PRIMARY KEY,
            workspace  text NOT NULL,
            note_id    text NOT NULL,
            trash_id   text,
            saved_at   double precision NOT NULL,
            principal  text NOT NULL,
            tool       text NOT NULL,
            summary    text NOT NULL,
            size       bigint NOT NULL,
            version    text NOT NULL,
            body       text
        );
        CREATE INDEX note_history_by_note ON note_history (workspace, note_id, saved_at);
        CREATE INDEX note_history_by_age ON note_history (workspace, saved_at);
        CREATE INDEX note_history_by_trash ON note_history (trash_id);
        """,
    ),
)

_COLUMNS = "version_id, note_id, saved_at, principal, tool, summary, size, version"
HISTORY_COLUMNS = "version_id, note_id, trash_id, saved_at, principal, tool, summary, size, version"
"""A row as `notewarden import`/`export` carry it (the workspace and the body apart)."""


@dataclass(frozen=True, slots=True)
class Change:
    """Who changes notes, with which tool, and a one-line summary of what changes: what a history row
    keeps, and with the client and the confirmation what the change's record keeps (`change_log`)."""

    principal: str
    tool: str
    summary: str
    client_name: str = ""
    """As the client gave it (`clientInfo`): unverified, shown, never used to decide anything."""
    client_version: str = ""
    confirmation_id: str | None = None
    """The confirmation a confirmed tool consumed with this change."""


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """A content the note had until `principal` replaced it at `saved_at` (`tool`: `summary`)."""

    version_id: str
    note_id: str
    saved_at: float
    principal: str
    tool: str
    summary: str
    size: int
    version: str
    """`model.content_version` of the saved bytes: what `notes_read` showed while it was current."""


@dataclass(frozen=True, slots=True)
class Retention:
    """`[history]`: how many versions each note keeps, and for how long."""

    max_versions: int = 50
    max_age_days: float = 90.0


def new_version_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"


def _entry(row: Sequence[Any]) -> HistoryEntry:
    version_id, note_id, saved_at, principal, tool, summary, size, version = row
    return HistoryEntry(
        str(version_id),
        str(note_id),
        float(saved_at),
        str(principal),
        str(tool),
        str(summary),
        int(size),
        str(version),
    )


class HistoryLog:
    """The `note_history` rows of one store, written through the ledger's open transaction."""

    def __init__(self, retention: Retention) -> None:
        self.retention = retention

    def record(
        self,
        txn: SqlSession,
        workspace: str,
        note_id: str,
        *,
        version: str,
        size: int,
        change: Change,
        body: str | None,
        version_id: str | None = None,
    ) -> HistoryEntry:
        """Save a replaced content's row (`body` None: its bytes are kept by the store, already saved
        under `version_id` when given)."""
        entry = HistoryEntry(
            version_id or new_version_id(),
            note_id,
            time.time(),
            change.principal,
            change.tool,
            change.summary,
            size,
            version,
        )
        txn.execute(
            f"INSERT INTO note_history (workspace, trash_id, body, {_COLUMNS}) "
            "VALUES (?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                workspace,
                body,
                entry.version_id,
                note_id,
                entry.saved_at,
                entry.principal,
                entry.tool,
                entry.summary,
                entry.size,
                entry.version,
            ),
        )
        return entry

    def entries(self, db: SqlSession, workspace: str, note_id: str) -> list[HistoryEntry]:
        """The note's history, newest first."""
        rows = db.execute(
            f"SELECT {_COLUMNS} FROM note_history WHERE workspace = ? AND note_id = ? AND trash_id IS NULL "
            "ORDER BY saved_at DESC, version_id DESC",
            (workspace, note_id),
        )
        return [_entry(r) for r in rows]

    def entry(
        self, db: SqlSession, workspace: str, note_id: str, version_id: str
    ) -> tuple[HistoryEntry, str | None] | None:
        """One entry of the note's history and its `body` (None when the store keeps the bytes)."""
        rows = db.execute(
            f"SELECT {_COLUMNS}, body FROM note_history "
            "WHERE version_id = ? AND workspace = ? AND note_id = ? AND trash_id IS NULL",
            (version_id, workspace, note_id),
        )
        return (_entry(rows[0][:-1]), rows[0][-1]) if rows else None

    def prune(self, txn: SqlSession, workspace: str, note_id: str) -> list[str]:
        """Rule 3: delete what retention no longer keeps; the version ids deleted."""
        kept = self.entries(txn, workspace, note_id)
        doomed = [e.version_id for e in kept[self.retention.max_versions :]]
        cutoff = time.time() - self.retention.max_age_days * 86400
        doomed += [
            str(row[0])
            for row in txn.execute(
                "SELECT version_id FROM note_history WHERE workspace = ? AND saved_at < ? AND trash_id IS NULL",
                (workspace, cutoff),
            )
        ]
        doomed = sorted(set(doomed))
        self.delete(txn, workspace, doomed)
        return doomed

    def select(
        self, db: SqlSession, workspace: str, inside: Callable[[str], bool], *, saved_before: float
    ) -> list[HistoryEntry]:
        """The entries of live notes `inside` the caller's scope saved before the bound, oldest first."""
        rows = db.execute(
            f"SELECT {_COLUMNS} FROM note_history WHERE workspace = ? AND trash_id IS NULL AND saved_at <= ? "
            "ORDER BY saved_at, version_id",
            (workspace, saved_before),
        )
        return [e for e in map(_entry, rows) if inside(e.note_id)]

    def delete(self, txn: SqlSession, workspace: str, version_ids: Sequence[str]) -> None:
        for version_id in version_ids:
            txn.execute(
                "DELETE FROM note_history WHERE version_id = ? AND workspace = ?", (version_id, workspace)
            )

    def follow_move(self, txn: SqlSession, workspace: str, note_id: str, new_id: str) -> None:
        txn.execute(
            "UPDATE note_history SET note_id = ? WHERE workspace = ? AND note_id = ? AND trash_id IS NULL",
            (new_id, workspace, note_id),
        )

    def to_trash(self, txn: SqlSession, workspace: str, note_id: str, trash_id: str) -> None:
        txn.execute(
            "UPDATE note_history SET trash_id = ? WHERE workspace = ? AND note_id = ? AND trash_id IS NULL",
            (trash_id, workspace, note_id),
        )

    def from_trash(self, txn: SqlSession, workspace: str, trash_id: str, note_id: str) -> None:
        txn.execute(
            "UPDATE note_history SET trash_id = NULL, note_id = ? WHERE workspace = ? AND trash_id = ?",
            (note_id, workspace, trash_id),
        )

    def drop_trashed(self, txn: SqlSession, workspace: str, trash_id: str) -> list[str]:
        """Delete a purged trash entry's history; the version ids deleted."""
        rows = txn.execute(
            "DELETE FROM note_history WHERE workspace = ? AND trash_id = ? RETURNING version_id",
            (workspace, trash_id),
        )
        return [str(r[0]) for r in rows]
