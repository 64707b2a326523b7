"""The files store's index, queried: search, delete candidates, listing pages, tags, links and recent
changes, over the tables `notes.index_refresh` keeps current (its Rules 1-11 say what they hold and
how they follow the files).

Rule 1: nothing the index holds is offered unchecked. Every query first brings the workspace up to
date (`IndexRefresh.refresh`), and every row it returns (a search hit, a delete candidate, a listed
resource) is `lstat`ed through the workspace handle first: a note that is gone is dropped from the
index, one whose identity changed is re-read, and the query runs again. So a deleted or moved note
is never a candidate, whatever the change detection missed.

Rule 2: full-text queries are driven by the FTS table (`CROSS JOIN` fixes the join order):
left to itself SQLite may scan every note of the workspace and probe the FTS per row, O(notes).
A hit's snippet and aliases are read for the page only, after ranking.

Rule 3: a filters-only search lists notes newest first (ties by id) from an index in that order:
when a tag filter keeps fewer than `store.FILTER_FIRST_CAP` notes, they are read through the tag
index and sorted; otherwise the time index `notes_by_mtime` is walked and each note tested, which
stops at the page's end. Either reads O(page / share kept) or O(cap) rows, never every note (a tag
on 10% of 20,000 notes read and sorted all of them: 14-19x slower at 20k than at 1k).

Rule 4 (attachments, `index_refresh` Rule 11): an attachment link is resolved by `links.resolve_path`
over the `attachments` table (`attachment_files`: a few indexed look-ups per link, in the caller's
folders), after the refresh that brings the table up to date: O(links), whatever the vault's size.
Health judges missing and unlinked attachments from the table and the link rows alone
(`notes.health` Rule 1): only a link whose name key some attachment shares, and whose path has a
folder (a bare name then opens one of them), or an attachment whose name key other attachments share
or that only links with a folder name, is resolved one by one. An unlinked attachment of a page is
`lstat`ed like the notes of the page (Rule 1): one that is gone leaves the table and the page is
made again.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from notewarden.notes import health as checks
from notewarden.notes import store_kit
from notewarden.notes.index_refresh import (
    INDEX_BODY_BYTES,
    NOTE_COLUMNS,
    IndexedNote,
    IndexLookup,
    IndexRefresh,
    same_file,
)
from notewarden.notes.links import VaultLookup, name_key, resolve_path
from notewarden.notes.markdown import NoteFacts, fold, parse_note, tag_key
from notewarden.notes.model import Note, NoteIdentity, matched_name, nearly_same, note_stem, title_words
from notewarden.notes.store import (
    FILTER_FIRST_CAP,
    LinkView,
    NoteChange,
    NoteFilter,
    NoteLinks,
    ProgressSink,
    PropertyTest,
    SearchMatch,
    TagCount,
    within_regions,
)
from notewarden.scope.fs_errors import FsError
from notewarden.scope.fsroot import FileIdentity, WorkspaceRoot

__all__ = ["NoteIndex"]


_TAG_EXISTS = (
    "EXISTS (SELECT 1 FROM note_tags g WHERE g.workspace = n.workspace AND g.note_id = n.id "
    "AND (g.tag = ? OR (g.tag >= ? AND g.tag < ?)))"
)
_TAG_RANGE = "(g.workspace = ? AND g.tag >= ? AND g.tag < ? AND (g.tag = ? OR g.tag >= ?))"
"""Rule 3: one tag and its nested tags as one range of `note_tags_by_tag` (the tag up to the tag and '0',
which holds them), the rest tested on each row. Written as `tag = ? OR (tag >= ? AND tag < ?)` beside
`workspace = ?`, the OR kept SQLite from ranging over the tag: it read every tag row of the workspace."""
_PROPERTY_OPS = {"equals": "value IS ?", "before": "value < ?", "after": "value > ?"}


def _tag_params(tag: str) -> list[str]:
    key = tag_key(tag.lstrip("#")).rstrip("/")
    return [key, key + "/", key + "0"]  # the tag, and its nested tags ('0' follows '/')


def _property_sql(test: PropertyTest) -> tuple[str, list[Any]]:
    """A front-matter condition; `json_each` makes a list property match when one item does."""
    path = '$."' + test.name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if test.op == "in":
        values = list(test.value)
        condition = f"value IN ({', '.join('?' * len(values))})" if values else "0"
    else:
        values, condition = [test.value], _PROPERTY_OPS[test.op]
    return f"EXISTS (SELECT 1 FROM json_each(n.properties, ?) WHERE {condition})", [path, *values]


def _filter_sql(filters: NoteFilter | None) -> tuple[str, list[Any]]:
    """SQL (` AND ...`) and parameters keeping the notes that pass `filters`."""
    if filters is None:
        return "", []
    clauses: list[str] = []
    params: list[Any] = []
    for tag in filters.tags_all:
        clauses.append(_TAG_EXISTS)
        params += _tag_params(tag)
    if filters.tags_any:
        clauses.append("(" + " OR ".join([_TAG_EXISTS] * len(filters.tags_any)) + ")")
        for tag in filters.tags_any:
            params += _tag_params(tag)
    for test in filters.properties:
        clause, values = _property_sql(test)
        clauses.append(clause)
        params += values
    return store_kit.with_time_and_folder(filters, clauses, params, modified="n.mtime_ns", note_id="n.id")


_PARSED_ANCHORS: dict[tuple[str, int, int, int, int], store_kit.AnchorFacts] = {}
"""A target's headings and block ids by (note id, dev, ino, size, mtime_ns): a version of a file."""
_ANCHORS_KEPT = 4096


