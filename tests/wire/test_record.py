"""The record over the wire: a real server process, every mutating tool called once through raw HTTP
(clientInfo in `_meta`), and the ledger read with plain SQL after each call: exactly one new record
per call that changed something (principal, the client's name and version, tool, note ids, versions,
confirmation id), none for a dry run, a decline, a refusal or a write of the same bytes. Then
`notewarden audit --json` shows the same records, and `notes_recent` says who made each change (and
nobody for an editor's)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_types import Implementation

from tests.conftest import ALICE_TOKEN, Deployment, HttpServer
from tests.wire.publishing import RecordingTarget, visit_connect_page
from tests.wire.rawhttp import FORM, RawMcp, meta

pytestmark = pytest.mark.resolves_files

CLIENT = {"name": "record-test", "version": "9.8.7"}
URL_MODE = {"elicitation": {"url": {}}}


@pytest.fixture
def http_server(publishing_server: HttpServer) -> HttpServer:
    return publishing_server


class Caller:
    """alice's client over raw HTTP, naming itself `CLIENT` in every request's `_meta`."""

    def __init__(self, server: HttpServer, deployment: Deployment) -> None:
        self.raw = RawMcp(server.url, ALICE_TOKEN)
        self.ws = deployment.notes_uri

    def __call__(
        self, tool: str, arguments: dict[str, Any], capabilities: dict[str, Any] | None = None, **rounds: Any
    ) -> dict[str, Any]:
        info = {"io.modelcontextprotocol/clientInfo": CLIENT}
        params = {"name": tool, "arguments": {"workspaceUri": self.ws, **arguments}, **rounds}
        params["_meta"] = meta(capabilities or FORM, **info)
        result: dict[str, Any] = self.raw.request("tools/call", params).result
        return result

    def ok(self, tool: str, arguments: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        result = self(tool, arguments, **kwargs)
        assert not result.get("isError") and result.get("resultType", "complete") == "complete", result
        return dict(result["structuredContent"])

    def confirmed(
        self, tool: str, arguments: dict[str, Any], key: str, content: dict[str, Any]
    ) -> dict[str, Any]:
        asked = self(tool, arguments)
        assert asked["resultType"] == "input_required", asked
        answer = {key: {"action": "accept", "content": content}}
        return self.ok(tool, arguments, inputResponses=answer, requestState=asked["requestState"])


@pytest.fixture
def alice(http_server: HttpServer, deployment: Deployment) -> Iterator[Caller]:
    caller = Caller(http_server, deployment)
    yield caller
    caller.raw.close()


def records(deployment: Deployment) -> list[dict[str, Any]]:
    """Every record in the ledger's database, oldest first: plain SQL on the SQLite file."""
    with sqlite3.connect(deployment.state / "notewarden.sqlite3") as db:
        rows = db.execute(
            "SELECT record_id, at, workspace, principal, client_name, client_version, tool, confirmation_id, "
            "summary, note_id, previous_id, effect, version_before, version_after "
            "FROM change_log ORDER BY at, record_id, seq"
        ).fetchall()
    grouped: dict[str, dict[str, Any]] = {}
    for (
        rid,
        at,
        ws,
        principal,
        name,
        version,
        tool,
        cid,
        summary,
        note,
        previous,
        effect,
        before,
        after,
    ) in rows:
        record = grouped.setdefault(
            rid,
            {
                "recordId": rid,
                "at": at,
                "workspace": ws,
                "principal": principal,
                "client": (name, version),
                "tool": tool,
                "confirmationId": cid,
                "summary": summary,
                "notes": [],
            },
        )
        record["notes"].append((effect, note, previous, before, after))
    return list(grouped.values())


