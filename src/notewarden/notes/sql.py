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
import re
import secrets
import time
from collections.abc import Sequence
from typing import Any

from notewarden.confirm.state import Candidate
from notewarden.ledger import Ledger, LedgerTxn, SqlSession
from notewarden.ledger.schema import SchemaComponent
from notewarden.notes.model import TITLE_SCAN_BYTES, Note, extract_title, title_matches
from notewarden.notes.store import (
    NoteChange,
    NoteContent,
    NoteFilter,
    NoteLinks,
    NotSupportedOnStore,
    ProgressSink,
    SearchHit,
    SearchMatch,
    TagCount,
    TrashedNote,
    VersionConflict,
)
from notewarden.scope.fsroot import (
    FileIdentity,
    FsError,
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
_SNIPPET_CHARS = 60


def _new_trash_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"


def _identity(row_id: int, version: int, modified_ns: int, size: int) -> FileIdentity:
    return FileIdentity(dev=version, ino=row_id, mtime_ns=modified_ns, size=size)


def _inside(scope: WorkspaceScope, note_id: str) -> str:
    """A valid note id inside the scope, or `PathRejected` saying why not."""
    split_relative(note_id)
    if not scope.contains(note_id):
        raise PathRejected(f"{note_id!r} is outside {scope.uri}; name a note inside it")
    return note_id


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FsError("a note kept in the database must be UTF-8 text") from None


def _note(path: str, head: str, row_id: int, version: int, modified_ns: int, size: int) -> Note:
    return Note(
        id=path,
        title=extract_title(head.encode(), path),
        identity=_identity(row_id, version, modified_ns, size),
    )


def _word_starts(text: str, term: str) -> list[int]:
    """Where `term` starts a word of `text` (the files index's prefix rule: `rep` finds "report")."""
    return [m.start() for m in re.finditer(r"(?<!\w)" + re.escape(term), text)]


class SqlNoteStore:
    """Notes as rows next to the ledger's tables, so a delete commits with its claim.

    Listing, title search and full-text search read a workspace's rows and filter them here,
    with the same rules as the files store's index; fine for thousands of notes per workspace.
    """

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def close(self) -> None:
        """Nothing of its own: the ledger owns the connections."""

    # --- reading -----------------------------------------------------------------------------

    def _rows(
        self, db: SqlSession, scope: WorkspaceScope, *, body_chars: int | None
    ) -> list[tuple[Any, ...]]:
        body = "body" if body_chars is None else f"substr(body, 1, {int(body_chars)})"
        rows = db.execute(
            f"SELECT path, {body}, id, version, modified_ns, {_BYTE_LENGTH[db.dialect]} FROM notes WHERE workspace = ?",
            (str(scope.workspace),),
        )
        kept = []
        for row in rows:
            try:
                split_relative(row[0])
            except PathRejected as exc:
                logger.info("skipping a note row with an unusable id", extra={"reason": str(exc)})
                continue
            if scope.contains(row[0]):
                kept.append(row)
        return sorted(kept, key=lambda r: str(r[0]))

    def list_notes(self, scope: WorkspaceScope) -> list[Note]:
        with self._ledger.snapshot() as db:
            return [_note(*row) for row in self._rows(db, scope, body_chars=TITLE_SCAN_BYTES)]

    def list_page(
        self, scope: WorkspaceScope, *, after: str | None, limit: int, progress: ProgressSink | None = None
    ) -> list[Note]:
        notes = self.list_notes(scope)
        return [n for n in notes if after is None or n.id > after][:limit]

    def find_titled(
        self, scope: WorkspaceScope, words: Sequence[str], *, progress: ProgressSink | None = None
    ) -> list[Note]:
        return [n for n in self.list_notes(scope) if title_matches(n.title, words)]

    def search(
        self,
        scope: WorkspaceScope,
        terms: Sequence[str],
        *,
        after: tuple[float, str] | None,
        limit: int,
        progress: ProgressSink | None = None,
        match: SearchMatch = "all",
        filters: NoteFilter | None = None,
    ) -> list[SearchHit]:
        """Every term must start a word of the title, path or body; rank: fewer weighted matches
        is worse (title x10, path x2, body x1), negated so that lower is better; ties by id."""
        if match != "all" or filters is not None or not terms:
            raise NotSupportedOnStore("searching with filters or by some of the words")
        with self._ledger.snapshot() as db:
            rows = self._rows(db, scope, body_chars=None)
        hits = []
        for path, body, *identity in rows:
            note = _note(path, body[:TITLE_SCAN_BYTES], *identity)
            fields = [(note.title.casefold(), 10.0), (path.casefold(), 2.0), (body.casefold(), 1.0)]
            score = 0.0
            for term in terms:
                found = sum(weight * len(_word_starts(text, term)) for text, weight in fields)
                if not found:
                    break
                score -= found
            else:
                if after is not None and (score, path) <= after:
                    continue
                hits.append(SearchHit(note, _snippet(body, terms), (score, path)))
        hits.sort(key=lambda h: h.position)
        return hits[:limit]

    def notes_by_id(self, scope: WorkspaceScope, note_ids: Sequence[str]) -> list[Note]:
        return [self.read_note(scope, note_id).note for note_id in note_ids]

    # Issue 14's knowledge tools: a temporary seam until this store indexes tags and links.

    def tags(self, scope: WorkspaceScope, *, prefix: str, after: str | None, limit: int) -> list[TagCount]:
        raise NotSupportedOnStore("notes_tags")

    def links(self, scope: WorkspaceScope, note_id: str, *, limit: int) -> NoteLinks:
        raise NotSupportedOnStore("notes_links")

    def recent(self, scope: WorkspaceScope, *, since_ns: int | None, limit: int) -> list[NoteChange]:
        raise NotSupportedOnStore("notes_recent")

    def similar_titles(self, scope: WorkspaceScope, title: str) -> list[Note]:
        raise NotSupportedOnStore("finding notes with a similar title")

    def complete_ids(self, scope: WorkspaceScope, prefix: str, *, limit: int) -> tuple[list[str], bool]:
        raise NotSupportedOnStore("completing note ids")

    def read_note(self, scope: WorkspaceScope, note_id: str) -> NoteContent:
        with self._ledger.snapshot() as db:
            return self._read(db, scope, note_id)

    def _read(self, db: SqlSession, scope: WorkspaceScope, note_id: str) -> NoteContent:
        rows = db.execute(
            f"SELECT body, id, version, modified_ns, {_BYTE_LENGTH[db.dialect]} FROM notes "
            "WHERE workspace = ? AND path = ?",
            (str(scope.workspace), _inside(scope, note_id)),
        )
        if not rows:
            raise NoteMissing(f"note {note_id!r} does not exist in {scope.uri}")
        body, *identity = rows[0]
        return NoteContent(_note(note_id, body[:TITLE_SCAN_BYTES], *identity), body.encode())

    # --- writing -----------------------------------------------------------------------------

    def create_note(self, scope: WorkspaceScope, note_id: str, data: bytes) -> NoteContent:
        body = _text(data)
        with self._ledger.critical_section() as txn:
            created = txn.execute(
                "INSERT INTO notes (workspace, path, body, modified_ns) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (workspace, path) DO NOTHING RETURNING id, version, modified_ns",
                (str(scope.workspace), _inside(scope, note_id), body, time.time_ns()),
            )
        if not created:
            raise NoteExists(f"a note {note_id!r} already exists in {scope.uri}")
        ((row_id, version, modified_ns),) = created
        return NoteContent(
            _note(note_id, body[:TITLE_SCAN_BYTES], row_id, version, modified_ns, len(data)), data
        )

    def update_note(
        self, scope: WorkspaceScope, note_id: str, data: bytes, *, expected_version: str
    ) -> NoteContent:
        body = _text(data)
        with self._ledger.critical_section() as txn:
            current = self._read(txn, scope, note_id)
            if current.data == data:
                return current  # already there: a retried update, or the same edit made elsewhere
            if current.version != expected_version:
                raise VersionConflict(note_id, current.version)
            txn.execute(
                "UPDATE notes SET body = ? WHERE workspace = ? AND path = ? AND version = ?",
                (body, str(scope.workspace), note_id, current.note.identity.dev),
            )
            return self._read(txn, scope, note_id)

    def move_note(self, scope: WorkspaceScope, note_id: str, new_id: str) -> Note:
        with self._ledger.critical_section() as txn:
            self._read(txn, scope, note_id)
            if txn.execute(
                "SELECT 1 FROM notes WHERE workspace = ? AND path = ?",
                (str(scope.workspace), _inside(scope, new_id)),
            ):
                raise NoteExists(f"a note {new_id!r} already exists in {scope.uri}; nothing was moved")
            txn.execute(
                "UPDATE notes SET path = ? WHERE workspace = ? AND path = ?",
                (new_id, str(scope.workspace), note_id),
            )
            return self._read(txn, scope, new_id).note

    # --- the trash: every change inside the ledger's transaction --------------------------------

    def move_to_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        candidate: Candidate,
        *,
        principal: str,
        confirmation_id: str,
    ) -> TrashedNote:
        note_id = _inside(scope, candidate.id)
        workspace = str(scope.workspace)
        moved = txn.execute(
            f"DELETE FROM notes WHERE workspace = ? AND path = ? AND id = ? AND version = ? "
            f"RETURNING body, modified_ns, {_BYTE_LENGTH[txn.dialect]}",
            (workspace, note_id, candidate.identity.ino, candidate.identity.dev),
        )
        if not moved:
            if txn.execute("SELECT 1 FROM notes WHERE workspace = ? AND path = ?", (workspace, note_id)):
                raise IdentityMismatch(f"note {note_id!r} was edited or replaced since it was shown")
            raise NoteMissing(f"note {note_id!r} no longer exists")
        ((body, modified_ns, size),) = moved
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
        identity = _identity(candidate.identity.ino, candidate.identity.dev, modified_ns, size)
        return TrashedNote(trash_id, note_id, candidate.title, deleted_at, size, identity)

    def list_trash(self, txn: LedgerTxn, scope: WorkspaceScope) -> list[TrashedNote]:
        rows = txn.execute(
            "SELECT trash_id, path, title, deleted_at, note_row, version, modified_ns, "
            f"{_BYTE_LENGTH[txn.dialect]} FROM notes_trash WHERE workspace = ? ORDER BY deleted_at DESC, trash_id",
            (str(scope.workspace),),
        )
        return [
            TrashedNote(
                trash_id, path, title, deleted_at, size, _identity(row_id, version, modified_ns, size)
            )
            for trash_id, path, title, deleted_at, row_id, version, modified_ns, size in rows
            if scope.contains(path)
        ]

    def restore(
        self, txn: LedgerTxn, scope: WorkspaceScope, trash_id: str, *, new_id: str | None = None
    ) -> Note:
        rows = txn.execute(
            "SELECT path, body FROM notes_trash WHERE trash_id = ? AND workspace = ?",
            (trash_id, str(scope.workspace)),
        )
        if not rows or not scope.contains(rows[0][0]):
            raise NoteMissing(
                f"trash entry {trash_id!r} is not in the trash of {scope.uri}; notes_trash_list shows what is"
            )
        path, body = rows[0]
        target = _inside(scope, new_id or path)
        restored = txn.execute(
            "INSERT INTO notes (workspace, path, body, modified_ns) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (workspace, path) DO NOTHING RETURNING id",
            (str(scope.workspace), target, body, time.time_ns()),
        )
        if not restored:
            raise NoteExists(f"a note {target!r} already exists in {scope.uri}; restore it under another id")
        txn.execute("DELETE FROM notes_trash WHERE trash_id = ?", (trash_id,))
        return self._read(txn, scope, target).note

    def purge_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        entries: Sequence[TrashedNote],
        *,
        progress: ProgressSink | None = None,
    ) -> int:
        present = {t.trash_id: t.identity for t in self.list_trash(txn, scope)}
        for entry in entries:
            if present.get(entry.trash_id) != entry.identity:
                raise IdentityMismatch(f"trash entry {entry.trash_id!r} is not the note that was listed")
        for done, entry in enumerate(entries, 1):
            txn.execute(
                "DELETE FROM notes_trash WHERE trash_id = ? AND workspace = ?",
                (entry.trash_id, str(scope.workspace)),
            )
            if progress is not None and (done % 100 == 0 or done == len(entries)):
                progress(done, len(entries), f"permanently deleted {done} of {len(entries)} notes")
        return len(entries)

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot | None) -> int:
        """Nothing to recover: every trash change commits or rolls back with its transaction."""
        return 0


def _snippet(body: str, terms: Sequence[str]) -> str:
    """Text around the first match, matching words in **bold** (as the files index shows them)."""
    folded = body.casefold()
    starts = [p for term in terms for p in _word_starts(folded, term)[:1]]
    at = min(starts) if starts else 0
    lo, hi = max(0, at - _SNIPPET_CHARS), min(len(body), at + _SNIPPET_CHARS)
    text = " ".join(body[lo:hi].split())
    for term in terms:
        text = re.sub(r"(?<![\w*])(" + re.escape(term) + r"\w*)", r"**\1**", text, flags=re.IGNORECASE)
    return ("…" if lo else "") + text + ("…" if hi < len(body) else "")
