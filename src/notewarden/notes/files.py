"""The files store: notes are markdown files in the workspace folder (the embedded default).

The filesystem cannot join a database transaction, so the ledger's write transaction is
the critical section and the file step is reversible until COMMIT:

    BEGIN (SQLite: IMMEDIATE)
      claim the confirmation id                       (ledger)
      lock the workspace                              (PostgreSQL: pg_advisory_xact_lock)
      append {trash id, original path} to trash/~intents   (the intent journal)
      rename the note to trash/<id>, no-replace, identity-checked   (undo: rename back)
      INSERT the trash row
    COMMIT

Every process changes a workspace's trash (delete, restore, purge) only while holding that
workspace's lock (on SQLite the database write lock, which covers every workspace). So while
`recover` holds the lock, a trash entry without a committed row can only be a leftover of a
process that died between its rename and its COMMIT (or whose COMMIT's outcome was unknown),
and recovery moves it back to the path its journal line names. Recovery runs at start-up, again
inside a delete that finds its note missing, so a retry on any instance heals a dead instance's
half-done move; having dealt with every line, it empties the journal. Once this process has
appended `JOURNAL_RECOVERY_BYTES` to a workspace's journal, the next delete replays the journal
alone (not the whole trash) before appending. The outcome after any crash is
"in the trash and consumed" or "untouched and still usable". Nothing is unlinked here:
everything deleted stays in the trash until it is emptied.

Before the journal, each entry had a sidecar file `trash/<id>.json`; recovery still reads any
that an earlier version left, and purging an entry removes its sidecar.

The trash rows live in the ledger's database (SQLite or PostgreSQL) and are written with
the portable SQL of `LedgerTxn.execute`.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from notewarden.confirm.state import Candidate
from notewarden.ledger import Durability, LedgerTxn
from notewarden.ledger.schema import SchemaComponent
from notewarden.notes.index import IndexedNote, NoteIndex
from notewarden.notes.model import TITLE_SCAN_BYTES, Note, extract_title
from notewarden.notes.store import (
    NoteChange,
    NoteContent,
    NoteFilter,
    NoteLinks,
    ProgressSink,
    SearchHit,
    SearchMatch,
    TagCount,
    TrashedNote,
    VersionConflict,
)
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

__all__ = ["FILES_STORE_SCHEMA", "FilesNoteStore"]

logger = logging.getLogger(__name__)

FILES_STORE_SCHEMA = SchemaComponent(
    "files_store",
    tables=("trash",),
    sqlite=(
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
    ),
    postgres=(
        """
        CREATE TABLE trash (
            trash_id        text PRIMARY KEY,
            workspace       text NOT NULL,
            note_id         text NOT NULL,
            title           text NOT NULL,
            principal       text NOT NULL,
            confirmation_id text,
            deleted_at      double precision NOT NULL,
            dev bigint NOT NULL, ino bigint NOT NULL, size bigint NOT NULL, mtime_ns bigint NOT NULL
        );
        CREATE INDEX trash_by_workspace ON trash (workspace, deleted_at);
        """,
    ),
)

_SIDECAR = ".json"
JOURNAL_RECOVERY_BYTES = 256 * 1024
"""Appended by this process to one workspace's journal before it recovers and empties it."""
_JOURNAL_READ_MAX = 64 * 1024 * 1024


def _new_trash_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"


def _committed(txn: LedgerTxn, workspace: str) -> set[str]:
    return {row[0] for row in txn.execute("SELECT trash_id FROM trash WHERE workspace = ?", (workspace,))}


def _note(row: IndexedNote) -> Note:
    return Note(id=row.id, title=row.title, identity=row.identity)


def _inside(scope: WorkspaceScope, note_id: str) -> str:
    if not isinstance(note_id, str) or not scope.contains(note_id):
        raise PathRejected(f"{note_id!r} is outside {scope.uri}; name a note inside it")
    return note_id


