"""Rate limits per right, the body size cap, Origin and Host validation, on a real server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from notewarden.tools.limits import RateLimiter
from tests.conftest import ALICE_TOKEN, BOB_TOKEN, Deployment, HttpServer, start_http_server
from tests.wire.rawhttp import RawMcp


@pytest.fixture
def limited(deployment: Deployment) -> Iterator[HttpServer]:
    deployment.write_config(
        extra="[limits]\ndelete_per_minute = 3\nwrite_per_minute = 5\n[http]\nmax_body_bytes = 2048\n"
    )
    server = start_http_server(deployment.config, deployment.root / "limited.log")
    yield server
    server.stop()


def test_deletes_are_rate_limited_per_principal(limited: HttpServer, deployment: Deployment) -> None:
    alice, bob = RawMcp(limited.url, ALICE_TOKEN), RawMcp(limited.url, BOB_TOKEN)
    args = {"workspaceUri": deployment.notes_uri, "title": "TPS"}
    try:
        for _ in range(3):
            assert alice.call("notes_delete", args).result["resultType"] == "input_required"
        refused = alice.call("notes_delete", args).result
        assert refused["isError"] is True
        error = refused["structuredContent"]["error"]
        assert error["code"] == "rate_limited"
        assert 1 <= error["retryAfterSeconds"] <= 20  # one call per 20 s at 3/min
        assert f"{error['retryAfterSeconds']} s" in refused["content"][0]["text"]
        assert "delete_per_minute" in refused["content"][0]["text"]
        # reading, editing (another right's bucket) and other principals are not affected
        edit = {
            "workspaceUri": deployment.notes_uri,
            "noteId": "todo.md",
            "edits": [{"op": "append", "text": "x"}],
        }
        assert not alice.call("notes_edit", edit).result.get("isError")
        assert alice.call("notes_list", {"workspaceUri": deployment.notes_uri}).status == 200
        bob_args = {"workspaceUri": deployment.private_uri, "title": "TPS"}
        assert bob.call("notes_delete", bob_args).result["resultType"] == "input_required"
    finally:
        alice.close()
        bob.close()


def test_edits_have_their_own_limit_and_do_not_spend_the_deletes(
    limited: HttpServer, deployment: Deployment
) -> None:
    alice = RawMcp(limited.url, ALICE_TOKEN)
    edit = {
        "workspaceUri": deployment.notes_uri,
        "noteId": "todo.md",
        "edits": [{"op": "append", "text": "x"}],
    }
    try:
        for _ in range(5):
            assert not alice.call("notes_edit", edit).result.get("isError")
        refused = alice.call("notes_edit", edit).result["structuredContent"]["error"]
        assert refused["code"] == "rate_limited" and "write_per_minute" in refused["message"]
        delete = {"workspaceUri": deployment.notes_uri, "title": "TPS"}
        assert alice.call("notes_delete", delete).result["resultType"] == "input_required"
    finally:
        alice.close()


def test_rate_limiter_refills_continuously() -> None:
    now = [0.0]
    limiter = RateLimiter(6, clock=lambda: now[0])  # one token per 10 s
    assert [limiter.acquire("a") for _ in range(6)] == [0.0] * 6
    assert limiter.acquire("a") == pytest.approx(10.0)
    assert limiter.acquire("b") == 0.0
    now[0] = 5.0
    assert limiter.acquire("a") == pytest.approx(5.0)
    now[0] = 10.0
    assert limiter.acquire("a") == 0.0
    now[0] = 1000.0
    assert [limiter.acquire("a") for _ in range(7)].count(0.0) == 6  # capacity caps the refill


def test_body_over_the_cap_is_413(limited: HttpServer, deployment: Deployment) -> None:
    client = RawMcp(limited.url, ALICE_TOKEN)
    try:
        small = client.call("notes_list", {"workspaceUri": deployment.notes_uri})
        assert small.status == 200
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "notes_list", "arguments": {"workspaceUri": "file:///" + "a" * 4000}},
        }
        big = client.post(body, method="tools/call", name="notes_list")
        assert big.status == 413
        assert "too large" in big.text
        assert len(json.dumps(body)) > 2048
        assert client.call("notes_list", {"workspaceUri": deployment.notes_uri}).status == 200
    finally:
        client.close()


def test_foreign_origin_is_403_and_foreign_host_is_421(limited: HttpServer) -> None:
    client = RawMcp(limited.url, ALICE_TOKEN)
    try:
        origin = client.request("tools/list", headers={"Origin": "https://evil.example"})
        assert origin.status == 403 and "Origin" in origin.text
        host = client.request("tools/list", headers={"Host": "evil.example"})
        assert host.status == 421 and "Host" in host.text
        rebinding = client.request("tools/list", headers={"Host": f"attacker.example:{limited.port}"})
        assert rebinding.status == 421
        assert client.request("tools/list", headers={"Host": f"localhost:{limited.port}"}).status == 200
    finally:
        client.close()
