"""`notewarden db upgrade|status` and the start-up schema check, as a user runs them (real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from notewarden.ledger.postgres import PostgresLedger
from notewarden.notes.sql import SQL_STORE_SCHEMA
from tests.conftest import free_port
from tests.pg import SECRET_PASSWORD, PgDatabase, database_url


def notewarden(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "notewarden", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def write_config(tmp_path: Path, storage: str) -> Path:
    (tmp_path / "notes").mkdir(exist_ok=True)
    config = tmp_path / "notewarden.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        f'[[workspace]]\nuri = "file://{tmp_path / "notes"}"\n'
        f'[[principal]]\nid = "alice"\nworkspaces = ["file://{tmp_path / "notes"}"]\n' + storage
    )
    return config


def test_postgres_schema_is_explicit(tmp_path: Path, pg: PgDatabase) -> None:
    empty = pg.create()
    config = write_config(tmp_path, '[storage]\nnotes = "postgres"\n')
    env = {"NOTEWARDEN_DATABASE_URL": database_url(empty)}

    status = notewarden("db", "status", "--config", str(config), env=env)
    assert status.returncode == 3, status
    assert "schema ledger" in status.stdout and "version 0 of 2" in status.stdout
    assert f"postgres@127.0.0.1:5432/{empty}" in status.stdout

    serve = notewarden(
        "serve", "--config", str(config), "--transport", "http", "--port", str(free_port()), env=env
    )
    assert serve.returncode == 3
    assert "notewarden db upgrade --config FILE" in serve.stderr

    upgrade = notewarden("db", "upgrade", "--config", str(config), env=env)
    assert upgrade.returncode == 0, upgrade.stderr
    assert upgrade.stdout.splitlines() == [
        "ledger: applied 2 step(s)",
        "sql_store: applied 5 step(s)",
        "note_history: applied 1 step(s)",
        "change_log: applied 1 step(s)",
        "publish: applied 2 step(s)",
    ]
    again = notewarden("db", "upgrade", "--config", str(config), env=env)
    assert again.stdout.splitlines() == [
        "ledger: already current",
        "sql_store: already current",
        "note_history: already current",
        "change_log: already current",
        "publish: already current",
    ]

    status = notewarden("db", "status", "--config", str(config), env=env)
    assert status.returncode == 0, status
    for line in (
        "ledger id",
        "rows confirmations",
        "rows notes",
        "rows notes_trash",
        "rows note_history",
        "rows change_log",
        "rows publish_connections",
        "oldest expiry",
        "expired, awaiting purge",
    ):
        assert line in status.stdout
    for output in (status, serve, upgrade, again):
        assert SECRET_PASSWORD not in output.stdout + output.stderr


def test_sqlite_is_created_by_the_first_start_or_by_upgrade(tmp_path: Path) -> None:
    config = write_config(tmp_path, '[storage]\nnotes = "sqlite"\n')
    status = notewarden("db", "status", "--config", str(config))
    assert status.returncode == 3 and "does not exist yet" in status.stdout
    upgrade = notewarden("db", "upgrade", "--config", str(config))
    assert upgrade.returncode == 0, upgrade.stderr
    assert "sql_store: applied 5 step(s)" in upgrade.stdout and "publish: applied 2 step(s)" in upgrade.stdout
    status = notewarden("db", "status", "--config", str(config))
    assert status.returncode == 0 and "rows notes" in status.stdout
    assert str(tmp_path / "state" / "notewarden.sqlite3") in status.stdout


def test_configuration_errors_are_clear_and_never_echo_the_url(tmp_path: Path) -> None:
    config = write_config(tmp_path, '[storage]\nnotes = "postgres"\nledger = "sqlite"\n')
    result = notewarden("db", "status", "--config", str(config))
    assert result.returncode == 2
    assert "needs ledger = 'postgres'" in result.stderr
    config = write_config(
        tmp_path, f'[storage]\nledger = "postgres"\ndatabase_url = "{SECRET_PASSWORD} not a url="\n'
    )
    result = notewarden("db", "status", "--config", str(config))
    assert result.returncode == 2 and "not a valid PostgreSQL connection string" in result.stderr
    assert SECRET_PASSWORD not in result.stderr


def test_database_url_options_are_kept_and_status_names_the_schema_it_inspected(
    tmp_path: Path, pg: PgDatabase
) -> None:
    name = pg.create()
    with pg.connect(name) as conn:
        conn.execute("CREATE SCHEMA team_notes")
    url = database_url(name) + "?options=-csearch_path%3Dteam_notes"
    config = write_config(tmp_path, '[storage]\nnotes = "postgres"\nstatement_timeout_seconds = 7\n')
    env = {"NOTEWARDEN_DATABASE_URL": url}

    assert notewarden("db", "upgrade", "--config", str(config), env=env).returncode == 0
    with pg.connect(name) as conn:
        placed = {
            r[0]
            for r in conn.execute(
                "SELECT table_schema FROM information_schema.tables WHERE table_name = 'notes'"
            )
        }
    assert placed == {"team_notes"}, "the URL's search_path was used, not replaced"
    status = notewarden("db", "status", "--config", str(config), env=env)
    assert status.returncode == 0, status
    assert "; schema team_notes; notes: postgres" in status.stdout
    assert SECRET_PASSWORD not in status.stdout + status.stderr

    ledger = PostgresLedger(url, components=[SQL_STORE_SCHEMA], statement_timeout=7)
    try:
        with ledger.snapshot() as db:
            assert db.execute("SHOW search_path") == [("team_notes",)]
            assert db.execute("SHOW statement_timeout") == [("7s",)], "notewarden's own settings still apply"
    finally:
        ledger.close()
