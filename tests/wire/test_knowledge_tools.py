"""Issue 14's tools and completions through the official SDK client on both transports, against
real server processes on the test vault (tests/vault_cases.py); every message is schema-checked
and every result checked against its tool's outputSchema (tests/wire/sdkclients.py)."""

from __future__ import annotations

import os
import time

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from notewarden.tools.resources import ANY_WORKSPACE_TEMPLATE
from tests.conftest import Deployment
from tests.unit.test_links import rewrite_all
from tests.vault_cases import EXPECTED, TAGS, write_vault
from tests.wire.sdkclients import TRANSPORTS, call, error_code, sdk_client

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("transport", TRANSPORTS), pytest.mark.resolves_files]

TEMPLATE = "# {{title}}\n\nCreated {{date:dddd, D MMMM YYYY}}.\n\n## Log\n"


@pytest.fixture
def vault(deployment: Deployment) -> Deployment:
    write_vault(deployment.notes)
    (deployment.notes / "Templates").mkdir()
    (deployment.notes / "Templates" / "Daily.md").write_text(TEMPLATE)
    line = f'uri = "{deployment.notes_uri}"\n'
    daily = (
        'daily = { folder = "Daily", format = "YYYY/MM/YYYY-MM-DD ddd", template = "Templates/Daily.md" }\n'
    )
    deployment.config.write_text(deployment.config.read_text().replace(line, line + daily, 1))
    yesterday = time.time() - 86400  # an existing vault: nothing in it changed in the last day
    for path in deployment.notes.rglob("*.md"):
        os.utime(path, (yesterday, yesterday))
    return deployment


async def test_tags_links_and_backlinks_as_obsidian_resolves_them(transport: str, vault: Deployment) -> None:
    ws = vault.notes_uri
    async with sdk_client(transport, vault) as client:
        tags = (await call(client, "notes_tags", {"workspaceUri": ws})).structured_content["tags"]
        counts: dict[str, int] = {}
        for note_tags in TAGS.values():
            for tag in note_tags:
                counts[tag] = counts.get(tag, 0) + 1
        assert {t["tag"].casefold(): t["notes"] for t in tags} == counts
        page = await call(client, "notes_tags", {"workspaceUri": ws, "limit": 2})
        rest = await call(
            client, "notes_tags", {"workspaceUri": ws, "cursor": page.structured_content["nextCursor"]}
        )
        assert page.structured_content["tags"] + rest.structured_content["tags"] == tags
        other = await call(client, "notes_tags", {"workspaceUri": ws, "prefix": "x", "cursor": "e30"})
        assert error_code(other) == "invalid_cursor"

        home = (
            await call(client, "notes_links", {"workspaceUri": ws, "noteId": "Home.md"})
        ).structured_content
        shown = {link["written"]: link for link in home["links"] + home["embeds"]}
        expected = {w: t for (source, w), t in EXPECTED.items() if source == "Home.md"}
        assert {w: link["target"] for w, link in shown.items()} == {w: t for w, (t, _) in expected.items()}
        assert {link["written"] for link in home["embeds"]} == {"![[diagram.png]]", "![[Plan#Goals]]"}
        assert shown["[[Plan#^no-such-block]]"]["anchorFound"] is False
        assert shown["[[Ana]]"]["resolvedBy"] == "alias"
        assert shown["[[Plan]]"]["targetUri"] == f"{ws}/Projects/Atlas/Plan.md"

        plan = "Projects/Atlas/Plan.md"
        found = await call(client, "notes_links", {"workspaceUri": ws, "noteId": plan, "limit": 3})
        back = found.structured_content
        inverse = {(s, w) for (s, w), (t, _) in EXPECTED.items() if t == plan}
        assert back["backlinksTotal"] == len(inverse) and back["backlinksTruncated"]
        everything = await call(client, "notes_links", {"workspaceUri": ws, "noteId": plan, "limit": 200})
        assert {(b["id"], b["written"]) for b in everything.structured_content["backlinks"]} == inverse
        missing = await call(client, "notes_links", {"workspaceUri": ws, "noteId": "Nowhere.md"})
        assert error_code(missing) == "note_missing"
        outside = await call(
            client, "notes_links", {"workspaceUri": vault.private_uri, "noteId": "secret-tps.md"}
        )
        assert error_code(outside) == "workspace_not_granted"


