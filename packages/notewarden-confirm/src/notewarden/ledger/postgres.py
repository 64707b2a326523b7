"""PostgreSQL ledger: one database shared by every instance, on any number of hosts.

The claim is `INSERT ... ON CONFLICT ON CONSTRAINT confirmations_pkey DO NOTHING RETURNING`
inside the transaction that also makes the change it authorizes (READ COMMITTED). Two
instances claiming the same id: the second INSERT waits on the first's uncommitted row,
then inserts (the first rolled back) or returns no row (it committed). So exactly one
transaction that goes on to COMMIT holds the claim, and a loser never sees "half" of it.

Writers of one workspace's trash folder (the files store) also take
`pg_advisory_xact_lock(<workspace key>)`: PostgreSQL serializes the claims, but the file
step happens outside the database, and `FilesNoteStore.recover` may only treat a trash
entry without a committed row as a dead writer's leftover if no live writer of that
workspace can be between its rename and its COMMIT. The lock is released by COMMIT or
ROLLBACK, and by the server when a killed instance's connection drops.

Failure handling:
* Connections come from a `psycopg_pool` pool of at most `[storage] pool_size`. A connection
  is not checked before each use (that would cost a round trip per transaction): the call that
  finds its connection lost answers `LedgerUnavailable`, the pool replaces that connection and
  checks every idle one, so the next call gets a live connection without a restart
  (tests/race/test_outage.py, with `pg_terminate_backend`).
* Anything that stops a statement (no connection within the timeout, a dropped connection,
  `statement_timeout`, `lock_timeout`) raises `LedgerUnavailable`: the transaction rolled
  back, undo steps ran, nothing was changed, and the tool says to retry.
* A connection lost *during COMMIT* leaves the outcome unknown. Then no undo step runs: a
  SQL store's change committed or not together with its claim, and a file step stays in
  the trash for `recover` to settle against what the database holds.
* `idle_in_transaction_session_timeout` ends the transaction of an instance that hangs
  inside its critical section, so it cannot hold a workspace lock forever.

The connection string is never logged; messages name only host, port, database and user.
Its `options` (for example `-csearch_path=notes,public`) are kept: notewarden appends its own
settings (`statement_timeout`, `lock_timeout`, `idle_in_transaction_session_timeout` from
`[storage]`, and `plan_cache_mode`), which therefore win over the same settings given there
(`session_options`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, LiteralString

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from notewarden.ledger import (
    Claim,
    LedgerIdentity,
    LedgerStats,
    LedgerUnavailable,
    PriorUse,
    TransactionSteps,
    encode_receipt,
    workspace_lock_key,
)
from notewarden.ledger.schema import LEDGER_SCHEMA
from notewarden.schema import SchemaComponent, check_versions

__all__ = [
    "PostgresLedger",
    "PostgresSession",
    "PostgresTxn",
    "describe_dsn",
    "postgres_upgrade",
    "postgres_versions",
    "session_options",
    "workspace_lock_key",
]

logger = logging.getLogger(__name__)

_PURGE_INTERVAL_SECONDS = 60.0
_UPGRADE_LOCK_KEY = 0x6E77_5F73_6368_656D  # "nw_schem": serializes concurrent `db upgrade`s
UPGRADE_HINT = "`notewarden db upgrade --config FILE` (once, from any host), then start the servers again"


def describe_dsn(dsn: str) -> str:
    """`user@host:port/dbname`: enough to find the database, never the password."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "(unparseable database_url)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"{user}{parts.get('host', 'localhost')}:{parts.get('port', 5432)}/{parts.get('dbname', '')}"


def session_options(dsn: str, statement_timeout: float) -> str:
    """The connection's `options`: the URL's own, then notewarden's (a later `-c` wins).

    plan_cache_mode: psycopg prepares a statement run 5 times, and PostgreSQL may then plan it once
    for any parameters; a full-text or trigram query planned without its words can pick a scan of
    every note (tests/storage/test_sql_plans.py)."""
    timeout_ms = int(statement_timeout * 1000)
    ours = (
        f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms} "
        f"-c idle_in_transaction_session_timeout={2 * timeout_ms} -c plan_cache_mode=force_custom_plan"
    )
    theirs = conninfo_to_dict(dsn).get("options")
    return f"{theirs} {ours}" if theirs else ours


def _unavailable(action: str, exc: BaseException) -> LedgerUnavailable:
    logger.warning("database unavailable", extra={"action": action, "reason": str(exc).splitlines()[0]})
    return LedgerUnavailable(
        f"the database is unavailable ({action}); nothing was changed. Retry in a few seconds."
    )


