"""The `notewarden.confirm` library as a server author uses it: examples/orders_server.py (the SDK's
`MCPServer`) and examples/orders_lowlevel.py (its lowlevel `Server`), real processes over a real
SQLite database, driven by the official SDK client. Every message a server wrote on stdio is
checked against the 2026-07-28 schema.

The invariant checked everywhere: an order is cancelled exactly when its confirmation is consumed
(one `confirmations` row), by the first terminal answer only; cancel and an invalid answer consume
nothing until the confirmation expires; a crash leaves both or neither.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from notewarden.confirm import SchemaComponent, open_sqlite_ledger
from notewarden.confirm.testing import CRASH_POINTS, Pause
from tests.conftest import free_port, stop_process
from tests.wire.test_stdio import check_recorded

pytestmark = pytest.mark.anyio
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SERVERS = ["orders_server.py", "orders_lowlevel.py"]
ARGS = {"customer": "ada"}


@dataclass
class Shop:
    root: Path

    @property
    def db(self) -> Path:
        return self.root / "shop.sqlite3"

    def rows(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql, params).fetchall()

    def status(self, order_id: int) -> str:
        return str(self.rows("SELECT status FROM orders WHERE id = ?", order_id)[0][0])

    def claims(self) -> int:
        return int(self.rows("SELECT count(*) FROM confirmations")[0][0])


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Shop]:
    """The shop's database as the example creates it (its `ORDERS` schema), with three orders."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        from orders import ORDERS  # the example's own schema component
    finally:
        sys.path.remove(str(EXAMPLES))
    assert isinstance(ORDERS, SchemaComponent)
    ledger = open_sqlite_ledger(tmp_path / "shop.sqlite3", schema=(ORDERS,))
    with ledger.critical_section() as txn:
        txn.execute(
            "INSERT INTO orders (customer, item) VALUES ('ada', 'kettle'), ('ada', 'teapot'), ('bob', 'mug')"
        )
    ledger.close()
    yield Shop(tmp_path)


@asynccontextmanager
async def client(
    shop: Shop, script: str, *extra: str, env: dict[str, str] | None = None, launcher: list[str] | None = None
) -> AsyncIterator[Client]:
    """The SDK client on a stdio server process whose pipes are recorded and schema-checked."""
    stamp = time.monotonic_ns()
    sent, received = shop.root / f"stdin-{stamp}.jsonl", shop.root / f"stdout-{stamp}.jsonl"
    command = [*(launcher or [sys.executable]), str(EXAMPLES / script), "--db", str(shop.db), *extra]
    inner = " ".join(shlex.quote(a) for a in command)
    script_line = f"tee -a {shlex.quote(str(sent))} | {inner} | tee -a {shlex.quote(str(received))}"
    params = StdioServerParameters(
        command="/bin/sh", args=["-c", script_line], env={**os.environ, **(env or {})}
    )
    async with Client(params, mode="auto") as session:
        yield session
    check_recorded(sent, received)


def pick_order(first: types.InputRequiredResult, order_id: int) -> str:
    form = first.input_requests["confirm"]
    assert isinstance(form, types.ElicitRequest)
    options = form.params.requested_schema["properties"]["order_id"]["oneOf"]
    assert [o["const"] for o in options] == ["1", "2"]  # ada's open orders, bob's not offered
    return str(order_id)


async def round1(session: Client) -> types.InputRequiredResult:
    first = await session.session.call_tool("cancel_order", ARGS, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    return first


async def answer(
    session: Client,
    first: types.InputRequiredResult,
    response: types.ElicitResult | None,
    args: dict[str, Any] = ARGS,
) -> types.CallToolResult | types.InputRequiredResult:
    return await session.session.call_tool(
        "cancel_order",
        args,
        input_responses={} if response is None else {"confirm": response},
        request_state=first.request_state,
        allow_input_required=True,
    )


def accept(order_id: int = 1, confirm: bool = True) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"order_id": str(order_id), "confirm": confirm})


def outcome(result: types.CallToolResult | types.InputRequiredResult) -> str:
    assert isinstance(result, types.CallToolResult), result
    assert result.structured_content is not None
    if result.is_error:
        return str(result.structured_content["error"]["code"])
    return str(result.structured_content["outcome"])


