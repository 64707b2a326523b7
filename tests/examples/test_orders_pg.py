"""The orders example on PostgreSQL (`--db postgresql://…`), tested like the SQLite one but on two
server processes at once: examples/orders_server.py (`MCPServer`) and examples/orders_lowlevel.py
(lowlevel `Server`) serve Streamable HTTP on one database of their own with one key file, started
once for the module. Each test uses customers of its own, and counts the claims it made.

The invariant: an order is cancelled exactly when its confirmation is consumed, by the first
terminal answer on either process; a crash at any point of the commit leaves both or neither.
"""

from __future__ import annotations

import secrets
import socket
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
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from notewarden.confirm.testing import CRASH_POINTS, Pause
from tests.conftest import free_port, stop_process
from tests.pg import PgDatabase, database_url

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@dataclass
class PgShop:
    pg: PgDatabase
    name: str
    root: Path
    servers: list[subprocess.Popen[bytes]]

    @property
    def url(self) -> str:
        return database_url(self.name)

    def sql(self, statement: str, *params: object) -> list[tuple[Any, ...]]:
        with self.pg.connect(self.name) as conn:
            cursor = conn.execute(statement, params)
            return cursor.fetchall() if cursor.description else []

    def orders(self, *items: str) -> tuple[str, list[int]]:
        """A customer of this test's own, with one open order per item."""
        customer = f"c{secrets.token_hex(4)}"
        ids = [
            int(
                self.sql("INSERT INTO orders (customer, item) VALUES (%s, %s) RETURNING id", customer, i)[0][
                    0
                ]
            )
            for i in items
        ]
        return customer, ids

    def status(self, order_id: int) -> str:
        return str(self.sql("SELECT status FROM orders WHERE id = %s", order_id)[0][0])

    def claims(self) -> int:
        return int(self.sql("SELECT count(*) FROM confirmations")[0][0])

    def start(self, script: str, pause: Pause | None = None) -> subprocess.Popen[bytes]:
        port = free_port()
        args = ["--db", self.url, "--key-file", str(self.root / "shop.key"), "--http", str(port)]
        command = (
            pause.command(EXAMPLES / script, *args)
            if pause
            else [sys.executable, str(EXAMPLES / script), *args]
        )
        with (self.root / "http.log").open("ab") as log:
            process = subprocess.Popen(command, stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return process
            except OSError:
                assert process.poll() is None, (self.root / "http.log").read_text()
                assert time.monotonic() < deadline, "the example did not start"
                time.sleep(0.05)


@pytest.fixture(scope="module")
def shop(pg: PgDatabase, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgShop]:
    """A database of its own, created by the first server (the example's `ORDERS` schema), and the
    two servers on it."""
    shop = PgShop(pg, pg.create(), tmp_path_factory.mktemp("pgshop"), [])
    try:
        shop.servers.append(shop.start("orders_server.py"))
        shop.servers.append(shop.start("orders_lowlevel.py"))
        yield shop
    finally:
        for server in shop.servers:
            stop_process(server)


@asynccontextmanager
async def client(process: subprocess.Popen[bytes], **kwargs: Any) -> AsyncIterator[Client]:
    url = f"http://127.0.0.1:{process.args[-1]}/mcp"  # type: ignore[index]
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto", **kwargs) as session,
    ):
        yield session


async def call(
    process: subprocess.Popen[bytes], customer: str, state: str | None = None, reply: Any = None
) -> types.CallToolResult | types.InputRequiredResult:
    """One round on its own connection; a JSON-RPC error is raised once the connection is closed."""
    async with client(process) as session:
        responses = None if state is None else ({} if reply is None else {"confirm": reply})
        try:
            return await session.session.call_tool(
                "cancel_order",
                {"customer": customer},
                input_responses=responses,
                request_state=state,
                allow_input_required=True,
            )
        except MCPError as error:
            refused = error
    raise refused


async def round1(process: subprocess.Popen[bytes], customer: str, offered: list[int]) -> str:
    first = await call(process, customer)
    assert isinstance(first, types.InputRequiredResult), first
    form = first.input_requests["confirm"]
    assert isinstance(form, types.ElicitRequest)
    choices = form.params.requested_schema["properties"]["order_id"]["oneOf"]
    assert [c["const"] for c in choices] == [str(i) for i in offered]
    assert first.request_state is not None
    return first.request_state


def accept(order_id: int, confirm: bool = True) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"order_id": str(order_id), "confirm": confirm})


def outcome(result: types.CallToolResult | types.InputRequiredResult) -> str:
    assert isinstance(result, types.CallToolResult), result
    assert result.structured_content is not None
    if result.is_error:
        return str(result.structured_content["error"]["code"])
    return str(result.structured_content["outcome"])