async def test_filters_recent_similar_titles_and_daily_notes(transport: str, vault: Deployment) -> None:
    ws = vault.notes_uri
    async with sdk_client(transport, vault) as client:
        tagged = await call(client, "notes_search", {"workspaceUri": ws, "tags": {"all": ["project"]}})
        assert [h["id"] for h in tagged.structured_content["results"]] == ["Projects/Atlas/Plan.md"]
        assert tagged.structured_content["mode"] == "filters"
        active = await call(
            client,
            "notes_search",
            {"workspaceUri": ws, "query": "atlas", "properties": {"status": {"equals": "active"}}},
        )
        assert [h["id"] for h in active.structured_content["results"]] == ["Projects/Atlas/Plan.md"]
        nothing = await call(client, "notes_search", {"workspaceUri": ws})
        assert error_code(nothing) == "invalid_arguments"

        start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
        made = await call(
            client,
            "notes_create",
            {"workspaceUri": ws, "path": "Ideas/atlas.md", "title": "Atlas Plan!", "body": ""},
        )
        assert [n["id"] for n in made.structured_content["similar"]] == ["Projects/Atlas/Plan.md"]
        assert "nearly identical title" in made.structured_content["notice"]
        alone = await call(
            client,
            "notes_create",
            {"workspaceUri": ws, "path": "Ideas/b.md", "title": "Zebra crossings", "body": ""},
        )
        assert "similar" not in alone.structured_content
        recent = await call(client, "notes_recent", {"workspaceUri": ws, "since": start})
        changes = recent.structured_content["changes"]
        assert {(c["kind"], c["id"]) for c in changes} == {
            ("created", "Ideas/atlas.md"),
            ("created", "Ideas/b.md"),
        }

        args = {"workspaceUri": ws, "date": "2026-01-05"}
        first = await call(client, "notes_daily", args)
        day = first.structured_content
        assert (day["created"], day["note"]["id"]) == (True, "Daily/2026/01/2026-01-05 Mon.md")
        assert day["body"] == "# 2026-01-05 Mon\n\nCreated Monday, 5 January 2026.\n\n## Log\n"
        again = (await call(client, "notes_daily", args)).structured_content
        assert (again["created"], again["note"]["version"]) == (False, day["note"]["version"])
        bad = await call(client, "notes_daily", {"workspaceUri": ws, "date": "05/01/2026"})
        assert error_code(bad) == "invalid_arguments"


async def test_completion_offers_own_workspaces_and_note_ids(transport: str, vault: Deployment) -> None:
    ws = vault.notes_uri
    async with sdk_client(transport, vault) as client:
        assert client.server_capabilities.completions is not None
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [ws + "/{+noteId}", ANY_WORKSPACE_TEMPLATE]
        ref = types.ResourceTemplateReference(uri=ws + "/{+noteId}")
        found = await client.complete(ref, {"name": "noteId", "value": "Proj"})
        assert found.completion.values == [
            "Projects/Atlas.md",
            "Projects/Atlas/Meeting.md",
            "Projects/Atlas/Plan.md",
        ]
        by_name = await client.complete(ref, {"name": "noteId", "value": "crè"})
        assert by_name.completion.values == ["Café/Crème brûlée.md"]
        anywhere = types.ResourceTemplateReference(uri=ANY_WORKSPACE_TEMPLATE)
        workspaces = await client.complete(anywhere, {"name": "workspaceUri", "value": "file://"})
        assert workspaces.completion.values == [ws]  # bob's workspace is not offered
        notes = await client.complete(anywhere, {"name": "noteId", "value": "Home"}, {"workspaceUri": ws})
        assert notes.completion.values == ["Home.md"]
        for forbidden in (vault.private_uri + "/{+noteId}", "file:///etc/{+noteId}"):
            with pytest.raises(MCPError) as refused:
                await client.complete(
                    types.ResourceTemplateReference(uri=forbidden), {"name": "noteId", "value": ""}
                )
            assert refused.value.error.code == -32602 and "secret" not in refused.value.error.message
        with pytest.raises(MCPError) as other:
            await client.complete(
                anywhere, {"name": "noteId", "value": ""}, {"workspaceUri": vault.private_uri}
            )
        assert other.value.error.code == -32602


async def test_a_move_rewrites_the_links_and_undo_restores_every_byte(
    transport: str, vault: Deployment
) -> None:
    ws = vault.notes_uri
    files = {p.relative_to(vault.notes).as_posix(): p.read_bytes() for p in vault.notes.rglob("*.md")}
    moved_from, moved_to = "Projects/Atlas/Plan.md", "Archive/2026/Atlas plan.md"
    expected = {**files, **{n: t.encode() for n, t in rewrite_all(moved_from, moved_to).items()}}
    del expected[moved_from]
    args = {"workspaceUri": ws, "noteId": moved_from, "newPath": moved_to}

    def on_disk() -> dict[str, bytes]:
        return {p.relative_to(vault.notes).as_posix(): p.read_bytes() for p in vault.notes.rglob("*.md")}

    async with sdk_client(transport, vault) as client:
        preview = (await call(client, "notes_move", {**args, "dryRun": True})).structured_content
        assert preview["dryRun"] is True and on_disk() == files, "a dry run writes nothing"
        rewritten = {r["id"]: r for r in preview["rewritten"]}
        assert set(rewritten) == {n for n in expected if expected[n] != files.get(n, files[moved_from])}
        home = rewritten["Home.md"]
        assert {"line": 11, "before": "[[Plan]]", "after": "[[Atlas plan]]"} in home["links"]
        assert home["linksRewritten"] == len(home["links"]) == 10

        done = (await call(client, "notes_move", args)).structured_content
        assert done["note"]["id"] == moved_to and on_disk() == expected
        assert [r["id"] for r in done["rewritten"]] == [r["id"] for r in preview["rewritten"]]
        for note in done["rewritten"]:  # undo: revert every rewritten note, then move back alone
            revert = {"workspaceUri": ws, "noteId": note["id"], "versionId": note["previousVersionId"]}
            assert not (await call(client, "notes_revert", revert)).is_error
        back = {"workspaceUri": ws, "noteId": moved_to, "newPath": moved_from, "updateLinks": False}
        assert (await call(client, "notes_move", back)).structured_content["rewritten"] == []
        assert on_disk() == files, "every byte as before"