class FilesNoteStore:
    def __init__(
        self, index_path: Path | None = None, *, watch: bool = True, durability: Durability = "normal"
    ) -> None:
        """`index_path`: the index database (in the state directory); None keeps it in memory.
        `durability`: "full" fsyncs each line of the trash journal (power loss), as
        the ledger's `synchronous=FULL` does; "normal" survives a killed process, like the ledger."""
        self.index = NoteIndex(index_path or ":memory:", watch=watch)
        self._sync_trash = durability == "full"
        self._journaled: dict[str, int] = {}

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
        match: SearchMatch = "all",
        filters: NoteFilter | None = None,
    ) -> list[SearchHit]:
        rows = self.index.search(
            *self._key(scope),
            terms,
            after=after,
            limit=limit,
            progress=progress,
            match=match,
            filters=filters,
        )
        return [SearchHit(_note(r), r.snippet, (r.score, r.id)) for r in rows]

    def tags(self, scope: WorkspaceScope, *, prefix: str, after: str | None, limit: int) -> list[TagCount]:
        return self.index.tags(*self._key(scope), prefix=prefix, after=after, limit=limit)

    def links(self, scope: WorkspaceScope, note_id: str, *, limit: int) -> NoteLinks:
        scope.root.stat_note(_inside(scope, note_id))  # the precise error for what is not a note
        found = self.index.note_links(*self._key(scope), note_id, limit=limit)
        if found is None:
            raise NoteMissing(f"{note_id} is not a note of {scope.uri}")
        return found

    def recent(self, scope: WorkspaceScope, *, since_ns: int | None, limit: int) -> list[NoteChange]:
        return self.index.recent(*self._key(scope), since_ns=since_ns or 0, limit=limit)

    def similar_titles(self, scope: WorkspaceScope, title: str) -> list[Note]:
        return [_note(r) for r in self.index.similar(*self._key(scope), title)]

    def complete_ids(self, scope: WorkspaceScope, prefix: str, *, limit: int) -> tuple[list[str], bool]:
        return self.index.complete(*self._key(scope), prefix, limit=limit)

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
        entries = []
        for trash_id, note_id, title, deleted_at in txn.execute(
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
        txn.lock_workspace(str(scope.workspace))
        rows = txn.execute(
            "SELECT note_id FROM trash WHERE trash_id = ? AND workspace = ?", (trash_id, str(scope.workspace))
        )
        row = rows[0] if rows else None
        if row is None or not scope.contains(row[0]) or root.trash_entry(trash_id) is None:
            raise NoteMissing(
                f"trash entry {trash_id!r} is not in the trash of {scope.uri}; notes_trash_list shows what is"
            )
        target = _inside(scope, new_id or row[0])
        identity = root.restore(trash_id, target)
        txn.on_rollback(lambda: root.quarantine(target, trash_id, identity))
        txn.execute("DELETE FROM trash WHERE trash_id = ?", (trash_id,))
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
        txn.lock_workspace(str(scope.workspace))
        for entry in entries:
            if root.trash_entry(entry.trash_id) != entry.identity:
                raise IdentityMismatch(f"trash entry {entry.trash_id!r} is not the file that was listed")
        for done, entry in enumerate(entries, 1):
            txn.execute(
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
        txn.lock_workspace(str(scope.workspace))
        try:
            return self._trash(txn, scope, candidate, principal=principal, confirmation_id=confirmation_id)
        except NoteMissing:
            if not self.recover(txn, scope.workspace, scope.root):  # a dead writer's half-done move?
                raise
        return self._trash(txn, scope, candidate, principal=principal, confirmation_id=confirmation_id)

    def _trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        candidate: Candidate,
        *,
        principal: str,
        confirmation_id: str,
    ) -> TrashedNote:
        root = scope.root
        workspace = str(scope.workspace)
        if self._journaled.get(workspace, 0) >= JOURNAL_RECOVERY_BYTES:  # we hold the lock
            self._replay_journal(root, workspace, _committed(txn, workspace))
        trash_id = _new_trash_id()
        deleted_at = time.time()
        intent = json.dumps({"trash_id": trash_id, "note_id": candidate.id, "workspace": workspace})
        root.append_trash_journal(intent.encode() + b"\n", sync=self._sync_trash)
        self._journaled[workspace] = self._journaled.get(workspace, 0) + len(intent) + 1
        identity = root.quarantine(candidate.id, trash_id, candidate.identity)

        def put_back() -> None:
            root.restore(trash_id, candidate.id)
            self.index.note_changed(workspace, root, candidate.id)

        txn.on_rollback(put_back)
        self.index.note_changed(workspace, root, candidate.id)
        txn.execute(
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

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot | None) -> int:
        if root is None:
            raise ValueError(f"the files store needs the directory of {workspace} to recover it")
        txn.lock_workspace(str(workspace))
        committed = _committed(txn, str(workspace))
        recovered = 0
        for trash_id in sorted(committed):
            if root.trash_entry(trash_id) is None:
                txn.execute("DELETE FROM trash WHERE trash_id = ?", (trash_id,))
                with suppress(NoteMissing):
                    root.purge_trash_entry(trash_id + _SIDECAR)
                recovered += 1
                logger.warning("finished an interrupted restore or purge", extra={"trash_id": trash_id})
        recovered += self._replay_journal(root, str(workspace), committed)
        for name in root.list_trash():  # sidecars of earlier versions
            trash_id = name.removesuffix(_SIDECAR)
            if trash_id == name or trash_id in committed:
                continue
            try:
                note_id = json.loads(root.read_trash_file(name, 64 * 1024))["note_id"]
                if not isinstance(note_id, str):
                    raise TypeError("note_id must be a string")
            except (ValueError, KeyError, TypeError, FsError):
                logger.error("unreadable trash sidecar left in place", extra={"entry": name})
                continue
            put_back = self._put_back(root, trash_id, note_id)
            if put_back is not None:
                recovered += put_back
                root.purge_trash_entry(name)
        return recovered

    def _replay_journal(self, root: WorkspaceRoot, workspace: str, committed: set[str]) -> int:
        """Move back what the journal names and `committed` does not, then empty the journal but
        for the lines that could not be acted on. The caller holds the workspace's lock."""
        journal = root.read_trash_journal(_JOURNAL_READ_MAX)
        recovered = 0
        kept: list[bytes] = []
        for line in journal.splitlines(keepends=True):
            try:
                intent = json.loads(line)
                trash_id, note_id = intent["trash_id"], intent["note_id"]
                if not isinstance(trash_id, str) or not isinstance(note_id, str):
                    raise TypeError("trash_id and note_id must be strings")
            except (ValueError, KeyError, TypeError):
                logger.error("unreadable line of the trash journal dropped", extra={"workspace": workspace})
                continue
            if trash_id in committed:
                continue
            put_back = self._put_back(root, trash_id, note_id)
            recovered += put_back is True
            if put_back is None:
                kept.append(line)
        if len(journal) < _JOURNAL_READ_MAX:
            root.reset_trash_journal(b"".join(kept))
            self._journaled[workspace] = 0
        return recovered

    @staticmethod
    def _put_back(root: WorkspaceRoot, trash_id: str, note_id: str) -> bool | None:
        """Move an uncommitted trash entry back: True when moved, False when there is none,
        None when it stays in the trash (its path is taken again, or it cannot be moved now)."""
        try:
            if root.trash_entry(trash_id) is None:
                return False
        except PathRejected:
            return False
        try:
            root.restore(trash_id, note_id)
        except NoteExists:
            logger.error(
                "uncommitted trash entry kept in trash: its original path is taken again",
                extra={"trash_id": trash_id, "note": note_id},
            )
            return None
        except FsError as exc:
            logger.error(
                "uncommitted trash entry kept in trash: it cannot be moved back",
                extra={"trash_id": trash_id, "reason": str(exc)},
            )
            return None
        logger.warning("recovered an uncommitted delete", extra={"trash_id": trash_id, "note": note_id})
        return True