class _Anchors(store_kit.AnchorMemo):
    """The headings and block ids of link targets, read when a link's anchor is shown (the index
    does not keep headings: `index_refresh` Rule 6's build skips the block parse where it can).

    A target is parsed once per version: kept by the identity the index holds for it (dev, ino,
    size, mtime_ns), which the query's refresh has just brought up to date, so a changed file is
    parsed again; a note with 20 anchored links then costs 20 look-ups, not 20 reads and parses
    (docs/performance.md). Only targets inside the caller's regions are read: a link into a folder
    out of reach shows no verdict on its anchor (None), never what that note contains."""

    def __init__(self, root: WorkspaceRoot, regions: Sequence[str]) -> None:
        super().__init__()
        self._root = root
        self._regions = None if "" in regions else tuple(f"{r}/" for r in regions)

    def _facts(self, target: str, identity: tuple[int, int, int, int] | None) -> store_kit.AnchorFacts | None:
        if self._regions is not None and not target.startswith(self._regions):
            return None
        key = (target, *identity) if identity is not None else None
        if key is not None and (kept := _PARSED_ANCHORS.get(key)) is not None:
            return kept
        try:
            data, _ = self._root.read_head(target, INDEX_BODY_BYTES)
        except FsError:
            return None
        facts: NoteFacts = parse_note(data.decode("utf-8", errors="replace"), note_stem(target))
        found = (tuple(facts.headings), tuple(b.id for b in facts.block_ids))
        if key is not None:
            if len(_PARSED_ANCHORS) >= _ANCHORS_KEPT:
                _PARSED_ANCHORS.clear()
            _PARSED_ANCHORS[key] = found
        return found


def _link_view(
    row: Sequence[Any], anchors: _Anchors, identity: tuple[int, int, int, int] | None = None
) -> LinkView:
    source, title, line, written, context, embed, path, anchor, target, via, style = row[:11]
    found = anchors.found(target, anchor, style, identity) if anchor and target is not None else None
    return LinkView(source, title, line, written, context, bool(embed), path, anchor, target, via, found)


class _AttachmentFiles(store_kit.MemoLookup):
    """`links.VaultLookup` over the attachments table (Rule 4) in `regions`, under the index's lock."""

    def __init__(self, index: NoteIndex, workspace: str, regions: Sequence[str]) -> None:
        super().__init__()
        self._index, self._workspace = index, workspace
        self._within, self._bounds = within_regions("path", regions)

    def _path(self, key: str) -> str | None:
        with self._index._lock:
            row = self._index._db.execute(
                "SELECT min(path) FROM attachments INDEXED BY attachments_by_name_key WHERE workspace = ? "
                f"AND name_key = ? AND path_key = ?{self._within}",
                (self._workspace, key.rsplit("/", 1)[-1], key, *self._bounds),
            ).fetchone()
        return row[0]  # type: ignore[no-any-return]

    def _names_of(self, key: str) -> list[str]:
        with self._index._lock:
            rows = self._index._db.execute(
                "SELECT path FROM attachments INDEXED BY attachments_by_name_key WHERE workspace = ? "
                f"AND name_key = ?{self._within} ORDER BY path",
                (self._workspace, key, *self._bounds),
            )
            return [r[0] for r in rows]

    def _aliased(self, key: str) -> list[str]:
        return []  # files have no aliases


