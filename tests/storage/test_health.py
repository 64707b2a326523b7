"""Vault health on a real-shaped vault (issue 27): every known defect found, nothing else, on every
store (the files index, the SQLite store, the PostgreSQL store), each opened as `notewarden serve`
opens it (the SQL stores after `notewarden import`).

The vault is written in the documented syntax (Obsidian wikilinks, embeds, Markdown links, front
matter, aliases, headings, block ids, code fences) with one defect of each kind `notes.health` judges,
and notes that look suspicious but are fine: a link to a heading that exists and to a block id, a
note linked only by an alias, a note that only links out, a note of front matter only, two daily
notes whose titles differ by a digit, a link in a code fence, an external link, a note linking to
itself by `[[#Heading]]`. Its attachments (judged by the files store only: the SQL stores have no
files) hold one defect of each attachment kind and files that look suspicious but are fine: an image
embedded by name, one linked only by a relative path, two files of one name of which a link opens
one (the other is unlinked), a link whose name exists but whose folder does not (missing), a file
in a hidden folder (never an attachment).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from bench.search_quality import opened

from notewarden.notes.health import KINDS, HealthItem
from notewarden.notes.history import Change
from notewarden.notes.store import replace_with
from notewarden.scope.rights import Caller
from tests.pg import PgDatabase

STORES = ("files", "sqlite", "postgres")
OFF = {"provider": "off"}
WRITE = Change("bench", "notes_update", "written by the test")

VAULT: dict[str, str] = {
    "Projects/Atlas.md": (
        "---\naliases: [Big map]\ntags: [project]\n---\n# Atlas\n\n"
        "See [[Roadmap#Milestones]] and [[Missing plan]].\n"  # line 7: a heading that exists; broken
        "Ask [[Ana Souza]] about ![[Ghost diagram]] and [[Roadmap#^plan1|the plan]].\n"  # 8: alias; broken embed
        "![[diagram.png]] and [the spec](../Specs/nothing.md) and [site](https://example.com).\n"  # 9
        "\n```\n[[Not a link]]\n```\n"
    ),
    "Projects/Roadmap.md": (
        "# Roadmap\n\n## Milestones\n\nBack to [[Atlas]], see [[#Milestones]]. The plan. ^plan1\n\n"
        "Owners: [[Bob]]; stubs: [[Empty]], [[Title only]].\nChart: ![](../Data/chart.png)\n"
    ),
    "Projects/diagram.png": "\x89PNG not really",
    "People/Ana.md": "---\naliases:\n  - Ana Souza\n---\n# Ana\n\nDesigner.\n",
    "People/Bob.md": "---\nrole: designer\n---\n",
    "Inbox/Outbound.md": (
        "# Outbound\n\nIt only links out: [[Roadmap]].\n"
        "![[ghost.png]] ![[logo.png]] [table](Other/table.csv)\n"  # 4: missing embed; linked; missing link
    ),
    "Data/chart.png": "\x89PNG linked by a relative path",
    "Data/table.csv": "a,b\n1,2\n",
    "Data/logo.png": "\x89PNG the other logo: [[logo.png]] opens Archive's (by path order)",
    "Archive/logo.png": "\x89PNG",
    "Inbox/scan.pdf": "%PDF-1.4 nothing links to it",
    ".obsidian/icon.png": "\x89PNG hidden: never an attachment",
    "Inbox/Lonely.md": "# Lonely\n\nNo links here at all, #lonely.\n",
    "Inbox/Broken front.md": "---\ntitle: [unclosed\nstatus: draft\n---\n# Broken front\n\nAbout [[Atlas]].\n",
    "Inbox/Empty.md": "",
    "Inbox/Title only.md": "# Title only\n\n",
    "Meetings/Weekly.md": "# Weekly sync\n\nAbout [[Atlas]].\n",
    "Archive/Weekly.md": "# Weekly sync\n\nAbout [[Roadmap]].\n",
    "Meetings/Standup.md": "# Daily stand-up\n\nAbout [[Atlas]].\n",
    "Archive/standup.md": "# daily stand up\n\nAbout [[Atlas]].\n",
    "Meetings/Meeting 2024-01-05.md": "# Meeting 2024-01-05\n\n[[Atlas]]\n",
    "Meetings/Meeting 2024-01-06.md": "# Meeting 2024-01-06\n\n[[Atlas]]\n",
}

EXPECTED = {
    ("front_matter", "Inbox/Broken front.md", None),
    ("empty", "Inbox/Empty.md", None),
    ("empty", "Inbox/Title only.md", None),
    ("duplicate_title", "Meetings/Weekly.md", None),
    ("duplicate_title", "Archive/Weekly.md", None),
    ("near_duplicate_title", "Meetings/Standup.md", None),
    ("near_duplicate_title", "Archive/standup.md", None),
    ("orphan", "Inbox/Lonely.md", None),
    ("broken_link", "Projects/Atlas.md", 7),
    ("broken_embed", "Projects/Atlas.md", 8),
    ("broken_link", "Projects/Atlas.md", 9),
}
FILES_EXPECTED = EXPECTED | {
    ("missing_attachment_embed", "Inbox/Outbound.md", 4),
    ("missing_attachment_link", "Inbox/Outbound.md", 4),
    ("unlinked_attachment", "Data/logo.png", None),
    ("unlinked_attachment", "Data/table.csv", None),
    ("unlinked_attachment", "Inbox/scan.pdf", None),
}
"""What the files store finds: the attachment kinds too (`notes.health` Rule 1)."""


def expected(store: str) -> set[tuple[str, str, int | None]]:
    return FILES_EXPECTED if store == "files" else EXPECTED


def write_vault(folder: Path) -> Path:
    for note_id, text in VAULT.items():
        (folder / note_id).parent.mkdir(parents=True, exist_ok=True)
        (folder / note_id).write_bytes(text.encode("latin-1" if not note_id.endswith(".md") else "utf-8"))
    return folder


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, pg: PgDatabase) -> Iterator[dict[str, tuple[Any, str]]]:
    tmp = tmp_path_factory.mktemp("health")
    vault = write_vault(tmp / "vault")
    url = pg.url.rsplit("/", 1)[0] + "/" + pg.create()
    with ExitStack() as stack:
        yield {
            store: stack.enter_context(opened(store, tmp, url, source=vault, search=OFF)) for store in STORES
        }
    shutil.rmtree(tmp, ignore_errors=True)


def report(
    opened_store: tuple[Any, str], *, limit: int = 100, kinds: frozenset[str] = frozenset(KINDS)
) -> list[HealthItem]:
    """The whole report, a page of `limit` at a time."""
    services, uri = opened_store
    scope = services.grants.authorize_workspace(Caller("bench"), uri)
    items: list[HealthItem] = []
    after = None
    while True:
        page = services.store.health(scope, kinds=kinds, after=after, limit=limit + 1)
        items += page[:limit]
        if len(page) <= limit:
            return items
        after = page[limit - 1].key


def found(items: list[HealthItem]) -> set[tuple[str, str, int | None]]:
    return {(i.kind, i.note_id, i.line) for i in items}


@pytest.mark.parametrize("store", STORES)
def test_every_defect_is_found_and_nothing_else(stores: dict[str, tuple[Any, str]], store: str) -> None:
    items = report(stores[store])
    assert found(items) == expected(store)
    assert len(items) == len(expected(store))
    assert [i.note_id for i in items] == sorted(i.note_id for i in items)  # note by note, by id
    by = {(i.kind, i.note_id, i.line): i for i in items}
    assert by[("duplicate_title", "Meetings/Weekly.md", None)].others == ("Archive/Weekly.md",)
    assert by[("near_duplicate_title", "Archive/standup.md", None)].others == ("Meetings/Standup.md",)
    assert by[("broken_link", "Projects/Atlas.md", 7)].written == "[[Missing plan]]"
    assert by[("broken_embed", "Projects/Atlas.md", 8)].target == "Ghost diagram"
    assert by[("broken_link", "Projects/Atlas.md", 9)].target == "../Specs/nothing.md"
    if store == "files":
        assert by[("missing_attachment_embed", "Inbox/Outbound.md", 4)].written == "![[ghost.png]]"
        assert by[("missing_attachment_link", "Inbox/Outbound.md", 4)].target == "Other/table.csv"
        assert by[("unlinked_attachment", "Inbox/scan.pdf", None)].title == "scan.pdf"


@pytest.mark.parametrize("store", STORES)
def test_pages_of_one_give_the_same_report(stores: dict[str, tuple[Any, str]], store: str) -> None:
    whole = report(stores[store])
    for limit in (1, 2, 3):
        assert report(stores[store], limit=limit) == whole


@pytest.mark.parametrize("store", STORES)
def test_kinds_narrow_the_report(stores: dict[str, tuple[Any, str]], store: str) -> None:
    for kind in KINDS:
        items = report(stores[store], limit=2, kinds=frozenset({kind}))
        assert found(items) == {e for e in expected(store) if e[0] == kind}, kind


@pytest.mark.parametrize("store", STORES)
def test_the_report_follows_a_retitled_note(stores: dict[str, tuple[Any, str]], store: str) -> None:
    """Duplicates are kept between pages (`notes.health` Rule 4) only while no note changes."""
    services, uri = stores[store]
    scope = services.grants.authorize_workspace(Caller("bench"), uri)
    assert found(report(stores[store])) == expected(store)
    lonely = "Inbox/Lonely.md"
    original = services.store.read_note(scope, lonely).data
    services.store.rewrite_note(
        scope, lonely, replace_with(b"# Weekly sync\n\nNo links.\n", None), change=WRITE
    )
    try:
        items = report(stores[store])
        assert found(items) == expected(store) | {("duplicate_title", lonely, None)}
        weekly = next(i for i in items if (i.kind, i.note_id) == ("duplicate_title", "Meetings/Weekly.md"))
        assert weekly.others == ("Archive/Weekly.md", lonely)
    finally:
        services.store.rewrite_note(scope, lonely, replace_with(original, None), change=WRITE)
    assert found(report(stores[store])) == expected(store)
