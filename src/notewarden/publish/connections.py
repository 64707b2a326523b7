"""Pending connections and stored credentials: the server's own record of a URL-mode step.

Rules:
1. A pending connection belongs to one principal and one target, and expires; its id
   appears in the connect URL and is *not* a secret: holding it grants nothing, because
   the page signs the browser user in and compares the principal.
2. A connection completes at most once, in one transaction with storing the credential:
   a second completion ("replayed completion") is refused and changes nothing.
3. A credential is stored only sealed (`vault.credential_sealer`), keyed by
   (principal, target); the plaintext exists only in memory while it is used.
4. The MCP retry trusts only this record: an `accept` from the client means the user
   agreed to open the URL, never that the step is done.

SQLite in `<state_dir>/publish.sqlite3`, shared by every process using the state dir, through a
bounded pool of connections (`ledger.sqlite.SqlitePool`). Every method does file I/O: the tools
call them in a worker thread, never on the event loop.
"""

from __future__ import annotations

import enum
import secrets
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notewarden.ledger.sqlite import SqlitePool
from notewarden.publish.vault import Sealer, credential_binding, credential_sealer
from notewarden.sqlite_migrations import apply_migrations

__all__ = ["AskedBy", "Completion", "ConnectionStatus", "Connections", "PendingConnection"]

MIGRATIONS: Sequence[str] = (
    """
    CREATE TABLE publish_connections (
        connection_id TEXT PRIMARY KEY,
        principal     TEXT NOT NULL,
        target        TEXT NOT NULL,
        created_at    REAL NOT NULL,
        expires_at    REAL NOT NULL,
        status        TEXT NOT NULL,
        completed_at  REAL
    ) WITHOUT ROWID;
    CREATE INDEX publish_connections_by_expiry ON publish_connections (expires_at);
    CREATE TABLE publish_credentials (
        principal     TEXT NOT NULL,
        target        TEXT NOT NULL,
        sealed        BLOB NOT NULL,
        connection_id TEXT NOT NULL,
        stored_at     REAL NOT NULL,
        PRIMARY KEY (principal, target)
    ) WITHOUT ROWID;
    """,
    # what the connect page names: the note, the tool and the client that asked (display only)
    """
    ALTER TABLE publish_connections ADD COLUMN note_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE publish_connections ADD COLUMN note_title TEXT NOT NULL DEFAULT '';
    ALTER TABLE publish_connections ADD COLUMN tool TEXT NOT NULL DEFAULT '';
    ALTER TABLE publish_connections ADD COLUMN client TEXT NOT NULL DEFAULT '';
    """,
)
_KEEP_FINISHED_SECONDS = 86400.0
POOL_SIZE = 4
BUSY_TIMEOUT_SECONDS = 10.0


class ConnectionStatus(enum.Enum):
    PENDING = "pending"
    DONE = "done"
    ABANDONED = "abandoned"


class Completion(enum.Enum):
    COMPLETED = "completed"
    ALREADY_DONE = "already_done"
    EXPIRED = "expired"
    NOT_FOUND = "not_found"


@dataclass(frozen=True, slots=True)
class AskedBy:
    """Who asked, for the page to name (display only: `client` is what the client calls itself)."""

    note_id: str = ""
    note_title: str = ""
    tool: str = ""
    client: str = ""


@dataclass(frozen=True, slots=True)
class PendingConnection:
    connection_id: str
    principal: str
    target: str
    created_at: float
    expires_at: float
    status: ConnectionStatus
    asked_by: AskedBy = field(default_factory=AskedBy)

    def expired(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) >= self.expires_at


