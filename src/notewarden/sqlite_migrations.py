"""Bring a SQLite file's schema up to date: the runner every SQLite database of notewarden uses
(the ledger's file, the notes index, notes_publish's connections), so that none of them imports
another's implementation.

Rule 1: `schema_versions (component, version)` records what is applied; a component's version is
the number of its steps (`ledger.schema` Rule 1), and the steps missing run in order.
Rule 2: one upgrade is one `BEGIN IMMEDIATE` transaction with the version update, so it is applied
whole or not at all, and two processes opening the same file never both run a step.
Rule 3: a file whose component is ahead of this notewarden is refused (`SchemaOutOfDate`), never
downgraded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from notewarden.ledger.schema import SchemaComponent, check_versions

__all__ = ["apply_migrations", "split_script", "sqlite_upgrade", "sqlite_versions"]

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
