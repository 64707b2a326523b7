"""What the SQL stores compute from a note when it is written, so that no query parses a body.

Rule 1: every derived column is a function of the row's (path, body) alone, computed here when
notewarden writes the row. A row's derived columns are current when `derived_version = version`:
notewarden sets both in the statement that writes the body; any other writer (an importer, a
sync job writing `notes` directly) leaves `derived_version` behind, because the version trigger
bumps `version` whoever writes. The store re-derives such rows before its next query of that
workspace (`notes.sql`, Rule 3), so a row written by another program is found by its new title
and words, never by its old ones. A release that changes what is derived marks every row stale
in a migration step (`UPDATE notes SET derived_version = NULL`).

Rule 2: a note's title keys are its title (`markdown` Rule 4), its file stem and each of its
front-matter `aliases` (a list, or one string), case-folded, with every run of white space made
one space (a query word never holds white space, so this changes no match). A title query
matches a note when one of its keys contains every word of the query: `title_matches` applied
per key, in SQL.

Rule 3: the keys are indexed two ways. Words of three characters or more go through a trigram
index of the keys' JSON text; a word is looked up by its JSON-escaped form, which is a substring
of the JSON text of any key that contains the word (the index only narrows; each key is then
checked exactly). A query whose words are all shorter goes through the keys' one- and
two-character grams (`title_grams`), so it never reads a whole workspace either.

Rule 4 (PostgreSQL full text): the words of the title, the path and the body are the files
index's FTS5 tokens (`unicode61 remove_diacritics 2`): runs of letters and digits, case-folded,
diacritics removed. They are computed here, not by PostgreSQL's parser, so both stores agree
on what a word is (PostgreSQL's parser reads `reports/tps.md` as one "file" token and depends
on the database's locale). The `tsvector` carries each word's positions with weight A (title),
B (path) or C (body); a query term is a prefix (`'rep':*`), and a term the tokenizer splits
(`foo_bar`) is a phrase (`'foo' <-> 'bar':*`), as FTS5 reads it.
"""

from __future__ import annotations

import datetime
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from notewarden.notes.markdown import json_value, split_front_matter, title_of
from notewarden.notes.model import TITLE_SCAN_BYTES, note_stem

__all__ = [
    "Derived",
    "derive",
    "fold_words",
    "gram_token",
    "json_escaped",
    "search_query",
    "search_vector",
    "title_patterns",
]

_TOKEN = re.compile(r"[^\W_]+")
_TAG_SPLIT = re.compile(r"[\s,]+")
_MAX_POSITION = 16383  # PostgreSQL keeps word positions up to this
_MAX_POSITIONS_PER_WORD = 256
_MAX_WORD_BYTES = 2047
_MAX_VECTOR_BYTES = 1_000_000  # a tsvector's words may not exceed 1 MiB in all
_WEIGHTS = "ABC"  # title, path, body


def fold_words(text: str) -> list[str]:
    """The FTS5 `unicode61 remove_diacritics 2` tokens of `text` (Rule 4)."""
    decomposed = unicodedata.normalize("NFD", text.casefold())
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _TOKEN.findall(unicodedata.normalize("NFC", stripped))


def json_escaped(word: str) -> str:
    """`word` as it appears inside a JSON string written by `json.dumps(..., ensure_ascii=False)`."""
    return json.dumps(word, ensure_ascii=False)[1:-1]


def search_query(terms: Sequence[str]) -> str | None:
    """A `tsquery` (text form) matching notes where every term starts a word (Rule 4); None when
    no term has a word in it."""
    parts = []
    for term in terms:
        words = fold_words(term)
        if words:
            parts.append(" <-> ".join(f"'{w}'" for w in words) + ":*")
    return " & ".join(parts) if parts else None


def _plain(value: object) -> str | None:
    """A front-matter scalar as text (as `markdown` reads a title), None for anything else."""
    if isinstance(value, datetime.date):
        value = value.isoformat()
    if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()
    return None


def _listed(value: object) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [text for item in items if (text := _plain(item)) is not None]


@dataclass(frozen=True, slots=True)
class Derived:
    title: str
    keys: tuple[str, ...]
    """Rule 2: title, stem, aliases; case-folded, distinct, in that order."""
    front_matter: dict[str, Any] | None
    tags: tuple[str, ...]
    """Front-matter `tags` (a list, or one string of words separated by commas or spaces), `#` dropped."""

    @property
    def keys_json(self) -> str:
        return json.dumps(list(self.keys), ensure_ascii=False)

    @property
    def front_matter_json(self) -> str | None:
        return None if self.front_matter is None else json.dumps(self.front_matter, ensure_ascii=False)

    @property
    def tags_json(self) -> str:
        return json.dumps(list(self.tags), ensure_ascii=False)

    @property
    def grams(self) -> list[str]:
        """Rule 3: every distinct substring of one or two characters of any key."""
        found: dict[str, None] = {}
        for key in self.keys:
            for size in (1, 2):
                for i in range(len(key) - size + 1):
                    found[key[i : i + size]] = None
        return list(found)

    @property
    def grams_text(self) -> str:
        """The grams as FTS5 `ascii` tokens (hex of their UTF-8), for SQLite."""
        return " ".join(gram_token(g) for g in self.grams)


def gram_token(gram: str) -> str:
    return gram.encode().hex()


def derive(path: str, body: str) -> Derived:
    head = body[:TITLE_SCAN_BYTES]
    stem = note_stem(path)
    title = title_of(head, stem)
    front = split_front_matter(head)
    data = front.data if front is not None else None
    try:
        matter = json_value(data) if data is not None else None
    except ValueError:
        matter = None  # expands past JSON_NODES_MAX: kept out of the index, the note is still a note
    aliases = _listed(data.get("aliases")) if data is not None else []
    tags: list[str] = []
    if data is not None:
        raw = data.get("tags")
        words = _TAG_SPLIT.split(raw) if isinstance(raw, str) else _listed(raw)
        tags = list(dict.fromkeys(t.lstrip("#") for t in words if t.lstrip("#")))
    keys = dict.fromkeys(" ".join(k.casefold().split()) for k in (title, stem, *aliases))
    return Derived(title=title, keys=tuple(k for k in keys if k), front_matter=matter, tags=tuple(tags))


def search_vector(title: str, path: str, body: str) -> str:
    """The PostgreSQL `tsvector` (text form) of a note's words, weighted by where they are (Rule 4)."""
    positions: dict[str, list[str]] = {}
    size = 0
    position = 0
    for weight, text in zip(_WEIGHTS, (title, path, body), strict=True):
        for word in fold_words(text):
            position = min(position + 1, _MAX_POSITION)
            seen = positions.get(word)
            if seen is None:
                length = len(word.encode())
                if length > _MAX_WORD_BYTES or size + length > _MAX_VECTOR_BYTES:
                    continue
                size += length
                positions[word] = seen = []
            if len(seen) < _MAX_POSITIONS_PER_WORD:
                seen.append(f"{position}{weight}")
    return " ".join(f"'{word}':{','.join(dict.fromkeys(at))}" for word, at in positions.items())


def title_patterns(words: Iterable[str]) -> tuple[list[str], list[str]]:
    """(words of three characters or more, the others): which index each word can use (Rule 3)."""
    words = list(words)
    return [w for w in words if len(w) >= 3], [w for w in words if len(w) < 3]
