"""The SQLite ledger's background checkpoints (`ledger.sqlite` Rules 2-5), on real files.

What the WAL holds is read from the wal-index (the `-shm` file, https://sqlite.org/walformat.html):
`mxFrame`, the frames written since the WAL last started again, and `nBackfill`, how many of them
are copied back into the database. Reading it checkpoints nothing, unlike `PRAGMA wal_checkpoint`.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.ledger import sqlite as sqlite_ledger
from notewarden.ledger.sqlite import _WAL_CAP_PAGES, SqliteLedger
from notewarden.schema import SchemaComponent

BIG = "x" * (1024 * 1024)  # about 260 pages of 4 KB
BLOBS = SchemaComponent(
    "test_blobs",
    tables=("blobs",),
    sqlite=("CREATE TABLE blobs (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",),
    postgres=("CREATE TABLE blobs (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",),
)


def wal_index(path: Path) -> tuple[int, int]:
    """(frames in the WAL, frames of them copied back), as the wal-index header says now."""
    header = Path(f"{path}-shm").read_bytes()[:136]
    frames = int.from_bytes(header[16:20], sys.byteorder)
    backfilled = int.from_bytes(header[96:100], sys.byteorder)
    return frames, backfilled


def write_big(ledger: SqliteLedger, row: int) -> None:
    with ledger.critical_section() as txn:
        txn.execute("INSERT OR REPLACE INTO blobs (id, body) VALUES (?, ?)", (row, f"{row}{BIG}"))


def wait_until_copied_back(path: Path, deadline_seconds: float = 30.0) -> tuple[int, int]:
    """Poll (no speed asserted: the deadline only ends a test that would otherwise hang)."""
    deadline = time.monotonic() + deadline_seconds
    while True:
        frames, backfilled = wal_index(path)
        if 0 < frames == backfilled or time.monotonic() > deadline:
            return frames, backfilled
        time.sleep(0.01)


@pytest.fixture
def background(tmp_path: Path) -> Iterator[SqliteLedger]:
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3", components=[BLOBS], checkpoint="background")
    yield ledger
    ledger.close()


def test_after_a_burst_the_thread_has_copied_the_wal_back_without_any_commit_doing_it(
    background: SqliteLedger,
) -> None:
    assert background._checkpointer is not None
    assert background._checkpointer.thread.name == "sqlite-checkpoint ledger.sqlite3"
    for row in range(6):  # about 1,600 pages: past SQLite's 1,000, below the cap
        write_big(background, row)
    frames, backfilled = wait_until_copied_back(background.path)
    assert frames > 0 and backfilled == frames, "the idle WAL is copied back by the thread"
    with background.snapshot() as db:
        assert db.execute("SELECT count(*), sum(length(body)) FROM blobs") == [(6, 6 * (len(BIG) + 1))]


def test_a_stream_of_small_commits_is_checkpointed_when_it_pauses_not_after_each_commit(
    background: SqliteLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule 2: a commit only wakes the thread; it copies the WAL back once the commits pause (or the
    WAL passes the mark), so a stream of confirmations does not pay a checkpoint's syncs each."""
    monkeypatch.setattr(sqlite_ledger, "_QUIET_SECONDS", 1.0)  # longer than the stream below takes
    for row in range(20):
        with background.critical_section() as txn:
            txn.execute("INSERT OR REPLACE INTO blobs (id, body) VALUES (?, ?)", (row, f"small {row}"))
    frames, backfilled = wal_index(background.path)
    assert frames >= 20 and backfilled == 0, "no checkpoint while the commits keep coming"
    frames, backfilled = wait_until_copied_back(background.path)
    assert frames >= 20 and backfilled == frames, "the pause is checkpointed"


def test_commits_below_the_cap_leave_the_checkpoint_to_the_thread(background: SqliteLedger) -> None:
    assert background._checkpointer is not None
    background._checkpointer.stop()
    write_big(background, 0)  # starts the WAL again if the thread had copied it all back
    before = wal_index(background.path)
    for row in range(1, 6):
        write_big(background, row)
    frames, backfilled = wal_index(background.path)
    assert frames >= 1000, "past SQLite's own mark of 1,000 pages"
    assert backfilled == before[1], "no commit checkpointed: that was the thread's work"


def test_the_wal_stays_under_the_cap_with_the_thread_running_or_stopped(background: SqliteLedger) -> None:
    one_write = 2 * len(BIG) // 4096 + 16  # a replaced row: its new pages, the old ones freed, the b-tree's
    most = 0
    for row in range(30):
        write_big(background, row % 3)
        most = max(most, wal_index(background.path)[0])
    assert most <= _WAL_CAP_PAGES + one_write
    assert background._checkpointer is not None
    background._checkpointer.stop()
    assert not background._checkpointer.thread.is_alive()
    most, inline = 0, 0
    for row in range(30):  # about 8,000 pages: twice the cap
        write_big(background, row % 3)
        frames, backfilled = wal_index(background.path)
        most, inline = max(most, frames), inline + (0 < backfilled == frames)
    assert most <= _WAL_CAP_PAGES + one_write
    assert inline >= 1, "with the thread gone, a commit checkpoints inline"


def test_close_stops_the_thread_and_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = SqliteLedger(path, components=[BLOBS], checkpoint="background")
    assert ledger._checkpointer is not None
    thread = ledger._checkpointer.thread
    reader = sqlite3.connect(path, isolation_level=None)  # keeps the WAL from being deleted at close
    try:
        reader.execute("PRAGMA journal_mode = WAL")
        write_big(ledger, 1)
        ledger.close()
        assert not thread.is_alive()
        frames, backfilled = wal_index(path)
        assert 0 < frames == backfilled
        assert reader.execute("SELECT length(body) FROM blobs").fetchall() == [(len(BIG) + 1,)]
    finally:
        reader.close()


def test_a_checkpoint_never_changes_what_an_open_snapshot_reads(background: SqliteLedger) -> None:
    write_big(background, 1)
    reader = sqlite3.connect(background.path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        (seen,) = reader.execute("SELECT substr(body, 1, 1) FROM blobs WHERE id = 1").fetchone()
        with background.critical_section() as txn:
            txn.execute("UPDATE blobs SET body = ? WHERE id = 1", (f"2{BIG}",))
        wait_until_copied_back(background.path, deadline_seconds=0.5)  # as far as the reader lets it
        assert reader.execute("SELECT substr(body, 1, 1) FROM blobs WHERE id = 1").fetchone() == (seen,)
        reader.execute("ROLLBACK")
        assert reader.execute("SELECT substr(body, 1, 1) FROM blobs WHERE id = 1").fetchone() == ("2",)
    finally:
        reader.close()


def test_the_default_is_sqlites_inline_checkpoint_and_no_thread(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3", components=[BLOBS])
    try:
        assert ledger._checkpointer is None
        with ledger.pool.connection() as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
    finally:
        ledger.close()
    with pytest.raises(ValueError, match="checkpoint"):
        SqliteLedger(tmp_path / "other.sqlite3", checkpoint="sometimes")  # type: ignore[arg-type]
