"""Proof 5: PostgreSQL unavailable mid-flow.

The servers reach PostgreSQL through a TCP proxy that the test kills and restarts (the shared
PostgreSQL service itself keeps running): killing it drops the servers' connections and
refuses new ones, exactly what a database restart or a network cut looks like to them.

While the database is away: the delete answers a clear, retriable tool error
(`temporarily_unavailable`), nothing is deleted and nothing is consumed, and the server goes
on serving what does not need the database. When the database returns, the same accepted
state completes. The same holds when the connection dies inside the transaction, between the
move to the trash and COMMIT.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.pg import PG_PORT, SECRET_PASSWORD, PgDatabase, database_url
from tests.race.fault_entry import PAUSE_AT_ENV, PAUSE_FILE_ENV
from tests.race.harness import Round1, StorageDeployment, deployment
from tests.race.senders import classify
from tests.race.test_crash import wait_for
from tests.wire.rawhttp import RawMcp

NOTE = "reports/outage.md"
BODY = "# Outage report\n\nWritten while the database was fine.\n"
PG_BACKENDS = ["postgres", "files+postgres"]


class Proxy:
    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.race.tcpproxy", str(self.port), str(PG_PORT)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "ready"

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    p = Proxy()
    p.start()
    yield p
    if p.process is not None and p.process.poll() is None:
        p.kill()


def code(result: dict[str, Any]) -> str | None:
    return result["structuredContent"]["error"]["code"] if result.get("isError") else None


def retry_until_back(
    d: StorageDeployment, client: RawMcp, first: Round1, seconds: float = 45
) -> dict[str, Any]:
    """Round 2 again until the pool has reconnected; every failure meanwhile must be the retriable one."""
    deadline = time.monotonic() + seconds
    while True:
        result = d.round2(client, first, NOTE)
        if code(result) != "temporarily_unavailable" or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def assert_untouched(d: StorageDeployment, claims: int) -> None:
    assert d.claims() == claims and d.trash_rows(NOTE) == 0 and d.records() == 0
    if d.notes_kind != "files":
        assert d.note_body(NOTE) == BODY


@pytest.mark.parametrize("backend", PG_BACKENDS)
def test_database_gone_between_rounds(tmp_path: Path, pg: PgDatabase, proxy: Proxy, backend: str) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        server = d.start(NOTEWARDEN_DATABASE_URL=database_url(pg.name, port=proxy.port))
        client = d.client(server)
        first = d.round1(client, "outage report")
        claims = d.claims()

        proxy.kill()
        started = time.monotonic()
        failed = d.round2(client, first, NOTE)
        assert code(failed) == "temporarily_unavailable"
        assert (
            "nothing was changed" in failed["content"][0]["text"] and "Retry" in failed["content"][0]["text"]
        )
        assert time.monotonic() - started < 15, "fails within the configured timeouts, does not hang"
        assert_untouched(d, claims)
        assert d.note_body(NOTE) == BODY

        assert client.request("tools/list").status == 200, "still serving what needs no database"
        listing = client.call("notes_list", {"workspaceUri": d.workspace_uri}).result
        if d.notes_kind == "files":
            assert [n["id"] for n in listing["structuredContent"]["notes"]] == [NOTE]
        else:
            assert code(listing) == "temporarily_unavailable"

        proxy.start()
        assert classify(retry_until_back(d, client, first), NOTE) == "deleted"
        assert d.note_body(NOTE) is None and d.trash_copies(NOTE) == 1 and d.trash_rows(NOTE) == 1
        assert d.claims() == claims + 1 and d.records("notes_delete") == 1
        assert SECRET_PASSWORD not in d.logs()
        assert f"127.0.0.1:{proxy.port}/{pg.name}" in d.logs(), "the log names where the database is"


@pytest.mark.parametrize("backend", PG_BACKENDS)
def test_connection_lost_between_the_move_and_commit(
    tmp_path: Path, pg: PgDatabase, proxy: Proxy, backend: str
) -> None:
    with deployment(tmp_path, backend, pg.name) as d:
        d.add_note(NOTE, BODY)
        pause = d.state_dir("a") / "paused"  # the server may write only there (Landlock)
        server = d.start(
            NOTEWARDEN_DATABASE_URL=database_url(pg.name, port=proxy.port),
            **{PAUSE_AT_ENV: "after_mutation", PAUSE_FILE_ENV: str(pause)},
        )
        client = d.client(server)
        first = d.round1(client, "outage report")
        claims = d.claims()

        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(d.round2, d.client(server), first, NOTE)
            wait_for(pause.exists)
            proxy.kill()
            pause.unlink()  # let it go on to COMMIT, on a dead connection
            failed = pending.result(timeout=60)
        assert code(failed) == "temporarily_unavailable"
        assert "lost while committing" in failed["content"][0]["text"]
        assert_untouched(d, claims)  # PostgreSQL rolled the transaction back
        if d.notes_kind == "files":
            # the file step stays in the trash (no undo on an unknown outcome) until recovery settles it
            assert d.note_body(NOTE) is None and d.trash_copies(NOTE) == 1

        proxy.start()
        assert classify(retry_until_back(d, client, first), NOTE) == "deleted"
        assert d.note_body(NOTE) is None
        assert d.trash_copies(NOTE) == 1 and d.trash_rows(NOTE) == 1 and d.claims() == claims + 1
        assert d.records("notes_delete") == 1, (
            "the record travelled with the COMMIT that was lost, then with the retry's"
        )
        assert SECRET_PASSWORD not in d.logs()


def terminate_backends(pg: PgDatabase) -> int:
    """What a database restart or an administrator does to every session of notewarden."""
    with pg.connect() as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND application_name = 'notewarden'",
            (pg.name,),
        ).fetchall()
    return len(rows)


def notewarden_sessions(pg: PgDatabase) -> int:
    with pg.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = 'notewarden'",
            (pg.name,),
        ).fetchone()
    assert row is not None
    return int(row[0])  # type: ignore[call-overload]


def test_terminated_sessions_fail_one_call_and_the_next_recovers(tmp_path: Path, pg: PgDatabase) -> None:
    """pg_terminate_backend on the real server: the delete in flight is `temporarily_unavailable`
    (nothing consumed), the retry on the same process completes; the pool never exceeds
    `[storage] pool_size` connections."""
    with deployment(tmp_path, "postgres", pg.name) as d:
        d.extra_config = "pool_size = 2\n"  # the last table written is [storage]
        d.add_note(NOTE, BODY)
        d.close()  # the test's own connections: only the server's remain
        pause = d.state_dir("a") / "paused"
        server = d.start(**{PAUSE_AT_ENV: "after_claim", PAUSE_FILE_ENV: str(pause)})
        client = d.client(server)
        first = d.round1(client, "outage report")
        claims = d.claims()
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(d.round2, d.client(server), first, NOTE)
            wait_for(pause.exists)
            assert terminate_backends(pg) >= 1
            pause.unlink()
            failed = pending.result(timeout=60)
        assert code(failed) == "temporarily_unavailable", failed
        assert_untouched(d, claims)
        assert classify(d.round2(client, first, NOTE), NOTE) == "deleted", "the next call, no restart"

        terminate_backends(pg)  # idle pooled sessions die too: at most one call finds out
        arguments = {"workspaceUri": d.workspace_uri}
        assert code(client.call("notes_list", arguments).result) in (None, "temporarily_unavailable")
        listing = client.call("notes_list", arguments).result
        assert code(listing) is None and listing["structuredContent"]["notes"] == []

        with ThreadPoolExecutor(8) as pool:
            calls = [
                pool.submit(
                    d.client(server).call, "notes_search", {"workspaceUri": d.workspace_uri, "query": "x"}
                )
                for _ in range(32)
            ]
            peak = max(notewarden_sessions(pg) for _ in range(20))
            assert all(code(c.result(timeout=60).result) is None for c in calls)
        assert 1 <= peak <= 2, f"{peak} sessions with pool_size = 2"
        assert SECRET_PASSWORD not in d.logs()