@pytest.mark.parametrize("script", SERVERS)
async def test_accept_cancels_once_and_a_replay_gets_the_receipt(shop: Shop, script: str) -> None:
    async with client(shop, script) as session:
        first = await round1(session)
        pick_order(first, 1)
        done = await answer(session, first, accept(1))
        assert outcome(done) == "cancelled_order"
        replay = await answer(session, first, accept(1))
    assert outcome(replay) == "confirmation_already_used"
    assert isinstance(replay, types.CallToolResult) and replay.structured_content is not None
    assert replay.structured_content["error"]["previous"] == done.structured_content  # type: ignore[union-attr]
    assert "already done: order 1 was cancelled" in replay.structured_content["error"]["message"]
    assert (shop.status(1), shop.status(2), shop.claims()) == ("cancelled", "open", 1)


@pytest.mark.parametrize("script", SERVERS)
async def test_decline_is_terminal_and_consumes_nothing_else(shop: Shop, script: str) -> None:
    async with client(shop, script) as session:
        first = await round1(session)
        declined = await answer(session, first, types.ElicitResult(action="decline"))
        assert outcome(declined) == "declined"
        later = await answer(session, first, accept(1))
    assert outcome(later) == "confirmation_already_used"
    assert "already answered: it was declined, so no order was cancelled" in str(later.content[0])
    assert (shop.status(1), shop.claims()) == ("open", 1)


@pytest.mark.parametrize("script", SERVERS)
async def test_cancel_is_retriable_until_the_confirmation_expires(shop: Shop, script: str) -> None:
    async with client(shop, script, "--ttl", "3") as session:
        first = await round1(session)
        cancelled = await answer(session, first, types.ElicitResult(action="cancel"))
        assert outcome(cancelled) == "cancelled"
        assert isinstance(cancelled, types.CallToolResult) and cancelled.structured_content is not None
        assert "retriableUntil" in cancelled.structured_content
        assert (shop.status(1), shop.claims()) == ("open", 0)
        assert outcome(await answer(session, first, accept(2))) == "cancelled_order"  # the same state, later

        expiring = await round1(session)
        assert outcome(await answer(session, expiring, types.ElicitResult(action="cancel"))) == "cancelled"
        await anyio.sleep(3.5)
        with pytest.raises(MCPError) as refused:
            await answer(session, expiring, accept(1))
    assert refused.value.error.code == types.INVALID_PARAMS
    assert (shop.status(1), shop.status(2), shop.claims()) == ("open", "cancelled", 1)


@pytest.mark.parametrize("script", SERVERS)
async def test_missing_content_is_never_consent(shop: Shop, script: str) -> None:
    async with client(shop, script) as session:
        first = await round1(session)
        asked_again = await answer(session, first, None)  # no answer under the key: the form again
        assert isinstance(asked_again, types.InputRequiredResult)
        for empty in (
            types.ElicitResult(action="accept"),
            types.ElicitResult(action="accept", content={"order_id": "1"}),
            types.ElicitResult(action="accept", content={"confirm": True}),
            types.ElicitResult(
                action="accept", content={"order_id": "3", "confirm": True}
            ),  # bob's: not offered
        ):
            assert outcome(await answer(session, first, empty)) == "invalid_answer"
        assert (shop.status(1), shop.status(3), shop.claims()) == ("open", "open", 0)
        not_confirmed = await answer(session, first, accept(1, confirm=False))
    assert outcome(not_confirmed) == "not_confirmed"
    assert (shop.status(1), shop.claims()) == ("open", 1)


@pytest.mark.parametrize("script", SERVERS)
async def test_changed_arguments_and_another_principal_are_refused(shop: Shop, script: str) -> None:
    async with client(shop, script) as session:
        first = await round1(session)
        with pytest.raises(MCPError) as rebound:
            await answer(session, first, accept(1), {"customer": "bob"})  # the SDK's argument binding
        assert rebound.value.error.code == types.INVALID_PARAMS
    async with client(shop, script, "--principal", "mallory") as other:
        with pytest.raises(MCPError) as stolen:
            await answer(other, first, accept(1))  # confirm's own principal binding
    assert stolen.value.error.code == types.INVALID_PARAMS
    assert (shop.status(1), shop.claims()) == ("open", 0)


