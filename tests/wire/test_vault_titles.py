"""Issue 12 §5 over both transports: the note the user means, in an Obsidian-like vault.

Titles come from Markdown as CommonMark reads it (never a heading inside a code fence, an HTML
comment or front matter: notes/markdown.py), and `notes_delete` finds a note by its title, its
file name or one of its aliases, and the form says which matched (notes/model.matched_name).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from tests.conftest import Deployment
from tests.wire.sdkclients import TRANSPORTS, call, sdk_client

pytestmark = [pytest.mark.anyio, pytest.mark.resolves_files]

VAULT = {
    "Templates.md": "---\ntags: [template]\n---\n```markdown\n# {{title}}\n\nCreated {{date}}\n```\n",
    "Headless Sync.md": "Set it up on the server:\n\n```shell\n# Login\nob login\n```\n",
    "Aliases.md": "---\naliases: [Other names]\n---\nFor example:\n\n```yaml\naliases: [Dog]\n```\n\n~~~\n# Dog\n~~~\n",
    "Meetings/2024-01-05 standup.md": "<!--\n# Agenda template\n-->\nShort one today.\n",
    "Projects/Atlas.md": "---\ntitle: Atlas project\naliases: Big map\n---\n# Overview\n",
    "Recipes/Grandma's pancakes.md": "# Sunday breakfast\n\n    # not a heading: indented code\n",
    "Setext.md": "Reading list\n============\n\n- a book\n",
}
TITLES = {
    "vault/Aliases.md": "Aliases",
    "vault/Headless Sync.md": "Headless Sync",
    "vault/Meetings/2024-01-05 standup.md": "2024-01-05 standup",
    "vault/Projects/Atlas.md": "Atlas project",
    "vault/Recipes/Grandma's pancakes.md": "Sunday breakfast",
    "vault/Setext.md": "Reading list",
    "vault/Templates.md": "Templates",
}


@pytest.fixture
def vault(deployment: Deployment) -> str:
    for name, text in VAULT.items():
        path = deployment.notes / "vault" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return deployment.notes_uri + "/vault"


def offered(shown: list[list[str]]) -> Any:
    """An elicitation callback that records each choice's title, then declines."""

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        shown.append([o["title"] for o in params.requested_schema["properties"]["note_id"]["oneOf"]])
        return types.ElicitResult(action="decline")

    return callback


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_titles_and_candidates_in_an_obsidian_like_vault(
    transport: str, deployment: Deployment, vault: str
) -> None:
    shown: list[list[str]] = []
    async with sdk_client(transport, deployment, elicitation_callback=offered(shown)) as client:
        listed = await call(client, "notes_list", {"workspaceUri": vault})
        assert listed.structured_content is not None
        assert {n["id"]: n["title"] for n in listed.structured_content["notes"]} == TITLES

        for query in ("{{title}}", "login", "dog", "agenda template", "not a heading"):
            missed = await call(client, "notes_delete", {"workspaceUri": vault, "title": query})
            assert missed.is_error and missed.structured_content is not None, query
            assert missed.structured_content["error"]["code"] == "no_match", query

        expected = {
            "Headless Sync": ["Headless Sync — vault/Headless Sync.md"],
            "grandma": ["Sunday breakfast — vault/Recipes/Grandma's pancakes.md", "— matched file name"],
            "big map": ["Atlas project — vault/Projects/Atlas.md", "— matched alias “Big map”"],
            "other names": ["Aliases — vault/Aliases.md", "— matched alias “Other names”"],
            "standup": ["2024-01-05 standup — vault/Meetings/2024-01-05 standup.md"],
        }
        for query, parts in expected.items():
            done = await call(client, "notes_delete", {"workspaceUri": vault, "title": query})
            assert done.structured_content is not None and done.structured_content["outcome"] == "declined"
            [choice] = shown.pop()
            assert all(part in choice for part in parts), (query, choice)
            assert ("matched" in choice) == (len(parts) > 1), (query, choice)
