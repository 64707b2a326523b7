"""Issue 26: every listing pages the same way (`tools.paging`): `notes_list` and the backlinks of
`notes_links` by a cursor, as notes_search and notes_tags do, and `notes_history` and
`notes_trash_list` with a `limit` too; pages hold no repeats and skip nothing,
a cursor of another listing is refused, a page stays in the caller's reach; and an anchored link's
verdict follows its target's text (the parsed anchors are kept per version of the file)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Deployment
from tests.wire.sdkclients import call, error_code, sdk_client
from tests.wire.test_note_tools import accept_all

pytestmark = [pytest.mark.anyio, pytest.mark.resolves_files]


async def pages(client: Any, tool: str, arguments: dict[str, Any], key: str) -> list[list[dict[str, Any]]]:
    found, cursor = [], None
    while True:
        result = await call(client, tool, {**arguments, **({"cursor": cursor} if cursor else {})})
        assert not result.is_error, result
        found.append(result.structured_content[key])
        cursor = result.structured_content.get("nextCursor")
        if cursor is None:
            return found


async def test_notes_list_and_backlinks_page_with_a_cursor(deployment: Deployment) -> None:
    for i in range(7):
        (deployment.notes / "refs" / f"r{i}.md").parent.mkdir(exist_ok=True)
        (deployment.notes / "refs" / f"r{i}.md").write_text(f"# Ref {i}\n\n[[todo]] and [[todo]] again\n")
    ws = deployment.notes_uri
    async with sdk_client("stdio", deployment) as client:
        whole = (await call(client, "notes_list", {"workspaceUri": ws})).structured_content
        assert "nextCursor" not in whole and len(whole["notes"]) == 12, (
            "fewer than the default limit: one page"
        )
        listed = await pages(client, "notes_list", {"workspaceUri": ws, "limit": 5}, "notes")
        assert [len(p) for p in listed] == [5, 5, 2]
        assert [n["id"] for p in listed for n in p] == [n["id"] for n in whole["notes"]], (
            "by id, no gap, no repeat"
        )

        folder = await pages(client, "notes_list", {"workspaceUri": f"{ws}/refs", "limit": 3}, "notes")
        assert [n["id"] for p in folder for n in p] == [f"refs/r{i}.md" for i in range(7)], (
            "in the folder only"
        )

        links = {"workspaceUri": ws, "noteId": "todo.md", "limit": 4}
        first = (await call(client, "notes_links", links)).structured_content
        assert first["backlinksTotal"] == 14 and first["backlinksTruncated"] and len(first["backlinks"]) == 4
        back = await pages(client, "notes_links", links, "backlinks")
        assert [len(p) for p in back] == [4, 4, 4, 2]
        shown = [(b["id"], b["line"], b["written"]) for p in back for b in p]
        assert sorted({b[0] for b in shown}) == [f"refs/r{i}.md" for i in range(7)] and len(shown) == 14

        elsewhere = await call(client, "notes_list", {"workspaceUri": ws, "cursor": first["nextCursor"]})
        assert error_code(elsewhere) == "invalid_cursor", "a backlinks cursor is not a listing's"
        other_note = await call(
            client, "notes_links", {**links, "noteId": "meetings/standup.md", "cursor": first["nextCursor"]}
        )
        assert error_code(other_note) == "invalid_cursor"


async def test_an_anchored_links_verdict_follows_its_target(deployment: Deployment) -> None:
    notes = deployment.notes
    (notes / "target.md").write_text("# Target\n\n## Plan\n\nThe plan. ^step\n")
    (notes / "source.md").write_text("[[target#Plan]] [[target#^step]] [[target#Nowhere]]\n")
    ws = deployment.notes_uri
    async with sdk_client("stdio", deployment) as client:

        async def verdicts() -> list[bool | None]:
            found = await call(client, "notes_links", {"workspaceUri": ws, "noteId": "source.md"})
            return [link.get("anchorFound") for link in found.structured_content["links"]]

        assert await verdicts() == [True, True, False]
        assert await verdicts() == [True, True, False], "the second call reads the kept anchors"
        (notes / "target.md").write_text("# Target\n\n## Nowhere\n\nNo plan.\n")
        assert await verdicts() == [False, False, True], "a changed target is read again"


async def test_history_and_trash_take_a_limit_and_page_on(deployment: Deployment) -> None:
    ws = deployment.notes_uri
    async with sdk_client("stdio", deployment, elicitation_callback=accept_all()) as client:
        for i in range(3):
            edit = {"op": "append", "text": f"- item {i}"}
            assert not (
                await call(client, "notes_edit", {"workspaceUri": ws, "noteId": "todo.md", "edits": [edit]})
            ).is_error
        history = await pages(
            client, "notes_history", {"workspaceUri": ws, "noteId": "todo.md", "limit": 2}, "versions"
        )
        assert [len(p) for p in history] == [2, 1]
        assert len({v["versionId"] for p in history for v in p}) == 3, "no repeat"

        notes = ["todo.md", "meetings/standup.md", "drafts/tps-report-draft.md"]
        deleted = await call(client, "notes_delete", {"workspaceUri": ws, "noteIds": notes})
        assert deleted.structured_content["outcome"] == "deleted"
        trash = await pages(client, "notes_trash_list", {"workspaceUri": ws, "limit": 2}, "entries")
        assert [len(p) for p in trash] == [2, 1]
        assert sorted(e["id"] for p in trash for e in p) == sorted(notes)
