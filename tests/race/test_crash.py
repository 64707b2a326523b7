"""Proof 2: a server killed with SIGKILL at each point of the delete path, then restarted.

The test-only hook (`notewarden.faults`, armed by tests/race/fault_entry.py) holds the accepted round 2 at a point; the test
kills the process there, checks what the storage holds, restarts the server and checks
again. The allowed results are exactly two:

* killed before COMMIT (after_claim, after_mutation): after restart the note is untouched
  and the confirmation still usable: the same accepted state then deletes it;
* killed after COMMIT (after_commit): the note is in the trash and the confirmation is
  consumed: the same state is then a replay error.

Either way the delete's record (`notes.change_log`) commits with it: none before COMMIT, one after.

Never a consumed confirmation with the note untouched, never a trash row without a
committed claim, never two copies in the trash.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from notewarden.faults import CONFIRM_POINTS as POINTS
from tests.conftest import HttpServer
from tests.pg import PgDatabase
from tests.race.fault_entry import PAUSE_AT_ENV, PAUSE_FILE_ENV
from tests.race.harness import BACKENDS, Round1, StorageDeployment, deployment
from tests.race.senders import classify

NOTE = "reports/crash-victim.md"
BODY = "# Crash victim\n\nThe note a crash must not lose.\n"


def wait_for(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def kill_during_round2(
    d: StorageDeployment, server: HttpServer, first: Round1, pause: Path, note_id: str = NOTE
) -> None:
    """Send round 2, wait until the server holds at its pause point, SIGKILL it."""
    with ThreadPoolExecutor(1) as pool:
        client = d.client(server)
        pending = pool.submit(d.round2, client, first, note_id)
        wait_for(pause.exists)
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        with pytest.raises(Exception):  # noqa: B017  the connection dies with the server: no reply at all
            pending.result(timeout=30)
        client.close()
    pause.unlink()


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_sigkill_at_each_point_then_restart(tmp_path: Path, pg: PgDatabase, backend: str, point: str) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        pause = d.state_dir("a") / "paused"  # the server may write only there (Landlock)
        victim = d.start("a", **{PAUSE_AT_ENV: point, PAUSE_FILE_ENV: str(pause)})
        first = d.round1(d.client(victim), "crash victim")
        claims, records = d.claims(), d.records()

        kill_during_round2(d, victim, first, pause)

        committed = point == "after_commit"
        assert d.claims() - claims == int(committed)
        assert d.trash_rows(NOTE) == int(committed), "a trash row exists exactly when its claim committed"
        assert d.records() - records == int(committed), "the record commits with the delete, or neither"
        if point == "after_mutation" and d.notes_kind == "files":
            assert d.note_body(NOTE) is None and d.trash_copies(NOTE) == 1, "the file step did happen"

        restarted = d.start("b")  # same storage, no hook: start-up recovery runs
        if committed:
            assert d.note_body(NOTE) is None
            assert d.trash_copies(NOTE) == 1
            assert classify(d.round2(d.client(restarted), first, NOTE), NOTE) == "replay"
        else:
            assert d.note_body(NOTE) == BODY, "untouched"
            assert d.trash_copies(NOTE) == 0 and d.trash_rows(NOTE) == 0
            if d.notes_kind == "files":
                assert d.trash_entries() == [] and d.trash_journal() == [], "no entry or intent left behind"
            assert classify(d.round2(d.client(restarted), first, NOTE), NOTE) == "deleted", "still usable"
        assert d.claims() - claims == 1 == d.records("notes_delete") - records
        assert d.note_body(NOTE) is None
        assert d.trash_copies(NOTE) == 1 and d.trash_rows(NOTE) == 1
        if point == "after_mutation" and d.notes_kind == "files" and not committed:
            assert "recovered an uncommitted delete" in (tmp_path / "server-b.log").read_text()


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.startswith("files")])
def test_a_retry_on_a_live_instance_heals_a_dead_instances_half_move(
    tmp_path: Path, pg: PgDatabase, backend: str
) -> None:
    """Instance A dies with the file in the trash and nothing committed; the user's retry lands on
    instance B, which has been running all along: B's delete finds the note missing, recovers the
    workspace under its lock, and completes. No restart needed."""
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        pause = d.state_dir("a") / "paused"  # the server may write only there (Landlock)
        victim = d.start("a", **{PAUSE_AT_ENV: "after_mutation", PAUSE_FILE_ENV: str(pause)})
        survivor = d.start("b")
        first = d.round1(d.client(victim), "crash victim")
        kill_during_round2(d, victim, first, pause)
        assert d.note_body(NOTE) is None and d.trash_rows(NOTE) == 0  # the half-done move
        assert d.records() == 0

        assert classify(d.round2(d.client(survivor), first, NOTE), NOTE) == "deleted"
        assert d.trash_copies(NOTE) == 1 and d.trash_rows(NOTE) == 1 and d.records("notes_delete") == 1
        assert len(d.trash_entries()) == 1  # B's committed entry; A's half move was undone
        assert "recovered an uncommitted delete" in (tmp_path / "server-b.log").read_text()
