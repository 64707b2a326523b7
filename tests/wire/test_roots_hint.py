"""Roots as a migration hint: notes_delete without workspaceUri, 2026-07-28 MRTR only."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import Deployment
from tests.wire.rawhttp import RawMcp

ROOTS_AND_FORM = {"elicitation": {"form": {}}, "roots": {}}


def call(client: RawMcp, state: str | None = None, **responses: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if state is not None:
        extra = {"requestState": state, "inputResponses": responses}
    return client.call("notes_delete", {"title": "TPS report"}, capabilities=ROOTS_AND_FORM, **extra).result


def roots(*uris: str) -> dict[str, Any]:
    return {"roots": [{"uri": u} for u in uris]}


def test_one_granted_match_proceeds_to_the_delete_form(alice: RawMcp, deployment: Deployment) -> None:
    first = call(alice)
    assert first["inputRequests"] == {"workspace_roots": {"method": "roots/list"}}
    form = call(alice, first["requestState"], workspace_roots=roots(deployment.notes_uri + "/reports"))
    params = form["inputRequests"]["delete_choice"]["params"]
    assert params["mode"] == "form" and deployment.notes_uri in params["message"]
    done = call(
        alice,
        form["requestState"],
        delete_choice={"action": "accept", "content": {"note_id": "reports/tps-2019.md", "confirm": True}},
    )
    assert done["structuredContent"]["outcome"] == "deleted"
    assert done["structuredContent"]["workspaceUri"] == deployment.notes_uri
    assert not (deployment.notes / "reports/tps-2019.md").exists()


def test_several_matches_are_offered_in_a_form(alice: RawMcp, deployment: Deployment) -> None:
    deployment.write_config(alice_workspaces=[deployment.notes_uri, deployment.private_uri])
    first = call(alice)
    choice = call(alice, first["requestState"], workspace_roots=roots(f"file://{deployment.root}"))
    field = choice["inputRequests"]["workspace_choice"]["params"]["requestedSchema"]["properties"][
        "workspaceUri"
    ]
    assert sorted(o["const"] for o in field["oneOf"]) == sorted(
        [deployment.notes_uri, deployment.private_uri]
    )
    form = call(
        alice,
        choice["requestState"],
        workspace_choice={"action": "accept", "content": {"workspaceUri": deployment.private_uri}},
    )
    options = form["inputRequests"]["delete_choice"]["params"]["requestedSchema"]["properties"]["note_id"][
        "oneOf"
    ]
    assert [o["const"] for o in options] == ["secret-tps.md"]


def test_no_granted_match_is_refused_with_the_granted_list(alice: RawMcp, deployment: Deployment) -> None:
    first = call(alice)
    refused = call(alice, first["requestState"], workspace_roots=roots(deployment.private_uri, "file:///etc"))
    assert refused["isError"]
    error = refused["structuredContent"]["error"]
    assert error["code"] == "no_granted_root" and deployment.notes_uri in error["message"]
    assert deployment.private_uri not in error["message"], (
        "bob's workspace is never revealed nor widened into"
    )
    assert (deployment.private / "secret-tps.md").exists()


def test_without_roots_capability_workspace_uri_is_required(alice: RawMcp, deployment: Deployment) -> None:
    reply = alice.call("notes_delete", {"title": "TPS"}, capabilities={"elicitation": {"form": {}}}).result
    assert reply["isError"] and reply["structuredContent"]["error"]["code"] == "invalid_arguments"
    assert deployment.notes_uri in reply["structuredContent"]["error"]["message"]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_official_sdk_client_answers_roots_through_mrtr(
    deployment: Deployment, anyio_backend: str
) -> None:
    asked: list[str] = []

    async def list_roots(context: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri=deployment.notes_uri)])  # type: ignore[arg-type]

    async def confirm(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        return types.ElicitResult(
            action="accept", content={"note_id": "reports/tps-2019.md", "confirm": True}
        )

    command = [sys.executable, "-m", "notewarden", "serve", "--config", str(deployment.config)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with Client(
        params, mode="2026-07-28", list_roots_callback=list_roots, elicitation_callback=confirm
    ) as c:
        result = await c.call_tool("notes_delete", {"title": "TPS report 2019"})
    assert result.structured_content["outcome"] == "deleted", result
    assert asked == ["roots"]
    assert not Path(deployment.notes / "reports/tps-2019.md").exists()
