"""Pending connections and stored credentials in the ledger's database, for instances that share one.

`publish.connections` keeps them in `<state_dir>/publish.sqlite3`, which only the processes of
one host see: with several instances on PostgreSQL, a link opened on instance B would complete a
connection that the retry on instance A never sees. When the ledger is PostgreSQL, `services`
uses this implementation instead: the same rules (`publish.connections` Rules 1-4), the same
interface (`ConnectionStore`), rows in the `publish` schema component of the ledger's database,
written through the ledger's bounded pool with portable SQL (`LedgerTxn.execute`).

Rule 2 (a connection completes at most once) holds across instances: the completion reads the
row `FOR UPDATE` (PostgreSQL), so of two instances completing one connection the second waits
for the first's commit and then finds it done.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Protocol

from notewarden.ledger import Ledger
from notewarden.ledger.schema import SchemaComponent
from notewarden.publish.connections import (
    _KEEP_FINISHED_SECONDS,
    MIGRATIONS,
    AskedBy,
    Completion,
    ConnectionStatus,
    PendingConnection,
)
from notewarden.publish.vault import Sealer, credential_binding, credential_sealer

__all__ = ["PUBLISH_SCHEMA", "ConnectionStore", "LedgerConnections"]

PUBLISH_SCHEMA = SchemaComponent(
    "publish",
    tables=("publish_connections", "publish_credentials"),
    sqlite=tuple(MIGRATIONS),
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


class ConnectionStore(Protocol):
    """What notes_publish and the connect pages need (`publish.connections` Rules 1-4)."""

    def start(
        self, principal: str, target: str, ttl: float, asked_by: AskedBy | None = None
    ) -> PendingConnection: ...

    def get(self, connection_id: str) -> PendingConnection | None: ...

    def complete(self, connection_id: str, principal: str, credential: str) -> Completion: ...

    def abandon(self, connection_id: str, principal: str) -> None: ...

    def credential(self, principal: str, target: str) -> str | None: ...

    def forget(self, principal: str, target: str) -> None: ...

    def close(self) -> None: ...


class LedgerConnections:
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

    def abandon(self, connection_id: str, principal: str) -> None:
        """The user declined: the link stops working even if opened later."""
        with self._ledger.critical_section() as txn:
            txn.execute(
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
