"""Which ledger and note store a configuration selects, their schemas, and `notewarden db`.

| `[storage] notes` | ledger               | notes live in                        | a delete's trash            |
|-------------------|----------------------|--------------------------------------|-----------------------------|
| `files` (default) | `sqlite` or `postgres` | markdown files in workspace folders | `.notewarden-trash/` + a `trash` row |
| `sqlite`          | `sqlite`             | `notes` rows in state_dir/notewarden.sqlite3 | a `notes_trash` row   |
| `postgres`        | `postgres`           | `notes` rows in PostgreSQL           | a `notes_trash` row         |

Every store also keeps its notes' version history in the `note_history` table (`notes.history`),
and the record of every change in `change_log` (`notes.change_log`).
notes_publish's pending links and sealed credentials live in the ledger's database too
(`publish.connections`), so every instance sees a link completed on another.

Schema changes: the SQLite file is created and upgraded by whichever process opens it
(the embedded default works with one command); PostgreSQL only by `notewarden db upgrade`,
and a server refuses to start on a PostgreSQL schema that is behind (see `notewarden.schema`).

Rule 1 (one entry per backend): each `[storage] notes` value is one `NoteBackend` of `NOTE_STORES`
(its schemas, how its store is built, whether its notes are rows) and each `[storage] ledger` value
one `LedgerBackend` of `LEDGERS` (how it opens, upgrades and is read without a change); nothing here
branches on a backend's name, so a new backend is its implementation and one entry.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from notewarden.config import Config, ConfigError
from notewarden.ledger import Ledger, SqlSession
from notewarden.ledger.schema import LEDGER_SCHEMA
from notewarden.ledger.sqlite import SqliteLedger, SqliteSession
from notewarden.notes.change_log import CHANGE_LOG_SCHEMA, ChangeLog, Record, read_records
from notewarden.notes.files import FILES_STORE_SCHEMA, FilesNoteStore
from notewarden.notes.history import HISTORY_SCHEMA
from notewarden.notes.sql import SQL_STORE_SCHEMA, SqlNoteStore
from notewarden.notes.store import NoteStore
from notewarden.publish.connections import PUBLISH_SCHEMA
from notewarden.schema import SchemaComponent, SchemaOutOfDate, sqlite_upgrade, sqlite_versions

if TYPE_CHECKING:
    import psycopg

    from notewarden.ledger.postgres import PostgresLedger

__all__ = [
    "LEDGERS",
    "NOTE_STORES",
    "LedgerBackend",
    "NoteBackend",
    "open_ledger",
    "open_row_store",
    "open_store",
    "recorded_changes",
    "refuse_files_store",
    "schema_components",
    "schema_status",
    "sqlite_path",
    "upgrade_schema",
]

TrashLedger = Callable[[str], Ledger]
"""A workspace URI -> the ledger that owns its folder's trash (`Services.trash_ledger`, `notes.ownership`)."""


@dataclass(frozen=True, slots=True)
class NoteBackend:
    """One `[storage] notes` value (Rule 1)."""

    schemas: tuple[SchemaComponent, ...]
    """What its database holds besides the ledger (and `PUBLISH_SCHEMA`, which every one holds)."""
    build: Callable[[Config, Ledger, ChangeLog, TrashLedger | None], NoteStore]
    kept_as: Literal["files", "rows"]
    """What a note is: `files` in workspace folders, or database `rows`, which `notewarden import` /
    `export` fill and read (`open_row_store`)."""


def _files_store(
    config: Config, ledger: Ledger, changes: ChangeLog, trash_ledger: TrashLedger | None
) -> NoteStore:
    """Each folder's trash rows and history in the ledger that owns the folder (`trash_ledger`)."""
    return FilesNoteStore(
        config.state_dir / "notes-index.sqlite3",
        ledger=ledger,
        ledger_for=trash_ledger,
        durability=config.storage.durability,
        retention=config.history,
        changes=changes,
    )


def _sql_store(
    config: Config, ledger: Ledger, changes: ChangeLog, trash_ledger: TrashLedger | None
) -> NoteStore:
    """Everything in `ledger`, its one database: no other ledger is asked (`trash_ledger` unused)."""
    return SqlNoteStore(ledger, retention=config.history, changes=changes)


NOTE_STORES: Mapping[str, NoteBackend] = {
    "files": NoteBackend((FILES_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA), _files_store, "files"),
    "sqlite": NoteBackend((SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA), _sql_store, "rows"),
    "postgres": NoteBackend((SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA), _sql_store, "rows"),
}

ReadOnly = AbstractContextManager[tuple[str, dict[str, int], SqlSession]]
"""Where the database is, its schema versions, and a session that changes nothing."""


