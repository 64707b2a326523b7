"""notes_delete and the protocol surface over a real Streamable HTTP server process, raw wire."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import ALICE_TOKEN, Deployment, HttpServer, start_http_server
from tests.wire.rawhttp import PROTOCOL, RawMcp, meta

TRASH = ".notewarden-trash"


def accept(note_id: str, confirm: bool = True) -> dict[str, object]:
    return {"delete_choice": {"action": "accept", "content": {"note_id": note_id, "confirm": confirm}}}


def trashed(deployment: Deployment) -> list[str]:
    trash = deployment.notes / TRASH
    return sorted(p.name for p in trash.iterdir() if not p.name.startswith("~")) if trash.exists() else []


def round1(client: RawMcp, deployment: Deployment, title: str = "TPS report") -> dict[str, object]:
    reply = client.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": title})
    assert reply.status == 200
    assert reply.result["resultType"] == "input_required"
    return reply.result


# --- discovery and listing -------------------------------------------------------------


def test_discover_advertises_tools_versions_and_cache_hints(alice: RawMcp) -> None:
    reply = alice.request("server/discover")
    result = reply.result
    assert reply.status == 200
    assert result["resultType"] == "complete"
    assert PROTOCOL in result["supportedVersions"]
    assert "tools" in result["capabilities"]
    assert "roots" not in result["capabilities"]
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["cacheScope"] in ("public", "private")
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "notewarden"
    # the confirmed tools are named from the registry's destructive ones (`app.server_instructions`)
    assert (
        "notes_history_purge, notes_delete and notes_trash_empty ask the user to confirm"
        in result["instructions"]
    )


def test_tools_list_is_deterministic_and_honest(alice: RawMcp) -> None:
    first, second = alice.request("tools/list"), alice.request("tools/list")
    assert json.dumps(first.result, sort_keys=True) == json.dumps(second.result, sort_keys=True)
    tools = {t["name"]: t for t in first.result["tools"]}
    assert list(tools) == sorted(tools)
    delete = tools["notes_delete"]
    assert delete["inputSchema"]["required"] == []  # see the note under notes_delete.INPUT_SCHEMA
    assert {"workspaceUri", "title", "noteIds"} <= set(delete["inputSchema"]["properties"])
    assert delete["annotations"]["destructiveHint"] is True
    assert delete["annotations"]["readOnlyHint"] is False
    assert tools["notes_list"]["annotations"]["readOnlyHint"] is True
    assert first.result["cacheScope"] == "private" and first.result["ttlMs"] > 0  # by the caller's rights
    assert first.result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "notewarden"


@pytest.mark.resolves_files
def test_notes_list(alice: RawMcp, deployment: Deployment) -> None:
    result = alice.call("notes_list", {"workspaceUri": deployment.notes_uri}).result
    ids = [n["id"] for n in result["structuredContent"]["notes"]]
    assert ids == sorted(ids) and "reports/tps-2019.md" in ids
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


# --- authentication, origin, notifications ------------------------------------------------


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_unauthenticated_requests_get_401_with_www_authenticate(alice: RawMcp, token: str | None) -> None:
    reply = alice.request("tools/list", token=token)
    assert reply.status == 401
    assert reply.headers["www-authenticate"].startswith("Bearer")


def test_foreign_origin_is_refused(alice: RawMcp) -> None:
    assert alice.request("tools/list", headers={"Origin": "https://evil.example"}).status == 403
    assert alice.request("tools/list", headers={"Origin": "http://localhost:3000"}).status == 200


def test_notification_gets_202_and_no_body(alice: RawMcp) -> None:
    reply = alice.post(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        method="notifications/cancelled",
    )
    assert reply.status == 202
    assert reply.text == "" and reply.messages == []


# --- capabilities and versions, per request -----------------------------------------------


@pytest.mark.parametrize("capabilities", [{}, {"elicitation": {"url": {}}}, {"roots": {}}])
def test_missing_form_capability_is_32021(alice: RawMcp, deployment: Deployment, capabilities: dict) -> None:
    reply = alice.call(
        "notes_delete", {"workspaceUri": deployment.notes_uri, "title": "TPS"}, capabilities=capabilities
    )
    assert reply.status == 400
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}


@pytest.mark.parametrize(
    "capabilities",
    [{"elicitation": {}}, {"elicitation": {"form": {}}}, {"elicitation": {"form": {}, "url": {}}}],
)
def test_form_capability_spellings_get_the_form(
    alice: RawMcp, deployment: Deployment, capabilities: dict
) -> None:
    reply = alice.call(
        "notes_delete", {"workspaceUri": deployment.notes_uri, "title": "TPS"}, capabilities=capabilities
    )
    assert reply.result["inputRequests"]["delete_choice"]["params"]["mode"] == "form"


def test_capability_is_never_remembered_across_requests(alice: RawMcp, deployment: Deployment) -> None:
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS"}
    assert alice.call("notes_delete", args).status == 200
    assert alice.call("notes_delete", args, capabilities={}).error["code"] == -32021


@pytest.mark.parametrize("version", [None, 20260728, ["2026-07-28"]])
def test_missing_or_non_string_protocol_version_is_32602(alice: RawMcp, version: object) -> None:
    m = meta()
    if version is None:
        del m["io.modelcontextprotocol/protocolVersion"]
    else:
        m["io.modelcontextprotocol/protocolVersion"] = version
    reply = alice.request("tools/list", {"_meta": m})
    assert reply.status == 400
    assert reply.error["code"] == -32602


def test_unsupported_version_is_32022_with_exact_data(alice: RawMcp) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/list",
        "params": {"_meta": meta(version="1900-01-01")},
    }
    reply = alice.post(body, method="tools/list", version="1900-01-01")
    assert reply.status == 400
    assert reply.error["code"] == -32022
    assert set(reply.error["data"]) == {"supported", "requested"}
    assert reply.error["data"]["requested"] == "1900-01-01"
    assert PROTOCOL in reply.error["data"]["supported"]


# --- the confirmed delete ----------------------------------------------------------------


@pytest.mark.resolves_files
def test_round1_asks_with_a_form_and_a_sealed_state(alice: RawMcp, deployment: Deployment) -> None:
    result = round1(alice, deployment)
    request = result["inputRequests"]["delete_choice"]
    assert request["method"] == "elicitation/create"
    params = request["params"]
    assert params["mode"] == "form"
    assert deployment.notes_uri in params["message"] and "3 notes match" in params["message"]
    schema = params["requestedSchema"]
    assert schema["required"] == ["note_id", "confirm"]
    options = schema["properties"]["note_id"]["oneOf"]
    assert sorted(o["const"] for o in options) == [
        "drafts/tps-report-draft.md",
        "reports/tps-2019.md",
        "reports/tps-2026-q3.md",
    ]
    assert all(o["const"] in o["title"] and "modified" in o["title"] for o in options)
    assert schema["properties"]["confirm"]["type"] == "boolean"
    state = result["requestState"]
    # sealed, not merely signed: no candidate path shows through ('/' never occurs in base64url)
    assert isinstance(state, str) and "reports/" not in state and "/" not in state.removeprefix("v1.")


def test_single_candidate_still_needs_confirmation(alice: RawMcp, deployment: Deployment) -> None:
    result = round1(alice, deployment, title="stand-up")
    assert (
        len(
            result["inputRequests"]["delete_choice"]["params"]["requestedSchema"]["properties"]["note_id"][
                "oneOf"
            ]
        )
        == 1
    )


@pytest.mark.resolves_files
def test_accept_moves_the_chosen_note_to_trash_once(alice: RawMcp, deployment: Deployment) -> None:
    state = round1(alice, deployment)["requestState"]
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    done = alice.call("notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state)
    assert done.result["resultType"] == "complete"
    assert done.result.get("isError") is not True
    structured = done.result["structuredContent"]
    assert structured["outcome"] == "deleted"
    assert [d["id"] for d in structured["deleted"]] == ["reports/tps-2019.md"]
    assert not (deployment.notes / "reports/tps-2019.md").exists()
    assert trashed(deployment) == [structured["deleted"][0]["trashId"]]
    assert (
        (deployment.notes / TRASH / structured["deleted"][0]["trashId"]).read_text().startswith("---\ntitle")
    )

    replay = alice.call(  # the reply was lost: the client sends the same confirmation again
        "notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state
    )
    assert replay.result["isError"] is True
    error = replay.result["structuredContent"]["error"]
    assert error["code"] == "confirmation_already_used"
    assert error["message"].startswith(
        f"already done: “{structured['deleted'][0]['title']}” (reports/tps-2019.md) was moved to the trash of "
    )
    assert error["previous"] == structured, "what the first attempt answered"
    other = alice.call(
        "notes_delete", args, inputResponses=accept("reports/tps-2026-q3.md"), requestState=state
    )
    assert other.result["isError"] is True
    assert (deployment.notes / "reports/tps-2026-q3.md").exists()
    assert len(trashed(deployment)) == 1


def test_changed_arguments_cannot_reuse_the_state(alice: RawMcp, deployment: Deployment) -> None:
    state = round1(alice, deployment)["requestState"]
    for args in (
        {"workspaceUri": deployment.notes_uri, "title": "TPS"},
        {"workspaceUri": deployment.notes_uri + "/reports", "title": "TPS report"},
    ):
        reply = alice.call(
            "notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state
        )
        assert reply.error["code"] == -32602
        assert "requestState" in reply.error["message"]
    assert trashed(deployment) == []


def test_tampered_state_is_a_json_rpc_error(alice: RawMcp, deployment: Deployment) -> None:
    state = round1(alice, deployment)["requestState"]
    flipped = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    for bad in (flipped, state + "=", "", "v1.", "x" * 5000):
        reply = alice.call(
            "notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=bad
        )
        assert reply.error["code"] == -32602, bad[:20]
    assert trashed(deployment) == []


def test_another_principal_cannot_use_the_state(alice: RawMcp, bob: RawMcp, deployment: Deployment) -> None:
    state = round1(alice, deployment)["requestState"]
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    reply = bob.call("notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state)
    assert "error" in reply.message or reply.result["isError"] is True
    assert trashed(deployment) == []


@pytest.mark.parametrize("action", ["decline", "accept-unconfirmed"])
def test_decline_and_unconfirmed_are_terminal(alice: RawMcp, deployment: Deployment, action: str) -> None:
    state = round1(alice, deployment)["requestState"]
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    answer = (
        {"delete_choice": {"action": "decline"}}
        if action == "decline"
        else accept("reports/tps-2019.md", False)
    )
    result = alice.call("notes_delete", args, inputResponses=answer, requestState=state).result
    assert result["resultType"] == "complete" and result.get("isError") is not True
    assert result["structuredContent"]["deleted"] == []
    later = alice.call("notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state)
    assert later.result["structuredContent"]["error"]["code"] == "confirmation_already_used"
    assert trashed(deployment) == []


def test_cancel_keeps_the_confirmation_usable(alice: RawMcp, deployment: Deployment) -> None:
    state = round1(alice, deployment)["requestState"]
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    for _ in range(2):
        cancelled = alice.call(
            "notes_delete", args, inputResponses={"delete_choice": {"action": "cancel"}}, requestState=state
        ).result
        assert cancelled["structuredContent"]["outcome"] == "cancelled"
        assert "retriableUntil" in cancelled["structuredContent"]
    done = alice.call("notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state)
    assert done.result["structuredContent"]["outcome"] == "deleted"


@pytest.mark.parametrize(
    "answer",
    [
        {"action": "accept"},
        {"action": "accept", "content": {}},
        {"action": "accept", "content": {"note_id": "reports/tps-2019.md"}},
        {"action": "accept", "content": {"confirm": True}},
        {"action": "accept", "content": {"note_id": "todo.md", "confirm": True}},
        {"action": "accept", "content": {"note_id": "../../etc/passwd", "confirm": True}},
        {"action": "accept", "content": {"note_id": "reports/tps-2019.md", "confirm": "yes"}},
    ],
)
def test_invalid_answers_delete_nothing_and_do_not_consume(
    alice: RawMcp, deployment: Deployment, answer: dict
) -> None:
    state = round1(alice, deployment)["requestState"]
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    bad = alice.call(
        "notes_delete", args, inputResponses={"delete_choice": answer}, requestState=state
    ).result
    assert bad["isError"] is True
    assert bad["structuredContent"]["error"]["code"] == "invalid_answer"
    assert trashed(deployment) == [] and (deployment.notes / "todo.md").exists()
    good = alice.call("notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state)
    assert good.result["structuredContent"]["outcome"] == "deleted"


def test_missing_answer_asks_again(alice: RawMcp, deployment: Deployment) -> None:
    state = round1(alice, deployment)["requestState"]
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    again = alice.call(
        "notes_delete", args, inputResponses={"unrelated": {"action": "accept"}}, requestState=state
    )
    assert again.result["resultType"] == "input_required"
    assert "delete_choice" in again.result["inputRequests"]


@pytest.mark.resolves_files
@pytest.mark.parametrize(
    "uri_suffix",
    ["-evil/secret.md", "/%2e%2e/private", "/../private", "/%2fetc", "?x=1", "#f", "/%252e%252e"],
)
def test_hostile_workspace_uris_are_refused(alice: RawMcp, deployment: Deployment, uri_suffix: str) -> None:
    result = alice.call(
        "notes_delete", {"workspaceUri": deployment.notes_uri + uri_suffix, "title": "TPS"}
    ).result
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] in ("invalid_workspace_uri", "workspace_not_granted")
    assert result["content"][0]["text"]


@pytest.mark.parametrize(
    "uri",
    ["file://evil.example/srv/notes", "file:////srv/notes", "file:///c:/notes", "http://x/notes", "notes"],
)
def test_foreign_uri_forms_are_refused(alice: RawMcp, uri: str) -> None:
    result = alice.call("notes_delete", {"workspaceUri": uri, "title": "TPS"}).result
    assert result["structuredContent"]["error"]["code"] == "invalid_workspace_uri"


def test_authorization_error_names_only_the_callers_grants(alice: RawMcp, deployment: Deployment) -> None:
    result = alice.call("notes_delete", {"workspaceUri": deployment.private_uri, "title": "TPS"}).result
    text = result["content"][0]["text"]
    assert result["structuredContent"]["error"]["code"] == "workspace_not_granted"
    assert "alice" in text and deployment.notes_uri in text
    assert "bob" not in text and "secret" not in text


@pytest.mark.resolves_files
def test_folder_inside_the_workspace_scopes_the_candidates(alice: RawMcp, deployment: Deployment) -> None:
    result = alice.call(
        "notes_delete", {"workspaceUri": deployment.notes_uri + "/reports", "title": "TPS"}
    ).result
    options = result["inputRequests"]["delete_choice"]["params"]["requestedSchema"]["properties"]["note_id"][
        "oneOf"
    ]
    assert sorted(o["const"] for o in options) == ["reports/tps-2019.md", "reports/tps-2026-q3.md"]


@pytest.mark.parametrize(("title", "code"), [("nothing matches this", "no_match")])
def test_no_candidate_is_a_tool_error(alice: RawMcp, deployment: Deployment, title: str, code: str) -> None:
    result = alice.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": title}).result
    assert result["isError"] is True and result["structuredContent"]["error"]["code"] == code


def test_too_many_candidates_asks_for_a_narrower_title(alice: RawMcp, deployment: Deployment) -> None:
    for i in range(30):
        (deployment.notes / f"bulk-{i}.md").write_text(f"# Bulk note {i}\n")
    result = alice.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "bulk"}).result
    assert result["structuredContent"]["error"]["code"] == "too_many_matches"
    assert "30 notes" in result["content"][0]["text"]


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"workspaceUri": "file:///x"},
        {"title": "x"},
        {"workspaceUri": 3, "title": "x"},
        {"workspaceUri": "file:///x", "title": ""},
        {"workspaceUri": "file:///x", "title": "x", "extra": 1},
    ],
)
def test_invalid_arguments_are_a_clear_tool_error(alice: RawMcp, arguments: dict) -> None:
    result = alice.call("notes_delete", arguments).result
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "invalid_arguments"


def test_unknown_tool_is_32602(alice: RawMcp) -> None:
    assert alice.call("notes_nuke", {}).error["code"] == -32602


# --- between the rounds: edits, revocation, expiry ------------------------------------


@pytest.mark.resolves_files
def test_note_edited_between_rounds_is_not_deleted(alice: RawMcp, deployment: Deployment) -> None:
    state = round1(alice, deployment)["requestState"]
    target = deployment.notes / "reports/tps-2019.md"
    target.write_text(target.read_text() + "late edit\n")
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    result = alice.call(
        "notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state
    ).result
    assert result["structuredContent"]["error"]["code"] == "note_changed"
    assert "again" in result["content"][0]["text"]
    assert target.read_text().endswith("late edit\n") and trashed(deployment) == []


@pytest.mark.resolves_files
def test_note_replaced_between_rounds_is_not_deleted(alice: RawMcp, deployment: Deployment) -> None:
    state = round1(alice, deployment)["requestState"]
    target = deployment.notes / "reports/tps-2019.md"
    replacement = deployment.notes / "reports/new.tmp"
    replacement.write_text(target.read_text())
    replacement.replace(target)
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    result = alice.call(
        "notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state
    ).result
    assert result["structuredContent"]["error"]["code"] == "note_changed"
    assert target.exists() and trashed(deployment) == []


def test_revocation_between_rounds_wins(alice: RawMcp, deployment: Deployment) -> None:
    state = round1(alice, deployment)["requestState"]
    deployment.write_config(alice_workspaces=[])
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    result = alice.call(
        "notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state
    ).result
    assert result["structuredContent"]["error"]["code"] == "workspace_not_granted"
    assert trashed(deployment) == []


def test_expired_state_is_refused(deployment: Deployment) -> None:
    deployment.write_config(ttl=1)
    server = start_http_server(deployment.config, deployment.root / "short-ttl.log")
    client = RawMcp(server.url, ALICE_TOKEN)
    try:
        state = round1(client, deployment)["requestState"]
        time.sleep(1.5)
        args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
        reply = client.call(
            "notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state
        )
        assert reply.error["code"] == -32602
        assert trashed(deployment) == []
    finally:
        client.close()
        server.stop()


# --- two processes, one config ----------------------------------------------------------


@pytest.mark.resolves_files
def test_two_processes_share_ledger_and_key(deployment: Deployment, http_server: HttpServer) -> None:
    other = start_http_server(deployment.config, deployment.root / "server-b.log")
    a, b = RawMcp(http_server.url, ALICE_TOKEN), RawMcp(other.url, ALICE_TOKEN)
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS report"}
    try:
        state = round1(a, deployment)["requestState"]
        done = b.call("notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state)
        assert done.result["structuredContent"]["outcome"] == "deleted"
        replay = a.call(
            "notes_delete", args, inputResponses=accept("reports/tps-2019.md"), requestState=state
        )
        assert replay.result["structuredContent"]["error"]["code"] == "confirmation_already_used"

        (deployment.notes / "race.md").write_text("# Race me\n")
        state = a.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "race"}).result[
            "requestState"
        ]
        race_args = {"workspaceUri": deployment.notes_uri, "title": "race"}
        with ThreadPoolExecutor(8) as pool:
            replies = list(
                pool.map(
                    lambda c: c.call(
                        "notes_delete", race_args, inputResponses=accept("race.md"), requestState=state
                    ),
                    [a, b] * 4,
                )
            )
        outcomes = [
            r.result["structuredContent"].get("outcome") or r.result["structuredContent"]["error"]["code"]
            for r in replies
        ]
        assert outcomes.count("deleted") == 1, outcomes
        assert outcomes.count("confirmation_already_used") == 7, outcomes
        assert not (deployment.notes / "race.md").exists()
        assert len(trashed(deployment)) == 2
    finally:
        a.close()
        b.close()
        other.stop()


def test_server_logs_are_json_and_never_contain_tokens(
    deployment: Deployment, http_server: HttpServer
) -> None:
    client = RawMcp(http_server.url, ALICE_TOKEN)
    round1(client, deployment)
    client.request("tools/list", token="wrong-token-value")
    client.close()
    http_server.stop()
    log = Path(http_server.log).read_text()
    assert ALICE_TOKEN not in log and "wrong-token-value" not in log
    for line in filter(None, log.splitlines()):
        json.loads(line)
