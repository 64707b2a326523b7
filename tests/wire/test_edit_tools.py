"""notes_edit, partial reads, notes_read_many and history, through the official SDK client on both
transports against real server processes (every message schema-checked, every result checked against
its outputSchema); and a second process, an editor, writing between the assistant's read and its edit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from tests.conftest import Deployment
from tests.wire.sdkclients import TRANSPORTS, call, error_code, sdk_client
from tests.wire.test_note_tools import accept_all

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("transport", TRANSPORTS), pytest.mark.resolves_files]

PLAN = """---
title: Plan
status: draft
---
# Plan

## Projects

### Atlas

- ship v2

### Borealis

- research

## Log
"""


async def structured(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await call(client, name, arguments)
    assert not result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


async def test_read_parts_edit_with_receipt_and_revert_through_history(
    transport: str, deployment: Deployment
) -> None:
    ws = deployment.notes_uri
    path = deployment.notes / "plan.md"
    path.write_text(PLAN)
    async with sdk_client(transport, deployment) as client:
        outline = await structured(
            client, "notes_read", {"workspaceUri": ws, "noteId": "plan.md", "outline": True}
        )
        assert "body" not in outline and outline["frontMatter"] == {
            "lines": [1, 4],
            "keys": ["title", "status"],
        }
        assert [(h["path"], h["lines"]) for h in outline["outline"]] == [
            ("Plan", [5, 17]),
            ("Plan > Projects", [7, 16]),
            ("Plan > Projects > Atlas", [9, 12]),
            ("Plan > Projects > Borealis", [13, 16]),
            ("Plan > Log", [17, 17]),
        ]
        atlas = await structured(
            client, "notes_read", {"workspaceUri": ws, "noteId": "plan.md", "section": "Atlas"}
        )
        assert atlas["body"] == "### Atlas\n\n- ship v2\n\n" and atlas["lines"] == [9, 12]
        assert atlas["section"]["sectionVersion"] == outline["outline"][2]["sectionVersion"]
        cut = await structured(
            client, "notes_read", {"workspaceUri": ws, "noteId": "plan.md", "maxChars": 30}
        )
        assert cut["truncated"] is True and cut["body"] == "---\ntitle: Plan\nstatus: draft\n"
        assert cut["lines"] == [1, 3] and cut["nextLine"] == 4 and cut["totalLines"] == 17
        rest = await structured(
            client, "notes_read", {"workspaceUri": ws, "noteId": "plan.md", "lines": [4, 99]}
        )
        assert cut["body"] + rest["body"] == PLAN and rest["truncated"] is False

        edits = [
            {"op": "insert", "heading": "Log", "position": "end", "text": "- 2026-12-08 shipped"},
            {"op": "replace", "oldText": "ship v2", "newText": "shipped v2"},
            {"op": "set_frontmatter", "key": "status", "value": "active"},
        ]
        args = {"workspaceUri": ws, "noteId": "plan.md", "edits": edits}
        preview = await structured(client, "notes_edit", {**args, "dryRun": True})
        assert preview["dryRun"] is True and path.read_text() == PLAN
        done = await structured(client, "notes_edit", args)
        expected = PLAN.replace("draft", "active").replace("ship v2", "shipped v2") + "- 2026-12-08 shipped\n"
        assert path.read_text() == expected
        assert (
            done["dryRun"] is False and done["after"] == preview["after"] and done["diff"] == preview["diff"]
        )
        assert done["before"] == {"version": outline["note"]["version"], "size": len(PLAN)}
        assert [(c["oldStart"], c["newStart"]) for c in done["changes"]] == [(3, 3), (11, 11), (18, 18)]
        assert (
            "-status: draft\n+status: active\n" in done["diff"] and "+- 2026-12-08 shipped\n" in done["diff"]
        )

        history = await structured(client, "notes_history", {"workspaceUri": ws, "noteId": "plan.md"})
        (saved,) = history["versions"]
        assert saved["versionId"] == done["previousVersionId"] and saved["principal"] == "alice"
        assert saved["tool"] == "notes_edit" and "replace" in saved["summary"]
        assert history["current"] == done["after"]
        old = await structured(
            client, "notes_read", {"workspaceUri": ws, "noteId": "plan.md", "versionId": saved["versionId"]}
        )
        assert old["body"] == PLAN and old["saved"]["versionId"] == saved["versionId"]

        reverted = await structured(
            client, "notes_revert", {"workspaceUri": ws, "noteId": "plan.md", "versionId": saved["versionId"]}
        )
        assert path.read_text() == PLAN and reverted["after"] == done["before"]
        again = await structured(client, "notes_history", {"workspaceUri": ws, "noteId": "plan.md"})
        assert [v["tool"] for v in again["versions"]] == ["notes_revert", "notes_edit"], (
            "the revert is undoable"
        )

        many = await structured(
            client, "notes_read_many", {"workspaceUri": ws, "noteIds": ["plan.md", "gone.md", "todo.md"]}
        )
        by_id = {n["noteId"]: n for n in many["notes"]}
        assert by_id["plan.md"]["body"] == PLAN and by_id["todo.md"]["body"] == "- buy a stapler\n"
        assert by_id["gone.md"]["error"]["code"] == "note_missing"


async def test_edit_errors_say_how_to_recover_and_write_nothing(
    transport: str, deployment: Deployment
) -> None:
    ws = deployment.notes_uri
    path = deployment.notes / "plan.md"
    path.write_text(PLAN)
    args = {"workspaceUri": ws, "noteId": "plan.md"}
    async with sdk_client(transport, deployment) as client:
        twice = await call(
            client, "notes_edit", {**args, "edits": [{"op": "replace", "oldText": "- ", "newText": "* "}]}
        )
        assert error_code(twice) == "match_count"
        assert twice.structured_content["error"]["lines"] == [11, 15]
        missing = await call(
            client,
            "notes_edit",
            {**args, "edits": [{"op": "replace_section", "heading": "Nope", "text": "x"}]},
        )
        assert error_code(missing) == "heading_not_found" and "L9 ### Atlas" in missing.content[0].text
        stale = await call(
            client,
            "notes_edit",
            {**args, "expectedVersion": "0" * 32, "edits": [{"op": "append", "text": "x"}]},
        )
        assert (
            error_code(stale) == "version_conflict"
            and len(stale.structured_content["error"]["currentVersion"]) == 32
        )
        wrong = await call(client, "notes_edit", {**args, "edits": [{"op": "append", "oldText": "x"}]})
        assert error_code(wrong) == "invalid_arguments" and "append takes text" in wrong.content[0].text
        assert path.read_text() == PLAN


def editor(path: Path, old: str, new: str) -> None:
    """A second process, as an editor saving the file, replaces `old` with `new` in place."""
    script = f"p = {str(path)!r}; t = open(p).read(); open(p, 'w').write(t.replace({old!r}, {new!r}))"
    subprocess.run([sys.executable, "-c", script], check=True)


async def test_an_editor_between_read_and_edit_is_merged_or_conflicts(
    transport: str, deployment: Deployment
) -> None:
    ws = deployment.notes_uri
    path = deployment.notes / "plan.md"
    path.write_text(PLAN)
    args = {"workspaceUri": ws, "noteId": "plan.md"}
    async with sdk_client(transport, deployment) as client:
        read = await structured(client, "notes_read", {**args, "section": "Borealis"})
        editor(path, "- ship v2", "- ship v2 (the person's edit)")  # elsewhere in the note
        merged = await structured(
            client,
            "notes_edit",
            {
                **args,
                "edits": [
                    {
                        "op": "insert",
                        "heading": "Borealis",
                        "position": "end",
                        "text": "- next: prototype",
                        "sectionVersion": read["section"]["sectionVersion"],
                    },
                    {"op": "replace", "oldText": "- research", "newText": "- research done"},
                ],
            },
        )
        assert path.read_text() == PLAN.replace("- ship v2", "- ship v2 (the person's edit)").replace(
            "- research\n", "- research done\n- next: prototype\n"
        ), "the person's edit is kept, the assistant's is merged"
        assert merged["before"]["version"] != read["note"]["version"]

        read = await structured(client, "notes_read", {**args, "section": "Atlas"})
        editor(path, "- ship v2 (the person's edit)", "- ship v3, says the person")  # the anchor itself
        on_disk = path.read_bytes()
        anchor = await call(
            client,
            "notes_edit",
            {
                **args,
                "edits": [{"op": "replace", "oldText": "- ship v2 (the person's edit)", "newText": "x"}],
            },
        )
        assert error_code(anchor) == "anchor_missing"
        error = anchor.structured_content["error"]
        assert error["region"] == {"lines": [11, 11], "text": "- ship v3, says the person\n"}
        assert error["currentVersion"] != read["note"]["version"]
        section = await call(
            client,
            "notes_edit",
            {
                **args,
                "edits": [
                    {
                        "op": "replace_section",
                        "heading": "Atlas",
                        "text": "- the assistant's plan",
                        "sectionVersion": read["section"]["sectionVersion"],
                    }
                ],
            },
        )
        assert error_code(section) == "section_changed"
        assert "ship v3, says the person" in section.structured_content["error"]["region"]["text"]
        assert path.read_bytes() == on_disk, "a conflict writes nothing"


async def test_purging_history_is_confirmed_exactly_once(transport: str, deployment: Deployment) -> None:
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment, elicitation_callback=accept_all()) as client:
        nothing = await structured(client, "notes_history_purge", {"workspaceUri": ws})
        assert nothing["outcome"] == "nothing_to_purge"
        for text in ("- one\n", "- two\n"):
            await structured(
                client,
                "notes_edit",
                {"workspaceUri": ws, "noteId": "todo.md", "edits": [{"op": "append", "text": text}]},
            )
        first = await client.session.call_tool(
            "notes_history_purge", {"workspaceUri": ws, "noteId": "todo.md"}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult) and first.request_state
        message = first.input_requests["purge_history"].params.message
        assert "2 saved versions of note todo.md" in message and "cannot be undone" in message
        answer = {"purge_history": types.ElicitResult(action="accept", content={"confirm": True})}
        rounds: dict[str, Any] = {"input_responses": answer, "request_state": first.request_state}
        done = await client.session.call_tool(
            "notes_history_purge",
            {"workspaceUri": ws, "noteId": "todo.md"},
            allow_input_required=True,
            **rounds,
        )
        assert isinstance(done, types.CallToolResult) and done.structured_content is not None
        assert done.structured_content["outcome"] == "purged" and done.structured_content["purged"] == 2
        replay = await client.session.call_tool(
            "notes_history_purge",
            {"workspaceUri": ws, "noteId": "todo.md"},
            allow_input_required=True,
            **rounds,
        )
        assert isinstance(replay, types.CallToolResult) and error_code(replay) == "confirmation_already_used"
        history = await structured(client, "notes_history", {"workspaceUri": ws, "noteId": "todo.md"})
        assert history["count"] == 0
        assert (deployment.notes / "todo.md").read_text() == "- buy a stapler\n- one\n- two\n"
