"""The SQL note store: notes are rows in the ledger's database (SQLite or PostgreSQL).

Because the notes share the ledger's database, a delete is one transaction:

    BEGIN (SQLite: IMMEDIATE)
      claim the confirmation id                                   (ledger)
      DELETE FROM notes WHERE workspace, path, row id, version match ... RETURNING the row
      INSERT the row into notes_trash
    COMMIT

A crash anywhere before COMMIT leaves the note in `notes` and the confirmation unused; after
it, both changes. There is nothing to recover.

The note model is the files store's: a note belongs to a workspace URI, its id is a relative
path under `fsroot.split_relative`'s rules (checked on write; rows written by others with an
id those rules refuse are not listed), and its title is found in its body by the same rule
(front matter, first heading, file stem). A row's identity fills `FileIdentity`'s four
integers:

    dev       the row's version: a trigger bumps it on every UPDATE, whoever the writer is
    ino       the row id, never reused: a note deleted and created again is another note
    mtime_ns  when the row last changed (shown to the user; milliseconds on SQLite)
    size      the body's length in bytes

so a note edited or replaced since round 1 fails the DELETE's match and nothing is deleted.
"""

from __future__ import annotations

import logging
import secrets
import time

from notewarden.confirm.state import Candidate
from notewarden.ledger import Ledger, LedgerTxn
from notewarden.ledger.schema import SchemaComponent
from notewarden.notes.model import TITLE_SCAN_BYTES, Note, extract_title
from notewarden.notes.store import TrashedNote
from notewarden.scope.fsroot import (
    FileIdentity,
    IdentityMismatch,
    NoteExists,
    NoteMissing,
    PathRejected,
    WorkspaceRoot,
    split_relative,
)
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import FileUri

__all__ = ["SQL_STORE_SCHEMA", "SqlNoteStore"]

logger = logging.getLogger(__name__)

SQL_STORE_SCHEMA = SchemaComponent(
    "sql_store",
    tables=("notes", "notes_trash"),
    sqlite=(
        """
        CREATE TABLE notes (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            workspace   TEXT NOT NULL,
            path        TEXT NOT NULL,
            body        TEXT NOT NULL,
            version     INTEGER NOT NULL DEFAULT 1,
            modified_ns INTEGER NOT NULL,
            UNIQUE (workspace, path)
        );
        CREATE TRIGGER notes_new_version AFTER UPDATE OF workspace, path, body ON notes
        BEGIN
            UPDATE notes SET version = OLD.version + 1,
                modified_ns = CAST((julianday('now') - 2440587.5) * 86400000000000 AS INTEGER)
            WHERE id = NEW.id;
        END;
        CREATE TABLE notes_trash (
            trash_id        TEXT PRIMARY KEY,
            workspace       TEXT NOT NULL,
            path            TEXT NOT NULL,
            title           TEXT NOT NULL,
            body            TEXT NOT NULL,
            note_row        INTEGER NOT NULL,
            version         INTEGER NOT NULL,
            modified_ns     INTEGER NOT NULL,
            principal       TEXT NOT NULL,
            confirmation_id TEXT NOT NULL,
            deleted_at      REAL NOT NULL
        );
        CREATE INDEX notes_trash_by_workspace ON notes_trash (workspace, deleted_at);
        """,
    ),
    postgres=(
        """
        CREATE TABLE notes (
            id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            workspace   text NOT NULL,
            path        text NOT NULL,
            body        text NOT NULL,
            version     bigint NOT NULL DEFAULT 1,
            modified_ns bigint NOT NULL,
            CONSTRAINT notes_workspace_path_key UNIQUE (workspace, path)
        );
        CREATE FUNCTION notes_new_version() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.version := OLD.version + 1;
            NEW.modified_ns := (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint;
            RETURN NEW;
        END $$;
        CREATE TRIGGER notes_new_version BEFORE UPDATE OF workspace, path, body ON notes
            FOR EACH ROW EXECUTE FUNCTION notes_new_version();
        CREATE TABLE notes_trash (
            trash_id        text PRIMARY KEY,
            workspace       text NOT NULL,
            path            text NOT NULL,
            title           text NOT NULL,
            body            text NOT NULL,
            note_row        bigint NOT NULL,
            version         bigint NOT NULL,
            modified_ns     bigint NOT NULL,
            principal       text NOT NULL,
            confirmation_id text NOT NULL,
            deleted_at      double precision NOT NULL
        );
        CREATE INDEX notes_trash_by_workspace ON notes_trash (workspace, deleted_at);
        """,
    ),
)

