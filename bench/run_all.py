"""Every performance measurement of notewarden in one command (see docs/performance.md).

    .venv/bin/python -m bench.run_all --full      # what docs/performance.md reports
    .venv/bin/python -m bench.run_all --quick     # a smaller run, same shape (a few minutes)
    .venv/bin/python -m bench.run_all --full --only scale

Sections (each writes bench/results/perf-<section>.json; then bench.report prints the tables,
draws the plot and rewrites the numbers in docs/performance.md):

comparison  notewarden vs the MCPServer and FastMCP baselines (bench/baselines/): the same
            data set, the same client; each round starts every server afresh and they take
            turns (reads, then confirmed deletes, N workers); `--control` adds notewarden
            from another src/ tree as a fourth server.
sequential  one client, one call at a time: notewarden and the MCPServer baseline side by side,
            both started on the same data set and driven in alternating chunks of calls
            (latency without queueing); p50/p99 per confirmed delete and per plain read.
scale       notewarden round-1 notes_delete and notes_search at 1k, 10k, 100k notes, one
            worker (latency, not throughput), on the files store and, with a database URL,
            on the PostgreSQL store (seeded with `notewarden import` of the same files).
instances   confirmed deletes on one instance vs two behind a round-robin client (round 2
            lands on the other instance), on the files store + SQLite ledger and on the
            PostgreSQL store (seeded with `notewarden import`).
cost        the fixed cost of one confirmed delete without the network, out of the comparison's
            resident notes: each server's ASGI app driven in process (bench/inproc.py), CPU user and
            system, and instructions under valgrind when it is installed
            (bench/instructions.py): numbers that other load hardly moves.

The baselines run in the SDK's JSON-response mode (`--no-baseline-json`: their default,
SSE-capable mode, which is slower): each is measured in its best configuration.
With `--pin` (the default on machines with 2 or more CPUs) the client runs on CPU 0 and
the server under test on CPU 1 for `comparison` and `scale` (`cost` runs on CPU 1);
`instances` runs unpinned.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx2

from bench.data import BenchNote, bench_notes, write_workspace
from bench.load import FlowError, run_flow, run_interleaved, tools_of
from bench.servers import (
    BASELINES,
    REPO,
    Running,
    StartFailed,
    prepare_notewarden,
    start_baseline,
    start_notewarden,
    workspace_of,
)

RESULTS = Path(__file__).resolve().parent / "results"
SERVERS = ("notewarden", *BASELINES)
CONTROL = "control"  # `--control`: notewarden from another src/ tree, in the comparison's turns
SEQUENTIAL_SERVERS = ("notewarden", "mcpserver")  # the baseline the sequential goal names
SECTIONS = ("comparison", "sequential", "scale", "instances", "cost")
DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/nw_issue7_bench"


@dataclass(frozen=True)
class Plan:
    notes: int  # resident notes in every comparison data set
    rounds: int
    deletes: int  # timed confirmed deletes per server per round
    reads: int  # timed reads per server per round
    warmup: int
    workers: int
    sizes: tuple[int, ...]
    scale_calls: int
    scale_seconds: float
    instance_deletes: int
    sequential_deletes: int = 300  # per server per round, one call at a time
    sequential_reads: int = 300
    sequential_chunk: int = 10  # calls per turn before the other server's turn
    comparison_chunk: int = 50  # confirmed deletes per turn with `workers` at once (reads: 3x)
    cost_calls: int = 300
    cost_runs: int = 3
    cost_instructions: bool = True  # under valgrind, when it is installed (~1 min per server)
    instance_rounds: int = 2  # each store with 1 and with 2 instances, this many times


QUICK = Plan(1000, 2, 150, 400, 20, 8, (1000, 10_000), 30, 20.0, 150, sequential_deletes=150)
FULL = Plan(1000, 5, 400, 1500, 30, 8, (1000, 10_000, 100_000), 100, 60.0, 400)
# a few calls of everything, no valgrind: checks the harness end to end (tests/bench)
SMOKE = Plan(
    20, 1, 6, 6, 2, 2, (30, 60), 3, 10.0, 6,
    sequential_deletes=6, sequential_reads=6, sequential_chunk=3, comparison_chunk=3,
    cost_calls=5, cost_runs=1, cost_instructions=False, instance_rounds=1,
)  # fmt: skip


def machine() -> dict[str, Any]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory_kib = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    versions = {}
    for package in ("mcp", "fastmcp", "uvicorn", "starlette", "pydantic", "httpx2"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": round(memory_kib / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "versions": versions,
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def measure(
    server: Running,
    flow: str,
    notes: Sequence[BenchNote],
    *,
    workers: int,
    warmup: Sequence[BenchNote] = (),
    max_seconds: float | None = None,
    database: str | None = None,
) -> dict[str, Any]:
    """The flow's stats; a warm-up that fails is recorded (with the server's log) instead of raised."""
    try:
        stats = asyncio.run(
            run_flow(
                server.target,
                flow,
                notes,
                workers=workers,
                warmup=warmup,
                max_seconds=max_seconds,
                server_pids=server.pids,
                database=database,
            )
        )
    except (FlowError, httpx2.HTTPError) as exc:
        errors = [line for log in server.logs for line in log.read_text(errors="replace").splitlines()]
        errors = [line for line in errors if '"level": "error"' in line or "Traceback" in line]
        print(f"  {server.target.name} {flow}: the warm-up failed: {exc}", flush=True)
        for line in errors[-5:]:
            print(f"    server: {line[:300]} … {line[-1500:]}", flush=True)
        return {
            "target": server.target.name,
            "flow": flow,
            "workers": workers,
            "ok": 0,
            "errors": 1,
            "first_error": f"warm-up: {exc}",
            "server_errors": [line[:4000] for line in errors[-5:]],
            "per_second": None,
            "p50_ms": None,
            "p90_ms": None,
            "p99_ms": None,
            "extra": {},
        }
    return stats.as_dict()


def listed_tools(server: Running) -> set[str]:
    return asyncio.run(tools_of(server.target))


def pin_self(cpus: set[int] | None, unpinned: set[int]) -> None:
    os.sched_setaffinity(0, cpus or unpinned)


# --- comparison ----------------------------------------------------------------------------------


def start_server(
    name: str,
    work: Path,
    first: int,
    count: int,
    *,
    cpus: set[int] | None,
    tag: str,
    baseline_json: bool,
    control: Path | None = None,
) -> Running:
    if name == "notewarden":
        config = prepare_notewarden(work, bench_notes(first, count), tag=tag)
        return start_notewarden(config, cpus=cpus)
    if name == CONTROL:  # notewarden from another src/ tree, on a data set of its own
        config = prepare_notewarden(work, bench_notes(first, count), tag=f"{tag}-control")
        return start_notewarden(
            config, name=CONTROL, cpus=cpus, launcher=["env", f"PYTHONPATH={control}:{REPO}"]
        )
    return start_baseline(name, work, first=first, count=count, cpus=cpus, json_response=baseline_json)


def side_by_side(
    plan: Plan,
    work: Path,
    names: Sequence[str],
    *,
    tag: str,
    reads: int,
    deletes: int,
    chunks: tuple[int, int],
    workers: int,
    server_cpus: set[int] | None,
    baseline_json: bool,
    control: Path | None = None,
) -> tuple[list[dict[str, dict[str, Any]]], dict[str, list[str]]]:
    """The rounds of a section that runs `names` side by side: each round starts them afresh, each on
    its own copy of the data set, in an order that rotates by round; they then take turns
    (`load.run_interleaved`), reads first (servers that list `notes_read`), then confirmed
    deletes, `chunks` = (reads, deletes) a turn. Returns the rounds and each server's tools."""
    work.mkdir(parents=True, exist_ok=True)
    total = plan.notes + plan.warmup + deletes
    rounds: list[dict[str, dict[str, Any]]] = []
    tools: dict[str, list[str]] = {}
    for r in range(plan.rounds):
        order = [*names[r % len(names) :], *names[: r % len(names)]]
        running: list[Running] = []
        try:
            for name in order:
                running.append(
                    start_server(
                        name,
                        work,
                        0,
                        total,
                        cpus=server_cpus,
                        tag=f"{tag}{r}",
                        baseline_json=baseline_json,
                        control=control,
                    )
                )
            for server in running:
                tools[server.target.name] = sorted(listed_tools(server))
            pids = {server.target.name: server.pids for server in running}
            readers = [s.target for s in running if "notes_read" in tools[s.target.name]]
            readable = itertools.cycle(range(max(1, plan.notes)))
            read_notes = [BenchNote(next(readable)) for _ in range(reads)]
            warm = [BenchNote(next(readable)) for _ in range(plan.warmup)]
            read = asyncio.run(
                run_interleaved(
                    readers,
                    "read",
                    read_notes,
                    warmup=warm,
                    chunk=chunks[0],
                    workers=workers,
                    server_pids=pids,
                )
            )
            warm = list(bench_notes(plan.notes, plan.warmup))
            delete_notes = list(bench_notes(plan.notes + plan.warmup, deletes))
            delete = asyncio.run(
                run_interleaved(
                    [s.target for s in running],
                    "delete",
                    delete_notes,
                    warmup=warm,
                    chunk=chunks[1],
                    workers=workers,
                    server_pids=pids,
                )
            )
        finally:
            for server in running:
                server.stop()
        this_round = {
            name: {"read": read[name].as_dict() if name in read else None, "delete": delete[name].as_dict()}
            for name in names
        }
        rounds.append(this_round)
        for name in names:
            print(f"  round {r + 1}/{plan.rounds} {name:<10} " + _brief(this_round[name]), flush=True)
    return rounds, tools


