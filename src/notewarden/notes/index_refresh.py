"""The files store's index, kept current: SQLite FTS5 in the state directory, its schema, and the change
detection that keeps it current without rescanning. The queries are `notes.index` (`NoteIndex`, which
builds on `IndexRefresh`).

Rule 1: the files are the truth; the index is a cache. Deleting its database loses nothing: the
next call rebuilds it. It is keyed by workspace URI and by the workspace directory's inode, so a
workspace folder that is replaced is re-indexed from scratch.

Rule 2: a call costs O(changes), not O(notes). Change detection, per process and workspace:

* inotify where available: one watch per directory, added on the directory's open fd
  (`/proc/self/fd/N`) before it is listed. A file event re-reads that one file; a structural
  event (a directory created, removed or renamed) re-lists the directory it happened in; a queue
  overflow triggers a full verification.
* otherwise (no inotify, or its watch limit reached): each call compares directory stamps
  (inode + mtime) with the index and re-lists only directories whose stamp changed. An edit in
  place leaves directory mtimes alone: it is found by `notes.index` Rule 1 when the note is a
  candidate, and by a full verification at most every `verify_interval` seconds.
* the first call of a process on a workspace runs a full verification: every directory listed
  (and watched), every file's identity compared with the index; only changed files are read.

Rule 3 (racily clean, as in git): a timestamp is only as fine as the filesystem's clock tick, so
a directory or file read within `RACY_WINDOW_NS` of its mtime could change again without its
stamp changing. Such rows are stored unsettled and are checked again on the next pass; a query
re-reads an unsettled row it returns. Once the window of every unsettled note of a workspace
has passed, the next call re-reads them all in one pass (`_settle`), so a workspace written
just before it was indexed (an import, a sync) costs one batched re-read, not a write per note
on its first lookup. A note read again unchanged only has its row marked settled.

Rule 4: one lock serializes a process's use of the index; several processes share the database
file (WAL, `BEGIN IMMEDIATE` for writes, batches of `BATCH` files per transaction, of
`FIRST_BUILD_BATCH` in a first build).

Rule 5: a note that goes (deleted, moved, trashed) leaves the `notes` table at once, which every
query joins, so it is never found again; its rows in the two full-text tables are only listed in
`fts_stale` and removed `STALE_BATCH` at a time, in one transaction. An FTS5 delete rewrites
several pages of each full-text table (a new segment, the structure record, the document sizes);
in a batch those writes are shared. Until a batch is purged, bm25 counts the stale rows among the
documents. A rowid that `notes` hands out again is re-indexed like any update (its full-text rows
replaced), and the purge skips a rowid that is live again.

Rule 6 (what notes know; `markdown.parse_note`): each note's properties (JSON), tags, aliases and
links are kept beside it, replaced whenever the note is re-read (headings are not: `note_links`
reads a target's headings when it shows an anchor, so a build can skip the block parse). A
link row stores its target as resolved now (`links` Rule 1) and its name key (the fold of its
path's last component, without the note suffix). A note can only be found through a link whose
name key is the note's name or one of its aliases, so when a note appears, goes, moves or changes
its aliases, exactly the links with those name keys are resolved again, in the same write
transaction (`_resolve_dirty`): nothing else is re-read or re-parsed. A first build (no note of
the workspace indexed yet) knows every note it will read from its listings before it reads one, so
it stores each link resolved by path and name as it reads it (`_PlannedVault`); only the links
that resolve through neither, the names of aliases and of notes that could not be read are
resolved again at its end: each link row is written once, not written unresolved and updated in a
pass over every link.

Rule 7 (what changed; `recent`): each note row carries its latest change (created, modified,
moved; the time is the file's mtime, or when the move was seen) and a note that goes leaves a row
in `gone_notes` for `GONE_KEPT_NS`, except one a tool moves to the trash (`note_trashed`): its
trash row is the record (`FilesNoteStore.recent` reads both) until the trash is emptied, which
copies it to `gone_notes` with the time it went before the purge commits (`remember_gone`; a row
with no inode, since a file that left the trash cannot come back as a move). A note that appears
with the inode of a note that went (a rename seen as a delete and a create: a pass handles the
names that are gone before the others) is a move. The first build of a workspace records no
changes: its notes count as modified at their mtime.

Rule 8 (names and skips, issue 12): a note is a delete candidate when its title, its file stem
or one of its aliases contains every word (`model.matched_name`), so the trigram table holds the
title and the other names (stem and aliases) of each note: a lookup stays O(changes). Entries a
listing skipped on purpose (a symbolic link, another filesystem) are kept per directory in
`skipped`, so `notes_list` can say what it left out and why without listing anything again.
Schema step 4 added both; it empties the index (a cache: Rule 1), and the next call rebuilds it
as a first build.

Rule 9 (few segments): an FTS5 table is a set of segments, and a lookup probes each one for every
term (a title query for a 7-character word is 5 trigrams). Indexing many notes in one pass leaves
several: FTS5 writes a segment whenever its pending terms fill, and its automerge keeps up to three
per level. A pass that wrote the full text of at least `BATCH` notes (a first build, an import, a
sync) ends by merging each full-text table into one segment (FTS5's `optimize`, a small share of
such a pass). Later writes, Rule 5's purges included, each add a small segment, which automerge
keeps few. What the merge costs and saves: docs/performance.md, "Where the time goes", item 11.

Rule 10 (what notes mean, issue 25; schema step 5): with a model configured, each note's sections
have vectors in `note_chunks` (`notes.index_meaning` computes them). A note whose text is written
again is marked `embedded = 0` (a partial index lists those), so only changed notes are embedded
again, and of those only the sections whose text changed (`digest`). A note that leaves the index
takes its vectors along. `notes_by_mtime` serves filters-only searches (`notes.index` Rule 3).

Rule 11 (attachments, issue 27; schema step 6): the listings that find notes also find the
workspace's attachment files (`notes.attachments` Rule 1: its extensions, nothing hidden, no
symlink, no other mount; the same `list_dir`), kept in `attachments` by path with the keys links
resolve them by (`links.note_key`, `links.name_key` of the path: an attachment keeps its
extension) and their size and mtime. They follow the files as notes do: a directory listed again
(Rules 2 and 3) reconciles its attachments; under inotify a created, removed or renamed attachment
re-lists its directory (it may be a symlink, which `skipped` must name) and a written one is
`lstat`ed again alone; a directory that goes takes its attachments along. Nothing reads an
attachment's bytes here: `notes.index` resolves attachment links and judges them (`notes.health`)
from this table, and a read goes through the directory handle with every check
(`notes.attachments` Rule 5). The step empties nothing: each process's first call lists every
directory (Rule 2), which fills the table.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import EllipsisType
from typing import Any

import inotify_simple

from notewarden.notes.attachments import ATTACHMENT_SUFFIXES, is_attachment
from notewarden.notes.links import MappedVault, context_line, id_keyed, name_key, note_key, resolve_path
from notewarden.notes.markdown import NoteFacts, fold, parse_note, tag_key
from notewarden.notes.model import NoteIdentity, note_stem
from notewarden.notes.store import ProgressSink
from notewarden.notes.store_kit import MemoLookup, prefix_range
from notewarden.schema import apply_migrations
from notewarden.scope.fs_errors import FsError, PathRejected
from notewarden.scope.fsroot import DirListing, DirStamp, FileIdentity, WorkspaceRoot
from notewarden.scope.note_paths import NOTE_SUFFIXES, split_dir, split_relative

__all__ = [
    "INDEX_BODY_BYTES",
    "INDEX_MIGRATIONS",
    "NOTE_COLUMNS",
    "STALE_BATCH",
    "IndexLookup",
    "IndexRefresh",
    "IndexedNote",
    "same_file",
]

logger = logging.getLogger(__name__)

INDEX_BODY_BYTES = 1024 * 1024
"""Only the first MiB of a note is searchable and parsed for links and tags."""
MOVE_WINDOW_NS = 60_000_000_000
"""A note appearing with the inode of one that went this recently was moved (Rule 7)."""
GONE_KEPT_NS = 90 * 86_400 * 1_000_000_000
"""How long a note that went is remembered (Rule 7); forgotten at a process's first call after."""
RACY_WINDOW_NS = 2_000_000_000
BATCH = 500
FIRST_BUILD_BATCH = 5000
"""A first build's files per transaction (Rule 4): each commit writes every index page its link and
tag rows touched, at random places in their indexes, so few large commits write far less: a 100k
note build with 300k links wrote 6.4 GB to the WAL in batches of 500 and 2.2 GB in batches of 5000."""
STALE_BATCH = 64


