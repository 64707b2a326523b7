"""The ledger's own schema component (`notewarden.schema` Rules 1-4 say how components are
versioned and upgraded)."""

from __future__ import annotations

from notewarden.schema import SchemaComponent

__all__ = ["LEDGER_SCHEMA"]


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