def _plan_of(plan: Plan, deletes: int, reads: int, baseline_json: bool) -> dict[str, Any]:
    """The plan entries the side-by-side sections share."""
    total = plan.notes + plan.warmup + deletes
    return {
        "resident_notes": plan.notes,
        "data_size": f"{total} notes at the start of a round, {plan.notes} at its end",
        "rounds": plan.rounds,
        "deletes_per_round": deletes,
        "reads_per_round": reads,
        "warmup": plan.warmup,
        "baseline_response_mode": "json" if baseline_json else "sse-capable (SDK default)",
    }


def comparison(
    plan: Plan,
    work: Path,
    *,
    server_cpus: set[int] | None,
    baseline_json: bool = True,
    control: Path | None = None,
) -> dict[str, Any]:
    """`workers` clients at once against each server, the three side by side (`side_by_side`,
    `comparison_chunk` confirmed deletes a turn). With `control` (another src/ tree), a fourth
    server runs that notewarden in the same turns: what a change did, measured on the same
    machine in the same seconds."""
    names = (*SERVERS, CONTROL) if control is not None else SERVERS
    rounds, tools = side_by_side(
        plan,
        work,
        names,
        tag="cmp",
        reads=plan.reads,
        deletes=plan.deletes,
        chunks=(plan.comparison_chunk * 3, plan.comparison_chunk),
        workers=plan.workers,
        server_cpus=server_cpus,
        baseline_json=baseline_json,
        control=control,
    )
    return {
        "plan": {
            **_plan_of(plan, plan.deletes, plan.reads, baseline_json),
            "chunk": {"delete": plan.comparison_chunk, "read": plan.comparison_chunk * 3},
            "workers": plan.workers,
            "control": str(control) if control is not None else None,
        },
        "tools": tools,
        "rounds": rounds,
        "summary": summarize_comparison(rounds),
    }


