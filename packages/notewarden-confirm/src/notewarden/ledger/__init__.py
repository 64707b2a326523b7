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

Each ledger has an identity (`LedgerIdentity`): a random id created with its database (a
SQLite file, a PostgreSQL database) and stored in it, so a record written outside the
database (the files store's trash journal) can name the ledger that alone may settle it.
A consumed confirmation may carry a receipt (`record_receipt`, same transaction): what the
commit did, so a replay after a lost reply is answered with what happened, to the same
principal only. A write nobody reads back in the transaction (the change's record) may travel with
the COMMIT too (`write_at_commit`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = [
    "DURABILITY_LEVELS",
    "EXPIRY_SKEW_SECONDS",
    "Claim",
    "Durability",
    "Ledger",
    "LedgerIdentity",
    "LedgerStats",
    "LedgerTxn",
    "LedgerUnavailable",
    "PriorUse",
    "SqlSession",
    "TransactionSteps",
    "encode_receipt",
    "workspace_lock_key",
]

logger = logging.getLogger(__name__)

EXPIRY_SKEW_SECONDS = 120.0

Durability = Literal["normal", "full"]
"""`[storage] durability`: "normal" survives a killed process (no fsync per step: SQLite's
`synchronous=NORMAL` in WAL mode, the trash journal's lines written but not fsynced); "full" also
survives power loss (`synchronous=FULL`, each journal line fsynced)."""
DURABILITY_LEVELS: tuple[Durability, ...] = ("normal", "full")


def workspace_lock_key(workspace: str) -> int:
    """A signed 64-bit advisory-lock key for a workspace URI (PostgreSQL's `lock_workspace`; a SQL
    store may take the same lock inside one of its statements)."""
    digest = hashlib.sha256(b"notewarden-workspace\0" + workspace.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class LedgerUnavailable(Exception):
    """The ledger database cannot be reached; nothing was changed and the call can be retried."""


@dataclass(frozen=True, slots=True)
class Claim:
    confirmation_id: str
    principal: str
    tool: str
    outcome: str
    expires_at: float

    def row(self, consumed_at: float) -> tuple[str, str, str, str, float, float]:
        """Its `confirmations` row: confirmation_id, principal, tool, outcome, consumed_at, expires_at."""
        return (self.confirmation_id, self.principal, self.tool, self.outcome, consumed_at, self.expires_at)


@dataclass(frozen=True, slots=True)
class LedgerIdentity:
    """Which ledger this is, for records kept outside its database and for people reading them."""

    ledger_id: str
    """Random, created with the database and stored in it (`ledger_identity`); never reused."""
    kind: str
    """ "sqlite" or "postgres"."""
    location: str
    """The SQLite file's absolute path, or PostgreSQL's `user@host:port/dbname` (never a password)."""


@dataclass(frozen=True, slots=True)
class PriorUse:
    """How an already-consumed confirmation was used: its outcome and, where recorded, the receipt
    (`{"done": bool, "summary": str, "result": {...}}`: what the commit did)."""

    outcome: str
    receipt: Mapping[str, Any] | None = None

    @classmethod
    def from_row(cls, outcome: object, receipt: object) -> PriorUse:
        decoded = json.loads(receipt) if isinstance(receipt, str) else None
        return cls(str(outcome), decoded if isinstance(decoded, dict) else None)


def encode_receipt(receipt: Mapping[str, Any]) -> str:
    return json.dumps(receipt, ensure_ascii=False, separators=(",", ":"))


class TransactionSteps:
    """What a ledger transaction runs when it ends: undo steps if it does not commit (last
    registered first), follow-ups once it has. A failing step is logged; the others still run."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], object]] = []
        self._after_commit: list[Callable[[], object]] = []

    def on_rollback(self, undo: Callable[[], object]) -> None:
        self._undo.append(undo)

    def on_commit(self, then: Callable[[], object]) -> None:
        self._after_commit.append(then)

    def run_undo(self) -> None:
        for undo in reversed(self._undo):
            try:
                undo()
            except Exception:
                logger.exception("undo step failed during rollback; recovery will finish it")

    def run_after_commit(self) -> None:
        for then in self._after_commit:
            try:
                then()
            except Exception:
                logger.exception("a step after COMMIT failed; the committed change stands")


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

    def prior_outcome(self, confirmation_id: str, principal: str) -> PriorUse | None:
        """The outcome and receipt recorded for an already-consumed id of this principal (None for
        any other principal: it learns nothing)."""
        ...

    def record_receipt(self, confirmation_id: str, receipt: Mapping[str, Any]) -> None:
        """Keep what this transaction did with the claim it holds (committed together)."""
        ...

    def write_at_commit(self, sql: str, params: Sequence[object]) -> None:
        """Run a write whose result nobody reads (a change's record, `notes.change_log`) as part of this
        transaction, as late as its COMMIT: PostgreSQL sends it with the COMMIT in one round trip, as
        it does the receipt; SQLite, where a statement costs no round trip, runs it now."""
        ...

    def on_rollback(self, undo: Callable[[], object]) -> None:
        """Run `undo` (last registered first) if the transaction does not commit."""
        ...

    def on_commit(self, then: Callable[[], object]) -> None:
        """Run `then` once COMMIT has succeeded (not when its outcome is unknown); a failure is logged."""
        ...

    @property
    def identity(self) -> LedgerIdentity:
        """The ledger this transaction belongs to."""
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

    def consumed_outcome(self, confirmation_id: str, principal: str) -> PriorUse | None:
        """Read-only: how an id was consumed, so a non-consuming answer to an already-used
        confirmation is reported as such instead of inviting another answer."""
        ...

    @property
    def identity(self) -> LedgerIdentity: ...

    def purge_expired(self, now: float) -> int: ...

    def stats(self) -> LedgerStats: ...

    def close(self) -> None: ...
