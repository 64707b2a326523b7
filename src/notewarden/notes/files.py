"""The files store: notes are markdown files in the workspace folder (the embedded default).

The filesystem cannot join a database transaction, so the ledger's write transaction is
the critical section and the file step is reversible until COMMIT:

    BEGIN IMMEDIATE
      claim the confirmation id                       (ledger)
      write trash/<id>.json  naming the original path (undo: remove it)
      rename the note to trash/<id>, no-replace, identity-checked   (undo: rename back)
      INSERT the trash row
    COMMIT

Every process writes the trash only while holding the ledger's write lock. So while
`recover` holds that lock, a trash entry without a committed row can only be a leftover
of a process that died between its rename and its COMMIT; recovery moves it back. The
outcome after any crash is "in the trash and consumed" or "untouched and still usable".
Nothing is unlinked here: everything deleted stays in the trash until it is emptied.
"""

from __future__ import annotations

import json
import logging
import secrets
import sqlite3
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from notewarden.confirm.state import Candidate
from notewarden.ledger import LedgerTxn
from notewarden.notes.index import IndexedNote, NoteIndex
from notewarden.notes.model import TITLE_SCAN_BYTES, Note, extract_title
from notewarden.notes.store import NoteContent, ProgressSink, SearchHit, TrashedNote, VersionConflict
from notewarden.scope.fsroot import (
    FsError,
    IdentityMismatch,
    NoteExists,
    NoteMissing,
    PathRejected,
    WorkspaceRoot,
)
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import FileUri

__all__ = ["FILES_STORE_MIGRATIONS", "FilesNoteStore"]

logger = logging.getLogger(__name__)

FILES_STORE_MIGRATIONS: Sequence[str] = (
    """
    CREATE TABLE trash (
        trash_id        TEXT PRIMARY KEY,
        workspace       TEXT NOT NULL,
        note_id         TEXT NOT NULL,
        title           TEXT NOT NULL,
        principal       TEXT NOT NULL,
        confirmation_id TEXT,
        deleted_at      REAL NOT NULL,
        dev INTEGER NOT NULL, ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL
    );
    CREATE INDEX trash_by_workspace ON trash (workspace, deleted_at);
    """,
)

_SIDECAR = ".json"


def _new_trash_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"


def _note(row: IndexedNote) -> Note:
    return Note(id=row.id, title=row.title, identity=row.identity)


def _inside(scope: WorkspaceScope, note_id: str) -> str:
    if not isinstance(note_id, str) or not scope.contains(note_id):
        raise PathRejected(f"{note_id!r} is outside {scope.uri}; name a note inside it")
    return note_id


