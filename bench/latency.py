"""One user's latency (issue 29): notewarden, the MCPServer baseline and the minimal baseline,
side by side in one run, one call at a time and then with 8 workers.

    .venv/bin/python -m bench.latency                    # 3 rounds, quiet (whatever else runs)
    .venv/bin/python -m bench.latency --load 2 --label loaded   # with 2 CPU burners running

Each round starts the three servers afresh on the same data set (`--notes` resident notes), the
client pinned to CPU 0 and every server to CPU 1 (`run_all.side_by_side`: they take turns in
alternating chunks, in an order that rotates by round), and measures:

    sequential   one client, one call at a time: plain reads, then confirmed deletes (p50, p90)
    throughput   8 workers at once: plain reads, then confirmed deletes (calls per second)

The goals of issue 29, each a ratio taken round by round (the table shows the median and the
spread over rounds): notewarden's confirmed-delete p50 against each baseline's (their p50 over
ours, ≥ 1.0); its plain-read p50 over the minimal baseline's (≤ 1.2); its confirmed delete in its
own plain reads (p50 over p50, ≤ 2.3); its 8-worker delete throughput over the best baseline's
(≥ 1.3). `--load N` starts N busy-loop processes on the machine for the run (unpinned, ended at
its end): the "under load" figures. `uptime`'s load average at start and end is recorded.

Writes bench/results/latency-<label>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.run_all import CONTROL, RESULTS, Plan, _median, _round_ratios, _value, machine, side_by_side

__all__ = ["main"]

SERVERS = ("notewarden", "mcpserver", "minimal")
GOALS = {
    "delete_p50_vs_mcpserver": (1.0, True),
    "delete_p50_vs_minimal": (1.0, True),
    "read_p50_over_minimal": (1.2, False),
    "delete_in_reads": (2.3, False),
    "throughput_vs_best_baseline": (1.3, True),
}


@contextlib.contextmanager
def burners(count: int) -> Iterator[None]:
    """`count` processes spinning on the CPU (unpinned) while the block runs."""
    spin = "import time\nwhile True: time.perf_counter()"
    started = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(count)]
    try:
        yield
    finally:
        for process in started:
            process.kill()
            process.wait()


def summarize(
    sequential: list[dict[str, Any]], throughput: list[dict[str, Any]], names: tuple[str, ...] = SERVERS
) -> dict[str, Any]:
    def p50(name: str, flow: str) -> Any:
        return lambda r: _value(r, name, flow, "p50_ms")

    def rate(name: str, flow: str) -> Any:
        return lambda r: _value(r, name, flow, "per_second")

    best = [
        max(r[b]["delete"]["per_second"] or 0 for b in SERVERS[1:]) for r in throughput
    ]  # the best baseline of each round
    ours = [_value(r, "notewarden", "delete", "per_second") or 0 for r in throughput]
    per_round = [o / b for o, b in zip(ours, best, strict=True) if b]
    ratios = {
        "delete_p50_vs_mcpserver": _round_ratios(
            sequential, p50("mcpserver", "delete"), p50("notewarden", "delete")
        ),
        "delete_p50_vs_minimal": _round_ratios(
            sequential, p50("minimal", "delete"), p50("notewarden", "delete")
        ),
        "read_p50_over_minimal": _round_ratios(sequential, p50("notewarden", "read"), p50("minimal", "read")),
        "delete_in_reads": _round_ratios(sequential, p50("notewarden", "delete"), p50("notewarden", "read")),
        "throughput_vs_best_baseline": {
            "median": _median(per_round),
            "min": round(min(per_round), 2) if per_round else None,
            "max": round(max(per_round), 2) if per_round else None,
            "per_round": [round(x, 3) for x in per_round],
        },
        "read_throughput_vs_minimal": _round_ratios(
            throughput, rate("notewarden", "read"), rate("minimal", "read")
        ),
    }
    for name in names:
        ratios[f"{name}_delete_in_reads"] = _round_ratios(sequential, p50(name, "delete"), p50(name, "read"))
    servers = {
        name: {
            "sequential": {
                flow: {
                    key: _median(_value(r, name, flow, key) for r in sequential)
                    for key in ("p50_ms", "p90_ms", "p99_ms", "server_cpu_ms_per_flow", "round1_p50_ms")
                }
                for flow in ("read", "delete")
            },
            "throughput": {
                flow: {
                    key: _median(_value(r, name, flow, key) for r in throughput) for key in ("per_second",)
                }
                for flow in ("read", "delete")
            },
            "errors": int(
                sum(
                    (r[name][f] or {}).get("errors", 0)
                    for r in [*sequential, *throughput]
                    for f in ("read", "delete")
                )
            ),
        }
        for name in names
    }
    if CONTROL in names:  # what a change did: the control's delete p50 over notewarden's
        ratios["delete_p50_vs_control"] = _round_ratios(
            sequential, p50(CONTROL, "delete"), p50("notewarden", "delete")
        )
        ratios["read_p50_vs_control"] = _round_ratios(
            sequential, p50(CONTROL, "read"), p50("notewarden", "read")
        )
        ratios["throughput_vs_control"] = _round_ratios(
            throughput, rate("notewarden", "delete"), rate(CONTROL, "delete")
        )
    return {"servers": servers, "ratios": ratios}


def table(summary: dict[str, Any]) -> str:
    lines = [
        f"{'server':<11} {'read p50':>9} {'delete p50':>11} {'del/read':>8} {'cpu/del':>8} "
        f"{'reads/s x8':>10} {'deletes/s x8':>12} {'errors':>6}"
    ]
    for name, s in summary["servers"].items():
        seq, thr = s["sequential"], s["throughput"]
        ratio = summary["ratios"][f"{name}_delete_in_reads"]["median"]
        lines.append(
            f"{name:<11} {seq['read']['p50_ms'] or 0:>6.2f} ms {seq['delete']['p50_ms'] or 0:>8.2f} ms "
            f"{ratio or 0:>8.2f} {seq['delete']['server_cpu_ms_per_flow'] or 0:>5.2f} ms "
            f"{thr['read']['per_second'] or 0:>10.0f} {thr['delete']['per_second'] or 0:>12.0f} {s['errors']:>6}"
        )
    lines.append("")
    lines.append(f"{'goal (issue 29)':<30} {'median':>7} {'min':>6} {'max':>6}  {'limit':<7} verdict")
    for key, (limit, at_least) in GOALS.items():
        r = summary["ratios"][key]
        met = r["median"] is not None and (r["median"] >= limit if at_least else r["median"] <= limit)
        lines.append(
            f"{key:<30} {r['median'] or 0:>7.2f} {r['min'] or 0:>6.2f} {r['max'] or 0:>6.2f}  "
            f"{('≥ ' if at_least else '≤ ') + str(limit):<7} {'met' if met else 'NOT met'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--notes", type=int, default=1000, help="resident notes in every data set")
    parser.add_argument(
        "--deletes", type=int, default=300, help="sequential confirmed deletes per server per round"
    )
    parser.add_argument("--reads", type=int, default=300, help="sequential reads per server per round")
    parser.add_argument(
        "--throughput-deletes", type=int, default=300, help="8-worker deletes per server per round"
    )
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--load", type=int, default=0, help="CPU burners running during the run")
    parser.add_argument("--label", default="quiet", help="names the result file latency-<label>.json")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument(
        "--control",
        type=Path,
        help="another src/ tree, run as a fourth server in the same turns (`run_all --control`)",
    )
    args = parser.parse_args(argv)
    pinned = (os.cpu_count() or 1) >= 2
    client_cpus, server_cpus = ({0}, {1}) if pinned else (None, None)
    unpinned = os.sched_getaffinity(0)
    started = machine()
    started["pinned"] = {"client": sorted(client_cpus or []), "server": sorted(server_cpus or [])}
    started["burners"] = args.load
    work = Path(tempfile.mkdtemp(prefix="notewarden-latency-"))
    names = (*SERVERS, CONTROL) if args.control else SERVERS
    try:
        with burners(args.load):
            os.sched_setaffinity(0, client_cpus or unpinned)
            seq_plan = Plan(args.notes, args.rounds, 0, 0, 20, 1, (), 0, 0.0, 0)
            print("== sequential (one client, one call at a time)", flush=True)
            sequential, _ = side_by_side(
                seq_plan,
                work / "seq",
                names,
                tag="lseq",
                reads=args.reads,
                deletes=args.deletes,
                chunks=(10, 10),
                workers=1,
                server_cpus=server_cpus,
                baseline_json=True,
                control=args.control,
            )
            print(f"== throughput ({args.workers} workers)", flush=True)
            thr_plan = Plan(args.notes, args.rounds, 0, 0, 20, args.workers, (), 0, 0.0, 0)
            throughput, _ = side_by_side(
                thr_plan,
                work / "thr",
                names,
                tag="lthr",
                reads=3 * args.throughput_deletes,
                deletes=args.throughput_deletes,
                chunks=(150, 50),
                workers=args.workers,
                server_cpus=server_cpus,
                baseline_json=True,
                control=args.control,
            )
    finally:
        os.sched_setaffinity(0, unpinned)
        subprocess.run(["rm", "-rf", str(work)], check=False)
    summary = summarize(sequential, throughput, names)
    print(table(summary), flush=True)
    started["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"latency-{args.label}.json"
    command = "python -m bench.latency " + " ".join(argv if argv is not None else sys.argv[1:])
    import json

    path.write_text(
        json.dumps(
            {
                "section": "latency",
                "command": command,
                "machine": started,
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "plan": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                "summary": summary,
                "sequential": sequential,
                "throughput": throughput,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
