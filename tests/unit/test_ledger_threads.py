"""Threads of one process share the SQLite ledger without tripping over its write lock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from notewarden.ledger import Claim
from notewarden.ledger.sqlite import SqliteLedger

THREADS = 8
CLAIMS_PER_THREAD = 25


def test_concurrent_critical_sections_queue_in_process(tmp_path: Path) -> None:
    # With no busy timeout at all, a thread that found the database locked by a sibling would
    # fail at once with LedgerUnavailable: only the in-process queue lets every claim through.
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3", busy_timeout_ms=0)
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []
    won: list[str] = []

    def claim_many(worker: int) -> None:
        start.wait()
        for i in range(CLAIMS_PER_THREAD):
            cid = f"w{worker}-{i}"
            try:
                with ledger.critical_section() as txn:
                    if txn.claim_confirmation(
                        Claim(cid, "alice", "notes_delete", "deleted", time.time() + 60)
                    ):
                        won.append(cid)
                    time.sleep(0.0005)  # hold the write lock a little, as a real commit does
            except BaseException as exc:
                failures.append(exc)

    threads = [threading.Thread(target=claim_many, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert failures == []
        assert sorted(won) == sorted(f"w{w}-{i}" for w in range(THREADS) for i in range(CLAIMS_PER_THREAD))
        assert ledger.stats().rows == THREADS * CLAIMS_PER_THREAD
    finally:
        ledger.close()


def test_a_replayed_claim_loses_under_concurrency(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3", busy_timeout_ms=0)
    start = threading.Barrier(THREADS)
    results: list[bool] = []

    def claim_same() -> None:
        start.wait()
        with ledger.critical_section() as txn:
            results.append(
                txn.claim_confirmation(Claim("same", "alice", "notes_delete", "deleted", time.time() + 60))
            )

    threads = [threading.Thread(target=claim_same) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert sorted(results) == [False] * (THREADS - 1) + [True]
    finally:
        ledger.close()


def test_generations_of_threads_share_a_bounded_pool(tmp_path: Path) -> None:
    """Threads come and go (anyio retires idle ones): the connections do not multiply with them."""
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3", pool_size=3)
    try:
        for generation in range(5):
            start = threading.Barrier(THREADS)

            def use(worker: int, generation: int = generation, start: threading.Barrier = start) -> None:
                start.wait()
                with ledger.critical_section() as txn:
                    txn.claim_confirmation(
                        Claim(f"g{generation}-{worker}", "alice", "t", "deleted", time.time() + 60)
                    )
                with ledger.snapshot() as db:
                    db.execute("SELECT count(*) FROM confirmations")

            threads = [threading.Thread(target=use, args=(w,)) for w in range(THREADS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert ledger.stats().rows == 5 * THREADS
        assert ledger.pool.opened <= 3
    finally:
        ledger.close()
