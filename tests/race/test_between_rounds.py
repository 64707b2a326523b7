"""Proofs 3 and 4 on every backend: what changes between round 1 and round 2 wins.

3. A grant removed from the config after round 1 makes round 2 fail with
   `workspace_not_granted`; nothing is deleted and nothing is consumed. A right lowered after
   round 1 (delete, purge, publish) makes round 2 of each confirmed tool fail with `right_missing`;
   nothing changes and nothing is consumed: the same confirmation works once the right is back.
4. A note edited in place, or replaced by another with the same name and size, is not the
   note the user confirmed: round 2 fails with `note_changed` telling the user to ask again,
   and the new content stays where it is.

Plus: the same URI rules for every store (a folder inside the workspace narrows the
candidates by path components; hostile URI forms are refused before any store is asked).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.pg import PgDatabase
from tests.race.harness import BACKENDS, StorageDeployment, deployment
from tests.race.senders import classify
from tests.wire.publishing import RecordingTarget
from tests.wire.rawhttp import RawMcp

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
        assert d.records() == 0

        d.write_configs(granted=True)  # the confirmation was never consumed
        assert classify(d.round2(client, first, NOTE), NOTE) == "deleted"
        assert d.records("notes_delete") == 1 == d.claims() - claims


def refused_for(result: dict[str, Any], right: str) -> None:
    assert result["isError"] is True, result
    assert result["structuredContent"]["error"]["code"] == "right_missing"
    assert result["structuredContent"]["error"]["right"] == right


def counts(d: StorageDeployment) -> tuple[int, int, int, int]:
    """(consumed confirmations, trash rows, saved versions, records of changes) of the deployment."""
    trash = "trash" if d.notes_kind == "files" else "notes_trash"
    rows = d.sql(f"SELECT count(*) FROM {trash} WHERE workspace = ?", (d.workspace_uri,))[0][0]
    saved = d.sql("SELECT count(*) FROM note_history WHERE workspace = ?", (d.workspace_uri,))[0][0]
    return d.claims(), int(rows), int(saved), d.records()


def confirm(client: RawMcp, tool: str, arguments: dict[str, Any], key: str) -> tuple[dict[str, Any], Any]:
    """Round 1 of a yes/no confirmed tool, and a function answering it (accept, confirm)."""
    first = client.call(tool, arguments).result
    assert first["resultType"] == "input_required", first
    answer = {key: {"action": "accept", "content": {"confirm": True}}}

    def retry() -> dict[str, Any]:
        return client.call(tool, arguments, inputResponses=answer, requestState=first["requestState"]).result

    return first, retry


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_right_lowered_between_rounds_wins_and_consumes_nothing(
    tmp_path: Path, pg: PgDatabase, backend: str
) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        d.add_note("keep.md", "# Keep\n")
        client = d.client(d.start())
        ws = {"workspaceUri": d.workspace_uri}

        first = d.round1(client, "TPS report")  # delete: lowered to editor (no delete)
        before = counts(d)
        d.write_configs(rights=("editor",))
        refused_for(d.round2(client, first, NOTE), "delete")
        assert d.note_body(NOTE) == BODY and counts(d) == before
        d.write_configs(rights=("owner",))
        assert classify(d.round2(client, first, NOTE), NOTE) == "deleted"

        _, empty = confirm(client, "notes_trash_empty", ws, "empty_trash")  # purge: lowered to maintainer
        before = counts(d)
        d.write_configs(rights=("maintainer",))
        refused_for(empty(), "purge")
        assert counts(d) == before and before[1] == 1, "the trash still holds the note"
        d.write_configs(rights=("owner",))
        assert empty()["structuredContent"]["outcome"] == "emptied"

        edit = {"op": "append", "text": "more"}
        assert not client.call("notes_edit", {**ws, "noteId": "keep.md", "edits": [edit]}).result.get(
            "isError"
        )
        _, purge = confirm(client, "notes_history_purge", ws, "purge_history")
        before = counts(d)
        d.write_configs(rights=("maintainer",))
        refused_for(purge(), "purge")
        assert counts(d) == before and before[2] == 1, "the saved version is still there"
        d.write_configs(rights=("owner",))
        assert purge()["structuredContent"]["outcome"] == "purged"
        assert counts(d)[2] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_folder_right_lowered_between_rounds_wins(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    """Delete taken from the note's folder only, still held in another (so the workspace itself
    authorizes): every store refuses the chosen note by its reach. Before the contract suite
    (tests/storage/test_store_contract.py) the files store trashed it."""
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        client = d.client(d.start())
        first = d.round1(client, "TPS report")
        before = counts(d)
        d.extra_config = f'[[principal.grant]]\nuri = "{d.workspace_uri}/drafts"\nrights = ["owner"]\n'
        d.write_configs(rights=("reader",))
        refused_for(d.round2(client, first, NOTE), "delete")
        assert d.note_body(NOTE) == BODY and counts(d) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_publishing_lowered_between_rounds_is_refused_and_the_step_stays_open(
    tmp_path: Path, pg: PgDatabase, backend: str
) -> None:
    target = RecordingTarget().start()
    try:
        with deployment(tmp_path, backend, pg.name) as d:
            d.extra_config = (
                f'[publish]\n[[publish.target]]\nid = "blog"\ntitle = "Blog"\nurl = "{target.url}"\n'
                'auth = "bearer"\n'
            )
            d.write_configs()
            d.add_note(NOTE, BODY)
            client = d.client(d.start())
            args = {"workspaceUri": d.workspace_uri, "noteId": NOTE, "target": "blog"}
            url_mode = {"elicitation": {"url": {}}}
            first = client.call("notes_publish", args, capabilities=url_mode).result
            assert first["resultType"] == "input_required", first
            opened = {"publish_connect": {"action": "accept"}}

            def retry() -> dict[str, Any]:
                return client.call(
                    "notes_publish",
                    args,
                    capabilities=url_mode,
                    inputResponses=opened,
                    requestState=first["requestState"],
                ).result

            before = counts(d)
            d.write_configs(rights=("maintainer",))
            refused_for(retry(), "publish")
            assert counts(d) == before and target.received == []
            d.write_configs(rights=("owner",))
            assert retry()["resultType"] == "input_required", "the connect step is still open, not consumed"
            assert target.received == []
    finally:
        target.stop()


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
        assert d.records() == 0, "and left no record"

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