INDEX_MIGRATIONS: Sequence[str] = (
    """
    CREATE TABLE workspaces (workspace TEXT PRIMARY KEY, dev INTEGER NOT NULL, ino INTEGER NOT NULL);
    CREATE TABLE dirs (
        workspace TEXT NOT NULL, path TEXT NOT NULL, parent TEXT,
        ino INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
        PRIMARY KEY (workspace, path)
    ) WITHOUT ROWID;
    CREATE INDEX dirs_by_parent ON dirs (workspace, parent);
    CREATE TABLE notes (
        rowid INTEGER PRIMARY KEY,
        workspace TEXT NOT NULL, id TEXT NOT NULL, dir TEXT NOT NULL, title TEXT NOT NULL,
        dev INTEGER NOT NULL, ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
        settled INTEGER NOT NULL,
        UNIQUE (workspace, id)
    );
    CREATE INDEX notes_by_dir ON notes (workspace, dir);
    CREATE VIRTUAL TABLE notes_text USING fts5(title, path, body, tokenize = 'unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE notes_titles USING fts5(title, tokenize = 'trigram')
    """,
    """
    CREATE TABLE fts_stale (rowid INTEGER PRIMARY KEY)
    """,
    # Rules 8 and 9; porter stemming. Every note is read again: the index is a cache.
    """
    DELETE FROM notes;
    DELETE FROM dirs;
    DELETE FROM fts_stale;
    DELETE FROM notes_titles;
    DROP TABLE notes_text;
    CREATE VIRTUAL TABLE notes_text USING fts5(
        title, path, body, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    ALTER TABLE notes ADD COLUMN path_key TEXT NOT NULL DEFAULT '';
    ALTER TABLE notes ADD COLUMN name_key TEXT NOT NULL DEFAULT '';
    ALTER TABLE notes ADD COLUMN properties TEXT;
    ALTER TABLE notes ADD COLUMN property_error TEXT;
    ALTER TABLE notes ADD COLUMN change TEXT;
    ALTER TABLE notes ADD COLUMN changed_ns INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE notes ADD COLUMN previous TEXT;
    CREATE INDEX notes_by_name_key ON notes (workspace, name_key, path_key);
    CREATE INDEX notes_by_change ON notes (workspace, changed_ns);
    CREATE TABLE note_tags (
        workspace TEXT NOT NULL, note_id TEXT NOT NULL, tag TEXT NOT NULL, name TEXT NOT NULL,
        PRIMARY KEY (workspace, note_id, tag)
    ) WITHOUT ROWID;
    CREATE INDEX note_tags_by_tag ON note_tags (workspace, tag);
    CREATE TABLE note_aliases (
        workspace TEXT NOT NULL, note_id TEXT NOT NULL, alias_key TEXT NOT NULL, alias TEXT NOT NULL,
        PRIMARY KEY (workspace, note_id, alias_key)
    ) WITHOUT ROWID;
    CREATE INDEX note_aliases_by_key ON note_aliases (workspace, alias_key);
    CREATE TABLE note_links (
        workspace TEXT NOT NULL, note_id TEXT NOT NULL, seq INTEGER NOT NULL,
        line INTEGER NOT NULL, style TEXT NOT NULL, embed INTEGER NOT NULL,
        path TEXT NOT NULL, anchor TEXT NOT NULL, written TEXT NOT NULL, context TEXT NOT NULL,
        name_key TEXT NOT NULL, target TEXT, via TEXT,
        PRIMARY KEY (workspace, note_id, seq)
    ) WITHOUT ROWID;
    CREATE INDEX note_links_by_target ON note_links (workspace, target);
    CREATE INDEX note_links_by_name ON note_links (workspace, name_key);
    CREATE TABLE gone_notes (
        workspace TEXT NOT NULL, note_id TEXT NOT NULL, title TEXT NOT NULL,
        gone_ns INTEGER NOT NULL, dev INTEGER NOT NULL, ino INTEGER NOT NULL,
        PRIMARY KEY (workspace, note_id)
    ) WITHOUT ROWID;
    CREATE INDEX gone_notes_by_time ON gone_notes (workspace, gone_ns);
    CREATE INDEX gone_notes_by_inode ON gone_notes (workspace, ino);
    CREATE TABLE tag_counts (
        workspace TEXT NOT NULL, tag TEXT NOT NULL, name TEXT NOT NULL, notes INTEGER NOT NULL,
        PRIMARY KEY (workspace, tag)
    ) WITHOUT ROWID
    """,
    # Rule 8: the trigram table gains the other names; skipped entries. Every note is read again.
    """
    DELETE FROM notes;
    DELETE FROM dirs;
    DELETE FROM workspaces;
    DELETE FROM fts_stale;
    DELETE FROM note_tags;
    DELETE FROM note_aliases;
    DELETE FROM note_links;
    DELETE FROM tag_counts;
    DROP TABLE notes_text;
    CREATE VIRTUAL TABLE notes_text USING fts5(
        title, path, body, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    DROP TABLE notes_titles;
    CREATE VIRTUAL TABLE notes_titles USING fts5(title, names, tokenize = 'trigram');
    CREATE TABLE skipped (
        workspace TEXT NOT NULL, path TEXT NOT NULL, dir TEXT NOT NULL, reason TEXT NOT NULL,
        PRIMARY KEY (workspace, path)
    ) WITHOUT ROWID;
    CREATE INDEX skipped_by_dir ON skipped (workspace, dir)
    """,
    # Rule 10: filters-only searches newest first from an index; what a note means (its sections'
    # vectors), kept beside it.
    """
    CREATE INDEX notes_by_mtime ON notes (workspace, mtime_ns DESC, id);
    ALTER TABLE notes ADD COLUMN embedded INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX notes_unembedded ON notes (workspace, id) WHERE embedded = 0;
    CREATE TABLE note_chunks (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        workspace TEXT NOT NULL, note_id TEXT NOT NULL, chunk INTEGER NOT NULL, section TEXT NOT NULL,
        digest TEXT NOT NULL, vector BLOB NOT NULL
    );
    CREATE INDEX note_chunks_by_note ON note_chunks (workspace, note_id);
    CREATE INDEX note_chunks_by_seq ON note_chunks (workspace, seq);
    CREATE TABLE vector_models (workspace TEXT PRIMARY KEY, model TEXT NOT NULL) WITHOUT ROWID
    """,
    # Rule 11: the attachment files. Nothing is emptied: a process's first call lists every directory
    # (Rule 2's full verification), which fills the table.
    """
    CREATE TABLE attachments (
        workspace TEXT NOT NULL, path TEXT NOT NULL, dir TEXT NOT NULL,
        path_key TEXT NOT NULL, name_key TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
        PRIMARY KEY (workspace, path)
    ) WITHOUT ROWID;
    CREATE INDEX attachments_by_dir ON attachments (workspace, dir);
    CREATE INDEX attachments_by_name_key ON attachments (workspace, name_key, path_key)
    """,
)

