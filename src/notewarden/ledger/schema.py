"""Versioned schemas, one per component (the ledger, each note store), for SQLite and PostgreSQL.

Rule 1: a component's version is the number of its steps, and step N makes the same change
in both dialects, so a version names the same tables everywhere.
Rule 2: `schema_versions (component, version)` records what is applied. Steps run in one
transaction with the version update (both databases have transactional DDL), so an
upgrade is applied whole or not at all.
Rule 3: a SQLite file is brought up to date by the process that opens it: it is one host's
private file, and the embedded default must work with one command. PostgreSQL is shared by
instances that may run different notewarden versions during a rollout, so only
`notewarden db upgrade` changes it; a server refuses to start on a schema that is behind
(`SchemaOutOfDate`, whose message says to run that command).
The SQLite side of Rules 2 and 3 (the runner) is `notewarden.sqlite_migrations`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from notewarden.ledger import SchemaOutOfDate

__all__ = ["LEDGER_SCHEMA", "SchemaComponent", "check_versions"]


@dataclass(frozen=True, slots=True)
class SchemaComponent:
    name: str
    tables: tuple[str, ...]
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.sqlite) != len(self.postgres):
            raise ValueError(f"schema {self.name}: both dialects need the same number of steps")

    @property
    def latest(self) -> int:
        return len(self.sqlite)

    def steps(self, dialect: str) -> tuple[str, ...]:
        return self.sqlite if dialect == "sqlite" else self.postgres


LEDGER_SCHEMA = SchemaComponent(
    "ledger",
    tables=("confirmations",),
    sqlite=(
        """
        CREATE TABLE confirmations (
            confirmation_id TEXT PRIMARY KEY,
            principal       TEXT NOT NULL,
            tool            TEXT NOT NULL,
            outcome         TEXT NOT NULL,
            consumed_at     REAL NOT NULL,
            expires_at      REAL NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX confirmations_by_expiry ON confirmations (expires_at);
        """,
        """
        CREATE TABLE ledger_identity (
            singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
            ledger_id  TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        INSERT INTO ledger_identity (singleton, ledger_id, created_at)
            VALUES (1, lower(hex(randomblob(16))), (julianday('now') - 2440587.5) * 86400.0);
        ALTER TABLE confirmations ADD COLUMN receipt TEXT;
        """,
    ),
    postgres=(
        """
        CREATE TABLE confirmations (
            confirmation_id text NOT NULL CONSTRAINT confirmations_pkey PRIMARY KEY,
            principal       text NOT NULL,
            tool            text NOT NULL,
            outcome         text NOT NULL,
            consumed_at     double precision NOT NULL,
            expires_at      double precision NOT NULL
        );
        CREATE INDEX confirmations_by_expiry ON confirmations (expires_at);
        """,
        """
        CREATE TABLE ledger_identity (
            singleton  integer PRIMARY KEY CHECK (singleton = 1),
            ledger_id  text NOT NULL,
            created_at double precision NOT NULL
        );
        INSERT INTO ledger_identity (singleton, ledger_id, created_at)
            VALUES (1, replace(gen_random_uuid()::text, '-', ''), extract(epoch FROM clock_timestamp()));
        ALTER TABLE confirmations ADD COLUMN receipt text;
        """,
    ),
)
"""Step 2: the ledger's identity (a random id made with the database, see `LedgerIdentity`) and
each confirmation's receipt (what its commit did, JSON)."""


def check_versions(
    found: Mapping[str, int], components: Iterable[SchemaComponent], *, upgrade_hint: str
) -> None:
    """Raise `SchemaOutOfDate` unless every component is exactly at its latest version."""
    behind, ahead = [], []
    for component in components:
        current = found.get(component.name, 0)
        if current < component.latest:
            behind.append(
                f"{component.name} is at version {current}, this notewarden needs {component.latest}"
            )
        elif current > component.latest:
            ahead.append(
                f"{component.name} is at version {current}, newer than this notewarden ({component.latest})"
            )
    if behind:
        raise SchemaOutOfDate("database schema is behind: " + "; ".join(behind) + f". Run {upgrade_hint}")
    if ahead:
        raise SchemaOutOfDate("database schema is ahead: " + "; ".join(ahead) + ". Upgrade notewarden")
