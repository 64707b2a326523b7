"""What both note stores build their queries and trash rows from: the files store's index
(`notes.index`, `notes.index_refresh`) and the SQL store (`notes.sql`) use these, so that a query
means the same in each and a change to one piece changes both.

Rule 1 (one meaning): a search term is an FTS5 phrase matched as a word prefix, every one of them,
or with `match="any"` some but not all (`fts_query`), with `"rarer"` those some within the work
budget of `ranking` Rule 4 (`fts_some_query`; `fts_match` chooses); a folder is a range of ids (`prefix_range`,
`store.within_regions`); a trash id is the UTC time and 48 random bits (`new_trash_id`), sortable by
when and unguessable.

Rule 2 (one pass, one answer): a link is resolved through `links.VaultLookup`; `MemoLookup` asks
each key once per pass (a note with many links to one target costs one query), the store only says
how to ask (`_path`, `_names_of`, `_aliased`). Likewise `AnchorMemo` reads a link target's headings
and block ids once per pass, the store says how (`_facts`), and `links.anchor_found` judges.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from notewarden.notes.links import anchor_found
from notewarden.notes.markdown import Heading
from notewarden.notes.ranking import SOME_BUDGET, budgeted
from notewarden.notes.store import NoteFilter, SearchMatch, within_regions

__all__ = [
    "AnchorFacts",
    "AnchorMemo",
    "MemoLookup",
    "fts_match",
    "fts_phrase",
    "fts_query",
    "fts_some_query",
    "new_trash_id",
    "prefix_range",
    "with_time_and_folder",
]


def fts_phrase(text: str) -> str:
    """`text` as one FTS5 phrase (its quotes doubled)."""
    return '"' + text.replace('"', '""') + '"'


def fts_query(terms: Sequence[str], match: SearchMatch, some: Sequence[str] | None = None) -> str:
    """FTS5: every term as a prefix, or with `match="any"` some (of `some`, default all) but not all of them."""
    every = " AND ".join(fts_phrase(t) + "*" for t in terms)
    if match == "all":
        return every
    return f"({' OR '.join(fts_phrase(t) + '*' for t in (terms if some is None else some))}) NOT ({every})"


def fts_match(
    execute: Callable[[str, list[Any]], Iterable[Sequence[Any]]],
    table: str,
    terms: Sequence[str],
    match: SearchMatch,
) -> str | None:
    """What an FTS5 `table` is asked for `match` (`store.SearchMatch`): `fts_query`, or for `rarer`
    `fts_some_query`; None when nothing can match."""
    return fts_query(terms, match) if match != "rarer" else fts_some_query(execute, table, terms)


def fts_some_query(
    execute: Callable[[str, list[Any]], Iterable[Sequence[Any]]], table: str, terms: Sequence[str]
) -> str | None:
    """`fts_query(terms, "any")` within the work budget (`ranking` Rule 4): its matches in the FTS5
    `table` and each term's, counted up to one past the budget (the count reads the term's entries of
    the index, never a note), then the rarest terms within it; None when none is."""
    some = fts_query(terms, "any")
    capped = f"(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?))"
    params: list[Any] = []
    for query in (some, *(fts_phrase(t) + "*" for t in terms)):
        params += [query, SOME_BUDGET + 1]
    union, *counts = next(iter(execute(f"SELECT {', '.join([capped] * (len(terms) + 1))}", params)))
    if union <= SOME_BUDGET:
        return some
    rare = budgeted(terms, counts)
    return fts_query(terms, "any", rare) if rare else None


def prefix_range(column: str, prefix: str) -> tuple[str, tuple[str, ...]]:
    """SQL restricting `column` to paths below directory `prefix` ("" is everything)."""
    return within_regions(column, (prefix,))


def with_time_and_folder(
    filters: NoteFilter, clauses: list[str], params: list[Any], *, modified: str, note_id: str
) -> tuple[str, list[Any]]:
    """`clauses` and the tests of `filters` on the note's own row (dates, folder), as ` AND ...` SQL;
    `modified` and `note_id` name the store's columns (nanoseconds, the note's id)."""
    if filters.modified_after_ns is not None:
        clauses.append(f"{modified} > ?")
        params.append(filters.modified_after_ns)
    if filters.modified_before_ns is not None:
        clauses.append(f"{modified} < ?")
        params.append(filters.modified_before_ns)
    within, bounds = prefix_range(note_id, filters.folder.strip("/"))
    return "".join(f" AND {c}" for c in clauses) + within, params + list(bounds)


def new_trash_id() -> str:
    """A trash entry's id: when (UTC, to the second) and 12 random hex digits."""
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"


class MemoLookup:
    """`links.VaultLookup` remembering each answer for one resolution pass; a store says how to ask."""

    def __init__(self) -> None:
        self._paths: dict[str, str | None] = {}
        self._names: dict[str, list[str]] = {}
        self._aliases: dict[str, list[str]] = {}

    def by_path(self, key: str) -> str | None:
        if key not in self._paths:
            self._paths[key] = self._path(key)
        return self._paths[key]

    def by_name(self, key: str) -> list[str]:
        if key not in self._names:
            self._names[key] = self._names_of(key)
        return self._names[key]

    def by_alias(self, key: str) -> list[str]:
        if key not in self._aliases:
            self._aliases[key] = self._aliased(key)
        return self._aliases[key]

    def _path(self, key: str) -> str | None:
        """The note whose path key is `key` (a path's name is its last component), or None."""
        raise NotImplementedError

    def _names_of(self, key: str) -> list[str]:
        """The notes whose name key is `key`."""
        raise NotImplementedError

    def _aliased(self, key: str) -> list[str]:
        """The notes with an alias whose key is `key`."""
        raise NotImplementedError


AnchorFacts = tuple[tuple[Heading, ...], tuple[str, ...]]
"""A note's headings and block ids: what a link's anchor is looked up in."""


class AnchorMemo:
    """Whether link targets have their anchors, each target read once per pass; a store says how
    to read one (`_facts`), None where it shows no verdict (gone, or out of the caller's reach)."""

    def __init__(self) -> None:
        self._seen: dict[str, AnchorFacts | None] = {}

    def found(
        self, target: str, anchor: str, style: str, identity: tuple[int, int, int, int] | None = None
    ) -> bool | None:
        """`identity`: the target's (dev, ino, size, mtime_ns) where the store knows it (files)."""
        if target not in self._seen:
            self._seen[target] = self._facts(target, identity)
        facts = self._seen[target]
        if facts is None:
            return None
        return anchor_found(anchor, style, facts[0], facts[1])

    def _facts(self, target: str, identity: tuple[int, int, int, int] | None) -> AnchorFacts | None:
        raise NotImplementedError
