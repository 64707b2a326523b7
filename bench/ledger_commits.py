"""Ledger commits per second with N threads of one process, each transaction with one fsync.

    .venv/bin/python -m bench.ledger_commits --threads 8

What a confirmed delete's critical section looks like to the SQLite ledger once round 1 is
cheap: a claim, then a durable file step (here one fsync'd line appended to a journal, as the
files store's trash journal does with durability = "full") inside the write lock.
Shows the cost of sibling threads that wait for the lock (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from notewarden.ledger import Claim
from notewarden.ledger.sqlite import SqliteLedger


def commits_per_second(threads: int, per_thread: int) -> tuple[float, float, float]:
    """(commits/s, p50 ms, p99 ms of one transaction from asking for the lock to COMMIT)."""
    folder = Path(tempfile.mkdtemp(prefix="notewarden-ledger-"))
    ledger = SqliteLedger(folder / "ledger.sqlite3")
    start = threading.Barrier(threads + 1)
    latencies: list[float] = []

    def work(worker: int) -> None:
        start.wait()
        for i in range(per_thread):
            asked = time.perf_counter()
            with ledger.critical_section() as txn:
                txn.claim_confirmation(
                    Claim(f"{worker}-{i}", "bench", "notes_delete", "deleted", time.time() + 60)
                )
                fd = os.open(folder / "journal", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, f"intent {worker}-{i}\n".encode())
                    os.fsync(fd)
                finally:
                    os.close(fd)
            latencies.append(time.perf_counter() - asked)

    workers = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    began = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - began
    ledger.close()
    shutil.rmtree(folder, ignore_errors=True)
    latencies.sort()
    return (
        threads * per_thread / elapsed,
        latencies[len(latencies) // 2] * 1000,
        latencies[int(len(latencies) * 0.99)] * 1000,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--per-thread", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    for _ in range(args.repeat):
        rate, p50, p99 = commits_per_second(args.threads, args.per_thread)
        print(
            f"{rate:.0f} commits/s with {args.threads} threads (one fsync per transaction), "
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