def _brief(stats: dict[str, Any]) -> str:
    parts = []
    for flow, s in stats.items():
        if s is None:
            parts.append(f"{flow}: n/a")
        else:
            parts.append(
                f"{flow}: {s['per_second']:.1f}/s p50 {s['p50_ms']:.1f} ms"
                + (f" ERRORS {s['errors']}" if s["errors"] else "")
            )
    return "; ".join(parts)


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 2) if present else None


def _value(r: dict[str, dict[str, Any]], name: str, flow: str, key: str) -> float | None:
    """One number of one round's stats (top level or `extra`); None when absent."""
    stats = r[name][flow]
    if stats is None:
        return None
    found = stats.get(key, stats["extra"].get(key))
    return None if found is None else float(found)


def _round_ratios(
    rounds: Sequence[dict[str, dict[str, Any]]],
    top: Callable[[dict[str, Any]], float | None],
    bottom: Callable[[dict[str, Any]], float | None],
) -> dict[str, Any]:
    """top ÷ bottom in each round where both were measured; their median, min and max."""
    per_round = [t / b for r in rounds if (t := top(r)) and (b := bottom(r))]
    return {
        "median": _median(per_round),
        "min": round(min(per_round), 2) if per_round else None,
        "max": round(max(per_round), 2) if per_round else None,
        "per_round": [round(x, 3) for x in per_round],
    }