class Ledger:
    """What the calls left: `new()` is the records since the last look."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.seen = 0

    def new(self) -> list[dict[str, Any]]:
        now = records(self.deployment)
        fresh, self.seen = now[self.seen :], len(now)
        return fresh

    def one(self, tool: str) -> dict[str, Any]:
        fresh = self.new()
        assert [r["tool"] for r in fresh] == [tool], fresh
        record = fresh[0]
        assert record["principal"] == "alice" and record["client"] == ("record-test", "9.8.7")
        return record


def test_every_mutating_tool_leaves_one_record_and_audit_and_recent_show_it(
    alice: Caller, deployment: Deployment, target: RecordingTarget
) -> None:
    ledger = Ledger(deployment)
    ledger.new()
    ws = str(alice.ws)

    created = alice.ok(
        "notes_create",
        {"path": "projects/plan.md", "title": "Plan", "body": "Buy what [the list](../todo.md) says."},
    )
    record = ledger.one("notes_create")
    assert record["workspace"] == ws and record["confirmationId"] is None
    assert record["notes"] == [("created", "projects/plan.md", None, None, created["note"]["version"])]

    todo = alice.ok("notes_read", {"noteId": "todo.md"})["note"]["version"]
    updated = alice.ok(
        "notes_update", {"noteId": "todo.md", "body": "- two staplers\n", "expectedVersion": todo}
    )
    record = ledger.one("notes_update")
    assert record["notes"] == [("rewritten", "todo.md", None, todo, updated["note"]["version"])]
    again = {"noteId": "todo.md", "body": "- two staplers\n", "expectedVersion": todo}
    assert alice.ok("notes_update", again)["note"]["version"] == updated["note"]["version"]
    stale = alice("notes_update", {"noteId": "todo.md", "body": "- lost\n", "expectedVersion": todo})
    assert stale["isError"] and stale["structuredContent"]["error"]["code"] == "version_conflict"
    assert ledger.new() == [], "the same bytes, a conflict: nothing changed, no record"

    edit = {"noteId": "todo.md", "edits": [{"op": "append", "text": "- tape"}]}
    assert alice.ok("notes_edit", {**edit, "dryRun": True})["dryRun"] is True
    assert ledger.new() == [], "a dry run writes nothing"
    edited = alice.ok("notes_edit", edit)
    record = ledger.one("notes_edit")
    assert record["notes"] == [
        ("rewritten", "todo.md", None, updated["note"]["version"], edited["after"]["version"])
    ]
    reverted = alice.ok("notes_revert", {"noteId": "todo.md", "versionId": updated["previousVersionId"]})
    record = ledger.one("notes_revert")
    assert record["notes"] == [("rewritten", "todo.md", None, edited["after"]["version"], todo)]
    assert reverted["after"]["version"] == todo

    move = {"noteId": "todo.md", "newPath": "lists/todo.md"}
    assert alice.ok("notes_move", {**move, "dryRun": True})["rewritten"][0]["id"] == "projects/plan.md"
    assert ledger.new() == []
    alice.ok("notes_move", move)
    record = ledger.one("notes_move")
    plan_after = (deployment.notes / "projects/plan.md").read_bytes()
    assert [n[:3] for n in record["notes"]] == [
        ("moved", "lists/todo.md", "todo.md"),
        ("relinked", "projects/plan.md", None),
    ]
    assert record["notes"][1][3:] == (created["note"]["version"], _version(plan_after))

    daily = alice.ok("notes_daily", {"date": "2026-12-04"})
    assert daily["created"] is True
    assert ledger.one("notes_daily")["notes"] == [
        ("created", "2026-12-04.md", None, None, daily["note"]["version"])
    ]
    alice.ok("notes_daily", {"date": "2026-12-04"})
    assert ledger.new() == [], "opening the day's note again changes nothing"

    standup = {"title": "stand-up"}
    asked = alice("notes_delete", standup)
    declined = alice.ok(
        "notes_delete",
        standup,
        inputResponses={"delete_choice": {"action": "decline"}},
        requestState=asked["requestState"],
    )
    assert declined["outcome"] == "declined" and ledger.new() == [], "a decline consumes, changes nothing"
    deleted = alice.confirmed(
        "notes_delete", standup, "delete_choice", {"note_id": "meetings/standup.md", "confirm": True}
    )
    record = ledger.one("notes_delete")
    assert record["notes"] == [("trashed", "meetings/standup.md", None, None, None)]
    assert record["confirmationId"] and _claimed(deployment, record["confirmationId"]) == "notes_delete"

    trash_id = deleted["deleted"][0]["trashId"]
    alice.ok("notes_restore", {"trashId": trash_id})
    assert ledger.one("notes_restore")["notes"][0][:3] == ("restored", "meetings/standup.md", None)

    alice.confirmed(
        "notes_delete", standup, "delete_choice", {"note_id": "meetings/standup.md", "confirm": True}
    )
    ledger.one("notes_delete")
    emptied = alice.confirmed("notes_trash_empty", {}, "empty_trash", {"confirm": True})
    assert emptied["purged"] == 1
    record = ledger.one("notes_trash_empty")
    assert record["notes"] == [("purged", "meetings/standup.md", None, None, None)]
    assert _claimed(deployment, record["confirmationId"]) == "notes_trash_empty"

    purged = alice.confirmed(
        "notes_history_purge", {"noteId": "lists/todo.md"}, "purge_history", {"confirm": True}
    )
    assert purged["purged"] == 3
    record = ledger.one("notes_history_purge")
    assert record["notes"] == [("versions_purged", "lists/todo.md", None, None, None)]
    assert _claimed(deployment, record["confirmationId"]) == "notes_history_purge"

    publish = {"noteId": "reports/tps-2026-q3.md", "target": "blog"}
    asked = alice("notes_publish", publish, capabilities=URL_MODE)
    url = asked["inputRequests"]["publish_connect"]["params"]["url"]
    assert (
        visit_connect_page(url, token=ALICE_TOKEN, credential="blog-credential-" + "z" * 16).completion
        == "completed"
    )
    assert ledger.new() == [], "connecting sends nothing"
    done = alice.ok(
        "notes_publish",
        publish,
        capabilities=URL_MODE,
        inputResponses={"publish_connect": {"action": "accept"}},
        requestState=asked["requestState"],
    )
    assert done["outcome"] == "published" and len(target.received) == 1
    record = ledger.one("notes_publish")
    sent_version = _version((deployment.notes / "reports/tps-2026-q3.md").read_bytes())
    assert record["notes"] == [("published", "reports/tps-2026-q3.md", None, None, sent_version)]
    assert _claimed(deployment, record["confirmationId"]) == "notes_publish"
    alice.ok("notes_publish", publish, capabilities=URL_MODE)  # a stored credential: one round
    assert ledger.one("notes_publish")["confirmationId"] is None and len(target.received) == 2

    everything = records(deployment)
    assert len(everything) == 13

    shown = audit(deployment, "--json")
    assert [json.loads(line)["recordId"] for line in shown] == [r["recordId"] for r in reversed(everything)]
    newest = json.loads(shown[0])
    assert newest["client"] == {"name": "record-test", "version": "9.8.7", "verified": False}
    assert newest["principal"] == "alice" and newest["tool"] == "notes_publish" and newest["workspace"] == ws
    move_shown = next(json.loads(line) for line in shown if json.loads(line)["tool"] == "notes_move")
    assert move_shown["notes"][0] == {"id": "lists/todo.md", "effect": "moved", "from": "todo.md"}
    assert move_shown["notes"][1]["effect"] == "relinked" and move_shown["notes"][1]["versionAfter"]
    assert audit(deployment, "--json", "--principal", "bob") == []
    assert audit(deployment, "--json", "--workspace", deployment.private_uri) == []
    assert len(audit(deployment, "--json", "--since", "1h", "--limit", "3")) == 3
    text = audit(deployment)
    assert text[0].startswith(newest["at"]) and "client record-test 9.8.7 (unverified)" in text[0]
    assert any(line.strip().startswith("moved") and "(from todo.md)" in line for line in text)
    refused = notewarden_audit(deployment, "--workspace", "file:///nowhere")
    assert refused.returncode == 2 and "not a workspace of this configuration" in refused.stderr
    refused = notewarden_audit(deployment, "--since", "last tuesday")
    assert refused.returncode == 2 and "7d, 24h, 30m" in refused.stderr

    (deployment.notes / "reports/tps-2019.md").write_text(
        "---\ntitle: TPS report 2019 (old)\n---\nEdited by hand.\n"
    )
    recent = {c["id"]: c for c in alice.ok("notes_recent", {"limit": 50})["changes"]}
    by = {note: (c["by"]["principal"], c["by"]["tool"]) if "by" in c else None for note, c in recent.items()}
    assert by["lists/todo.md"] == ("alice", "notes_move")
    assert by["projects/plan.md"] == ("alice", "notes_move"), "its links were rewritten by the move"
    assert by["2026-12-04.md"] == ("alice", "notes_daily")
    assert by["meetings/standup.md"] == ("alice", "notes_delete")
    assert by["reports/tps-2019.md"] is None, "an editor's change: nobody recorded it"
    assert recent["lists/todo.md"]["by"]["client"] == {
        "name": "record-test",
        "version": "9.8.7",
        "verified": False,
    }


def _version(data: bytes) -> str:
    from notewarden.notes.model import content_version

    return content_version(data)


def _claimed(deployment: Deployment, confirmation_id: str) -> str:
    """The tool whose claim consumed this confirmation (the ledger's own row)."""
    with sqlite3.connect(deployment.state / "notewarden.sqlite3") as db:
        ((tool,),) = db.execute(
            "SELECT tool FROM confirmations WHERE confirmation_id = ?", (confirmation_id,)
        ).fetchall()
    return str(tool)


def notewarden_audit(deployment: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "notewarden", "audit", "--config", str(deployment.config), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def audit(deployment: Deployment, *args: str) -> list[str]:
    done = notewarden_audit(deployment, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.anyio
async def test_a_legacy_session_records_the_client_it_named_in_initialize(deployment: Deployment) -> None:
    """A 2025-11-25 client names itself once, in `initialize`: its delete's record carries that name
    and version, and the stdio principal."""
    from tests.wire.test_legacy import TPS, legacy_stdio, pick

    named = Implementation(name="legacy-desk", version="2025.11")
    async with legacy_stdio(deployment, elicitation_callback=pick("2019"), client_info=named) as client:
        result = await client.call_tool("notes_delete", {"workspaceUri": deployment.notes_uri, "title": TPS})
    assert result.structured_content is not None and result.structured_content["outcome"] == "deleted"
    (record,) = records(deployment)
    assert (record["principal"], record["tool"]) == ("alice", "notes_delete") and record["confirmationId"]
    assert record["client"] == ("legacy-desk", "2025.11")
    assert record["notes"] == [("trashed", "reports/tps-2019.md", None, None, None)]