_WATCH_MASK = (
    inotify_simple.flags.CREATE
    | inotify_simple.flags.DELETE
    | inotify_simple.flags.MOVED_FROM
    | inotify_simple.flags.MOVED_TO
    | inotify_simple.flags.MODIFY
    | inotify_simple.flags.CLOSE_WRITE
    | inotify_simple.flags.ATTRIB
    | inotify_simple.flags.ONLYDIR
    | inotify_simple.flags.EXCL_UNLINK
)
_REMOVED = inotify_simple.flags.DELETE | inotify_simple.flags.MOVED_FROM
_STRUCTURAL = (
    inotify_simple.flags.CREATE
    | inotify_simple.flags.DELETE
    | inotify_simple.flags.MOVED_FROM
    | inotify_simple.flags.MOVED_TO
)
NOTE_COLUMNS = "n.id, n.title, n.dev, n.ino, n.size, n.mtime_ns, n.settled"


class _LoadedLookup(MappedVault):
    """`links.VaultLookup` over every note of a workspace at once: for a pass that resolves many
    names (a first build), one read of the keys instead of a query per name."""

    def __init__(self, db: sqlite3.Connection, workspace: str) -> None:
        paths, names = id_keyed(
            db.execute(
                "SELECT id, path_key, name_key FROM notes WHERE workspace = ? ORDER BY id", (workspace,)
            )
        )
        aliases: dict[str, list[str]] = {}
        for note_id, key in db.execute(
            "SELECT note_id, alias_key FROM note_aliases WHERE workspace = ?", (workspace,)
        ):
            aliases.setdefault(key, []).append(note_id)
        super().__init__(paths, names, aliases)


class _PlannedVault(MappedVault):
    """`links.VaultLookup` over the notes a first build is about to read, by path and name only (Rule
    6): what lets a first build store each link resolved as it reads it. Aliases are only known once
    every note is read, so it has none: a link it leaves unresolved is resolved again at the end."""

    def __init__(self, note_ids: Iterable[str]) -> None:
        self.ids = frozenset(note_ids)
        super().__init__(*id_keyed((i, note_key(i), name_key(i)) for i in sorted(self.ids)), {})


def same_file(root: WorkspaceRoot, note_id: str, identity: FileIdentity | None) -> bool:
    """Whether `note_id` is still the file `identity` describes (None: any file)."""
    try:
        found = root.stat_note(note_id).identity
    except FsError:
        return False
    return identity is None or found == identity


def _is_note_path(path: str) -> bool:
    try:
        parts = split_relative(path)
    except PathRejected:
        return False
    return not any(p.startswith(".") for p in parts) and parts[-1].lower().endswith(NOTE_SUFFIXES)


def _is_attachment_path(path: str) -> bool:
    """Rule 11: a path the attachments table may hold (`notes.attachments` Rule 1)."""
    try:
        parts = split_relative(path)
    except PathRejected:
        return False
    return not any(p.startswith(".") for p in parts) and is_attachment(parts[-1])


_LISTED_SUFFIXES = (*NOTE_SUFFIXES, *ATTACHMENT_SUFFIXES)
"""What a listing keeps: notes and attachments (Rule 11)."""


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


class IndexLookup(MemoLookup):
    """`links.VaultLookup` over the index, remembering answers for one resolution pass."""

    def __init__(self, db: sqlite3.Connection, workspace: str) -> None:
        super().__init__()
        self._db, self._workspace = db, workspace

    def _path(self, key: str) -> str | None:
        row = self._db.execute(  # a path's name is its last component: one index serves both
            "SELECT min(id) FROM notes INDEXED BY notes_by_name_key WHERE workspace = ? AND name_key = ? "
            "AND path_key = ?",
            (self._workspace, key.rsplit("/", 1)[-1], key),
        ).fetchone()
        return row[0]  # type: ignore[no-any-return]

    def _names_of(self, key: str) -> list[str]:
        rows = self._db.execute(
            "SELECT id FROM notes WHERE workspace = ? AND name_key = ?", (self._workspace, key)
        )
        return [r[0] for r in rows]

    def _aliased(self, key: str) -> list[str]:
        rows = self._db.execute(
            "SELECT note_id FROM note_aliases WHERE workspace = ? AND alias_key = ?", (self._workspace, key)
        )
        return [r[0] for r in rows]


@dataclass(frozen=True, slots=True)
class IndexedNote:
    id: str
    title: str
    identity: FileIdentity
    settled: bool
    snippet: str = ""
    score: float = 0.0
    aliases: tuple[str, ...] = ()
    """Filled by `titled` and `search` only (the candidate rule and the ranking need them)."""
    rowid: int = 0
    """The row's id in `notes` (and its full-text tables); filled by `search` only."""

    @classmethod
    def of(cls, row: Sequence[Any], snippet: str = "", score: float = 0.0, rowid: int = 0) -> IndexedNote:
        identity = FileIdentity(row[2], row[3], row[5], row[4])
        return cls(row[0], row[1], identity, bool(row[6]), snippet, score, rowid=rowid)


def _resolve_inotify_libc() -> None:
    """inotify_simple finds libc lazily with `ctypes.util.find_library`, which runs `ldconfig` or a
    compiler with temporary files: the sandbox (scope.sandbox) allows neither, and every watcher
    created after it is applied would fail, leaving the index on directory stamps (each call then
    re-lists a changed directory: O(notes) after every delete). Resolve it now, at import, which
    `notewarden serve` does before it confines the process."""
    with suppress(OSError):
        inotify_simple.INotify().close()