def _read_committed(conn: psycopg.Connection[Any]) -> None:
    conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED


def _connect_failure(dsn: str, timeout: float) -> str:
    """libpq's first line on why a connection fails (it names host and database, never the password)."""
    try:
        psycopg.connect(dsn, connect_timeout=max(1, round(timeout))).close()
    except psycopg.Error as exc:
        return str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
    return "it connects now; the pool timed out"


class PostgresSession:
    dialect = "postgres"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    @property
    def connection(self) -> psycopg.Connection[Any]:
        return self._conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        if "%" in sql:
            raise ValueError("write portable SQL with ? placeholders and no literal %")
        try:
            cursor = self._conn.execute(sql.replace("?", "%s").encode(), tuple(params))
            return cursor.fetchall() if cursor.description else []
        except psycopg.OperationalError as exc:
            raise _unavailable("statement failed", exc) from exc


_CLAIM: LiteralString = (
    "INSERT INTO confirmations (confirmation_id, principal, tool, outcome, consumed_at, expires_at) "
    "VALUES (%s, %s, %s, %s, %s, %s) "
    "ON CONFLICT ON CONSTRAINT confirmations_pkey DO NOTHING RETURNING confirmation_id"
)
_RECEIPT: LiteralString = "UPDATE confirmations SET receipt = %s WHERE confirmation_id = %s"
_BEGIN: LiteralString = "BEGIN ISOLATION LEVEL READ COMMITTED"


