"""A server killed with SIGKILL at each fault point of the write paths the record touches, then
restarted: the change and its record (`notes.change_log`) committed together or neither, or exactly
what `change_log` Rule 2 says the files store can leave.

* `write_uncommitted` (create, update, move, restore: the change made, its record written, no
  COMMIT): the SQL stores show neither, before and after the restart. The files store shows its file
  step without a record: the new note, the new content, the note at its new id, the note back from
  the trash (whose row recovery then drops); never a record.
* `after_mutation` of the confirmed `notes_trash_empty` and `notes_history_purge`: before COMMIT the
  SQL stores show neither (the confirmation still usable, and the same answer then completes it with
  one record); the files store shows the purged files gone without a record (their rows dropped, or
  left unreadable, as the bound says). A kill after COMMIT leaves both: the record rides in the same
  transaction as the claim, which tests/race/test_crash.py's `after_commit` cases and the race
  suites' records == commits counts already prove, so it is not run again here.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from notewarden.scope.note_paths import HISTORY_DIR_NAME
from tests.pg import PgDatabase
from tests.race.fault_entry import PAUSE_AT_ENV, PAUSE_FILE_ENV
from tests.race.harness import StorageDeployment, deployment
from tests.race.senders import classify
from tests.race.test_crash import wait_for
from tests.wire.rawhttp import RawMcp

NOTE = "reports/victim.md"
BODY = "# Victim\n\nThe note a crash must not lose.\n"
NEW_BODY = "# Victim\n\nRewritten.\n"
BACKENDS = ["files+sqlite", "sqlite", "postgres"]


def killed_during(d: StorageDeployment, point: str, call: Callable[[RawMcp], Any]) -> None:
    """Start a server holding at `point`, make the call, SIGKILL it there."""
    pause = d.state_dir("a") / "paused"  # the server may write only there (Landlock)
    victim = d.start("a", **{PAUSE_AT_ENV: point, PAUSE_FILE_ENV: str(pause)})
    client = d.client(victim)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(call, client)
        wait_for(pause.exists)
        os.kill(victim.process.pid, signal.SIGKILL)
        victim.process.wait(timeout=10)
        with pytest.raises(Exception):  # noqa: B017  the connection dies with the server: no reply at all
            pending.result(timeout=30)
    client.close()
    pause.unlink()


def delete_note(d: StorageDeployment, client: RawMcp) -> str:
    first = d.round1(client, "victim")
    done = d.round2(client, first, NOTE)
    assert classify(done, NOTE) == "deleted", done
    return str(done["structuredContent"]["deleted"][0]["trashId"])


def trashed_on_another_server(d: StorageDeployment) -> str:
    """The note deleted through a server without a fault point, which then stops: its trash id."""
    server = d.start("setup")
    try:
        return delete_note(d, d.client(server))
    finally:
        server.stop()


WRITES: dict[str, tuple[str, Callable[[StorageDeployment], dict[str, Any]]]] = {
    "create": (
        "notes_create",
        lambda d: {"path": "reports/new.md", "title": "New", "body": "never committed"},
    ),
    "update": (
        "notes_update",
        lambda d: {"noteId": NOTE, "body": NEW_BODY, "expectedVersion": _version(BODY)},
    ),
    "move": ("notes_move", lambda d: {"noteId": NOTE, "newPath": "archive/victim.md"}),
    "restore": ("notes_restore", lambda d: {"trashId": trashed_on_another_server(d)}),
}


def _version(text: str) -> str:
    from notewarden.notes.model import content_version

    return content_version(text.encode())


def notes(d: StorageDeployment) -> dict[str, str | None]:
    return {n: d.note_body(n) for n in (NOTE, "reports/new.md", "archive/victim.md")}


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_sigkill_before_a_write_commits_leaves_neither_or_the_files_bound(
    tmp_path: Path, pg: PgDatabase, backend: str, write: str
) -> None:
    tool, arguments_of = WRITES[write]
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        arguments = arguments_of(d)
        before = notes(d)

        killed_during(
            d, "write_uncommitted", lambda c: c.call(tool, {"workspaceUri": d.workspace_uri, **arguments})
        )

        assert d.records(tool) == 0, "no record: its transaction never committed"
        expected = dict(before)
        if d.notes_kind == "files":  # the file step happened (change_log Rule 2's bound)
            expected |= {
                "create": {"reports/new.md": "# New\n\nnever committed"},
                "update": {NOTE: NEW_BODY},
                "move": {NOTE: None, "archive/victim.md": BODY},
                "restore": {NOTE: BODY},
            }[write]
        assert notes(d) == expected

        restarted = d.client(d.start("b"))  # same storage, no hook: start-up recovery runs
        assert notes(d) == expected and d.records(tool) == 0
        if write == "restore" and d.notes_kind == "files":
            assert d.trash_rows(NOTE) == 0, "recovery dropped the row of the entry that left the trash"
        if d.notes_kind != "files":  # nothing happened: the same call now commits, with its record
            again = restarted.call(tool, {"workspaceUri": d.workspace_uri, **arguments}).result
            assert not again.get("isError"), again
            assert d.records(tool) == 1


def saved_copies(d: StorageDeployment) -> list[str]:
    """The files store's saved versions in the workspace's history folder (its records left out)."""
    folder = d.workspace_dir / HISTORY_DIR_NAME
    return (
        sorted(p.name for p in folder.iterdir() if not p.name.startswith(("~", ".")))
        if folder.exists()
        else []
    )


PURGES = {
    "notes_trash_empty": ("empty_trash", lambda d: {"workspaceUri": d.workspace_uri}),
    "notes_history_purge": ("purge_history", lambda d: {"workspaceUri": d.workspace_uri, "noteId": NOTE}),
}


def purged(d: StorageDeployment, tool: str) -> int:
    """What is left to purge: trash entries present (files: in the folder), or saved versions."""
    if tool == "notes_trash_empty":
        return len(d.trash_entries()) if d.notes_kind == "files" else d.trash_rows(NOTE)
    return int(d.sql("SELECT count(*) FROM note_history WHERE workspace = ?", (d.workspace_uri,))[0][0])


@pytest.mark.parametrize("tool", list(PURGES))
@pytest.mark.parametrize("backend", ["files+sqlite", "sqlite"])
def test_sigkill_in_a_confirmed_purge_leaves_purge_and_record_together_or_the_files_bound(
    tmp_path: Path, pg: PgDatabase, backend: str, tool: str
) -> None:
    key, arguments_of = PURGES[tool]
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        setup = d.client(d.start("setup"))
        if tool == "notes_trash_empty":
            delete_note(d, setup)
        else:
            version = setup.call("notes_read", {"workspaceUri": d.workspace_uri, "noteId": NOTE}).result
            edit = {"workspaceUri": d.workspace_uri, "noteId": NOTE, "body": NEW_BODY}
            expected = version["structuredContent"]["note"]["version"]
            assert not setup.call("notes_update", {**edit, "expectedVersion": expected}).result.get("isError")
        arguments = arguments_of(d)
        first = setup.call(tool, arguments).result
        assert first["resultType"] == "input_required", first
        answer = {"inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}}
        answer["requestState"] = first["requestState"]
        claims, records = d.claims(), d.records(tool)
        assert purged(d, tool) == 1

        killed_during(d, "after_mutation", lambda c: c.call(tool, arguments, **answer))

        assert d.claims() == claims and d.records(tool) == records, "nothing committed"
        if d.notes_kind != "files":
            assert purged(d, tool) == 1, "nothing purged: the rows came back with the rollback"
        elif tool == "notes_trash_empty":  # the bound: the files were unlinked before COMMIT
            assert purged(d, tool) == 0 and d.trash_rows(NOTE) == 1
        else:
            assert purged(d, tool) == 1 and saved_copies(d) == [], "its row stays, its copy is gone"

        restarted = d.client(d.start("b"))
        if d.notes_kind != "files":
            done = restarted.call(tool, arguments, **answer).result
            assert not done.get("isError") and done["structuredContent"]["purged"] == 1, done
            assert d.claims() - claims == 1 == d.records(tool) - records
            assert purged(d, tool) == 0
        else:
            assert d.records(tool) == records, "the files store's bound: purged, no record"
            if tool == "notes_trash_empty":
                assert d.trash_rows(NOTE) == 0, "recovery dropped the rows of the purged entries"
