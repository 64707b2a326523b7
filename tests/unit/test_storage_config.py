"""`[storage]`: defaults unchanged, every mistake named with what is allowed, the URL kept secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from notewarden.config import DATABASE_URL_ENV, ConfigError, StorageSettings, parse_config, parse_storage
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.files import FilesNoteStore
from notewarden.services import open_services

URL = "postgresql://nw:secret-pw@db.internal:5432/notewarden"


def test_defaults_are_the_embedded_files_and_sqlite() -> None:
    settings = parse_storage({}, env={})
    assert settings == StorageSettings()
    assert (settings.notes, settings.ledger, settings.database_url) == ("files", "sqlite", None)
    assert settings.workspaces_are_directories


def test_postgres_notes_default_to_the_postgres_ledger_and_read_the_env() -> None:
    settings = parse_storage({"notes": "postgres"}, env={DATABASE_URL_ENV: URL})
    assert (settings.notes, settings.ledger, settings.database_url) == ("postgres", "postgres", URL)
    assert not settings.workspaces_are_directories
    assert "secret-pw" not in repr(settings)


def test_the_environment_wins_over_the_file() -> None:
    other = "postgresql://nw@other/notewarden"
    settings = parse_storage({"ledger": "postgres", "database_url": other}, env={DATABASE_URL_ENV: URL})
    assert settings.database_url == URL
    assert parse_storage({"ledger": "postgres", "database_url": other}, env={}).database_url == other


@pytest.mark.parametrize(
    ("table", "env", "message"),
    [
        ({"notes": "redis"}, {}, "use one of files, sqlite, postgres"),
        ({"ledger": "redis"}, {}, "use sqlite or postgres"),
        ({"notes": "sqlite", "ledger": "postgres"}, {DATABASE_URL_ENV: URL}, "needs ledger = 'sqlite'"),
        ({"notes": "postgres", "ledger": "sqlite"}, {}, "needs ledger = 'postgres'"),
        ({"ledger": "postgres"}, {}, f"set {DATABASE_URL_ENV}"),
        ({"database_url": URL}, {}, "neither notes nor ledger is postgres"),
        (
            {"ledger": "postgres", "database_url": "secret-pw =broken"},
            {},
            "not a valid PostgreSQL connection string",
        ),
        ({"pool_size": 0}, {}, "[storage] pool_size must be an integer between 1 and 1000; got 0"),
        ({"pool_size": 2.5}, {}, "pool_size must be an integer between 1 and 1000; got 2.5"),
        (
            {"connect_timeout_seconds": "5"},
            {},
            "connect_timeout_seconds must be a number between 0.5 and 600; got a string",
        ),
        (
            {"statement_timeout_seconds": True},
            {},
            "statement_timeout_seconds must be a number between 1 and 3600; got true",
        ),
        ({"pool": 3}, {}, "unknown key(s) pool in [storage]; allowed:"),
        ({"durability": "paranoid"}, {}, 'use "normal" (survives a killed process) or "full"'),
    ],
)
def test_mistakes_are_named(table: dict[str, Any], env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_storage(table, env=env)
    assert message in str(error.value)
    assert "secret-pw" not in str(error.value)


@pytest.mark.parametrize(("durability", "synchronous"), [("normal", 1), ("full", 2)])
def test_durability_reaches_the_ledger_and_the_trash(
    tmp_path: Path, durability: str, synchronous: int
) -> None:
    """`full` is SQLite's synchronous=FULL plus fsynced trash sidecars; `normal` survives a killed process."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n")
    config = parse_config(
        {
            "state_dir": str(tmp_path / "state"),
            "workspace": [{"uri": f"file://{notes}"}],
            "storage": {"durability": durability},
        }
    )
    services = open_services(config)
    try:
        assert isinstance(services.ledger, SqliteLedger) and isinstance(services.store, FilesNoteStore)
        with services.ledger.critical_section() as txn:
            assert txn.connection.execute("PRAGMA synchronous").fetchone()[0] == synchronous
        assert services.store._sync_trash is (durability == "full")
    finally:
        services.close()


def test_history_retention_is_bounded_and_reaches_the_store(tmp_path: Path) -> None:
    base: dict[str, Any] = {
        "state_dir": str(tmp_path / "state"),
        "workspace": [{"uri": f"file://{tmp_path}"}],
    }
    assert parse_config(base).history.max_versions == 50
    config = parse_config({**base, "history": {"max_versions": 7, "max_age_days": 30}})
    assert (config.history.max_versions, config.history.max_age_days) == (7, 30.0)
    services = open_services(config)
    try:
        assert (
            isinstance(services.store, FilesNoteStore) and services.store.history.retention == config.history
        )
    finally:
        services.close()
    for table, message in (
        ({"max_versions": 0}, "max_versions must be an integer between 1 and 10000"),
        ({"max_age_days": "a week"}, "max_age_days must be a number of days"),
        ({"keep": 3}, "keep"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_config({**base, "history": table})
