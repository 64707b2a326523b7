"""Versioned schemas, one per component (the ledger, each note store, the notes index, notes_publish's
connections), for SQLite and PostgreSQL, and the runner that brings a SQLite file up to date. Every
database of notewarden uses these, so that none imports another's implementation.

Rule 1: a component's version is the number of its steps, and step N makes the same change
in both dialects, so a version names the same tables everywhere.
Rule 2: `schema_versions (component, version)` records what is applied. Steps run in one
transaction with the version update (both databases have transactional DDL; SQLite: one
`BEGIN IMMEDIATE`), so an upgrade is applied whole or not at all, and two processes opening the
same file never both run a step.
Rule 3: a SQLite file is brought up to date by the process that opens it: it is one host's
private file, and the embedded default must work with one command. PostgreSQL is shared by
instances that may run different notewarden versions during a rollout, so only
`notewarden db upgrade` changes it (`ledger.postgres`); a server refuses to start on a schema
that is behind (`SchemaOutOfDate`, whose message says to run that command).
Rule 4: a database whose component is ahead of this notewarden is refused (`SchemaOutOfDate`),
never downgraded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "SchemaComponent",
    "SchemaOutOfDate",
    "apply_migrations",
    "check_versions",
    "split_script",
    "sqlite_upgrade",
    "sqlite_versions",
]


class SchemaOutOfDate(Exception):
    """The database schema is not the version this notewarden needs; the message says what to run."""


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


_VERSIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)


def split_script(script: str) -> list[str]:
    """Statements of a SQLite script, keeping `CREATE TRIGGER ... BEGIN ...; END;` whole."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip().rstrip(";"))
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return [s for s in statements if s]


def sqlite_versions(conn: sqlite3.Connection) -> dict[str, int]:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_versions'"
    ).fetchone()
    if not exists:
        return {}
    return {str(c): int(v) for c, v in conn.execute("SELECT component, version FROM schema_versions")}


def sqlite_upgrade(conn: sqlite3.Connection, components: Sequence[SchemaComponent]) -> dict[str, int]:
    """Apply every missing step in one `BEGIN IMMEDIATE` transaction; steps applied per component."""
    applied: dict[str, int] = {}
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_VERSIONS_TABLE)
        found = sqlite_versions(conn)
        for component in components:
            current = found.get(component.name, 0)
            if current > component.latest:
                check_versions(found, [component], upgrade_hint="")  # raises: ahead
            for script in component.sqlite[current:]:
                for statement in split_script(script):
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_versions (component, version) VALUES (?, ?) "
                "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                (component.name, component.latest),
            )
            applied[component.name] = component.latest - current
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied


def apply_migrations(conn: sqlite3.Connection, component: str, migrations: Sequence[str]) -> int:
    """Bring a SQLite-only component (an index, a cache) to its latest version; steps applied."""
    component_schema = SchemaComponent(
        component, tables=(), sqlite=tuple(migrations), postgres=tuple(migrations)
    )
    return sqlite_upgrade(conn, [component_schema])[component]
