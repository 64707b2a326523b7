"""The files store's index: SQLite FTS5 in the state directory, kept current without rescanning.

Rule 1: the files are the truth; the index is a cache. Deleting its database loses nothing: the
next call rebuilds it. It is keyed by workspace URI and by the workspace directory's inode, so a
workspace folder that is replaced is re-indexed from scratch.

Rule 2: nothing the index holds is offered unchecked. Every row a query returns (a search hit, a
delete candidate, a listed resource) is `lstat`ed through the workspace handle first: a note that
is gone is dropped from the index, one whose identity changed is re-read, and the query runs
again. So a deleted or moved note is never a candidate, whatever the change detection missed.

Rule 3: a call costs O(changes), not O(notes). Change detection, per process and workspace:

* inotify where available: one watch per directory, added on the directory's open fd
  (`/proc/self/fd/N`) before it is listed. A file event re-reads that one file; a structural
  event (a directory created, removed or renamed) re-lists the directory it happened in; a queue
  overflow triggers a full verification.
* otherwise (no inotify, or its watch limit reached): each call compares directory stamps
  (inode + mtime) with the index and re-lists only directories whose stamp changed. An edit in
  place leaves directory mtimes alone: it is found by Rule 2 when the note is a candidate, and by
  a full verification at most every `verify_interval` seconds.
* the first call of a process on a workspace runs a full verification: every directory listed
  (and watched), every file's identity compared with the index; only changed files are read.

Rule 4 (racily clean, as in git): a timestamp is only as fine as the filesystem's clock tick, so
a directory or file read within `RACY_WINDOW_NS` of its mtime could change again without its
stamp changing. Such rows are stored unsettled and are checked again on the next pass; a query
re-reads an unsettled row it returns. Once the window of every unsettled note of a workspace
has passed, the next call re-reads them all in one pass (`_settle`), so a workspace written
just before it was indexed (an import, a sync) costs one batched re-read, not a write per note
on its first lookup. A note read again unchanged only has its row marked settled.

Rule 5: full-text queries are driven by the FTS table (`CROSS JOIN` fixes the join order):
left to itself SQLite may scan every note of the workspace and probe the FTS per row, O(notes).

Rule 6: one lock serializes a process's use of the index; several processes share the database
file (WAL, `BEGIN IMMEDIATE` for writes, batches of `BATCH` files per transaction).

Rule 8: what a query matches on is stored, so a lookup stays O(changes): a note's title and
aliases (`model.extract_names`) in `notes`, and in the trigram table both its title and its other
names (file stem and aliases) for `titled` (the candidate rule, `model.matched_name`). Entries a
listing skipped on purpose (a symbolic link, another filesystem) are kept per directory in
`skipped`, so `notes_list` can say what it left out and why without listing anything again.
Version 3 of the schema added both; it empties the index (a cache: Rule 1) to rebuild it.

Rule 7: a note that goes (deleted, moved, trashed) leaves the `notes` table at once, which every
query joins, so it is never found again; its rows in the two full-text tables are only listed in
`fts_stale` and removed `STALE_BATCH` at a time, in one transaction. An FTS5 delete rewrites
several pages of each full-text table (a new segment, the structure record, the document sizes);
in a batch those writes are shared. Until a batch is purged, bm25 counts the stale rows among the
documents. A rowid that `notes` hands out again is re-indexed like any update (its full-text rows
replaced), and the purge skips a rowid that is live again.
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

from notewarden.ledger.sqlite import apply_migrations
from notewarden.notes.model import TITLE_SCAN_BYTES, extract_names, matched_name, note_stem
from notewarden.notes.store import ProgressSink
from notewarden.scope.fsroot import (
    NOTE_SUFFIXES,
    DirListing,
    DirStamp,
    FileIdentity,
    FsError,
    PathRejected,
    WorkspaceRoot,
    split_dir,
    split_relative,
)

__all__ = ["INDEX_BODY_BYTES", "IndexedNote", "NoteIndex"]

logger = logging.getLogger(__name__)

INDEX_BODY_BYTES = 1024 * 1024
"""Only the first MiB of a note is searchable; its title lives in the first 64 KiB anyway."""
RACY_WINDOW_NS = 2_000_000_000
BATCH = 500
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
    """
    DELETE FROM notes;
    DELETE FROM dirs;
    DELETE FROM workspaces;
    DELETE FROM fts_stale;
    DROP TABLE notes_text;
    DROP TABLE notes_titles;
    CREATE VIRTUAL TABLE notes_text USING fts5(title, path, body, tokenize = 'unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE notes_titles USING fts5(title, names, tokenize = 'trigram');
    ALTER TABLE notes ADD COLUMN aliases TEXT NOT NULL DEFAULT '[]';
    CREATE TABLE skipped (
        workspace TEXT NOT NULL, path TEXT NOT NULL, dir TEXT NOT NULL, reason TEXT NOT NULL,
        PRIMARY KEY (workspace, path)
    ) WITHOUT ROWID;
    CREATE INDEX skipped_by_dir ON skipped (workspace, dir)
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
_STRUCTURAL = (
    inotify_simple.flags.CREATE
    | inotify_simple.flags.DELETE
    | inotify_simple.flags.MOVED_FROM
    | inotify_simple.flags.MOVED_TO
)
_COLUMNS = "n.id, n.title, n.dev, n.ino, n.size, n.mtime_ns, n.settled, n.aliases"


def _fts_phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _is_note_path(path: str) -> bool:
    try:
        parts = split_relative(path)
    except PathRejected:
        return False
    return not any(p.startswith(".") for p in parts) and parts[-1].lower().endswith(NOTE_SUFFIXES)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _range(column: str, prefix: str) -> tuple[str, tuple[str, ...]]:
    """SQL restricting `column` to paths below directory `prefix` ("" is everything)."""
    if not prefix:
        return "", ()
    return f" AND {column} >= ? AND {column} < ?", (prefix + "/", prefix + "0")  # '0' follows '/'


@dataclass(frozen=True, slots=True)
class IndexedNote:
    id: str
    title: str
    identity: FileIdentity
    settled: bool
    aliases: tuple[str, ...] = ()
    snippet: str = ""
    score: float = 0.0

    @classmethod
    def of(cls, row: Sequence[Any], snippet: str = "", score: float = 0.0) -> IndexedNote:
        identity = FileIdentity(row[2], row[3], row[5], row[4])
        return cls(row[0], row[1], identity, bool(row[6]), tuple(json.loads(row[7])), snippet, score)


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
    """Rule 4: when the last unsettled note this process indexed leaves the racy window (0: none)."""


class NoteIndex:
    def __init__(
        self, path: Path | str = ":memory:", *, watch: bool = True, verify_interval: float = 60.0
    ) -> None:
        self._lock = threading.RLock()
        self._watch = watch
        self._verify_interval = verify_interval
        self._live: dict[str, _Live] = {}
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.execute("PRAGMA busy_timeout = 30000")
        # SQLite's temporary files (sorts, statement journals) go to /tmp or /var/tmp, which the
        # sandbox forbids: a large index build then failed with "unable to open database file".
        self._db.execute("PRAGMA temp_store = MEMORY")
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

    # Queries: refresh, run, re-check every row (Rule 2)

    def search(
        self,
        workspace: str,
        root: WorkspaceRoot,
        subtree: str,
        terms: Sequence[str],
        *,
        after: tuple[float, str] | None,
        limit: int,
        progress: ProgressSink | None = None,
    ) -> list[IndexedNote]:
        """Notes matching every term (by word prefix) in title, path or body, best first: bm25 with
        the title weighted 10 and the path 2; ties by id. `after` is the (score, id) of the last
        note of the previous page."""
        match = " AND ".join(_fts_phrase(t) + "*" for t in terms)
        within, bounds = _range("n.id", subtree)
        sql = (
            f"SELECT {_COLUMNS}, bm25(notes_text, 10.0, 2.0, 1.0) AS score, "
            "snippet(notes_text, 2, '**', '**', '…', 16) "
            "FROM notes_text CROSS JOIN notes n ON n.rowid = notes_text.rowid "
            f"WHERE notes_text MATCH ? AND n.workspace = ?{within}"
        )
        params: list[Any] = [match, workspace, *bounds]
        if after is not None:
            sql = f"SELECT * FROM ({sql}) WHERE score > ? OR (score = ? AND id > ?)"
            params += [after[0], after[0], after[1]]
        sql += " ORDER BY score, id LIMIT ?"
        params.append(limit)

        def run() -> list[IndexedNote]:
            return [IndexedNote.of(r, r[9], r[8]) for r in self._db.execute(sql, params)]

        return self._checked(workspace, root, run, progress)

    def titled(
        self,
        workspace: str,
        root: WorkspaceRoot,
        subtree: str,
        words: Sequence[str],
        *,
        progress: ProgressSink | None = None,
    ) -> list[IndexedNote]:
        """Notes one of whose names contains every word (`model.matched_name`: title, file stem,
        aliases; case-insensitive substrings), sorted by id.

        Words of three characters or more go through the trigram index (any word in any name narrows
        the rows; the rule then decides); when a query has none, the workspace's rows are scanned
        (the one case that costs O(notes))."""
        within, bounds = _range("n.id", subtree)
        long = [w for w in words if len(w) >= 3]
        if long:
            sql = (
                f"SELECT {_COLUMNS} FROM notes_titles CROSS JOIN notes n ON n.rowid = notes_titles.rowid "
                f"WHERE notes_titles MATCH ? AND n.workspace = ?{within} ORDER BY n.id"
            )
            params: list[Any] = [" AND ".join(_fts_phrase(w) for w in long), workspace, *bounds]
        else:
            sql = f"SELECT {_COLUMNS} FROM notes n WHERE n.workspace = ?{within} ORDER BY n.id"
            params = [workspace, *bounds]

        def run() -> list[IndexedNote]:
            rows = (IndexedNote.of(r) for r in self._db.execute(sql, params))
            return [n for n in rows if matched_name(n.id, n.title, n.aliases, words) is not None]

        return self._checked(workspace, root, run, progress)

    def page(
        self,
        workspace: str,
        root: WorkspaceRoot,
        subtree: str,
        *,
        after: str | None,
        limit: int | None,
        progress: ProgressSink | None = None,
    ) -> list[IndexedNote]:
        """Notes in id order after `after` (keyset pagination: stable while notes come and go)."""
        within, bounds = _range("n.id", subtree)
        sql = f"SELECT {_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.id > ?{within} ORDER BY n.id"
        params: list[Any] = [workspace, after or "", *bounds]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)

        def run() -> list[IndexedNote]:
            return [IndexedNote.of(r) for r in self._db.execute(sql, params)]

        return self._checked(workspace, root, run, progress)

    def skipped(self, workspace: str, subtree: str) -> list[tuple[str, str]]:
        """(path, reason) of every entry the listings left out on purpose below `subtree`, or that
        is `subtree` or one of its parents (a folder named through a symlink lists nothing, and says
        why), by path, as of the last refresh (a query just made, e.g. `page`, refreshed it)."""
        within, bounds = _range("path", subtree)
        parts = subtree.split("/") if subtree else []
        above = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        either = f"path IN ({', '.join('?' * len(above))}) OR (1{within})" if above else "1"
        with self._lock:
            return [
                (str(path), str(reason))
                for path, reason in self._db.execute(
                    f"SELECT path, reason FROM skipped WHERE workspace = ? AND ({either}) ORDER BY path",
                    (workspace, *above, *bounds),
                )
            ]

    def _checked(
        self,
        workspace: str,
        root: WorkspaceRoot,
        run: Callable[[], list[IndexedNote]],
        progress: ProgressSink | None,
    ) -> list[IndexedNote]:
        with self._lock:
            self.refresh(workspace, root, progress)
            rows = run()
            for attempt in range(3):
                stale = [n for n in rows if not self._on_disk(root, n, strict=attempt == 0)]
                if not stale:
                    return rows
                with self._write():
                    for note in stale:
                        self._index_file(workspace, root, note.id, note)
                rows = run()
            return [n for n in rows if self._on_disk(root, n, strict=False)]

    @staticmethod
    def _on_disk(root: WorkspaceRoot, note: IndexedNote, *, strict: bool) -> bool:
        """Whether the note is still the file the row describes; `strict` also re-reads unsettled rows."""
        if strict and not note.settled:
            return False
        try:
            return root.stat_note(note.id).identity == note.identity
        except FsError:
            return False

    # Write-through from this server's own changes

    def note_changed(self, workspace: str, root: WorkspaceRoot, *note_ids: str) -> None:
        """Re-read (or drop) these notes now: a tool changed them and the next call must see it."""
        with self._lock, self._write():
            for note_id in note_ids:
                self._index_file(workspace, root, note_id)

    # Freshness (Rule 3)

    def refresh(self, workspace: str, root: WorkspaceRoot, progress: ProgressSink | None = None) -> None:
        with self._lock:
            live = self._live_state(workspace, root)
            now = time.monotonic()
            if not live.synced:
                if self._watch and live.watcher is None:
                    live.watcher = self._new_watcher(workspace)
                self._walk(workspace, root, live, full=True, progress=progress)
                live.synced, live.last_verify = True, now
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
        """Rule 4: re-read every unsettled note of the workspace, now that its window has passed."""
        live.settle_after_ns = 0  # a note that is racy again sets it anew
        unsettled = self._db.execute(
            f"SELECT {_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.settled = 0 ORDER BY n.id",
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
            live.synced = False
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
        while events := watcher.inotify.read(timeout=0):
            for event in events:
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
                elif event.mask & _STRUCTURAL and not event.name.startswith("."):
                    dirty_dirs.add(directory)  # maybe a symlink: a listing reports it as skipped (Rule 8)
        if dirty_dirs:
            self._walk(workspace, root, live, full=False, only=sorted(dirty_dirs), progress=progress)
        if dirty_files:
            with self._write():
                for note_id in sorted(dirty_files):
                    self._index_file(workspace, root, note_id)

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
                        split_dir(path), watch=self._watch_callback(workspace, live, path)
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
        self._read_files(workspace, root, to_read, progress)

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
                f"SELECT {_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.dir = ?", (workspace, path)
            )
        }
        listed = {entry.path: entry for entry in listing.notes}
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

    def _read_files(
        self,
        workspace: str,
        root: WorkspaceRoot,
        notes: Sequence[tuple[str, IndexedNote | None]],
        progress: ProgressSink | None,
    ) -> None:
        total = len(notes)
        for start in range(0, total, BATCH):
            with self._write():
                for note_id, known in notes[start : start + BATCH]:
                    self._index_file(workspace, root, note_id, known)
            if progress is not None and total > BATCH:
                done = min(start + BATCH, total)
                progress(done, total, f"indexed {done} of {total} changed notes")

    def _index_file(
        self,
        workspace: str,
        root: WorkspaceRoot,
        note_id: str,
        known: IndexedNote | EllipsisType | None = ...,
    ) -> None:
        """Re-read one note into the index, or drop it when it is no longer a readable note.

        `known`: the note's row as the caller read it (None: it has none); `...`: look it up."""
        if not _is_note_path(note_id):
            self._forget_note(workspace, note_id)
            return
        started = time.time_ns()
        try:
            data, identity = root.read_head(note_id, INDEX_BODY_BYTES)
        except FsError:
            self._forget_note(workspace, note_id)
            return
        title, aliases = extract_names(data[:TITLE_SCAN_BYTES], note_id)
        settled = identity.mtime_ns < started - RACY_WINDOW_NS
        if not settled and (live := self._live.get(workspace)) is not None:
            live.settle_after_ns = max(live.settle_after_ns, identity.mtime_ns + RACY_WINDOW_NS)
        body = data.decode("utf-8", errors="replace")
        if known is ...:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.id = ?", (workspace, note_id)
            ).fetchone()
            known = IndexedNote.of(row) if row else None
        if (
            known is not None
            and (known.identity, known.title, known.aliases) == (identity, title, aliases)
            and self._body(workspace, note_id) == body
        ):
            # Re-read, unchanged (a racy row settling, a touch): no full-text churn.
            if known.settled != settled:
                self._db.execute(
                    "UPDATE notes SET settled = ? WHERE workspace = ? AND id = ?",
                    (int(settled), workspace, note_id),
                )
            return
        (rowid,) = self._db.execute(
            "INSERT INTO notes (workspace, id, dir, title, dev, ino, size, mtime_ns, settled, aliases) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace, id) DO UPDATE SET "
            "title = excluded.title, dev = excluded.dev, ino = excluded.ino, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns, settled = excluded.settled, aliases = excluded.aliases "
            "RETURNING rowid",
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
                json.dumps(aliases, ensure_ascii=False),
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
            (rowid, title, "\n".join((note_stem(note_id), *aliases))),
        )

    def _body(self, workspace: str, note_id: str) -> str | None:
        row = self._db.execute(
            "SELECT t.body FROM notes n JOIN notes_text t ON t.rowid = n.rowid WHERE n.workspace = ? AND n.id = ?",
            (workspace, note_id),
        ).fetchone()
        return None if row is None else str(row[0])

    def _forget_note(self, workspace: str, note_id: str) -> None:
        row = self._db.execute(
            "DELETE FROM notes WHERE workspace = ? AND id = ? RETURNING rowid", (workspace, note_id)
        ).fetchone()
        if row is not None:
            self._forget_text([row])

    def _forget_subtree(self, workspace: str, path: str) -> None:
        """Drop a directory (`""`: the whole workspace) and everything below it, and its watches."""
        within, bounds = _range("id", path)
        dir_within, dir_bounds = _range("path", path)
        rowids = [
            (r[0],)
            for r in self._db.execute(
                f"DELETE FROM notes WHERE workspace = ?{within or ''} RETURNING rowid",
                (workspace, *bounds),
            )
        ]
        self._forget_text(rowids)
        if path:
            self._db.execute("DELETE FROM dirs WHERE workspace = ? AND path = ?", (workspace, path))
        self._db.execute(f"DELETE FROM dirs WHERE workspace = ?{dir_within}", (workspace, *dir_bounds))
        self._db.execute(f"DELETE FROM skipped WHERE workspace = ?{dir_within}", (workspace, *dir_bounds))
        live = self._live.get(workspace)
        watcher = live.watcher if live is not None else None
        if watcher is not None:
            below = path + "/"
            for wd, directory in list(watcher.dirs.items()):
                if not path or directory == path or directory.startswith(below):
                    del watcher.dirs[wd]
                    with suppress(OSError):
                        watcher.inotify.rm_watch(wd)

    def _forget_text(self, rowids: Sequence[tuple[int]]) -> None:
        """Rule 7: list the full-text rows of removed notes; purge them once a batch is listed."""
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
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