_resolve_inotify_libc()


@dataclass
class _Watcher:
    inotify: inotify_simple.INotify
    dirs: dict[int, str] = field(default_factory=dict)

    def close(self) -> None:
        with suppress(OSError):
            self.inotify.close()


@dataclass
class _Live:
    """What this process knows about one workspace beyond the database."""

    synced: bool = False
    watcher: _Watcher | None = None
    last_verify: float = 0.0
    settle_after_ns: int = 0
    """Rule 3: when the last unsettled note this process indexed leaves the racy window (0: none)."""
    track_changes: bool = True
    """Rule 7: False during a workspace's first build."""


class IndexRefresh:
    """The index's database and what keeps it current (module rules); `NoteIndex` adds the queries."""

    def __init__(
        self, path: Path | str = ":memory:", *, watch: bool = True, verify_interval: float = 60.0
    ) -> None:
        self._lock = threading.RLock()
        self._watch = watch
        self._verify_interval = verify_interval
        self._live: dict[str, _Live] = {}
        self._dirty: set[tuple[str, str]] = set()
        """(workspace, name key): links to resolve again before the write transaction commits (Rule 6)."""
        self._defer_links = False
        """During a first full walk: links resolved and tags counted once, at its end."""
        self._planned: _PlannedVault | None = None
        """During a first build's reads: the notes it reads, which resolve links as they are stored."""
        self._recount: set[str] = set()
        self._pending_tags: list[tuple[str, str, str, str]] = []
        self._pending_links: list[tuple[Any, ...]] = []
        """Rows of `_store_facts` not yet written: `_flush_facts` writes them before the transaction ends
        and before anything deletes or reads facts."""
        self.vectors_gone: Callable[[str, str], None] | None = None
        """Told of each note that leaves the index (Rule 10)."""
        self.changes_seen: Callable[[str, list[tuple[str, bool, str | None]]], None] | None = None
        """Told, after a refresh of a workspace already indexed, of the notes it found changed
        (id, whether it appeared or went, its identity's fingerprint or None when it went): for live
        changes (`notes.live`). Never of a write told through `note_changed`, nor of a first build."""
        self._seen: list[tuple[str, bool, str | None]] | None = None
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.execute("PRAGMA busy_timeout = 30000")
        # SQLite's temporary files (sorts, statement journals) go to /tmp or /var/tmp, which the
        # sandbox forbids: a large index build then failed with "unable to open database file".
        self._db.execute("PRAGMA temp_store = MEMORY")
        # A 100k-note workspace's build with links (300k link rows, resolved in a second pass) ran
        # 53 s on the default 2 MiB page cache and 41 s on this one (the build without links: 21 s)
        self._db.execute("PRAGMA cache_size = -131072")  # KiB: at most 128 MiB, used as it fills
        apply_migrations(self._db, "notes_index", INDEX_MIGRATIONS)
        (self._stale,) = self._db.execute("SELECT count(*) FROM fts_stale").fetchone()

    def close(self) -> None:
        with self._lock:
            for live in self._live.values():
                if live.watcher is not None:
                    live.watcher.close()
            self._live.clear()
            self._db.close()

    @property
    def watching(self) -> bool:
        return self._watch

    # Write-through from this server's own changes

    def note_changed(self, workspace: str, root: WorkspaceRoot, *note_ids: str) -> None:
        """Re-read (or drop) these notes now: a tool changed them and the next call must see it."""
        with self._lock, self._write():
            for note_id in note_ids:
                self._index_file(workspace, root, note_id)

    def note_trashed(self, workspace: str, note_id: str) -> None:
        """Drop a note a tool has just moved to the trash, without looking for it again: the tool
        holds the workspace lock and renamed the very file. A file created under that name since is
        an event of its own, read by the next refresh (Rule 2). No `gone_notes` row: the trash's
        own row says when the note went (`FilesNoteStore.recent`), until the trash is emptied
        (`remember_gone` then)."""
        with self._lock, self._write():
            self._forget_note(workspace, note_id, gone=False)

    def remember_gone(self, workspace: str, notes: Sequence[tuple[str, str, int]]) -> None:
        """Rule 7 for notes that went earlier, by (id, title, when): entries purged from the trash.
        Their inodes are not kept: a file that has left the trash cannot come back as a move."""
        with self._lock, self._write():
            self._remember_gone(workspace, [(note_id, title, at_ns, 0, 0) for note_id, title, at_ns in notes])

    # Freshness (Rule 2)

    def refresh(self, workspace: str, root: WorkspaceRoot, progress: ProgressSink | None = None) -> None:
        seen: list[tuple[str, bool, str | None]] = []
        with self._lock:
            known = self._live.get(workspace)
            watched = self.changes_seen is not None and known is not None and known.synced
            self._seen = seen if watched else None
            try:
                self._refresh(workspace, root, progress)
            finally:
                self._seen = None
        if seen and self.changes_seen is not None:
            self.changes_seen(workspace, seen)

    def _refresh(self, workspace: str, root: WorkspaceRoot, progress: ProgressSink | None) -> None:
        with self._lock:
            live = self._live_state(workspace, root)
            now = time.monotonic()
            if not live.synced:
                if self._watch and live.watcher is None:
                    live.watcher = self._new_watcher(workspace)
                self._defer_links = True  # resolve each link once, after every note is in (Rule 6)
                try:
                    self._walk(workspace, root, live, full=True, progress=progress)
                finally:
                    self._defer_links = False
                with self._write():  # resolves what the walk left dirty
                    self._recount_tags(workspace)
                    self._db.execute(
                        "DELETE FROM gone_notes WHERE workspace = ? AND gone_ns < ?",
                        (workspace, time.time_ns() - GONE_KEPT_NS),
                    )
                live.synced, live.last_verify, live.track_changes = True, now, True
            elif live.watcher is not None:
                self._drain(workspace, root, live, progress)
            else:
                full = now - live.last_verify >= self._verify_interval
                self._walk(workspace, root, live, full=full, progress=progress)
                if full:
                    live.last_verify = now
            if live.settle_after_ns and time.time_ns() > live.settle_after_ns:
                self._settle(workspace, root, live, progress)

    def _settle(
        self, workspace: str, root: WorkspaceRoot, live: _Live, progress: ProgressSink | None
    ) -> None:
        """Rule 3: re-read every unsettled note of the workspace, now that its window has passed."""
        live.settle_after_ns = 0  # a note that is racy again sets it anew
        unsettled = self._db.execute(
            f"SELECT {NOTE_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.settled = 0 ORDER BY n.id",
            (workspace,),
        )
        self._read_files(workspace, root, [(r[0], IndexedNote.of(r)) for r in unsettled], progress)

    def _live_state(self, workspace: str, root: WorkspaceRoot) -> _Live:
        live = self._live.setdefault(workspace, _Live())
        dev, ino = root.identity
        row = self._db.execute("SELECT dev, ino FROM workspaces WHERE workspace = ?", (workspace,)).fetchone()
        if row is None or tuple(row) != (dev, ino):
            with self._write():
                if row is not None:
                    logger.warning(
                        "workspace folder was replaced; re-indexing", extra={"workspace": workspace}
                    )
                    self._forget_subtree(workspace, "")
                self._db.execute(
                    "INSERT INTO workspaces (workspace, dev, ino) VALUES (?, ?, ?) ON CONFLICT (workspace) "
                    "DO UPDATE SET dev = excluded.dev, ino = excluded.ino",
                    (workspace, dev, ino),
                )
            live.synced = live.track_changes = False
        return live

    def _new_watcher(self, workspace: str) -> _Watcher | None:
        try:
            return _Watcher(inotify_simple.INotify(nonblocking=True))
        except OSError as exc:
            logger.warning(
                "inotify unavailable; falling back to directory stamps",
                extra={"workspace": workspace, "reason": str(exc)},
            )
            return None

    def _watch_callback(self, workspace: str, live: _Live, path: str) -> Callable[[str], object] | None:
        watcher = live.watcher
        if watcher is None:
            return None

        def add(fd_path: str) -> None:
            if live.watcher is None:
                return
            try:
                wd = watcher.inotify.add_watch(fd_path, _WATCH_MASK)
            except OSError as exc:
                logger.warning(
                    "inotify watch refused (limit reached?); falling back to directory stamps",
                    extra={"workspace": workspace, "reason": str(exc)},
                )
                watcher.close()
                live.watcher = None
                return
            watcher.dirs[wd] = path

        return add

    def _drain(self, workspace: str, root: WorkspaceRoot, live: _Live, progress: ProgressSink | None) -> None:
        assert live.watcher is not None
        watcher = live.watcher
        dirty_dirs: set[str] = set()
        dirty_files: set[str] = set()
        dirty_attachments: set[str] = set()  # written in place (Rule 11)
        may_exist: set[str] = set()  # names with an event other than a removal
        # One read takes every event queued when the call began (the size FIONREAD reports); later
        # ones are the next call's.
        for event in watcher.inotify.read(timeout=0):
            if event.mask & inotify_simple.flags.Q_OVERFLOW:
                logger.warning("inotify queue overflowed; verifying the whole workspace")
                self._walk(workspace, root, live, full=True, progress=progress)
                live.last_verify = time.monotonic()
                return
            if event.mask & inotify_simple.flags.IGNORED:
                watcher.dirs.pop(event.wd, None)
                continue
            directory = watcher.dirs.get(event.wd)
            if directory is None or not event.name:
                continue
            child = f"{directory}/{event.name}" if directory else event.name
            if event.mask & inotify_simple.flags.ISDIR and event.mask & _STRUCTURAL:
                dirty_dirs.add(directory)
            elif _is_note_path(child):
                dirty_files.add(child)
                if not event.mask & _REMOVED:
                    may_exist.add(child)
            elif not event.mask & _STRUCTURAL and _is_attachment_path(child):
                dirty_attachments.add(child)
            elif event.mask & _STRUCTURAL and not event.name.startswith("."):
                dirty_dirs.add(directory)  # maybe a symlink: a listing reports it as skipped (Rule 8)
        if dirty_dirs:
            self._walk(workspace, root, live, full=False, only=sorted(dirty_dirs), progress=progress)
        if dirty_attachments:
            self._restat_attachments(workspace, root, sorted(dirty_attachments))
        # A name with no file and no row is already what the index says: typically the previous
        # delete's own rename, whose write-through dropped the row. Re-reading it would find nothing
        # and drop nothing, but open a write transaction; a file created there later is an event of
        # its own, read by the next drain. A name whose only events are removals has no file to
        # look for: one created there after them would have an event of its own in this read or
        # the next.
        present = {n: n in may_exist and same_file(root, n, None) for n in dirty_files}
        changed = [n for n in dirty_files if present[n] or self._has_row(workspace, n)]
        if changed:
            with self._write():  # a rename's old name first, so that its new name is seen as a move (Rule 7)
                for note_id in sorted(changed, key=lambda n: (present[n], n)):
                    self._index_file(workspace, root, note_id)

    def _restat_attachments(self, workspace: str, root: WorkspaceRoot, paths: Sequence[str]) -> None:
        """Rule 11: attachments written in place, `lstat`ed again (one that is no longer a regular
        file of the workspace's mount leaves the table); only those the table already holds."""
        with self._write():
            for path in paths:
                known = self._db.execute(
                    "SELECT size, mtime_ns FROM attachments WHERE workspace = ? AND path = ?",
                    (workspace, path),
                ).fetchone()
                if known is None:
                    continue  # a listing finds it (its creation was an event of its own)
                try:
                    identity = root.stat_note(path).identity
                except FsError:
                    self._db.execute(
                        "DELETE FROM attachments WHERE workspace = ? AND path = ?", (workspace, path)
                    )
                    continue
                if (identity.size, identity.mtime_ns) != tuple(known):
                    self._db.execute(
                        "UPDATE attachments SET size = ?, mtime_ns = ? WHERE workspace = ? AND path = ?",
                        (identity.size, identity.mtime_ns, workspace, path),
                    )

    def _has_row(self, workspace: str, note_id: str) -> bool:
        row = self._db.execute("SELECT 1 FROM notes WHERE workspace = ? AND id = ?", (workspace, note_id))
        return row.fetchone() is not None

    def _walk(
        self,
        workspace: str,
        root: WorkspaceRoot,
        live: _Live,
        *,
        full: bool,
        only: Iterable[str] | None = None,
        progress: ProgressSink | None = None,
    ) -> None:
        """Reconcile directories with the index: every one (`full`), those whose stamp changed, or
        `only` these (then also any new directory found below them); then read changed files."""
        queue: list[tuple[str, DirStamp | None, bool]] = (
            [(d, None, True) for d in only] if only is not None else [("", None, full)]
        )
        to_read: list[tuple[str, IndexedNote | None]] = []
        started = time.time_ns()
        with self._write():
            while queue:
                path, stamp, relist = queue.pop()
                known = self._db.execute(
                    "SELECT ino, mtime_ns FROM dirs WHERE workspace = ? AND path = ?", (workspace, path)
                ).fetchone()
                if not relist:
                    if stamp is None:
                        try:
                            stamp = root.dir_stamp(split_dir(path))
                        except FsError:
                            self._forget_subtree(workspace, path)
                            continue
                    if known is not None and DirStamp(*known) == stamp:
                        children = self._db.execute(
                            "SELECT path FROM dirs WHERE workspace = ? AND parent = ?", (workspace, path)
                        )
                        queue.extend((c, None, False) for (c,) in children.fetchall())
                        continue
                try:
                    listing = root.list_dir(
                        split_dir(path), _LISTED_SUFFIXES, watch=self._watch_callback(workspace, live, path)
                    )
                except FsError:
                    self._forget_subtree(workspace, path)
                    continue
                to_read += self._reconcile(workspace, listing, started)
                known_children = {
                    c
                    for (c,) in self._db.execute(
                        "SELECT path FROM dirs WHERE workspace = ? AND parent = ?", (workspace, path)
                    )
                }
                for child, child_stamp in listing.subdirs:
                    if full or child not in known_children:
                        queue.append((child, child_stamp, True))
                    elif only is None:
                        queue.append((child, child_stamp, False))
                for gone in known_children - {c for c, _ in listing.subdirs}:
                    self._forget_subtree(workspace, gone)
        if (
            not self._defer_links
            or self._db.execute("SELECT 1 FROM notes WHERE workspace = ? LIMIT 1", (workspace,)).fetchone()
        ):
            self._read_files(workspace, root, to_read, progress)
            return
        self._planned = _PlannedVault(note_id for note_id, _ in to_read)  # a first build (Rule 6)
        try:
            self._read_files(workspace, root, to_read, progress, batch=FIRST_BUILD_BATCH)
        finally:
            self._planned = None

    def _reconcile(
        self, workspace: str, listing: DirListing, started_ns: int
    ) -> list[tuple[str, IndexedNote | None]]:
        """Record one directory listing; returns the notes in it that must be (re-)read, each with
        its row (None for a new note)."""
        path = listing.path
        racy = listing.stamp.mtime_ns >= started_ns - RACY_WINDOW_NS
        self._db.execute(
            "INSERT INTO dirs (workspace, path, parent, ino, mtime_ns) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (workspace, path) DO UPDATE SET ino = excluded.ino, mtime_ns = excluded.mtime_ns",
            (
                workspace,
                path,
                _parent(path) if path else None,
                listing.stamp.ino,
                0 if racy else listing.stamp.mtime_ns,
            ),
        )
        known = {
            r[0]: IndexedNote.of(r)
            for r in self._db.execute(
                f"SELECT {NOTE_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.dir = ?", (workspace, path)
            )
        }
        listed = {entry.path: entry for entry in listing.notes if entry.path.lower().endswith(NOTE_SUFFIXES)}
        self._reconcile_attachments(workspace, listing)
        for gone in known.keys() - listed.keys():
            self._forget_note(workspace, gone)
        self._db.execute("DELETE FROM skipped WHERE workspace = ? AND dir = ?", (workspace, path))
        self._db.executemany(
            "INSERT INTO skipped (workspace, path, dir, reason) VALUES (?, ?, ?, ?)",
            [(workspace, skipped, path, reason) for skipped, reason in listing.skipped],
        )
        return [
            (note_id, old)
            for note_id, entry in listed.items()
            if (old := known.get(note_id)) is None or old.identity != entry.identity or not old.settled
        ]

    def _reconcile_attachments(self, workspace: str, listing: DirListing) -> None:
        """Rule 11: the attachments of one directory listing, as it found them."""
        path = listing.path
        files = {
            e.path: e.identity
            for e in listing.notes
            if not e.path.lower().endswith(NOTE_SUFFIXES) and is_attachment(e.path)
        }
        known = {
            r[0]: (r[1], r[2])
            for r in self._db.execute(
                "SELECT path, size, mtime_ns FROM attachments WHERE workspace = ? AND dir = ?",
                (workspace, path),
            )
        }
        self._db.executemany(
            "DELETE FROM attachments WHERE workspace = ? AND path = ?",
            [(workspace, gone) for gone in known.keys() - files.keys()],
        )
        self._db.executemany(
            "INSERT INTO attachments (workspace, path, dir, path_key, name_key, size, mtime_ns) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace, path) DO UPDATE SET size = excluded.size, "
            "mtime_ns = excluded.mtime_ns",
            [
                (workspace, file, path, note_key(file), name_key(file), identity.size, identity.mtime_ns)
                for file, identity in files.items()
                if known.get(file) != (identity.size, identity.mtime_ns)
            ],
        )

    def _read_files(
        self,
        workspace: str,
        root: WorkspaceRoot,
        notes: Sequence[tuple[str, IndexedNote | None]],
        progress: ProgressSink | None,
        *,
        batch: int = BATCH,
    ) -> None:
        """Index `notes`, `batch` per transaction, telling `progress` every `BATCH` notes; when the full
        text of `BATCH` notes or more was written, merge it (Rule 9)."""
        total, written = len(notes), 0
        for start in range(0, total, batch):
            with self._write():
                for step in range(start, min(start + batch, total), BATCH):
                    for note_id, known in notes[step : step + BATCH]:
                        written += self._index_file(workspace, root, note_id, known)
                    if progress is not None and total > BATCH:
                        done = min(step + BATCH, total)
                        progress(done, total, f"indexed {done} of {total} changed notes")
        if written >= BATCH:
            self._merge_full_text()

    def _merge_full_text(self) -> None:
        """Rule 9: each full-text table merged into one segment, after a pass that wrote many notes."""
        with self._write():
            for table in ("notes_text", "notes_titles"):
                self._db.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")

    def _index_file(
        self,
        workspace: str,
        root: WorkspaceRoot,
        note_id: str,
        known: IndexedNote | EllipsisType | None = ...,
    ) -> bool:
        """Re-read one note into the index, or drop it when it is no longer a readable note; True
        when it wrote the note's full text.

        `known`: the note's row as the caller read it (None: it has none); `...`: look it up."""
        if not _is_note_path(note_id):
            self._forget_note(workspace, note_id)
            return False
        started = time.time_ns()
        try:
            data, identity = root.read_head(note_id, INDEX_BODY_BYTES)
        except FsError:
            self._forget_note(workspace, note_id)
            return False
        body = data.decode("utf-8", errors="replace")
        settled = identity.mtime_ns < started - RACY_WINDOW_NS
        if not settled and (live := self._live.get(workspace)) is not None:
            live.settle_after_ns = max(live.settle_after_ns, identity.mtime_ns + RACY_WINDOW_NS)
        if known is ...:
            row = self._db.execute(
                f"SELECT {NOTE_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.id = ?", (workspace, note_id)
            ).fetchone()
            known = IndexedNote.of(row) if row else None
        if known is not None and known.identity == identity and self._body(workspace, note_id) == body:
            # Re-read, unchanged (a racy row settling): no parse, no full-text churn.
            if known.settled != settled:
                self._db.execute(
                    "UPDATE notes SET settled = ? WHERE workspace = ? AND id = ?",
                    (int(settled), workspace, note_id),
                )
            return False
        facts = parse_note(body, note_stem(note_id), with_headings=False)
        title = facts.title
        change, changed_ns, previous = self._change_of(workspace, note_id, identity, known)
        properties = None if facts.properties is None else json.dumps(facts.properties, ensure_ascii=False)
        (rowid,) = self._db.execute(
            "INSERT INTO notes (workspace, id, dir, title, dev, ino, size, mtime_ns, settled, path_key, "
            "name_key, properties, property_error, change, changed_ns, previous) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace, id) DO UPDATE SET "
            "title = excluded.title, dev = excluded.dev, ino = excluded.ino, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns, settled = excluded.settled, properties = excluded.properties, "
            "property_error = excluded.property_error, change = excluded.change, "
            "changed_ns = excluded.changed_ns, previous = excluded.previous, embedded = 0 RETURNING rowid",
            (
                workspace,
                note_id,
                _parent(note_id),
                title,
                identity.dev,
                identity.ino,
                identity.size,
                identity.mtime_ns,
                int(settled),
                note_key(note_id),
                name_key(note_id),
                properties,
                facts.property_error,
                change,
                changed_ns,
                previous,
            ),
        ).fetchone()
        self._db.execute("DELETE FROM notes_text WHERE rowid = ?", (rowid,))
        self._db.execute("DELETE FROM notes_titles WHERE rowid = ?", (rowid,))
        self._db.execute(
            "INSERT INTO notes_text (rowid, title, path, body) VALUES (?, ?, ?, ?)",
            (rowid, title, note_id, body),
        )
        self._db.execute(
            "INSERT INTO notes_titles (rowid, title, names) VALUES (?, ?, ?)",
            (rowid, title, "\n".join((note_stem(note_id), *facts.aliases))),
        )
        self._store_facts(workspace, note_id, facts, body, fresh=known is None)
        if self._seen is not None:
            self._seen.append((note_id, known is None, NoteIdentity.of_file(identity).fingerprint()))
        return True

    def _change_of(
        self, workspace: str, note_id: str, identity: FileIdentity, known: IndexedNote | None
    ) -> tuple[str | None, int, str | None]:
        """Rule 7: (kind, when, previous id) of this note's change; kind None during a first build."""
        live = self._live.get(workspace)
        if live is None or not live.track_changes:
            return None, identity.mtime_ns, None
        if known is not None:
            return "modified", identity.mtime_ns, None
        self._db.execute("DELETE FROM gone_notes WHERE workspace = ? AND note_id = ?", (workspace, note_id))
        row = self._db.execute(
            "DELETE FROM gone_notes INDEXED BY gone_notes_by_inode WHERE workspace = ? AND ino = ? AND dev = ? "
            "AND gone_ns >= ? RETURNING note_id",
            (workspace, identity.ino, identity.dev, time.time_ns() - MOVE_WINDOW_NS),
        ).fetchone()
        if row is not None:
            return "moved", time.time_ns(), row[0]
        return "created", identity.mtime_ns, None

    def _store_facts(self, workspace: str, note_id: str, facts: NoteFacts, body: str, *, fresh: bool) -> None:
        """Rule 6: the note's tags, aliases and links, replacing what it had."""
        db = self._db
        if not fresh:
            self._forget_facts(workspace, note_id)
        tags: dict[str, str] = {}
        for tag in facts.tags:
            tags.setdefault(tag_key(tag.name), tag.name)
        if tags:
            self._pending_tags += [(workspace, note_id, key, name) for key, name in tags.items()]
            self._count_tags(workspace, tags)
        aliases = {fold(a): a for a in facts.aliases}
        if aliases:
            db.executemany(
                "INSERT INTO note_aliases (workspace, note_id, alias_key, alias) VALUES (?, ?, ?, ?)",
                [(workspace, note_id, key, alias) for key, alias in aliases.items()],
            )
        planned = self._planned
        if planned is None or note_id not in planned.ids:
            self._dirty.add((workspace, name_key(note_id)))
        self._dirty.update((workspace, key) for key in aliases)
        rows = self._pending_links
        for seq, link in enumerate(facts.links):
            key = name_key(link.path.rstrip("/")) if link.path else ""
            target: str | None = note_id if not link.path else None
            via: str | None = "self" if not link.path else None
            if link.path and planned is not None:
                found = resolve_path(link.path, link.style, note_id, planned)
                target, via = found.target, found.via
            if target is None:
                self._dirty.add((workspace, key))
            written = body[link.span[0] : link.span[1]]
            rows.append(
                (
                    workspace,
                    note_id,
                    seq,
                    link.line,
                    link.style,
                    int(link.embed),
                    link.path,
                    link.anchor,
                    written,
                    context_line(body, link.span[0]),
                    key,
                    target,
                    via,
                )
            )

    def _flush_facts(self) -> None:
        """Write the tag and link rows `_store_facts` gathered: one statement each per transaction,
        not per note (a first build of 10,000 notes made 20,000 calls)."""
        tags, self._pending_tags = self._pending_tags, []
        links, self._pending_links = self._pending_links, []
        if tags:
            self._db.executemany(
                "INSERT INTO note_tags (workspace, note_id, tag, name) VALUES (?, ?, ?, ?)", tags
            )
        if links:
            self._db.executemany(
                "INSERT INTO note_links (workspace, note_id, seq, line, style, embed, path, anchor, written, "
                "context, name_key, target, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                links,
            )

    def _forget_facts(self, workspace: str, note_id: str) -> None:
        self._flush_facts()
        db = self._db
        gone_tags = db.execute(
            "DELETE FROM note_tags WHERE workspace = ? AND note_id = ? RETURNING tag", (workspace, note_id)
        ).fetchall()
        self._uncount_tags(workspace, [t for (t,) in gone_tags])
        for (alias,) in db.execute(
            "DELETE FROM note_aliases WHERE workspace = ? AND note_id = ? RETURNING alias_key",
            (workspace, note_id),
        ).fetchall():
            self._dirty.add((workspace, alias))
        db.execute("DELETE FROM note_links WHERE workspace = ? AND note_id = ?", (workspace, note_id))

    def _count_tags(self, workspace: str, tags: dict[str, str]) -> None:
        """Keep `tag_counts` current: one upsert per tag, or one recount after a first build."""
        if self._defer_links:
            self._recount.add(workspace)
            return
        self._db.executemany(
            "INSERT INTO tag_counts (workspace, tag, name, notes) VALUES (?, ?, ?, 1) "
            "ON CONFLICT (workspace, tag) DO UPDATE SET notes = notes + 1, name = min(name, excluded.name)",
            [(workspace, key, name) for key, name in tags.items()],
        )

    def _recount_tags(self, workspace: str) -> None:
        if workspace in self._recount:
            self._recount.discard(workspace)
            self._db.execute("DELETE FROM tag_counts WHERE workspace = ?", (workspace,))
            self._db.execute(
                "INSERT INTO tag_counts (workspace, tag, name, notes) SELECT workspace, tag, min(name), count(*) "
                "FROM note_tags WHERE workspace = ? GROUP BY tag",
                (workspace,),
            )

    def _uncount_tags(self, workspace: str, tags: Sequence[str]) -> None:
        if self._defer_links and tags:
            self._recount.add(workspace)
        elif tags:
            self._db.executemany(
                "UPDATE tag_counts SET notes = notes - 1 WHERE workspace = ? AND tag = ?",
                [(workspace, t) for t in tags],
            )
            self._db.execute("DELETE FROM tag_counts WHERE workspace = ? AND notes <= 0", (workspace,))

    def _resolve_dirty(self) -> None:
        """Rule 6: resolve again every link whose name key a note gained or lost."""
        dirty, self._dirty = self._dirty, set()
        by_workspace: dict[str, list[str]] = {}
        for workspace, key in dirty:
            by_workspace.setdefault(workspace, []).append(key)
        for workspace, keys in by_workspace.items():
            lookup = (
                IndexLookup(self._db, workspace) if len(keys) <= BATCH else _LoadedLookup(self._db, workspace)
            )
            for start in range(0, len(keys), BATCH):
                chunk = keys[start : start + BATCH]
                rows = self._db.execute(
                    "SELECT note_id, seq, path, style, target, via FROM note_links INDEXED BY note_links_by_name "
                    "WHERE workspace = ? "
                    f"AND name_key IN ({', '.join('?' * len(chunk))}) AND path != ''",
                    (workspace, *chunk),
                ).fetchall()
                updates = []
                for note_id, seq, path, style, target, via in rows:
                    found = resolve_path(path, style, note_id, lookup)
                    if (found.target, found.via) != (target, via):
                        updates.append((found.target, found.via, workspace, note_id, seq))
                self._db.executemany(
                    "UPDATE note_links SET target = ?, via = ? WHERE workspace = ? AND note_id = ? AND seq = ?",
                    updates,
                )

    def _body(self, workspace: str, note_id: str) -> str | None:
        row = self._db.execute(
            "SELECT t.body FROM notes n JOIN notes_text t ON t.rowid = n.rowid WHERE n.workspace = ? AND n.id = ?",
            (workspace, note_id),
        ).fetchone()
        return None if row is None else str(row[0])

    def _forget_note(self, workspace: str, note_id: str, *, gone: bool = True) -> None:
        """Drop a note; `gone`: remember that it went (Rule 7), unless it was renamed."""
        row = self._db.execute(
            "DELETE FROM notes WHERE workspace = ? AND id = ? RETURNING rowid, title, dev, ino",
            (workspace, note_id),
        ).fetchone()
        if row is None:
            if self._planned is not None:  # links may already be stored resolved to it (Rule 6)
                self._dirty.add((workspace, name_key(note_id)))
            return
        self._forget_text([(row[0],)])
        self._forget_facts(workspace, note_id)
        if self._seen is not None:
            self._seen.append((note_id, True, None))
        self._db.execute("DELETE FROM note_chunks WHERE workspace = ? AND note_id = ?", (workspace, note_id))
        self._vectors_gone(workspace, note_id)
        self._dirty.add((workspace, name_key(note_id)))
        live = self._live.get(workspace)
        if gone and live is not None and live.track_changes:
            self._remember_gone(workspace, [(note_id, row[1], time.time_ns(), row[2], row[3])])

    def _remember_gone(self, workspace: str, notes: Sequence[tuple[str, str, int, int, int]]) -> None:
        """Rows of (id, title, gone_ns, dev, ino)."""
        self._db.executemany(
            "INSERT OR REPLACE INTO gone_notes (workspace, note_id, title, gone_ns, dev, ino) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(workspace, *note) for note in notes],
        )

    def _forget_subtree(self, workspace: str, path: str) -> None:
        """Drop a directory (`""`: the whole workspace) and everything below it, and its watches."""
        self._flush_facts()
        within, bounds = prefix_range("id", path)
        dir_within, dir_bounds = prefix_range("path", path)
        note_within, note_bounds = prefix_range("note_id", path)
        removed = self._db.execute(
            f"DELETE FROM notes WHERE workspace = ?{within or ''} RETURNING rowid, id, title, dev, ino",
            (workspace, *bounds),
        ).fetchall()
        self._forget_text([(r[0],) for r in removed])
        tags = self._db.execute(
            f"DELETE FROM note_tags WHERE workspace = ?{note_within} RETURNING tag", (workspace, *note_bounds)
        ).fetchall()
        self._uncount_tags(workspace, [t for (t,) in tags])
        aliases = self._db.execute(
            f"DELETE FROM note_aliases WHERE workspace = ?{note_within} RETURNING alias_key",
            (workspace, *note_bounds),
        ).fetchall()
        self._db.execute(
            f"DELETE FROM note_links WHERE workspace = ?{note_within}", (workspace, *note_bounds)
        )
        self._db.execute(
            f"DELETE FROM note_chunks WHERE workspace = ?{note_within}", (workspace, *note_bounds)
        )
        for _, note_id, *_ in removed:
            self._vectors_gone(workspace, note_id)
            if self._seen is not None:
                self._seen.append((note_id, True, None))
        self._dirty.update(
            (workspace, k) for k in [*(a for (a,) in aliases), *(name_key(r[1]) for r in removed)]
        )
        live = self._live.get(workspace)
        if path and live is not None and live.track_changes:
            now = time.time_ns()
            self._remember_gone(workspace, [(r[1], r[2], now, r[3], r[4]) for r in removed])
        if path:
            self._db.execute("DELETE FROM dirs WHERE workspace = ? AND path = ?", (workspace, path))
        self._db.execute(f"DELETE FROM dirs WHERE workspace = ?{dir_within}", (workspace, *dir_bounds))
        self._db.execute(f"DELETE FROM skipped WHERE workspace = ?{dir_within}", (workspace, *dir_bounds))
        self._db.execute(f"DELETE FROM attachments WHERE workspace = ?{dir_within}", (workspace, *dir_bounds))
        watcher = live.watcher if live is not None else None
        if watcher is not None:
            below = path + "/"
            for wd, directory in list(watcher.dirs.items()):
                if not path or directory == path or directory.startswith(below):
                    del watcher.dirs[wd]
                    with suppress(OSError):
                        watcher.inotify.rm_watch(wd)

    def _vectors_gone(self, workspace: str, note_id: str) -> None:
        """A note left the index: its vectors left `note_chunks` with it (Rule 10), and leave the
        vectors held in memory (`notes.index_meaning`) through `vectors_gone`."""
        if self.vectors_gone is not None:
            self.vectors_gone(workspace, note_id)

    def _forget_text(self, rowids: Sequence[tuple[int]]) -> None:
        """Rule 5: list the full-text rows of removed notes; purge them once a batch is listed."""
        self._db.executemany("INSERT OR IGNORE INTO fts_stale (rowid) VALUES (?)", rowids)
        self._stale += len(rowids)
        if self._stale < STALE_BATCH:
            return
        stale = self._db.execute(
            "DELETE FROM fts_stale WHERE rowid NOT IN (SELECT rowid FROM notes) RETURNING rowid"
        ).fetchall()
        self._db.execute("DELETE FROM fts_stale")
        self._db.executemany("DELETE FROM notes_text WHERE rowid = ?", stale)
        self._db.executemany("DELETE FROM notes_titles WHERE rowid = ?", stale)
        self._stale = 0

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction; nested uses join the outer one."""
        if self._db.in_transaction:
            yield
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._flush_facts()
            if not self._defer_links:
                self._resolve_dirty()
        except BaseException:
            self._dirty.clear()
            self._pending_tags, self._pending_links = [], []
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
