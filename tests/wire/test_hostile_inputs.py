"""Issue 12 §3, on real server processes: the last hostile inputs.

* a JSON-RPC body with a member name twice, anywhere, is refused (-32700), never last-key-wins,
  over HTTP and over stdio, and nothing it asked for runs;
* Unicode format characters in names and titles are shown escaped in forms and result texts,
  while ids (a choice's `const`, structured content) stay exact;
* a workspace folder renamed away and replaced (by another directory or a symlink) after start-up:
  changes are refused naming the workspace, logged; reads go on from the folder that was opened.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import Deployment
from tests.schema import check_server_message
from tests.wire.rawhttp import FORM, RawMcp, meta

pytestmark = pytest.mark.resolves_files

BIDI_NAME = "reports/invoice\u202egpj.md"  # shows as "invoicedm.jpg" when the override is honoured
BIDI_TITLE = "Pay\u200b roll \u2066Q3\u2069"


def create_call(deployment: Deployment, path_twice: str) -> str:
    """A tools/call notes_create whose arguments name `path` twice (raw text: no JSON library writes that)."""
    arguments = (
        f'{{"workspaceUri": {json.dumps(deployment.notes_uri)}, "path": "first.md", "path": "{path_twice}", '
        '"title": "Dup", "body": "x"}'
    )
    return (
        f'{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {{"name": "notes_create", '
        f'"arguments": {arguments}, "_meta": {json.dumps(meta())}}}}}'
    )


def duplicate_bodies(deployment: Deployment) -> dict[str, tuple[str, str]]:
    """name -> (raw JSON text, the member named twice)."""
    envelope = json.dumps(meta())
    return {
        "two methods": (
            f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "method": "tools/call", '
            f'"params": {{"_meta": {envelope}}}}}',
            "method",
        ),
        "two ids": (
            f'{{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "tools/list", "params": {{"_meta": {envelope}}}}}',
            "id",
        ),
        "two workspaceUris deep in arguments": (
            '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "notes_list", '
            f'"arguments": {{"workspaceUri": {json.dumps(deployment.notes_uri)}, '
            f'"workspaceUri": {json.dumps(deployment.private_uri)}}}, "_meta": {envelope}}}}}',
            "workspaceUri",
        ),
        "two paths in a create": (create_call(deployment, "second.md"), "path"),
    }


def assert_parse_error(message: dict[str, Any], member: str) -> None:
    assert "id" not in message, "which id was meant is exactly what cannot be known"
    assert message["error"]["code"] == -32700
    assert f'"{member}" appears twice' in message["error"]["message"]


def test_duplicate_member_names_are_refused_over_http(alice: RawMcp, deployment: Deployment) -> None:
    for name, (text, member) in duplicate_bodies(deployment).items():
        reply = alice.post(text.encode(), method="tools/call", name="notes_list")
        assert reply.status == 400, name
        assert_parse_error(reply.message, member)
    assert not (deployment.notes / "first.md").exists() and not (deployment.notes / "second.md").exists()
    assert alice.call("notes_list", {"workspaceUri": deployment.notes_uri}).status == 200


def test_duplicate_member_names_are_refused_over_stdio(deployment: Deployment) -> None:
    bodies = duplicate_bodies(deployment)
    after = {"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {"_meta": meta(FORM)}}
    lines = [text for text, _ in bodies.values()] + [json.dumps(after)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "notewarden", "serve", "--config", str(deployment.config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(line.replace("\n", " ") + "\n" for line in lines).encode())
    proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in lines]
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0
    for reply in replies:
        check_server_message("tools/list" if reply.get("id") == 99 else None, reply)
    refused, answered = replies[:-1], replies[-1]
    for reply, (_, member) in zip(refused, bodies.values(), strict=True):
        assert_parse_error(reply, member)
    assert answered["id"] == 99 and "tools" in answered["result"], "the stream goes on after a refusal"
    assert not (deployment.notes / "first.md").exists() and not (deployment.notes / "second.md").exists()


def test_format_characters_are_shown_escaped_and_ids_stay_exact(
    alice: RawMcp, deployment: Deployment
) -> None:
    (deployment.notes / BIDI_NAME).write_text(f"# {BIDI_TITLE}\n")
    listed = alice.call("notes_list", {"workspaceUri": deployment.notes_uri}).result
    text = listed["content"][0]["text"]
    assert "\u202e" not in text and "\u200b" not in text and "\\u202e" in text
    assert json.loads(text) == listed["structuredContent"], "the text still reads back exactly"
    assert {"id": BIDI_NAME, "title": BIDI_TITLE}.items() <= next(
        n for n in listed["structuredContent"]["notes"] if n["id"] == BIDI_NAME
    ).items()

    asked = alice.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "roll"}).result
    params = asked["inputRequests"]["delete_choice"]["params"]
    [choice] = params["requestedSchema"]["properties"]["note_id"]["oneOf"]
    assert choice["const"] == BIDI_NAME, "the answer names the exact id"
    assert "invoice\\u202egpj.md" in choice["title"] and "Pay\\u200b roll \\u2066Q3\\u2069" in choice["title"]
    assert not any(c in choice["title"] + params["message"] for c in "\u202e\u200b\u2066\u2069")

    done = alice.call(
        "notes_delete",
        {"workspaceUri": deployment.notes_uri, "title": "roll"},
        inputResponses={
            "delete_choice": {"action": "accept", "content": {"note_id": BIDI_NAME, "confirm": True}}
        },
        requestState=asked["requestState"],
    ).result
    assert done["structuredContent"]["deleted"][0]["id"] == BIDI_NAME
    sentence = done["content"][0]["text"]
    assert "invoice\\u202egpj.md" in sentence and "\u202e" not in sentence

    missing = alice.call("notes_read", {"workspaceUri": deployment.notes_uri, "noteId": BIDI_NAME}).result
    assert missing["isError"] and "\u202e" not in missing["content"][0]["text"]
    assert "\u202e" not in missing["structuredContent"]["error"]["message"]


def test_a_title_with_line_breaks_stays_one_line_in_every_form(alice: RawMcp, deployment: Deployment) -> None:
    spoof = "Q3\n\nOnly draft.md will be deleted. Click Confirm.\u2028Really."
    front = 'title: "Q3\\n\\nOnly draft.md will be deleted. Click Confirm.\\u2028Really."'
    (deployment.notes / "q3.md").write_text(f"---\n{front}\n---\nbody\n")
    ws = deployment.notes_uri
    asked = alice.call("notes_delete", {"workspaceUri": ws, "title": "Only draft"}).result
    params = asked["inputRequests"]["delete_choice"]["params"]
    [choice] = params["requestedSchema"]["properties"]["note_id"]["oneOf"]
    assert choice["title"].startswith(
        "Q3\\u000a\\u000aOnly draft.md will be deleted. Click Confirm.\\u2028Really."
    )
    assert "\n" not in choice["title"] and "\u2028" not in choice["title"]
    done = alice.call(
        "notes_delete",
        {"workspaceUri": ws, "title": "Only draft"},
        inputResponses={
            "delete_choice": {"action": "accept", "content": {"note_id": "q3.md", "confirm": True}}
        },
        requestState=asked["requestState"],
    ).result
    assert done["structuredContent"]["deleted"][0]["title"] == spoof, "structured content stays exact"
    assert done["content"][0]["text"].count("\n") == 0
    emptying = alice.call("notes_trash_empty", {"workspaceUri": ws}).result
    message = emptying["inputRequests"]["empty_trash"]["params"]["message"]
    listed = [line for line in message.splitlines() if line.startswith("• ")]
    assert len(listed) == 1 and "Click Confirm." in listed[0] and "\u2028" not in message


@pytest.mark.parametrize("replacement", ["directory", "symlink"])
def test_a_workspace_folder_replaced_after_start_refuses_changes(
    alice: RawMcp, deployment: Deployment, replacement: str
) -> None:
    assert alice.call("notes_list", {"workspaceUri": deployment.notes_uri}).status == 200
    moved = deployment.root / "notes-moved-away"
    deployment.notes.rename(moved)
    if replacement == "directory":
        deployment.notes.mkdir()
    else:
        elsewhere = deployment.root / "elsewhere"
        elsewhere.mkdir()
        deployment.notes.symlink_to(elsewhere)

    created = alice.call(
        "notes_create", {"workspaceUri": deployment.notes_uri, "path": "new.md", "title": "New", "body": "b"}
    ).result
    assert created["isError"] and created["structuredContent"]["error"]["code"] == "workspace_moved"
    message = created["structuredContent"]["error"]["message"]
    assert f"workspace {deployment.notes_uri}" in message and "nothing was changed" in message
    assert ("symbolic link" if replacement == "symlink" else "another directory") in message
    asked = alice.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "stand-up"}).result
    choice = asked["inputRequests"]["delete_choice"]["params"]["requestedSchema"]["properties"]["note_id"]
    answer = {"action": "accept", "content": {"note_id": choice["oneOf"][0]["const"], "confirm": True}}
    deleted = alice.call(
        "notes_delete",
        {"workspaceUri": deployment.notes_uri, "title": "stand-up"},
        inputResponses={"delete_choice": answer},
        requestState=asked["requestState"],
    ).result
    assert deleted["structuredContent"]["error"]["code"] == "workspace_moved"
    assert (moved / "meetings" / "standup.md").exists() and not (moved / "new.md").exists()
    assert not any(deployment.notes.iterdir())

    # Reads go on from the folder that was opened (now at its new name): documented in docs/security.md.
    listed = alice.call("notes_list", {"workspaceUri": deployment.notes_uri}).result
    assert "meetings/standup.md" in {n["id"] for n in listed["structuredContent"]["notes"]}
    log = (deployment.root / "server-a.log").read_text()
    assert '"event": "workspace_moved"' in log and deployment.notes_uri in log
