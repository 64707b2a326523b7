"""Race note operations against an attacker process swapping a directory for a symlink to outside.

    .venv/bin/python -m bench.race_symlink_swap [--iterations 1000]

For each resolver (openat2, and the O_NOFOLLOW walk) it runs tests/unit/fsroot_cases.py's
`run_symlink_swap_race`: every iteration reads, stats, replaces, quarantines (the delete path),
quarantines with the outside file's identity, and creates under `sub/` while another process
flips `sub` between the real directory and a symlink to `outside/`. An escape is any operation
that touched or returned the outside file, or any change under `outside/`. A naive baseline
(realpath check, then open by name) runs against the same attacker to show the race is real.
Prints a table and writes bench/results/race_symlink_swap.json.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.unit import fsroot_cases as cases

RESULTS = Path(__file__).resolve().parent / "results" / "race_symlink_swap.json"


def run_resolver(resolver: str, iterations: int, pause: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        report = cases.run_symlink_swap_race(
            Path(tmp), force_fallback=resolver == "walk", iterations=iterations, attacker_pause=pause
        )
        elapsed = time.perf_counter() - started
    outside_changed = report.outside_after != report.outside_before
    return {
        "resolver": resolver,
        "iterations": iterations,
        "operations": sum(report.outcomes.values()),
        "swaps": report.swaps,
        "outcomes": dict(sorted(report.outcomes.items())),
        "deletes_ok": report.outcomes.get("quarantine:ok", 0),
        "blocked": cases.outcome_total(report, ":EscapeBlocked"),
        "escapes": len(report.unexpected) + int(outside_changed),
        "unexpected": report.unexpected[:20],
        "seconds": round(elapsed, 2),
    }


def run_naive(iterations: int) -> dict[str, Any]:
    """The EscapeRoute bug: check with realpath, then use the path by name."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        ws, outside = base / "ws", base / "outside"
        (ws / "sub").mkdir(parents=True)
        outside.mkdir()
        (ws / "sub" / "x.md").write_bytes(b"inside")
        (outside / "x.md").write_bytes(b"OUTSIDE")
        escapes = refused = ok = 0
        started = time.perf_counter()
        with cases.SwapAttacker(ws / "sub", ws / "sub_old", outside) as attacker:
            real_ws = os.path.realpath(ws)
            for _ in range(iterations):
                target = ws / "sub" / "x.md"
                try:
                    if os.path.commonpath([real_ws, os.path.realpath(target)]) != real_ws:
                        refused += 1
                        continue
                    data = target.read_bytes()
                except OSError:
                    refused += 1
                    continue
                if data == b"OUTSIDE":
                    escapes += 1
                else:
                    ok += 1
    return {
        "resolver": "naive realpath check",
        "iterations": iterations,
        "operations": iterations,
        "swaps": attacker.swaps,
        "outcomes": {"read:ok": ok, "read:refused": refused, "read:OUTSIDE": escapes},
        "deletes_ok": 0,
        "blocked": refused,
        "escapes": escapes,
        "unexpected": [],
        "seconds": round(time.perf_counter() - started, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--naive-iterations", type=int, default=20000)
    parser.add_argument(
        "--attacker-pause", type=float, default=1e-3, help="max seconds the attacker holds each state"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = [run_resolver(r, args.iterations, args.attacker_pause) for r in ("openat2", "walk")]
    rows.append(run_naive(args.naive_iterations))
    header = f"{'resolver':<22}{'iterations':>11}{'operations':>11}{'swaps':>9}{'deletes ok':>11}{'blocked':>9}{'escapes':>9}{'s':>7}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['resolver']:<22}{r['iterations']:>11}{r['operations']:>11}{r['swaps']:>9}"
            f"{r['deletes_ok']:>11}{r['blocked']:>9}{r['escapes']:>9}{r['seconds']:>7}"
        )
    for r in rows[:2]:
        print(f"{r['resolver']} outcomes: {r['outcomes']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}, indent=2)
        + "\n"
    )
    print(f"wrote {args.out}")
    return 0 if all(r["escapes"] == 0 for r in rows[:2]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