class PostgresTxn(PostgresSession, TransactionSteps):
    """The critical section's transaction, begun and ended by its own statements on a connection in
    autocommit mode, so that BEGIN travels with the claim and COMMIT with the receipt and the change's
    record: one round trip each instead of two or three (a simple query of several statements, its
    values bound by psycopg's `ClientCursor`). Any other first statement begins the transaction on
    its own."""

    def __init__(self, conn: psycopg.Connection[Any], identity: LedgerIdentity) -> None:
        super().__init__(conn)
        self.identity = identity
        self._begun = False
        self._receipt: tuple[str, str] | None = None
        self._at_commit: list[tuple[bytes, tuple[object, ...]]] = []
        TransactionSteps.__init__(self)

    @property
    def connection(self) -> psycopg.Connection[Any]:
        self._begin()  # whoever uses the connection itself writes inside the transaction
        return self._conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        self._begin()
        return super().execute(sql, params)

    def claim_confirmation(self, claim: Claim) -> bool:
        params = claim.row(time.time())
        if self._begun:
            return bool(self._execute_native(_CLAIM, params))
        self._begun = True
        try:
            return bool(self._two_statements(_BEGIN, _CLAIM, params))
        except psycopg.OperationalError as exc:
            raise _unavailable("statement failed", exc) from exc

    def prior_outcome(self, confirmation_id: str, principal: str) -> PriorUse | None:
        rows = self._execute_native(
            "SELECT outcome, receipt FROM confirmations WHERE confirmation_id = %s AND principal = %s",
            (confirmation_id, principal),
        )
        return PriorUse.from_row(*rows[0]) if rows else None

    def record_receipt(self, confirmation_id: str, receipt: Mapping[str, Any]) -> None:
        """Written by `commit`, with the COMMIT (the last of the transaction's writes either way)."""
        self._receipt = (encode_receipt(receipt), confirmation_id)

    def write_at_commit(self, sql: str, params: Sequence[object]) -> None:
        """Written by `commit`, with the COMMIT."""
        if "%" in sql:
            raise ValueError("write portable SQL with ? placeholders and no literal %")
        self._at_commit.append((sql.replace("?", "%s").encode(), tuple(params)))

    def lock_workspace(self, workspace: str) -> None:
        self._execute_native("SELECT pg_advisory_xact_lock(%s)", (workspace_lock_key(workspace),))

    def commit(self) -> None:
        """COMMIT, with the writes left for it (`write_at_commit`, the receipt's UPDATE) in the same
        round trip (psycopg errors pass through: the caller cannot know whether a COMMIT that failed
        took effect)."""
        writes = list(self._at_commit)
        if self._receipt is not None:
            writes.append((_RECEIPT.encode(), self._receipt))
        if writes:
            begin = [] if self._begun else [(_BEGIN.encode(), ())]
            self._statements([*begin, *writes, (b"COMMIT", ())])
        elif self._conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            self._conn.execute("COMMIT")

    def _begin(self) -> None:
        if not self._begun:
            self._begun = True
            self._run(_BEGIN, ())

    def _two_statements(
        self, first: LiteralString, second: LiteralString, params: tuple[object, ...]
    ) -> list[tuple[Any, ...]]:
        """One simple query of two statements, the values bound client-side; the rows of the one that
        returns rows."""
        cursor = psycopg.ClientCursor(self._conn)
        cursor.execute(first + "; " + second, params)
        rows = cursor.fetchall() if cursor.description else []
        if cursor.nextset() and cursor.description:
            rows = cursor.fetchall()
        return rows

    def _statements(self, statements: Sequence[tuple[bytes, tuple[object, ...]]]) -> None:
        """Writes sent as one simple query, the values bound client-side (no rows come back)."""
        cursor = psycopg.ClientCursor(self._conn)
        cursor.execute(
            b"; ".join(sql for sql, _ in statements), [v for _, params in statements for v in params]
        )

    def _execute_native(self, sql: LiteralString, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        self._begin()
        return self._run(sql, params)

    def _run(self, sql: LiteralString, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        try:
            cursor = self._conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []
        except psycopg.OperationalError as exc:
            raise _unavailable("statement failed", exc) from exc


def postgres_versions(conn: psycopg.Connection[Any]) -> dict[str, int]:
    exists = conn.execute("SELECT to_regclass('schema_versions') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return {}
    return {str(c): int(v) for c, v in conn.execute("SELECT component, version FROM schema_versions")}


def postgres_upgrade(conn: psycopg.Connection[Any], components: Sequence[SchemaComponent]) -> dict[str, int]:
    """Apply every missing step in one transaction, serialized against concurrent upgrades."""
    applied: dict[str, int] = {}
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_UPGRADE_LOCK_KEY,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_versions (component text PRIMARY KEY, version integer NOT NULL)"
        )
        found = postgres_versions(conn)
        for component in components:
            current = found.get(component.name, 0)
            if current > component.latest:
                check_versions(found, [component], upgrade_hint="")  # raises: ahead
            for script in component.postgres[current:]:
                conn.execute(script.encode())  # several statements, no parameters
            conn.execute(
                "INSERT INTO schema_versions (component, version) VALUES (%s, %s) "
                "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                (component.name, component.latest),
            )
            applied[component.name] = component.latest - current
    return applied


class PostgresLedger:
    """Ledger in a PostgreSQL database shared by every instance; the schema must be upgraded first."""

    def __init__(
        self,
        dsn: str,
        *,
        components: Sequence[SchemaComponent] = (),
        pool_size: int = 8,
        connect_timeout: float = 5.0,
        statement_timeout: float = 30.0,
        check_schema: bool = True,
    ) -> None:
        self.where = describe_dsn(dsn)
        self.components = [LEDGER_SCHEMA, *components]
        self._identity: LedgerIdentity | None = None
        self._connect_timeout = connect_timeout
        self._last_purge = 0.0
        self._purged_total = 0
        self._purge_lock = threading.Lock()
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            dsn,
            min_size=1,
            max_size=max(1, pool_size),
            open=False,
            name="notewarden",
            timeout=connect_timeout,
            reconnect_timeout=max(10.0, 2 * connect_timeout),
            kwargs={
                "connect_timeout": max(1, round(connect_timeout)),
                "application_name": "notewarden",
                "keepalives": 1,
                "keepalives_idle": 10,
                "keepalives_interval": 5,
                "keepalives_count": 3,
                "options": session_options(dsn, statement_timeout),
            },
            configure=_read_committed,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            self._pool.close(timeout=0)
            raise LedgerUnavailable(
                f"cannot connect to PostgreSQL at {self.where} within {connect_timeout:g} s "
                f"({_connect_failure(dsn, connect_timeout)}); check [storage] database_url or "
                "NOTEWARDEN_DATABASE_URL, and that the server is up"
            ) from exc
        if check_schema:
            try:
                self.check_schema()
                self._identity = self.identity
            except BaseException:
                self.close()
                raise

    @property
    def identity(self) -> LedgerIdentity:
        """Read once from `ledger_identity` (made by `db upgrade`); the database is the ledger."""
        if self._identity is None:
            with self._connection("read the ledger id") as conn:
                try:
                    row = conn.execute("SELECT ledger_id FROM ledger_identity").fetchone()
                finally:
                    self._rollback(conn)
            assert row is not None, "db upgrade creates the ledger id"
            self._identity = LedgerIdentity(str(row[0]), "postgres", self.where)
        return self._identity

    def versions(self) -> dict[str, int]:
        with self._pool.connection(timeout=self._connect_timeout) as conn:
            return postgres_versions(conn)

    def check_schema(self) -> None:
        check_versions(self.versions(), self.components, upgrade_hint=UPGRADE_HINT)

    def upgrade(self) -> dict[str, int]:
        with self._pool.connection(timeout=self._connect_timeout) as conn:
            return postgres_upgrade(conn, self.components)

    @contextmanager
    def _connection(self, action: str) -> Iterator[psycopg.Connection[Any]]:
        try:
            conn = self._pool.getconn()
        except (PoolTimeout, psycopg.OperationalError) as exc:
            raise _unavailable(f"no connection to {self.where}: {action}", exc) from exc
        try:
            yield conn
        finally:
            lost = conn.broken
            self._pool.putconn(conn)
            if lost:  # the server went away or ended the session: the idle ones are likely gone too
                logger.warning(
                    "database connection lost; checking the others", extra={"database": self.where}
                )
                self._pool.check()

    @staticmethod
    def _rollback(conn: psycopg.Connection[Any]) -> None:
        with contextlib.suppress(psycopg.Error):  # a lost connection: the server rolled back already
            conn.rollback()

    @contextmanager
    def critical_section(self) -> Iterator[PostgresTxn]:
        identity = self.identity
        with self._connection("critical section") as conn, self._autocommit(conn):
            txn = PostgresTxn(conn, identity)
            try:
                yield txn
            except BaseException:
                self._rollback(conn)
                txn.run_undo()
                raise
            try:
                txn.commit()
            except psycopg.Error as exc:
                self._rollback(conn)  # a receipt's UPDATE that failed left the transaction open
                logger.error(
                    "commit outcome unknown: connection lost during COMMIT; undo skipped, recovery settles it",
                    extra={"reason": str(exc).splitlines()[0]},
                )
                raise LedgerUnavailable(
                    "the database connection was lost while committing. Nothing is half-applied: either "
                    "the change and the confirmation's use both committed (a retry then reports the "
                    "confirmation as used) or neither did (a retry completes it). Retry in a few seconds."
                ) from exc
            txn.run_after_commit()
        self._maybe_purge()

    @staticmethod
    @contextmanager
    def _autocommit(conn: psycopg.Connection[Any]) -> Iterator[None]:
        conn.autocommit = True
        try:
            yield
        finally:
            with contextlib.suppress(psycopg.Error):  # a lost connection: the pool discards it
                conn.autocommit = False

    @contextmanager
    def snapshot(self) -> Iterator[PostgresSession]:
        """Reads in autocommit: each statement sees what is committed when it runs, and no BEGIN or
        ROLLBACK costs a round trip (a store re-checks what it reads: notes.sql Rule 3)."""
        with self._connection("read") as conn, self._autocommit(conn):
            yield PostgresSession(conn)

    def consumed_outcome(self, confirmation_id: str, principal: str) -> PriorUse | None:
        with self._connection("read") as conn:
            try:
                return PostgresTxn(conn, self.identity).prior_outcome(confirmation_id, principal)
            finally:
                self._rollback(conn)

    def _maybe_purge(self) -> None:
        now = time.time()
        if now - self._last_purge < _PURGE_INTERVAL_SECONDS or not self._purge_lock.acquire(blocking=False):
            return
        try:
            self._last_purge = now
            self.purge_expired(now)
        except LedgerUnavailable:
            logger.warning("ledger purge skipped: database unavailable")
        finally:
            self._purge_lock.release()

    def purge_expired(self, now: float) -> int:
        with self._connection("purge") as conn:
            try:
                purged = conn.execute("DELETE FROM confirmations WHERE expires_at < %s", (now,)).rowcount
                conn.commit()
            except psycopg.OperationalError as exc:
                self._rollback(conn)
                raise _unavailable("purge", exc) from exc
        self._purged_total += purged
        if purged:
            logger.info("ledger purged expired confirmations", extra={"purged": purged, "ledger": "postgres"})
        return purged

    def stats(self) -> LedgerStats:
        with self._connection("stats") as conn:
            try:
                row = conn.execute("SELECT count(*), min(expires_at) FROM confirmations").fetchone()
            finally:
                self._rollback(conn)
        assert row is not None
        return LedgerStats(rows=int(row[0]), oldest_expiry=row[1], purged_total=self._purged_total)

    def close(self) -> None:
        self._pool.close(timeout=5)
