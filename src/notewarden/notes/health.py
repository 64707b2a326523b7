"""What `notes_health` reports about a vault, judged from a store's index alone (issue 27). Pure: no I/O.

Rule 1 (the kinds, each judged from what both indexes already hold; `KINDS` in report order within
a note):

* `front_matter`: the note's front matter does not parse (the index's `property_error`).
* `empty`: the note's text is blank, or is a single level-1 heading (`# Title`, what `notes_create`
  writes with an empty body), once whitespace is stripped (`is_empty`). A note with front matter
  is not empty (a note of properties only is a record). Only notes of at most `EMPTY_MAX_BYTES`,
  and at most `EMPTY_SLACK` bytes longer than their title, are looked at (so the query reads the
  text of few notes): a note of 65 blank bytes is taken for one with content.
* `duplicate_title`: another note in reach has exactly the same title.
* `near_duplicate_title`: another note in reach has the same title once case, punctuation and
  blanks are ignored (`model.title_words`: "Atlas plan" and "atlas-plan!"), but not exactly the
  same. Similar *text* is not judged: neither index keeps a digest of a note's text, and comparing
  texts would read every note. Titles differing by a typo or a digit are not reported either:
  "Meeting 2024-01-05" and "Meeting 2024-01-06" are different notes.
* `orphan`: no link in and no link out. In: a link from another note of the workspace resolves to
  it (any folder: a note linked from a folder the caller may not read is not an orphan, and the
  link is not shown). Out: the note has a link with a path (to a note, resolved or not, or to an
  attachment); `[[#Heading]]` and links to itself do not count.
* `broken_link`, `broken_embed`: a link or embed (`![[…]]`, `![](…)`) whose target resolves to no
  note (`links` Rule 1: path, name, then alias), with its line. Not judged: a link's `#heading`
  or `#^block` (the indexes keep no headings: `notes_links` checks a note's anchors by reading
  its targets). External links (a URL scheme) are not links between notes. A link to an
  attachment (a path ending in one of `ATTACHMENT_SUFFIXES`, `notes.attachments` Rule 1) is
  judged by the next two kinds instead.
* `missing_attachment_link`, `missing_attachment_embed` (files store only): a link or embed to an
  attachment that resolves to no note and opens no attachment file of the workspace
  (`notes.attachments` Rule 2, over the files index's `attachments` table), with its line.
* `unlinked_attachment` (files store only): an attachment file no link of the workspace opens.
  Its item is the file (id: its path; title: its file name), so it comes in path order among the
  notes of its folder.

The two attachment judgements resolve against every attachment and every link of the workspace,
as orphans do (Rule 3): a link to a file in a folder the caller may not read is not missing, and a
file linked from such a folder is not unlinked; neither is ever named. A workspace kept in a
database has no files (`notes.attachments` Rule 6): the SQL stores report none of these kinds.

Rule 2 (order and paging): items are ordered by (note id, kind's rank, the link's place in the
note), so a report reads folder by folder, note by note; a page's key is the last item's
(`HealthKey`). Each kind is a stream in (note id, seq) order that a store reads after
`bound(kind, after)`, at most a page of it, and no further than `ceiling` of the streams read
before it (once some kinds fill a page, the others are read only up to its last note: a vault with
many broken links does not scan every note for orphans); `merge` keeps the page.

Rule 3 (reach): every item is a note in the caller's reach; duplicates are judged among the notes
in reach only (another note out of reach is never named), orphans against every link of the
workspace.

Rule 4 (duplicates without reading every title per page): grouping titles needs every title in
reach, so a store keeps the groups of a reach (`DuplicateCache`) under a stamp that changes whenever
a note is written, moved or goes (the files index: its connection's change count and SQLite's
`data_version`, which moves on another process's commit; the SQL stores: the workspace's latest
`modified_ns` (the version trigger sets it on every write and move), the highest row id (every new
row) and the latest `notes_gone` time (the delete trigger records every row that goes), three
index look-ups), and reads the titles again only when it moved.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from notewarden.notes.attachments import ATTACHMENT_SUFFIXES, is_attachment
from notewarden.notes.model import title_words

__all__ = [
    "ATTACHMENT_KINDS",
    "ATTACHMENT_SUFFIXES",
    "EMPTY_MAX_BYTES",
    "EMPTY_SLACK",
    "KINDS",
    "LINK_KINDS",
    "NO_CEILING",
    "DuplicateCache",
    "HealthItem",
    "HealthKey",
    "bound",
    "ceiling",
    "duplicate_items",
    "duplicates",
    "is_attachment",
    "is_empty",
    "merge",
    "page_of",
]

KINDS: tuple[str, ...] = (
    "front_matter",
    "empty",
    "duplicate_title",
    "near_duplicate_title",
    "orphan",
    "broken_link",
    "broken_embed",
    "missing_attachment_link",
    "missing_attachment_embed",
    "unlinked_attachment",
)
_RANK = {kind: rank for rank, kind in enumerate(KINDS)}
_LINKS_RANK = _RANK["broken_link"]
LINK_KINDS: frozenset[str] = frozenset(
    {"broken_link", "broken_embed", "missing_attachment_link", "missing_attachment_embed"}
)
"""Broken links and embeds, and missing attachments, are one stream (a note's links in order),
ranked together."""
ATTACHMENT_KINDS: frozenset[str] = frozenset(
    {"missing_attachment_link", "missing_attachment_embed", "unlinked_attachment"}
)
"""What only a store with files judges (Rule 1)."""

EMPTY_MAX_BYTES = 1024
EMPTY_SLACK = 64
_LAST_SEQ = 2**62
_WORDS: dict[str, str] = {}
"""`model.title_words` of titles seen, kept across calls: a report groups every title in reach on every
page, and most titles have not changed since the last page."""
_WORDS_KEPT = 1 << 18


@dataclass(frozen=True, slots=True)
class HealthKey:
    """Where a page ended (Rule 2)."""

    note_id: str
    rank: int
    seq: int


@dataclass(frozen=True, slots=True)
class HealthItem:
    kind: str
    note_id: str
    title: str
    seq: int = 0
    """The link's place among its note's links (link kinds); 0 otherwise."""
    line: int | None = None
    written: str | None = None
    """The link as written (link kinds)."""
    target: str | None = None
    """The link's path as written, without its anchor (link kinds)."""
    others: tuple[str, ...] = ()
    """The other notes with the same (or nearly the same) title, by id (duplicate kinds)."""

    @property
    def key(self) -> HealthKey:
        return HealthKey(self.note_id, rank(self.kind), self.seq)


def rank(kind: str) -> int:
    return _LINKS_RANK if kind in LINK_KINDS else _RANK[kind]


def bound(kind: str, after: HealthKey | None) -> tuple[str, int]:
    """The (note id, seq) a kind's stream is read after, exclusively (Rule 2)."""
    if after is None:
        return ("", -1)
    mine = rank(kind)
    if mine > after.rank:
        return (after.note_id, -1)
    if mine == after.rank:
        return (after.note_id, after.seq)
    return (after.note_id, _LAST_SEQ)


NO_CEILING = "\U0010ffff" * 4
"""Above every note id (code-point order, which is also UTF-8 byte order and PostgreSQL's "C")."""


def ceiling(streams: Iterable[Sequence[HealthItem]], limit: int) -> str:
    """Rule 2: the highest note id the page can still reach once `streams` are read: when they hold a
    page already, no later stream needs to read past its last note."""
    page = merge(streams, limit)
    return page[-1].note_id if len(page) >= limit else NO_CEILING


def merge(streams: Iterable[Sequence[HealthItem]], limit: int) -> list[HealthItem]:
    """The first `limit` items of the kinds' streams, in report order."""
    items = [item for stream in streams for item in stream]
    items.sort(key=lambda i: (i.note_id, rank(i.kind), i.seq))
    return items[:limit]


_WHITESPACE = " \t\r\n"
_TITLE_ONLY = re.compile(r"#[ \t][^\n]*|#")


def is_empty(text: str) -> bool:
    """Rule 1: blank, or one level-1 heading line and nothing else."""
    kept = text.strip(_WHITESPACE)
    return not kept or _TITLE_ONLY.fullmatch(kept) is not None


def duplicate_items(notes: Iterable[tuple[str, str]]) -> list[HealthItem]:
    """Rule 1's duplicate kinds among `notes` ((id, title) in reach), every item, in report order."""
    rows = list(notes)
    titles = [t for _, t in rows]
    known = _WORDS
    if len(known) + len(titles) > _WORDS_KEPT:
        known.clear()
    keys = [known.get(t) for t in titles]
    for at, words in enumerate(keys):
        if words is None:
            keys[at] = known[titles[at]] = title_words(titles[at])
    same, alike = Counter(titles), Counter(keys)
    exact: dict[str, list[str]] = {}
    near: dict[str, list[tuple[str, str]]] = {}
    for (note_id, title), words in zip(rows, keys, strict=True):
        if same[title] > 1:
            exact.setdefault(title, []).append(note_id)
        if words and alike[words] > 1:
            near.setdefault(words, []).append((note_id, title))
    items: list[HealthItem] = []
    for title, ids in exact.items():
        items += [
            HealthItem("duplicate_title", i, title, others=tuple(sorted(o for o in ids if o != i)))
            for i in ids
        ]
    for group in near.values():
        if len({t for _, t in group}) > 1:
            items += [
                HealthItem(
                    "near_duplicate_title", i, t, others=tuple(sorted(o for o, ot in group if ot != t))
                )
                for i, t in group
            ]
    items.sort(key=lambda i: (i.note_id, rank(i.kind)))
    return items


def page_of(
    items: Sequence[HealthItem], after: HealthKey | None, limit: int, kinds: frozenset[str]
) -> list[HealthItem]:
    """The items of `kinds` after `after` (Rule 2), at most `limit`; `items` in report order."""
    kept: list[HealthItem] = []
    for item in items:
        if item.kind in kinds and (item.note_id, item.seq) > bound(item.kind, after):
            kept.append(item)
            if len(kept) >= limit:
                break
    return kept


def duplicates(
    notes: Iterable[tuple[str, str]], after: HealthKey | None, limit: int, kinds: frozenset[str]
) -> list[HealthItem]:
    """Rule 1's duplicate kinds among `notes` ((id, title) in reach), after `after`, at most `limit`."""
    return page_of(duplicate_items(notes), after, limit, kinds)


class DuplicateCache:
    """Rule 4: the duplicate items of a reach, kept while the store's stamp for it is unchanged."""

    KEPT = 64

    def __init__(self) -> None:
        self._kept: dict[tuple[str, tuple[str, ...]], tuple[object, list[HealthItem]]] = {}
        self._lock = threading.Lock()

    def page(
        self,
        reach: tuple[str, tuple[str, ...]],
        stamp: object,
        titles: Callable[[], Iterable[tuple[str, str]]],
        *,
        after: HealthKey | None,
        limit: int,
        kinds: frozenset[str],
    ) -> list[HealthItem]:
        """A page of the duplicates of `reach` (workspace, regions); `titles` reads its (id, title)
        rows when `stamp` (what the store says changes with every note written, moved or gone) moved."""
        with self._lock:
            kept = self._kept.get(reach)
        if kept is None or kept[0] != stamp:
            kept = (stamp, duplicate_items(titles()))
            with self._lock:
                if len(self._kept) >= self.KEPT:
                    self._kept.clear()
                self._kept[reach] = kept
        return page_of(kept[1], after, limit, kinds)
