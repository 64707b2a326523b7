"""Fuzz the whole HTTP endpoint of a real server process (seeded; bench/fuzz_http.py runs more cases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.lab import run_fuzz_lab

CASES = 3000
SEED = 20260728


@pytest.mark.timeout(600)
def test_every_fuzzed_request_gets_a_well_formed_answer_and_nothing_changes(tmp_path: Path) -> None:
    outcome = run_fuzz_lab(tmp_path, cases=CASES, seed=SEED)
    report = outcome.report
    print(
        f"\nfuzz: {report.cases} cases, by kind {dict(report.by_kind)}, "
        f"statuses {dict(sorted(report.statuses.items()))}, {report.health_checks} health checks"
    )
    assert report.problems == []
    assert report.cases == CASES
    assert outcome.server_alive
    assert outcome.workspace_unchanged and outcome.private_unchanged
    assert max(report.statuses) < 500
    assert report.statuses[200] > 0 and report.statuses[400] > 0 and report.statuses[401] > 0
    log = outcome.log.read_text()
    assert "Traceback" not in log
