"""Proofs 3 and 4 on every backend: what changes between round 1 and round 2 wins.

3. A grant removed from the config after round 1 makes round 2 fail with
   `workspace_not_granted`; nothing is deleted and nothing is consumed.
4. A note edited in place, or replaced by another with the same name and size, is not the
   note the user confirmed: round 2 fails with `note_changed` telling the user to ask again,
   and the new content stays where it is.

Plus: the same URI rules for every store (a folder inside the workspace narrows the
candidates by path components; hostile URI forms are refused before any store is asked).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pg import PgDatabase
from tests.race.harness import BACKENDS, deployment
from tests.race.senders import classify

NOTE = "reports/tps-2019.md"
BODY = "---\ntitle: TPS report 2019\n---\nCover sheet missing.\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_revocation_between_rounds_wins(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        client = d.client(d.start())
        first = d.round1(client, "TPS report")
        claims = d.claims()

        d.write_configs(granted=False)
        revoked = d.round2(client, first, NOTE)
        assert revoked["isError"] is True
        assert revoked["structuredContent"]["error"]["code"] == "workspace_not_granted"
        assert "granted: none" in revoked["content"][0]["text"]
        assert d.note_body(NOTE) == BODY and d.trash_rows(NOTE) == 0 and d.claims() == claims

        d.write_configs(granted=True)  # the confirmation was never consumed
        assert classify(d.round2(client, first, NOTE), NOTE) == "deleted"


@pytest.mark.parametrize("change", ["edited", "replaced"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_note_changed_between_rounds_is_not_deleted(
    tmp_path: Path, pg: PgDatabase, backend: str, change: str
) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        client = d.client(d.start())
        first = d.round1(client, "TPS report")
        claims = d.claims()

        changed = BODY.replace("missing", "found!!")  # same length: only the identity tells
        assert len(changed) == len(BODY)
        (d.edit_note if change == "edited" else d.replace_note)(NOTE, changed)

        result = d.round2(client, first, NOTE)
        assert result["isError"] is True
        assert result["structuredContent"]["error"]["code"] == "note_changed"
        text = result["content"][0]["text"]
        assert "nothing was deleted" in text and "confirm anew" in text
        assert d.note_body(NOTE) == changed
        assert d.trash_rows(NOTE) == 0 and d.trash_copies(NOTE) == 0
        assert d.claims() == claims, "the failed commit rolled its claim back"

        again = d.round1(client, "TPS report")  # asking again shows the current note, which can go
        assert classify(d.round2(client, again, NOTE), NOTE) == "deleted"


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_store_applies_the_same_uri_rules(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        for note_id in ("a/x.md", "ab/y.md", "a/deeper/z.md", "top.md"):
            d.add_note(note_id, f"# Note {note_id}\n")
        client = d.client(d.start())

        listed = client.call("notes_list", {"workspaceUri": d.workspace_uri + "/a"}).result
        assert [n["id"] for n in listed["structuredContent"]["notes"]] == ["a/deeper/z.md", "a/x.md"]
        everything = client.call("notes_list", {"workspaceUri": d.workspace_uri}).result
        assert [n["id"] for n in everything["structuredContent"]["notes"]] == [
            "a/deeper/z.md",
            "a/x.md",
            "ab/y.md",
            "top.md",
        ]
        for hostile in ("/../notes", "/%2e%2e/x", "%2fa", "-evil", "/a?x=1"):
            result = client.call("notes_list", {"workspaceUri": d.workspace_uri + hostile}).result
            assert result["isError"] is True
            assert result["structuredContent"]["error"]["code"] in (
                "invalid_workspace_uri",
                "workspace_not_granted",
            )


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_whole_toolset_works_on_every_store(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    """Create, read, update, search, move, delete (confirmed), list the trash and restore, through a
    real server on each backend: the same tools and answers whether notes are files or rows."""
    with deployment(tmp_path, backend, pg.name) as d:
        client = d.client(d.start())
        ws = {"workspaceUri": d.workspace_uri}

        def ok(tool: str, **arguments: object) -> dict[str, object]:
            result = client.call(tool, {**ws, **arguments}).result
            assert not result.get("isError"), result
            return result["structuredContent"]

        ok("notes_create", path="plans/q3.md", title="Quarterly plan", body="Ship the storage layer.")
        read = ok("notes_read", noteId="plans/q3.md")
        assert read["body"] == "# Quarterly plan\n\nShip the storage layer."
        version = read["note"]["version"]  # type: ignore[index]
        ok("notes_update", noteId="plans/q3.md", body="# Quarterly plan\n\nShipped.", expectedVersion=version)
        stale = client.call(
            "notes_update", {**ws, "noteId": "plans/q3.md", "body": "# lost\n", "expectedVersion": version}
        ).result
        assert stale["structuredContent"]["error"]["code"] == "version_conflict"
        found = ok("notes_search", query="shipped")
        assert [r["id"] for r in found["results"]] == ["plans/q3.md"]  # type: ignore[attr-defined]
        ok("notes_move", noteId="plans/q3.md", newPath="archive/q3.md")

        first = d.round1(client, "quarterly")
        assert first.options == ["archive/q3.md"]
        assert classify(d.round2(client, first, "archive/q3.md"), "archive/q3.md") == "deleted"
        (entry,) = ok("notes_trash_list")["entries"]  # type: ignore[misc]
        assert entry["id"] == "archive/q3.md"
        ok("notes_restore", trashId=entry["trashId"])
        assert ok("notes_read", noteId="archive/q3.md")["body"] == "# Quarterly plan\n\nShipped."
        assert ok("notes_trash_list")["entries"] == []
