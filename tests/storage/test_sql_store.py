"""The SQL note store on both databases, what is its own: identities that see every writer (the
triggers), foreign rows, the trash row, search and upgrades. What every store does alike is
tests/storage/test_store_contract.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.ledger import Ledger
from notewarden.ledger.postgres import PostgresLedger
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.change_log import CHANGE_LOG_SCHEMA
from notewarden.notes.history import HISTORY_SCHEMA, Change
from notewarden.notes.model import match_words, matched_name
from notewarden.notes.sql import SQL_STORE_SCHEMA, SqlNoteStore
from notewarden.notes.store import NoteContent, replace_with
from notewarden.schema import SchemaComponent
from notewarden.scope.fs_errors import PathRejected
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import FileUri, parse_file_uri
from notewarden.tools.notes_publish import read_note
from notewarden.tools.registry import ToolFailure
from tests.pg import PgDatabase
from tests.store_changes import SETUP, deleting


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path, pg: PgDatabase) -> Iterator[Ledger]:
    if request.param == "sqlite":
        opened: Ledger = SqliteLedger(
            tmp_path / "notes.sqlite3", components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA]
        )
    else:
        upgrader = PostgresLedger(
            pg.url, components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA], check_schema=False
        )
        upgrader.upgrade()
        upgrader.close()
        opened = PostgresLedger(pg.url, components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA])
    yield opened
    opened.close()


@pytest.fixture
def workspace() -> FileUri:
    return parse_file_uri(f"file:///db-only/{time.time_ns()}/notes")


def scope(workspace: FileUri, *subtree: str) -> WorkspaceScope:
    return WorkspaceScope("alice", workspace, tuple(subtree), None)


def update(
    store: SqlNoteStore, scope: WorkspaceScope, note_id: str, data: bytes, version: str
) -> NoteContent:
    change = Change("alice", "notes_update", "replaced the whole text")
    return store.rewrite_note(scope, note_id, replace_with(data, version), change=change).after


def sql(ledger: Ledger, statement: str, *params: object) -> None:
    with ledger.critical_section() as txn:
        txn.execute(statement, params)


def test_foreign_rows_with_bad_ids_are_not_listed(ledger: Ledger, workspace: FileUri) -> None:
    store = SqlNoteStore(ledger)
    store.create_note(scope(workspace), "a.md", b"# A\n", change=SETUP)
    sql(
        ledger,
        "INSERT INTO notes (workspace, path, body, modified_ns) VALUES (?, ?, ?, ?)",
        str(workspace),
        "../evil.md",
        "# E\n",
        1,
    )
    assert [n.id for n in store.list_notes(scope(workspace))] == ["a.md"]


def test_any_writer_changes_the_identity(ledger: Ledger, workspace: FileUri) -> None:
    store = SqlNoteStore(ledger)
    created = store.create_note(scope(workspace), "n.md", b"# N\nsame size", change=SETUP).note
    sql(
        ledger,
        "UPDATE notes SET body = ? WHERE workspace = ? AND path = ?",
        "# N\nSAME SIZE",
        str(workspace),
        "n.md",
    )
    (edited,) = store.list_notes(scope(workspace))
    (edited_row, edited_version), (created_row, created_version) = edited.identity.key, created.identity.key
    assert edited_row == created_row, "same row"
    assert edited_version == created_version + 1, "the trigger bumped the version"
    assert edited.identity.modified_ns > created.identity.modified_ns - 2_000_000, (
        "the trigger's clock (ms on SQLite)"
    )
    sql(ledger, "DELETE FROM notes WHERE workspace = ? AND path = ?", str(workspace), "n.md")
    store.create_note(scope(workspace), "n.md", b"# N\nSAME SIZE", change=SETUP)
    (replaced,) = store.list_notes(scope(workspace))
    assert replaced.identity.key[0] != edited_row, "a re-created note is another row"


def test_move_to_trash_moves_the_row_with_its_body_and_confirmation(
    ledger: Ledger, workspace: FileUri
) -> None:
    """The trash row keeps the body as the database last held it (another writer's too) and the
    confirmation; the identity and reach checks are the contract's (test_store_contract.py)."""
    store = SqlNoteStore(ledger)
    store.create_note(scope(workspace), "keep/n.md", b"# N\n", change=SETUP)
    sql(
        ledger,
        "UPDATE notes SET body = ? WHERE path = ? AND workspace = ?",
        "# N!\n",
        "keep/n.md",
        str(workspace),
    )
    (current,) = store.list_notes(scope(workspace))
    with ledger.critical_section() as txn:
        trashed = store.move_to_trash(txn, scope(workspace), [current], change=deleting("alice", "c2"))[0]
    assert store.list_notes(scope(workspace)) == []
    with ledger.snapshot() as db:
        rows = db.execute(
            "SELECT path, body, confirmation_id FROM notes_trash WHERE trash_id = ?", (trashed.trash_id,)
        )
    assert rows == [("keep/n.md", "# N!\n", "c2")]


def test_publish_reads_the_note_through_the_store(ledger: Ledger, workspace: FileUri) -> None:
    """notes_publish reads what it sends via the configured store, so it works without a folder."""
    store = SqlNoteStore(ledger)
    store.create_note(
        scope(workspace), "reports/tps.md", b"---\ntitle: TPS report\n---\nbody\n", change=SETUP
    )
    sent = read_note(store, scope(workspace), "reports/tps.md")
    assert (sent.note_id, sent.title, sent.markdown) == (
        "reports/tps.md",
        "TPS report",
        "---\ntitle: TPS report\n---\nbody\n",
    )
    with pytest.raises(ToolFailure, match="not inside"):
        read_note(store, scope(workspace, "drafts"), "reports/tps.md")
    with pytest.raises(PathRejected):
        read_note(store, scope(workspace), "../etc/passwd")


def test_candidates_match_title_file_name_or_alias_as_in_the_files_store(
    ledger: Ledger, workspace: FileUri
) -> None:
    """`model.matched_name` is the rule of every store (the files store's: tests/wire/test_vault_titles.py),
    and the notes come back with their aliases, so the form can say which name matched."""
    store = SqlNoteStore(ledger)
    notes = {
        "sync/Headless Sync.md": b"Set up with:\n\n```\n# Login\n```\n",
        "pets.md": b"---\naliases: [Dog, Canine friend]\n---\n# Pets\n",
        "one.md": b"---\naliases: Single alias\n---\ntext\n",
        "other.md": b"# Unrelated\n",
    }
    for note_id, data in notes.items():
        store.create_note(scope(workspace), note_id, data, change=SETUP)

    def found(query: str) -> list[tuple[str, str | None]]:
        words = match_words(query)
        return [
            (n.id, matched_name(n.id, n.title, n.aliases, words))
            for n in store.find_titled(scope(workspace), words)
        ]

    assert found("headless sync") == [("sync/Headless Sync.md", "title")]  # no h1: the stem is the title
    assert found("login") == [], "a heading inside a code fence is no name"
    assert found("canine") == [("pets.md", "alias “Canine friend”")]
    assert found("single") == [("one.md", "alias “Single alias”")]
    assert found("pets") == [("pets.md", "title")]
    assert found("other") == [("other.md", "file name")]
    assert found("dog canine") == [], "each name is matched alone"


def test_a_title_query_matches_the_title_the_file_stem_or_an_alias_each_whole(
    ledger: Ledger, workspace: FileUri
) -> None:
    """notes.derived Rules 2-3: every word inside one key; short words through the grams."""
    store, everywhere = SqlNoteStore(ledger), scope(workspace)
    store.create_note(
        everywhere,
        "meetings/2024-Q3 planning.md",
        b"---\naliases: [Quarterly kickoff, 'Sync \"big\" 100%_done']\n---\n# Roadmap review\n",
        change=SETUP,
    )
    store.create_note(everywhere, "other/Q3.md", b"# Q3 budget\n", change=SETUP)
    store.create_note(everywhere, "other/q.md", b"# unrelated\n", change=SETUP)

    def titled(*words: str) -> list[str]:
        return [n.id for n in store.find_titled(everywhere, list(words))]

    assert titled("roadmap", "review") == ["meetings/2024-Q3 planning.md"], "by title"
    assert titled("q3", "planning") == ["meetings/2024-Q3 planning.md"], "by file stem"
    assert titled("KICKOFF", "quarterly") == ["meetings/2024-Q3 planning.md"], "by alias, any case"
    assert titled('"big"', "100%_done") == ["meetings/2024-Q3 planning.md"], "quotes, LIKE wildcards"
    assert titled("roadmap", "kickoff") == [], "words of two different keys do not make a match"
    assert titled("100_done") == [], "'_' is not a wildcard"
    assert titled("q3") == ["meetings/2024-Q3 planning.md", "other/Q3.md"], "two-character words"
    assert titled("q") == ["meetings/2024-Q3 planning.md", "other/Q3.md", "other/q.md"]
    assert titled("q3", "bu") == ["other/Q3.md"]
    assert [n.title for n in store.find_titled(everywhere, ["kickoff"])] == ["Roadmap review"]
    assert [n.id for n in store.find_titled(scope(workspace, "other"), ["q3"])] == ["other/Q3.md"]


def test_search_words_are_word_prefixes_of_title_path_and_body_ranked_title_first(
    ledger: Ledger, workspace: FileUri
) -> None:
    store, everywhere = SqlNoteStore(ledger), scope(workspace)
    store.create_note(everywhere, "a/body.md", b"# One\n\nthe budget of the caf\xc3\xa9\n", change=SETUP)
    store.create_note(everywhere, "a/budget-path.md", b"# Two\n\nnothing here\n", change=SETUP)
    store.create_note(everywhere, "a/title.md", b"# Budget\n\nnothing here\n", change=SETUP)
    store.create_note(everywhere, "b/other.md", b"# Other\n\nbudget budget\n", change=SETUP)

    def found(*terms: str, within: WorkspaceScope = everywhere) -> list[str]:
        return [h.note.id for h in store.search(within, list(terms), after=None, limit=10)]

    assert found("budget")[:1] == ["a/title.md"], "a title match ranks first"
    assert set(found("budg")) == {"a/body.md", "a/budget-path.md", "a/title.md", "b/other.md"}
    assert found("cafe") == ["a/body.md"] and found("CAFÉ".casefold()) == ["a/body.md"], "diacritics"
    assert found("path") == ["a/budget-path.md"], "words of the path"
    assert found("udget") == [], "a term starts a word"
    assert found("budget", within=scope(workspace, "b")) == ["b/other.md"]
    hits = store.search(everywhere, ["budget"], after=None, limit=2)
    rest = store.search(everywhere, ["budget"], after=hits[-1].position, limit=10)
    assert [h.note.id for h in hits + rest] == found("budget") and len(hits + rest) == 4
    (body_hit,) = store.search(everywhere, ["caf"], after=None, limit=5)
    assert "budget of the" in body_hit.snippet


def test_rows_other_programs_write_are_found_by_their_new_title_and_words(
    ledger: Ledger, workspace: FileUri
) -> None:
    """Rule 3 of notes.sql: an importer writes `notes` directly, without the derived columns."""
    store, everywhere = SqlNoteStore(ledger), scope(workspace)
    store.create_note(everywhere, "kept.md", b"# Kept\n\nalpha\n", change=SETUP)
    sql(
        ledger,
        "INSERT INTO notes (workspace, path, body, modified_ns) VALUES (?, ?, ?, ?)",
        str(workspace),
        "imported.md",
        "# Imported zebra\n\nwords of the importer: quokka\n",
        time.time_ns(),
    )
    assert [(n.id, n.title) for n in store.list_notes(everywhere)] == [
        ("imported.md", "Imported zebra"),
        ("kept.md", "Kept"),
    ]
    sql(
        ledger,
        "UPDATE notes SET body = ? WHERE workspace = ? AND path = ?",
        "# Renamed wombat\n\nnew words: platypus\n",
        str(workspace),
        "imported.md",
    )
    assert [n.id for n in store.find_titled(everywhere, ["wombat"])] == ["imported.md"]
    assert store.find_titled(everywhere, ["zebra"]) == [], "never found by its old title"
    assert [h.note.id for h in store.search(everywhere, ["platypus"], after=None, limit=5)] == ["imported.md"]
    assert store.search(everywhere, ["quokka"], after=None, limit=5) == []
    (renamed,) = store.find_titled(everywhere, ["wombat"])
    with ledger.critical_section() as txn:
        store.move_to_trash(txn, everywhere, [renamed], change=deleting("alice", "c"))
    assert [n.id for n in store.list_notes(everywhere)] == ["kept.md"]


@pytest.mark.parametrize("steps", [1, 2, 3, 4])
def test_an_older_database_upgraded_in_place_keeps_every_note_findable_and_learns_its_links(
    tmp_path: Path, pg: PgDatabase, workspace: FileUri, steps: int
) -> None:
    """The later schema steps on a populated database of an earlier one: its rows are derived on the
    first query, tags and links included (step 3)."""
    older = SchemaComponent(
        SQL_STORE_SCHEMA.name,
        SQL_STORE_SCHEMA.tables,
        SQL_STORE_SCHEMA.sqlite[:steps],
        SQL_STORE_SCHEMA.postgres[:steps],
    )
    for dialect in ("sqlite", "postgres"):
        if dialect == "sqlite":
            old: Ledger = SqliteLedger(tmp_path / f"old-{steps}.sqlite3", components=[older])
        else:
            url = pg.url.rsplit("/", 1)[0] + "/" + pg.create()
            upgrader = PostgresLedger(url, components=[older], check_schema=False)
            upgrader.upgrade()
            upgrader.close()
            old = PostgresLedger(url, components=[older])
        for i in range(3):
            sql(
                old,
                "INSERT INTO notes (workspace, path, body, modified_ns) VALUES (?, ?, ?, ?)",
                str(workspace),
                f"old/n{i}.md",
                f"# Old note {i}\n\nwritten before search moved into the database #old/{i} "
                f"[[n{(i + 1) % 3}]]\n",
                time.time_ns(),
            )
        old.close()
        if dialect == "sqlite":
            new: Ledger = SqliteLedger(tmp_path / f"old-{steps}.sqlite3", components=[SQL_STORE_SCHEMA])
        else:
            upgrader = PostgresLedger(url, components=[SQL_STORE_SCHEMA], check_schema=False)
            assert upgrader.upgrade()["sql_store"] == len(SQL_STORE_SCHEMA.postgres) - steps
            upgrader.close()
            new = PostgresLedger(url, components=[SQL_STORE_SCHEMA])
        store = SqlNoteStore(new)
        everywhere = scope(workspace)
        assert [n.id for n in store.find_titled(everywhere, ["old", "note", "1"])] == ["old/n1.md"], dialect
        assert len(store.search(everywhere, ["moved", "databa"], after=None, limit=10)) == 3, dialect
        # step 4: words are stemmed on every store ("searching" finds "search")
        assert len(store.search(everywhere, ["searching", "databases"], after=None, limit=10)) == 3, dialect
        assert [n.title for n in store.list_notes(everywhere)] == [f"Old note {i}" for i in range(3)]
        assert [(t.tag, t.notes) for t in store.tags(everywhere, prefix="", after=None, limit=10)] == [
            (f"old/{i}", 1) for i in range(3)
        ]
        found = store.links(everywhere, "old/n0.md", limit=10)
        assert [(v.target, v.via) for v in found.outgoing] == [("old/n1.md", "relative")], dialect
        assert [v.source for v in found.backlinks] == ["old/n2.md"]
        new.close()
