"""What the files index knows about notes (index_refresh Rules 6 and 7) on the test vault, in a real folder
and a real SQLite file: links as Obsidian resolves them, backlinks as their exact inverse, links
that follow a target appearing, moving or going without re-reading the linking notes, tags, filters,
recent changes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from notewarden.notes import index_refresh
from notewarden.notes.index import NoteIndex
from notewarden.notes.links import MemoryVault, resolve
from notewarden.notes.markdown import parse_note
from notewarden.notes.model import note_stem
from notewarden.notes.store import NoteFilter, PropertyTest
from notewarden.scope.fsroot import WorkspaceRoot
from tests.vault_cases import EXPECTED, TAGS, VAULT, write_vault

pytestmark = pytest.mark.resolves_files

WS = "file:///vault"


@pytest.fixture(params=["inotify", "stamps"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def settle(*paths: Path) -> None:
    """Date files 10 s back, out of the index's racy window (index_refresh Rule 3): a racy note is read
    again by every query that returns it, which would hide whether a change re-read a note."""
    past = time.time_ns() - 10 * 10**9
    for path in paths:
        os.utime(path, ns=(past, past))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write_vault(tmp_path / "vault")
    settle(*(tmp_path / "vault" / note_id for note_id in VAULT))
    return tmp_path / "vault"


@pytest.fixture
def root(folder: Path) -> Iterator[WorkspaceRoot]:
    with WorkspaceRoot.open(str(folder)) as r:
        yield r


@pytest.fixture
def index(tmp_path: Path, mode: str) -> Iterator[NoteIndex]:
    idx = NoteIndex(tmp_path / "index.sqlite3", watch=mode == "inotify", verify_interval=3600)
    yield idx
    idx.close()


def outgoing(index: NoteIndex, root: WorkspaceRoot, note_id: str) -> dict[str, tuple[str | None, bool]]:
    found = index.note_links(WS, root, ("",), note_id, limit=1000)
    assert found is not None
    return {
        link.written: (link.target, link.target is not None and link.anchor_found is not False)
        for link in found.outgoing
    }


def everything(index: NoteIndex, root: WorkspaceRoot) -> dict[tuple[str, str], str | None]:
    found = {}
    for note in index.page(WS, root, ("",), after=None, limit=None):
        for written, (target, _) in outgoing(index, root, note.id).items():
            found[(note.id, written)] = target
    return found


def backlinks(index: NoteIndex, root: WorkspaceRoot, note_id: str) -> set[tuple[str, str]]:
    found = index.note_links(WS, root, ("",), note_id, limit=1000)
    assert found is not None and found.backlinks_total == len(found.backlinks)
    return {(link.source, link.written) for link in found.backlinks}


def test_every_link_resolves_as_obsidian_would_and_backlinks_are_the_exact_inverse(
    index: NoteIndex, root: WorkspaceRoot
) -> None:
    for note_id in VAULT:
        expected = {w: t for (source, w), t in EXPECTED.items() if source == note_id}
        assert outgoing(index, root, note_id) == expected, note_id
    for note_id in VAULT:
        inverse = {(s, w) for (s, w), (target, _) in EXPECTED.items() if target == note_id}
        assert backlinks(index, root, note_id) == inverse, note_id
    home = index.note_links(WS, root, ("",), "Home.md", limit=10)
    assert home is not None and home.tags == ["area/home", "index"]
    assert home.properties is not None and home.properties["aliases"] == ["Start", "Dashboard"]
    links = home.outgoing
    inbox = next(link for link in links if link.written == "[[#Inbox]]")
    assert (inbox.via, inbox.line, inbox.context) == ("self", 25, "Jump to [[#Inbox]] below.")
    embeds = {link.written for link in links if link.embed}
    assert embeds == {"![[diagram.png]]", "![[Plan#Goals]]"}


def test_links_follow_a_target_that_appears_moves_or_goes_without_rereading_their_notes(
    index: NoteIndex, root: WorkspaceRoot, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = everything(index, root)
    parsed: list[str] = []
    real_parse = index_refresh.parse_note

    def counting(text: str, stem: str, *, with_headings: bool = True) -> object:
        if not with_headings:  # indexing (showing an anchor reads the target's headings)
            parsed.append(stem)
        return real_parse(text, stem, with_headings=with_headings)

    monkeypatch.setattr(index_refresh, "parse_note", counting)

    (folder / "Meeting.md").write_text("# Root meeting\n")  # shadows [[Meeting]] from the root
    settle(folder / "Meeting.md")
    now = everything(index, root)
    assert parsed == ["Meeting"]
    changed = {k: v for k, v in now.items() if before.get(k, "absent") != v}
    assert changed == {  # a path from the root comes before a name: every [[Meeting]] opens it now
        ("Home.md", "[[Meeting]]"): "Meeting.md",
        ("Archive/Meeting.md", "[[Meeting]]"): "Meeting.md",
        ("Projects/Atlas/Plan.md", "[[Meeting]]"): "Meeting.md",
    }

    parsed.clear()
    (folder / "Team").mkdir()
    os.rename(folder / "People" / "Ana Souza.md", folder / "Team" / "Ana Souza.md")
    now = everything(index, root)
    assert parsed == ["Ana Souza"]
    assert now[("Home.md", "[[Ana]]")] == "Team/Ana Souza.md"  # by alias: it went along
    assert now[("Home.md", "[[Ana Souza|Ana S.]]")] == "Team/Ana Souza.md"  # by name: still unique
    assert now[("Projects/Atlas/Plan.md", "[[People/Ana Souza|Ana]]")] is None  # by path: broken
    assert ("Team/Ana Souza.md", "[[Plan|the plan]]") in now

    parsed.clear()
    (folder / "Projects" / "Atlas" / "Plan.md").unlink()
    now = everything(index, root)
    assert parsed == []
    assert all(target != "Projects/Atlas/Plan.md" for target in now.values())
    assert now[("Home.md", "[[Plan]]")] is None

    (folder / "Team" / "Ana Souza.md").write_text("---\naliases: [Someone else]\n---\n# Ana Souza\n")
    now = everything(index, root)
    assert now[("Home.md", "[[Ana]]")] is None  # the alias is gone
    assert now[("Home.md", "[[Ana Souza|Ana S.]]")] == "Team/Ana Souza.md"


def test_tags_with_counts_prefixes_and_folders(index: NoteIndex, root: WorkspaceRoot, folder: Path) -> None:
    counts: dict[str, int] = {}
    for tags in TAGS.values():
        for tag in tags:
            counts[tag] = counts.get(tag, 0) + 1
    listed = index.tags(WS, root, ("",), prefix="", after=None, limit=100)
    assert {t.tag.casefold(): t.notes for t in listed} == counts
    assert [t.tag for t in index.tags(WS, root, ("",), prefix="PROJ", after=None, limit=100)] == [
        "project",
        "project/atlas",
    ]
    first = index.tags(WS, root, ("",), prefix="", after=None, limit=3)
    rest = index.tags(WS, root, ("",), prefix="", after=first[-1].tag.casefold(), limit=100)
    assert [t.tag for t in first + rest] == [t.tag for t in listed]
    assert [t.tag for t in index.tags(WS, root, ("Areas",), prefix="", after=None, limit=100)] == [
        "team",
        "team/weekly",
        "weekly",
    ]
    (folder / "Areas" / "Team" / "Meeting.md").unlink()
    after = {t.tag: t.notes for t in index.tags(WS, root, ("",), prefix="", after=None, limit=100)}
    assert "team" not in after and after["project"] == 1


def filtered(index: NoteIndex, root: WorkspaceRoot, **kwargs: object) -> list[str]:
    notes = index.search(WS, root, ("",), [], after=None, limit=100, filters=NoteFilter(**kwargs))  # type: ignore[arg-type]
    return sorted(n.id for n in notes)


def test_filters_by_tags_properties_times_and_folder(
    index: NoteIndex, root: WorkspaceRoot, folder: Path
) -> None:
    plan, home = "Projects/Atlas/Plan.md", "Home.md"
    assert filtered(index, root, tags_all=("project",)) == [plan]  # nested project/atlas counts too
    assert filtered(index, root, tags_all=("#Project/Atlas",)) == [plan]
    assert filtered(index, root, tags_any=("index", "recipe")) == ["Café/Crème brûlée.md", home]
    assert filtered(index, root, tags_all=("index", "recipe")) == []
    assert filtered(index, root, properties=(PropertyTest("status", "equals", "active"),)) == [plan]
    assert filtered(index, root, properties=(PropertyTest("role", "in", ["lead", "x"]),)) == [
        "People/Ana Souza.md"
    ]
    assert filtered(index, root, properties=(PropertyTest("due", "before", "2026-04-01"),)) == [plan]
    assert filtered(index, root, properties=(PropertyTest("due", "after", "2026-04-01"),)) == []
    assert filtered(index, root, properties=(PropertyTest("aliases", "equals", "Dashboard"),)) == [home]
    assert filtered(index, root, folder="Projects/Atlas") == ["Projects/Atlas/Meeting.md", plan]
    old = time.time_ns() - 3600 * 10**9
    os.utime(folder / home, ns=(old, old))
    recent = filtered(index, root, modified_after_ns=old + 1)
    assert home not in recent and len(recent) == len(VAULT) - 1
    assert filtered(index, root, modified_before_ns=old + 1) == [home]
    newest = index.search(WS, root, ("",), [], after=None, limit=100, filters=NoteFilter())
    assert newest[-1].id == home  # without words: newest first
    words = index.search(
        WS, root, ("",), ["atlas"], after=None, limit=100, filters=NoteFilter(tags_all=("team",))
    )
    assert words == []


def test_a_malformed_front_matter_is_reported_for_that_note_only(
    index: NoteIndex, root: WorkspaceRoot, folder: Path
) -> None:
    (folder / "Broken.md").write_text("---\ntags: [unclosed\n---\n# Broken but here #still\n[[Home]]\n")
    assert outgoing(index, root, "Broken.md") == {"[[Home]]": ("Home.md", True)}
    broken = index.note_links(WS, root, ("",), "Broken.md", limit=1)
    assert broken is not None and broken.properties is None
    assert broken.property_error is not None and "not valid YAML at line 3" in broken.property_error
    assert filtered(index, root, tags_all=("still",)) == ["Broken.md"]


def test_recent_changes_created_modified_moved_deleted_newest_first(
    index: NoteIndex, root: WorkspaceRoot, folder: Path
) -> None:
    first = index.recent(WS, root, ("",), since_ns=0, limit=100)
    assert {c.kind for c in first} == {"modified"}  # the first build records no creations
    assert len(first) == len(VAULT)
    # A created or modified note's time is its file's mtime, which the kernel takes from a coarser
    # clock than time.time_ns(): "since" is read off a file written now, on the same clock.
    probe = folder.parent / "since"
    probe.write_text("")
    start = probe.stat().st_mtime_ns
    (folder / "New idea.md").write_text("# New idea\n")
    index.recent(WS, root, ("",), since_ns=start, limit=10)
    (folder / "Home.md").write_text(VAULT["Home.md"] + "\nMore.\n")
    index.recent(WS, root, ("",), since_ns=start, limit=10)
    os.rename(folder / "Archive" / "Meeting.md", folder / "Archive" / "Meeting 2020.md")
    index.recent(WS, root, ("",), since_ns=start, limit=10)
    (folder / "日本語" / "メモ.md").unlink()
    changes = index.recent(WS, root, ("",), since_ns=start, limit=10)
    seen = [(c.kind, c.note_id, c.previous) for c in changes]
    assert sorted(seen) == sorted(
        [
            ("created", "New idea.md", None),
            ("modified", "Home.md", None),
            ("moved", "Archive/Meeting 2020.md", "Archive/Meeting.md"),
            ("deleted", "日本語/メモ.md", None),
        ]
    )
    assert [c.at_ns for c in changes] == sorted((c.at_ns for c in changes), reverse=True)
    assert [c.note_id for c in index.recent(WS, root, ("Archive",), since_ns=start, limit=10)] == [
        "Archive/Meeting 2020.md"
    ]


def test_search_stems_words_and_falls_back_to_some_of_them(index: NoteIndex, root: WorkspaceRoot) -> None:
    stemmed = index.search(WS, root, ("",), ["meetings"], after=None, limit=10)
    assert {n.id for n in stemmed} >= {"Projects/Atlas/Meeting.md", "Areas/Team/Meeting.md"}
    assert index.search(WS, root, ("",), ["caramelize", "zeppelin"], after=None, limit=10) == []
    some = index.search(WS, root, ("",), ["caramelize", "zeppelin"], after=None, limit=10, match="any")
    assert [n.id for n in some] == ["Café/Crème brûlée.md"]
    both = index.search(WS, root, ("",), ["atlas", "plan"], after=None, limit=10, match="any")
    assert "Projects/Atlas/Plan.md" not in {n.id for n in both}  # it matches all: not a fallback hit


def test_completion_and_similar_titles(index: NoteIndex, root: WorkspaceRoot) -> None:
    assert index.complete(WS, root, ("",), "Proj", limit=10) == (
        ["Projects/Atlas.md", "Projects/Atlas/Meeting.md", "Projects/Atlas/Plan.md"],
        False,
    )
    assert index.complete(WS, root, ("",), "meet", limit=2) == (
        ["Archive/Meeting.md", "Areas/Team/Meeting.md"],
        True,
    )
    assert index.complete(WS, root, ("",), "crème", limit=5) == (["Café/Crème brûlée.md"], False)
    assert [n.id for n in index.similar(WS, root, ("",), "atlas  PLAN!")] == ["Projects/Atlas/Plan.md"]
    assert [n.id for n in index.similar(WS, root, ("",), "Atlas plann")] == ["Projects/Atlas/Plan.md"]
    assert index.similar(WS, root, ("",), "Atlas budget") == []


def test_a_first_build_of_many_notes_resolves_as_the_pure_resolver_does(tmp_path: Path, folder: Path) -> None:
    """Over `index.BATCH` names, a resolution pass reads every key at once (`_LoadedLookup`)."""
    for i in range(index_refresh.BATCH + 100):
        path = folder / "bulk" / f"n{i:03}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"[[n{i * 7 % 600:03}]] [[Plan]] [[bulk/n{i:03}#x]] [[Ana]] [[Missing {i}]]\n")
    ids = [p.relative_to(folder).as_posix() for p in folder.rglob("*.md")]
    lookup = MemoryVault(ids, {n: parse_note(VAULT[n], note_stem(n)).aliases for n in VAULT})
    big = NoteIndex(tmp_path / "big.sqlite3", watch=False)
    with WorkspaceRoot.open(str(folder)) as root:
        for note_id in ids:
            text = (folder / note_id).read_text()
            expected = [
                resolve(link, note_id, lookup).target for link in parse_note(text, note_stem(note_id)).links
            ]
            found = big.note_links(WS, root, ("",), note_id, limit=1)
            assert found is not None and [link.target for link in found.outgoing] == expected, note_id
    big.close()


def test_a_first_build_resolves_no_link_to_a_note_that_goes_before_it_is_read(
    tmp_path: Path, folder: Path
) -> None:
    """A first build resolves links as it reads them, against the notes it listed (Rule 6): a note
    listed but gone by the time it is read must not stay a target."""
    (folder / "Solo").mkdir()
    (folder / "Solo" / "Lone.md").write_text("# Lone\n")
    (folder / "Zed.md").write_text("[[Lone]] [[Solo/Lone]] [[Plan]]\n")

    class Racing(NoteIndex):
        def _read_files(self, *args: Any, **kwargs: Any) -> None:
            (folder / "Solo" / "Lone.md").unlink(missing_ok=True)  # after the listing, before the reads
            super()._read_files(*args, **kwargs)

    racing = Racing(tmp_path / "racing.sqlite3", watch=False)
    with WorkspaceRoot.open(str(folder)) as root:
        assert outgoing(racing, root, "Zed.md") == {
            "[[Lone]]": (None, False),
            "[[Solo/Lone]]": (None, False),
            "[[Plan]]": ("Projects/Atlas/Plan.md", True),
        }
        assert backlinks(racing, root, "Projects/Atlas/Plan.md") >= {("Zed.md", "[[Plan]]")}
    racing.close()
