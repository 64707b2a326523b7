"""Folder grants on every store: moves across the boundary, link rewrites into notes the principal may
not write, restores to a path outside the grant, and what a principal granted one folder sees.

The principal reads the whole workspace and maintains `Projects/` (or, in the "folder only" cases,
holds nothing outside `Projects/`). Every refusal leaves every note byte for byte as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.pg import PgDatabase
from tests.race.harness import BACKENDS, StorageDeployment, deployment
from tests.wire.rawhttp import RawMcp

NOTES = {
    "Home.md": "# Home\n\nSee [[Projects/plan]] and [[Projects/budget|the budget]].\n",
    "Projects/plan.md": "# Plan\n\nThe budget: [[budget]].\n",
    "Projects/budget.md": "# Budget\n",
    "Projects/alone.md": "# Alone\n\nNothing links here.\n",
    "Other/x.md": "# X\n",
}


@contextmanager
def granted(
    tmp_path: Path, pg: PgDatabase, backend: str, *, read_all: bool
) -> Iterator[tuple[StorageDeployment, RawMcp]]:
    with deployment(tmp_path, backend, pg.name) as d:
        for note_id, body in NOTES.items():
            d.add_note(note_id, body)
        d.granted = read_all
        d.rights = ("reader",)
        d.extra_config = f'[[principal.grant]]\nuri = "{d.workspace_uri}/Projects"\nrights = ["maintainer"]\n'
        d.write_configs()
        yield d, d.client(d.start())


def bodies(d: StorageDeployment) -> dict[str, str | None]:
    return {note_id: d.note_body(note_id) for note_id in [*NOTES, "Projects/plan2.md", "Other/plan.md"]}


def error_of(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("isError") is True, result
    error: dict[str, Any] = result["structuredContent"]["error"]
    return error


def move(client: RawMcp, d: StorageDeployment, note_id: str, new_path: str, **extra: Any) -> dict[str, Any]:
    args = {"workspaceUri": d.workspace_uri, "noteId": note_id, "newPath": new_path, **extra}
    return client.call("notes_move", args).result


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_move_needs_write_at_both_ends(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    with granted(tmp_path, pg, backend, read_all=True) as (d, client):
        before = bodies(d)
        out = error_of(move(client, d, "Projects/alone.md", "Other/alone.md"))
        assert out["code"] == "right_missing" and out["right"] == "write"
        assert (
            "at Other/alone.md" in out["message"]
            and f"write in: {d.workspace_uri}/Projects" in out["message"]
        )
        into = error_of(move(client, d, "Other/x.md", "Projects/x.md"))
        assert into["code"] == "right_missing" and "at Other/x.md" in into["message"]
        assert bodies(d) == before
        moved = move(client, d, "Projects/alone.md", "Projects/Sub/alone.md")
        assert moved["structuredContent"]["to"] == "Projects/Sub/alone.md"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_move_that_would_rewrite_links_it_may_not_write_is_refused(
    tmp_path: Path, pg: PgDatabase, backend: str
) -> None:
    with granted(tmp_path, pg, backend, read_all=True) as (d, client):
        before = bodies(d)
        for dry_run in (True, False):
            refused = error_of(move(client, d, "Projects/plan.md", "Projects/plan2.md", dryRun=dry_run))
            assert refused["code"] == "right_missing"
            message = refused["message"]
            assert "nothing was moved" in message and "Home.md" in message and "updateLinks: false" in message
            assert bodies(d) == before
        # within the grant, the links it may write are rewritten as ever
        inside = move(client, d, "Projects/budget.md", "Projects/money.md", updateLinks=True)
        error = inside.get("structuredContent", {}).get("error")
        assert error is not None and "Home.md" in error["message"], "Home.md links the budget too"
        forced = move(client, d, "Projects/plan.md", "Projects/plan2.md", updateLinks=False)
        assert forced["structuredContent"]["rewritten"] == []
        assert d.note_body("Projects/plan2.md") == NOTES["Projects/plan.md"]
        assert d.note_body("Home.md") == NOTES["Home.md"], "left as it was: its link no longer opens the plan"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refused_rewrite_counts_the_notes_it_may_not_read_without_naming_them(
    tmp_path: Path, pg: PgDatabase, backend: str
) -> None:
    with granted(tmp_path, pg, backend, read_all=False) as (d, client):
        before = bodies(d)
        refused = error_of(move(client, d, "Projects/plan.md", "Projects/plan2.md"))
        assert refused["code"] == "right_missing"
        assert "1 note(s) you may not read" in refused["message"] and "Home" not in refused["message"]
        assert bodies(d) == before
        listed = client.call("notes_list", {"workspaceUri": d.workspace_uri}).result["structuredContent"]
        assert {n["id"] for n in listed["notes"]} == {n for n in NOTES if n.startswith("Projects/")}
        searched = client.call("notes_search", {"workspaceUri": d.workspace_uri, "query": "budget"}).result
        results = searched["structuredContent"]["results"]
        found = {h["id"] for h in results if h["foundBy"] != "meaning"}
        assert found == {"Projects/budget.md", "Projects/plan.md"}, "Home.md mentions the budget too"
        assert all(h["id"].startswith("Projects/") for h in results), "nor is it found by meaning"
        other = error_of(
            client.call("notes_read", {"workspaceUri": d.workspace_uri, "noteId": "Other/x.md"}).result
        )
        assert other["code"] == "right_missing" and other["right"] == "read"
        assert "Other/x.md" in other["message"] and "# X" not in other["message"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_restore_needs_write_where_the_note_goes(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    with granted(tmp_path, pg, backend, read_all=True) as (d, client):
        ws = d.workspace_uri
        first = client.call("notes_delete", {"workspaceUri": ws, "noteIds": ["Projects/alone.md"]}).result
        answer = {"action": "accept", "content": {"note_ids": ["Projects/alone.md"], "confirm": True}}
        done = client.call(
            "notes_delete",
            {"workspaceUri": ws, "noteIds": ["Projects/alone.md"]},
            inputResponses={"delete_choice": answer},
            requestState=first["requestState"],
        ).result
        (entry,) = done["structuredContent"]["deleted"]
        outside = error_of(
            client.call(
                "notes_restore",
                {"workspaceUri": ws, "trashId": entry["trashId"], "newPath": "Other/alone.md"},
            ).result
        )
        assert outside["code"] == "right_missing" and "at Other/alone.md" in outside["message"]
        assert d.note_body("Other/alone.md") is None and d.trash_rows("Projects/alone.md") == 1
        back = client.call("notes_restore", {"workspaceUri": ws, "trashId": entry["trashId"]}).result
        assert back["structuredContent"]["note"]["id"] == "Projects/alone.md"
        assert d.note_body("Projects/alone.md") == NOTES["Projects/alone.md"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_resources_and_completions_answer_only_for_what_may_be_read(
    tmp_path: Path, pg: PgDatabase, backend: str
) -> None:
    with granted(tmp_path, pg, backend, read_all=False) as (d, client):
        listed = client.request("resources/list").result["resources"]
        assert sorted(r["name"] for r in listed) == sorted(n for n in NOTES if n.startswith("Projects/"))
        inside = client.request("resources/read", {"uri": f"{d.workspace_uri}/Projects/plan.md"}).result
        assert inside["contents"][0]["text"] == NOTES["Projects/plan.md"]
        outside = client.request("resources/read", {"uri": f"{d.workspace_uri}/Other/x.md"}).error
        assert outside["code"] == -32602 and "# X" not in json.dumps(outside)
        template = {"type": "ref/resource", "uri": f"{d.workspace_uri}/{{+noteId}}"}
        completed = client.request(
            "completion/complete", {"ref": template, "argument": {"name": "noteId", "value": ""}}
        ).result["completion"]["values"]
        assert sorted(completed) == sorted(n for n in NOTES if n.startswith("Projects/"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_similar_notes_stay_inside_what_the_principal_may_read(
    tmp_path: Path, pg: PgDatabase, backend: str
) -> None:
    """notes_similar (issue 25) for a principal that reads only `Projects/`: every note it names is
    there (Home.md and Other/x.md are never shown), a note outside is refused as a read is, and what a
    note already links to is left out."""
    with granted(tmp_path, pg, backend, read_all=False) as (d, client):
        ws = d.workspace_uri
        alone = client.call("notes_similar", {"workspaceUri": ws, "noteId": "Projects/alone.md"}).result
        shown = alone["structuredContent"]["results"]
        assert {r["id"] for r in shown} == {"Projects/plan.md", "Projects/budget.md"}, shown
        assert all(r["uri"].startswith(f"{ws}/Projects/") and "fromSection" in r for r in shown)
        outside = error_of(client.call("notes_similar", {"workspaceUri": ws, "noteId": "Other/x.md"}).result)
        assert outside["code"] == "right_missing" and "# X" not in outside["message"]
        plan = client.call("notes_similar", {"workspaceUri": ws, "noteId": "Projects/plan.md"}).result
        assert [r["id"] for r in plan["structuredContent"]["results"]] == [
            "Projects/alone.md"
        ]  # it links to budget
