"""One page of `notes_search`: words and, with a model, meaning, fused (`notes.ranking`), then the
notes further down the words' ranking.

Rule 1 (the head): the first hits are the fusion of the store's `DEPTH` best notes with every word,
when there are no more than `DEPTH` of those its `DEPTH` best with some of them, and, with a model,
the `DEPTH` notes
closest in meaning (after `embed_pending`, so vectors are current; its progress follows the
index's in one growing count, `store.phased`). Filters and the caller's reach apply to all of them.
With a model, "some of them" is ranked within the work budget of `ranking` Rule 4 (`match="rarer"`:
past it, by the rarer words only, meaning carrying what the common words would bring); without
one, words are all a search has, and every note with some of them is ranked, as before issue 25.

Rule 2 (the tail): after the head, pages go on down the words' ranking from where the head's
candidates stopped (every word, then some), leaving out the notes the head showed. A page's cursor
is its last hit's (phase, rank, id): phase 0 is the head (rank: the hit's place in it), 1 and 2 the
tail's two kinds of words hits (the store's rank), 3 a filters-only listing. The head is computed
again for every page (the tail needs its notes), so a page costs what the first does.

A note found by meaning alone must be at least `MEANING_FLOOR` close.

Rule 3 (snippets): a hit found by words shows the store's snippet (`notes.snippets`); one found by
meaning only shows the start of the section that matched, the page's such notes read together
(`read_notes`: one statement on the SQL stores, not one per note).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from notewarden.notes.editing import section_text
from notewarden.notes.markdown import HeadingLookupError, find_heading, headings
from notewarden.notes.ranking import MEANING_WEIGHTS, Candidate, Fused, fuse
from notewarden.notes.snippets import snippet
from notewarden.notes.store import NoteFilter, NoteStore, ProgressSink, SearchHit, SearchMatch, phased
from notewarden.scope.grants import WorkspaceScope

if TYPE_CHECKING:
    from notewarden.notes.vectors import Embedder

__all__ = ["DEPTH", "Page", "Position", "Shown", "search_page"]

DEPTH = 30
MEANING_FLOOR = 0.18
"""A note meaning finds less close than this (cosine) is left out: with the bundled model, 95% of the
wrong notes in the top 20 of bench/relevance's questions score below 0.28 and half below 0.15; the
weakest quarter of the right ones 0.12-0.22 (docs/performance.md, "Search by meaning"). A floor
keeps a one-word query like "found" from listing every note, at the cost of the faintest right
answers."""
HEAD, EVERY_WORD, SOME_WORDS, FILTERS = 0, 1, 2, 3
Position = tuple[int, float, str]
"""(phase, rank, note id) of a page's last hit (Rule 2)."""


@dataclass(frozen=True, slots=True)
class Shown:
    hit: Fused
    position: Position


@dataclass(frozen=True, slots=True)
class Page:
    hits: list[Shown]
    more: bool


def _candidates(found: Sequence[SearchHit], *, all_words: bool) -> list[Candidate]:
    return [Candidate(h.note, h.aliases, h, all_words) for h in found]


def _words_only(hit: SearchHit, all_words: bool) -> Fused:
    return Fused(hit.note, 0.0, "words", all_words, hit, None)


def search_page(
    store: NoteStore,
    scope: WorkspaceScope,
    terms: Sequence[str],
    question: str | None,
    *,
    embedder: Embedder | None,
    filters: NoteFilter | None,
    limit: int,
    after: Position | None,
    progress: ProgressSink | None = None,
    meaning_weight: float = MEANING_WEIGHTS["bundled"],
) -> Page:
    """Rules 1-3: the page after `after` (None: the first); `meaning_weight` is the model's weight in
    the fusion (`ranking` Rule 2)."""
    if not terms:
        listed_after = None if after is None else (after[1], after[2])
        listed = store.search(
            scope, [], after=listed_after, limit=limit + 1, progress=progress, filters=filters
        )
        return Page(
            [Shown(_words_only(h, False), (FILTERS, h.position[0], h.position[1])) for h in listed[:limit]],
            len(listed) > limit,
        )

    indexing, embedding = phased(progress)
    some_match: SearchMatch = "any" if embedder is None or question is None else "rarer"
    every = store.search(scope, terms, after=None, limit=DEPTH + 1, progress=indexing, filters=filters)
    some = (  # as before issue 25, notes with some of the words only when too few have them all
        store.search(scope, terms, after=None, limit=DEPTH + 1, match=some_match, filters=filters)
        if len(terms) > 1 and len(every) <= DEPTH
        else []
    )
    meaning: list[Candidate] = []
    if embedder is not None and question is not None:
        store.embed_pending(scope, embedder, progress=embedding)
        query = embedder.embed([question])[0]
        near = store.nearest(scope, embedder, query, limit=DEPTH, filters=filters)
        meaning = [
            Candidate(n.note, n.aliases, None, False, n.section) for n in near if n.score >= MEANING_FLOOR
        ]
    words = _candidates(every[:DEPTH], all_words=True) + _candidates(some[:DEPTH], all_words=False)
    head = fuse(terms, words, meaning, meaning_weight)
    head_ids = {f.note.id for f in head}

    shown: list[Shown] = []
    phase, rank = (HEAD, -1.0) if after is None else (after[0], after[1])
    if phase == HEAD:
        first = int(rank) + 1
        for i, fused in enumerate(head[first:], first):
            shown.append(Shown(fused, (HEAD, float(i), fused.note.id)))
            if len(shown) > limit:
                break
    tails: list[tuple[int, Sequence[SearchHit], SearchMatch]] = [
        (EVERY_WORD, every, "all"),
        (SOME_WORDS, some, some_match),
    ]
    for tail_phase, found, match in tails:
        if len(shown) > limit or phase > tail_phase or len(found) <= DEPTH:
            continue
        resume = (
            (after[1], after[2]) if after is not None and phase == tail_phase else found[DEPTH - 1].position
        )
        while len(shown) <= limit:
            more = store.search(scope, terms, after=resume, limit=limit + 1, match=match, filters=filters)
            for hit in more:
                if hit.note.id not in head_ids:
                    shown.append(
                        Shown(_words_only(hit, tail_phase == EVERY_WORD), (tail_phase, *hit.position))
                    )
            if len(more) <= limit:
                break
            resume = more[-1].position
    page = shown[:limit]
    return Page(_with_section_snippets(store, scope, page, terms), len(shown) > limit)


def _with_section_snippets(
    store: NoteStore, scope: WorkspaceScope, page: list[Shown], terms: Sequence[str]
) -> list[Shown]:
    """Rule 3: the snippets of the hits shown: the store's for words, the section's for meaning alone
    (their notes read in one `read_notes`)."""
    alone = [s.hit.note.id for s in page if s.hit.hit is None and s.hit.section is not None]
    bodies = store.read_notes(scope, alone) if alone else {}
    done = []
    for shown in page:
        hit = shown.hit
        if hit.hit is not None:
            text = hit.hit.snippet
        elif hit.section is not None:
            read = bodies.get(hit.note.id)
            whole = read.data.decode("utf-8", errors="replace") if read is not None else ""
            part = whole
            if hit.section:
                try:
                    part = section_text(whole, find_heading(headings(whole), hit.section))
                except HeadingLookupError:
                    part = whole
            text = snippet(part, terms)
        else:
            text = ""
        done.append(Shown(replace(hit, snippet=text), shown.position))
    return done
