"""The note model shared by every store: identity, names and the candidate rule.

A note's id is its path relative to the workspace root, in POSIX form
(`reports/tps.md`). Its title is the front-matter `title:`, else the first level-1
heading as CommonMark reads the note (never one inside code, a comment or front matter),
else the file stem (`notes.markdown`); its aliases are the front matter's `aliases`.

The candidate rule (`matched_name`), which every store applies and the delete form shows: a
note matches a title query when one of its names contains every word of the query,
case-insensitively, each name taken alone: its title, else its file name (the stem: in a vault
most notes have no `# ` heading and people call a note by its file name), else one of its
aliases. The first name that matches is the one the form names.

A note's identity (`NoteIdentity`) is the store's, not the filesystem's: which stored object holds
the note and the state of it that was seen, so that a note replaced or changed since it was shown
compares unequal. The files store builds it from the file's device, inode, mtime and size
(`NoteIdentity.of_file`); the SQL stores from the row's id and version counter (which a trigger
bumps on every write), its modification time and its size.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from notewarden.notes.markdown import aliases_of, fold, json_value, split_front_matter, title_of
from notewarden.scope.fsroot import FileIdentity

__all__ = [
    "TITLE_SCAN_BYTES",
    "Note",
    "NoteIdentity",
    "compose_note",
    "content_version",
    "extract_names",
    "extract_title",
    "match_words",
    "matched_name",
    "nearly_same",
    "note_stem",
    "search_terms",
    "title_matches",
    "title_words",
]

TITLE_SCAN_BYTES = 64 * 1024
"""Only the head of a file is read to find its title; a note's title lives at the top."""

_WORD = re.compile(r"\w+")
MAX_SEARCH_TERMS = 16
STOP_WORDS = frozenset(
    {
        "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been",
        "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for", "from",
        "had", "has", "have", "having", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me",
        "my", "no", "not", "of", "on", "or", "our", "ours", "should", "so", "some", "than", "that",
        "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "up",
        "us", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
        "why", "will", "with", "would", "you", "your",
    }
)  # fmt: skip
"""English words too common to find anything with: dropped from a search (not from a title rule)."""


@dataclass(frozen=True, slots=True)
class NoteIdentity:
    """Which stored note was shown, in the state it was shown (module docstring)."""

    key: tuple[int, int]
    """What holds the note, as its store names it: the file's (device, inode) in the files store,
    the row's (id, version) in a SQL store."""
    modified_ns: int
    size: int

    @classmethod
    def of_file(cls, identity: FileIdentity) -> NoteIdentity:
        return cls((identity.dev, identity.ino), identity.mtime_ns, identity.size)

    def as_file(self) -> FileIdentity:
        """The same four integers as a `FileIdentity`: what the files store hands the workspace root
        as `expected`."""
        return FileIdentity(*self.key, self.modified_ns, self.size)

    def fingerprint(self) -> str:
        """The identity as a confirmation carries it (a `confirm.Candidate`'s opaque fingerprint)."""
        return f"{self.key[0]}:{self.key[1]}:{self.modified_ns}:{self.size}"

    @classmethod
    def from_fingerprint(cls, text: str) -> NoteIdentity:
        first, second, modified_ns, size = (int(part) for part in text.split(":"))
        return cls((first, second), modified_ns, size)


@dataclass(frozen=True, slots=True)
class Note:
    id: str
    title: str
    identity: NoteIdentity
    aliases: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return self.identity.size

    @property
    def modified(self) -> float:
        return self.identity.modified_ns / 1e9


def extract_title(head: bytes, note_id: str) -> str:
    """The note's title from the first `TITLE_SCAN_BYTES` of its content (`markdown` Rule 4)."""
    return title_of(head[:TITLE_SCAN_BYTES].decode("utf-8", errors="replace"), note_stem(note_id))


def extract_names(head: bytes, note_id: str) -> tuple[str, tuple[str, ...]]:
    """The note's title and aliases (`markdown` Rules 4 and 7) from the first `TITLE_SCAN_BYTES`."""
    text = head[:TITLE_SCAN_BYTES].decode("utf-8", errors="replace")
    front = split_front_matter(text)
    try:
        properties = json_value(front.data) if front is not None and front.data is not None else None
    except ValueError:  # a block that expands too far has no usable aliases
        properties = None
    return title_of(text, note_stem(note_id)), tuple(aliases_of(properties))


SIMILAR_RATIO = 0.9
_NOT_WORD = re.compile(r"[\W_]+")


def title_words(title: str) -> str:
    """A title's words, folded, punctuation dropped: how `notes_create` compares titles."""
    return _NOT_WORD.sub(" ", fold(title)).strip()


def nearly_same(a: str, b: str) -> bool:
    """Two `title_words` the same, or a difflib ratio of at least `SIMILAR_RATIO` (a typo)."""
    return a == b or difflib.SequenceMatcher(None, a, b).ratio() >= SIMILAR_RATIO


def note_stem(note_id: str) -> str:
    """The file name without its suffix: `reports/TPS report.md` -> `TPS report`."""
    name = note_id.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


def compose_note(title: str, body: str) -> str | None:
    """The text of a new note whose title reads back as `title`: a `# ` heading, or front matter
    where a heading would not survive (a title ending in '#'); None when neither does."""
    for text in (f"# {title}\n\n{body}", f"---\ntitle: {title}\n---\n\n{body}"):
        if extract_title(text.encode(), "") == title:
            return text
    return None


def match_words(query: str) -> tuple[str, ...]:
    return tuple(w.casefold() for w in query.split())


def search_terms(query: str) -> list[str]:
    """The words of a search query, case-folded, once each, without stop words (unless that leaves
    none); each must match the start of a word of the note's title, path or body (so `rep` finds
    "report"), after stemming (so "sharing" finds "shared")."""
    words = list(dict.fromkeys(_WORD.findall(query.casefold())))
    kept = [w for w in words if w not in STOP_WORDS]
    return (kept or words)[:MAX_SEARCH_TERMS]


def content_version(data: bytes) -> str:
    """A note's version: a digest of its exact bytes, so it changes exactly when the content does,
    whoever changed it and however (an editor, a sync tool, another server)."""
    return hashlib.sha256(data).hexdigest()[:32]


def title_matches(title: str, words: Iterable[str]) -> bool:
    folded = title.casefold()
    return all(w in folded for w in words)


def matched_name(note_id: str, title: str, aliases: Iterable[str], words: Iterable[str]) -> str | None:
    """The candidate rule (module docstring): which name of the note contains every word, as the
    form says it ("title", "file name", "alias “…”"), or None when no name does."""
    words = tuple(words)
    if title_matches(title, words):
        return "title"
    if title_matches(note_stem(note_id), words):
        return "file name"
    return next((f"alias “{alias}”" for alias in aliases if title_matches(alias, words)), None)
