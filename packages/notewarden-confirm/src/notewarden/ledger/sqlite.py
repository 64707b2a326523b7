"""SQLite ledger: the embedded default, for one host.

`BEGIN IMMEDIATE` takes the database write lock before the first read, so a claim never
has to upgrade a read snapshot (a deferred transaction in WAL mode can fail with
SQLITE_BUSY at that point even with a busy timeout). The claim is
`INSERT ... ON CONFLICT DO NOTHING RETURNING`: a row back means this transaction won.

Durability: WAL with `synchronous=NORMAL` survives a killed process (every committed
transaction is in the WAL before COMMIT returns); a power loss may lose the last
transactions, never half of one. Set `synchronous=FULL` via `durability="full"` to also
survive power loss, at one fsync per confirmation.

Locking only coordinates processes on one host sharing the file: never put it on NFS.
Use the PostgreSQL ledger for several hosts.

Connections come from a bounded pool (`SqlitePool`, `[storage] pool_size`), taken for one use and
given back: worker threads come and go (anyio retires one idle for 10 s), and a connection per
thread for the life of the process opened new ones after every pause, three descriptors each
(the file, its WAL, its shared memory), forever.

Checkpoints (`checkpoint=`), copying the WAL back into the database file:
Rule 1: "inline" (the default here, SQLite's own behaviour): the `COMMIT` that takes the WAL past
  1,000 pages checkpoints before it returns. A library embedded in someone else's process starts
  no thread unless asked, and a ledger of small confirmation rows crosses that mark rarely.
Rule 2: "background" (what notewarden's own ledger uses: a note write is up to megabytes, and a
  checkpoint's copy and sync would otherwise land on every second large write's request): one
  named daemon thread per ledger runs `PRAGMA wal_checkpoint(PASSIVE)` on its own connection. A
  commit of this ledger wakes it; it checkpoints once the commits pause for `_QUIET_SECONDS`, or,
  while they keep coming, once the WAL passes `_MARK_PAGES` (SQLite's own mark), so a steady stream
  of small writes pays one checkpoint (two syncs under `synchronous=NORMAL`) per thousand pages, as
  inline, and none of them on a request. With no commit it waits on an event, never polling.
Rule 3: the WAL stays bounded whatever the thread does: it is truncated to `_WAL_CAP_PAGES` frames
  (`journal_size_limit`) each time it starts again, so a WAL file larger than that holds more
  frames than the cap; the commit that finds it so (the thread behind on a busy disk, or dead)
  checkpoints inline, after the thread's round if one is running (one checkpoint of the ledger at a
  time, so neither is refused as busy), holding the ledger's write lock, so the next write finds
  the WAL copied back and starts it again. While the thread keeps up, the WAL stays near the mark,
  far below the cap, and no commit checkpoints.
Rule 4: neither mode changes durability or what a reader sees: a transaction is durable once its
  `COMMIT` has written the WAL (and synced it under `durability="full"`), before any checkpoint;
  the thread's connection has the pool's `synchronous` setting, so its checkpoint syncs the WAL
  before copying and the database after; and a PASSIVE checkpoint copies only frames no open read
  snapshot still needs, never waiting on and never disturbing a reader or a writer.
Rule 5: `close()` stops and joins the thread, then runs one last checkpoint before closing the pool.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from notewarden.ledger import (
    Claim,
    Durability,
    LedgerIdentity,
    LedgerStats,
    LedgerUnavailable,
    PriorUse,
    TransactionSteps,
    encode_receipt,
)
from notewarden.ledger.schema import LEDGER_SCHEMA
from notewarden.schema import SchemaComponent, sqlite_upgrade

__all__ = ["Checkpoints", "SqliteLedger", "SqlitePool", "SqliteSession", "SqliteTxn"]

logger = logging.getLogger(__name__)

_PURGE_INTERVAL_SECONDS = 60.0
_QUIET_SECONDS = 0.05
_MARK_PAGES = 1000
_WAL_CAP_PAGES = 4000

_UNAVAILABLE = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_FULL")

Checkpoints = Literal["inline", "background"]


def _wal_bytes(conn: sqlite3.Connection, frames: int = _WAL_CAP_PAGES) -> int:
    """The size of a WAL of `frames` frames: its header, then a header and a page per frame."""
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    return 32 + frames * (24 + int(page_size))


class SqlitePool:
    """At most `size` connections to one SQLite file, each used by one thread at a time.

    `connection()` lends one for a `with` block; a thread that already holds one (a read inside its
    own critical section) gets the same one back, so it sees its own writes and never waits on
    itself. A thread that finds every connection lent waits up to `timeout` for one, then gets
    `LedgerUnavailable`. Idle connections stay open for the next use: the number of open files is
    bounded by `size`, whatever the number of threads over the life of the process.
    """

    def __init__(
        self, path: Path, *, size: int, timeout: float, setup: Callable[[sqlite3.Connection], None]
    ) -> None:
        self.path = path
        self._setup = setup
        self._timeout = timeout
        self._free: list[sqlite3.Connection] = []
        self._opened: list[sqlite3.Connection] = []
        self._size = max(1, size)
        self._available = threading.Condition()
        self._held = threading.local()

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        held: sqlite3.Connection | None = getattr(self._held, "conn", None)
        if held is not None:
            yield held
            return
        conn = self._take()
        self._held.conn = conn
        try:
            yield conn
        finally:
            self._held.conn = None
            with self._available:
                self._free.append(conn)
                self._available.notify()

    def _take(self) -> sqlite3.Connection:
        with self._available:
            full = not self._free and len(self._opened) >= self._size
            if full and not self._available.wait_for(lambda: bool(self._free), timeout=self._timeout):
                raise LedgerUnavailable(
                    f"all {self._size} connections to {self.path.name} stayed busy for {self._timeout:g} s"
                )
            if self._free:
                return self._free.pop()
            conn = self._open()
            self._opened.append(conn)
            return conn

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=self._timeout
            )
            self._setup(conn)
        except sqlite3.Error as exc:
            raise LedgerUnavailable(f"cannot open the database {self.path}: {exc}") from exc
        return conn

    @property
    def opened(self) -> int:
        """How many connections are open (what the pool bounds)."""
        return len(self._opened)

    def close(self) -> None:
        with self._available:
            for conn in self._opened:
                conn.close()
            self._opened.clear()
            self._free.clear()


class SqliteSession:
    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorname.startswith(_UNAVAILABLE):
                raise LedgerUnavailable(f"the ledger database is busy or unavailable ({exc})") from exc
            raise


def _prior_use(conn: sqlite3.Connection, confirmation_id: str, principal: str) -> PriorUse | None:
    row = conn.execute(
        "SELECT outcome, receipt FROM confirmations WHERE confirmation_id = ? AND principal = ?",
        (confirmation_id, principal),
    ).fetchone()
    return PriorUse.from_row(*row) if row else None


class SqliteTxn(SqliteSession, TransactionSteps):
    def __init__(self, conn: sqlite3.Connection, identity: LedgerIdentity) -> None:
        super().__init__(conn)
        self.identity = identity
        TransactionSteps.__init__(self)

    def lock_workspace(self, workspace: str) -> None:
        """Nothing to do: `BEGIN IMMEDIATE` already excludes every other writer of the file."""

    def claim_confirmation(self, claim: Claim) -> bool:
        row = self._conn.execute(
            "INSERT INTO confirmations (confirmation_id, principal, tool, outcome, consumed_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (confirmation_id) DO NOTHING RETURNING confirmation_id",
            claim.row(time.time()),
        ).fetchone()
        return row is not None

    def prior_outcome(self, confirmation_id: str, principal: str) -> PriorUse | None:
        return _prior_use(self._conn, confirmation_id, principal)

    def record_receipt(self, confirmation_id: str, receipt: Mapping[str, Any]) -> None:
        self.execute(
            "UPDATE confirmations SET receipt = ? WHERE confirmation_id = ?",
            (encode_receipt(receipt), confirmation_id),
        )

    def write_at_commit(self, sql: str, params: Sequence[object]) -> None:
        """Now: a statement costs no round trip here."""
        self.execute(sql, params)


class _Checkpointer:
    """The background checkpoints of one ledger (Rules 2, 3 and 5): a thread and its own connection."""

    def __init__(
        self, path: Path, setup: Callable[[sqlite3.Connection], None], wal_limit: int, wal_mark: int
    ) -> None:
        self._path = path
        self._wal = Path(f"{path}-wal")
        self._wal_limit = wal_limit
        self._wal_mark = wal_mark
        self._setup = setup
        self._lock = threading.Lock()  # one checkpoint of this ledger at a time: none is refused as busy
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"sqlite-checkpoint {path.name}", daemon=True)
        self.thread.start()

    def _wal_size(self) -> int:
        try:
            return self._wal.stat().st_size
        except OSError:  # no WAL file: nothing to copy back
            return 0

    def committed(self, conn: sqlite3.Connection) -> None:
        """After a write's `COMMIT`, on its connection: wake the thread, or checkpoint here (Rule 3)."""
        if self._wal_size() <= self._wal_limit:
            self._wake.set()
        else:
            self._checkpoint(conn)

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """One PASSIVE checkpoint, one of this ledger at a time; one that fails (another process holds
        the database) is logged and left to the next commit."""
        try:
            with self._lock:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            logger.warning("ledger checkpoint skipped", exc_info=True)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self.thread.join()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            self._setup(conn)
        except sqlite3.Error:
            logger.warning("ledger checkpoints fall back to the commits (Rule 3)", exc_info=True)
            return
        try:
            while True:
                self._wake.wait()
                while True:  # Rule 2: until the commits pause, or the WAL passes the mark
                    self._wake.clear()
                    if self._stopping.wait(_QUIET_SECONDS):
                        return
                    if not self._wake.is_set() or self._wal_size() > self._wal_mark:
                        break
                self._checkpoint(conn)
        finally:
            conn.close()


