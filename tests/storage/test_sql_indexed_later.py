"""A content write of a large note leaves its derivation and full-text indexing to the next query of
the workspace (`notes.sql` Rule 3, `notes.sql_schema` step 5; issue 29): whatever any reader asks
after the write returns sees it, through every writer, and a crash at any point leaves a store that
the next query makes current."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.ledger import Ledger
from notewarden.ledger.postgres import PostgresLedger
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.change_log import CHANGE_LOG_SCHEMA
from notewarden.notes.history import HISTORY_SCHEMA, Change
from notewarden.notes.sql import INDEX_LATER_BYTES, SQL_STORE_SCHEMA, SqlNoteStore
from notewarden.notes.store import NoteContent, NoteFilter, Rewrite
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import parse_file_uri
from tests.pg import PgDatabase
from tests.race.harness import deployment
from tests.store_changes import SETUP, deleting

COMPONENTS = [SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA]
EDIT = Change("alice", "notes_edit", "appended")
LINE = "Plain words about gardens and weather.\n"


def big_body(title: str = "Big note") -> str:
    return f"# {title}\n\n" + LINE * (INDEX_LATER_BYTES // len(LINE) + 1)


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path, pg: PgDatabase) -> Iterator[Ledger]:
    if request.param == "sqlite":
        opened: Ledger = SqliteLedger(tmp_path / "notes.sqlite3", components=COMPONENTS)
    else:
        upgrader = PostgresLedger(pg.url, components=COMPONENTS, check_schema=False)
        upgrader.upgrade()
        upgrader.close()
        opened = PostgresLedger(pg.url, components=COMPONENTS)
    yield opened
    opened.close()


@pytest.fixture
def scope() -> WorkspaceScope:
    return WorkspaceScope("alice", parse_file_uri(f"file:///db-only/{time.time_ns()}/notes"), (), None)


def append(text: str) -> Rewrite:
    return lambda current: current.data + text.encode()


def replace(old: str, new: str) -> Rewrite:
    return lambda current: current.data.replace(old.encode(), new.encode())


def stale(ledger: Ledger, scope: WorkspaceScope, note_id: str) -> bool:
    """Whether the row waits for the next query (its derived columns behind its version)."""
    with ledger.snapshot() as db:
        ((derived, version),) = db.execute(
            "SELECT derived_version, version FROM notes WHERE workspace = ? AND path = ?",
            (str(scope.workspace), note_id),
        )
    return bool(derived != version)


def found(store: SqlNoteStore, scope: WorkspaceScope, *terms: str) -> list[str]:
    return [hit.note.id for hit in store.search(scope, terms, after=None, limit=10)]


def assert_index_current(ledger: Ledger) -> None:
    """SQLite: `notes_fts` holds exactly every row's current title, path and body (FTS5 compares
    its index with the content table) and nothing waits."""
    if not isinstance(ledger, SqliteLedger):
        return
    with ledger.critical_section() as txn:
        txn.execute("INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)")
        assert txn.execute("SELECT count(*) FROM notes_indexed_later") == [(0,)]


def test_search_finds_what_a_large_write_wrote_as_soon_as_it_returns(
    ledger: Ledger, scope: WorkspaceScope
) -> None:
    store = SqlNoteStore(ledger)
    store.create_note(scope, "big.md", big_body().encode(), change=SETUP)
    store.create_note(scope, "small.md", b"# Small\n\ngardens\n", change=SETUP)
    store.rewrite_note(scope, "big.md", append("zebracorn\n"), change=EDIT)
    assert stale(ledger, scope, "big.md"), "the write left its indexing to the next query"
    assert found(store, scope, "zebracorn") == ["big.md"]
    assert sorted(found(store, scope, "gardens")) == ["big.md", "small.md"]
    assert not stale(ledger, scope, "big.md")
    assert_index_current(ledger)

    for _ in range(3):  # writes in a row, then one query
        store.rewrite_note(scope, "big.md", replace("zebracorn", "quokkafish"), change=EDIT)
        store.rewrite_note(scope, "big.md", replace("quokkafish", "zebracorn"), change=EDIT)
    store.rewrite_note(scope, "big.md", replace("zebracorn", "quokkafish"), change=EDIT)
    assert found(store, scope, "zebracorn") == []
    assert found(store, scope, "quokkafish") == ["big.md"]
    assert_index_current(ledger)


def test_the_title_links_and_tags_a_large_write_adds_are_seen_at_once(
    ledger: Ledger, scope: WorkspaceScope
) -> None:
    store = SqlNoteStore(ledger)
    store.create_note(scope, "target.md", b"# Target\n", change=SETUP)
    store.create_note(scope, "big.md", big_body("Old heading").encode(), change=SETUP)

    def renamed_and_linked(current: NoteContent) -> bytes:
        text = current.data.decode().replace("# Old heading", "# Fresh heading", 1)
        return (text + "See [[target]] #fresh/tag\n").encode()

    done = store.rewrite_note(scope, "big.md", renamed_and_linked, change=EDIT)
    assert done.after.note.title == "Fresh heading"
    assert stale(ledger, scope, "big.md")
    assert store.read_note(scope, "big.md").note.title == "Fresh heading"
    assert [n.id for n in store.find_titled(scope, ["fresh", "heading"])] == ["big.md"]
    assert store.find_titled(scope, ["old", "heading"]) == []
    assert found(store, scope, "fresh", "heading") == ["big.md"]
    assert [b.source for b in store.links(scope, "target.md", limit=10).backlinks] == ["big.md"]
    assert list(store.links(scope, "big.md", limit=10).tags) == ["fresh/tag"]
    hits = store.search(scope, [], after=None, limit=10, filters=NoteFilter(tags_all=("fresh",)))
    assert [h.note.id for h in hits] == ["big.md"]
    assert "fresh/tag" in [t.tag for t in store.tags(scope, prefix="", after=None, limit=10)]
    assert_index_current(ledger)


def test_every_writer_keeps_the_full_text_index_exact(ledger: Ledger, scope: WorkspaceScope) -> None:
    """A large write waiting for its indexing, then: another program's write, a move, a small write, a
    delete; the index's entries are removed with the very text they were made from."""
    store = SqlNoteStore(ledger)
    workspace = str(scope.workspace)
    store.create_note(scope, "big.md", big_body().encode(), change=SETUP)

    store.rewrite_note(scope, "big.md", append("alphaword\n"), change=EDIT)
    with ledger.critical_section() as txn:  # another program appends to the row itself
        txn.execute(
            "UPDATE notes SET body = body || ? WHERE workspace = ? AND path = ?",
            ("betaword\n", workspace, "big.md"),
        )
    assert found(store, scope, "alphaword", "betaword") == ["big.md"]
    assert_index_current(ledger)

    store.rewrite_note(scope, "big.md", append("gammaword\n"), change=EDIT)
    store.move_note(scope, "big.md", "moved/big.md", change=EDIT)  # written whole: a new path
    assert found(store, scope, "gammaword") == ["moved/big.md"]
    assert found(store, scope, "big") == ["moved/big.md"]
    assert_index_current(ledger)

    store.rewrite_note(scope, "moved/big.md", append("deltaword\n"), change=EDIT)
    store.rewrite_note(scope, "moved/big.md", lambda _: b"# Shrunk\n\nepsilonword\n", change=EDIT)
    assert found(store, scope, "epsilonword") == ["moved/big.md"]
    assert found(store, scope, "gardens") == found(store, scope, "deltaword") == []
    assert_index_current(ledger)

    store.rewrite_note(scope, "moved/big.md", lambda _: big_body().encode(), change=EDIT)
    store.rewrite_note(scope, "moved/big.md", append("zetaword\n"), change=EDIT)
    gone = store.read_note(scope, "moved/big.md").note
    with ledger.critical_section() as txn:
        store.move_to_trash(txn, scope, [gone], change=deleting("alice", "c-1"))
    assert found(store, scope, "zetaword") == found(store, scope, "gardens") == []
    assert_index_current(ledger)


