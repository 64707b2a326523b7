"""The bench harness measures what it claims: every flow against every server, end to end.

Not a timed test: it runs `bench.run_all --smoke` (a few calls of each flow against real
server processes) into a temporary results folder and checks the results are complete and
error-free, and that the load client counts a wrong answer as an error, not a success.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from bench.data import BenchNote, bench_notes
from bench.load import run_flow
from bench.servers import start_baseline

from bench import report, run_all


def test_smoke_run_covers_every_section(tmp_path: Path) -> None:
    results = tmp_path / "results"
    docs = tmp_path / "performance.md"
    docs.write_text(f"# Performance\n\n{report.BEGIN}\nold numbers\n{report.END}\n\nprose stays\n")
    database_url = f"postgresql://postgres@127.0.0.1:5432/nw_issue7_smoke_{os.getpid()}"
    code = run_all.main(
        ["--smoke", "--results-dir", str(results), "--docs", str(docs), "--database-url", database_url]
    )
    assert code == 0

    comparison = json.loads((results / "perf-comparison.json").read_text())
    for name in ("notewarden", "mcpserver", "fastmcp"):
        delete = comparison["rounds"][0][name]["delete"]
        assert delete["ok"] == 6 and delete["errors"] == 0, delete
        assert delete["extra"]["round1_p50_ms"] > 0
    for baseline in ("mcpserver", "fastmcp"):
        assert comparison["rounds"][0][baseline]["read"]["ok"] == 6
        assert comparison["summary"]["delete_throughput_ratio"][baseline]["median"] > 0
    sequential = json.loads((results / "perf-sequential.json").read_text())
    for name in run_all.SEQUENTIAL_SERVERS:  # one client, the servers taking turns on the same notes
        for flow in ("delete", "read"):
            stats = sequential["rounds"][0][name][flow]
            assert (stats["ok"], stats["errors"], stats["workers"]) == (6, 0, 1), stats
        assert sequential["rounds"][0][name]["delete"]["extra"]["round2_p50_ms"] > 0
    assert sequential["summary"]["p50_ratio"]["delete"]["median"] > 0
    scale = json.loads((results / "perf-scale.json").read_text())
    assert [p["notes"] for p in scale["points"]] == [30, 60]
    assert all(p["round1"]["ok"] == 3 and p["round1"]["errors"] == 0 for p in scale["points"])
    postgres_points = scale["postgres"]["points"]  # seeded with `notewarden import`
    assert [p["notes"] for p in postgres_points] == [30, 60]
    assert all(
        p[flow]["ok"] == 3 and p[flow]["errors"] == 0
        for p in postgres_points
        for flow in ("round1", "search")
    )
    instances = json.loads((results / "perf-instances.json").read_text())
    files = instances["stores"]["files+sqlite"]
    assert instances["plan"]["rounds"] == 1 and {k: len(v) for k, v in files["runs"].items()} == {
        "1": 1,
        "2": 1,
    }
    assert all(run["errors"] == 0 and run["ok"] == 6 for runs in files["runs"].values() for run in runs)
    postgres = instances["stores"]["postgres"]
    assert all(run["errors"] == 0 and run["ok"] == 6 for runs in postgres["runs"].values() for run in runs)
    assert instances["postgres_over_files"] > 0
    cost = json.loads((results / "perf-cost.json").read_text())
    assert set(cost["servers"]) == {"notewarden", "mcpserver", "fastmcp"}
    assert all(entry["user_ms"] is not None for entry in cost["servers"].values())

    text = docs.read_text()
    assert "old numbers" not in text and "prose stays" in text
    assert "| notewarden |" in text and "| mcpserver |" in text and "| fastmcp |" in text
    assert "Fixed cost of one confirmed delete" in text and "**Sequential**" in text
    assert (results / report.PLOT).stat().st_size > 1000


def test_a_wrong_answer_is_an_error_not_a_success(tmp_path: Path) -> None:
    server = start_baseline("fastmcp", tmp_path, first=0, count=5)
    try:
        # note 7 is not in the data set: round 1 answers a tool error, not a form
        stats = asyncio.run(run_flow(server.target, "delete", [BenchNote(7), *bench_notes(0, 2)], workers=1))
        assert (stats.ok, stats.errors) == (2, 1)
        assert "round 1" in (stats.first_error or "")
        # deleting the same notes again: they are gone, so nothing may count as a success
        again = asyncio.run(run_flow(server.target, "delete", list(bench_notes(0, 2)), workers=2))
        assert (again.ok, again.errors) == (0, 2)
    finally:
        server.stop()
