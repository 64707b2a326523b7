"""Prompts over both transports with the official SDK client: listed by the caller's rights, each
prompt's text, the meeting note embedded, arguments completed, and nothing beyond the caller's reach."""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import Deployment
from tests.wire.sdkclients import TRANSPORTS, sdk_client

pytestmark = pytest.mark.anyio

MEETING = "meetings/standup.md"


def text_of(result: types.GetPromptResult) -> str:
    return "\n".join(m.content.text for m in result.messages if isinstance(m.content, types.TextContent))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_prompts_are_offered_by_right_and_say_what_to_do(
    transport: str, deployment: Deployment
) -> None:
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment) as client:
        listed = await client.list_prompts()
        assert [p.name for p in listed.prompts] == [
            "review_changes",
            "summarize_folder",
            "tidy_tags",
            "meeting_to_tasks",
        ]
        review = await client.get_prompt("review_changes", {"workspaceUri": ws, "since": "2026-12-01"})
        assert f"Review what changed in {ws} since 2026-12-01" in text_of(review)
        assert "notes_recent" in text_of(review) and "Do not change any note." in text_of(review)
        folder = await client.get_prompt("summarize_folder", {"workspaceUri": f"{ws}/reports"})
        assert f"Summarize the notes in {ws}/reports" in text_of(folder)
        tidy = await client.get_prompt("tidy_tags", {"workspaceUri": ws})
        assert "dryRun true" in text_of(tidy) and "Ask me before changing anything" in text_of(tidy)

        tasks = await client.get_prompt("meeting_to_tasks", {"workspaceUri": ws, "noteId": MEETING})
        embedded, _ = tasks.messages
        assert isinstance(embedded.content, types.EmbeddedResource)
        resource = embedded.content.resource
        assert isinstance(resource, types.TextResourceContents)
        assert str(resource.uri) == f"{ws}/{MEETING}"
        assert resource.text == (deployment.notes / MEETING).read_text()
        assert f"The meeting note {MEETING} of {ws} is above" in text_of(tasks)

        note = await client.complete(
            types.PromptReference(type="ref/prompt", name="meeting_to_tasks"),
            {"name": "noteId", "value": "meet"},
            context_arguments={"workspaceUri": ws},
        )
        assert note.completion.values == [MEETING]
        workspaces = await client.complete(
            types.PromptReference(type="ref/prompt", name="summarize_folder"),
            {"name": "workspaceUri", "value": "file://"},
        )
        assert workspaces.completion.values == [ws]
        folders = await client.complete(
            types.PromptReference(type="ref/prompt", name="summarize_folder"),
            {"name": "workspaceUri", "value": f"{ws}/re"},
        )
        assert folders.completion.values == [f"{ws}/reports"]
        with pytest.raises(MCPError) as unknown:
            await client.complete(
                types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg1", "value": "test"},
            )
        assert unknown.value.error.code == -32602
        assert (
            "unknown prompt 'test_prompt_with_arguments'; prompts: review_changes,"
            in unknown.value.error.message
        )

        with pytest.raises(MCPError) as refused:
            await client.get_prompt("summarize_folder", {"workspaceUri": deployment.private_uri})
        assert (
            refused.value.error.code == -32602
            and "not granted to principal alice" in refused.value.error.message
        )
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("meeting_to_tasks", {"workspaceUri": ws})
        assert "needs noteId" in missing.value.error.message


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_reader_is_offered_only_the_prompts_that_read(transport: str, deployment: Deployment) -> None:
    deployment.write_config(alice_rights=["reader"])
    ws = deployment.notes_uri
    async with sdk_client(transport, deployment) as client:
        listed = await client.list_prompts()
        assert [p.name for p in listed.prompts] == ["review_changes", "summarize_folder"]
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("meeting_to_tasks", {"workspaceUri": ws, "noteId": MEETING})
        assert "write is not granted to alice" in refused.value.error.message
        assert "Nothing about TPS" not in refused.value.error.message, "the note is not sent"
