"""`notewarden.confirm.testing` in the test's own process (`arm`, `crash`, the `confirm_arm` fixture):
a crash at each point of the commit, on a real SQLite ledger, leaves the claim and the effect both
or neither; the points are disarmed afterwards. (Its process half, `Pause`, is used by
test_orders.py, test_orders_pg.py and the docs' own crash test.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import mcp_types as types
import pytest

from notewarden import faults
from notewarden.confirm import (
    Answer,
    Candidate,
    Confirmed,
    ConfirmedAction,
    Done,
    Offer,
    SchemaComponent,
    open_sqlite_ledger,
    yes_no_form,
)
from notewarden.confirm.testing import CRASH_POINTS, Pause, SimulatedCrash, arm

pytestmark = pytest.mark.anyio
NOTES = SchemaComponent(
    "notes_demo",
    tables=("things",),
    sqlite=("CREATE TABLE things (id TEXT PRIMARY KEY, gone INTEGER NOT NULL DEFAULT 0)",),
    postgres=("CREATE TABLE things (id TEXT PRIMARY KEY, gone INTEGER NOT NULL DEFAULT 0)",),
)


@pytest.mark.parametrize("point", CRASH_POINTS)
async def test_a_crash_in_process_leaves_both_or_neither(
    tmp_path: Path, point: str, confirm_arm: Callable[..., None]
) -> None:
    ledger = open_sqlite_ledger(tmp_path / "l.sqlite3", schema=(NOTES,))
    with ledger.critical_section() as txn:
        txn.execute("INSERT INTO things (id) VALUES ('a')")
    action = ConfirmedAction(tool="drop", ledger=ledger, answer=Answer.YES_NO)
    thing = Candidate("a", "the thing", "1")

    def effect(confirmed: Confirmed) -> Done:
        (picked,) = confirmed.chosen  # a yes/no form's one candidate
        confirmed.txn.execute("UPDATE things SET gone = 1 WHERE id = ?", (picked.id,))
        return Done({"dropped": picked.id}, summary=f"{picked.id} was dropped")

    async def round_(state: str | None) -> types.CallToolResult | types.InputRequiredResult:
        return await action.run(
            principal="p",
            arguments={},
            request_state=state,
            input_responses={"confirm": {"action": "accept", "content": {"confirm": True}}},
            offer=lambda prior: Offer(yes_no_form("Drop it?", [thing]), candidates=[thing]),
            effect=effect,
            unchanged=lambda outcome, until: Done({"outcome": outcome}),
        )

    def rows() -> tuple[int, int]:
        with ledger.snapshot() as db:
            gone = db.execute("SELECT gone FROM things")[0][0]
            claims = db.execute("SELECT count(*) FROM confirmations")[0][0]
        return int(gone), int(claims)

    first = await round_(None)
    assert isinstance(first, types.InputRequiredResult) and first.request_state is not None
    confirm_arm(point)
    with pytest.raises(SimulatedCrash):
        await round_(first.request_state)
    assert rows() == ((1, 1) if point == "after_commit" else (0, 0))
    faults.uninstall(point)
    again = await round_(first.request_state)
    assert isinstance(again, types.CallToolResult)
    if point == "after_commit":  # committed before the crash: the retry is told what happened
        assert again.structured_content is not None
        assert again.structured_content["error"]["code"] == "confirmation_already_used"
        assert again.structured_content["error"]["previous"] == {"dropped": "a"}
    else:
        assert again.structured_content == {"dropped": "a"}
    assert rows() == (1, 1)
    ledger.close()


def test_points_are_checked_and_disarmed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a crash point"):
        Pause("after_breakfast", tmp_path / "p")
    with pytest.raises(ValueError, match="not a crash point"), arm("move_committed"):
        pass
    with arm("after_claim"):
        assert faults.installed() == ("after_claim",)
    assert faults.installed() == ()
    command = Pause("after_claim", tmp_path / "p").command("server.py", "--db", "x")
    assert command[1:] == [
        "-m",
        "notewarden.confirm.testing",
        "--pause-at",
        "after_claim",
        "--pause-file",
        str(tmp_path / "p"),
        "server.py",
        "--db",
        "x",
    ]