async def test_accept_on_one_process_and_a_replay_on_the_other(shop: PgShop) -> None:
    customer, (kettle, teapot) = shop.orders("kettle", "teapot")
    other, (mug,) = shop.orders("mug")
    claims = shop.claims()
    first, second = shop.servers
    state = await round1(first, customer, [kettle, teapot])
    done = await call(first, customer, state, accept(kettle))
    assert outcome(done) == "cancelled_order"
    replay = await call(second, customer, state, accept(kettle))
    assert outcome(replay) == "confirmation_already_used"
    assert isinstance(replay, types.CallToolResult) and replay.structured_content is not None
    assert replay.structured_content["error"]["previous"] == done.structured_content  # type: ignore[union-attr]
    with pytest.raises(MCPError) as rebound:  # the state was minted for another customer
        await call(second, other, state, accept(mug))
    assert rebound.value.error.code == types.INVALID_PARAMS
    assert (shop.status(kettle), shop.status(teapot), shop.status(mug)) == ("cancelled", "open", "open")
    assert shop.claims() == claims + 1


async def test_decline_cancel_and_missing_content_across_the_processes(shop: PgShop) -> None:
    customer, (kettle, teapot) = shop.orders("kettle", "teapot")
    claims = shop.claims()
    first, second = shop.servers
    declined = await round1(second, customer, [kettle, teapot])
    assert outcome(await call(first, customer, declined, types.ElicitResult(action="decline"))) == "declined"
    assert outcome(await call(second, customer, declined, accept(kettle))) == "confirmation_already_used"

    state = await round1(first, customer, [kettle, teapot])
    cancelled = await call(second, customer, state, types.ElicitResult(action="cancel"))
    assert outcome(cancelled) == "cancelled"
    assert isinstance(cancelled, types.CallToolResult) and cancelled.structured_content is not None
    assert "retriableUntil" in cancelled.structured_content
    for empty in (
        types.ElicitResult(action="accept"),
        types.ElicitResult(action="accept", content={"confirm": True}),
    ):
        assert outcome(await call(first, customer, state, empty)) == "invalid_answer"
    assert isinstance(
        await call(second, customer, state), types.InputRequiredResult
    )  # no answer: asked again
    assert shop.claims() == claims + 1  # only the decline
    assert outcome(await call(first, customer, state, accept(teapot))) == "cancelled_order"
    assert (shop.status(kettle), shop.status(teapot), shop.claims()) == ("open", "cancelled", claims + 2)


async def test_twelve_racing_answers_on_two_processes_cancel_once(shop: PgShop) -> None:
    customer, (kettle,) = shop.orders("kettle")
    claims = shop.claims()
    state = await round1(shop.servers[0], customer, [kettle])
    outcomes: list[str] = []

    async def answer(process: subprocess.Popen[bytes]) -> None:
        outcomes.append(outcome(await call(process, customer, state, accept(kettle))))

    async with anyio.create_task_group() as tasks:
        for i in range(12):
            tasks.start_soon(answer, shop.servers[i % 2])
    assert sorted(outcomes) == ["cancelled_order"] + ["confirmation_already_used"] * 11
    assert (shop.status(kettle), shop.claims()) == ("cancelled", claims + 1)


@pytest.mark.parametrize("point", CRASH_POINTS)
async def test_sigkill_at_each_point_leaves_both_or_neither(
    shop: PgShop, point: str, confirm_pause: Callable[[str], Pause]
) -> None:
    """A third process, started through `notewarden.confirm.testing` with `point` armed, is killed
    while it holds the answer there; the same confirmation then goes to a surviving process."""
    customer, (kettle, teapot) = shop.orders("kettle", "teapot")
    claims = shop.claims()
    state = await round1(shop.servers[0], customer, [kettle, teapot])
    pause = confirm_pause(point)
    victim = shop.start("orders_server.py", pause)
    try:

        async def doomed() -> None:
            await call(victim, customer, state, accept(kettle))
            raise AssertionError("the killed server answered")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(doomed)
            assert await pause.kill() == victim.pid
            victim.wait(timeout=10)
            tasks.cancel_scope.cancel()
    finally:
        stop_process(victim)
    committed = point == "after_commit"
    assert (shop.status(kettle), shop.claims()) == (
        ("cancelled", claims + 1) if committed else ("open", claims)
    )
    again = await call(shop.servers[1], customer, state, accept(kettle))
    assert outcome(again) == ("confirmation_already_used" if committed else "cancelled_order")
    assert (shop.status(kettle), shop.status(teapot), shop.claims()) == ("cancelled", "open", claims + 1)
