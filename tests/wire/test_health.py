"""`notes_health` over the real server (HTTP, issue 27): its pages join into the whole report with no
repeat and no gap, a cursor of other arguments is refused, and a principal granted one folder sees
only that folder's items: never a note of another folder, not even as the other note of a duplicate
title, and a note linked only from a folder it may not read is not called an orphan.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.pg import PgDatabase
from tests.race.harness import deployment

NOTES = {
    "Home.md": "# Home\n\nSee [[Projects/plan]] and [[Nowhere]].\n",
    "Projects/plan.md": "# Plan\n\n[[budget]]\n[[Missing A]]\n[[Missing B]]\n![[Missing C]]\n",
    "Projects/budget.md": "# Budget\n\nBack to [[plan]].\n",
    "Projects/alone.md": "# Alone\n\nNothing links here.\n",
    "Projects/again.md": "# Plan\n\nSee [[budget]].\n",
    "Projects/linked.md": "# Linked\n\nOnly Other/ links here.\n",
    "Other/x.md": "# X\n",
    "Other/plan.md": "# Plan\n\n[[linked]]\n",
}
IN_PROJECTS = [
    ("duplicate_title", "Projects/again.md", None),
    ("orphan", "Projects/alone.md", None),
    ("duplicate_title", "Projects/plan.md", None),
    ("broken_link", "Projects/plan.md", 4),
    ("broken_link", "Projects/plan.md", 5),
    ("broken_embed", "Projects/plan.md", 6),
]


def report(client: Any, arguments: dict[str, Any]) -> list[list[dict[str, Any]]]:
    pages, cursor = [], None
    while True:
        result = client.call("notes_health", {**arguments, **({"cursor": cursor} if cursor else {})}).result
        assert not result.get("isError"), result
        pages.append(result["structuredContent"]["items"])
        cursor = result["structuredContent"].get("nextCursor")
        if cursor is None:
            return pages


def shown(pages: list[list[dict[str, Any]]]) -> list[tuple[str, str, int | None]]:
    return [(i["kind"], i["id"], i.get("line")) for page in pages for i in page]


def test_pages_and_folder_reach(tmp_path: Path, pg: PgDatabase) -> None:
    with deployment(tmp_path, "files+sqlite", pg.name) as d:
        for note_id, body in NOTES.items():
            d.add_note(note_id, body)
        d.granted = False  # alice holds nothing but Projects/
        d.rights = ("reader",)
        d.extra_config = f'[[principal.grant]]\nuri = "{d.workspace_uri}/Projects"\nrights = ["reader"]\n'
        d.write_configs()
        client = d.client(d.start())
        ws = d.workspace_uri

        whole = report(client, {"workspaceUri": ws})
        assert len(whole) == 1 and shown(whole) == IN_PROJECTS
        items = {(i["kind"], i["id"], i.get("line")): i for i in whole[0]}
        assert items[("duplicate_title", "Projects/plan.md", None)]["others"] == ["Projects/again.md"], (
            "Other/plan.md has the same title but is out of reach: never named"
        )
        broken = items[("broken_embed", "Projects/plan.md", 6)]
        assert broken["written"] == "![[Missing C]]" and broken["folder"] == "Projects"
        assert "notes_edit" in broken["fix"] and "notes_create" in broken["fix"]
        assert "notes_delete" in items[("orphan", "Projects/alone.md", None)]["fix"]

        paged = report(client, {"workspaceUri": ws, "limit": 4})
        assert [len(p) for p in paged] == [4, 2] and shown(paged) == IN_PROJECTS, "no repeat, no gap"
        by_one = report(client, {"workspaceUri": ws, "limit": 1})
        assert shown(by_one) == IN_PROJECTS

        narrowed = report(client, {"workspaceUri": ws, "folder": "Projects", "kinds": ["orphan"]})
        assert shown(narrowed) == [("orphan", "Projects/alone.md", None)]

        first = client.call("notes_health", {"workspaceUri": ws, "limit": 2}).result["structuredContent"]
        other = client.call(
            "notes_health",
            {"workspaceUri": ws, "limit": 2, "kinds": ["orphan"], "cursor": first["nextCursor"]},
        ).result
        assert other["isError"] and other["structuredContent"]["error"]["code"] == "invalid_cursor"

        refused = client.call("notes_health", {"workspaceUri": ws, "folder": "Other"}).result
        assert refused["isError"] and refused["structuredContent"]["error"]["code"] == "right_missing"
        outside = client.call("notes_health", {"workspaceUri": f"{ws}/Projects", "folder": "Other"}).result
        assert outside["isError"] and outside["structuredContent"]["error"]["code"] == "path_refused"


@pytest.mark.parametrize("backend", ["files+sqlite"])
def test_a_reader_of_the_whole_workspace_sees_every_folder(
    tmp_path: Path, pg: PgDatabase, backend: str
) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        for note_id, body in NOTES.items():
            d.add_note(note_id, body)
        d.rights = ("reader",)
        d.write_configs()
        client = d.client(d.start())
        found = shown(report(client, {"workspaceUri": d.workspace_uri}))
        assert found == [
            ("broken_link", "Home.md", 3),
            ("duplicate_title", "Other/plan.md", None),
            ("empty", "Other/x.md", None),
            ("orphan", "Other/x.md", None),
            *IN_PROJECTS,
        ]
