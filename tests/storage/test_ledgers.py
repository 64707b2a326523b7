"""The `Ledger` protocol, one suite over both implementations (a real SQLite file, the real PostgreSQL).

Plus what only PostgreSQL needs: the workspace advisory lock really serializes two
transactions, and a schema that is behind is refused with the command to run.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.ledger import Claim, Ledger, LedgerUnavailable, PriorUse
from notewarden.ledger.pending import claim_pending, settle_pending
from notewarden.ledger.postgres import PostgresLedger, describe_dsn
from notewarden.ledger.schema import LEDGER_SCHEMA
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.files import FILES_STORE_SCHEMA
from notewarden.schema import SchemaOutOfDate
from tests.pg import SECRET_PASSWORD, PgDatabase, database_url


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path, pg: PgDatabase) -> Iterator[Ledger]:
    if request.param == "sqlite":
        opened: Ledger = SqliteLedger(tmp_path / "ledger.sqlite3", components=[FILES_STORE_SCHEMA])
    else:
        upgrader = PostgresLedger(pg.url, components=[FILES_STORE_SCHEMA], check_schema=False)
        upgrader.upgrade()
        upgrader.close()
        opened = PostgresLedger(pg.url, components=[FILES_STORE_SCHEMA], connect_timeout=2)
    yield opened
    opened.close()


def claim(cid: str, *, expires_in: float = 600, outcome: str = "deleted") -> Claim:
    return Claim(
        confirmation_id=cid,
        principal="alice",
        tool="notes_delete",
        outcome=outcome,
        expires_at=time.time() + expires_in,
    )


def fresh_id() -> str:
    return f"cid-{time.time_ns()}"


def test_a_confirmation_is_claimed_once(ledger: Ledger) -> None:
    cid = fresh_id()
    with ledger.critical_section() as txn:
        assert txn.claim_confirmation(claim(cid)) is True
    with ledger.critical_section() as txn:
        assert txn.claim_confirmation(claim(cid)) is False
        assert txn.prior_outcome(cid, "alice") == PriorUse("deleted")
        assert txn.prior_outcome(cid, "bob") is None, "another principal learns nothing"
    assert ledger.consumed_outcome(cid, "alice") == PriorUse("deleted")


def test_a_failed_critical_section_keeps_nothing_and_runs_undo_last_first(ledger: Ledger) -> None:
    cid, undone = fresh_id(), []
    with pytest.raises(RuntimeError), ledger.critical_section() as txn:
        assert txn.claim_confirmation(claim(cid))
        txn.on_rollback(lambda: undone.append("first"))
        txn.on_rollback(lambda: undone.append("second"))
        raise RuntimeError("the mutation failed")
    assert undone == ["second", "first"]
    assert ledger.consumed_outcome(cid, "alice") is None
    with ledger.critical_section() as txn:
        assert txn.claim_confirmation(claim(cid)), "still usable"


def test_a_receipt_commits_with_its_claim_and_is_read_back_by_its_principal_only(ledger: Ledger) -> None:
    kept, lost = fresh_id(), fresh_id() + "-lost"
    done = {
        "done": True,
        "summary": "“TPS” (tps.md) was moved to the trash",
        "result": {"deleted": ["tps.md"]},
    }
    with ledger.critical_section() as txn:
        assert txn.claim_confirmation(claim(kept))
        txn.record_receipt(kept, done)
    assert ledger.consumed_outcome(kept, "alice") == PriorUse("deleted", done)
    assert ledger.consumed_outcome(kept, "bob") is None
    with ledger.critical_section() as txn:
        assert txn.prior_outcome(kept, "alice") == PriorUse("deleted", done)
    with pytest.raises(RuntimeError), ledger.critical_section() as txn:
        assert txn.claim_confirmation(claim(lost))
        txn.record_receipt(lost, done)
        raise RuntimeError("the mutation failed")
    assert ledger.consumed_outcome(lost, "alice") is None


def test_steps_after_commit_run_only_after_a_commit(ledger: Ledger, caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []
    with pytest.raises(RuntimeError), ledger.critical_section() as txn:
        txn.on_commit(lambda: ran.append("rolled back"))
        raise RuntimeError("the mutation failed")
    with ledger.critical_section() as txn:
        txn.on_commit(lambda: 1 / 0)  # a failing step is logged; the commit stands
        txn.on_commit(lambda: ran.append("committed"))
        assert txn.claim_confirmation(claim(cid := fresh_id()))
    assert ran == ["committed"]
    assert ledger.consumed_outcome(cid, "alice") == PriorUse("deleted")
    assert "a step after COMMIT failed" in caplog.text


def test_the_ledger_id_is_made_with_the_database_and_kept(
    ledger: Ledger, tmp_path: Path, pg: PgDatabase
) -> None:
    identity = ledger.identity
    assert len(identity.ledger_id) == 32 and int(identity.ledger_id, 16) >= 0
    with ledger.critical_section() as txn:
        assert txn.identity == identity
    if identity.kind == "sqlite":
        assert identity.location == str(tmp_path / "ledger.sqlite3")
        again = SqliteLedger(tmp_path / "ledger.sqlite3", components=[FILES_STORE_SCHEMA])
        other = SqliteLedger(tmp_path / "other.sqlite3", components=[FILES_STORE_SCHEMA])
    else:
        assert identity.location == describe_dsn(pg.url)
        again = PostgresLedger(pg.url, components=[FILES_STORE_SCHEMA], connect_timeout=2)
        empty = pg.create()
        upgrader = PostgresLedger(database_url(empty), components=[FILES_STORE_SCHEMA], check_schema=False)
        upgrader.upgrade()
        upgrader.close()
        other = PostgresLedger(database_url(empty), components=[FILES_STORE_SCHEMA], connect_timeout=2)
    try:
        assert again.identity == identity, "reopening the database finds the same ledger"
        assert other.identity.ledger_id != identity.ledger_id, "another database is another ledger"
    finally:
        again.close()
        other.close()


def test_a_version_1_ledger_is_upgraded_keeping_its_claims(tmp_path: Path, pg: PgDatabase) -> None:
    """Step 2 on a ledger made by the previous release: its claims stay, it gets an id, receipts work."""
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.executescript(LEDGER_SCHEMA.sqlite[0])
        conn.execute("CREATE TABLE schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_versions VALUES ('ledger', 1)")
        conn.execute("INSERT INTO confirmations VALUES ('old', 'alice', 'notes_delete', 'deleted', 1, 9e9)")
    empty = pg.create()
    with pg.connect(empty) as conn:
        conn.execute(LEDGER_SCHEMA.postgres[0].encode())
        conn.execute("CREATE TABLE schema_versions (component text PRIMARY KEY, version integer NOT NULL)")
        conn.execute("INSERT INTO schema_versions VALUES ('ledger', 1)")
        conn.execute("INSERT INTO confirmations VALUES ('old', 'alice', 'notes_delete', 'deleted', 1, 9e9)")
    with pytest.raises(SchemaOutOfDate):
        PostgresLedger(database_url(empty), connect_timeout=2)
    upgrader = PostgresLedger(database_url(empty), check_schema=False)
    assert upgrader.upgrade() == {"ledger": 1}
    upgrader.close()
    for upgraded in (SqliteLedger(path), PostgresLedger(database_url(empty), connect_timeout=2)):
        try:
            assert upgraded.consumed_outcome("old", "alice") == PriorUse("deleted")
            assert len(upgraded.identity.ledger_id) == 32
            with upgraded.critical_section() as txn:
                assert txn.claim_confirmation(claim("new"))
                txn.record_receipt("new", {"done": False, "summary": "declined", "result": {}})
            assert upgraded.consumed_outcome("new", "alice") == PriorUse(
                "deleted", {"done": False, "summary": "declined", "result": {}}
            )
        finally:
            upgraded.close()


def test_portable_sql_runs_in_the_transaction(ledger: Ledger) -> None:
    with pytest.raises(RuntimeError), ledger.critical_section() as txn:
        txn.execute(
            "INSERT INTO trash (trash_id, workspace, note_id, title, principal, confirmation_id, deleted_at, "
            "dev, ino, size, mtime_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("t1", "file:///w", "n.md", "N", "alice", "c", 1.0, 1, 2, 3, 4),
        )
        assert txn.execute("SELECT note_id FROM trash WHERE trash_id = ?", ("t1",)) == [("n.md",)]
        raise RuntimeError("roll back")
    with ledger.snapshot() as db:
        assert db.execute("SELECT count(*) FROM trash WHERE trash_id = ?", ("t1",)) == [(0,)]


def test_expired_rows_are_purged_counted_and_logged(ledger: Ledger, caplog: pytest.LogCaptureFixture) -> None:
    early = fresh_id()
    with caplog.at_level(logging.INFO), ledger.critical_section() as txn:
        txn.claim_confirmation(claim(early, expires_in=-5))
    assert ledger.consumed_outcome(early, "alice") is None, "the purge scheduled after a commit removed it"
    record = next(r for r in caplog.records if r.getMessage() == "ledger purged expired confirmations")
    assert record.purged >= 1  # type: ignore[attr-defined]  (a field of the JSON log line)

    expired, live = fresh_id(), fresh_id() + "-live"
    with ledger.critical_section() as txn:  # within the purge interval: nothing is purged on its own
        txn.claim_confirmation(claim(expired, expires_in=-5))
        txn.claim_confirmation(claim(live))
    before = ledger.stats()
    assert before.oldest_expiry is not None and before.oldest_expiry < time.time()
    purged = ledger.purge_expired(time.time())
    assert purged >= 1
    after = ledger.stats()
    assert after.rows == before.rows - purged
    assert after.purged_total == before.purged_total + purged
    assert ledger.consumed_outcome(expired, "alice") is None
    assert ledger.consumed_outcome(live, "alice") == PriorUse("deleted")


def test_postgres_workspace_lock_serializes_writers(pg: PgDatabase) -> None:
    ledger = PostgresLedger(pg.url, components=[FILES_STORE_SCHEMA], check_schema=False)
    ledger.upgrade()
    order: list[str] = []
    holding = threading.Event()

    def first() -> None:
        with ledger.critical_section() as txn:
            txn.lock_workspace("file:///srv/notes/team-a")
            holding.set()
            time.sleep(0.5)
            order.append("first commits")

    def second() -> None:
        holding.wait()
        with ledger.critical_section() as txn:
            txn.lock_workspace("file:///srv/notes/team-b")  # another workspace: no wait
            order.append("other workspace locked")
            txn.lock_workspace("file:///srv/notes/team-a")
            order.append("second locked")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    ledger.close()
    assert order == ["other workspace locked", "first commits", "second locked"]


def test_postgres_refuses_a_schema_that_is_behind(pg: PgDatabase) -> None:
    empty = pg.create()
    with pytest.raises(SchemaOutOfDate) as refused:
        PostgresLedger(database_url(empty), components=[FILES_STORE_SCHEMA])
    message = str(refused.value)
    assert "ledger is at version 0, this notewarden needs 2" in message
    assert "notewarden db upgrade --config FILE" in message
    with pg.connect(empty) as conn:
        assert conn.execute("SELECT to_regclass('confirmations')").fetchone() == (None,), "nothing created"


def test_postgres_unreachable_at_start_says_where_without_the_password() -> None:
    url = f"postgresql://postgres:{SECRET_PASSWORD}@127.0.0.1:1/nowhere"
    with pytest.raises(LedgerUnavailable) as refused:
        PostgresLedger(url, connect_timeout=1)
    assert "postgres@127.0.0.1:1/nowhere" in str(refused.value)
    assert SECRET_PASSWORD not in str(refused.value)
    assert describe_dsn(url) == "postgres@127.0.0.1:1/nowhere"


def test_a_pending_claim_is_a_lease_settled_or_given_back(ledger: Ledger) -> None:
    """ledger.pending: the claim of a step done outside the critical section (notes_publish)."""
    cid, now = fresh_id(), time.time()
    pending = claim(cid, outcome="publishing")
    with ledger.critical_section() as txn:
        lease = claim_pending(txn, pending, now=now, stale_after=60)
    assert lease == now
    with ledger.critical_section() as txn:
        assert claim_pending(txn, pending, now=now + 1, stale_after=60) is None, "in progress: not twice"
        assert txn.prior_outcome(cid, "alice") == PriorUse("publishing")
    with ledger.critical_section() as txn:  # the holder's step failed: the confirmation is usable again
        assert settle_pending(txn, cid, "alice", pending="publishing", lease=now, outcome=None)
    assert ledger.consumed_outcome(cid, "alice") is None
    with ledger.critical_section() as txn:
        lease = claim_pending(txn, pending, now=now + 2, stale_after=60)
    with ledger.critical_section() as txn:
        assert lease is not None
        assert settle_pending(txn, cid, "alice", pending="publishing", lease=lease, outcome="published")
    assert ledger.consumed_outcome(cid, "alice") == PriorUse("published")
    with ledger.critical_section() as txn:
        assert claim_pending(txn, pending, now=now + 999, stale_after=60) is None, "a final outcome stays"


def test_a_stale_pending_claim_is_taken_over_and_its_old_holder_changes_nothing(ledger: Ledger) -> None:
    cid, now = fresh_id(), time.time()
    pending = claim(cid, outcome="publishing")
    with ledger.critical_section() as txn:
        dead = claim_pending(txn, pending, now=now, stale_after=60)
    with ledger.critical_section() as txn:  # the holder died between its step and its record
        taken = claim_pending(txn, pending, now=now + 61, stale_after=60)
    assert dead is not None and taken == now + 61
    with ledger.critical_section() as txn:
        assert not settle_pending(txn, cid, "alice", pending="publishing", lease=dead, outcome=None)
        assert not settle_pending(txn, cid, "bob", pending="publishing", lease=taken, outcome="published")
        assert settle_pending(txn, cid, "alice", pending="publishing", lease=taken, outcome="published")
    assert ledger.consumed_outcome(cid, "alice") == PriorUse("published")