class Connections:
    def __init__(self, path: Path, keys: Sequence[bytes], *, pool_size: int = POOL_SIZE) -> None:
        self.path = path
        self._sealer: Sealer = credential_sealer(keys)
        self.pool = SqlitePool(path, size=pool_size, timeout=BUSY_TIMEOUT_SECONDS, setup=_setup)
        with self.pool.connection() as conn:
            apply_migrations(conn, "publish", MIGRATIONS)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self.pool.connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _read_one(self, sql: str, params: tuple[object, ...]) -> tuple[Any, ...] | None:
        with self.pool.connection() as conn:
            row: tuple[Any, ...] | None = conn.execute(sql, params).fetchone()
            return row

    def start(
        self, principal: str, target: str, ttl: float, asked_by: AskedBy | None = None
    ) -> PendingConnection:
        now = time.time()
        asked = asked_by or AskedBy()
        pending = PendingConnection(
            secrets.token_urlsafe(18), principal, target, now, now + ttl, ConnectionStatus.PENDING, asked
        )
        with self._write() as conn:
            conn.execute(
                "DELETE FROM publish_connections WHERE expires_at < ?", (now - _KEEP_FINISHED_SECONDS,)
            )
            conn.execute(
                "INSERT INTO publish_connections (connection_id, principal, target, created_at, expires_at, status, "
                "note_id, note_title, tool, client) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    pending.connection_id,
                    principal,
                    target,
                    now,
                    pending.expires_at,
                    pending.status.value,
                    asked.note_id,
                    asked.note_title,
                    asked.tool,
                    asked.client,
                ),
            )
        return pending

    def get(self, connection_id: str) -> PendingConnection | None:
        row = self._read_one(
            "SELECT connection_id, principal, target, created_at, expires_at, status, "
            "note_id, note_title, tool, client FROM publish_connections WHERE connection_id = ?",
            (connection_id,),
        )
        if row is None:
            return None
        return PendingConnection(
            row[0], row[1], row[2], row[3], row[4], ConnectionStatus(row[5]), AskedBy(*row[6:10])
        )

    def complete(self, connection_id: str, principal: str, credential: str) -> Completion:
        """Store the credential and mark the connection done, once (rule 2)."""
        with self._write() as conn:
            row = conn.execute(
                "SELECT principal, target, expires_at, status FROM publish_connections WHERE connection_id = ?",
                (connection_id,),
            ).fetchone()
            if row is None or row[0] != principal:
                return Completion.NOT_FOUND
            target, expires_at, status = row[1], row[2], ConnectionStatus(row[3])
            if status is ConnectionStatus.DONE:
                return Completion.ALREADY_DONE
            if status is ConnectionStatus.ABANDONED or time.time() >= expires_at:
                return Completion.EXPIRED
            sealed = self._sealer.seal(credential.encode(), credential_binding(principal, target))
            conn.execute(
                "INSERT INTO publish_credentials (principal, target, sealed, connection_id, stored_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (principal, target) DO UPDATE SET "
                "sealed = excluded.sealed, connection_id = excluded.connection_id, stored_at = excluded.stored_at",
                (principal, target, sealed, connection_id, time.time()),
            )
            conn.execute(
                "UPDATE publish_connections SET status = ?, completed_at = ? WHERE connection_id = ?",
                (ConnectionStatus.DONE.value, time.time(), connection_id),
            )
        return Completion.COMPLETED

    def abandon(self, connection_id: str, principal: str) -> None:
        """The user declined: the link stops working even if opened later."""
        with self._write() as conn:
            conn.execute(
                "UPDATE publish_connections SET status = ? WHERE connection_id = ? AND principal = ? "
                "AND status = ?",
                (ConnectionStatus.ABANDONED.value, connection_id, principal, ConnectionStatus.PENDING.value),
            )

    def credential(self, principal: str, target: str) -> str | None:
        row = self._read_one(
            "SELECT sealed FROM publish_credentials WHERE principal = ? AND target = ?", (principal, target)
        )
        if row is None:
            return None
        plain = self._sealer.open(bytes(row[0]), credential_binding(principal, target))
        return None if plain is None else plain.decode()

    def forget(self, principal: str, target: str) -> None:
        """The target refused the credential: the next publish asks for a new one."""
        with self._write() as conn:
            conn.execute(
                "DELETE FROM publish_credentials WHERE principal = ? AND target = ?", (principal, target)
            )

    def close(self) -> None:
        self.pool.close()


def _setup(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
