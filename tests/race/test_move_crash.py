"""A server killed with SIGKILL in the middle of a move that rewrites several notes, then restarted.

The test-only hook (`notewarden.faults`, armed by tests/race/fault_entry.py) holds `notes_move` after half of the linking notes were
rewritten (`move_rewriting`: nothing committed) or after its commit (`move_committed`: the files
store's journal not yet removed); the test kills the process there and restarts it on the same
storage. Exactly two outcomes are allowed, checked byte for byte on every note of the test vault:
every note as before and the note not moved, or every link rewritten and the note moved. Never
some of the notes rewritten.
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from notewarden.scope.note_paths import HISTORY_DIR_NAME, MOVE_JOURNAL_NAME
from tests.pg import PgDatabase
from tests.race.fault_entry import PAUSE_AT_ENV, PAUSE_FILE_ENV
from tests.race.harness import StorageDeployment, deployment
from tests.race.test_crash import wait_for
from tests.unit.test_links import rewrite_all
from tests.vault_cases import VAULT

MOVED_FROM, MOVED_TO = "Projects/Atlas/Plan.md", "Archive/2026/Plan.md"
REWRITTEN = rewrite_all(MOVED_FROM, MOVED_TO)


def notes(d: StorageDeployment) -> dict[str, str | None]:
    return {note_id: d.note_body(note_id) for note_id in sorted({*VAULT, *REWRITTEN})}


def record_notes(d: StorageDeployment, tool: str) -> list[tuple[str, str, str | None]]:
    """The notes of the one record of `tool`: what happened to each, its id, and its id before."""
    rows = d.sql(
        "SELECT effect, note_id, previous_id FROM change_log WHERE principal = ? AND tool = ? ORDER BY seq",
        (d.principal, tool),
    )
    return [(str(e), str(n), p) for e, n, p in rows]


def leftovers(d: StorageDeployment) -> list[str]:
    """Temp files of a swap, and the move's journal (files store)."""
    if d.notes_kind != "files":
        return []
    found = [str(p.relative_to(d.workspace_dir)) for p in d.workspace_dir.rglob(".nw-tmp-*")]
    journal = d.workspace_dir / HISTORY_DIR_NAME / MOVE_JOURNAL_NAME
    return found + ([MOVE_JOURNAL_NAME] if journal.exists() else [])


@pytest.mark.parametrize(
    ("backend", "point"),
    [
        ("files+sqlite", "move_rewriting"),
        ("files+sqlite", "move_committed"),
        ("files+postgres", "move_rewriting"),
        ("postgres", "move_rewriting"),
    ],
)
def test_sigkill_during_a_multi_note_move_leaves_all_or_nothing(
    tmp_path: Path, pg: PgDatabase, backend: str, point: str
) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        for note_id, text in VAULT.items():
            d.add_note(note_id, text)
        before = notes(d)
        after = {n: REWRITTEN.get(n) for n in before}
        assert sum(before[n] != after[n] for n in before) >= 4, "a move that rewrites several notes"
        pause = d.state_dir("a") / "paused"  # the server may write only there (Landlock)
        victim = d.start("a", **{PAUSE_AT_ENV: point, PAUSE_FILE_ENV: str(pause)})
        arguments = {"workspaceUri": d.workspace_uri, "noteId": MOVED_FROM, "newPath": MOVED_TO}
        with ThreadPoolExecutor(1) as pool:
            client = d.client(victim)
            pending = pool.submit(client.call, "notes_move", arguments)
            wait_for(pause.exists)
            os.kill(victim.process.pid, signal.SIGKILL)
            victim.process.wait(timeout=10)
            with pytest.raises(Exception):  # noqa: B017  the connection dies with the server
                pending.result(timeout=30)
            client.close()
        pause.unlink()

        committed = point == "move_committed"
        assert d.records("notes_move") == int(committed), "the move's record commits with it, or neither"
        killed = notes(d)
        if d.notes_kind == "files":  # the files were half-way: what recovery must settle
            done = sum(killed[n] == after[n] != before[n] for n in before)
            assert done == (sum(before[n] != after[n] for n in before) if committed else 2), killed
            assert leftovers(d) == [MOVE_JOURNAL_NAME]
        else:
            assert killed == before, "nothing committed: the database shows nothing"

        restarted = d.start("b")  # same storage, no hook: start-up settles the journal
        assert notes(d) == (after if committed else before), "all or nothing, byte for byte"
        assert leftovers(d) == []
        assert d.records("notes_move") == int(committed)
        if not committed:
            again = d.client(restarted).call("notes_move", arguments).result
            assert not again.get("isError"), again
            assert len(again["structuredContent"]["rewritten"]) == 4
            assert notes(d) == after
        (moved, *relinked) = record_notes(d, "notes_move")
        assert moved == ("moved", MOVED_TO, MOVED_FROM)
        assert sorted(n for _, n, _ in relinked) == sorted(
            n for n in before if before[n] != after[n] and n not in (MOVED_FROM, MOVED_TO)
        )
