"""The snippet a search hit shows, made the same way for every store from the note's text.

Rule 1: a snippet is shown text, never front matter: the YAML block at the top of a note is cut off
before anything is looked at (a hit found only by a front-matter word shows the start of the text).

Rule 2: the window is the run of `WINDOW_WORDS` words with the most query terms in it (each term
counted once, then by how often), first such run wins; words matching a term are marked `**…**`.
A word matches a term as the full-text index does (`notes.derived`: folded, stemmed, the term's
stem a prefix of the word's). `…` marks text left out before or after. Line breaks become spaces.

Rule 3: only the first `SNIPPET_SCAN_CHARS` of the text are read, so a snippet costs the same on
a note of any size.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence

from notewarden.notes.derived import fold_words, stemmed_words
from notewarden.notes.markdown import split_front_matter
from notewarden.notes.stemming import stem

__all__ = ["SNIPPET_SCAN_CHARS", "WINDOW_WORDS", "matching_stems", "snippet", "text_after_front_matter"]

SNIPPET_SCAN_CHARS = 20_000
WINDOW_WORDS = 24
_WORD = re.compile(r"[^\W_]+")


def text_after_front_matter(text: str) -> str:
    """The note's text without its front matter (Rule 1)."""
    front = split_front_matter(text[:SNIPPET_SCAN_CHARS])
    return text[front.end :] if front is not None else text


def matching_stems(terms: Sequence[str]) -> list[str]:
    """The stems a word must start with to match each query term (Rule 2), one per term."""
    return [" ".join(stemmed_words(t)) for t in terms if fold_words(t)]


def _folded(word: str) -> str:
    return word.casefold() if word.isascii() else "".join(fold_words(word))


def _term_of(word: str, stems: Sequence[str]) -> int | None:
    key = stem(_folded(word))
    for i, wanted in enumerate(stems):
        if key.startswith(wanted):
            return i
    return None


def _hits(body: str, spans: Sequence[tuple[int, int]], stems: Sequence[str]) -> dict[int, int]:
    """Word index -> the term it matches. Only words that begin like a term's stem are stemmed
    (most words: no stemming needed to say no), found by one regular expression over ASCII text;
    text with other letters is folded word by word."""
    heads = tuple(sorted({s[:3] for s in stems}, key=len, reverse=True))
    if body.isascii():
        starts = [a for a, _ in spans]
        begins = re.compile("(?<![^\\W_])(?:" + "|".join(map(re.escape, heads)) + ")", re.IGNORECASE)
        at_word = ((bisect_left(starts, m.start()), m.start()) for m in begins.finditer(body))
        candidates = [i for i, start in at_word if i < len(starts) and starts[i] == start]
    else:
        candidates = [i for i, (a, b) in enumerate(spans) if _folded(body[a:b]).startswith(heads)]
    found = {}
    for i in candidates:
        a, b = spans[i]
        term = _term_of(body[a:b], stems)
        if term is not None:
            found[i] = term
    return found


def snippet(text: str, terms: Sequence[str]) -> str:
    """Rules 1-3: the best window of the note's text for `terms`, matches in bold."""
    body = text_after_front_matter(text[:SNIPPET_SCAN_CHARS])
    spans = [m.span() for m in _WORD.finditer(body)]
    if not spans:
        return ""
    stems = [s.split(" ")[0] for s in matching_stems(terms)]
    hits = _hits(body, spans, stems) if stems else {}
    # The best window is the first with the most distinct terms, then the most matches; a window's
    # score grows only when a match enters it, so only windows ending at a match are candidates.
    best_start, best_score = 0, (0, 0)
    at = sorted(hits)
    first = 0
    for last, end in enumerate(at):
        start = end - WINDOW_WORDS + 1
        while at[first] < start:
            first += 1
        inside = [hits[i] for i in at[first : last + 1]]
        score = (len(set(inside)), len(inside))
        if score > best_score:
            best_start, best_score = max(start, 0), score
    chosen = spans[best_start : best_start + WINDOW_WORDS]
    end = best_start + len(chosen)
    pieces, cursor = [], chosen[0][0]
    for index, (a, b) in enumerate(chosen, best_start):
        pieces.append(body[cursor:a])
        pieces.append(f"**{body[a:b]}**" if index in hits else body[a:b])
        cursor = b
    shown = " ".join("".join(pieces).split())
    before = "…" if best_start > 0 else ""
    after = "…" if end < len(spans) else ""
    return f"{before}{shown}{after}"
