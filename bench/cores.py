"""Throughput against cores and instances on the PostgreSQL store (issue 29): measured, and a model.

    .venv/bin/python -m bench.cores                      # 1 and 2 cores x 1 and 2 instances
    .venv/bin/python -m bench.cores --deletes 200 --database-url postgresql://postgres@127.0.0.1:5432/nw_cores

Every point starts afresh on a database of its own (`run_all.prepare_postgres`: `db upgrade`, then
`notewarden import` of `--notes` + the deletes' notes), then runs 8 workers of confirmed deletes
(`bench.load`, every answer checked: a delete counts only when round 2 says "deleted") with every
process of the run confined to the point's cores with `sched_setaffinity` (taskset): the load
client (this process), the `notewarden serve` instances and the PostgreSQL backends serving the
bench database (pinned as they appear, every 0.2 s; the postmaster and the other databases'
backends are left alone). Measured per confirmed delete: CPU of the servers, of the backends and
of the client (`/proc/<pid>/stat`), the wall time of the ledger's critical section in one process
(`lock_hold`: claim + trash move under the workspace's advisory lock + receipt + COMMIT, measured in
process by `bench.inproc`'s ASGI driver, one delete at a time), and afterwards that every
confirmed delete moved exactly one note (the trash holds as many rows as deletes succeeded, the
ledger as many claimed confirmations).

The model (printed, and in the JSON with each measured point beside its prediction):

    throughput(cores, instances) = min(cores / cpu_total,          every process shares the cores
                                       instances / cpu_server,     one instance runs Python on one core
                                       1 / lock_hold)              one workspace's deletes serialize

with cpu_total = server + backend (+ client, when the client runs on the same machine, as here).
From it, 4, 8 and 16 cores with as many instances as pay (the client elsewhere), and the core
count from which the ledger's lock (one workspace) is the limit.

Writes bench/results/cores.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.data import bench_notes
from bench.load import database_cpu, run_flow
from bench.run_all import RESULTS, drop_database, machine, prepare_postgres
from bench.servers import start_notewarden

__all__ = ["main", "predict"]

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/nw_issue29_cores"


@contextlib.contextmanager
def pinned_backends(database: str, cpus: set[int]) -> Iterator[None]:
    """Confine every PostgreSQL backend serving `database` to `cpus`, as they appear, until the end."""
    stop = threading.Event()

    def pin() -> None:
        while not stop.is_set():
            for pid in database_cpu(database):
                with contextlib.suppress(OSError):
                    if os.sched_getaffinity(pid) != cpus:
                        os.sched_setaffinity(pid, cpus)
            stop.wait(0.2)

    thread = threading.Thread(target=pin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def counted(database_url: str) -> dict[str, int]:
    """Rows in the trash and claimed confirmations, for the exactly-once check."""
    import psycopg

    with psycopg.connect(database_url) as conn:
        trash = conn.execute("SELECT count(*) FROM notes_trash").fetchone()
        claims = conn.execute("SELECT count(*) FROM confirmations").fetchone()
    return {"trash_rows": int(trash[0]) if trash else 0, "claims": int(claims[0]) if claims else 0}


def point(
    work: Path,
    cpus: set[int],
    instances: int,
    *,
    notes: int,
    deletes: int,
    warmup: int,
    workers: int,
    url: str,
) -> dict[str, Any]:
    database = url.rsplit("/", 1)[1]
    tag = f"cores{len(cpus)}x{instances}"
    config = prepare_postgres(work, bench_notes(0, notes + warmup + deletes), tag=tag, database_url=url)
    unpinned = os.sched_getaffinity(0)
    server = start_notewarden(config, instances=instances, cpus=cpus, log_level="warning")
    try:
        os.sched_setaffinity(0, cpus)
        with pinned_backends(database, cpus):
            stats = asyncio.run(
                run_flow(
                    server.target,
                    "delete",
                    list(bench_notes(notes + warmup, deletes)),
                    workers=workers,
                    warmup=list(bench_notes(notes, warmup)),
                    server_pids=server.pids,
                    database=database,
                )
            )
    finally:
        os.sched_setaffinity(0, unpinned)
        server.stop()
    rows = counted(url)
    out = stats.as_dict()
    out["cores"], out["instances"] = len(cpus), instances
    out["exactly_once"] = {
        **rows,
        "deletes_ok": stats.ok + warmup,
        "holds": stats.errors == 0 and rows["trash_rows"] == stats.ok + warmup == rows["claims"],
    }
    return out


async def _lock_hold(url: str, work: Path, *, notes: int, calls: int) -> float:
    """Median wall milliseconds of one confirmed delete's ledger critical section, one at a time."""
    from bench.inproc import _confirmed_delete
    from notewarden.app import build_http_app
    from notewarden.config import load_config
    from notewarden.services import open_services

    resident = list(bench_notes(0, notes + calls + 10))
    config = load_config(prepare_postgres(work, resident, tag="hold", database_url=url))
    services = open_services(config)
    held: list[float] = []
    try:
        ledger = services.ledger
        opened = ledger.critical_section

        @contextlib.contextmanager
        def timed() -> Iterator[Any]:
            began = time.perf_counter()
            with opened() as txn:
                yield txn
            held.append(time.perf_counter() - began)

        ledger.critical_section = timed  # type: ignore[method-assign]
        app, uri = build_http_app(services), str(config.workspaces[0])
        async with app.router.lifespan_context(app):
            for i, note in enumerate(resident[notes : notes + calls + 10]):
                await _confirmed_delete(app, uri, note, 2 * i)
    finally:
        services.close()
    return statistics.median(held[10:]) * 1000