def summarize_comparison(rounds: Sequence[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Medians over rounds, and notewarden's ratios to each baseline taken round by round."""

    def median_of(name: str, flow: str, key: str) -> float | None:
        return _median(_value(r, name, flow, key) for r in rounds)

    ratios = functools.partial(_round_ratios, rounds)

    servers: dict[str, Any] = {}
    for name in rounds[0]:
        entry: dict[str, Any] = {}
        for flow in ("delete", "read"):
            if all(r[name][flow] is None for r in rounds):
                entry[flow] = None
                continue
            keys = [
                "per_second",
                "p50_ms",
                "p90_ms",
                "p99_ms",
                "server_cpu_ms_per_flow",
                "client_cpu_ms_per_flow",
            ]
            if flow == "delete":
                keys += ["round1_p50_ms", "round2_p50_ms"]
            entry[flow] = {key: median_of(name, flow, key) for key in keys}
            entry[flow]["errors"] = int(sum(_value(r, name, flow, "errors") or 0 for r in rounds))
        # a confirmed delete in plain reads on the same server: by throughput and by server CPU
        entry["delete_cost_in_reads"] = ratios(
            lambda r, n=name: _value(r, n, "read", "per_second"),
            lambda r, n=name: _value(r, n, "delete", "per_second"),
        )["median"]
        entry["delete_cpu_in_reads"] = ratios(
            lambda r, n=name: _value(r, n, "delete", "server_cpu_ms_per_flow"),
            lambda r, n=name: _value(r, n, "read", "server_cpu_ms_per_flow"),
        )["median"]
        servers[name] = entry
    baselines = [b for b in BASELINES if servers[b]["delete"]]
    faster = max(baselines, key=lambda b: servers[b]["delete"]["per_second"] or 0) if baselines else None
    others = [*baselines, *([CONTROL] if CONTROL in servers and servers[CONTROL]["delete"] else [])]
    return {
        "servers": servers,
        "faster_baseline": faster,
        "delete_throughput_ratio": {
            b: ratios(
                lambda r: _value(r, "notewarden", "delete", "per_second"),
                lambda r, b=b: _value(r, b, "delete", "per_second"),
            )
            for b in others
        },
        # the same comparison by server CPU per confirmed delete (baseline CPU / notewarden CPU)
        "delete_cpu_ratio": {
            b: ratios(
                lambda r, b=b: _value(r, b, "delete", "server_cpu_ms_per_flow"),
                lambda r: _value(r, "notewarden", "delete", "server_cpu_ms_per_flow"),
            )
            for b in others
        },
    }


# --- sequential ----------------------------------------------------------------------------------


def sequential(
    plan: Plan, work: Path, *, server_cpus: set[int] | None, baseline_json: bool = True
) -> dict[str, Any]:
    """One client, one call at a time, notewarden and MCPServer side by side (`side_by_side`,
    `sequential_chunk` calls a turn), so both are measured under the same load."""
    rounds, _ = side_by_side(
        plan,
        work,
        SEQUENTIAL_SERVERS,
        tag="seq",
        reads=plan.sequential_reads,
        deletes=plan.sequential_deletes,
        chunks=(plan.sequential_chunk, plan.sequential_chunk),
        workers=1,
        server_cpus=server_cpus,
        baseline_json=baseline_json,
    )
    return {
        "plan": {
            **_plan_of(plan, plan.sequential_deletes, plan.sequential_reads, baseline_json),
            "chunk": plan.sequential_chunk,
        },
        "rounds": rounds,
        "summary": summarize_sequential(rounds),
    }


def summarize_sequential(rounds: Sequence[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Medians over rounds; the baseline's p50 over notewarden's, round by round (> 1: notewarden
    answers sooner), and a confirmed delete's p50 in plain reads' p50 on the same server."""
    keys = ("p50_ms", "p90_ms", "p99_ms", "round1_p50_ms", "round2_p50_ms", "server_cpu_ms_per_flow")

    per_round = functools.partial(_round_ratios, rounds)

    servers: dict[str, Any] = {}
    for name in SEQUENTIAL_SERVERS:
        entry: dict[str, Any] = {}
        for flow in ("delete", "read"):
            entry[flow] = {key: _median(_value(r, name, flow, key) for r in rounds) for key in keys}
            entry[flow]["errors"] = int(sum(r[name][flow]["errors"] for r in rounds))
        entry["delete_p50_in_reads"] = per_round(
            lambda r, n=name: _value(r, n, "delete", "p50_ms"),
            lambda r, n=name: _value(r, n, "read", "p50_ms"),
        )["median"]
        servers[name] = entry
    baseline = SEQUENTIAL_SERVERS[1]
    return {
        "servers": servers,
        "baseline": baseline,
        "p50_ratio": {
            flow: per_round(
                lambda r, f=flow: _value(r, baseline, f, "p50_ms"),
                lambda r, f=flow: _value(r, "notewarden", f, "p50_ms"),
            )
            for flow in ("delete", "read")
        },
    }


# --- scale ---------------------------------------------------------------------------------------


def spread(size: int, count: int) -> list[BenchNote]:
    """`count` notes spread evenly over a workspace of `size` notes."""
    step = max(1, size // count)
    return [BenchNote((i * step) % size) for i in range(count)]


def scale(
    plan: Plan, work: Path, *, server_cpus: set[int] | None, database_url: str | None = None
) -> dict[str, Any]:
    """The files store's points (`points`), and the PostgreSQL store's (`postgres`) when a database
    URL is given: the same notes, the same calls."""
    data: dict[str, Any] = {
        "plan": {
            "sizes": list(plan.sizes),
            "calls": plan.scale_calls,
            "max_seconds": plan.scale_seconds,
            "workers": 1,
        },
    }
    for store in ("files", *(("postgres",) if database_url else ())):
        try:
            points = [scale_point(plan, work, size, store, server_cpus, database_url) for size in plan.sizes]
        except StartFailed as exc:
            data[store] = {"unavailable": str(exc)}
            print(f"  {store}: n/a: {exc}", flush=True)
            continue
        entry = {"points": points, "summary": summarize_scale(points)}
        if store == "files":
            data.update(entry)
        else:
            data[store] = entry
    if database_url:
        drop_database(database_url)
    return data


def scale_point(
    plan: Plan, work: Path, size: int, store: str, server_cpus: set[int] | None, database_url: str | None
) -> dict[str, Any]:
    tag = f"scale-{store}-{size}"
    workspace_root = work / "scale"
    if workspace_root.exists():
        shutil.rmtree(workspace_root)
    workspace_root.mkdir(parents=True)
    started = time.perf_counter()
    if store == "files":
        config = prepare_notewarden(workspace_root, bench_notes(0, size), tag=tag)
    else:
        config = prepare_postgres(
            workspace_root, bench_notes(0, size), tag=tag, database_url=database_url or ""
        )
    written = round(time.perf_counter() - started, 1)
    server = start_notewarden(config, cpus=server_cpus)
    point: dict[str, Any] = {"notes": size, "seconds_to_write_workspace": written}
    try:
        listed = listed_tools(server)
        calls = spread(size, plan.scale_calls)
        for flow, tool in (("round1", "notes_delete"), ("search", "notes_search")):
            point[flow] = None
            if tool in listed:
                point[flow] = measure(
                    server,
                    flow,
                    calls,
                    workers=1,
                    warmup=[BenchNote(size - 1)],
                    max_seconds=plan.scale_seconds,
                )
    finally:
        server.stop()
        shutil.rmtree(workspace_root)
    print(
        f"  {store:<8} {size:>7} notes (written in {written} s)  "
        + "; ".join(
            f"{flow}: "
            + (
                "n/a"
                if point[flow] is None or point[flow]["p50_ms"] is None
                else f"p50 {point[flow]['p50_ms']:.1f} ms ({point[flow]['ok']} calls)"
            )
            for flow in ("round1", "search")
        ),
        flush=True,
    )
    return point


def summarize_scale(points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    by_size = {p["notes"]: p for p in points}
    out: dict[str, Any] = {}
    for flow in ("round1", "search"):
        small, large = by_size.get(min(by_size)), by_size.get(max(by_size))
        if small is large or any(not p[flow] or p[flow]["p50_ms"] is None for p in (small, large)):
            out[flow] = None
            continue
        out[flow] = {
            "from_notes": small["notes"],
            "to_notes": large["notes"],
            "p50_ratio": round(large[flow]["p50_ms"] / small[flow]["p50_ms"], 2),
        }
    return out


# --- instances -----------------------------------------------------------------------------------


def postgres_storage(database_url: str) -> dict[str, str]:
    return {"notes": "postgres", "ledger": "postgres", "database_url": database_url}


def reset_database(database_url: str) -> None:
    import psycopg

    base, name = database_url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(database_url: str) -> None:
    import psycopg

    base, name = database_url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def prepare_postgres(work: Path, notes: Iterable[BenchNote], *, tag: str, database_url: str) -> Path:
    """A fresh database holding `notes`, as a team gets there: `db upgrade`, then `notewarden import`
    of the same markdown files the files store is measured on. Returns the config."""
    storage = postgres_storage(database_url)
    reset_database(database_url)
    config = prepare_notewarden(work, iter(()), tag=tag, storage=storage)
    folder = work / f"import-{tag}"
    write_workspace(folder, iter(notes))
    for command in (
        ["db", "upgrade", "--config", str(config)],
        ["import", str(folder), "--config", str(config), "--workspace", workspace_of(config),
         "--state-dir", str(work / f"import-state-{tag}")],
    ):  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "notewarden", *command], capture_output=True, text=True)
        if done.returncode != 0:
            raise StartFailed(f"notewarden {command[0]} failed: {(done.stderr or done.stdout)[-400:]}")
    shutil.rmtree(folder)
    return config


def instances(plan: Plan, work: Path, *, database_url: str | None) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    stores: dict[str, dict[str, str] | None] = {"files+sqlite": None}
    if database_url:
        stores["postgres"] = postgres_storage(database_url)
    total = plan.notes + plan.warmup + plan.instance_deletes
    out: dict[str, Any] = {
        "plan": {
            "resident_notes": plan.notes,
            "deletes": plan.instance_deletes,
            "workers": plan.workers,
            "rounds": plan.instance_rounds,
        },
        "stores": {},
    }
    for store, storage in stores.items():
        results: dict[str, list[dict[str, Any]]] = {"1": [], "2": []}
        unavailable = None
        for r, count in itertools.product(range(plan.instance_rounds), (1, 2)):
            tag = f"inst-{store}-{r}-{count}".replace("+", "")
            try:
                if storage is None:
                    config = prepare_notewarden(work, bench_notes(0, total), tag=tag)
                else:
                    config = prepare_postgres(
                        work, bench_notes(0, total), tag=tag, database_url=database_url or ""
                    )
                server = start_notewarden(config, instances=count, name=f"notewarden x{count}")
            except StartFailed as exc:
                unavailable = f"the server does not start with this storage: {exc}"
                break
            try:
                warm = list(bench_notes(plan.notes, plan.warmup))
                deletes = list(bench_notes(plan.notes + plan.warmup, plan.instance_deletes))
                database = (database_url or "").rsplit("/", 1)[1] if storage is not None else None
                stats = measure(
                    server, "delete", deletes, workers=plan.workers, warmup=warm, database=database
                )
            finally:
                server.stop()
            results[str(count)].append(stats)
            print(f"  {store:<13} {count} instance(s): {_brief({'delete': stats})}", flush=True)
        if unavailable:
            out["stores"][store] = {"unavailable": unavailable}
            print(f"  {store:<13} n/a: {unavailable}", flush=True)
            continue
        one = _median(s["per_second"] for s in results["1"])
        two = _median(s["per_second"] for s in results["2"])
        out["stores"][store] = {
            "runs": results,
            "one_per_second": one,
            "two_per_second": two,
            "two_over_one": round(two / one, 2) if one and two else None,
            "p50_ms": {
                "1": _median(s["p50_ms"] for s in results["1"]),
                "2": _median(s["p50_ms"] for s in results["2"]),
            },
            **{
                key: {n: _median(s["extra"].get(key) for s in results[n]) for n in ("1", "2")}
                for key in (
                    "server_cpu_ms_per_flow",
                    "database_cpu_ms_per_flow",
                    "client_cpu_ms_per_flow",
                    "machine_cpu_ms_per_flow",
                )
            },
        }
    files, pg = out["stores"].get("files+sqlite", {}), out["stores"].get("postgres", {})
    if files.get("one_per_second") and pg.get("one_per_second"):
        out["postgres_over_files"] = round(pg["one_per_second"] / files["one_per_second"], 2)
    if database_url:
        drop_database(database_url)
    return out


# --- cost ----------------------------------------------------------------------------------------


def cost(plan: Plan) -> dict[str, Any]:
    """The fixed cost of a confirmed delete, in process, each out of `plan.notes` resident notes
    (bench/inproc.py)."""
    from bench import instructions

    has_valgrind = plan.cost_instructions and shutil.which("valgrind") is not None
    servers: dict[str, Any] = {}
    for name in SERVERS:
        runs = []
        for _ in range(plan.cost_runs):
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bench.inproc",
                    "--server",
                    name,
                    "--calls",
                    str(plan.cost_calls),
                    "--notes",
                    str(plan.notes),
                    "--json",
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        entry: dict[str, Any] = {
            "user_ms": _median(r["user_ms"] for r in runs),
            "system_ms": _median(r["system_ms"] for r in runs),
            "runs": runs,
            "instructions_millions": None,
        }
        if has_valgrind:
            entry["instructions_millions"] = round(instructions.per_delete(name) / 1e6, 2)
        servers[name] = entry
        print(
            f"  {name:<10} CPU {entry['user_ms']} ms user + {entry['system_ms']} ms system; "
            f"instructions {entry['instructions_millions'] or 'n/a (no valgrind)'} M",
            flush=True,
        )
    return {
        "plan": {
            "calls": plan.cost_calls,
            "runs": plan.cost_runs,
            "resident_notes": plan.notes,
            "instructions": has_valgrind,
        },
        "servers": servers,
    }


# --- main ----------------------------------------------------------------------------------------


def write_result(
    results: Path, section: str, data: dict[str, Any], *, command: str, started: dict[str, Any]
) -> Path:
    results.mkdir(parents=True, exist_ok=True)
    started = dict(started, loadavg_at_end=[round(x, 2) for x in os.getloadavg()])
    path = results / f"perf-{section}.json"
    path.write_text(
        json.dumps(
            {
                "section": section,
                "command": command,
                "machine": started,
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **data,
            },
            indent=2,
        )
        + "\n"
    )
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer rounds and calls, sizes 1k and 10k")
    size.add_argument("--full", action="store_true", help="the documented run (default)")
    size.add_argument("--smoke", action="store_true", help="a few calls of everything: checks the harness")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--notes", type=int, help="resident notes in the comparison data set")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--sizes", help="comma-separated workspace sizes for the scale section")
    parser.add_argument("--pin", action=argparse.BooleanOptionalAction, default=(os.cpu_count() or 1) >= 2)
    parser.add_argument(
        "--baseline-json",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the baselines in the SDK's JSON-response mode, their faster one (default)",
    )
    parser.add_argument(
        "--control",
        type=Path,
        help="another src/ tree (`git archive <commit> src | tar -x -C /tmp/c` gives /tmp/c/src), run as "
        "a fourth server in the comparison's turns: what a change did, in the same run",
    )
    parser.add_argument(
        "--database-url", default=DEFAULT_DATABASE_URL, help="PostgreSQL for `instances` ('' to skip)"
    )
    parser.add_argument("--work-dir", help="where data sets are written (default: a temp dir, removed after)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument("--docs", type=Path, help="the page whose results block is rewritten")
    parser.add_argument("--no-report", action="store_true", help="do not print tables, plot or rewrite docs")
    args = parser.parse_args(argv)

    plan = QUICK if args.quick else SMOKE if args.smoke else FULL
    overrides = {
        k: v for k, v in {"notes": args.notes, "rounds": args.rounds, "workers": args.workers}.items() if v
    }
    if args.sizes:
        overrides["sizes"] = tuple(int(s) for s in args.sizes.split(","))
    plan = Plan(**{**plan.__dict__, **overrides})
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    command = "python -m bench.run_all " + " ".join(argv if argv is not None else sys.argv[1:])
    client_cpus, server_cpus = ({0}, {1}) if args.pin else (None, None)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="notewarden-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    # Restored at the end: tests/bench runs main() in the pytest process, whose later tests (the
    # symlink-swap race) need both CPUs.
    unpinned = os.sched_getaffinity(0)
    try:
        for section in sections:
            print(f"== {section}", flush=True)
            started = machine()
            started["pinned"] = (
                {"client": sorted(client_cpus or []), "server": sorted(server_cpus or [])}
                if section != "instances"
                else None
            )
            if section == "comparison":
                pin_self(client_cpus, unpinned)
                data = comparison(
                    plan,
                    work / "comparison",
                    server_cpus=server_cpus,
                    baseline_json=args.baseline_json,
                    control=args.control,
                )
            elif section == "sequential":
                pin_self(client_cpus, unpinned)
                data = sequential(
                    plan, work / "sequential", server_cpus=server_cpus, baseline_json=args.baseline_json
                )
            elif section == "scale":
                pin_self(client_cpus, unpinned)
                data = scale(plan, work, server_cpus=server_cpus, database_url=args.database_url or None)
            elif section == "instances":
                pin_self(None, unpinned)
                data = instances(plan, work / "instances", database_url=args.database_url or None)
            else:
                pin_self(server_cpus, unpinned)
                started["pinned"] = {"in_process": sorted(server_cpus or [])}
                data = cost(plan)
            path = write_result(args.results_dir, section, data, command=command, started=started)
            print(f"   wrote {path}", flush=True)
    finally:
        os.sched_setaffinity(0, unpinned)
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    if not args.no_report:
        from bench import report

        report.main(
            ["--results-dir", str(args.results_dir), *(["--docs", str(args.docs)] if args.docs else [])]
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
