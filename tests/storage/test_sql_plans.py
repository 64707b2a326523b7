"""No SQL store query reads every note: EXPLAIN of every statement the store runs, at 10,000 notes.

The store is driven through every method (listing, pages, title matching with long and short
words, search and its next page, reads, writes, moves, the trash, rows another program wrote)
on a real database holding 10,000 notes in the workspace under test and 2,000 in another, after
ANALYZE. Every statement it sent is recorded with its parameters and explained with them: a
sequential scan of `notes` (PostgreSQL `Seq Scan on notes`, SQLite `SCAN notes`, also of its
indexes) fails the test. PostgreSQL plans each statement for its values: without the
connections' `plan_cache_mode = force_custom_plan` (checked here), a statement psycopg has
prepared may get a plan made without them, and a full-text query then scans every note.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest

from notewarden.ledger import Ledger, LedgerTxn, SqlSession
from notewarden.ledger.postgres import PostgresLedger
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.change_log import CHANGE_LOG_SCHEMA
from notewarden.notes.history import HISTORY_SCHEMA, Change
from notewarden.notes.hybrid_search import search_page
from notewarden.notes.sql import SQL_STORE_SCHEMA, SqlNoteStore
from notewarden.notes.store import NoteFilter, PropertyTest, replace_with
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import parse_file_uri
from tests.pg import PgDatabase
from tests.store_changes import EMPTYING, SETUP, deleting

NOTES = 10_000
OTHER_NOTES = 2_000
WORKSPACE = parse_file_uri("file:///plans/team/notes")
OTHER = parse_file_uri("file:///plans/other/notes")
MOVE = Change("alice", "notes_move", "links follow the move")
FOREIGN_INSERT = "INSERT INTO notes (workspace, path, body, modified_ns) VALUES (?, ?, ?, ?)"
_SEQUENTIAL = {
    "postgres": re.compile(r"Seq Scan on notes(\s|$)"),
    "sqlite": re.compile(r"^SCAN (notes|n)\b"),
}


class Recording:
    """Passes every statement through to the real session, and remembers it with its parameters."""

    def __init__(self, session: Any, seen: dict[str, Sequence[object]]) -> None:
        self._session = session
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        self._seen.setdefault(sql, tuple(params))
        result: list[tuple[Any, ...]] = self._session.execute(sql, params)
        return result


class RecordingLedger:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.seen: dict[str, Sequence[object]] = {}

    @contextmanager
    def _wrap(self, opened: AbstractContextManager[Any]) -> Iterator[Any]:
        with opened as session:
            yield Recording(session, self.seen)

    def snapshot(self) -> AbstractContextManager[SqlSession]:
        return self._wrap(self.ledger.snapshot())

    def critical_section(self) -> AbstractContextManager[LedgerTxn]:
        return self._wrap(self.ledger.critical_section())


def body(i: int) -> str:
    """A note with front matter (tags, a status, a date, a number), an inline nested tag and links."""
    return (
        f"---\nstatus: {'active' if i % 500 == 0 else 'done'}\ndue: 2026-{i % 12 + 1:02d}-01\n"
        f"effort: {i % 13}\ntags: [team{i % 20:02d}]\naliases: [Report {i:05d}]\n---\n"
        f"# Weekly report {i:05d}\n\nMinutes of meeting {i:05d}: budget, roadmap and hiring. "
        f"#topic/t{i % 300}\n\nSee [[report-{i * 7 % NOTES:05d}]], [[Report {i * 3 % NOTES:05d}#Minutes]] "
        + ("and [the hub](/team00/report-00000.md)" if i % 100 == 1 else "")
        + ".\n"
    )


def seed(ledger: Ledger, workspace: str, count: int) -> None:
    store = SqlNoteStore(ledger)
    rows = [(f"team{i % 20:02d}/report-{i:05d}.md", body(i), time.time_ns()) for i in range(count)]
    with ledger.critical_section() as txn:
        store.add_rows(txn, workspace, rows)
    store.settle_after_bulk_write(workspace)


@pytest.fixture(params=["sqlite", "postgres"], scope="module")
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, pg: PgDatabase
) -> Iterator[Ledger]:
    ledger: Ledger
    if request.param == "sqlite":
        ledger = SqliteLedger(
            tmp_path_factory.mktemp("plans") / "notes.sqlite3",
            components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA],
        )
    else:
        name = pg.create()
        url = pg.url.rsplit("/", 1)[0] + "/" + name
        upgrader = PostgresLedger(
            url, components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA], check_schema=False
        )
        upgrader.upgrade()
        upgrader.close()
        ledger = PostgresLedger(url, components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA])
    seed(ledger, str(WORKSPACE), NOTES)
    seed(ledger, str(OTHER), OTHER_NOTES)
    with ledger.critical_section() as txn:
        txn.execute("ANALYZE")
    yield ledger
    ledger.close()


def exercise(store: SqlNoteStore, recorder: RecordingLedger) -> None:
    """Every store method, each way its SQL differs (`add_rows` sends the statement `create_note` does)."""
    everywhere = WorkspaceScope("alice", WORKSPACE, (), None)
    folder = WorkspaceScope("alice", WORKSPACE, ("team03",), None)
    store.list_notes(folder)
    store.list_page(everywhere, after="team01/report-00001.md", limit=20)
    store.list_page(folder, after=None, limit=20)
    assert len(store.find_titled(everywhere, ["weekly", "00042"])) == 1
    assert len(store.find_titled(folder, ["report", "00003"])) == 1
    assert len(store.find_titled(everywhere, ["x9"])) == 0, "only short words: the grams"
    first = store.search(everywhere, ["minutes", "00042"], after=None, limit=5)
    assert [h.note.id for h in first][:1] == ["team02/report-00042.md"]
    # a word in 5% of the notes (a word in every note is best read in full, and PostgreSQL does)
    page = store.search(everywhere, ["team03"], after=None, limit=10)
    store.search(folder, ["team03"], after=page[-1].position, limit=10)
    assert store.search(everywhere, ["budget", "zeppelin"], after=None, limit=5, match="any")
    assert store.search(everywhere, ["budget", "team03", "zeppelin"], after=None, limit=5, match="rarer")
    assert len(store.read_notes(everywhere, ["team02/report-00042.md", "team03/report-00003.md"])) == 2
    # what notes know; a move first, so that its notes are the recent ones
    started = time.time_ns()
    preview = store.move_note(
        everywhere, "team05/report-00005.md", "moved/five.md", relink=True, dry_run=True, change=MOVE
    )
    assert preview.relinked
    moved = store.move_note(everywhere, "team05/report-00005.md", "moved/five.md", relink=True, change=MOVE)
    assert [r.note_id for r in moved.relinked] == [r.note_id for r in preview.relinked]
    store.links(everywhere, "moved/five.md", limit=10)  # the links a move left to resolve
    for filters in (  # each as selective as a person's question: a few notes of 10,000
        NoteFilter(tags_all=("team03", "topic/t3")),
        NoteFilter(tags_any=("topic/t3", "topic/t7")),
        NoteFilter(properties=(PropertyTest("status", "equals", "active"),)),
        NoteFilter(properties=(PropertyTest("status", "in", ["active", 3]),)),
        NoteFilter(
            properties=(PropertyTest("due", "before", "2026-01-02"), PropertyTest("effort", "equals", 4))
        ),
        NoteFilter(
            properties=(PropertyTest("effort", "after", 11), PropertyTest("status", "equals", "active"))
        ),
        NoteFilter(modified_after_ns=started, modified_before_ns=time.time_ns()),
        NoteFilter(folder="team07", tags_all=("topic/t7",)),
        *DENSE,
    ):
        hits = store.search(everywhere, [], after=None, limit=3, filters=filters)
        assert hits, filters
        store.search(everywhere, [], after=hits[-1].position, limit=10, filters=filters)
        store.search(everywhere, ["00042"], after=None, limit=10, filters=filters)
    assert store.tags(everywhere, prefix="team", after=None, limit=5)
    assert store.tags(folder, prefix="", after="team", limit=5)
    hub = store.links(everywhere, "team00/report-00000.md", limit=10)
    assert hub.backlinks_total >= NOTES // 100 and hub.outgoing
    store.links(folder, "team03/report-00003.md", limit=10)
    assert store.recent(folder, since_ns=0, limit=10)
    assert store.similar_titles(everywhere, "Weekly report 00042")  # a typo or another digit is near
    assert store.complete_ids(folder, "team03/report-0000", limit=5)[0]
    assert store.complete_ids(everywhere, "report-0004", limit=5)[0]
    with recorder.critical_section() as txn:  # many notes at once: their links resolved in one pass
        store.add_rows(
            txn, str(WORKSPACE), [(f"zbulk/b{i:04d}.md", body(i), time.time_ns()) for i in range(600)]
        )
    store.settle_after_bulk_write(str(WORKSPACE))
    created = store.create_note(everywhere, "new/plan.md", b"# Plan\n\nnew words\n", change=SETUP)
    updated = store.rewrite_note(
        everywhere,
        "new/plan.md",
        replace_with(b"# Plan 2\n", created.version),
        change=Change("alice", "notes_update", "a new title"),
    ).after
    store.move_note(everywhere, "new/plan.md", "new/moved.md", change=SETUP)
    (note,) = store.notes_by_id(everywhere, ["new/moved.md"])
    assert updated.note.title == "Plan 2"
    with recorder.critical_section() as txn:
        trashed = store.move_to_trash(txn, everywhere, [note], change=deleting("alice", "c"))[0]
        store.list_trash(txn, everywhere)
    with recorder.critical_section() as txn:
        store.restore(txn, everywhere, trashed.trash_id, change=SETUP)
    (again,) = store.notes_by_id(everywhere, ["new/moved.md"])
    with recorder.critical_section() as txn:
        store.move_to_trash(txn, everywhere, [again], change=deleting("alice", "d"))
        store.purge_trash(txn, everywhere, store.list_trash(txn, everywhere), change=EMPTYING)
    with recorder.critical_section() as txn:  # another program's row: derived before the next query
        txn.execute(FOREIGN_INSERT, (str(WORKSPACE), "imported/x.md", "# Imported\n", time.time_ns()))
    assert [n.id for n in store.find_titled(everywhere, ["imported"])] == ["imported/x.md"]
    # notewarden export and import (notewarden.transfer): a workspace page by page, its trash
    assert next(iter(store.all_rows(str(WORKSPACE))))[0] == "imported/x.md"
    store.trash_rows(str(WORKSPACE))
    with recorder.critical_section() as txn:
        assert store.row_body(txn, str(WORKSPACE), "imported/x.md") == "# Imported\n"


DENSE = (  # filters that keep many notes of 10,000: walked through the time index (notes.sql Rule 6)
    NoteFilter(tags_all=("topic",)),  # every note (the parent of its #topic/tN)
    NoteFilter(tags_any=("team00", "team01", "team02", "team03")),  # 20%
    NoteFilter(properties=(PropertyTest("status", "equals", "done"),)),  # 99.8%
    NoteFilter(properties=(PropertyTest("effort", "in", [1, 2, 3, 4, 5]),)),  # 38%
    NoteFilter(modified_after_ns=0),  # every note
)


def plan_lines(ledger: Ledger, sql: str, params: Sequence[object]) -> list[str]:
    with ledger.snapshot() as db:
        if db.dialect == "sqlite":
            return [str(row[3]) for row in db.execute("EXPLAIN QUERY PLAN " + sql, params)]
        return [str(row[0]) for row in db.execute("EXPLAIN " + sql, params)]


def test_no_store_statement_scans_the_notes_table(seeded: Ledger) -> None:
    recorder = RecordingLedger(seeded)
    exercise(SqlNoteStore(recorder), recorder)  # type: ignore[arg-type]
    statements = {  # not the foreign write, nor the maintenance after a bulk write
        sql: params
        for sql, params in recorder.seen.items()
        if sql != FOREIGN_INSERT
        and not sql.startswith(("ANALYZE", "VACUUM", "SELECT gin_clean_pending_list"))
    }
    assert len(statements) >= 20, sorted(statements)
    with seeded.snapshot() as db:
        dialect = db.dialect
        if dialect == "postgres":
            # psycopg prepares a statement run five times: plans must stay the ones for its values
            assert db.execute("SHOW plan_cache_mode") == [("force_custom_plan",)]
    failures = []
    for sql, params in statements.items():
        lines = plan_lines(seeded, sql, params)
        if any(_SEQUENTIAL[dialect].search(line.strip()) for line in lines):
            failures.append(sql + "\n  " + "\n  ".join(lines))
    assert not failures, "\n\n".join(failures)


def test_filters_that_keep_many_notes_walk_the_time_index_and_sort_nothing(seeded: Ledger) -> None:
    """A filters-only search whose filters keep thousands of notes reads them newest first from
    `notes_by_time` and stops at the page's end: no sort of the notes that pass (the issue's tag on
    10% of the notes read every note and sorted them), on the first page and the next."""
    everywhere = WorkspaceScope("alice", WORKSPACE, (), None)
    for filters in DENSE:
        recorder = RecordingLedger(seeded)
        store = SqlNoteStore(recorder)  # type: ignore[arg-type]
        first = store.search(everywhere, [], after=None, limit=10, filters=filters)
        assert len(first) == 10, filters
        later = store.search(everywhere, [], after=first[-1].position, limit=10, filters=filters)
        assert [h.note.id for h in later][:1] != [h.note.id for h in first][-1:], filters
        walked = [
            (sql, params) for sql, params in recorder.seen.items() if "ORDER BY n.modified_ns DESC" in sql
        ]
        assert len(walked) == 2, filters
        for sql, params in walked:
            lines = plan_lines(seeded, sql, params)
            text = "\n".join(lines)
            assert "notes_by_time" in text, text
            assert not any(line.strip().startswith(("Sort", "Incremental Sort")) for line in lines), text
            assert "TEMP B-TREE" not in text, text


def test_some_words_past_the_budget_rank_only_the_rarer_words_found_in_the_index(seeded: Ledger) -> None:
    """`ranking` Rule 4: in a search with meaning (`rarer`), of "budget" (in every note), `team03` (5% of
    them) and "zeppelin" (none), only the notes with `team03` are ranked, not the 10,000 with "budget" alone. SQLite counts each
    word's notes up to one past the budget through the FTS index; PostgreSQL counts nothing (its
    planner's statistics say)."""
    everywhere = WorkspaceScope("alice", WORKSPACE, (), None)
    recorder = RecordingLedger(seeded)
    store = SqlNoteStore(recorder)  # type: ignore[arg-type]
    hits = store.search(everywhere, ["budget", "team03", "zeppelin"], after=None, limit=2_000, match="rarer")
    assert NOTES // 20 <= len(hits) < NOTES // 10
    counts = [(sql, params) for sql, params in recorder.seen.items() if "count(*)" in sql]
    assert not store.search(everywhere, ["budget", "zeppelin"], after=None, limit=5, match="rarer")
    lexical = search_page(
        store,
        everywhere,
        ["budget", "zeppelin"],
        "budget zeppelin",
        embedder=None,
        filters=None,
        limit=5,
        after=None,
    )
    assert len(lexical.hits) == 5, "without a model, words are all a search has: every note with some ranks"
    with seeded.snapshot() as db:
        dialect = db.dialect
    if dialect == "postgres":
        assert not counts
        return
    ((sql, params),) = counts
    scans = [line for line in plan_lines(seeded, sql, params) if line.startswith("SCAN notes")]
    assert scans == ["SCAN notes_fts VIRTUAL TABLE INDEX 0:M3"] * 4, scans