def predict(cores: float, instances: int, cpu: dict[str, float], hold_ms: float, *, client: bool) -> float:
    """Confirmed deletes per second by the model (module docstring)."""
    total = cpu["server"] + cpu["database"] + (cpu["client"] if client else 0.0)
    return min(cores * 1000 / total, instances * 1000 / cpu["server"], 1000 / hold_ms)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--deletes", type=int, default=300, help="timed confirmed deletes per point")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--hold-calls", type=int, default=100, help="deletes timed for the lock hold")
    parser.add_argument(
        "--points",
        default="1x1,1x2,2x1,2x2",
        help="CORESxINSTANCES, comma-separated (the cores: the first CPUs)",
    )
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    available = sorted(os.sched_getaffinity(0))
    try:
        wanted = [(int(c), int(i)) for c, i in (item.split("x") for item in args.points.split(","))]
    except ValueError:
        wanted = []
    if not wanted or any(not (1 <= cores <= len(available)) or instances < 1 for cores, instances in wanted):
        parser.error(
            f"--points: each is CORESxINSTANCES with 1 <= CORES <= {len(available)}, got {args.points!r}"
        )
    started = machine()
    work = Path(tempfile.mkdtemp(prefix="notewarden-cores-"))
    points = []
    try:
        for count, instances in wanted:
            cpus = set(available[:count])
            p = point(
                work / f"{count}-{instances}",
                cpus,
                instances,
                notes=args.notes,
                deletes=args.deletes,
                warmup=args.warmup,
                workers=args.workers,
                url=args.database_url,
            )
            points.append(p)
            e = p["extra"]
            print(
                f"  {count} core(s), {instances} instance(s): {p['per_second']:.1f} deletes/s, "
                f"p50 {p['p50_ms']:.1f} ms; CPU per delete: server {e.get('server_cpu_ms_per_flow')} ms, "
                f"PostgreSQL {e.get('database_cpu_ms_per_flow')} ms, client {e.get('client_cpu_ms_per_flow')} ms; "
                f"exactly once: {p['exactly_once']['holds']}",
                flush=True,
            )
        hold = asyncio.run(
            _lock_hold(args.database_url, work / "hold", notes=args.notes, calls=args.hold_calls)
        )
    finally:
        with contextlib.suppress(Exception):
            drop_database(args.database_url)
        shutil.rmtree(work, ignore_errors=True)
    cpu = {
        key: statistics.median(p["extra"][f"{key}_cpu_ms_per_flow"] for p in points)
        for key in ("server", "database", "client")
    }
    for p in points:
        p["predicted_per_second"] = round(predict(p["cores"], p["instances"], cpu, hold, client=True), 1)
        # what the point's processes got of its cores (a shared machine gives less than all of them)
        own = sum(p["extra"][f"{key}_cpu_ms_per_flow"] for key in ("server", "database", "client"))
        p["cores_obtained"] = round(p["per_second"] * own / 1000, 2)
        p["predicted_at_obtained"] = round(
            predict(p["cores_obtained"], p["instances"], cpu, hold, client=True), 1
        )
    projection = []
    for cores in (1, 2, 4, 8, 16):
        best = max(range(1, 2 * cores + 1), key=lambda n: (predict(cores, n, cpu, hold, client=False), -n))
        rate = predict(cores, best, cpu, hold, client=False)
        limit = "the ledger's lock (one workspace)" if math.isclose(rate, 1000 / hold) else "CPU"
        projection.append({"cores": cores, "instances": best, "per_second": round(rate, 1), "limit": limit})
    lock_from = math.ceil((cpu["server"] + cpu["database"]) / hold)
    print(
        f"\nmedian CPU per confirmed delete: server {cpu['server']:.2f} ms, PostgreSQL {cpu['database']:.2f} ms, "
        f"client {cpu['client']:.2f} ms; ledger critical section (one at a time) {hold:.2f} ms"
    )
    print(f"{'cores':>5} {'inst':>4} {'measured/s':>10} {'model/s':>8} {'cores got':>9} {'model at got':>12}")
    for p in points:
        print(
            f"{p['cores']:>5} {p['instances']:>4} {p['per_second']:>10.1f} {p['predicted_per_second']:>8.1f} "
            f"{p['cores_obtained']:>9.2f} {p['predicted_at_obtained']:>12.1f}"
        )
    print("\nprojection, the client on other machines:")
    for row in projection:
        print(
            f"{row['cores']:>5} cores, {row['instances']:>2} instances: {row['per_second']:>7.1f}/s ({row['limit']})"
        )
    print(f"the ledger's lock on one workspace is the limit from {lock_from} cores on")
    started["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / "cores.json"
    path.write_text(
        json.dumps(
            {
                "command": "python -m bench.cores " + " ".join(argv if argv is not None else sys.argv[1:]),
                "machine": started,
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "cpu_ms_per_delete": cpu,
                "lock_hold_ms": round(hold, 3),
                "points": points,
                "projection": projection,
                "lock_limit_from_cores": lock_from,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
