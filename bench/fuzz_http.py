"""Fuzz the whole HTTP endpoint of a real server process with more cases than the suite runs.

    .venv/bin/python -m bench.fuzz_http [--cases 10000] [--seeds 1 2 3]

Each seed starts a fresh `notewarden serve --transport http` (sandboxed, static tokens and
OAuth JWTs) and sends `--cases` requests from tests/fuzz/http_cases.py. Prints a table (cases,
statuses, problems, whether the workspace stayed unchanged and the server alive) and writes
bench/results/fuzz_http.json. Exit status 1 if any run found a problem.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.fuzz.lab import run_fuzz_lab

RESULTS = Path(__file__).resolve().parent / "results" / "fuzz_http.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            outcome = run_fuzz_lab(Path(tmp), cases=args.cases, seed=seed)
            log = outcome.log.read_text()
        report = outcome.report
        rows.append(
            {
                "seed": seed,
                "cases": report.cases,
                "by_kind": dict(report.by_kind),
                "statuses": {str(k): v for k, v in sorted(report.statuses.items())},
                "problems": report.problems,
                "workspace_unchanged": outcome.workspace_unchanged and outcome.private_unchanged,
                "server_alive": outcome.server_alive,
                "traceback_in_log": "Traceback" in log,
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    header = f"{'seed':>6}{'cases':>8}{'2xx':>7}{'4xx':>7}{'5xx':>6}{'problems':>10}{'notes same':>12}{'alive':>7}{'s':>7}"
    print(header)
    print("-" * len(header))
    total: Counter[str] = Counter()
    for r in rows:
        statuses = {int(k): v for k, v in r["statuses"].items()}
        two = sum(v for k, v in statuses.items() if k < 300)
        four = sum(v for k, v in statuses.items() if 400 <= k < 500)
        five = sum(v for k, v in statuses.items() if k >= 500)
        total.update(cases=r["cases"], problems=len(r["problems"]), five=five)
        print(
            f"{r['seed']:>6}{r['cases']:>8}{two:>7}{four:>7}{five:>6}{len(r['problems']):>10}"
            f"{r['workspace_unchanged']!s:>12}{r['server_alive']!s:>7}{r['seconds']:>7}"
        )
    print(f"total: {total['cases']} cases, {total['five']} 5xx, {total['problems']} problems")
    for r in rows:
        for problem in r["problems"][:5]:
            print(f"seed {r['seed']}: {problem}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}, indent=2)
        + "\n"
    )
    print(f"wrote {args.out}")
    ok = all(not r["problems"] and r["workspace_unchanged"] and r["server_alive"] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