_BYTE_LENGTH = {"sqlite": "length(CAST(body AS BLOB))", "postgres": "octet_length(body)"}


def _new_trash_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"


def _identity(row_id: int, version: int, modified_ns: int, size: int) -> FileIdentity:
    return FileIdentity(dev=version, ino=row_id, mtime_ns=modified_ns, size=size)


def _check_note_id(note_id: str) -> str:
    split_relative(note_id)
    return note_id


class SqlNoteStore:
    """Notes as rows next to the ledger's tables, so a delete commits with its claim."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def list_notes(self, scope: WorkspaceScope) -> list[Note]:
        with self._ledger.snapshot() as db:
            rows = db.execute(
                f"SELECT path, substr(body, 1, ?), id, version, modified_ns, {_BYTE_LENGTH[db.dialect]} "
                "FROM notes WHERE workspace = ?",
                (TITLE_SCAN_BYTES, str(scope.workspace)),
            )
        notes = []
        for path, head, row_id, version, modified_ns, size in rows:
            try:
                _check_note_id(path)
            except PathRejected as exc:
                logger.info("skipping a note row with an unusable id", extra={"reason": str(exc)})
                continue
            if scope.contains(path):
                identity = _identity(row_id, version, modified_ns, size)
                notes.append(Note(id=path, title=extract_title(head.encode(), path), identity=identity))
        return sorted(notes, key=lambda n: n.id)

    def create_note(self, workspace: FileUri, note_id: str, body: str) -> Note:
        """Add a note (for importers and tests; tools that write notes go through here too)."""
        _check_note_id(note_id)
        with self._ledger.critical_section() as txn:
            created = txn.execute(
                "INSERT INTO notes (workspace, path, body, modified_ns) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (workspace, path) DO NOTHING RETURNING id, version, modified_ns",
                (str(workspace), note_id, body, time.time_ns()),
            )
        if not created:
            raise NoteExists(f"a note {note_id!r} already exists in {workspace}")
        ((row_id, version, modified_ns),) = created
        size = len(body.encode())
        return Note(
            id=note_id,
            title=extract_title(body.encode()[:TITLE_SCAN_BYTES], note_id),
            identity=_identity(row_id, version, modified_ns, size),
        )

    def move_to_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        candidate: Candidate,
        *,
        principal: str,
        confirmation_id: str,
    ) -> TrashedNote:
        note_id = _check_note_id(candidate.id)
        if not scope.contains(note_id):
            raise PathRejected(f"note {note_id!r} is outside {scope.uri}")
        workspace = str(scope.workspace)
        moved = txn.execute(
            "DELETE FROM notes WHERE workspace = ? AND path = ? AND id = ? AND version = ? "
            "RETURNING body, modified_ns",
            (workspace, note_id, candidate.identity.ino, candidate.identity.dev),
        )
        if not moved:
            if txn.execute("SELECT 1 FROM notes WHERE workspace = ? AND path = ?", (workspace, note_id)):
                raise IdentityMismatch(f"note {note_id!r} was edited or replaced since it was shown")
            raise NoteMissing(f"note {note_id!r} no longer exists")
        ((body, modified_ns),) = moved
        trash_id = _new_trash_id()
        deleted_at = time.time()
        txn.execute(
            "INSERT INTO notes_trash (trash_id, workspace, path, title, body, note_row, version, modified_ns, "
            "principal, confirmation_id, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                trash_id,
                workspace,
                note_id,
                candidate.title,
                body,
                candidate.identity.ino,
                candidate.identity.dev,
                modified_ns,
                principal,
                confirmation_id,
                deleted_at,
            ),
        )
        return TrashedNote(trash_id=trash_id, note_id=note_id, title=candidate.title, deleted_at=deleted_at)

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot | None) -> int:
        """Nothing to recover: the move and the claim commit or roll back together."""
        return 0
