"""What the SQL stores compute from a note when it is written, so that no query parses a body.

Rule 1: every derived column is a function of the row's (path, body) alone, computed here when
notewarden writes the row. A row's derived columns are current when `derived_version = version`:
notewarden sets both in the statement that writes the body (but for a large body, which it leaves
to the next query: `notes.sql` Rule 3); any other writer (an importer, a
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
index's FTS5 tokens (`porter unicode61 remove_diacritics 2`): runs of letters and digits, case-folded,
diacritics removed, then Porter-stemmed as FTS5 stems them (`notes.stemming`, whose Rule 1 says why
not PostgreSQL's `english`). They are computed here, not by PostgreSQL's parser, so every store
agrees on what a word is (PostgreSQL's parser reads `reports/tps.md` as one "file" token and depends
on the database's locale). The `tsvector` carries each stem's positions with weight A (title),
B (path) or C (body); a query term is stemmed and matched as a prefix (`'share':*` for "sharing",
as FTS5 reads `"sharing"*`), and a term the tokenizer splits (`foo_bar`) is a phrase
(`'foo' <-> 'bar':*`). The ranked fallback asks for notes with some but not all of the terms:
`(a | b) & !(a & b)`, past `ranking` Rule 4's budget some of the rarer ones only. Ranking scores each term on its own, exact and as a prefix, ORed
(`search_rank_queries`): `ts_rank` scores a prefix item by one of the words it matches, not all of
them, so `'css':*` alone scored the note titled "CSS snippets" by `cssclasses` in its body (4e-7
instead of 0.99); the exact item scores the title's own word. And the terms are weighted by how
rare they are (`notes.sql` Rule 2): bm25 does that in the other stores, `ts_rank` does not, and
without it "phishing email" ranked notes with a common word above the one about phishing.

Rule 5 (what notes know, issue 14): the note's tags, aliases, links and properties are
`markdown.parse_note`'s, over its first `PARSED_CHARS` (the files index reads as much), and its
link keys are `links.name_key`/`links.note_key` of its path. Tags are kept folded, with the parents
of a nested tag (`area` for `area/sub`) so that a filter on `area` finds it by one key; a property
is kept per value (per item of a list) as text (strings, dates as ISO text) or a number (numbers,
and booleans as 1 and 0, as SQLite's JSON functions read them), so that equals, in, before and
after are index range lookups.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from notewarden.notes.links import name_key, note_key
from notewarden.notes.markdown import NoteFacts, fold, parse_note, tag_key, title_of
from notewarden.notes.model import TITLE_SCAN_BYTES, note_stem
from notewarden.notes.stemming import stem

__all__ = [
    "Derived",
    "derive",
    "derived_title",
    "fold_words",
    "gram_token",
    "json_escaped",
    "search_query",
    "search_rank_queries",
    "search_vector",
    "stemmed_words",
    "title_patterns",
]

_TOKEN = re.compile(r"[^\W_]+")
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


def stemmed_words(text: str) -> list[str]:
    """The words of `text` as every store indexes them: FTS5 `porter unicode61` tokens (Rule 4)."""
    return [stem(w) for w in fold_words(text)]


def json_escaped(word: str) -> str:
    """`word` as it appears inside a JSON string written by `json.dumps(..., ensure_ascii=False)`."""
    return json.dumps(word, ensure_ascii=False)[1:-1]


def _term_items(terms: Sequence[str]) -> list[list[str]]:
    return [words for words in (stemmed_words(term) for term in terms) if words]


def _tsquery_parts(terms: Sequence[str]) -> list[str]:
    return ["(" + " <-> ".join(f"'{w}'" for w in words) + ":*)" for words in _term_items(terms)]


def search_query(terms: Sequence[str], match: str = "all", some: Sequence[str] | None = None) -> str | None:
    """A `tsquery` (text form) matching notes where every term starts a word (Rule 4), or with
    `match="any"` some (of `some`, default all) but not all of them; None when no term (of `some`)
    has a word in it."""
    parts = _tsquery_parts(terms)
    ors = parts if some is None else _tsquery_parts(some)
    if not parts or not ors:
        return None
    every = " & ".join(parts)
    return every if match == "all" else f"({' | '.join(ors)}) & !({every})"


def search_rank_queries(terms: Sequence[str]) -> list[tuple[str, str]]:
    """Per term with a word in it, (the `tsquery` that finds it, the one that ranks it) (Rule 4): the
    second has the term exact and as a prefix, ORed, so the word itself is scored."""
    found = []
    for words in _term_items(terms):
        phrase = " <-> ".join(f"'{w}'" for w in words)
        found.append((f"{phrase}:*", f"({phrase}) | ({phrase}:*)"))
    return found


PARSED_CHARS = 1024 * 1024
"""Only the first MiB of a note is parsed for links, tags and properties (as in the files index)."""


@dataclass(frozen=True, slots=True)
class Derived:
    title: str
    keys: tuple[str, ...]
    """Rule 2: title, stem, aliases; case-folded, distinct, in that order."""
    facts: NoteFacts
    """`markdown.parse_note` of the note (Rule 5)."""
    name_key: str
    path_key: str

    @property
    def keys_json(self) -> str:
        return json.dumps(list(self.keys), ensure_ascii=False)

    @property
    def front_matter_json(self) -> str | None:
        matter = self.facts.properties
        return None if matter is None else json.dumps(matter, ensure_ascii=False)

    @property
    def tags(self) -> dict[str, str | None]:
        """Rule 5: folded tag -> the tag as first written, and each parent of a nested tag -> None."""
        found: dict[str, str | None] = {}
        for tag in self.facts.tags:
            found.setdefault(tag_key(tag.name), tag.name)
        for key in list(found):
            parts = key.split("/")
            for end in range(1, len(parts)):
                found.setdefault("/".join(parts[:end]), None)
        return found

    @property
    def aliases(self) -> set[str]:
        return {fold(a) for a in self.facts.aliases}

    @property
    def properties(self) -> list[tuple[str, str | None, float | None]]:
        """Rule 5: (name, text, number) of each front-matter value, one per item of a list."""
        rows: list[tuple[str, str | None, float | None]] = []
        for name, value in (self.facts.properties or {}).items():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str):
                    rows.append((name, item, None))
                elif isinstance(item, bool | int | float):
                    rows.append((name, None, float(item)))
                elif item is None:
                    rows.append((name, None, None))
        return rows

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
    stem = note_stem(path)
    facts = parse_note(body[:PARSED_CHARS], stem, with_headings=False)
    # parse_note's title is the whole note's; the stores' rule reads only the head (markdown Rule 4)
    title = facts.title if len(body) * 4 <= TITLE_SCAN_BYTES else title_of(body[:TITLE_SCAN_BYTES], stem)
    keys = dict.fromkeys(" ".join(k.casefold().split()) for k in (title, stem, *facts.aliases))
    return Derived(
        title=title,
        keys=tuple(k for k in keys if k),
        facts=facts,
        name_key=name_key(path),
        path_key=note_key(path),
    )


def derived_title(path: str, body: str) -> str:
    """`derive(path, body).title`, reading no more than the head of the body whatever its size."""
    if len(body) * 4 <= TITLE_SCAN_BYTES:
        return derive(path, body).title
    return title_of(body[:TITLE_SCAN_BYTES], note_stem(path))


def search_vector(title: str, path: str, body: str) -> str:
    """The PostgreSQL `tsvector` (text form) of a note's words, weighted by where they are (Rule 4)."""
    positions: dict[str, list[str]] = {}
    size = 0
    position = 0
    for weight, text in zip(_WEIGHTS, (title, path, body), strict=True):
        for word in stemmed_words(text):
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
