"""Proof 3: one workspace folder, servers with different state dirs; a confirmed delete stays deleted.

The reported failure: `notewarden serve --workspace ~/notes` (state in the XDG dir) next to an
HTTP server from a config with its own `state_dir`. Each ledger took the other's journaled deletes
for unfinished ones and moved the notes back; with three such servers racing one confirmation,
each answered `deleted`. The rule now (`notes.ownership`): the first ledger to mark the folder
owns its trash; a server whose ledger is not the owner shares the owner's SQLite ledger when it
is a file on this host, and otherwise refuses trash mutations, saying how to fix it. Recovery
only ever settles its own ledger's intents.

Every test here checks, with its own eyes (the folder, plain SQL on the ledger files): each
confirmed note is in exactly one trash, restorable, and never back in place; a foreign intent is
left untouched until its own ledger settles it.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from notewarden.config import load_config
from notewarden.faults import CONFIRM_POINTS as POINTS
from notewarden.trashcommand import trash_reports
from tests.pg import PgDatabase
from tests.race.fault_entry import PAUSE_AT_ENV, PAUSE_FILE_ENV
from tests.race.harness import StorageDeployment, deployment, run_race
from tests.race.senders import SenderPool, classify
from tests.race.test_crash import kill_during_round2, wait_for

pytestmark = pytest.mark.anyio

NOTES = {f"reports/r{i}.md": f"# Report number{i}x\n\nbody {i}\n" for i in range(4)}


def add_notes(d: StorageDeployment) -> None:
    for note_id, body in NOTES.items():
        d.add_note(note_id, body)


def title(note_id: str) -> str:
    return f"number{note_id[len('reports/r') : -len('.md')]}x"


def ledger_rows(d: StorageDeployment, instance: str, sql: str) -> list[tuple[Any, ...]]:
    """Plain SQL on an instance's own SQLite ledger file (not the product's code)."""
    with sqlite3.connect(d.state_dir(instance) / "notewarden.sqlite3") as conn:
        return conn.execute(sql).fetchall()


def events(d: StorageDeployment, event: str, instance: str) -> list[dict[str, Any]]:
    log = d.root / f"server-{instance}.log"
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == event]


def delete(d: StorageDeployment, server: Any, note_id: str) -> dict[str, Any]:
    client = d.client(server)
    try:
        first = d.round1(client, title(note_id))
        return d.round2(client, first, note_id)
    finally:
        client.close()


def call(d: StorageDeployment, server: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    client = d.client(server)
    try:
        return client.call(tool, {"workspaceUri": d.workspace_uri, **arguments}).result
    finally:
        client.close()


def trash_id_of(d: StorageDeployment, note_id: str) -> str:
    [(trash_id,)] = d.sql("SELECT trash_id FROM trash WHERE note_id = ?", (note_id,))
    return str(trash_id)


def restart(d: StorageDeployment, instance: str, **env: str) -> Any:
    for server in [s for s in d.servers if s.log.name == f"server-{instance}.log"]:
        server.stop()
    return d.start(instance, **env)


async def test_serve_workspace_next_to_a_configured_server_shares_its_ledger(tmp_path: Path) -> None:
    """The common case out of the box: a desktop client's `serve --workspace DIR` (state in the XDG
    dir, sandboxed) next to the HTTP server whose config marked the folder first."""
    with deployment(tmp_path, "files+sqlite", None) as d:
        add_notes(d)
        configured = d.start("a")
        assert classify(delete(d, configured, "reports/r0.md"), "reports/r0.md") == "deleted"

        def pick(note_id: str) -> Any:
            async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
                return types.ElicitResult(action="accept", content={"note_id": note_id, "confirm": True})

            return answer

        xdg = tmp_path / "xdg"
        command = [sys.executable, "-m", "notewarden", "serve", "--workspace", str(d.workspace_dir)]
        log = tmp_path / "server-stdio.log"
        script = " ".join(shlex.quote(part) for part in command) + f" 2>>{shlex.quote(str(log))}"
        params = StdioServerParameters(
            command="/bin/sh", args=["-c", script], env={**os.environ, "XDG_STATE_HOME": str(xdg)}
        )
        async with Client(params, mode="auto", elicitation_callback=pick("reports/r1.md")) as desktop:
            result = await desktop.call_tool(
                "notes_delete", {"workspaceUri": d.workspace_uri, "title": "number1x"}
            )
            assert result.structured_content is not None and result.structured_content["outcome"] == "deleted"
            listed = await desktop.call_tool("notes_trash_list", {"workspaceUri": d.workspace_uri})
            assert listed.structured_content is not None
            assert sorted(e["id"] for e in listed.structured_content["entries"]) == [
                "reports/r0.md",
                "reports/r1.md",
            ]
            edited = await desktop.call_tool(
                "notes_edit",
                {
                    "workspaceUri": d.workspace_uri,
                    "noteId": "reports/r2.md",
                    "edits": [{"op": "append", "text": "x"}],
                },
            )
            assert edited.structured_content is not None and not edited.is_error, edited

        [rule] = events(d, "trash_owner", "stdio")
        assert (rule["rule"], rule["owner_ledger"]) == ("shared", d.trash_owner()["ledger"])
        [sandbox] = events(d, "sandbox", "stdio")
        if sandbox["sandbox"] == "enforced":
            assert str(d.state_dir("a")) in sandbox["read_write"].split(":"), (
                "the owner's state dir is granted"
            )
        own = xdg / "notewarden" / "notewarden.sqlite3"
        with sqlite3.connect(own) as conn:
            assert conn.execute("SELECT count(*) FROM trash").fetchone() == (0,), "no second domain"
            assert conn.execute("SELECT count(*) FROM confirmations").fetchone() == (0,)
            assert conn.execute("SELECT count(*) FROM note_history").fetchone() == (0,)
        assert d.sql("SELECT count(*) FROM confirmations") == [(2,)]
        assert d.sql("SELECT note_id FROM note_history") == [("reports/r2.md",)], (
            "history in the owner's ledger"
        )
        assert {r[0] for r in d.sql("SELECT note_id FROM trash")} == {
            "reports/r0.md",
            "reports/r1.md",
        }
        restart(d, "a")
        for note_id in ("reports/r0.md", "reports/r1.md"):
            assert d.note_body(note_id) is None and d.trash_copies(note_id) == 1, "never back in place"


def test_three_state_dirs_race_one_confirmation_and_delete_once(tmp_path: Path) -> None:
    """The reported race: three servers, three state dirs, one folder, 8 senders per confirmation."""
    with deployment(tmp_path, "files+sqlite", None) as d:
        d.own_state_dirs |= {"b", "c"}
        pool = SenderPool(8)
        try:
            records = run_race(d, pool, trials=10, servers=3)
        finally:
            pool.close()
        assert [r for r in records if not r.ok] == []
        for instance in "bc":
            assert [e["rule"] for e in events(d, "trash_owner", instance)] == ["shared"]
            assert ledger_rows(d, instance, "SELECT count(*) FROM trash") == [(0,)]
        for instance in "abc":
            restart(d, instance)
        for r in records:
            note_id = f"race/trial-{r.trial:04d}.md"
            assert (
                d.note_body(note_id) is None and d.trash_copies(note_id) == 1 and d.trash_rows(note_id) == 1
            )


@pytest.mark.parametrize("point", POINTS)
def test_the_owner_killed_at_each_point_then_a_second_state_dir_starts(tmp_path: Path, point: str) -> None:
    """The second server's start-up recovery runs under the owner's ledger: before COMMIT the note
    comes back and the confirmation completes anywhere; after COMMIT it stays in the trash."""
    note_id = "reports/r2.md"
    with deployment(tmp_path, "files+sqlite", None) as d:
        d.own_state_dirs.add("b")
        add_notes(d)
        pause = d.state_dir("a") / "paused"
        owner = d.start("a", **{PAUSE_AT_ENV: point, PAUSE_FILE_ENV: str(pause)})
        first = d.round1(d.client(owner), title(note_id))
        kill_during_round2(d, owner, first, pause, note_id)

        second = d.start("b")
        committed = point == "after_commit"
        if committed:
            assert d.note_body(note_id) is None
        else:
            assert d.note_body(note_id) == NOTES[note_id], (
                "an uncommitted delete undone by the owner's ledger"
            )
        again = d.round2(d.client(second), first, note_id)
        assert classify(again, note_id) == ("replay" if committed else "deleted")
        if committed:
            assert again["structuredContent"]["error"]["previous"]["deleted"][0]["id"] == note_id

        owner = restart(d, "a")
        assert d.note_body(note_id) is None and d.trash_copies(note_id) == 1 and d.trash_rows(note_id) == 1
        assert ledger_rows(d, "b", "SELECT count(*) FROM trash") == [(0,)]
        restored = call(d, owner, "notes_restore", trashId=trash_id_of(d, note_id))
        assert restored["structuredContent"]["note"]["id"] == note_id
        assert d.note_body(note_id) == NOTES[note_id]


def test_a_server_that_cannot_share_refuses_and_never_touches_the_owners_trash(
    tmp_path: Path, pg: PgDatabase
) -> None:
    """The owner is a PostgreSQL ledger; the second server has a SQLite ledger of its own. Deletes
    before, during and after its start, and a SIGKILL of the owner mid-delete: the second server
    moves nothing, refuses every trash mutation, and says how to fix it."""
    with deployment(tmp_path, "files+postgres", pg.name) as d:
        d.own_state_dirs.add("b")
        d.own_ledgers["b"] = "sqlite"
        add_notes(d)
        before = d.start("a")
        assert classify(delete(d, before, "reports/r0.md"), "reports/r0.md") == "deleted"

        pause = d.state_dir("a") / "paused"
        during = d.start("a2", **{PAUSE_AT_ENV: "after_mutation", PAUSE_FILE_ENV: str(pause)})
        client = d.client(during)
        first = d.round1(client, title("reports/r1.md"))
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(d.round2, client, first, "reports/r1.md")
            wait_for(pause.exists)
            assert d.note_body("reports/r1.md") is None, "the owner's move is done, its COMMIT not yet"

            refused = d.start("b")  # starts while the owner is between its move and its COMMIT
            [rule] = events(d, "trash_owner", "b")
            assert rule["rule"] == "refused" and rule["owner_ledger"] == d.trash_owner()["ledger"]
            assert d.note_body("reports/r1.md") is None and d.trash_copies("reports/r1.md") == 1, "left alone"
            pause.unlink()
            assert classify(pending.result(timeout=30), "reports/r1.md") == "deleted"
        client.close()
        assert classify(delete(d, before, "reports/r2.md"), "reports/r2.md") == "deleted"

        attempt = d.client(refused).call(
            "notes_delete", {"workspaceUri": d.workspace_uri, "title": title("reports/r3.md")}
        )
        error = attempt.result["structuredContent"]["error"]
        assert error["code"] == "workspace_owned_elsewhere"
        assert f"the PostgreSQL ledger postgres@127.0.0.1:5432/{d.database}" in error["message"]
        assert f"notewarden takeover {d.workspace_dir} --state-dir {d.state_dir('b')}" in error["message"]
        assert "password" not in error["message"] and "pw-" not in error["message"]
        for tool, arguments in (
            ("notes_trash_list", {}),
            ("notes_restore", {"trashId": trash_id_of(d, "reports/r0.md")}),
            ("notes_trash_empty", {}),
        ):
            result = call(d, refused, tool, **arguments)
            assert result["structuredContent"]["error"]["code"] == "workspace_owned_elsewhere", tool
        assert call(d, refused, "notes_list")["structuredContent"]["notes"][0]["id"] == "reports/r3.md"

        victim = d.start("a3", **{PAUSE_AT_ENV: "after_mutation", PAUSE_FILE_ENV: str(pause)})
        killed = d.round1(d.client(victim), title("reports/r3.md"))
        kill_during_round2(d, victim, killed, pause, "reports/r3.md")
        intent = [line for line in d.trash_journal() if line.get("note_id") == "reports/r3.md"]
        restart(d, "b")  # its start-up does not settle another ledger's intent
        assert d.note_body("reports/r3.md") is None and d.trash_copies("reports/r3.md") == 1
        assert [line for line in d.trash_journal() if line.get("note_id") == "reports/r3.md"] == intent
        owner_again = d.start("a4")  # the owner's recovery does
        assert d.note_body("reports/r3.md") == NOTES["reports/r3.md"]
        assert (
            classify(d.round2(d.client(owner_again), killed, "reports/r3.md"), "reports/r3.md") == "deleted"
        )

        for note_id in NOTES:
            assert (
                d.note_body(note_id) is None and d.trash_copies(note_id) == 1 and d.trash_rows(note_id) == 1
            )
        assert ledger_rows(d, "b", "SELECT count(*) FROM trash") == [(0,)]
        assert ledger_rows(d, "b", "SELECT count(*) FROM confirmations") == [(0,)]


def takeover(d: StorageDeployment, instance: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "notewarden",
            "takeover",
            str(d.workspace_dir),
            "--config",
            str(d.config_path(instance)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_takeover_of_a_folder_whose_owner_is_gone_moves_nothing_back(tmp_path: Path) -> None:
    """The folder restored from a backup next to a fresh state dir: the new server refuses until
    `notewarden takeover`, which moves nothing; the old owner's unresolved intent stays in the trash."""
    with deployment(tmp_path, "files+sqlite", None) as d:
        d.own_state_dirs.add("b")
        add_notes(d)
        pause = d.state_dir("a") / "paused"
        old = d.start("a")
        dying = d.start("a2", **{PAUSE_AT_ENV: "after_mutation", PAUSE_FILE_ENV: str(pause)})
        assert classify(delete(d, old, "reports/r0.md"), "reports/r0.md") == "deleted"
        killed = d.round1(d.client(dying), title("reports/r1.md"))
        kill_during_round2(d, dying, killed, pause, "reports/r1.md")
        old.stop()

        d.write_configs(instances=("b",))
        early = takeover(d, "b")
        assert early.returncode == 1 and "still exists" in early.stdout, early
        old_ledger = d.trash_owner()["ledger"]
        os.rename(d.state_dir("a"), tmp_path / "state-a-gone")  # the old state dir is gone

        fresh = d.start("b")
        [rule] = events(d, "trash_owner", "b")
        assert rule["rule"] == "refused" and "no longer exists" in rule["msg"]
        refused = call(d, fresh, "notes_trash_list")["structuredContent"]["error"]
        assert refused["code"] == "workspace_owned_elsewhere" and "takeover" in refused["message"]
        assert d.note_body("reports/r1.md") is None, "the old ledger's unresolved intent is left alone"

        done = takeover(d, "b")
        assert done.returncode == 0, done
        assert "nothing was moved" in done.stdout and "reports/r1.md" in done.stdout
        owner = d.trash_owner()
        assert owner["previous"] == old_ledger and owner["ledger"] != old_ledger

        assert classify(delete(d, fresh, "reports/r2.md"), "reports/r2.md") == "deleted"  # no restart needed
        [report] = trash_reports(load_config(d.config_path("b")))
        assert not isinstance(report, str) and report.owned
        assert {(r.note_id, r.committed) for r in report.foreign} == {
            ("reports/r0.md", True),
            ("reports/r1.md", False),
        }
        assert d.note_body("reports/r0.md") is None and d.note_body("reports/r1.md") is None
        assert len(d.trash_entries()) == 3, "everything deleted is still in the trash folder"
