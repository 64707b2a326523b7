"""What the SQL stores know about notes (`notes.sql` Rule 4), on both databases, on the test vault
(tests/vault_cases.py): links as Obsidian resolves them and backlinks as their exact inverse, links
that follow a target appearing, moving or going (also when another program deletes a row), tags
with counts, filters, the ranked fallback, recent changes, completion and similar titles; the same
answers as the files index (tests/unit/test_index_knowledge.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from notewarden.ledger import Ledger
from notewarden.notes.history import Change
from notewarden.notes.sql import SqlNoteStore
from notewarden.notes.store import NoteFilter, PropertyTest, replace_with
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import parse_file_uri
from tests.storage.test_sql_store import ledger, sql  # noqa: F401  (the fixture, both databases)
from tests.store_changes import SETUP, deleting
from tests.vault_cases import EXPECTED, TAGS, VAULT

CHANGE = Change("alice", "notes_update", "replaced the whole text")


@pytest.fixture
def vault(ledger: Ledger) -> Iterator[tuple[SqlNoteStore, WorkspaceScope]]:  # noqa: F811
    store = SqlNoteStore(ledger)
    scope = WorkspaceScope("alice", parse_file_uri(f"file:///vault/{time.time_ns()}/notes"), (), None)
    for note_id, text in VAULT.items():
        store.create_note(scope, note_id, text.encode(), change=SETUP)
    yield store, scope


def outgoing(store: SqlNoteStore, scope: WorkspaceScope, note_id: str) -> dict[str, tuple[str | None, bool]]:
    found = store.links(scope, note_id, limit=1000)
    return {
        link.written: (link.target, link.target is not None and link.anchor_found is not False)
        for link in found.outgoing
    }


def everything(store: SqlNoteStore, scope: WorkspaceScope) -> dict[tuple[str, str], str | None]:
    return {
        (note.id, written): target
        for note in store.list_notes(scope)
        for written, (target, _) in outgoing(store, scope, note.id).items()
    }


def test_links_resolve_as_obsidian_would_and_backlinks_are_the_exact_inverse(
    vault: tuple[SqlNoteStore, WorkspaceScope],
) -> None:
    store, scope = vault
    for note_id in VAULT:
        expected = {w: t for (source, w), t in EXPECTED.items() if source == note_id}
        assert outgoing(store, scope, note_id) == expected, note_id
        found = store.links(scope, note_id, limit=1000)
        inverse = {(s, w) for (s, w), (target, _) in EXPECTED.items() if target == note_id}
        assert {(b.source, b.written) for b in found.backlinks} == inverse, note_id
        assert found.backlinks_total == len(inverse)
    home = store.links(scope, "Home.md", limit=10)
    assert home.tags == ["area/home", "index"]
    assert home.properties is not None and home.properties["aliases"] == ["Start", "Dashboard"]
    inbox = next(link for link in home.outgoing if link.written == "[[#Inbox]]")
    assert (inbox.via, inbox.line, inbox.context) == ("self", 25, "Jump to [[#Inbox]] below.")
    folder = WorkspaceScope("alice", scope.workspace, ("Projects",), None)
    plan = store.links(folder, "Projects/Atlas/Plan.md", limit=1000)
    assert {b.source for b in plan.backlinks} == {"Projects/Atlas/Meeting.md", "Projects/Atlas.md"}


def test_links_follow_a_target_that_appears_moves_or_goes(
    vault: tuple[SqlNoteStore, WorkspaceScope],
    ledger: Ledger,  # noqa: F811
) -> None:
    store, scope = vault
    before = everything(store, scope)
    store.create_note(scope, "Meeting.md", b"# Root meeting\n", change=SETUP)
    now = everything(store, scope)
    changed = {k: v for k, v in now.items() if before.get(k, "absent") != v}
    assert changed == {
        ("Home.md", "[[Meeting]]"): "Meeting.md",
        ("Archive/Meeting.md", "[[Meeting]]"): "Meeting.md",
        ("Projects/Atlas/Plan.md", "[[Meeting]]"): "Meeting.md",
    }
    store.move_note(
        scope, "People/Ana Souza.md", "Team/Ana Souza.md", change=SETUP
    )  # without rewriting links
    now = everything(store, scope)
    assert now[("Home.md", "[[Ana]]")] == "Team/Ana Souza.md"
    assert now[("Home.md", "[[Ana Souza|Ana S.]]")] == "Team/Ana Souza.md"
    assert now[("Projects/Atlas/Plan.md", "[[People/Ana Souza|Ana]]")] is None
    latest = store.recent(scope, since_ns=0, limit=1)
    assert [(c.kind, c.note_id, c.previous) for c in latest] == [
        ("moved", "Team/Ana Souza.md", "People/Ana Souza.md")
    ]
    sql(
        ledger,
        "DELETE FROM notes WHERE workspace = ? AND path = ?",
        str(scope.workspace),
        "Projects/Atlas/Plan.md",
    )
    now = everything(store, scope)  # another program deleted the row: the trigger records its names
    assert all(target != "Projects/Atlas/Plan.md" for target in now.values())
    assert now[("Home.md", "[[Plan]]")] is None
    team = "Team/Ana Souza.md"
    current = store.read_note(scope, team)
    data = b"---\naliases: [Someone else]\n---\n# Ana Souza\n"
    store.rewrite_note(scope, team, replace_with(data, current.version), change=CHANGE)
    now = everything(store, scope)
    assert now[("Home.md", "[[Ana]]")] is None
    assert now[("Home.md", "[[Ana Souza|Ana S.]]")] == team
    recent = store.recent(scope, since_ns=0, limit=100)
    kinds = {(c.kind, c.note_id, c.previous) for c in recent}
    assert {("modified", team, None), ("deleted", "Projects/Atlas/Plan.md", None)} <= kinds
    assert ("created", "Meeting.md", None) in kinds
    assert [c.at_ns for c in recent] == sorted((c.at_ns for c in recent), reverse=True)


def test_tags_filters_fallback_completion_and_similar_titles(
    vault: tuple[SqlNoteStore, WorkspaceScope],
    ledger: Ledger,  # noqa: F811
) -> None:
    store, scope = vault
    counts: dict[str, int] = {}
    for tags in TAGS.values():
        for tag in tags:
            counts[tag] = counts.get(tag, 0) + 1
    listed = store.tags(scope, prefix="", after=None, limit=100)
    assert {t.tag.casefold(): t.notes for t in listed} == counts
    first = store.tags(scope, prefix="", after=None, limit=3)
    rest = store.tags(scope, prefix="", after=first[-1].tag.casefold(), limit=100)
    assert [t.tag for t in first + rest] == [t.tag for t in listed]
    assert [t.tag for t in store.tags(scope, prefix="PROJ", after=None, limit=10)] == [
        "project",
        "project/atlas",
    ]
    areas = WorkspaceScope("alice", scope.workspace, ("Areas",), None)
    assert [t.tag for t in store.tags(areas, prefix="", after=None, limit=10)] == [
        "team",
        "team/weekly",
        "weekly",
    ]

    def filtered(**kwargs: object) -> list[str]:
        hits = store.search(scope, [], after=None, limit=100, filters=NoteFilter(**kwargs))  # type: ignore[arg-type]
        return sorted(h.note.id for h in hits)

    plan, home = "Projects/Atlas/Plan.md", "Home.md"
    assert filtered(tags_all=("project",)) == [plan]
    assert filtered(tags_all=("#Project/Atlas",)) == [plan]
    assert filtered(tags_any=("index", "recipe")) == ["Café/Crème brûlée.md", home]
    assert filtered(tags_all=("index", "recipe")) == []
    assert filtered(properties=(PropertyTest("status", "equals", "active"),)) == [plan]
    assert filtered(properties=(PropertyTest("role", "in", ["lead", "x"]),)) == ["People/Ana Souza.md"]
    assert filtered(properties=(PropertyTest("due", "before", "2026-04-01"),)) == [plan]
    assert filtered(properties=(PropertyTest("due", "after", "2026-04-01"),)) == []
    assert filtered(properties=(PropertyTest("aliases", "equals", "Dashboard"),)) == [home]
    assert filtered(folder="Projects/Atlas") == ["Projects/Atlas/Meeting.md", plan]
    old = time.time_ns() - 3600 * 10**9
    sql(
        ledger,
        "UPDATE notes SET modified_ns = ? WHERE workspace = ? AND path = ?",
        old,
        str(scope.workspace),
        home,
    )
    assert filtered(modified_before_ns=old + 1) == [home]
    assert home not in filtered(modified_after_ns=old + 1)
    newest = store.search(scope, [], after=None, limit=100, filters=NoteFilter(folder="Archive"))
    assert [h.note.id for h in newest] == ["Archive/Meeting.md"]
    page = store.search(scope, [], after=None, limit=3, filters=NoteFilter(modified_after_ns=0))
    more = store.search(
        scope, [], after=page[-1].position, limit=100, filters=NoteFilter(modified_after_ns=0)
    )
    assert [h.note.id for h in page + more][-1] == home and len(page + more) == len(VAULT)
    assert store.search(scope, ["atlas"], after=None, limit=10, filters=NoteFilter(tags_all=("team",))) == []

    assert store.search(scope, ["caramelize", "zeppelin"], after=None, limit=10) == []
    some = store.search(scope, ["caramelize", "zeppelin"], after=None, limit=10, match="any")
    assert [h.note.id for h in some] == ["Café/Crème brûlée.md"]
    both = store.search(scope, ["atlas", "plan"], after=None, limit=10, match="any")
    assert plan not in {h.note.id for h in both}

    assert store.complete_ids(scope, "Proj", limit=10) == (
        ["Projects/Atlas.md", "Projects/Atlas/Meeting.md", "Projects/Atlas/Plan.md"],
        False,
    )
    assert store.complete_ids(scope, "meet", limit=2) == (
        ["Archive/Meeting.md", "Areas/Team/Meeting.md"],
        True,
    )
    assert store.complete_ids(scope, "crème", limit=5) == (["Café/Crème brûlée.md"], False)
    assert [n.id for n in store.similar_titles(scope, "atlas  PLAN!")] == [plan]
    assert [n.id for n in store.similar_titles(scope, "Atlas plann")] == [plan]
    assert store.similar_titles(scope, "Atlas budget") == []

    (note,) = store.notes_by_id(scope, ["Areas/Team/Meeting.md"])
    with ledger.critical_section() as txn:
        store.move_to_trash(txn, scope, [note], change=deleting("a", "c"))
    after = {t.tag: t.notes for t in store.tags(scope, prefix="", after=None, limit=100)}
    assert "team" not in after and after["project"] == 1
    assert ("deleted", "Areas/Team/Meeting.md") in {
        (c.kind, c.note_id) for c in store.recent(scope, since_ns=0, limit=100)
    }
    with ledger.critical_section() as txn:  # rows added in bulk (an import) are counted too
        rows = [(f"bulk/{i}.md", f"# Bulk {i}\n#bulk #index\n", time.time_ns()) for i in range(3)]
        assert store.add_rows(txn, str(scope.workspace), rows) == [True, True, True]
    counted = {t.tag: t.notes for t in store.tags(scope, prefix="", after=None, limit=100)}
    assert (counted["bulk"], counted["index"]) == (3, counts["index"] + 3)


def test_backlinks_page_by_source_and_place_without_gaps_or_repeats(
    vault: tuple[SqlNoteStore, WorkspaceScope],
) -> None:
    """Issue 26: `links(after=...)` resumes after the last backlink shown (keyset: (source, seq))."""
    store, scope = vault
    for i in range(5):
        store.create_note(scope, f"refs/r{i}.md", b"[[Home]] and again [[Home]]\n", change=SETUP)
    whole = store.links(scope, "Home.md", limit=1000).backlinks
    pages, after = [], None
    while True:
        page = store.links(scope, "Home.md", limit=3, after=after).backlinks
        pages += page
        if len(page) < 3:
            break
        after = (page[-1].source, page[-1].seq)
    key = [(b.source, b.seq) for b in pages]
    assert key == [(b.source, b.seq) for b in whole] and len(set(key)) == len(key) >= 10
