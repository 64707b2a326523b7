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
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
from notewarden.ledger.schema import LEDGER_SCHEMA, SchemaComponent, sqlite_upgrade

__all__ = ["SqliteLedger", "SqliteSession", "SqliteTxn", "apply_migrations"]

logger = logging.getLogger(__name__)

_PURGE_INTERVAL_SECONDS = 60.0
_UNAVAILABLE = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_FULL")


def apply_migrations(conn: sqlite3.Connection, component: str, migrations: Sequence[str]) -> int:
    """Bring a SQLite-only component (an index, a cache) to its latest version; steps applied."""
    component_schema = SchemaComponent(
        component, tables=(), sqlite=tuple(migrations), postgres=tuple(migrations)
    )
    return sqlite_upgrade(conn, [component_schema])[component]


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
            (
                claim.confirmation_id,
                claim.principal,
                claim.tool,
                claim.outcome,
                time.time(),
                claim.expires_at,
            ),
        ).fetchone()
        return row is not None

    def prior_outcome(self, confirmation_id: str, principal: str) -> PriorUse | None:
        return _prior_use(self._conn, confirmation_id, principal)

    def record_receipt(self, confirmation_id: str, receipt: Mapping[str, Any]) -> None:
        self.execute(
            "UPDATE confirmations SET receipt = ? WHERE confirmation_id = ?",
            (encode_receipt(receipt), confirmation_id),
        )


class SqliteLedger:
    """Ledger in one SQLite file, shared by every process on the host that uses the same state dir."""

    def __init__(
        self,
        path: Path,
        *,
        durability: Durability = "normal",
        busy_timeout_ms: int = 10_000,
        components: Sequence[SchemaComponent] = (),
    ) -> None:
        self.path = path
        self._durability = durability
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._last_purge = 0.0
        self._purged_total = 0
        conn = self._connection()
        sqlite_upgrade(conn, [LEDGER_SCHEMA, *components])
        (ledger_id,) = conn.execute("SELECT ledger_id FROM ledger_identity").fetchone()
        self.identity = LedgerIdentity(str(ledger_id), "sqlite", os.path.abspath(path))

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self._busy_timeout_ms / 1000,
                )
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self._durability.upper()}")
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
                conn.execute("PRAGMA temp_store = MEMORY")  # no temporary files: the sandbox forbids /tmp
            except sqlite3.Error as exc:
                raise LedgerUnavailable(f"cannot open the ledger database {self.path}: {exc}") from exc
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def critical_section(self) -> Iterator[SqliteTxn]:
        # Threads of this process queue on a lock and are woken the moment it is free;
        # SQLite's busy handler (sleeps of up to 100 ms between retries) then only
        # arbitrates between processes.
        with self._write_lock, self._transaction() as txn:
            yield txn

    @contextmanager
    def _transaction(self) -> Iterator[SqliteTxn]:
        conn = self._connection()
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
        txn.run_after_commit()
        self._maybe_purge()

    @contextmanager
    def snapshot(self) -> Iterator[SqliteSession]:
        conn = self._connection()
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
        return _prior_use(self._connection(), confirmation_id, principal)

    def _maybe_purge(self) -> None:
        now = time.time()
        if now - self._last_purge >= _PURGE_INTERVAL_SECONDS:
            self._last_purge = now
            try:
                self.purge_expired(now)
            except sqlite3.Error:
                logger.warning("ledger purge skipped: database busy", exc_info=True)

    def purge_expired(self, now: float) -> int:
        cursor = self._connection().execute("DELETE FROM confirmations WHERE expires_at < ?", (now,))
        purged = cursor.rowcount
        self._purged_total += purged
        if purged:
            logger.info("ledger purged expired confirmations", extra={"purged": purged, "ledger": "sqlite"})
        return purged

    def stats(self) -> LedgerStats:
        rows, oldest = (
            self._connection().execute("SELECT count(*), min(expires_at) FROM confirmations").fetchone()
        )
        return LedgerStats(rows=int(rows), oldest_expiry=oldest, purged_total=self._purged_total)

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()
