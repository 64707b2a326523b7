"""Proof 1: the same accepted state sent by 8 processes at once commits exactly once.

Why this shape: the racing *senders* are 8 separate OS processes (spawned once, released
together at a `multiprocessing.Barrier` for each trial, each holding a warm keep-alive
connection), and they send to 3 separate server processes of one deployment, so the race
is decided where it must be: in the shared database (SQLite file lock / PostgreSQL row
lock), not inside one Python process. Spawning 8 fresh processes per trial would spend the
time budget on interpreter start-up without racing any harder.

Each trial gets its own note and its own round 1. Per trial, exactly one reply is
`complete` with the note deleted, the other seven are `confirmation_already_used`, the note
is gone from the workspace, its trash holds it exactly once (one folder entry or one row,
one committed trash row) and exactly one confirmation was consumed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg import PgDatabase
from tests.race.harness import BACKENDS, deployment, run_race
from tests.race.senders import SenderPool

TRIALS = 50


@pytest.fixture(scope="module")
def senders() -> Iterator[SenderPool]:
    pool = SenderPool(8)
    yield pool
    pool.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_eight_processes_race_the_same_accepted_state(
    tmp_path: Path, pg: PgDatabase, senders: SenderPool, backend: str
) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        records = run_race(d, senders, TRIALS)
        logs = d.logs()
    outcomes = Counter(kind for r in records for kind, n in r.kinds.items() for _ in range(n))
    failures = [r for r in records if not r.ok]
    print(
        f"\nrace {backend}: {len(records)} trials x 8 senders over 3 servers; replies {dict(outcomes)}; "
        f"trials with exactly one deletion, 7 replay errors, one trash copy: {len(records) - len(failures)}"
    )
    assert len(records) == TRIALS
    assert not failures, failures[:3]
    assert "Traceback" not in logs