_CRASH = """
    import os, signal, sys
    from notewarden.ledger.sqlite import SqliteLedger
    from notewarden.notes.change_log import CHANGE_LOG_SCHEMA
    from notewarden.notes.history import HISTORY_SCHEMA, Change
    from notewarden.notes.sql import SQL_STORE_SCHEMA, SqlNoteStore
    from notewarden.scope.grants import WorkspaceScope
    from notewarden.scope.uri import parse_file_uri

    path, workspace, step = sys.argv[1:]
    store = SqlNoteStore(SqliteLedger(path, components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA]))
    scope = WorkspaceScope("alice", parse_file_uri(workspace), (), None)
    if step == "write":  # killed once the write committed, before any query
        store.rewrite_note(scope, "big.md", lambda c: c.data + b"kiwiword\\n", change=Change("alice", "t", "t"))
    else:  # killed inside the catch-up's transaction: the row derived and indexed, not committed
        SqlNoteStore._store_facts = lambda *_: os.kill(os.getpid(), signal.SIGKILL)
        store.search(scope, ["kiwiword"], after=None, limit=10)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_process_killed_between_a_large_write_and_its_indexing_leaves_a_consistent_store(
    tmp_path: Path, scope: WorkspaceScope
) -> None:
    path = tmp_path / "notes.sqlite3"
    ledger = SqliteLedger(path, components=COMPONENTS)
    store = SqlNoteStore(ledger)
    store.create_note(scope, "big.md", big_body().encode(), change=SETUP)
    for step in ("write", "catch-up"):
        killed = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_CRASH), str(path), str(scope.workspace), step],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            capture_output=True,
            timeout=60,
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
        assert stale(ledger, scope, "big.md"), "committed, and still waiting for its indexing"
        with ledger.snapshot() as db:
            assert db.execute("SELECT count(*) FROM notes_indexed_later") == [(1,)]
    assert store.read_note(scope, "big.md").data.endswith(b"kiwiword\n")
    assert found(store, scope, "kiwiword") == ["big.md"]
    assert_index_current(ledger)
    ledger.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_over_the_wire_what_an_append_to_a_large_note_wrote_is_found_by_the_next_call(
    tmp_path: Path, pg: PgDatabase, backend: str
) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note("todo.md", "# Todo\n")
        d.add_note("big.md", big_body())
        client = d.client(d.start())
        ws = d.workspace_uri
        appended = {"op": "append", "text": "zebracorn: see [[todo]] #fresh"}
        edited = client.call("notes_edit", {"workspaceUri": ws, "noteId": "big.md", "edits": [appended]})
        assert not edited.result.get("isError"), edited.result
        ((derived, version),) = d.sql(
            "SELECT derived_version, version FROM notes WHERE workspace = ? AND path = ?", (ws, "big.md")
        )
        assert derived != version, "the write left its indexing to the next query"
        searched = client.call("notes_search", {"workspaceUri": ws, "query": "zebracorn"}).result
        results = searched["structuredContent"]["results"]
        assert [h["id"] for h in results if h["foundBy"] != "meaning"] == ["big.md"]
        links = client.call("notes_links", {"workspaceUri": ws, "noteId": "todo.md"}).result
        assert [b["id"] for b in links["structuredContent"]["backlinks"]] == ["big.md"]
        tags = client.call("notes_tags", {"workspaceUri": ws}).result["structuredContent"]
        assert "fresh" in json.dumps(tags)