@dataclass(frozen=True, slots=True)
class LedgerBackend:
    """One `[storage] ledger` value (Rule 1)."""

    open: Callable[[Config, list[SchemaComponent], bool], Ledger]
    """(configuration, the components besides the ledger's, check_schema) -> the ledger."""
    upgrade: Callable[[Config, list[SchemaComponent]], dict[str, int]]
    """Bring every component (the ledger's first) to its latest version; steps applied per component."""
    read_only: Callable[[Config], ReadOnly]
    listen: Callable[[Config], Callable[[], psycopg.Connection[Any]]] | None = None
    """For a ledger several instances share: how `live.Relay` connects to hear the others' changes
    (`live` Rule 2). None: one process owns the ledger, and hears every change it makes itself."""

    @property
    def shared(self) -> bool:
        """Several instances serve one database: they hear each other's changes through `listen`,
        and each must open the others' sealed confirmations (the same sealing keys)."""
        return self.listen is not None


def sqlite_path(config: Config) -> Path:
    return config.state_dir / "notewarden.sqlite3"


def _open_sqlite(config: Config, components: list[SchemaComponent], check_schema: bool) -> Ledger:
    """Created and upgraded by whichever process opens it (`check_schema` does not apply). Its WAL is
    checkpointed by a thread (`ledger.sqlite` Rule 2): with `notes = "sqlite"` a write is up to the
    size of a note, and a checkpoint inside its `COMMIT` would cost every second large write
    another copy and sync of it."""
    settings = config.storage
    return SqliteLedger(
        sqlite_path(config),
        components=components,
        durability=settings.durability,
        pool_size=settings.pool_size,
        checkpoint="background",
    )


def _open_postgres(config: Config, components: list[SchemaComponent], check_schema: bool) -> Ledger:
    from notewarden.ledger.postgres import PostgresLedger

    settings = config.storage
    assert settings.database_url is not None  # config validation guarantees it
    return PostgresLedger(
        settings.database_url,
        components=components,
        pool_size=settings.pool_size,
        connect_timeout=settings.connect_timeout_seconds,
        statement_timeout=settings.statement_timeout_seconds,
        check_schema=check_schema,
    )


def _upgrade_sqlite(config: Config, components: list[SchemaComponent]) -> dict[str, int]:
    config.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with closing(sqlite3.connect(sqlite_path(config), isolation_level=None)) as conn:
        return sqlite_upgrade(conn, components)


def _upgrade_postgres(config: Config, components: list[SchemaComponent]) -> dict[str, int]:
    """The ledger opened from the same configuration upgrades the same components."""
    with _postgres(config) as ledger:
        return ledger.upgrade()


@contextmanager
def _postgres(config: Config) -> Iterator[PostgresLedger]:
    from notewarden.ledger.postgres import PostgresLedger

    ledger = open_ledger(config, check_schema=False)
    assert isinstance(ledger, PostgresLedger)
    try:
        yield ledger
    finally:
        ledger.close()


@contextmanager
def _sqlite_read_only(config: Config) -> Iterator[tuple[str, dict[str, int], SqlSession]]:
    path = sqlite_path(config)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist yet: any start of notewarden creates it")
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
        yield f"sqlite {path}", sqlite_versions(conn), SqliteSession(conn)


@contextmanager
def _postgres_read_only(config: Config) -> Iterator[tuple[str, dict[str, int], SqlSession]]:
    with _postgres(config) as ledger, ledger.snapshot() as db:
        ((schema,),) = db.execute("SELECT current_schema()")
        inspected = f"schema {schema}" if schema else "no schema: search_path names none that exists"
        yield f"postgres {ledger.where}; {inspected}", ledger.versions(), db


def _postgres_listener(config: Config) -> Callable[[], psycopg.Connection[Any]]:
    """A connection of the relay's own, not the pool's: it stays in LISTEN."""
    url = config.storage.database_url
    assert url is not None  # config validation guarantees it
    timeout = max(1, round(config.storage.connect_timeout_seconds))

    def connect() -> psycopg.Connection[Any]:
        import psycopg

        return psycopg.connect(
            url, autocommit=True, connect_timeout=timeout, application_name="notewarden-live"
        )

    return connect


LEDGERS: Mapping[str, LedgerBackend] = {
    "sqlite": LedgerBackend(_open_sqlite, _upgrade_sqlite, _sqlite_read_only),
    "postgres": LedgerBackend(_open_postgres, _upgrade_postgres, _postgres_read_only, _postgres_listener),
}


def schema_components(config: Config) -> list[SchemaComponent]:
    """What the configured database holds besides the ledger."""
    return [*NOTE_STORES[config.storage.notes].schemas, PUBLISH_SCHEMA]


