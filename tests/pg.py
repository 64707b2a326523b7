"""The PostgreSQL every storage test uses: the service on 127.0.0.1:5432, a database of our own.

A session creates one database named `nw_issue3_<pid>_<random>` and drops it at the end.
An unreachable server fails the tests (never skips them): run ./scripts/services first.
The URL handed to notewarden carries a password the server never asks for (trust auth), so
tests can prove it never shows up in logs or messages.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import psycopg
import pytest

ADMIN_DSN = os.environ.get(
    "NOTEWARDEN_TEST_PG_ADMIN", "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
)
PG_PORT = 5432
SECRET_PASSWORD = "pw-never-logged-7f3a"


def database_url(name: str, *, port: int = PG_PORT) -> str:
    return f"postgresql://postgres:{SECRET_PASSWORD}@127.0.0.1:{port}/{name}"


def admin() -> psycopg.Connection[tuple[object, ...]]:
    try:
        return psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL on 127.0.0.1:{PG_PORT} is required and unreachable ({exc}); "
            "start it with ./scripts/services"
        )


class PgDatabase:
    """A database created for this session; `create` makes more (for tests that need an empty one)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.name = self.create()

    @property
    def url(self) -> str:
        return database_url(self.name)

    def create(self) -> str:
        name = f"nw_issue3_{os.getpid()}_{secrets.token_hex(4)}"
        with admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.names.append(name)
        return name

    def connect(self, name: str | None = None) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            f"host=127.0.0.1 port={PG_PORT} user=postgres dbname={name or self.name}", autocommit=True
        )

    def drop_all(self) -> None:
        with admin() as conn:
            for name in self.names:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg() -> Iterator[PgDatabase]:
    database = PgDatabase()
    try:
        yield database
    finally:
        database.drop_all()
