"""The work budget of a search's `some` ranking (`notes.ranking` Rule 4): only the rarest words whose
notes add up to the budget are ranked when more notes have some of the words; below it, nothing changes."""

from __future__ import annotations

import sqlite3

from notewarden.notes.ranking import SOME_BUDGET, budgeted
from notewarden.notes.store_kit import fts_query, fts_some_query


def test_the_rarest_terms_within_the_budget_are_kept_in_the_question_order() -> None:
    assert budgeted(["a", "b", "c"], [10, 20, 30], budget=60) == ["a", "b", "c"]
    assert budgeted(["common", "rare", "middling"], [5_000, 3, 900], budget=1_000) == ["rare", "middling"]
    assert budgeted(["common", "rare", "middling"], [5_000, 3, 998], budget=1_000) == ["rare"]
    assert budgeted(["common", "other"], [5_000, 4_000], budget=1_000) == []


def notes_table(bodies: list[str]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')")
    db.executemany("INSERT INTO t (body) VALUES (?)", [(b,) for b in bodies])
    return db


def test_fewer_notes_than_the_budget_rank_as_without_it() -> None:
    db = notes_table(["budget offsite"] * 10 + ["budget"] * 10 + ["team"] * 10)
    terms = ["budget", "team", "offsite"]
    assert fts_some_query(db.execute, "t", terms) == fts_query(terms, "any")


def test_past_the_budget_a_word_in_more_notes_is_left_out_and_the_query_reads_the_index() -> None:
    common = SOME_BUDGET + 1
    db = notes_table(["budget team"] * common + ["offsite budget"] * 3 + ["summer"] * 2)
    terms = ["budget", "offsite", "summer"]
    query = fts_some_query(db.execute, "t", terms)
    assert query == fts_query(terms, "any", ["offsite", "summer"])
    assert query is not None
    assert db.execute("SELECT count(*) FROM t WHERE t MATCH ?", [query]).fetchone() == (5,)
    assert fts_some_query(db.execute, "t", ["budget", "team"]) == fts_query(["budget", "team"], "any"), (
        "few notes have one but not both: as without the budget"
    )
    both_common = notes_table(["budget"] * common + ["team"] * common)
    assert fts_some_query(both_common.execute, "t", ["budget", "team"]) is None, "none ranked"
    capped = "SELECT count(*) FROM (SELECT 1 FROM t WHERE t MATCH ? LIMIT ?)"
    plan = [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + capped, ['"budget"*', 10])]
    assert [line for line in plan if line.startswith("SCAN t")] == ["SCAN t VIRTUAL TABLE INDEX 0:M1"], plan
