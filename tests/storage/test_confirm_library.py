"""`notewarden.confirm` on both ledgers, without a server: the claim and the caller's effect commit
together, a refused effect gives the claim back, racing answers produce one effect, and
`notewarden.confirm` imports nothing of notewarden's notes, scopes or tools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from notewarden.confirm import (
    Answer,
    Candidate,
    ConfirmationState,
    Confirmed,
    ConfirmedAction,
    Done,
    Ledger,
    Offer,
    Refusal,
    SchemaComponent,
    Verdict,
    VerdictKind,
    open_postgres_ledger,
    open_sqlite_ledger,
    yes_no_form,
)
from tests.pg import PgDatabase, database_url

WIDGETS = SchemaComponent(
    "widgets",
    tables=("widgets",),
    sqlite=("CREATE TABLE widgets (id TEXT PRIMARY KEY, scrapped INTEGER NOT NULL DEFAULT 0)",),
    postgres=("CREATE TABLE widgets (id TEXT PRIMARY KEY, scrapped INTEGER NOT NULL DEFAULT 0)",),
)


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path, pg: PgDatabase) -> Iterator[Ledger]:
    if request.param == "sqlite":
        opened = open_sqlite_ledger(tmp_path / "widgets.sqlite3", schema=(WIDGETS,))
    else:
        opened = open_postgres_ledger(database_url(pg.create()), schema=(WIDGETS,))  # an empty database
    with opened.critical_section() as txn:
        txn.execute("INSERT INTO widgets (id) VALUES ('w1')")
    yield opened
    opened.close()


class Scrap:
    """A confirmed "scrap widget w1": the tool's own three functions."""

    def __init__(self, ledger: Ledger, *, refuse: bool = False) -> None:
        self.ledger, self.refuse, self.effects = ledger, refuse, 0
        self.action = ConfirmedAction(
            tool="scrap", ledger=ledger, answer=Answer.YES_NO, done_label="scrapped"
        )

    def offer(self, prior: ConfirmationState | None) -> Offer:
        return Offer(
            yes_no_form("Scrap w1?", ["w1"], 0, "Yes, scrap it"), candidates=[Candidate("w1", "W", "v1")]
        )

    def effect(self, confirmed: Confirmed) -> Done:
        confirmed.txn.execute("UPDATE widgets SET scrapped = scrapped + 1 WHERE id = 'w1'")
        self.effects += 1
        if self.refuse:
            raise Refusal("widget_changed", "w1 changed; nothing was scrapped")
        return Done({"outcome": "scrapped"}, "w1 was scrapped")

    def unchanged(self, outcome: str, until: str | None) -> Done:
        return Done({"outcome": outcome})

    async def call(
        self, request_state: str | None, answer: types.ElicitResult | None, principal: str = "ann"
    ) -> Any:
        return await self.action.run(
            principal=principal,
            arguments={"widget": "w1"},
            request_state=request_state,
            input_responses=None if answer is None else {"confirm": answer},
            offer=self.offer,
            effect=self.effect,
            unchanged=self.unchanged,
        )

    def scrapped(self) -> int:
        with self.ledger.snapshot() as db:
            return int(db.execute("SELECT scrapped FROM widgets WHERE id = 'w1'")[0][0])

    def claims(self) -> int:
        with self.ledger.snapshot() as db:
            return int(db.execute("SELECT count(*) FROM confirmations")[0][0])


YES = types.ElicitResult(action="accept", content={"confirm": True})


def test_the_effect_commits_with_the_claim_once(ledger: Ledger) -> None:
    scrap = Scrap(ledger)

    async def rounds() -> tuple[Any, Any, Any]:
        first = await scrap.call(None, None)
        assert isinstance(first, types.InputRequiredResult) and first.request_state is not None
        return first, await scrap.call(first.request_state, YES), await scrap.call(first.request_state, YES)

    first, done, replay = anyio.run(rounds)
    assert json.loads(first.request_state)["cand"] == [["w1", "W", "v1", ""]]
    assert done.structured_content == {"outcome": "scrapped"}
    assert replay.structured_content["error"]["code"] == "confirmation_already_used"
    assert replay.structured_content["error"]["previous"] == {"outcome": "scrapped"}
    assert (scrap.scrapped(), scrap.claims()) == (1, 1)

    with pytest.raises(MCPError):  # another principal: the state is refused before the ledger
        anyio.run(scrap.call, first.request_state, YES, "bob")


def test_a_refused_effect_gives_the_claim_back(ledger: Ledger) -> None:
    refusing = Scrap(ledger, refuse=True)
    first = anyio.run(refusing.call, None, None)
    refused = anyio.run(refusing.call, first.request_state, YES)
    assert refused.is_error and refused.structured_content["error"]["code"] == "widget_changed"
    assert (refusing.scrapped(), refusing.claims()) == (0, 0)  # the effect's write rolled back too
    done = anyio.run(Scrap(ledger).call, first.request_state, YES)  # the same confirmation, usable
    assert done.structured_content == {"outcome": "scrapped"}
    assert (refusing.scrapped(), refusing.claims()) == (1, 1)


def test_racing_answers_produce_one_effect(ledger: Ledger) -> None:
    scrap = Scrap(ledger)
    first = anyio.run(scrap.call, None, None)
    state = ConfirmationState.decode(first.request_state, phase="scrap/confirm")
    verdict = Verdict(VerdictKind.CONFIRMED)

    def settle(_: int) -> str:
        try:
            result = scrap.action.settle(state, verdict, "ann", scrap.effect, scrap.unchanged, retriable=True)
        except Refusal as refusal:
            return refusal.code
        return str((result.structured_content or {})["outcome"])

    with ThreadPoolExecutor(8) as pool:
        outcomes = sorted(pool.map(settle, range(8)))
    assert outcomes == ["confirmation_already_used"] * 7 + ["scrapped"]
    assert (scrap.scrapped(), scrap.claims(), scrap.effects) == (1, 1, 1)
