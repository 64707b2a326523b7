"""What a confirmed delete costs in round trips to PostgreSQL, counted on the wire.

A ledger with a pool of one connection, whose libpq protocol trace is read (`bench.pgtrace`): every
`Sync` and every simple `Query` is a message the client then waits on, so their count is the number
of round trips. Round 1 (the title query, with the stale-row probe in the
same statement) is one; round 2 is three: BEGIN with the claim, the move (the workspace's lock, the
row into the trash, the history following it), the receipt and the change's record
(`notes.change_log`) with COMMIT (notes.sql,
ledger.postgres). The second use of the same confirmation still finds the first's receipt and
claims nothing: the statements travel together, the transaction is the same.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from bench.pgtrace import ROUND_TRIP, sent, trace

from notewarden.ledger import Claim
from notewarden.ledger.postgres import PostgresLedger
from notewarden.notes.change_log import CHANGE_LOG_SCHEMA, read_records
from notewarden.notes.history import HISTORY_SCHEMA
from notewarden.notes.sql import SQL_STORE_SCHEMA, SqlNoteStore
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import parse_file_uri
from tests.pg import PgDatabase
from tests.store_changes import SETUP, deleting

pytestmark = pytest.mark.postgres


@pytest.fixture
def ledger(pg: PgDatabase) -> Iterator[PostgresLedger]:
    upgrader = PostgresLedger(
        pg.url, components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA], check_schema=False
    )
    upgrader.upgrade()
    upgrader.close()
    opened = PostgresLedger(
        pg.url, components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA], pool_size=1
    )
    yield opened
    opened.close()


class Wire:
    """The trace of the pool's one connection; `turns` counts the round trips since the last call."""

    def __init__(self, ledger: PostgresLedger, path: Path) -> None:
        with ledger.snapshot() as db:
            self._conn: psycopg.Connection[Any] = db.connection  # type: ignore[attr-defined]
        self._path = path
        self._file = path.open("w")
        trace(self._conn, self._file)
        self._seen = 0

    def turns(self) -> int:
        self._conn.pgconn.untrace()  # flushes what libpq buffered
        messages = sent(self._path.read_text())
        waits = sum(messages[m] for m in ROUND_TRIP)
        trace(self._conn, self._file)
        new, self._seen = waits - self._seen, waits
        return new

    def close(self) -> None:
        self._conn.pgconn.untrace()
        self._file.close()


def test_a_confirmed_delete_is_one_round_trip_then_three(ledger: PostgresLedger, tmp_path: Path) -> None:
    workspace = parse_file_uri(f"file:///round-trips/{time.time_ns()}/notes")
    everywhere = WorkspaceScope("alice", workspace, (), None)
    store = SqlNoteStore(ledger)
    for n in range(3):
        store.create_note(everywhere, f"n{n}.md", f"# Wombat {n}\n\nbody\n".encode(), change=SETUP)
    claim = Claim("confirmation-1", "alice", "notes_delete", "deleted", time.time() + 600)
    wire = Wire(ledger, tmp_path / "trace.txt")
    try:
        (candidate,) = store.find_titled(everywhere, ["wombat", "1"])
        assert wire.turns() == 1, "round 1: the title query carries the stale-row probe"
        with ledger.critical_section() as txn:
            assert txn.claim_confirmation(claim)
            trashed = store.move_to_trash(
                txn, everywhere, [candidate], change=deleting("alice", claim.confirmation_id)
            )[0]
            txn.record_receipt(claim.confirmation_id, {"done": True, "summary": "moved", "result": {}})
        assert wire.turns() == 3, "round 2: BEGIN + claim, the move, the receipt + the record + COMMIT"
    finally:
        wire.close()
    assert sorted(n.id for n in store.list_notes(everywhere)) == ["n0.md", "n2.md"]
    with ledger.critical_section() as txn:  # a replay: claims nothing, sees the committed receipt
        assert [t.trash_id for t in store.list_trash(txn, everywhere)] == [trashed.trash_id]
        assert not txn.claim_confirmation(claim)
        prior = txn.prior_outcome(claim.confirmation_id, "alice")
    assert prior is not None and prior.outcome == "deleted"
    assert prior.receipt is not None and prior.receipt["summary"] == "moved"
    with ledger.snapshot() as db:
        (record,) = read_records(db, workspace=str(workspace))[:1]
    assert (record.tool, record.confirmation_id) == ("notes_delete", "confirmation-1")
    assert [(n.effect, n.note_id) for n in record.notes] == [("trashed", "n1.md")]
