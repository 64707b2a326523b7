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
workspace's lock (on SQLite the database write lock, which covers every workspace), and only when
the trash's owner marker names the ledger of its transaction (`notes.ownership`: one ledger per
folder). Each journal line names that ledger. So while `recover` holds the lock, a line of *its*
ledger whose trash entry has no committed row can only be a leftover of a process that died
between its rename and its COMMIT (or whose COMMIT's outcome was unknown), and recovery moves it
back to the path the line names. Lines of any other ledger, or of an earlier version that wrote no
ledger id, are never acted on: only their own ledger can prove they did not commit
(`notes.ownership` Rule 1). After COMMIT a second line records the delete as committed, for
readers that do not hold the ledger.

Recovery runs at start-up, again inside a delete that finds its note missing, so a retry on any
instance heals a dead instance's half-done move; having dealt with its ledger's lines, it rewrites
the journal with the rest. Once this process has appended `JOURNAL_RECOVERY_BYTES` to a
workspace's journal, the next delete replays the journal alone (not the whole trash) before
appending. The outcome after any crash is "in the trash and consumed" or "untouched and still
usable". Nothing is unlinked here: everything deleted stays in the trash until it is emptied.

Before the journal, each entry had a sidecar file `trash/<id>.json`, which names no ledger: such an
entry is left in the trash and reported at recovery; purging an entry removes its sidecar.

Content writes (`rewrite_note`) run in a ledger transaction holding the workspace's lock: the
replaced content is saved as `.notewarden-history/<version_id>` (`fsroot.keep_version`: a hard link
to the note's inode, so no copy is written) with its `note_history` row, then the new content is
swapped in (`fsroot.replace_note`, identity-checked: an editor's write in between makes the swap
refuse, and the rewrite runs again on the editor's content). A rollback
removes the saved copy and swaps the previous content back. The index is not told: it notices the
rename like any editor's (inotify or directory stamps) at its next query, so a write costs the same
for a large note as for a small one and a burst of edits is indexed once.

A move that rewrites links (`move_note` with `relink`) changes several files, which no
transaction covers, so it keeps a journal, `.notewarden-history/~move` (one at a time: it is written
and settled only under the workspace's lock):

    BEGIN, lock the workspace, settle a journal left by a crash (below)
      plan: every linking note's new bytes (`links.rewrite_for_move`, the index's view of the vault)
      write the journal: move id, ledger, from, to, and per note its id, history name, temp name,
                         the version (digest) before and after          (fsynced)
      per note: save the old content (`keep_version`), swap the new one in (`replace_note` with the
                journal's temp name), INSERT its `note_history` row
      rename the note, re-key its history, INSERT the move's row in `note_moves` (the commit mark)
    COMMIT
    remove the journal

Settling a journal (at start-up, and under the lock before any move or content write of the
workspace, so a live instance heals a dead one's half-done move): when its `note_moves` row is
committed the move stands and only the journal and temp files go; otherwise the move is undone:
the note renamed back, and every note whose digest is the journal's "after" gets its saved content
back (a note someone changed since is left as it is, and logged), the saved copies and the journal
removed. A rollback inside a live process (an error part-way) runs the same undo. So after any
crash a move is all done or not at all. A note another writer changes between the plan and its swap
is read again and rewritten on its new content (the journal updated first), at most
`MERGE_ATTEMPTS` times, then the whole move is refused and undone.

The trash rows live in the ledger's database (SQLite or PostgreSQL) and are written with
the portable SQL of `LedgerTxn.execute`.

Every change also writes its record (`notes.change_log`) in the ledger transaction that holds its
file step, right after that step: a create, which needs no other row, opens one for it (a rollback
removes the file it created, `fsroot.remove_created`). What a crash between a file step and COMMIT
can leave without its record is `change_log` Rule 2's table.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notewarden.faults import fault_point
from notewarden.ledger import Durability, Ledger, LedgerTxn
from notewarden.notes import links, store
from notewarden.notes.attachments import AttachmentVault, WithAttachments
from notewarden.notes.change_log import ChangeLog, NoteEffect, moved_effects, versions_purged
from notewarden.notes.health import HealthItem, HealthKey
from notewarden.notes.history import Change, HistoryEntry, HistoryLog, Retention, new_version_id
from notewarden.notes.index import NoteIndex
from notewarden.notes.index_refresh import IndexedNote
from notewarden.notes.live import Drain
from notewarden.notes.model import TITLE_SCAN_BYTES, Note, NoteIdentity, content_version, extract_title
from notewarden.notes.ownership import WorkspaceOwnedElsewhere, claim_owner
from notewarden.notes.store_kit import new_trash_id
from notewarden.notes.trash_journal import (
    committed_line,
    intent_line,
    open_journal,
    parse_journal,
    read_journal,
    reset_journal,
)
from notewarden.schema import SchemaComponent
from notewarden.scope.fs_errors import FsError, IdentityMismatch, NoteExists, NoteMissing, PathRejected
from notewarden.scope.fsroot import FileIdentity, HeldDir, WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import MOVE_JOURNAL_NAME
from notewarden.scope.uri import FileUri

if TYPE_CHECKING:
    from notewarden.notes.index_meaning import IndexMeaning
    from notewarden.notes.live import ChangeFeed
    from notewarden.notes.vectors import Embedder, Vectors

__all__ = ["FILES_STORE_SCHEMA", "FilesNoteStore"]

logger = logging.getLogger(__name__)

_NOTE_MOVES = """
    CREATE TABLE note_moves (move_id TEXT PRIMARY KEY, workspace TEXT NOT NULL, moved_at REAL NOT NULL);
    CREATE INDEX note_moves_by_workspace ON note_moves (workspace);
"""
"""Step 2: a committed move that rewrote links (the journal's commit mark, module docstring)."""

FILES_STORE_SCHEMA = SchemaComponent(
    "files_store",
    tables=("trash", "note_moves"),
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
        _NOTE_MOVES,
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
        _NOTE_MOVES,
    ),
)

_SIDECAR = ".json"
JOURNAL_RECOVERY_BYTES = 256 * 1024
"""Appended by this process to one workspace's journal before it recovers and empties it."""
_JOURNAL_READ_MAX = 64 * 1024 * 1024
_HISTORY_READ_MAX = 64 * 1024 * 1024


def _committed(txn: LedgerTxn, trash_ids: Sequence[str]) -> set[str]:
    """Which of these trash ids have a committed row in the transaction's ledger (whatever the
    workspace URI they were recorded under: one folder may be named by more than one URI)."""
    found: set[str] = set()
    for start in range(0, len(trash_ids), 500):
        chunk = trash_ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        found |= {
            row[0] for row in txn.execute(f"SELECT trash_id FROM trash WHERE trash_id IN ({marks})", chunk)
        }
    return found


_MOVE_JOURNAL_READ_MAX = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Planned:
    """One note a move rewrites: its content as read, its new bytes, the links they change."""

    note_id: str
    after_id: str
    before: store.NoteContent
    data: bytes
    rewrites: list[links.Rewrite]


def _relinked(
    current: store.NoteContent, moved_from: str, moved_to: str, vault: links.VaultLookup
) -> _Planned | None:
    """The note rewritten for the move, or None when none of its links change (or it is not UTF-8:
    such a note is not rewritten)."""
    try:
        text = current.data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    note_id = current.note.id
    after_id = moved_to if note_id == moved_from else note_id
    new_text, rewrites = links.relink(text, note_id, after_id, moved_from, moved_to, vault)
    return _Planned(note_id, after_id, current, new_text.encode(), rewrites) if rewrites else None


def _encoded(journal: dict[str, Any]) -> bytes:
    return json.dumps(journal, ensure_ascii=False).encode() + b"\n"


def _refuse_taken(root: WorkspaceRoot, new_id: str) -> None:
    try:
        root.stat_note(new_id)
    except NoteMissing:
        return
    raise NoteExists(f"{new_id}: already exists; choose another name")


def require_owner(txn: LedgerTxn, scope: WorkspaceScope, held: HeldDir | None = None) -> None:
    """Refuse to change a trash whose owner marker names another ledger than the transaction's
    (`notes.ownership` Rule 2); an unmarked folder is marked for it. `held`: the trash, already open."""
    try:
        owner = claim_owner(scope.root, txn.identity, held)
    except ValueError as exc:
        raise WorkspaceOwnedElsewhere(str(scope.workspace), None, txn.identity, str(exc)) from None
    if owner.ledger_id != txn.identity.ledger_id:
        raise WorkspaceOwnedElsewhere(
            str(scope.workspace), owner, txn.identity, "the folder's owner is another ledger now"
        )


def _note(row: IndexedNote) -> Note:
    return Note(id=row.id, title=row.title, identity=NoteIdentity.of_file(row.identity), aliases=row.aliases)


def _inside(scope: WorkspaceScope, note_id: str) -> str:
    if not isinstance(note_id, str):
        raise PathRejected(f"{note_id!r} is not a note id; name a note inside {scope.uri}")
    return scope.check(note_id)


def _state(identity: FileIdentity) -> str:
    """A note's state as its record keeps it (`change_log` Rule 1): the file's identity."""
    return NoteIdentity.of_file(identity).fingerprint()


class FilesNoteStore:
    def __init__(
        self,
        index_path: Path | None = None,
        *,
        ledger: Ledger,
        ledger_for: Callable[[str], Ledger] | None = None,
        watch: bool = True,
        durability: Durability = "normal",
        retention: Retention | None = None,
        changes: ChangeLog | None = None,
    ) -> None:
        """`index_path`: the index database (in the state directory); None keeps it in memory.
        `ledger`: where content writes keep their history rows (with the trash's), unless `ledger_for`
        names another per workspace: the ledger that owns the folder's trash (`Services.trash_ledger`,
        `notes.ownership`), so a folder's history rows live in that one ledger.
        `durability`: "full" fsyncs each line of the trash journal and each saved version (power
        loss), as the ledger's `synchronous=FULL` does; "normal" survives a killed process, like the ledger."""
        self.index = NoteIndex(index_path or ":memory:", watch=watch)
        self.ledger_for: Callable[[str], Ledger] = ledger_for or (lambda _workspace: ledger)
        self.history = HistoryLog(retention or Retention())
        self.changes = changes or ChangeLog()
        """Where each change's record goes (`change_log`), in the ledger of its transaction."""
        self._sync_trash = durability == "full"
        self._journaled: dict[str, int] = {}
        self._meaning_index: IndexMeaning | None = None

    def close(self) -> None:
        self.index.close()

    @staticmethod
    def _key(scope: WorkspaceScope) -> tuple[str, WorkspaceRoot, tuple[str, ...]]:
        return str(scope.workspace), scope.root, scope.regions

    def list_notes(self, scope: WorkspaceScope) -> list[Note]:
        return [_note(r) for r in self.index.page(*self._key(scope), after=None, limit=None)]

    def skipped(self, scope: WorkspaceScope) -> list[store.SkippedEntry]:
        workspace, _, regions = self._key(scope)
        return [store.SkippedEntry(path, reason) for path, reason in self.index.skipped(workspace, regions)]

    def list_page(
        self,
        scope: WorkspaceScope,
        *,
        after: str | None,
        limit: int,
        progress: store.ProgressSink | None = None,
    ) -> list[Note]:
        rows = self.index.page(*self._key(scope), after=after, limit=limit, progress=progress)
        return [_note(r) for r in rows]

    def find_titled(
        self, scope: WorkspaceScope, words: Sequence[str], *, progress: store.ProgressSink | None = None
    ) -> list[Note]:
        return [_note(r) for r in self.index.titled(*self._key(scope), words, progress=progress)]

    def search(
        self,
        scope: WorkspaceScope,
        terms: Sequence[str],
        *,
        after: tuple[float, str] | None,
        limit: int,
        progress: store.ProgressSink | None = None,
        match: store.SearchMatch = "all",
        filters: store.NoteFilter | None = None,
    ) -> list[store.SearchHit]:
        rows = self.index.search(
            *self._key(scope),
            terms,
            after=after,
            limit=limit,
            progress=progress,
            match=match,
            filters=filters,
        )
        return [store.SearchHit(_note(r), (r.score, r.id), r.aliases, r.snippet, tuple(terms)) for r in rows]

    def _meaning(self) -> IndexMeaning:
        """The vectors beside the index (`notes.index_meaning`), made on first use: numpy is needed."""
        if self._meaning_index is None:
            from notewarden.notes.index_meaning import IndexMeaning

            self._meaning_index = IndexMeaning(self.index)
        return self._meaning_index

    def embed_pending(
        self, scope: WorkspaceScope, embedder: Embedder, *, progress: store.ProgressSink | None = None
    ) -> int:
        workspace, root, _ = self._key(scope)
        return self._meaning().embed_pending(workspace, root, embedder, progress)

    def nearest(
        self,
        scope: WorkspaceScope,
        embedder: Embedder,
        query: Vectors,
        *,
        limit: int,
        filters: store.NoteFilter | None = None,
        exclude: frozenset[str] = frozenset(),
    ) -> list[store.MeaningHit]:
        found = self._meaning().nearest(
            *self._key(scope), query, embedder, limit=limit, filters=filters, exclude=exclude
        )
        return [store.MeaningHit(_note(n.note), n.section, n.score) for n in found]

    def note_sections(
        self, scope: WorkspaceScope, embedder: Embedder, note_id: str
    ) -> list[tuple[str, Vectors]]:
        scope.root.stat_note(_inside(scope, note_id))
        self._meaning().vectors(str(scope.workspace), embedder.name, embedder.dimensions)
        return self._meaning().sections_of(str(scope.workspace), note_id, embedder)

    def tags(
        self, scope: WorkspaceScope, *, prefix: str, after: str | None, limit: int
    ) -> list[store.TagCount]:
        return self.index.tags(*self._key(scope), prefix=prefix, after=after, limit=limit)

    def health(
        self, scope: WorkspaceScope, *, kinds: frozenset[str], after: HealthKey | None, limit: int
    ) -> list[HealthItem]:
        return self.index.health(*self._key(scope), kinds=kinds, after=after, limit=limit)

    def attachment_files(self, scope: WorkspaceScope) -> links.VaultLookup:
        """The attachments in the scope's reach, from the index (`index_refresh` Rule 11), current as
        of this call."""
        return self.index.attachment_files(*self._key(scope))

    def attachment_vault(self, scope: WorkspaceScope) -> AttachmentVault:
        return AttachmentVault(self.attachment_files(scope.whole_workspace()))

    def watch_changes(self, feed: ChangeFeed, root_of: Callable[[str], WorkspaceRoot]) -> Drain:
        """The index's watch (inotify, or directory stamps) finds a person's edits at each refresh."""
        self.index.changes_seen = feed.on_index
        return Drain(lambda workspace: self.index.refresh(workspace, root_of(workspace)))

    def links(
        self, scope: WorkspaceScope, note_id: str, *, limit: int, after: tuple[str, int] | None = None
    ) -> store.NoteLinks:
        scope.root.stat_note(_inside(scope, note_id))  # the precise error for what is not a note
        found = self.index.note_links(
            *self._key(scope), note_id, limit=limit, after=after, reach=scope.whole_workspace().regions
        )
        if found is None:
            raise NoteMissing(f"{note_id} is not a note of {scope.uri}")
        return found

    def recent(self, scope: WorkspaceScope, *, since_ns: int | None, limit: int) -> list[store.NoteChange]:
        """The index's changes, and the notes moved to the trash since (the trash's rows are their
        record: `NoteIndex.note_trashed`); each note once, by its latest change."""
        workspace, root, regions = self._key(scope)
        since = since_ns or 0
        changes = self.index.recent(workspace, root, regions, since_ns=since, limit=limit)
        # the folders' rows only, so that `limit` counts them; by equality of the id's first
        # characters, which no collation orders (the trash table is the ledger's, on PostgreSQL too)
        within, bounds = "", ()
        if "" not in regions:
            within = " AND (" + (" OR ".join(["substr(note_id, 1, ?) = ?"] * len(regions)) or "1 = 0") + ")"
            bounds = tuple(b for r in regions for b in (len(r) + 1, r + "/"))  # type: ignore[assignment]
        with self.ledger_for(workspace).snapshot() as db:
            trashed = db.execute(
                f"SELECT note_id, title, deleted_at FROM trash WHERE workspace = ? AND deleted_at >= ?{within} "
                "ORDER BY deleted_at DESC LIMIT ?",
                (workspace, since / 1e9, *bounds, limit),
            )
            went = ((note_id, title, int(deleted_at * 1e9)) for note_id, title, deleted_at in trashed)
            changes += [
                store.NoteChange(note_id, title, "deleted", at_ns)
                for note_id, title, at_ns in went
                if at_ns >= since  # the float's rounding
            ]
            latest: dict[str, store.NoteChange] = {}
            for change in sorted(changes, key=lambda c: (-c.at_ns, c.note_id)):
                latest.setdefault(change.note_id, change)
            return store.attributed(list(latest.values())[:limit], self.changes, db, workspace)

    def similar_titles(self, scope: WorkspaceScope, title: str) -> list[Note]:
        return [_note(r) for r in self.index.similar(*self._key(scope), title)]

    def complete_ids(self, scope: WorkspaceScope, prefix: str, *, limit: int) -> tuple[list[str], bool]:
        return self.index.complete(*self._key(scope), prefix, limit=limit)

    def notes_by_id(self, scope: WorkspaceScope, note_ids: Sequence[str]) -> list[Note]:
        notes = []
        for note_id in note_ids:
            head, identity = scope.root.read_head(_inside(scope, note_id), TITLE_SCAN_BYTES)
            notes.append(
                Note(id=note_id, title=extract_title(head, note_id), identity=NoteIdentity.of_file(identity))
            )
        return notes

    def read_note(self, scope: WorkspaceScope, note_id: str) -> store.NoteContent:
        data, identity = scope.root.read_note(_inside(scope, note_id))
        return store.NoteContent(
            Note(note_id, extract_title(data, note_id), NoteIdentity.of_file(identity)), data
        )

    def read_notes(self, scope: WorkspaceScope, note_ids: Sequence[str]) -> dict[str, store.NoteContent]:
        found = {}
        for note_id in note_ids:
            try:
                found[note_id] = self.read_note(scope, note_id)
            except FsError:
                continue
        return found

    def create_note(
        self, scope: WorkspaceScope, note_id: str, data: bytes, *, change: Change
    ) -> store.NoteContent:
        """In a ledger transaction of its own, for the record (`change_log` Rule 2): the file is
        created, then the record written; a rollback removes the file it created."""
        root, workspace = scope.root, str(scope.workspace)
        root.require_in_place()
        _inside(scope, note_id)
        with self.ledger_for(workspace).critical_section() as txn:
            identity = root.create_note(note_id, data, make_parents=True)
            txn.on_rollback(lambda: root.remove_created(note_id, identity))
            note = Note(note_id, extract_title(data, note_id), NoteIdentity.of_file(identity))
            created = store.NoteContent(note, data)
            effect = NoteEffect(note_id, "created", version_after=created.version, state=_state(identity))
            self.changes.record(txn, workspace, change, [effect])
            fault_point("write_uncommitted")
        self.index.note_changed(workspace, root, note_id)
        return created

    def rewrite_note(
        self, scope: WorkspaceScope, note_id: str, rewrite: store.Rewrite, *, change: Change
    ) -> store.Rewritten:
        _inside(scope, note_id)
        scope.root.require_in_place()
        for _ in range(store.MERGE_ATTEMPTS):
            try:
                return self._rewrite_once(scope, note_id, rewrite, change)
            except IdentityMismatch:  # an editor wrote between our read and our swap: read it again
                continue
        raise store.VersionConflict(note_id, self.read_note(scope, note_id).version)

    def _rewrite_once(
        self, scope: WorkspaceScope, note_id: str, rewrite: store.Rewrite, change: Change
    ) -> store.Rewritten:
        root, workspace = scope.root, str(scope.workspace)
        with self.ledger_for(workspace).critical_section() as txn:
            txn.lock_workspace(workspace)
            self._settle_move(txn, root, workspace)
            before = self.read_note(scope, note_id)
            data = rewrite(before)
            if data == before.data:
                return store.Rewritten(before, before, None)
            saved = self.history.record(
                txn,
                workspace,
                note_id,
                version=before.version,
                size=len(before.data),
                change=change,
                body=None,
            )
            root.keep_version(
                note_id, saved.version_id, before.note.identity.as_file(), before.data, sync=self._sync_trash
            )
            txn.on_rollback(lambda: root.purge_history_entry(saved.version_id))
            pruned = self.history.prune(txn, workspace, note_id)
            identity = root.replace_note(note_id, data, expected=before.note.identity.as_file())
            txn.on_rollback(lambda: root.replace_note(note_id, before.data, expected=identity))
            after = store.NoteContent(
                Note(note_id, extract_title(data, note_id), NoteIdentity.of_file(identity)), data
            )
            effect = NoteEffect(note_id, "rewritten", None, before.version, after.version, _state(identity))
            self.changes.record(txn, workspace, change, [effect])
            fault_point("write_uncommitted")
        self._purge_saved(root, pruned)
        return store.Rewritten(before, after, saved)

    def note_history(self, scope: WorkspaceScope, note_id: str) -> list[HistoryEntry]:
        with self.ledger_for(str(scope.workspace)).snapshot() as db:
            entries = self.history.entries(db, str(scope.workspace), _inside(scope, note_id))
        if not entries:
            scope.root.stat_note(note_id)  # NoteMissing for a note that is not there either
        return entries

    def saved_version(
        self, scope: WorkspaceScope, note_id: str, version_id: str
    ) -> tuple[HistoryEntry, bytes]:
        with self.ledger_for(str(scope.workspace)).snapshot() as db:
            found = self.history.entry(db, str(scope.workspace), _inside(scope, note_id), version_id)
        if found is None:
            raise NoteMissing(f"{note_id} has no saved version {version_id!r}; notes_history lists them")
        return found[0], scope.root.read_history(found[0].version_id, _HISTORY_READ_MAX)

    def select_history(
        self, txn: LedgerTxn, scope: WorkspaceScope, *, saved_before: float
    ) -> list[HistoryEntry]:
        return self.history.select(txn, str(scope.workspace), scope.contains, saved_before=saved_before)

    def purge_history(
        self, txn: LedgerTxn, scope: WorkspaceScope, entries: Sequence[HistoryEntry], *, change: Change
    ) -> int:
        scope.root.require_in_place()
        version_ids = [e.version_id for e in entries]
        self.history.delete(txn, str(scope.workspace), version_ids)
        self.changes.record(txn, str(scope.workspace), change, versions_purged(entries))
        self._purge_saved(scope.root, version_ids)
        return len(version_ids)

    @staticmethod
    def _purge_saved(root: WorkspaceRoot, version_ids: Sequence[str]) -> None:
        for version_id in version_ids:
            with suppress(NoteMissing):
                root.purge_history_entry(version_id)

    def move_note(
        self,
        scope: WorkspaceScope,
        note_id: str,
        new_id: str,
        *,
        change: Change,
        relink: bool = False,
        dry_run: bool = False,
        progress: store.ProgressSink | None = None,
        relink_attachments: bool = False,
    ) -> store.Moved:
        root, workspace = scope.root, str(scope.workspace)
        _inside(scope, note_id), _inside(scope, new_id)
        if dry_run:
            entry = root.stat_note(note_id)
            _refuse_taken(root, new_id)
            planned = self._plan_move(scope, note_id, new_id, relink_attachments) if relink else []
            head, _ = root.read_head(note_id, TITLE_SCAN_BYTES)
            note = Note(note_id, extract_title(head, note_id), NoteIdentity.of_file(entry.identity))
            return store.Moved(note, tuple(store.Relinked(p.after_id, tuple(p.rewrites)) for p in planned))
        relinked: list[store.Relinked] = []
        effects: list[NoteEffect] = []
        pruned: list[str] = []
        root.require_in_place()
        with self.ledger_for(workspace).critical_section() as txn:
            txn.lock_workspace(workspace)
            self._settle_move(txn, root, workspace)
            root.stat_note(note_id)
            _refuse_taken(root, new_id)
            planned = self._plan_move(scope, note_id, new_id, relink_attachments) if relink else []
            journal = None
            if planned:
                txn.execute("DELETE FROM note_moves WHERE workspace = ?", (workspace,))  # settled marks
                journal = self._start_move_journal(txn, root, workspace, note_id, new_id, planned)
                started = journal
                txn.on_rollback(lambda: self._undo_move(root, started))
                why = store.relink_change(change, note_id, new_id)
                for done, (step, planned_note) in enumerate(zip(journal["notes"], planned, strict=True), 1):
                    rewritten = self._relink_note(txn, scope, journal, step, planned_note, why)
                    if rewritten is not None:
                        relinked.append(rewritten[0])
                        effects.append(rewritten[1])
                    pruned += self.history.prune(txn, workspace, planned_note.note_id)
                    if done == len(planned) // 2:
                        fault_point("move_rewriting")
                    if progress is not None and len(planned) > 1:
                        progress(done, len(planned), f"rewrote the links of {done} of {len(planned)} notes")
            entry = root.stat_note(note_id)
            identity = root.move_note(note_id, new_id, expected=entry.identity)
            if journal is None:
                txn.on_rollback(lambda: root.move_note(new_id, note_id, expected=identity))
            else:
                txn.execute(
                    "INSERT INTO note_moves (move_id, workspace, moved_at) VALUES (?, ?, ?)",
                    (journal["move"], workspace, time.time()),
                )
            self.history.follow_move(txn, workspace, note_id, new_id)
            self.changes.record(
                txn, workspace, change, moved_effects(note_id, new_id, _state(identity), effects)
            )
            fault_point("write_uncommitted")
        if journal is not None:
            fault_point("move_committed")
            root.remove_record(MOVE_JOURNAL_NAME)
            for step in journal["notes"]:
                root.discard_temp(step["id"], step["tmp"])
        self._purge_saved(root, pruned)
        self.index.note_changed(workspace, root, note_id, new_id)
        head, _ = root.read_head(new_id, TITLE_SCAN_BYTES)
        return store.Moved(
            Note(new_id, extract_title(head, new_id), NoteIdentity.of_file(identity)), tuple(relinked)
        )

    def _plan_move(
        self, scope: WorkspaceScope, moved_from: str, moved_to: str, files: bool = False
    ) -> list[_Planned]:
        """Every note of the workspace (not only of the scope's folder: links resolve across the
        whole workspace) whose links the move changes, with its new bytes; refused when one of them
        is where the principal may not write (`store.refuse_unwritable_links`). `files`: links to
        attachments count too (`attachments.WithAttachments`)."""
        server = scope.as_server()  # read to find out; written only where the scope reaches
        workspace = str(scope.workspace)
        planned = []
        with self.index.vault(workspace, scope.root) as notes:
            vault = WithAttachments(notes, self.attachment_files(server)) if files else notes
            for note_id in self.index.linking_notes(workspace, moved_from, moved_to):
                try:
                    current = self.read_note(server, note_id)
                except FsError:
                    continue  # gone since it was indexed
                found = _relinked(current, moved_from, moved_to, vault)
                if found is not None:
                    planned.append(found)
        store.refuse_unwritable_links(scope.whole_workspace(), [p.note_id for p in planned], moved_from)
        return planned

    def _start_move_journal(
        self,
        txn: LedgerTxn,
        root: WorkspaceRoot,
        workspace: str,
        moved_from: str,
        moved_to: str,
        planned: Sequence[_Planned],
    ) -> dict[str, Any]:
        journal: dict[str, Any] = {
            "v": 1,
            "move": new_version_id(),
            "ledger": txn.identity.ledger_id,
            "workspace": workspace,
            "from": moved_from,
            "to": moved_to,
            "notes": [
                {
                    "id": p.note_id,
                    "saved": new_version_id(),
                    "tmp": root.new_temp_name(),
                    "old": p.before.version,
                    "new": content_version(p.data),
                }
                for p in planned
            ],
        }
        if not root.write_record(MOVE_JOURNAL_NAME, _encoded(journal), replace=False):
            raise FsError("another move of this workspace is unfinished; try again")
        return journal

    def _relink_note(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        journal: dict[str, Any],
        step: dict[str, Any],
        planned: _Planned,
        change: Change,
    ) -> tuple[store.Relinked, NoteEffect] | None:
        """Swap one note's rewritten content in, its old content saved; on another writer's change,
        plan it again on what that writer left (the journal first says so). What it did, for the
        move's answer and for its record."""
        root, workspace = scope.root, str(scope.workspace)
        whole = scope.whole_workspace()
        for attempt in range(store.MERGE_ATTEMPTS):
            if attempt:
                current = self.read_note(whole, planned.note_id)
                with self.index.vault(workspace, root) as vault:
                    again = _relinked(current, journal["from"], journal["to"], vault)
                planned = again or _Planned(planned.note_id, planned.after_id, current, current.data, [])
                step["old"], step["new"] = current.version, content_version(planned.data)
                root.write_record(MOVE_JOURNAL_NAME, _encoded(journal), replace=True)
                if again is None:
                    return None  # its links no longer need rewriting
            before = planned.before
            try:
                root.keep_version(
                    planned.note_id,
                    step["saved"],
                    before.note.identity.as_file(),
                    before.data,
                    sync=self._sync_trash,
                )
                try:
                    identity = root.replace_note(
                        planned.note_id,
                        planned.data,
                        expected=before.note.identity.as_file(),
                        temp_name=step["tmp"],
                    )
                except IdentityMismatch:
                    root.purge_history_entry(step["saved"])
                    raise
            except IdentityMismatch:
                continue
            saved = self.history.record(
                txn,
                workspace,
                planned.note_id,
                version=before.version,
                size=len(before.data),
                change=change,
                body=None,
                version_id=step["saved"],
            )
            effect = NoteEffect(
                planned.after_id, "relinked", None, before.version, step["new"], _state(identity)
            )
            return store.Relinked(planned.after_id, tuple(planned.rewrites), saved), effect
        raise store.VersionConflict(planned.note_id, self.read_note(whole, planned.note_id).version)

    def _settle_move(self, txn: LedgerTxn, root: WorkspaceRoot, workspace: str) -> int:
        """Finish or undo the move a crash left half done (module docstring); 1 when there was one.
        The caller holds the workspace's lock."""
        data = root.read_record(MOVE_JOURNAL_NAME, _MOVE_JOURNAL_READ_MAX)
        if data is None:
            return 0
        try:
            journal = json.loads(data)
            move_id, ledger_id = str(journal["move"]), journal["ledger"]
        except (ValueError, KeyError, TypeError):
            logger.error("unreadable move journal left alone", extra={"workspace": workspace})
            return 0
        if ledger_id != txn.identity.ledger_id:
            logger.error(
                "a move journal of another ledger left alone: only its ledger knows whether it committed",
                extra={"workspace": workspace, "ledger": ledger_id},
            )
            return 0
        if txn.execute("SELECT 1 FROM note_moves WHERE move_id = ?", (move_id,)):
            for step in journal["notes"]:
                root.discard_temp(step["id"], step["tmp"])
            root.remove_record(MOVE_JOURNAL_NAME)
            logger.warning("finished an interrupted move", extra={"move": move_id, "note": journal["to"]})
        else:
            try:
                self._undo_move(root, journal)
            except FsError as exc:  # the journal stays: the next write of the workspace tries again
                logger.error(
                    "an interrupted move could not be undone yet",
                    extra={"move": move_id, "note": journal["from"], "reason": str(exc)},
                )
                return 0
            logger.warning("undid an interrupted move", extra={"move": move_id, "note": journal["from"]})
        return 1

    @staticmethod
    def _undo_move(root: WorkspaceRoot, journal: dict[str, Any]) -> None:
        """Put back what an uncommitted move changed (module docstring); the journal goes last, so a
        failure part-way leaves it for the next settling."""
        moved_from, moved_to = journal["from"], journal["to"]
        try:
            root.stat_note(moved_from)
        except NoteMissing:
            with suppress(NoteMissing):
                root.move_note(moved_to, moved_from, expected=root.stat_note(moved_to).identity)
        for step in reversed(journal["notes"]):
            try:
                data, identity = root.read_note(step["id"])
            except NoteMissing:
                data, identity = None, None
            version = None if data is None else content_version(data)
            if version == step["old"]:
                pass  # not rewritten (or rewritten back)
            elif version == step["new"] and identity is not None:
                root.replace_note(
                    step["id"], root.read_history(step["saved"], _HISTORY_READ_MAX), expected=identity
                )
            else:
                logger.error(
                    "a note an interrupted move rewrote was changed since; left as it is",
                    extra={"note": step["id"], "move": journal["move"]},
                )
            root.discard_temp(step["id"], step["tmp"])
            with suppress(NoteMissing):
                root.purge_history_entry(step["saved"])
        root.remove_record(MOVE_JOURNAL_NAME)

    def list_trash(self, txn: LedgerTxn, scope: WorkspaceScope) -> list[store.TrashedNote]:
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
            entries.append(
                store.TrashedNote(
                    trash_id, note_id, title, deleted_at, identity.size, NoteIdentity.of_file(identity)
                )
            )
        return entries

    def restore(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        trash_id: str,
        *,
        change: Change,
        new_id: str | None = None,
    ) -> Note:
        root = scope.root
        root.require_in_place()
        txn.lock_workspace(str(scope.workspace))
        require_owner(txn, scope)
        rows = txn.execute(
            "SELECT note_id FROM trash WHERE trash_id = ? AND workspace = ?", (trash_id, str(scope.workspace))
        )
        row = rows[0] if rows else None
        missing = NoteMissing(
            f"trash entry {trash_id!r} is not in the trash of {scope.uri}; notes_trash_list shows what is"
        )
        if row is None or root.trash_entry(trash_id) is None:
            raise missing
        try:
            scope.check(row[0])  # where it was: the right to write there too (RightMissing)
        except PathRejected:
            raise missing from None
        target = _inside(scope, new_id or row[0])
        identity = root.restore(trash_id, target)
        txn.on_rollback(lambda: root.quarantine(target, trash_id, identity))
        txn.execute("DELETE FROM trash WHERE trash_id = ?", (trash_id,))
        self.history.from_trash(txn, str(scope.workspace), trash_id, target)
        previous = None if target == row[0] else row[0]
        effect = NoteEffect(target, "restored", previous, state=_state(identity))
        self.changes.record(txn, str(scope.workspace), change, [effect])
        with suppress(NoteMissing):
            root.purge_trash_entry(trash_id + _SIDECAR)
        fault_point("write_uncommitted")
        self.index.note_changed(str(scope.workspace), root, target)
        head, _ = root.read_head(target, TITLE_SCAN_BYTES)
        return Note(target, extract_title(head, target), NoteIdentity.of_file(identity))

    def purge_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        entries: Sequence[store.TrashedNote],
        *,
        change: Change,
        progress: store.ProgressSink | None = None,
    ) -> int:
        root = scope.root
        root.require_in_place()
        txn.lock_workspace(str(scope.workspace))
        require_owner(txn, scope)
        for entry in entries:
            found = root.trash_entry(entry.trash_id)
            if (None if found is None else NoteIdentity.of_file(found)) != entry.identity:
                raise IdentityMismatch(f"trash entry {entry.trash_id!r} is not the file that was listed")
        for done, entry in enumerate(entries, 1):
            txn.execute(
                "DELETE FROM trash WHERE trash_id = ? AND workspace = ?",
                (entry.trash_id, str(scope.workspace)),
            )
            for name in (entry.trash_id, entry.trash_id + _SIDECAR):
                with suppress(NoteMissing):
                    root.purge_trash_entry(name)
            self._purge_saved(root, self.history.drop_trashed(txn, str(scope.workspace), entry.trash_id))
            if progress is not None and (done % 100 == 0 or done == len(entries)):
                progress(done, len(entries), f"permanently deleted {done} of {len(entries)} notes")
        # notes_recent keeps saying when they went once their trash rows are gone. Written before
        # COMMIT (the index's lock nests in the ledger's, as in move_to_trash), so a crash right
        # after COMMIT loses no record; if the purge does not commit, `recent` still shows each
        # note once, from its trash row and this record alike.
        gone = [(e.note_id, e.title, int(e.deleted_at * 1e9)) for e in entries]
        self.index.remember_gone(str(scope.workspace), gone)
        self.changes.record(
            txn, str(scope.workspace), change, [NoteEffect(e.note_id, "purged") for e in entries]
        )
        return len(entries)

    def move_to_trash(
        self, txn: LedgerTxn, scope: WorkspaceScope, candidates: Sequence[Note], *, change: Change
    ) -> list[store.TrashedNote]:
        for candidate in candidates:  # each in the scope's reach now, as the SQL store checks it
            scope.check(candidate.id)
        scope.root.require_in_place()
        workspace = str(scope.workspace)
        txn.lock_workspace(workspace)
        # The owner check, the intent line and the move use one opening of the trash (fsroot Rule 8a).
        with scope.root.held_trash() as trash:
            require_owner(txn, scope, trash)
            trashed = [self._trash_one(txn, scope, candidate, trash, change) for candidate in candidates]
        self.changes.record(txn, workspace, change, [NoteEffect(t.note_id, "trashed") for t in trashed])
        return trashed

    def _trash_one(
        self, txn: LedgerTxn, scope: WorkspaceScope, candidate: Note, trash: HeldDir, change: Change
    ) -> store.TrashedNote:
        try:
            return self._trash(txn, scope, candidate, trash, change)
        except NoteMissing:
            if not self.recover(txn, scope.workspace, scope.root):  # a dead writer's half-done move?
                raise
        return self._trash(txn, scope, candidate, trash, change)

    def _trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        candidate: Note,
        trash: HeldDir,
        change: Change,
    ) -> store.TrashedNote:
        root = scope.root
        workspace = str(scope.workspace)
        ledger_id = txn.identity.ledger_id
        if self._journaled.get(workspace, 0) >= JOURNAL_RECOVERY_BYTES:  # we hold the lock
            self._replay_journal(txn, root, workspace)
        trash_id = new_trash_id()
        deleted_at = time.time()
        intent = intent_line(trash_id, candidate.id, workspace, ledger_id)
        # One opening of the journal for both lines: the committed one goes through it after COMMIT.
        journal = open_journal(root, sync=self._sync_trash, held=trash)
        try:
            journal.append(intent, sync=self._sync_trash)
            committed = committed_line(trash_id, ledger_id)
            self._journaled[workspace] = self._journaled.get(workspace, 0) + len(intent) + len(committed)
            identity = root.quarantine(candidate.id, trash_id, candidate.identity.as_file(), held=trash)
        except BaseException:
            journal.close()
            raise

        def put_back() -> None:
            root.restore(trash_id, candidate.id)
            self.index.note_changed(workspace, root, candidate.id)

        def mark_committed() -> None:
            try:
                journal.append(committed, sync=False)
            finally:
                journal.close()

        txn.on_rollback(journal.close)  # undo steps run last registered first: put_back, then this
        txn.on_rollback(put_back)
        txn.on_commit(mark_committed)
        self.index.note_trashed(workspace, candidate.id)
        txn.execute(
            "INSERT INTO trash (trash_id, workspace, note_id, title, principal, confirmation_id, deleted_at, "
            "dev, ino, size, mtime_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                trash_id,
                str(scope.workspace),
                candidate.id,
                candidate.title,
                change.principal,
                change.confirmation_id,
                deleted_at,
                identity.dev,
                identity.ino,
                identity.size,
                identity.mtime_ns,
            ),
        )
        self.history.to_trash(txn, workspace, candidate.id, trash_id)
        return store.TrashedNote(
            trash_id=trash_id,
            note_id=candidate.id,
            title=candidate.title,
            deleted_at=deleted_at,
            size=identity.size,
            identity=NoteIdentity.of_file(identity),
        )

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot | None) -> int:
        if root is None:
            raise ValueError(f"the files store needs the directory of {workspace} to recover it")
        txn.lock_workspace(str(workspace))
        rows = txn.execute("SELECT trash_id FROM trash WHERE workspace = ?", (str(workspace),))
        recovered = 0
        for trash_id in sorted(row[0] for row in rows):
            if root.trash_entry(trash_id) is None:
                txn.execute("DELETE FROM trash WHERE trash_id = ?", (trash_id,))
                with suppress(NoteMissing):
                    root.purge_trash_entry(trash_id + _SIDECAR)
                recovered += 1
                logger.warning("finished an interrupted restore or purge", extra={"trash_id": trash_id})
        recovered += self._replay_journal(txn, root, str(workspace))
        recovered += self._settle_move(txn, root, str(workspace))
        sidecars = [name.removesuffix(_SIDECAR) for name in root.list_trash() if name.endswith(_SIDECAR)]
        unknown = sorted(set(sidecars) - _committed(txn, sidecars))
        if unknown:  # an earlier version's records name no ledger: only a person can settle them
            logger.warning(
                "trash entries of an earlier version left in the trash: their ledger is unknown",
                extra={
                    "workspace": str(workspace),
                    "trash_ids": ",".join(unknown[:20]),
                    "count": len(unknown),
                },
            )
        return recovered

    def _replay_journal(self, txn: LedgerTxn, root: WorkspaceRoot, workspace: str) -> int:
        """Settle the journal's lines of the transaction's ledger: move back what did not commit, then
        rewrite the journal with the lines it could not act on and every other ledger's lines
        (`notes.ownership` Rule 1). The caller holds the workspace's lock."""
        journal = read_journal(root, _JOURNAL_READ_MAX)
        lines, unreadable = parse_journal(journal)
        if unreadable:
            logger.error("unreadable lines of the trash journal dropped", extra={"workspace": workspace})
        ours = txn.identity.ledger_id
        committed = _committed(txn, [line.trash_id for line in lines if line.ledger in (ours, None)])
        recovered = 0
        kept: list[bytes] = []
        foreign = 0
        for line in lines:
            if line.ledger == ours and line.note_id is not None and line.trash_id not in committed:
                put_back = self._put_back(root, line.trash_id, line.note_id)
                recovered += put_back is True
                if put_back is None:
                    kept.append(line.raw)
            elif line.ledger != ours and not (line.ledger is None and line.trash_id in committed):
                kept.append(line.raw)  # another ledger's (or an unknown one's): only it can settle the line
                foreign += line.note_id is not None
        if foreign:
            logger.info(
                "trash journal lines of other ledgers left alone",
                extra={"workspace": workspace, "lines": foreign},
            )
        if len(journal) < _JOURNAL_READ_MAX:
            reset_journal(root, b"".join(kept))
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
