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


def _term_of(word: str, stems: Sequence[str], heads: Sequence[str]) -> int | None:
    folded = word.casefold() if word.isascii() else "".join(fold_words(word))
    if not folded.startswith(tuple(heads)):  # most words: no stemming needed to say no
        return None
    key = stem(folded)
    for i, wanted in enumerate(stems):
        if key.startswith(wanted):
            return i
    return None


def snippet(text: str, terms: Sequence[str]) -> str:
    """Rules 1-3: the best window of the note's text for `terms`, matches in bold."""
    body = text_after_front_matter(text[:SNIPPET_SCAN_CHARS])
    spans = [(m.start(), m.end()) for m in _WORD.finditer(body)]
    if not spans:
        return ""
    stems = [s.split(" ")[0] for s in matching_stems(terms)]
    heads = [s[:3] for s in stems]
    hits = [_term_of(body[a:b], stems, heads) for a, b in spans] if stems else [None] * len(spans)
    best_start, best_score = 0, (0, 0)
    counts: dict[int, int] = {}
    for end, hit in enumerate(hits):  # a sliding window: O(words)
        if hit is not None:
            counts[hit] = counts.get(hit, 0) + 1
        start = end - WINDOW_WORDS + 1
        if start > 0 and (gone := hits[start - 1]) is not None:
            counts[gone] -= 1
            if not counts[gone]:
                del counts[gone]
        score = (len(counts), sum(counts.values()))
        if score > best_score:
            best_start, best_score = max(start, 0), score
    chosen = spans[best_start : best_start + WINDOW_WORDS]
    end = best_start + len(chosen)
    pieces, at = [], chosen[0][0]
    for (a, b), hit in zip(chosen, hits[best_start:end], strict=True):
        pieces.append(body[at:a])
        pieces.append(f"**{body[a:b]}**" if hit is not None else body[a:b])
        at = b
    shown = " ".join("".join(pieces).split())
    before = "…" if best_start > 0 else ""
    after = "…" if end < len(spans) else ""
    return f"{before}{shown}{after}"