@pytest.mark.parametrize("script", SERVERS)
async def test_a_replay_on_a_second_process_gets_already_used_with_the_receipt(
    shop: Shop, script: str
) -> None:
    async with client(shop, script) as first_process, client(shop, script) as second_process:
        first = await round1(first_process)
        done = await answer(first_process, first, accept(2))
        assert outcome(done) == "cancelled_order"
        replay = await answer(second_process, first, accept(2))
    assert outcome(replay) == "confirmation_already_used"
    assert replay.structured_content["error"]["previous"] == done.structured_content  # type: ignore[union-attr]
    assert (shop.status(2), shop.claims()) == ("cancelled", 1)


@asynccontextmanager
async def http_server(
    shop: Shop, script: str, *, pause: Pause | None = None
) -> AsyncIterator[subprocess.Popen[bytes]]:
    """The example serving Streamable HTTP on a free port (`process.args[-1]`), as a real process;
    with `pause`, started through `notewarden.confirm.testing` with that point armed."""
    port = free_port()
    args = ["--db", str(shop.db), "--http", str(port)]
    script_path = EXAMPLES / script
    command = pause.command(script_path, *args) if pause else [sys.executable, str(script_path), *args]
    with (shop.root / "http.log").open("ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=log)
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(0.05)
        yield process
    finally:
        stop_process(process)


@asynccontextmanager
async def http_client(process: subprocess.Popen[bytes], **kwargs: Any) -> AsyncIterator[Client]:
    url = f"http://127.0.0.1:{process.args[-1]}/mcp"  # type: ignore[index]
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto", **kwargs) as session,
    ):
        yield session


@pytest.mark.parametrize("script", SERVERS)
@pytest.mark.parametrize("point", CRASH_POINTS)
async def test_sigkill_between_claim_and_mutation_and_after(
    shop: Shop, script: str, point: str, confirm_pause: Callable[[str], Pause]
) -> None:
    """Killed at `point` (after_claim: claimed, order untouched; after_mutation: order updated, not
    committed; after_commit), then restarted on the same database: either both the claim and the
    cancellation happened, or neither and the same confirmation still cancels the order once. The
    pause is the library's public test helper (`notewarden.confirm.testing`, its pytest fixture)."""
    pause = confirm_pause(point)
    async with http_server(shop, script, pause=pause) as victim:
        async with http_client(victim) as session:
            first = await round1(session)

        async def doomed() -> None:
            async with http_client(victim) as session:
                await answer(session, first, accept(1))
            raise AssertionError("the killed server answered")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(doomed)
            assert await pause.kill() == victim.pid
            victim.wait(timeout=10)
            tasks.cancel_scope.cancel()  # whatever the client makes of the dead connection
    committed = point == "after_commit"
    assert (shop.status(1), shop.claims()) == (("cancelled", 1) if committed else ("open", 0))
    async with http_server(shop, script) as restarted, http_client(restarted) as session:
        again = await answer(session, first, accept(1))
    assert outcome(again) == ("confirmation_already_used" if committed else "cancelled_order")
    assert (shop.status(1), shop.status(2), shop.claims()) == ("cancelled", "open", 1)


@pytest.mark.parametrize("script", SERVERS)
async def test_over_streamable_http(shop: Shop, script: str) -> None:
    async def confirm(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return accept(2)

    async with (
        http_server(shop, script) as process,
        http_client(process, elicitation_callback=confirm) as session,
    ):
        result = await session.call_tool("cancel_order", ARGS)  # the SDK client drives both rounds
    assert outcome(result) == "cancelled_order"
    assert (shop.status(1), shop.status(2), shop.claims()) == ("open", "cancelled", 1)


def test_the_examples_stay_small() -> None:
    """The wiring a server author writes stays about 20 lines (the shop's own code is orders.py)."""
    for script in SERVERS:
        code = [
            line
            for line in (EXAMPLES / script).read_text().split('"""', 2)[2].splitlines()
            if line.strip() and not line.lstrip().startswith(("#", "import ", "from "))
        ]
        assert len(code) <= 30, (script, len(code))
