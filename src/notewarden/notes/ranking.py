"""How a search's rankings become one list (issue 25): reciprocal rank fusion of three rankings.

Rule 1 (the rankings), each best first:

| ranking   | what is in it                                                      | order                             |
|-----------|--------------------------------------------------------------------|-----------------------------------|
| `every`   | the store's full-text hits with every word                         | the store's (bm25 / ts_rank)      |
| `some`    | the store's full-text hits with some of the words                  | the store's                       |
| `names`   | the notes of the others whose title or an alias has query words    | most words, then the share of the name's words covered, then the words rankings |
| `meaning` | the notes whose best section is closest to the question (a model)  | cosine similarity                 |

`names` is what makes a title match outrank body matches: "frontmatter properties" finds notes with
both words in their text, but the note titled "Properties" is first in `names`. A word of a name
matches a query term as the full-text index would (stemmed; the term a prefix).

Rule 2 (fusion): a note's score is the sum over the rankings it is in of `weight / (K + rank)`, rank
from 1 (reciprocal rank fusion), ties by id; a `names` entry's weight is also multiplied by the
share of the query's terms its name has (one word of six is weak evidence, one of one is strong).
Ranks, not scores, are fused: bm25, `ts_rank` and cosine similarity are on scales that do not
compare, and ranks make the stores agree. A note with only some of the words weighs a tenth of one
with all of them: on questions in other words, one common word ("home", "week") is noise that
meaning should outrank. The weights and `K` were chosen by hand on both question sets of
bench/relevance (`bench/search_quality.py`; docs/performance.md has the tables with and without the
model). How much meaning weighs depends on the model, so it is the caller's (`meaning_weight`, from
`[search] meaning_weight`, else `MEANING_WEIGHTS` by provider): a static word model's ranking is
weak evidence (1.5), a sentence model's strong (5).

Rule 3 (what found it): a hit says whether words (it is in `every` or `some`), meaning (in `meaning`)
or both found it; `allWords` is true only for a note with every word.

Rule 4 (a work budget for `some`): ranking every note that has one of the question's words costs
O(notes) in every store, and a common word is in a share of all notes. So in a search with meaning
(`match="rarer"`), when more than `SOME_BUDGET` notes have some of the terms, the store ranks `some`
by the rarest terms only, those
whose numbers of notes add up to at most `SOME_BUDGET` (`budgeted`; none when even the rarest has
more): a note with only commoner words is left to `every` and `meaning`, as a search engine leaves
its commonest words to the notes that have the others. The numbers are the full-text index's own
(SQLite: a count of the term's matches, stopped past the budget; PostgreSQL: the planner's
statistics, `notes.sql` Rule 2). Where fewer notes than the budget have some of the terms (any
smaller workspace), `some` is as without it. A search by words alone (no model) ranks every note with
some of the terms (`match="any"`): nothing else would find a note whose words are all common.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from notewarden.notes.derived import stemmed_words
from notewarden.notes.model import Note
from notewarden.notes.store import SearchHit

__all__ = [
    "MEANING_WEIGHTS",
    "SOME_BUDGET",
    "WEIGHTS",
    "Candidate",
    "Fused",
    "K",
    "budgeted",
    "fuse",
    "name_match",
    "term_stems",
]

K = 5
WEIGHTS = {"every": 1.0, "some": 0.1, "names": 2.0}
"""Rule 2's weights of the rankings by words; meaning's is the caller's (`fuse`)."""
MEANING_WEIGHTS: dict[str, float] = {"bundled": 1.5, "endpoint": 5.0}
"""How much a rank by meaning weighs, by `[search]` provider, unless `[search] meaning_weight` says
(`embeddings.open_search_mode`). The bundled static word model's ranking is weak evidence: from 3
on, more weight costs keyword questions and gains little (1 and 1.5 are within a question of each
other on both sets of bench/relevance). An endpoint is assumed to serve a sentence model (what
Ollama, LM Studio and hosted APIs serve), whose ranking is strong: all-MiniLM-L6-v2 through the
endpoint gave paraphrased MRR@10 0.745 at 1.5 and 0.80 from 4 to 8, keyword questions unchanged
(docs/performance.md, "A sentence model behind the endpoint")."""
SOME_BUDGET = 1_000
"""Rule 4: at most about this many notes are ranked for `some` (docs/performance.md, "Search by meaning")."""