class SqliteLedger:
    """Ledger in one SQLite file, shared by every process on the host that uses the same state dir."""

    def __init__(
        self,
        path: Path,
        *,
        durability: Durability = "normal",
        busy_timeout_ms: int = 10_000,
        components: Sequence[SchemaComponent] = (),
        pool_size: int = 8,
        checkpoint: Checkpoints = "inline",
    ) -> None:
        if checkpoint not in ("inline", "background"):
            raise ValueError(f"checkpoint must be 'inline' or 'background', got {checkpoint!r}")
        self.path = path
        self._durability = durability
        self._busy_timeout_ms = busy_timeout_ms
        self._background = checkpoint == "background"
        self.pool = SqlitePool(
            path, size=pool_size, timeout=max(busy_timeout_ms / 1000, 1.0), setup=self._setup
        )
        self._write_lock = threading.Lock()
        self._last_purge = 0.0
        self._purged_total = 0
        with self.pool.connection() as conn:
            sqlite_upgrade(conn, [LEDGER_SCHEMA, *components])
            (ledger_id,) = conn.execute("SELECT ledger_id FROM ledger_identity").fetchone()
            wal_limit, wal_mark = _wal_bytes(conn), _wal_bytes(conn, _MARK_PAGES)
        self.identity = LedgerIdentity(str(ledger_id), "sqlite", os.path.abspath(path))
        self._checkpointer = (
            _Checkpointer(path, self._setup, wal_limit, wal_mark) if self._background else None
        )

    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._durability.upper()}")
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        conn.execute("PRAGMA temp_store = MEMORY")  # no temporary files: the sandbox forbids /tmp
        if self._background:  # Rule 3
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute(f"PRAGMA journal_size_limit = {_wal_bytes(conn)}")

    @contextmanager
    def critical_section(self) -> Iterator[SqliteTxn]:
        # Threads of this process queue on a lock and are woken the moment it is free;
        # SQLite's busy handler (sleeps of up to 100 ms between retries) then only
        # arbitrates between processes.
        with self._write_lock, self._transaction() as txn:
            yield txn

    @contextmanager
    def _transaction(self) -> Iterator[SqliteTxn]:
        with self.pool.connection() as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise LedgerUnavailable(
                    f"the ledger is busy or unavailable ({exc}); nothing was changed"
                ) from exc
            txn = SqliteTxn(conn, self.identity)
            try:
                yield txn
                conn.execute("COMMIT")
            except BaseException:
                try:
                    conn.execute("ROLLBACK")
                finally:
                    txn.run_undo()
                raise
            if self._checkpointer is not None:
                self._checkpointer.committed(conn)
            txn.run_after_commit()
            self._maybe_purge()

    @contextmanager
    def snapshot(self) -> Iterator[SqliteSession]:
        with self.pool.connection() as conn:
            if conn.in_transaction:  # a read from inside this thread's own critical section sees its writes
                yield SqliteSession(conn)
                return
            try:
                conn.execute("BEGIN")
            except sqlite3.OperationalError as exc:
                raise LedgerUnavailable(f"the ledger database is unavailable ({exc})") from exc
            try:
                yield SqliteSession(conn)
            finally:
                conn.execute("ROLLBACK")

    def consumed_outcome(self, confirmation_id: str, principal: str) -> PriorUse | None:
        with self.pool.connection() as conn:
            return _prior_use(conn, confirmation_id, principal)

    def _maybe_purge(self) -> None:
        now = time.time()
        if now - self._last_purge >= _PURGE_INTERVAL_SECONDS:
            self._last_purge = now
            try:
                self.purge_expired(now)
            except sqlite3.Error:
                logger.warning("ledger purge skipped: database busy", exc_info=True)

    def purge_expired(self, now: float) -> int:
        with self.pool.connection() as conn:
            purged = conn.execute("DELETE FROM confirmations WHERE expires_at < ?", (now,)).rowcount
            if purged and self._checkpointer is not None:
                self._checkpointer.committed(conn)
        self._purged_total += purged
        if purged:
            logger.info("ledger purged expired confirmations", extra={"purged": purged, "ledger": "sqlite"})
        return purged

    def stats(self) -> LedgerStats:
        with self.pool.connection() as conn:
            rows, oldest = conn.execute("SELECT count(*), min(expires_at) FROM confirmations").fetchone()
        return LedgerStats(rows=int(rows), oldest_expiry=oldest, purged_total=self._purged_total)

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stop()
            try:
                with self.pool.connection() as conn:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except (sqlite3.Error, LedgerUnavailable):  # bounded all the same (Rule 3)
                logger.warning("ledger's last checkpoint skipped", exc_info=True)
        self.pool.close()
