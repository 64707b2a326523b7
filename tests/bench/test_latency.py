"""Issue 29's benches run end to end and check what they count (not timed: no speed is asserted).

`bench.latency` drives notewarden and both MCPServer baselines (bench/baselines/minimal_notes.py
included) one call at a time and with several workers, every answer checked by the load client;
`bench.cores` confines a PostgreSQL deployment to its cores and checks, after each point, that every
confirmed delete moved exactly one note and claimed exactly one confirmation (here one point: two
instances on one core, the load client sending round 2 to the other instance).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from bench import cores, latency


def test_latency_runs_every_server_and_flow(tmp_path: Path) -> None:
    code = latency.main(
        ["--rounds", "1", "--notes", "20", "--deletes", "4", "--reads", "4", "--throughput-deletes", "4",
         "--workers", "2", "--label", "smoke", "--results-dir", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    found = json.loads((tmp_path / "latency-smoke.json").read_text())
    for name in latency.SERVERS:
        for phase, workers, reads in (("sequential", 1, 4), ("throughput", 2, 12)):
            stats = found[phase][0][name]
            assert (stats["read"]["ok"], stats["read"]["errors"], stats["read"]["workers"]) == (
                reads,
                0,
                workers,
            )
            assert (stats["delete"]["ok"], stats["delete"]["errors"]) == (4, 0), stats["delete"]
    assert all(found["summary"]["ratios"][goal]["median"] > 0 for goal in latency.GOALS)
    assert found["machine"]["loadavg_at_end"]


def test_cores_checks_exactly_once_at_every_point(tmp_path: Path) -> None:
    url = f"postgresql://postgres@127.0.0.1:5432/nw_issue29_cores_smoke_{os.getpid()}"
    code = cores.main(
        ["--notes", "20", "--deletes", "6", "--warmup", "2", "--workers", "2", "--hold-calls", "3",
         "--points", "1x2", "--database-url", url, "--results-dir", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    found = json.loads((tmp_path / "cores.json").read_text())
    assert [(p["cores"], p["instances"]) for p in found["points"]] == [(1, 2)]  # round 2 on the other
    for p in found["points"]:
        assert p["ok"] == 6 and p["errors"] == 0, p
        assert p["exactly_once"]["holds"], p["exactly_once"]
        assert p["exactly_once"]["trash_rows"] == p["exactly_once"]["claims"] == 8
    assert found["lock_hold_ms"] > 0 and [r["cores"] for r in found["projection"]] == [1, 2, 4, 8, 16]