FoundBy = Literal["words", "meaning", "both"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A note one ranking found."""

    note: Note
    aliases: tuple[str, ...] = ()
    hit: SearchHit | None = None
    """The store's hit, for its snippet (made only for the hits shown)."""
    all_words: bool = False
    section: str | None = None
    """The section meaning found it in."""


@dataclass(frozen=True, slots=True)
class Fused:
    note: Note
    score: float
    found_by: FoundBy
    all_words: bool
    hit: SearchHit | None
    section: str | None
    snippet: str = ""


@lru_cache(maxsize=16384)
def _name_stems(name: str) -> list[str]:
    return stemmed_words(name)


def budgeted(terms: Sequence[str], counts: Sequence[float], budget: int = SOME_BUDGET) -> list[str]:
    """Rule 4: the rarest of `terms` (`counts`: each one's number of notes) whose counts add up to at
    most `budget`, in the order of `terms`."""
    kept: set[int] = set()
    spent = 0.0
    for i in sorted(range(len(terms)), key=lambda i: counts[i]):
        spent += counts[i]
        if spent > budget:
            break
        kept.add(i)
    return [t for i, t in enumerate(terms) if i in kept]


def term_stems(terms: Sequence[str]) -> list[list[str]]:
    """The query terms as `name_match` compares them: each term's stemmed words (empty ones left out)."""
    return [s for s in (stemmed_words(t) for t in terms) if s]


def name_match(stems: Sequence[Sequence[str]], names: Sequence[str]) -> tuple[int, float]:
    """(query terms some word of one name starts with, the share of that name's words they cover),
    best over the names (Rule 1); `stems` from `term_stems`."""
    best = (0, 0.0)
    for name in names:
        words = _name_stems(name)
        if not words:
            continue
        matched = [t for t in stems if any(w.startswith(t[0]) for w in words)]
        covered = sum(1 for w in words if any(w.startswith(t[0]) for t in stems))
        best = max(best, (len(matched), covered / len(words)))
    return best


def fuse(
    terms: Sequence[str],
    words: Sequence[Candidate],
    meaning: Sequence[Candidate],
    meaning_weight: float,
) -> list[Fused]:
    """Rule 2: `words` (every word first, then some) and `meaning` fused with `names`, best first;
    a rank in `meaning` weighs `meaning_weight`."""
    by_id: dict[str, Candidate] = {}
    for candidate in (*words, *meaning):
        by_id.setdefault(candidate.note.id, candidate)
    word_hits = {c.note.id: c for c in reversed(words)}
    meaning_hits = {c.note.id: c for c in reversed(meaning)}
    every = [c for c in words if c.all_words]
    some = [c for c in words if not c.all_words]
    ranks: dict[str, dict[str, int]] = {
        "every": {c.note.id: i for i, c in enumerate(every, 1)},
        "some": {c.note.id: i for i, c in enumerate(some, 1)},
        "meaning": {c.note.id: i for i, c in enumerate(meaning, 1)},
    }
    word_rank = {c.note.id: i for i, c in reversed(list(enumerate(words, 1)))}
    far = len(by_id) + 1
    named = []
    stems = term_stems(terms)
    for note_id, candidate in by_id.items():
        count, share = name_match(stems, (candidate.note.title, *candidate.aliases))
        if count:
            order = (-count, -share, word_rank.get(note_id, far), ranks["meaning"].get(note_id, far))
            named.append((order, note_id, count))
    ranks["names"] = {note_id: i for i, (_, note_id, _) in enumerate(sorted(named), 1)}
    name_share = {note_id: count / max(len(terms), 1) for _, note_id, count in named}
    weights = {**WEIGHTS, "meaning": meaning_weight}
    fused = []
    for note_id, candidate in by_id.items():
        score = 0.0
        for ranking, ranked in ranks.items():
            if note_id in ranked:
                weight = weights[ranking] * (name_share[note_id] if ranking == "names" else 1.0)
                score += weight / (K + ranked[note_id])
        word_hit, meaning_hit = word_hits.get(note_id), meaning_hits.get(note_id)
        found_by: FoundBy = (
            "both" if word_hit is not None and meaning_hit is not None else "words" if word_hit else "meaning"
        )
        fused.append(
            Fused(
                candidate.note,
                score,
                found_by,
                word_hit.all_words if word_hit is not None else False,
                word_hit.hit if word_hit is not None else None,
                meaning_hit.section if meaning_hit is not None else None,
            )
        )
    fused.sort(key=lambda f: (-f.score, f.note.id))
    return fused
