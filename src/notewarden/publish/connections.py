"""Pending connections and stored credentials: the server's own record of a URL-mode step.

Rules:
1. A pending connection belongs to one principal and one target, and expires; its id
   appears in the connect URL and is *not* a secret: holding it grants nothing, because
   the page signs the browser user in and compares the principal.
2. A connection completes at most once, in one transaction with storing the credential:
   a second completion ("replayed completion") is refused and changes nothing. On PostgreSQL
   the completion reads the row `FOR UPDATE`, so of two instances completing one connection
   the second waits for the first's commit and then finds it done.
3. A credential is stored only sealed (`vault.credential_sealer`), keyed by
   (principal, target); the plaintext exists only in memory while it is used.
4. The MCP retry trusts only this record: an `accept` from the client means the user
   agreed to open the URL, never that the step is done.
5. The record lives in the ledger's database (the `publish` schema component), written through
   the ledger's bounded pool with portable SQL: every process on the SQLite ledger's state dir,
   and every instance on one PostgreSQL, sees a link completed on another. Every method does
   database I/O: the tools call them in a worker thread, never on the event loop.
6. Earlier versions kept the record in `<state_dir>/publish.sqlite3`; the first start after an
   upgrade copies its rows over (`import_legacy_file`) and renames it `publish.sqlite3.imported`.
"""

from __future__ import annotations

import enum
import logging
import secrets
import sqlite3
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from notewarden.ledger import Ledger, LedgerTxn
from notewarden.ledger.schema import SchemaComponent
from notewarden.publish.vault import Sealer, credential_binding, credential_sealer

__all__ = [
    "PUBLISH_SCHEMA",
    "AskedBy",
    "Completion",
    "ConnectionStatus",
    "Connections",
    "PendingConnection",
    "import_legacy_file",
]

logger = logging.getLogger(__name__)