class FilesNoteStore:
    def __init__(self, index_path: Path | None = None, *, watch: bool = True) -> None:
        """`index_path`: the index database (in the state directory); None keeps it in memory."""
        self.index = NoteIndex(index_path or ":memory:", watch=watch)

    def close(self) -> None:
        self.index.close()

    @staticmethod
    def _key(scope: WorkspaceScope) -> tuple[str, WorkspaceRoot, str]:
        return str(scope.workspace), scope.root, "/".join(scope.subtree)

    def list_notes(self, scope: WorkspaceScope) -> list[Note]:
        return [_note(r) for r in self.index.page(*self._key(scope), after=None, limit=None)]

    def list_page(
        self,
        scope: WorkspaceScope,
        *,
        after: str | None,
        limit: int,
        progress: ProgressSink | None = None,
    ) -> list[Note]:
        rows = self.index.page(*self._key(scope), after=after, limit=limit, progress=progress)
        return [_note(r) for r in rows]

    def find_titled(
        self, scope: WorkspaceScope, words: Sequence[str], *, progress: ProgressSink | None = None
    ) -> list[Note]:
        return [_note(r) for r in self.index.titled(*self._key(scope), words, progress=progress)]

    def search(
        self,
        scope: WorkspaceScope,
        terms: Sequence[str],
        *,
        after: tuple[float, str] | None,
        limit: int,
        progress: ProgressSink | None = None,
    ) -> list[SearchHit]:
        rows = self.index.search(*self._key(scope), terms, after=after, limit=limit, progress=progress)
        return [SearchHit(_note(r), r.snippet, (r.score, r.id)) for r in rows]

    def notes_by_id(self, scope: WorkspaceScope, note_ids: Sequence[str]) -> list[Note]:
        notes = []
        for note_id in note_ids:
            head, identity = scope.root.read_head(_inside(scope, note_id), TITLE_SCAN_BYTES)
            notes.append(Note(id=note_id, title=extract_title(head, note_id), identity=identity))
        return notes

    def read_note(self, scope: WorkspaceScope, note_id: str) -> NoteContent:
        data, identity = scope.root.read_note(_inside(scope, note_id))
        return NoteContent(Note(note_id, extract_title(data, note_id), identity), data)

    def create_note(self, scope: WorkspaceScope, note_id: str, data: bytes) -> NoteContent:
        identity = scope.root.create_note(_inside(scope, note_id), data, make_parents=True)
        self.index.note_changed(str(scope.workspace), scope.root, note_id)
        return NoteContent(Note(note_id, extract_title(data, note_id), identity), data)

    def update_note(
        self, scope: WorkspaceScope, note_id: str, data: bytes, *, expected_version: str
    ) -> NoteContent:
        with self.index.exclusive():  # one updater at a time across this host's server processes
            current = self.read_note(scope, note_id)
            if current.data == data:
                return current  # already there: a retried update, or the same edit made elsewhere
            if current.version != expected_version:
                raise VersionConflict(note_id, current.version)
            try:
                identity = scope.root.replace_note(note_id, data, expected=current.note.identity)
            except IdentityMismatch:  # an editor or sync tool wrote in between
                raise VersionConflict(note_id, self.read_note(scope, note_id).version) from None
            self.index.note_changed(str(scope.workspace), scope.root, note_id)
        return NoteContent(Note(note_id, extract_title(data, note_id), identity), data)

    def move_note(self, scope: WorkspaceScope, note_id: str, new_id: str) -> Note:
        root = scope.root
        entry = root.stat_note(_inside(scope, note_id))
        identity = root.move_note(note_id, _inside(scope, new_id), expected=entry.identity)
        self.index.note_changed(str(scope.workspace), root, note_id, new_id)
        head, _ = root.read_head(new_id, TITLE_SCAN_BYTES)
        return Note(new_id, extract_title(head, new_id), identity)

    def list_trash(self, txn: LedgerTxn, scope: WorkspaceScope) -> list[TrashedNote]:
        conn: sqlite3.Connection = txn.connection
        entries = []
        for trash_id, note_id, title, deleted_at in conn.execute(
            "SELECT trash_id, note_id, title, deleted_at FROM trash WHERE workspace = ? "
            "ORDER BY deleted_at DESC, trash_id",
            (str(scope.workspace),),
        ):
            if not scope.contains(note_id):
                continue
            identity = scope.root.trash_entry(trash_id)
            if identity is None:
                continue  # purged but not yet committed, or removed by hand: recovery drops the row
            entries.append(TrashedNote(trash_id, note_id, title, deleted_at, identity.size, identity))
        return entries

    def restore(
        self, txn: LedgerTxn, scope: WorkspaceScope, trash_id: str, *, new_id: str | None = None
    ) -> Note:
        root = scope.root
        row = txn.connection.execute(
            "SELECT note_id FROM trash WHERE trash_id = ? AND workspace = ?", (trash_id, str(scope.workspace))
        ).fetchone()
        if row is None or not scope.contains(row[0]) or root.trash_entry(trash_id) is None:
            raise NoteMissing(
                f"trash entry {trash_id!r} is not in the trash of {scope.uri}; notes_trash_list shows what is"
            )
        target = _inside(scope, new_id or row[0])
        identity = root.restore(trash_id, target)
        txn.on_rollback(lambda: root.quarantine(target, trash_id, identity))
        txn.connection.execute("DELETE FROM trash WHERE trash_id = ?", (trash_id,))
        with suppress(NoteMissing):
            root.purge_trash_entry(trash_id + _SIDECAR)
        self.index.note_changed(str(scope.workspace), root, target)
        head, _ = root.read_head(target, TITLE_SCAN_BYTES)
        return Note(target, extract_title(head, target), identity)

    def purge_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        entries: Sequence[TrashedNote],
        *,
        progress: ProgressSink | None = None,
    ) -> int:
        root = scope.root
        for entry in entries:
            if root.trash_entry(entry.trash_id) != entry.identity:
                raise IdentityMismatch(f"trash entry {entry.trash_id!r} is not the file that was listed")
        for done, entry in enumerate(entries, 1):
            txn.connection.execute(
                "DELETE FROM trash WHERE trash_id = ? AND workspace = ?",
                (entry.trash_id, str(scope.workspace)),
            )
            for name in (entry.trash_id, entry.trash_id + _SIDECAR):
                with suppress(NoteMissing):
                    root.purge_trash_entry(name)
            if progress is not None and (done % 100 == 0 or done == len(entries)):
                progress(done, len(entries), f"permanently deleted {done} of {len(entries)} notes")
        return len(entries)

    def move_to_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        candidate: Candidate,
        *,
        principal: str,
        confirmation_id: str,
    ) -> TrashedNote:
        root = scope.root
        trash_id = _new_trash_id()
        deleted_at = time.time()
        sidecar = json.dumps(
            {"workspace": str(scope.workspace), "note_id": candidate.id, "deleted_at": deleted_at}
        )
        root.write_trash_file(trash_id + _SIDECAR, sidecar.encode())
        txn.on_rollback(lambda: root.purge_trash_entry(trash_id + _SIDECAR))
        identity = root.quarantine(candidate.id, trash_id, candidate.identity)
        txn.on_rollback(lambda: root.restore(trash_id, candidate.id))
        self.index.note_changed(str(scope.workspace), root, candidate.id)
        txn.connection.execute(
            "INSERT INTO trash (trash_id, workspace, note_id, title, principal, confirmation_id, deleted_at, "
            "dev, ino, size, mtime_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                trash_id,
                str(scope.workspace),
                candidate.id,
                candidate.title,
                principal,
                confirmation_id,
                deleted_at,
                identity.dev,
                identity.ino,
                identity.size,
                identity.mtime_ns,
            ),
        )
        return TrashedNote(
            trash_id=trash_id,
            note_id=candidate.id,
            title=candidate.title,
            deleted_at=deleted_at,
            size=identity.size,
            identity=identity,
        )

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot) -> int:
        conn: sqlite3.Connection = txn.connection
        committed = {
            row[0]
            for row in conn.execute("SELECT trash_id FROM trash WHERE workspace = ?", (str(workspace),))
        }
        recovered = 0
        for trash_id in sorted(committed):
            if root.trash_entry(trash_id) is None:
                conn.execute("DELETE FROM trash WHERE trash_id = ?", (trash_id,))
                with suppress(NoteMissing):
                    root.purge_trash_entry(trash_id + _SIDECAR)
                recovered += 1
                logger.warning("finished an interrupted restore or purge", extra={"trash_id": trash_id})
        for name in root.list_trash():
            if not name.endswith(_SIDECAR):
                continue
            trash_id = name[: -len(_SIDECAR)]
            if trash_id in committed:
                continue
            try:
                note_id = json.loads(root.read_trash_file(name, 64 * 1024))["note_id"]
            except (ValueError, KeyError, TypeError, FsError):
                logger.error("unreadable trash sidecar left in place", extra={"entry": name})
                continue
            if root.trash_entry(trash_id) is not None:
                try:
                    root.restore(trash_id, note_id)
                except NoteExists:
                    logger.error(
                        "uncommitted trash entry kept in trash: its original path is taken again",
                        extra={"trash_id": trash_id, "note": note_id},
                    )
                    continue
            root.purge_trash_entry(name)
            recovered += 1
            logger.warning("recovered an uncommitted delete", extra={"trash_id": trash_id, "note": note_id})
        return recovered