def open_ledger(config: Config, *, check_schema: bool = True) -> Ledger:
    return LEDGERS[config.storage.ledger].open(config, schema_components(config), check_schema)


def open_store(
    config: Config,
    ledger: Ledger,
    changes: ChangeLog | None = None,
    *,
    trash_ledger: TrashLedger | None = None,
) -> NoteStore:
    """The configured store, built with all it needs. `changes`: where its writes keep their records
    (one per process: it paces pruning). `trash_ledger`: the ledger that owns a workspace folder's
    trash (`Services.trash_ledger`, `notes.ownership`), which may be another state dir's; the files
    store keeps each folder's trash rows and history there. The SQL stores keep everything in
    `ledger`, their one database."""
    build = NOTE_STORES[config.storage.notes].build
    return build(config, ledger, changes or ChangeLog(config.audit), trash_ledger)


def open_row_store(config: Config, ledger: Ledger) -> SqlNoteStore:
    """The store of a configuration whose notes are database rows (`sqlite`, `postgres`), for
    `notewarden import` / `export`; a `ConfigError` for `files`, whose notes are files already."""
    refuse_files_store(config)
    store = open_store(config, ledger)
    assert isinstance(store, SqlNoteStore)  # the store of every backend whose notes are rows
    return store


def refuse_files_store(config: Config) -> None:
    """Import and export move notes between a folder and rows: a files store has no rows."""
    notes = config.storage.notes
    kept_as = NOTE_STORES[notes].kept_as
    if kept_as != "rows":
        rows = " or ".join(name for name, backend in NOTE_STORES.items() if backend.kept_as == "rows")
        raise ConfigError(
            f"[storage] notes = {notes} keeps notes as {kept_as} already; import and export need {rows}"
        )


def upgrade_schema(config: Config) -> dict[str, int]:
    """Bring the configured database to the latest schema; steps applied per component."""
    return LEDGERS[config.storage.ledger].upgrade(config, [LEDGER_SCHEMA, *schema_components(config)])


def _read_only(config: Config) -> ReadOnly:
    return LEDGERS[config.storage.ledger].read_only(config)


def schema_status(config: Config, *, now: float | None = None) -> tuple[bool, list[tuple[str, str]]]:
    """(up to date?, lines of `notewarden db status`): where, schema versions, row counts, expiry."""
    now = time.time() if now is None else now
    components = [LEDGER_SCHEMA, *schema_components(config)]
    with _read_only(config) as (where, versions, db):
        lines = [("database", f"{where}; notes: {config.storage.notes}")]
        for component in components:
            found = versions.get(component.name, 0)
            mark = "up to date" if found == component.latest else "run `notewarden db upgrade --config FILE`"
            lines.append((f"schema {component.name}", f"version {found} of {component.latest} ({mark})"))
        for component in components:
            if versions.get(component.name, 0):
                for table in component.tables:
                    ((rows,),) = db.execute(f"SELECT count(*) FROM {table}")
                    lines.append((f"rows {table}", str(rows)))
        if versions.get(LEDGER_SCHEMA.name, 0) >= 2:
            ((ledger_id,),) = db.execute("SELECT ledger_id FROM ledger_identity")
            lines.append(("ledger id", f"{ledger_id} (named in each workspace folder's trash it owns)"))
        if versions.get(LEDGER_SCHEMA.name, 0):
            ((oldest, expired),) = db.execute(
                "SELECT min(expires_at), count(CASE WHEN expires_at < ? THEN 1 END) FROM confirmations",
                (now,),
            )
            lines.append(("oldest expiry", _iso(oldest) if oldest is not None else "-"))
            lines.append(("expired, awaiting purge", f"{expired} (each server purges them every minute)"))
    current = all(versions.get(c.name, 0) == c.latest for c in components)
    return current, lines


def recorded_changes(
    config: Config,
    *,
    workspace: str | None = None,
    principal: str | None = None,
    since: float | None = None,
    limit: int = 100,
) -> list[Record]:
    """`notewarden audit`: the newest records of the configured database, read without changing it.
    `SchemaOutOfDate` when it has no record table yet; `FileNotFoundError` when no server made it."""
    with _read_only(config) as (where, versions, db):
        if versions.get(CHANGE_LOG_SCHEMA.name, 0) < CHANGE_LOG_SCHEMA.latest:
            raise SchemaOutOfDate(
                f"{where} keeps no record of changes yet: run `notewarden db upgrade --config FILE` "
                "(a SQLite file gets it at the next start of a server)"
            )
        return read_records(db, workspace=workspace, principal=principal, since=since, limit=limit)


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))
