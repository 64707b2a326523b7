"""notes_publish over real HTTP: URL-mode elicitation completed by a person in headless Chromium.

A real server process, a loopback publish target that records what it receives, the
official SDK client (and a raw peer for exact wire shapes), and Debian's Chromium.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import ALICE_TOKEN, BOB_TOKEN, Deployment, HttpServer, start_http_server
from tests.wire.publishing import RecordingTarget, add_publish_config, visit_connect_page
from tests.wire.rawhttp import RawMcp

URL_MODE = {"elicitation": {"url": {}}}
CREDENTIAL = "blog-credential-" + "z" * 16
NOTE = "reports/tps-2019.md"


@pytest.fixture
def http_server(publishing_server: HttpServer) -> HttpServer:
    return publishing_server


def publish_args(deployment: Deployment) -> dict[str, str]:
    return {"workspaceUri": deployment.notes_uri, "noteId": NOTE, "target": "blog"}


def round1(client: RawMcp, deployment: Deployment) -> dict[str, Any]:
    reply = client.call("notes_publish", publish_args(deployment), capabilities=URL_MODE)
    result = reply.result
    assert result["resultType"] == "input_required", result
    request = result["inputRequests"]["publish_connect"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "url"
    assert set(request["params"]) == {"mode", "message", "url"}
    return result


def retry(
    client: RawMcp, deployment: Deployment, state: str, answer: dict[str, Any] | None
) -> dict[str, Any]:
    responses = {"publish_connect": answer} if answer is not None else {}
    return client.call(
        "notes_publish",
        publish_args(deployment),
        capabilities=URL_MODE,
        inputResponses=responses,
        requestState=state,
    ).result


def link_of(result: dict[str, Any]) -> str:
    return str(result["inputRequests"]["publish_connect"]["params"]["url"])


@pytest.mark.anyio
async def test_sdk_client_and_chromium_publish_a_note(
    deployment: Deployment, http_server: HttpServer, target: RecordingTarget
) -> None:
    """The whole flow as a person meets it: the client shows a link, the browser completes it."""
    opened: list[str] = []

    async def open_in_browser(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams)
        assert params.url.startswith(f"http://127.0.0.1:{http_server.port}/connect/")
        assert CREDENTIAL not in params.url and ALICE_TOKEN not in params.url
        opened.append(params.url)
        visit = await anyio.to_thread.run_sync(
            lambda: visit_connect_page(params.url, token=ALICE_TOKEN, credential=CREDENTIAL)
        )
        assert visit.texts[0].count("Team blog") == 0, "the link alone must show nothing"
        assert visit.sign_in == "form" and "Team blog" in visit.texts[1] and target.url in visit.texts[1]
        assert "alice" in visit.texts[1]
        assert visit.completion == "completed"
        return types.ElicitResult(action="accept")

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE_TOKEN}"}, timeout=60)
    transport = streamable_http_client(http_server.url, http_client=http)
    async with Client(transport, mode="2026-07-28", elicitation_callback=open_in_browser) as client:
        result = await client.call_tool("notes_publish", publish_args(deployment))
        assert not result.is_error, result
        assert result.structured_content == {
            "outcome": "published",
            "target": "blog",
            "noteId": NOTE,
            "status": 201,
        }
        assert len(opened) == 1
        [delivery] = target.received
        assert delivery.headers["authorization"] == f"Bearer {CREDENTIAL}"
        assert delivery.body["noteId"] == NOTE and delivery.body["title"] == "TPS report 2019 (old)"
        assert delivery.body["markdown"] == (deployment.notes / NOTE).read_text()
        assert delivery.headers["idempotency-key"]

        again = await client.call_tool("notes_publish", publish_args(deployment))
        assert again.structured_content["outcome"] == "published"
        assert len(opened) == 1, "a stored credential needs no second browser step"
        assert len(target.received) == 2

    log = (deployment.root / "server.log").read_text()
    assert CREDENTIAL not in log and ALICE_TOKEN not in log
    rows = sqlite3.connect(deployment.state / "notewarden.sqlite3").execute(
        "SELECT sealed FROM publish_credentials"
    )
    assert all(CREDENTIAL.encode() not in bytes(r[0]) for r in rows), "stored in the clear"


def test_accept_before_the_page_is_completed_asks_again(
    alice: RawMcp, deployment: Deployment, target: RecordingTarget
) -> None:
    first = round1(alice, deployment)
    again = retry(alice, deployment, first["requestState"], {"action": "accept"})
    assert again["resultType"] == "input_required"
    assert link_of(again) == link_of(first), "the same link until it is completed"
    no_answer = retry(alice, deployment, again["requestState"], None)
    assert no_answer["resultType"] == "input_required"
    assert target.received == []

    visit = visit_connect_page(link_of(first), token=ALICE_TOKEN, credential=CREDENTIAL)
    assert visit.completion == "completed"
    done = retry(alice, deployment, no_answer["requestState"], {"action": "accept"})
    assert done["structuredContent"]["outcome"] == "published"
    assert len(target.received) == 1

    replay = retry(alice, deployment, no_answer["requestState"], {"action": "accept"})
    assert replay["isError"] and replay["structuredContent"]["error"]["code"] == "confirmation_already_used"
    assert replay["structuredContent"]["error"]["previous"] == done["structuredContent"]
    assert replay["structuredContent"]["error"]["message"].startswith("already done: “")
    assert " was published to " in replay["structuredContent"]["error"]["message"]
    assert len(target.received) == 1, "a replayed retry publishes nothing"


def test_another_principal_in_the_browser_gets_nothing(
    alice: RawMcp, deployment: Deployment, target: RecordingTarget
) -> None:
    first = round1(alice, deployment)
    visit = visit_connect_page(link_of(first), token=BOB_TOKEN, credential="bob-tries-" + "q" * 10)
    assert visit.sign_in == "refused"
    assert visit.completion == ""
    for text in visit.texts:
        assert "Team blog" not in text and target.url not in text and "alice" not in text
    bad = visit_connect_page(link_of(first), token="not-a-token-" + "x" * 12)
    assert bad.sign_in == "bad-credential"
    still = retry(alice, deployment, first["requestState"], {"action": "accept"})
    assert still["resultType"] == "input_required", "nothing was connected"
    assert target.received == []


def test_replayed_completion_is_refused_and_changes_nothing(
    alice: RawMcp, deployment: Deployment, target: RecordingTarget
) -> None:
    first = round1(alice, deployment)
    visit = visit_connect_page(link_of(first), token=ALICE_TOKEN, credential=CREDENTIAL, replay=True)
    assert visit.completion == "completed"
    assert (visit.replay_status, visit.replay) == (409, "already-done")
    done = retry(alice, deployment, first["requestState"], {"action": "accept"})
    assert done["structuredContent"]["outcome"] == "published"
    assert target.received[0].headers["authorization"] == f"Bearer {CREDENTIAL}", "the replay stored nothing"


def test_expired_link(deployment: Deployment, target: RecordingTarget) -> None:
    add_publish_config(deployment, target, connect_ttl=1)
    server = start_http_server(deployment.config, deployment.root / "server-ttl.log")
    client = RawMcp(server.url, ALICE_TOKEN)
    try:
        first = round1(client, deployment)
        time.sleep(1.2)
        visit = visit_connect_page(link_of(first), token=ALICE_TOKEN, credential=CREDENTIAL)
        assert visit.sign_in == "expired" and visit.completion == ""
        late = retry(client, deployment, first["requestState"], {"action": "accept"})
        assert late["isError"] and late["structuredContent"]["error"]["code"] == "connection_expired"
        assert target.received == []
    finally:
        client.close()
        server.stop()


@pytest.mark.parametrize(("action", "outcome"), [("decline", "declined"), ("cancel", "cancelled")])
def test_decline_and_cancel_publish_nothing(
    alice: RawMcp, deployment: Deployment, target: RecordingTarget, action: str, outcome: str
) -> None:
    first = round1(alice, deployment)
    answered = retry(alice, deployment, first["requestState"], {"action": action})
    assert answered["resultType"] == "complete" and not answered["isError"]
    assert answered["structuredContent"]["outcome"] == outcome
    if action == "cancel":
        assert "retriableUntil" in answered["structuredContent"]
        assert retry(alice, deployment, first["requestState"], {"action": "accept"})["resultType"] == (
            "input_required"
        ), "a cancelled step can be taken up again"
    else:
        visit = visit_connect_page(link_of(first), token=ALICE_TOKEN, credential=CREDENTIAL)
        assert visit.sign_in == "expired", "a declined link stops working"
        replay = retry(alice, deployment, first["requestState"], {"action": "accept"})
        assert replay["structuredContent"]["error"]["code"] == "confirmation_already_used"
        assert replay["structuredContent"]["error"]["message"].startswith(
            "already answered: it was declined, so nothing was published."
        )
    assert target.received == []


@pytest.mark.parametrize("capabilities", [{}, {"elicitation": {}}, {"elicitation": {"form": {}}}])
def test_without_url_mode_is_32021(
    alice: RawMcp, deployment: Deployment, capabilities: dict[str, Any]
) -> None:
    reply = alice.call("notes_publish", publish_args(deployment), capabilities=capabilities)
    assert reply.status == 400
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}


def test_connect_forms_refuse_cross_site_posts(
    alice: RawMcp, deployment: Deployment, http_server: HttpServer
) -> None:
    link = link_of(round1(alice, deployment))
    with httpx2.Client(timeout=10) as http:
        page = http.get(link)
        assert page.status_code == 200 and "Team blog" not in page.text
        assert page.headers["cache-control"] == "no-store"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        csrf = page.text.split('name=csrf value="')[1].split('"')[0]
        foreign = http.post(
            link + "/sign-in",
            data={"csrf": csrf, "token": ALICE_TOKEN},
            headers={"Origin": "http://evil.example"},
        )
        assert foreign.status_code == 403
        http.cookies.clear()
        no_cookie = http.post(link + "/sign-in", data={"csrf": csrf, "token": ALICE_TOKEN})
        assert no_cookie.status_code == 400, "a form token without its cookie is refused (login CSRF)"
        blind = http.post(link + "/credential", data={"csrf": "x", "credential": "y"})
        assert blind.status_code == 403


def test_unknown_target_and_note_outside_scope_are_tool_errors(alice: RawMcp, deployment: Deployment) -> None:
    unknown = alice.call(
        "notes_publish", {**publish_args(deployment), "target": "nope"}, capabilities=URL_MODE
    ).result
    assert unknown["structuredContent"]["error"]["code"] == "unknown_target"
    assert "blog" in unknown["structuredContent"]["error"]["message"]
    escape = alice.call(
        "notes_publish",
        {**publish_args(deployment), "noteId": "../private/secret-tps.md"},
        capabilities=URL_MODE,
    ).result
    assert escape["isError"] and escape["structuredContent"]["error"]["code"] == "path_refused"
