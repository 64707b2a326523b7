"""Every note tool and the note resources, through the official SDK client on both transports,
against real server processes; every message the server sent is checked against the schema."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from notewarden.scope.note_paths import TRASH_JOURNAL_NAME, TRASH_OWNER_NAME
from notewarden.tools.resources import ANY_WORKSPACE_TEMPLATE
from tests.conftest import Deployment
from tests.wire.sdkclients import TRANSPORTS, call, error_code, sdk_client

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("transport", TRANSPORTS), pytest.mark.resolves_files]

ODD_BYTES = "---\ntitle: Odd bytes\n---\r\nÜnïcode — “quotes”\r\n\ttab\u00a0nbsp\nno final newline".encode()
ALL_TOOLS = {
    "notes_list",
    "notes_search",
    "notes_read",
    "notes_read_many",
    "notes_create",
    "notes_update",
    "notes_edit",
    "notes_history",
    "notes_revert",
    "notes_history_purge",
    "notes_move",
    "notes_delete",
    "notes_restore",
    "notes_trash_list",
    "notes_trash_empty",
    "notes_publish",
    "notes_tags",
    "notes_links",
    "notes_recent",
    "notes_health",
    "notes_similar",
    "notes_daily",
}


def accept_all(confirm: bool = True) -> Any:
    """Answer any of our forms: tick everything offered (or pick the first) and confirm."""

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        properties = params.requested_schema["properties"]
        content: dict[str, Any] = {"confirm": confirm}
        if "note_ids" in properties:
            content["note_ids"] = properties["note_ids"]["default"]
        if "note_id" in properties:
            content["note_id"] = properties["note_id"]["oneOf"][0]["const"]
        return types.ElicitResult(action="accept", content=content)

    return callback


async def test_tools_are_listed_with_schemas_and_honest_hints(transport: str, deployment: Deployment) -> None:
    async with sdk_client(transport, deployment) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == ALL_TOOLS
    for tool in tools.values():
        assert tool.input_schema["type"] == "object" and tool.output_schema is not None
        assert tool.annotations is not None
    open_world = {n for n, t in tools.items() if t.annotations and t.annotations.open_world_hint}
    assert open_world == {"notes_publish"}  # the only tool that reaches outside the server
    read_only = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    assert read_only == {
        "notes_list",
        "notes_search",
        "notes_read",
        "notes_read_many",
        "notes_history",
        "notes_trash_list",
        "notes_tags",
        "notes_links",
        "notes_recent",
        "notes_health",
        "notes_similar",
    }
    destructive = {n for n, t in tools.items() if t.annotations and t.annotations.destructive_hint}
    assert destructive == {
        "notes_delete",
        "notes_move",
        "notes_update",
        "notes_edit",
        "notes_revert",
        "notes_trash_empty",
        "notes_history_purge",
    }


async def test_search_read_update_with_optimistic_concurrency(transport: str, deployment: Deployment) -> None:
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment) as client:
        found = await call(client, "notes_search", {"workspaceUri": ws, "query": "tps cover"})
        hits = found.structured_content["results"]
        every = [h["id"] for h in hits if h["allWords"]]
        assert set(every) == {"reports/tps-2019.md", "drafts/tps-report-draft.md"}
        assert {h["id"] for h in hits[:2]} == set(every), hits  # every word (and the title) ranks first
        assert found.structured_content["mode"] == "any_words"  # two had both words: the rest have one
        assert all(h["uri"] == f"{ws}/{h['id']}" for h in hits)
        assert all("**" in h["snippet"] for h in hits if h["foundBy"] != "meaning")
        assert found.structured_content["ranking"]["by"] == "words_and_meaning"  # the dev set has the extra

        read = await call(client, "notes_read", {"workspaceUri": ws, "noteId": "reports/tps-2019.md"})
        note, body = read.structured_content["note"], read.structured_content["body"]
        assert body == (deployment.notes / "reports/tps-2019.md").read_text()
        args = {"workspaceUri": ws, "noteId": note["id"], "expectedVersion": note["version"]}
        updated = await call(client, "notes_update", {**args, "body": body + "Found it.\n"})
        new_version = updated.structured_content["note"]["version"]
        assert new_version != note["version"]

        stale = await call(client, "notes_update", {**args, "body": "overwrite"})
        assert error_code(stale) == "version_conflict"
        assert stale.structured_content["error"]["currentVersion"] == new_version
        assert (deployment.notes / "reports/tps-2019.md").read_text() == body + "Found it.\n"
        retried = await call(client, "notes_update", {**args, "body": body + "Found it.\n"})
        assert not retried.is_error  # the same write again is harmless

        found = await call(client, "notes_search", {"workspaceUri": ws, "query": "found"})
        by_words = [h["id"] for h in found.structured_content["results"] if h["foundBy"] != "meaning"]
        assert by_words == ["reports/tps-2019.md"]


async def test_search_pages_with_opaque_cursors(transport: str, deployment: Deployment) -> None:
    for i in range(23):
        (deployment.notes / "bulk" / f"n{i:02}.md").parent.mkdir(exist_ok=True)
        (deployment.notes / "bulk" / f"n{i:02}.md").write_text(f"# Quarterly {i}\n\n" + "widget " * (i + 1))
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment) as client:
        seen: list[str] = []
        cursor = None
        while True:
            args = {"workspaceUri": ws, "query": "widget", "limit": 10}
            if cursor:
                args["cursor"] = cursor
            page = (await call(client, "notes_search", args)).structured_content
            seen += [h["id"] for h in page["results"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert len(seen) == 23 and len(set(seen)) == 23
        everything = await call(client, "notes_search", {"workspaceUri": ws, "query": "widget", "limit": 50})
        assert [h["id"] for h in everything.structured_content["results"]] == seen
        other = await call(
            client, "notes_search", {"workspaceUri": ws, "query": "tps", "cursor": cursor or "x"}
        )
        assert error_code(other) == "invalid_cursor"
        assert error_code(await call(client, "notes_search", {"workspaceUri": ws, "query": "—"})) in (
            "invalid_arguments",
            "invalid_query",
        )


async def test_create_and_move_stay_inside_and_never_replace(transport: str, deployment: Deployment) -> None:
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment) as client:
        made = await call(
            client,
            "notes_create",
            {"workspaceUri": ws, "path": "ideas/new.md", "title": "C# tips", "body": "Use it."},
        )
        assert made.structured_content["note"]["title"] == "C# tips"
        assert (deployment.notes / "ideas/new.md").read_text().endswith("Use it.")
        again = await call(
            client, "notes_create", {"workspaceUri": ws, "path": "ideas/new.md", "title": "X", "body": ""}
        )
        assert error_code(again) == "note_exists"
        for bad in ("../escape.md", ".notewarden-trash/x.md", "ideas/new.txt", "/etc/x.md"):
            refused = await call(
                client, "notes_move", {"workspaceUri": ws, "noteId": "ideas/new.md", "newPath": bad}
            )
            assert error_code(refused) == "path_refused", bad
        taken = await call(
            client, "notes_move", {"workspaceUri": ws, "noteId": "ideas/new.md", "newPath": "todo.md"}
        )
        assert error_code(taken) == "note_exists"
        moved = await call(
            client,
            "notes_move",
            {"workspaceUri": ws, "noteId": "ideas/new.md", "newPath": "archive/2026/tips.md"},
        )
        assert moved.structured_content["note"]["id"] == "archive/2026/tips.md"
        assert not (deployment.notes / "ideas/new.md").exists()
        found = await call(client, "notes_search", {"workspaceUri": ws, "query": "tips"})
        by_words = [h["id"] for h in found.structured_content["results"] if h["foundBy"] != "meaning"]
        assert by_words == ["archive/2026/tips.md"]  # its new path is searched at once
        private = await call(
            client, "notes_read", {"workspaceUri": deployment.private_uri, "noteId": "secret-tps.md"}
        )
        assert error_code(private) == "workspace_not_granted"


async def test_delete_a_known_set_then_restore_exact_bytes(transport: str, deployment: Deployment) -> None:
    (deployment.notes / "odd.md").write_bytes(ODD_BYTES)
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment, elicitation_callback=accept_all()) as client:
        deleted = await call(client, "notes_delete", {"workspaceUri": ws, "noteIds": ["odd.md", "todo.md"]})
        assert deleted.structured_content["outcome"] == "deleted"
        trash_ids = {d["id"]: d["trashId"] for d in deleted.structured_content["deleted"]}
        assert set(trash_ids) == {"odd.md", "todo.md"}
        assert not (deployment.notes / "odd.md").exists()

        listed = await call(client, "notes_trash_list", {"workspaceUri": ws})
        assert {e["id"] for e in listed.structured_content["entries"]} == {"odd.md", "todo.md"}
        gone = await call(client, "notes_search", {"workspaceUri": ws, "query": "unicode"})
        assert gone.structured_content["results"] == []

        restored = await call(client, "notes_restore", {"workspaceUri": ws, "trashId": trash_ids["odd.md"]})
        assert restored.structured_content["note"]["id"] == "odd.md"
        assert (deployment.notes / "odd.md").read_bytes() == ODD_BYTES
        resource = await client.read_resource(f"{ws}/odd.md")
        assert isinstance(resource.contents[0], types.TextResourceContents)
        assert resource.contents[0].text.encode() == ODD_BYTES
        twice = await call(client, "notes_restore", {"workspaceUri": ws, "trashId": trash_ids["odd.md"]})
        assert error_code(twice) == "note_missing"

        missing = await call(client, "notes_delete", {"workspaceUri": ws, "noteIds": ["nope.md"]})
        assert error_code(missing) == "note_missing"
        both = await call(client, "notes_delete", {"workspaceUri": ws, "title": "x", "noteIds": ["todo.md"]})
        assert error_code(both) == "invalid_arguments"


async def test_empty_trash_is_confirmed_once_and_says_what(transport: str, deployment: Deployment) -> None:
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment, elicitation_callback=accept_all()) as client:
        nothing = await call(client, "notes_trash_empty", {"workspaceUri": ws})
        assert nothing.structured_content["outcome"] == "nothing_to_empty"
        await call(
            client, "notes_delete", {"workspaceUri": ws, "noteIds": ["todo.md", "meetings/standup.md"]}
        )
        assert (
            await call(client, "notes_trash_empty", {"workspaceUri": ws, "olderThanDays": 1})
        ).structured_content["outcome"] == "nothing_to_empty"

        first = await client.session.call_tool(
            "notes_trash_empty", {"workspaceUri": ws}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        form = first.input_requests["empty_trash"]
        message = form.params.message
        assert "2 notes" in message and "todo.md" in message and "Stand-up notes" in message
        answer = {"empty_trash": types.ElicitResult(action="accept", content={"confirm": True})}
        done = await client.session.call_tool(
            "notes_trash_empty",
            {"workspaceUri": ws},
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult)
        assert done.structured_content["outcome"] == "emptied" and done.structured_content["purged"] == 2
        replay = await client.session.call_tool(
            "notes_trash_empty",
            {"workspaceUri": ws},
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(replay, types.CallToolResult)
        assert error_code(replay) == "confirmation_already_used"
        assert replay.structured_content is not None
        assert replay.structured_content["error"]["previous"] == done.structured_content
        assert replay.structured_content["error"]["message"].startswith(
            f"already done: 2 notes were permanently deleted from the trash of {ws}: "
        )
        listed = await call(client, "notes_trash_list", {"workspaceUri": ws})
        assert listed.structured_content == {"workspaceUri": ws, "count": 0, "entries": []}
    trash = deployment.notes / ".notewarden-trash"
    assert sorted(p.name for p in trash.iterdir()) == [TRASH_JOURNAL_NAME, TRASH_OWNER_NAME], (
        "only its records"
    )


async def test_trash_changed_between_rounds_purges_nothing(transport: str, deployment: Deployment) -> None:
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment, elicitation_callback=accept_all()) as client:
        await call(client, "notes_delete", {"workspaceUri": ws, "noteIds": ["todo.md"]})
        first = await client.session.call_tool(
            "notes_trash_empty", {"workspaceUri": ws}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        listed = await call(client, "notes_trash_list", {"workspaceUri": ws})
        await call(
            client,
            "notes_restore",
            {"workspaceUri": ws, "trashId": listed.structured_content["entries"][0]["trashId"]},
        )
        result = await client.session.call_tool(
            "notes_trash_empty",
            {"workspaceUri": ws},
            input_responses={"empty_trash": types.ElicitResult(action="accept", content={"confirm": True})},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(result, types.CallToolResult) and error_code(result) == "trash_changed"
    assert (deployment.notes / "todo.md").exists()


async def test_notes_are_resources(transport: str, deployment: Deployment) -> None:
    for i in range(150):
        (deployment.notes / "many" / f"m{i:03}.md").parent.mkdir(exist_ok=True)
        (deployment.notes / "many" / f"m{i:03}.md").write_text(f"# Many {i}\n")
    (deployment.notes / "link.md").symlink_to(deployment.private / "secret-tps.md")
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment) as client:
        assert client.server_capabilities.resources is not None
        uris: list[str] = []
        cursor = None
        while True:
            page = await client.list_resources(cursor=cursor)
            assert page.cache_scope == "private" and page.ttl_ms >= 0
            uris += [r.uri for r in page.resources]
            cursor = page.next_cursor
            if cursor is None:
                break
        files = sorted(
            p.relative_to(deployment.notes).as_posix()
            for p in deployment.notes.rglob("*.md")
            if not p.is_symlink()
        )
        assert uris == [f"{ws}/{f}" for f in files]
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == [
            ws + "/{+noteId}",
            ANY_WORKSPACE_TEMPLATE,
        ]
        read = await client.read_resource(f"{ws}/reports/tps-2026-q3.md")
        assert read.cache_scope == "private"
        assert read.contents[0].text == (deployment.notes / "reports/tps-2026-q3.md").read_text()
        for bad in (
            f"{ws}/missing.md",
            f"{ws}/reports",
            ws,
            f"{deployment.private_uri}/secret-tps.md",
            f"{ws}/../private/secret-tps.md",
            f"{ws}/%2e%2e/private/secret-tps.md",
            f"{ws}/link.md",
            f"{ws}/reports%2Ftps-2019.md",
            f"{ws}/.notewarden-trash/x",
            f"{ws}-evil/secret.md",
            "file://evil.example" + ws[len("file://") :] + "/todo.md",
            "http://x/notes/todo.md",
            "file:///etc/passwd",
        ):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(bad)
            assert caught.value.code == -32602, bad
            assert "bob" not in caught.value.message  # neither bob's grants nor his note's content


async def test_first_indexing_reports_progress(transport: str, deployment: Deployment) -> None:
    for i in range(1200):
        (deployment.notes / "big" / f"b{i:04}.md").parent.mkdir(exist_ok=True)
        (deployment.notes / "big" / f"b{i:04}.md").write_text(f"# Big {i}\n\nneedle{i % 3}\n")
    seen: list[tuple[float, float | None]] = []
    told: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total))
        told.append(message)

    async with sdk_client(transport, deployment) as client:
        found = await call(
            client,
            "notes_search",
            {"workspaceUri": deployment.notes_uri, "query": "needle1"},
            progress_callback=progress,
        )
    assert found.structured_content["results"]
    assert seen and seen[-1][0] == seen[-1][1] and seen[-1][1] >= 1200
    assert [d for d, _ in seen] == sorted({d for d, _ in seen})  # strictly increasing
    assert any(m and m.startswith("embedded ") for m in told), told  # the first build of the vectors too