PUBLISH_SCHEMA = SchemaComponent(
    "publish",
    tables=("publish_connections", "publish_credentials"),
    sqlite=(
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
    ),
    postgres=(
        """
        CREATE TABLE publish_connections (
            connection_id text PRIMARY KEY,
            principal     text NOT NULL,
            target        text NOT NULL,
            created_at    double precision NOT NULL,
            expires_at    double precision NOT NULL,
            status        text NOT NULL,
            completed_at  double precision
        );
        CREATE INDEX publish_connections_by_expiry ON publish_connections (expires_at);
        CREATE TABLE publish_credentials (
            principal     text NOT NULL,
            target        text NOT NULL,
            sealed        bytea NOT NULL,
            connection_id text NOT NULL,
            stored_at     double precision NOT NULL,
            PRIMARY KEY (principal, target)
        );
        """,
        """
        ALTER TABLE publish_connections
            ADD COLUMN note_id text NOT NULL DEFAULT '',
            ADD COLUMN note_title text NOT NULL DEFAULT '',
            ADD COLUMN tool text NOT NULL DEFAULT '',
            ADD COLUMN client text NOT NULL DEFAULT '';
        """,
    ),
)
_KEEP_FINISHED_SECONDS = 86400.0


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
    """The record of Rules 1-4 in the ledger's database (module docstring)."""

    def __init__(self, ledger: Ledger, keys: Sequence[bytes]) -> None:
        self._ledger = ledger
        self._sealer: Sealer = credential_sealer(keys)

    def start(
        self, principal: str, target: str, ttl: float, asked_by: AskedBy | None = None
    ) -> PendingConnection:
        now = time.time()
        asked = asked_by or AskedBy()
        pending = PendingConnection(
            secrets.token_urlsafe(18), principal, target, now, now + ttl, ConnectionStatus.PENDING, asked
        )
        with self._ledger.critical_section() as txn:
            txn.execute(
                "DELETE FROM publish_connections WHERE expires_at < ?", (now - _KEEP_FINISHED_SECONDS,)
            )
            txn.execute(
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
        with self._ledger.snapshot() as db:
            rows = db.execute(
                "SELECT connection_id, principal, target, created_at, expires_at, status, "
                "note_id, note_title, tool, client FROM publish_connections WHERE connection_id = ?",
                (connection_id,),
            )
        if not rows:
            return None
        cid, principal, target, created_at, expires_at, status, *asked = rows[0]
        return PendingConnection(
            cid, principal, target, created_at, expires_at, ConnectionStatus(status), AskedBy(*asked)
        )

    def complete(self, connection_id: str, principal: str, credential: str) -> Completion:
        """Store the credential and mark the connection done, once (Rule 2)."""
        with self._ledger.critical_section() as txn:
            lock = " FOR UPDATE" if txn.dialect == "postgres" else ""
            rows = txn.execute(
                "SELECT principal, target, expires_at, status FROM publish_connections WHERE connection_id = ?"
                + lock,
                (connection_id,),
            )
            if not rows or rows[0][0] != principal:
                return Completion.NOT_FOUND
            _, target, expires_at, status = rows[0]
            if ConnectionStatus(status) is ConnectionStatus.DONE:
                return Completion.ALREADY_DONE
            if ConnectionStatus(status) is ConnectionStatus.ABANDONED or time.time() >= expires_at:
                return Completion.EXPIRED
            sealed = self._sealer.seal(credential.encode(), credential_binding(principal, target))
            txn.execute(
                "INSERT INTO publish_credentials (principal, target, sealed, connection_id, stored_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (principal, target) DO UPDATE SET "
                "sealed = excluded.sealed, connection_id = excluded.connection_id, stored_at = excluded.stored_at",
                (principal, target, sealed, connection_id, time.time()),
            )
            txn.execute(
                "UPDATE publish_connections SET status = ?, completed_at = ? WHERE connection_id = ?",
                (ConnectionStatus.DONE.value, time.time(), connection_id),
            )
        return Completion.COMPLETED

    def abandon(self, connection_id: str, principal: str, within: LedgerTxn | None = None) -> None:
        """The user declined: the link stops working even if opened later. `within`: the caller's
        open transaction (a declined confirmation is claimed and its link abandoned at once)."""
        if within is None:
            with self._ledger.critical_section() as txn:
                self.abandon(connection_id, principal, txn)
            return
        within.execute(
            "UPDATE publish_connections SET status = ? WHERE connection_id = ? AND principal = ? AND status = ?",
            (ConnectionStatus.ABANDONED.value, connection_id, principal, ConnectionStatus.PENDING.value),
        )

    def credential(self, principal: str, target: str) -> str | None:
        with self._ledger.snapshot() as db:
            rows = db.execute(
                "SELECT sealed FROM publish_credentials WHERE principal = ? AND target = ?",
                (principal, target),
            )
        if not rows:
            return None
        plain = self._sealer.open(bytes(rows[0][0]), credential_binding(principal, target))
        return None if plain is None else plain.decode()

    def forget(self, principal: str, target: str) -> None:
        """The target refused the credential: the next publish asks for a new one."""
        with self._ledger.critical_section() as txn:
            txn.execute(
                "DELETE FROM publish_credentials WHERE principal = ? AND target = ?", (principal, target)
            )

    def close(self) -> None:
        """Nothing of its own: the ledger owns the connections."""


_LEGACY_TABLES = {
    "publish_connections": "connection_id, principal, target, created_at, expires_at, status, completed_at, "
    "note_id, note_title, tool, client",
    "publish_credentials": "principal, target, sealed, connection_id, stored_at",
}


def import_legacy_file(ledger: Ledger, path: Path) -> int:
    """Rule 6: copy an earlier version's `publish.sqlite3` into the ledger once; rows copied.

    Rows already in the ledger win (a second server may have imported first); the file is renamed
    only after the copy committed, so a crash in between repeats a copy that changes nothing.
    """
    if not path.is_file():
        return 0
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as old:
        rows = {
            table: old.execute(f"SELECT {columns} FROM {table}").fetchall()
            for table, columns in _LEGACY_TABLES.items()
        }
    with ledger.critical_section() as txn:
        for table, columns in _LEGACY_TABLES.items():
            marks = ", ".join("?" * len(columns.split(", ")))
            for row in rows[table]:
                txn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT DO NOTHING", row)
    path.rename(path.with_name(path.name + ".imported"))
    copied = sum(len(found) for found in rows.values())
    logger.info("publish connections moved into the ledger", extra={"file": str(path), "rows": copied})
    return copied
