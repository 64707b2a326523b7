"""Soak the exactly-once race: many more trials than the test suite, on every storage backend.

Each trial is proof 1 of tests/race/test_race.py: a fresh note, round 1, then 8 sender
processes release the same accepted state at once at 3 server processes of one deployment.
A trial is "ok" when exactly one reply deleted the note, the 7 others were
`confirmation_already_used`, the note is in the trash exactly once, and exactly one
confirmation was consumed. Prints a table and writes JSON to bench/results/.

    .venv/bin/python -m bench.soak_race                    # 500 trials per backend
    .venv/bin/python -m bench.soak_race --trials 100 --backends postgres sqlite
    .venv/bin/python -m bench.soak_race --backends postgres --notes 100000   # in a 100k-note workspace

Needs the PostgreSQL service on 127.0.0.1:5432 (./scripts/services); it creates and drops
its own database (nw_issue3_*).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import psycopg
from tests.pg import ADMIN_DSN, PgDatabase
from tests.race.harness import BACKENDS, TrialRecord, deployment, run_race, seed_background
from tests.race.senders import SenderPool

RESULTS = Path(__file__).resolve().parent / "results"


def summarize(backend: str, records: list[TrialRecord], seconds: float) -> dict[str, object]:
    replies: Counter[str] = Counter()
    for record in records:
        for kind, n in record.kinds.items():
            replies[kind if kind in ("deleted", "replay") else "other"] += n
    fire_ms = sorted(r.seconds * 1000 for r in records)
    return {
        "backend": backend,
        "trials": len(records),
        "trials_ok": sum(r.ok for r in records),
        "replies_deleted": replies["deleted"],
        "replies_replay": replies["replay"],
        "replies_other": replies["other"],
        "max_trash_copies": max(r.trash_copies for r in records),
        "race_ms_p50": round(statistics.median(fire_ms), 1),
        "race_ms_p95": round(fire_ms[int(0.95 * (len(fire_ms) - 1))], 1),
        "race_ms_max": round(fire_ms[-1], 1),
        "seconds": round(seconds, 1),
        "failed_trials": [r.trial for r in records if not r.ok][:20],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument(
        "--notes", type=int, default=0, help="other notes in the workspace besides the trials'"
    )
    args = parser.parse_args()

    pg = PgDatabase()
    senders = SenderPool(8)
    rows = []
    try:
        for backend in args.backends:
            with (
                tempfile.TemporaryDirectory(prefix="nw-soak-") as tmp,
                deployment(Path(tmp), backend, pg.name) as d,
            ):
                seed_background(d, args.notes)
                started = time.perf_counter()
                records = run_race(d, senders, args.trials, servers=args.servers)
                rows.append(
                    {**summarize(backend, records, time.perf_counter() - started), "notes": args.notes}
                )
            print(f"{backend}: done", flush=True)
    finally:
        senders.close()
        pg.drop_all()

    header = ["backend", "notes", "trials", "trials_ok", "replies_deleted", "replies_replay", "replies_other",
              "max_trash_copies", "race_ms_p50", "race_ms_p95", "race_ms_max", "seconds"]  # fmt: skip
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in header]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(str(row[h]).ljust(w) for h, w in zip(header, widths, strict=True)))

    with psycopg.connect(ADMIN_DSN) as conn:
        pg_version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
    result = {
        "bench": "soak_race",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "postgres": pg_version,
        },
        "senders": 8,
        "servers": args.servers,
        "results": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"soak_race-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(RESULTS.parent.parent)}")
    return 0 if all(r["trials_ok"] == r["trials"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
