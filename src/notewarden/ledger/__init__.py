"""The confirmation ledger: every confirmation is consumed exactly once, across all instances.

Invariant: a confirmation id (the random `confirmation_id` sealed inside a round-1
`requestState`) has at most one row, and that row is written in the same transaction as
the effect it authorizes. Therefore:

* two retries racing with the same accepted state, on one process or many, produce one
  winner: the loser's `INSERT ... ON CONFLICT DO NOTHING RETURNING` returns no row;
* a crash before COMMIT leaves neither the row nor the effect (SQL stores), or a file
  step that is undone by recovery (the files store, see `notes.files`);
* a crash after COMMIT leaves both: the note in the trash, the confirmation consumed.

The claim is keyed on the authenticated id from inside the sealed state, never on the
token text (base64 is malleable: many strings open to the same state).

Terminal outcomes (accept+confirm, accept+not-confirmed, decline) consume; `cancel` and
invalid answers do not, so the same state stays usable until it expires. Rows outlive
their state's expiry by `EXPIRY_SKEW_SECONDS` and are then purged: growth is bounded by
the confirmation rate times the TTL. Instances' clocks must agree within that skew.

Two implementations: `sqlite.SqliteLedger` (one host, the embedded default) and
`postgres.PostgresLedger` (several instances). A note store that keeps its rows in the
ledger's database writes them through the open `LedgerTxn` with `execute`, in the
portable subset of SQL both dialects share and `?` placeholders; `lock_workspace`
serializes the writers of one workspace where the database's own locking does not.
A commit whose outcome is unknown (the connection died during COMMIT) runs no undo step:
the file step then stays for `recover` to settle against what did commit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = [
    "DURABILITY_LEVELS",
    "EXPIRY_SKEW_SECONDS",
    "Claim",
    "Durability",
    "Ledger",
    "LedgerStats",
    "LedgerTxn",
    "LedgerUnavailable",
    "SchemaOutOfDate",
    "SqlSession",
]

EXPIRY_SKEW_SECONDS = 120.0

Durability = Literal["normal", "full"]
"""`[storage] durability`: "normal" survives a killed process (no fsync per step: SQLite's
`synchronous=NORMAL` in WAL mode, the trash journal's lines written but not fsynced); "full" also
survives power loss (`synchronous=FULL`, each journal line fsynced)."""
DURABILITY_LEVELS: tuple[Durability, ...] = ("normal", "full")


class LedgerUnavailable(Exception):
    """The ledger database cannot be reached; nothing was changed and the call can be retried."""


class SchemaOutOfDate(Exception):
    """The database schema is not the version this notewarden needs; the message says what to run."""


@dataclass(frozen=True, slots=True)
class Claim:
    confirmation_id: str
    principal: str
    tool: str
    outcome: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class LedgerStats:
    rows: int
    oldest_expiry: float | None
    purged_total: int


class SqlSession(Protocol):
    """An open transaction on the ledger's database, for stores that keep rows there."""

    @property
    def dialect(self) -> str:
        """ "sqlite" or "postgres", for the few statements that differ."""
        ...

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run one statement written with `?` placeholders; the rows it returns (none for DML
        without RETURNING). A lost connection raises `LedgerUnavailable`."""
        ...


class LedgerTxn(SqlSession, Protocol):
    """One open write transaction (the critical section)."""

    def claim_confirmation(self, claim: Claim) -> bool:
        """Insert the claim; `False` when the id was already consumed (a replay)."""
        ...

    def prior_outcome(self, confirmation_id: str, principal: str) -> str | None:
        """The outcome recorded for an already-consumed id of this principal."""
        ...

    def on_rollback(self, undo: Callable[[], object]) -> None:
        """Run `undo` (last registered first) if the transaction does not commit."""
        ...

    def lock_workspace(self, workspace: str) -> None:
        """Hold, until this transaction ends, the lock that serializes every writer of `workspace`'s
        trash across processes (a no-op where the transaction already excludes all writers)."""
        ...

    @property
    def connection(self) -> Any:
        """The DB-API connection (dialect-specific; prefer `execute`)."""
        ...


class Ledger(Protocol):
    def critical_section(self) -> AbstractContextManager[LedgerTxn]:
        """Open a write transaction that serializes every claim; commit on normal exit."""
        ...

    def snapshot(self) -> AbstractContextManager[SqlSession]:
        """A read-only session, for stores that read their rows from the ledger's database (SQLite:
        one transaction; PostgreSQL: each statement sees what is committed when it runs)."""
        ...

    def consumed_outcome(self, confirmation_id: str, principal: str) -> str | None:
        """Read-only: the outcome an id was consumed with, so a non-consuming answer to an
        already-used confirmation is reported as such instead of inviting another answer."""
        ...

    def purge_expired(self, now: float) -> int: ...

    def stats(self) -> LedgerStats: ...

    def close(self) -> None: ...
