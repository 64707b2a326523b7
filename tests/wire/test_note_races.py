"""Two server processes, one workspace: racing updates of one version have exactly one winner."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import ALICE_TOKEN, Deployment, HttpServer, start_http_server
from tests.wire.rawhttp import RawMcp

pytestmark = pytest.mark.resolves_files


def test_concurrent_updates_across_processes_lose_nothing(
    deployment: Deployment, http_server: HttpServer
) -> None:
    other = start_http_server(deployment.config, deployment.root / "server-b.log")
    a, b = RawMcp(http_server.url, ALICE_TOKEN), RawMcp(other.url, ALICE_TOKEN)
    ws = deployment.notes_uri
    try:
        read = a.call("notes_read", {"workspaceUri": ws, "noteId": "todo.md"}).result["structuredContent"]
        version = read["note"]["version"]

        def update(i: int) -> dict[str, object]:
            client = (a, b)[i % 2]
            args = {
                "workspaceUri": ws,
                "noteId": "todo.md",
                "expectedVersion": version,
                "body": f"- writer {i}\n",
            }
            return client.call("notes_update", args).result

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(update, range(8)))
        winners = [r for r in results if not r.get("isError")]
        losers = [r["structuredContent"]["error"] for r in results if r.get("isError")]
        assert len(winners) == 1, results
        with sqlite3.connect(deployment.state / "notewarden.sqlite3") as db:
            ((records,),) = db.execute(
                "SELECT count(DISTINCT record_id) FROM change_log WHERE tool = 'notes_update'"
            ).fetchall()
        assert records == len(winners), "one record per write that changed the note"
        final = (deployment.notes / "todo.md").read_text()
        assert final.startswith("- writer ")
        winning_version = winners[0]["structuredContent"]["note"]["version"]
        assert {e["code"] for e in losers} == {"version_conflict"}
        assert {e["currentVersion"] for e in losers} == {winning_version}
        now = b.call("notes_read", {"workspaceUri": ws, "noteId": "todo.md"}).result["structuredContent"]
        assert now["body"] == final and now["note"]["version"] == winning_version
    finally:
        a.close()
        b.close()
        other.stop()