class NoteIndex(IndexRefresh):
    """The files index: every query refreshes, runs, and re-checks every row (Rule 1)."""

    @functools.cached_property
    def _duplicates(self) -> checks.DuplicateCache:
        """`notes.health` Rule 4: the duplicate titles of each reach, kept until the index changes."""
        return checks.DuplicateCache()

    def search(
        self,
        workspace: str,
        root: WorkspaceRoot,
        regions: Sequence[str],
        terms: Sequence[str],
        *,
        after: tuple[float, str] | None,
        limit: int,
        progress: ProgressSink | None = None,
        match: SearchMatch = "all",
        filters: NoteFilter | None = None,
    ) -> list[IndexedNote]:
        """Notes matching every term (by word prefix, stemmed) in title, path or body, or with
        `match="any"` some but not all (`"rarer"`: within `ranking` Rule 4's budget), best first: bm25 with the
        title weighted 10 and the path 2;
        ties by id; each with its snippet (`notes.snippets`) and aliases. Without terms: the notes
        passing `filters`, newest first (Rule 3). `after` is the (score, id) of the last note of the
        previous page."""
        if not terms:
            return self._filtered(workspace, root, regions, after=after, limit=limit, filters=filters)
        within, bounds = within_regions("n.id", regions)
        kept, kept_params = _filter_sql(filters)
        sql = (
            f"SELECT {NOTE_COLUMNS}, bm25(notes_text, 10.0, 2.0, 1.0) AS score, n.rowid "
            "FROM notes_text CROSS JOIN notes n ON n.rowid = notes_text.rowid "
            f"WHERE notes_text MATCH ? AND n.workspace = ?{within}{kept}"
        )
        params: list[Any] = [None, workspace, *bounds, *kept_params]
        if after is not None:
            sql = f"SELECT * FROM ({sql}) WHERE score > ? OR (score = ? AND id > ?)"
            params += [after[0], after[0], after[1]]
        sql += " ORDER BY score, id LIMIT ?"
        params.append(limit)

        def run() -> list[IndexedNote]:
            params[0] = store_kit.fts_match(self._db.execute, "notes_text", terms, match)
            if params[0] is None:
                return []
            return [IndexedNote.of(r, score=r[7], rowid=r[8]) for r in self._db.execute(sql, params)]

        rows = self._checked(workspace, root, run, progress)
        return self._with_snippets(workspace, rows, terms)

    def _with_snippets(
        self, workspace: str, rows: list[IndexedNote], terms: Sequence[str]
    ) -> list[IndexedNote]:
        """The page's texts (in `snippet`: `SearchHit` makes the snippet from it when asked) and
        aliases, read for the page only: selecting them in the ranked query would read every matching
        note's text."""
        if not rows:
            return rows
        with self._lock:
            marks = ", ".join("?" * len(rows))
            texts = dict(
                self._db.execute(
                    f"SELECT rowid, body FROM notes_text WHERE rowid IN ({marks})", [r.rowid for r in rows]
                ).fetchall()
            )
            names: dict[str, list[str]] = {}
            for note_id, alias in self._db.execute(
                f"SELECT note_id, alias FROM note_aliases WHERE workspace = ? AND note_id IN ({marks}) "
                "ORDER BY note_id, alias_key",
                [workspace, *(r.id for r in rows)],
            ):
                names.setdefault(note_id, []).append(alias)
        return [
            replace(r, snippet=texts.get(r.rowid) or "", aliases=tuple(names.get(r.id, ()))) for r in rows
        ]

    def _filtered(
        self,
        workspace: str,
        root: WorkspaceRoot,
        regions: Sequence[str],
        *,
        after: tuple[float, str] | None,
        limit: int,
        filters: NoteFilter | None,
    ) -> list[IndexedNote]:
        """Rule 3: the notes passing `filters`, newest first, ties by id; the rank is -mtime_ns."""
        within, bounds = within_regions("n.id", regions)
        kept, kept_params = _filter_sql(filters)
        page, page_params = "", []
        if after is not None:
            newest = -int(after[0])
            page = " AND n.mtime_ns <= ? AND (n.mtime_ns < ? OR n.id > ?)"
            page_params = [newest, newest, after[1]]
        columns = f"SELECT {NOTE_COLUMNS}, -n.mtime_ns, n.rowid FROM notes n"
        where = f"n.workspace = ?{within}{kept}{page} ORDER BY n.mtime_ns DESC, n.id LIMIT ?"
        params = [workspace, *bounds, *kept_params, *page_params, limit]
        driver = self._selective_filter(workspace, filters)
        if driver is None:  # many notes pass: walk the time index, test each, stop at the page's end
            sql = f"{columns} INDEXED BY notes_by_mtime WHERE {where}"
        else:  # few: read them all through their own index, then sort
            condition, driver_params = driver
            sql = f"{columns} WHERE n.id IN (SELECT g.note_id FROM note_tags g WHERE {condition}) AND {where}"
            params = [*driver_params, *params]

        def run() -> list[IndexedNote]:
            return [IndexedNote.of(r, score=r[7], rowid=r[8]) for r in self._db.execute(sql, params)]

        return self._checked(workspace, root, run, None)

    def _selective_filter(self, workspace: str, filters: NoteFilter | None) -> tuple[str, list[Any]] | None:
        """Rule 3: the indexed filter (a tag of `tags_all`, or the tags of `tags_any`) that keeps fewer
        than `FILTER_FIRST_CAP` notes, as a condition on `note_tags g` and its parameters; None when
        every such filter keeps more (then the time index is walked)."""
        if filters is None:
            return None

        def tag_range(tag: str) -> list[Any]:
            key, nested, after = _tag_params(tag)
            return [workspace, key, after, key, nested]

        choices: list[tuple[str, list[Any]]] = [(_TAG_RANGE, tag_range(t)) for t in filters.tags_all]
        if filters.tags_any:
            either = " OR ".join([_TAG_RANGE] * len(filters.tags_any))
            choices.append((f"({either})", [p for t in filters.tags_any for p in tag_range(t)]))
        for condition, params in choices:
            (found,) = self._db.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM note_tags g WHERE {condition} LIMIT ?)",
                [*params, FILTER_FIRST_CAP],
            ).fetchone()
            if found < FILTER_FIRST_CAP:
                return condition, params
        return None

    def tags(
        self,
        workspace: str,
        root: WorkspaceRoot,
        regions: Sequence[str],
        *,
        prefix: str,
        after: str | None,
        limit: int,
    ) -> list[TagCount]:
        """Tags by folded name, each with how many notes carry it: from the running counts for a
        whole workspace, counted over the folder's notes for a folder."""
        low = max(tag_key(prefix), after + "\0" if after is not None else "")
        high = tag_key(prefix) + "\U0010ffff"
        with self._lock:
            self.refresh(workspace, root)
            if "" in regions:
                rows = self._db.execute(
                    "SELECT name, notes FROM tag_counts WHERE workspace = ? AND tag >= ? AND tag < ? "
                    "ORDER BY tag LIMIT ?",
                    (workspace, low, high, limit),
                )
            else:
                within, bounds = within_regions("note_id", regions)
                rows = self._db.execute(
                    "SELECT min(name), count(*) FROM note_tags WHERE workspace = ? AND tag >= ? AND tag < ?"
                    f"{within} GROUP BY tag ORDER BY tag LIMIT ?",
                    (workspace, low, high, *bounds, limit),
                )
            return [TagCount(name, count) for name, count in rows]

    def note_links(
        self,
        workspace: str,
        root: WorkspaceRoot,
        regions: Sequence[str],
        note_id: str,
        *,
        limit: int,
        after: tuple[str, int] | None = None,
        reach: Sequence[str] = ("",),
    ) -> NoteLinks | None:
        """The note with its tags and front matter, its outgoing links, up to `limit` backlinks from
        notes in `regions` (each still on disk), by (source, seq) after `after`, and how many such
        backlinks there are in all; None when it is not a note. Link targets' anchors are checked in
        `reach` only (the caller's folders across the workspace: links resolve across it)."""
        within, bounds = within_regions("l.note_id", regions)
        resume, resume_at = ("", ()) if after is None else (" AND (l.note_id, l.seq) > (?, ?)", after)
        with self._lock:
            note = self.row(workspace, root, note_id)
            if note is None:
                return None
            columns = (
                "l.note_id, n.title, l.line, l.written, l.context, l.embed, l.path, l.anchor, l.target, "
                "l.via, l.style"
            )
            outgoing = self._db.execute(
                f"SELECT {columns}, t.dev, t.ino, t.size, t.mtime_ns FROM note_links l JOIN notes n "
                "ON n.workspace = l.workspace AND n.id = l.note_id LEFT JOIN notes t ON t.workspace = "
                "l.workspace AND t.id = l.target WHERE l.workspace = ? AND l.note_id = ? ORDER BY l.seq",
                (workspace, note_id),
            ).fetchall()
            (total,) = self._db.execute(
                f"SELECT count(*) FROM note_links l WHERE l.workspace = ? AND l.target = ?{within}",
                (workspace, note_id, *bounds),
            ).fetchone()
            backlinks = self._db.execute(
                f"SELECT {columns}, n.dev, n.ino, n.size, n.mtime_ns, l.seq FROM note_links l INDEXED BY "
                "note_links_by_target JOIN notes n ON n.workspace = l.workspace AND n.id = l.note_id "
                f"WHERE l.workspace = ? AND l.target = ?{within}{resume} ORDER BY l.note_id, l.seq LIMIT ?",
                (workspace, note_id, *bounds, *resume_at, limit),
            ).fetchall()
            sources = {r[0]: FileIdentity(r[11], r[12], r[14], r[13]) for r in backlinks}
            present = {s for s, identity in sources.items() if same_file(root, s, identity)}
            anchors = _Anchors(root, reach)
            views = [
                _link_view(r, anchors, None if r[11] is None else (r[11], r[12], r[13], r[14]))
                for r in outgoing
            ]
            own = note.identity
            back = [
                replace(_link_view(r, anchors, (own.dev, own.ino, own.size, own.mtime_ns)), seq=r[15])
                for r in backlinks
                if r[0] in present
            ]
            properties, error = self._db.execute(
                "SELECT properties, property_error FROM notes WHERE workspace = ? AND id = ?",
                (workspace, note_id),
            ).fetchone()
            tags = self._db.execute(
                "SELECT name FROM note_tags WHERE workspace = ? AND note_id = ? ORDER BY tag",
                (workspace, note_id),
            )
            return NoteLinks(
                Note(note.id, note.title, NoteIdentity.of_file(note.identity)),
                views,
                back,
                total,
                tags=[t for (t,) in tags],
                properties=None if properties is None else json.loads(properties),
                property_error=error,
            )

    def health(
        self,
        workspace: str,
        root: WorkspaceRoot,
        regions: Sequence[str],
        *,
        kinds: frozenset[str],
        after: checks.HealthKey | None,
        limit: int,
    ) -> list[checks.HealthItem]:
        """`notes.health`'s report, a page of it, from the index's tables; the notes of the page's
        items are checked on disk (Rule 1) and re-read when they changed, then the page is made again."""
        with self._lock:
            for attempt in range(3):
                self.refresh(workspace, root)
                items = self._health_items(workspace, regions, kinds=kinds, after=after, limit=limit)
                gone = [
                    i.note_id
                    for i in items
                    if i.kind == "unlinked_attachment" and not self._attachment_on_disk(root, i.note_id)
                ]
                ids = sorted({i.note_id for i in items if i.kind != "unlinked_attachment"})
                marks = ", ".join("?" * len(ids))
                rows = [
                    IndexedNote.of(r)
                    for r in self._db.execute(
                        f"SELECT {NOTE_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.id IN ({marks})",
                        (workspace, *ids),
                    )
                ]
                stale = [n for n in rows if not self._on_disk(root, n, strict=attempt == 0)]
                if not stale and not gone:
                    return items
                with self._write():
                    for note in stale:
                        self._index_file(workspace, root, note.id, note)
                    self._db.executemany(  # Rule 4: a file gone from under the table leaves it
                        "DELETE FROM attachments WHERE workspace = ? AND path = ?",
                        [(workspace, f) for f in gone],
                    )
            present = {n.id for n in rows if n not in stale}
            return [
                i
                for i in items
                if i.note_id in present or (i.kind == "unlinked_attachment" and i.note_id not in gone)
            ]

    @staticmethod
    def _attachment_on_disk(root: WorkspaceRoot, path: str) -> bool:
        try:
            root.stat_note(path)
        except FsError:
            return False
        return True

    def _health_items(
        self,
        workspace: str,
        regions: Sequence[str],
        *,
        kinds: frozenset[str],
        after: checks.HealthKey | None,
        limit: int,
    ) -> list[checks.HealthItem]:
        within, bounds = within_regions("n.id", regions)
        streams: list[list[checks.HealthItem]] = []

        def notes_after(kind: str, condition: str) -> list[tuple[Any, ...]]:
            last, seq = checks.bound(kind, after)
            return self._db.execute(
                f"SELECT n.id, n.title FROM notes n WHERE n.workspace = ? AND {condition} "
                f"AND n.id >= ? AND (n.id > ? OR 0 > ?) AND n.id <= ?{within} ORDER BY n.id LIMIT ?",
                (workspace, last, last, seq, checks.ceiling(streams, limit), *bounds, limit),
            ).fetchall()

        files = _AttachmentFiles(self, workspace, ("",))  # every attachment (`notes.health` Rule 1)
        if kinds & checks.LINK_KINDS:
            last, seq = checks.bound("broken_link", after)
            link_within, link_bounds = within_regions("l.note_id", regions)
            broken: list[checks.HealthItem] = []
            for note_id, title, seq_, line, written, embed, path, style, named in self._db.execute(
                "SELECT l.note_id, n.title, l.seq, l.line, l.written, l.embed, l.path, l.style, EXISTS (SELECT 1 "
                "FROM attachments a INDEXED BY attachments_by_name_key WHERE a.workspace = l.workspace AND "
                "a.name_key = l.name_key) FROM note_links l "
                "JOIN notes n ON n.workspace = l.workspace AND n.id = l.note_id WHERE l.workspace = ? "
                "AND l.target IS NULL AND l.path != '' AND l.note_id >= ? AND (l.note_id > ? OR l.seq > ?)"
                f"{link_within} ORDER BY l.note_id, l.seq",
                (workspace, last, last, seq, *link_bounds),
            ):
                if not checks.is_attachment(path):
                    kind = "broken_embed" if embed else "broken_link"
                else:
                    kind = "missing_attachment_embed" if embed else "missing_attachment_link"
                    # a bare name opens one of the attachments of its name key when there is one (Rule 4)
                    if kind not in kinds or (
                        named and ("/" not in path or resolve_path(path, style, note_id, files).target)
                    ):
                        continue
                if kind in kinds:
                    broken.append(checks.HealthItem(kind, note_id, title, seq_, line, written, path))
                    if len(broken) >= limit:
                        break
            streams.append(broken)
        if "front_matter" in kinds:
            rows = notes_after("front_matter", "n.property_error IS NOT NULL")
            streams.append([checks.HealthItem("front_matter", i, t) for i, t in rows])
        if "empty" in kinds:
            last, seq = checks.bound("empty", after)
            found: list[checks.HealthItem] = []
            for note_id, title, body in self._db.execute(
                "SELECT n.id, n.title, t.body FROM notes n JOIN notes_text t ON t.rowid = n.rowid "
                "WHERE n.workspace = ? AND n.size <= ? AND n.size <= length(CAST(n.title AS BLOB)) + ? "
                f"AND n.id >= ? AND (n.id > ? OR 0 > ?) AND n.id <= ?{within} ORDER BY n.id",
                (
                    workspace,
                    checks.EMPTY_MAX_BYTES,
                    checks.EMPTY_SLACK,
                    last,
                    last,
                    seq,
                    checks.ceiling(streams, limit),
                    *bounds,
                ),
            ):
                if checks.is_empty(body or ""):
                    found.append(checks.HealthItem("empty", note_id, title))
                    if len(found) >= limit:
                        break
            streams.append(found)
        if "orphan" in kinds:
            rows = notes_after(
                "orphan",
                "NOT EXISTS (SELECT 1 FROM note_links o WHERE o.workspace = n.workspace AND o.note_id = n.id "
                "AND o.path != '' AND (o.target IS NULL OR o.target != n.id)) "
                "AND NOT EXISTS (SELECT 1 FROM note_links i INDEXED BY note_links_by_target "
                "WHERE i.workspace = n.workspace AND i.target = n.id AND i.note_id != n.id)",
            )
            streams.append([checks.HealthItem("orphan", i, t) for i, t in rows])
        if "unlinked_attachment" in kinds:
            streams.append(
                self._unlinked(
                    workspace,
                    regions,
                    files,
                    after=after,
                    ceiling=checks.ceiling(streams, limit),
                    limit=limit,
                )
            )
        if kinds & {"duplicate_title", "near_duplicate_title"}:
            (changed,) = self._db.execute("PRAGMA data_version").fetchone()
            streams.append(
                self._duplicates.page(
                    (workspace, tuple(regions)),
                    (self._db.total_changes, changed),
                    lambda: self._db.execute(
                        f"SELECT n.id, n.title FROM notes n WHERE n.workspace = ?{within}",
                        (workspace, *bounds),
                    ).fetchall(),
                    after=after,
                    limit=limit,
                    kinds=kinds,
                )
            )
        return checks.merge(streams, limit)

    def _unlinked(
        self,
        workspace: str,
        regions: Sequence[str],
        files: VaultLookup,
        *,
        after: checks.HealthKey | None,
        ceiling: str,
        limit: int,
    ) -> list[checks.HealthItem]:
        """`notes.health`'s `unlinked_attachment` stream (Rule 4): attachments in `regions` by path after
        `after`, up to `ceiling`, that no link of the workspace opens."""
        last, seq = checks.bound("unlinked_attachment", after)
        within, bounds = within_regions("a.path", regions)
        candidates = (
            "FROM note_links l INDEXED BY note_links_by_name WHERE l.workspace = a.workspace "
            "AND l.name_key = a.name_key AND l.target IS NULL AND l.path != ''"
        )
        found: list[checks.HealthItem] = []
        for path, name, linked, bare, alone in self._db.execute(
            f"SELECT a.path, a.name_key, EXISTS (SELECT 1 {candidates}), "
            f"EXISTS (SELECT 1 {candidates} AND instr(l.path, '/') = 0), "
            "NOT EXISTS (SELECT 1 FROM attachments b INDEXED BY attachments_by_name_key WHERE b.workspace = "
            "a.workspace AND b.name_key = a.name_key AND b.path != a.path) "
            "FROM attachments a WHERE a.workspace = ? AND a.path >= ? AND (a.path > ? OR 0 > ?) AND a.path <= ?"
            f"{within} ORDER BY a.path",
            (workspace, last, last, seq, ceiling, *bounds),
        ):
            if linked and bare and alone:
                continue  # a bare name opens the only attachment of its name
            if linked:
                links = self._db.execute(
                    "SELECT note_id, path, style FROM note_links INDEXED BY note_links_by_name WHERE workspace = ? "
                    "AND name_key = ? AND target IS NULL AND path != ''",
                    (workspace, name),
                ).fetchall()
                if any(resolve_path(p, style, source, files).target == path for source, p, style in links):
                    continue
            found.append(checks.HealthItem("unlinked_attachment", path, path.rsplit("/", 1)[-1]))
            if len(found) >= limit:
                break
        return found

    def attachment_files(self, workspace: str, root: WorkspaceRoot, regions: Sequence[str]) -> VaultLookup:
        """Rule 4: the workspace's attachments in `regions` as link resolution sees them, current as of
        this call (the refresh is O(changes)); each answer is a look-up, remembered for the lookup's life."""
        with self._lock:
            self.refresh(workspace, root)
        return _AttachmentFiles(self, workspace, regions)

    @contextmanager
    def vault(self, workspace: str, root: WorkspaceRoot) -> Iterator[VaultLookup]:
        """The workspace as link resolution sees it, current and held still while it is used (a move
        plans its link rewrites with it)."""
        with self._lock:
            self.refresh(workspace, root)
            yield IndexLookup(self._db, workspace)

    def linking_notes(self, workspace: str, moved_from: str, moved_to: str) -> list[str]:
        """Inside `vault`: the notes with a link whose target a move of `moved_from` to `moved_to` can
        change (`links` Rule 3): links to it, links whose name is its new name or one of its aliases
        (a link can only find a note through those, `links._Keys`), and the note itself."""
        keys = [name_key(moved_to)] + [
            k
            for (k,) in self._db.execute(
                "SELECT alias_key FROM note_aliases WHERE workspace = ? AND note_id = ?",
                (workspace, moved_from),
            )
        ]
        rows = self._db.execute(
            "SELECT note_id FROM note_links INDEXED BY note_links_by_target WHERE workspace = ? AND target = ? "
            "UNION SELECT note_id FROM note_links INDEXED BY note_links_by_name WHERE workspace = ? "
            f"AND name_key IN ({', '.join('?' * len(keys))})",
            (workspace, moved_from, workspace, *keys),
        )
        return sorted({moved_from, *(r[0] for r in rows)})

    def row(self, workspace: str, root: WorkspaceRoot, note_id: str) -> IndexedNote | None:
        """The note's current row, checked on disk (Rule 1); None when it is not a note."""

        def run() -> list[IndexedNote]:
            found = self._db.execute(
                f"SELECT {NOTE_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.id = ?", (workspace, note_id)
            ).fetchone()
            return [IndexedNote.of(found)] if found else []

        rows = self._checked(workspace, root, run, None)
        return rows[0] if rows else None

    def recent(
        self, workspace: str, root: WorkspaceRoot, regions: Sequence[str], *, since_ns: int, limit: int
    ) -> list[NoteChange]:
        """`index_refresh` Rule 7: the latest change of each note (and each note that went), newest first."""
        within, bounds = within_regions("n.id", regions)
        gone_within, gone_bounds = within_regions("note_id", regions)

        changed: dict[str, tuple[Any, int, str | None]] = {}

        def run() -> list[IndexedNote]:
            rows = self._db.execute(
                f"SELECT {NOTE_COLUMNS}, n.change, n.changed_ns, n.previous FROM notes n "
                f"WHERE n.workspace = ? AND n.changed_ns >= ?{within} ORDER BY n.changed_ns DESC, n.id LIMIT ?",
                (workspace, since_ns, *bounds, limit),
            ).fetchall()
            changed.clear()
            changed.update((r[0], (r[7] or "modified", r[8], r[9])) for r in rows)
            return [IndexedNote.of(r) for r in rows]

        changes = [
            NoteChange(n.id, n.title, *changed[n.id], identity=NoteIdentity.of_file(n.identity))
            for n in self._checked(workspace, root, run, None)
        ]
        with self._lock:
            gone = self._db.execute(
                "SELECT note_id, title, gone_ns FROM gone_notes WHERE workspace = ? AND gone_ns >= ?"
                f"{gone_within} ORDER BY gone_ns DESC, note_id LIMIT ?",
                (workspace, since_ns, *gone_bounds, limit),
            ).fetchall()
        changes += [NoteChange(note_id, title, "deleted", at) for note_id, title, at in gone]
        changes.sort(key=lambda c: (-c.at_ns, c.note_id))
        return changes[:limit]

    def similar(
        self, workspace: str, root: WorkspaceRoot, regions: Sequence[str], title: str
    ) -> list[IndexedNote]:
        """Notes whose title is `title` or nearly: the same words ignoring case and punctuation, or
        a difflib ratio of at least `model.SIMILAR_RATIO` (a typo, a changed digit)."""
        wanted = title_words(title)
        words = [w for w in wanted.split() if len(w) >= 3]
        if not words:
            return [
                n
                for n in self.titled(workspace, root, regions, wanted.split())
                if title_words(n.title) == wanted
            ]
        within, bounds = within_regions("n.id", regions)
        sql = (
            f"SELECT {NOTE_COLUMNS} FROM notes_titles CROSS JOIN notes n ON n.rowid = notes_titles.rowid "
            f"WHERE notes_titles MATCH ? AND n.workspace = ?{within} ORDER BY n.id LIMIT 500"
        )
        params = [f"title : ({' OR '.join(store_kit.fts_phrase(w) for w in words)})", workspace, *bounds]

        def run() -> list[IndexedNote]:
            rows = (IndexedNote.of(r) for r in self._db.execute(sql, params))
            return [n for n in rows if nearly_same(title_words(n.title), wanted)]

        return self._checked(workspace, root, run, None)

    def complete(
        self, workspace: str, root: WorkspaceRoot, regions: Sequence[str], prefix: str, *, limit: int
    ) -> tuple[list[str], bool]:
        """Ids starting with `prefix` (by id), then ids whose file name starts with it
        case-insensitively (by name): two index ranges, each cut at `limit`."""
        within, bounds = within_regions("id", regions)
        key = fold(prefix)
        with self._lock:
            self.refresh(workspace, root)
            by_id = self._db.execute(
                f"SELECT id FROM notes WHERE workspace = ? AND id >= ? AND id < ?{within} ORDER BY id LIMIT ?",
                (workspace, prefix, prefix + "\U0010ffff", *bounds, limit + 1),
            ).fetchall()
            by_name = self._db.execute(
                "SELECT id FROM notes INDEXED BY notes_by_name_key WHERE workspace = ? AND name_key >= ? "
                f"AND name_key < ?{within} ORDER BY name_key, id LIMIT ?",
                (workspace, key, key + "\U0010ffff", *bounds, limit + 1),
            ).fetchall()
        ids = list(dict.fromkeys(r[0] for r in (*by_id, *by_name)))
        return ids[:limit], len(ids) > limit

    def titled(
        self,
        workspace: str,
        root: WorkspaceRoot,
        regions: Sequence[str],
        words: Sequence[str],
        *,
        progress: ProgressSink | None = None,
    ) -> list[IndexedNote]:
        """Notes one of whose names contains every word (`index_refresh` Rule 8, `model.matched_name`: title, file
        stem, aliases; case-insensitive substrings), sorted by id, with their aliases.

        Words of three characters or more go through the trigram index (a word in any name narrows
        the rows; the rule then decides); when a query has none, the workspace's rows are scanned
        (the one case that costs O(notes))."""
        within, bounds = within_regions("n.id", regions)
        long = [w for w in words if len(w) >= 3]
        aliases = (
            "(SELECT json_group_array(a.alias) FROM note_aliases a WHERE a.workspace = n.workspace "
            "AND a.note_id = n.id)"
        )
        if long:
            sql = (
                f"SELECT {NOTE_COLUMNS}, {aliases} FROM notes_titles CROSS JOIN notes n "
                f"ON n.rowid = notes_titles.rowid WHERE notes_titles MATCH ? AND n.workspace = ?{within} "
                "ORDER BY n.id"
            )
            params: list[Any] = [" AND ".join(store_kit.fts_phrase(w) for w in long), workspace, *bounds]
        else:
            sql = f"SELECT {NOTE_COLUMNS}, {aliases} FROM notes n WHERE n.workspace = ?{within} ORDER BY n.id"
            params = [workspace, *bounds]

        def run() -> list[IndexedNote]:
            rows = (
                replace(IndexedNote.of(r), aliases=tuple(json.loads(r[7])))
                for r in self._db.execute(sql, params)
            )
            return [n for n in rows if matched_name(n.id, n.title, n.aliases, words) is not None]

        return self._checked(workspace, root, run, progress)

    def page(
        self,
        workspace: str,
        root: WorkspaceRoot,
        regions: Sequence[str],
        *,
        after: str | None,
        limit: int | None,
        progress: ProgressSink | None = None,
    ) -> list[IndexedNote]:
        """Notes in id order after `after` (keyset pagination: stable while notes come and go)."""
        within, bounds = within_regions("n.id", regions)
        sql = f"SELECT {NOTE_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.id > ?{within} ORDER BY n.id"
        params: list[Any] = [workspace, after or "", *bounds]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)

        def run() -> list[IndexedNote]:
            return [IndexedNote.of(r) for r in self._db.execute(sql, params)]

        return self._checked(workspace, root, run, progress)

    def skipped(self, workspace: str, regions: Sequence[str]) -> list[tuple[str, str]]:
        """(path, reason) of every entry the listings left out on purpose in `regions`, or that is a
        region or one of its parents (a folder named through a symlink lists nothing, and says why),
        by path, as of the last refresh (a query just made, e.g. `page`, refreshed it)."""
        within, bounds = within_regions("path", regions)
        above = sorted(
            {
                "/".join(parts[: i + 1])
                for parts in (r.split("/") for r in regions if r)
                for i in range(len(parts))
            }
        )
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
