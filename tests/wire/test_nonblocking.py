"""Issue 12 §2, on real server processes: nothing leaks, nothing blocks.

* Open files stay bounded: bursts of calls spaced more than anyio's 10 s worker-thread idle time
  apart (each burst runs on new threads) leave the server's open SQLite files where the first left
  them (tests/unit/test_ledger_threads.py bounds the pools themselves).
* A publish target that stalls holds no lock: while a confirmed publish waits on it, deletes
  commit, the trash lists, a second attempt is told the first is under way; afterwards the
  confirmation was used exactly once.
* A config reload that stalls (the file replaced by a FIFO nobody writes yet: what a hung network
  filesystem looks like) delays only the request that noticed the change and waits for it.
"""

from __future__ import annotations

import fcntl
import os
import struct
import termios
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx2
import pytest

from notewarden.ledger.sqlite import SqliteLedger
from notewarden.publish.connections import PUBLISH_SCHEMA, Completion, Connections
from notewarden.sealing import load_or_create_keys
from tests.conftest import ALICE_TOKEN, Deployment, HttpServer
from tests.wire.publishing import RecordingTarget
from tests.wire.rawhttp import RawMcp, meta

URL_MODE = {"elicitation": {"url": {}}}
FORM = {"elicitation": {"form": {}}}
PROMPT_SECONDS = 5.0
"""A call that is not held by anything answers well within this, even on a loaded machine."""


@pytest.fixture
def target() -> Iterator[RecordingTarget]:
    t = RecordingTarget(release=threading.Event()).start()  # a target that stalls until released
    yield t
    t.stop()


@pytest.fixture
def http_server(publishing_server: HttpServer) -> HttpServer:
    return publishing_server


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.monotonic()
    value = call()
    return value, time.monotonic() - start


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def open_files(pid: int) -> tuple[int, int]:
    """The server's open descriptors from /proc/<pid>/fd: (on SQLite files: databases, WALs and
    shared memory; all but sockets, whose number follows the clients)."""
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            continue
    return sum(".sqlite3" in link for link in links), sum(not link.startswith("socket:") for link in links)


async def burst(server: HttpServer, deployment: Deployment, calls: int = 72) -> None:
    """`calls` concurrent calls that each use the ledger or the publish store in a worker thread."""
    headers = {
        "Authorization": f"Bearer {ALICE_TOKEN}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
    }
    limits = httpx2.Limits(max_connections=calls)
    async with httpx2.AsyncClient(headers=headers, timeout=60, limits=limits) as http:

        async def one(i: int) -> None:
            tool, arguments = (
                ("notes_trash_list", {"workspaceUri": deployment.notes_uri})
                if i % 2
                else (
                    "notes_publish",
                    {"workspaceUri": deployment.notes_uri, "noteId": "todo.md", "target": "blog"},
                )
            )
            body = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments, "_meta": meta(FORM)},
            }
            reply = await http.post(
                server.url, json=body, headers={"Mcp-Method": "tools/call", "Mcp-Name": tool}
            )
            assert reply.status_code in (200, 400), reply.text  # notes_publish without URL mode: -32021

        async with anyio.create_task_group() as tasks:
            for i in range(calls):
                tasks.start_soon(one, i)


def test_open_files_stay_bounded_across_bursts_after_idle_threads_retire(
    http_server: HttpServer, deployment: Deployment
) -> None:
    pid = http_server.process.pid
    counts = []
    for round_ in range(3):
        if round_:
            time.sleep(10.5)  # anyio retires a worker thread idle for 10 s: the next burst runs on new ones
        anyio.run(burst, http_server, deployment)
        counts.append(open_files(pid))
    # (SQLite files, all but sockets) after each burst. The pools open connections as concurrency
    # needs them, up to 8 (ledger) + 4 (publish), 3 files each, plus the index's 3; nothing else grows.
    bound = 3 * (8 + 4) + 3
    assert all(sqlite <= bound for sqlite, _ in counts), counts
    assert len({total - sqlite for sqlite, total in counts}) == 1, counts


def test_a_stalled_publish_target_holds_no_lock(
    alice: RawMcp, http_server: HttpServer, deployment: Deployment, target: RecordingTarget
) -> None:
    args = {"workspaceUri": deployment.notes_uri, "noteId": "todo.md", "target": "blog"}
    first = alice.call("notes_publish", args, capabilities=URL_MODE).result
    link = first["inputRequests"]["publish_connect"]["params"]["url"]
    ledger = SqliteLedger(deployment.state / "notewarden.sqlite3", components=[PUBLISH_SCHEMA])
    connections = Connections(ledger, load_or_create_keys(deployment.state).keys)
    try:  # what the connect page does when the person submits the credential (tests/wire/test_publish.py)
        assert (
            connections.complete(link.rsplit("/", 1)[1], "alice", "blog-credential") is Completion.COMPLETED
        )
    finally:
        ledger.close()
    accepted: dict[str, Any] = {
        "capabilities": URL_MODE,
        "inputResponses": {"publish_connect": {"action": "accept"}},
        "requestState": first["requestState"],
    }
    asked = alice.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "stand-up"}).result

    def publish() -> dict[str, Any]:
        client = RawMcp(http_server.url, ALICE_TOKEN)
        try:
            return client.call("notes_publish", args, **accepted).result
        finally:
            client.close()

    with ThreadPoolExecutor(1) as pool:
        sending = pool.submit(publish)
        wait_for(lambda: len(target.received) == 1, "the note to reach the stalled target")

        listed, seconds = timed(
            lambda: alice.call("notes_trash_list", {"workspaceUri": deployment.notes_uri})
        )
        assert listed.status == 200 and seconds < PROMPT_SECONDS, seconds
        answer = {"action": "accept", "content": {"note_id": "meetings/standup.md", "confirm": True}}
        deleted, seconds = timed(
            lambda: (
                alice.call(
                    "notes_delete",
                    {"workspaceUri": deployment.notes_uri, "title": "stand-up"},
                    inputResponses={"delete_choice": answer},
                    requestState=asked["requestState"],
                ).result
            )
        )
        assert deleted["structuredContent"]["outcome"] == "deleted" and seconds < PROMPT_SECONDS, seconds
        again = alice.call("notes_publish", args, **accepted).result
        assert again["structuredContent"]["error"]["code"] == "publish_in_progress"
        assert not sending.done()

        assert target.release is not None
        target.release.set()
        published = sending.result(timeout=30)
    assert published["structuredContent"]["outcome"] == "published"
    replay = alice.call("notes_publish", args, **accepted).result
    assert replay["structuredContent"]["error"]["code"] == "confirmation_already_used"
    assert len(target.received) == 1, "sent once"


def test_a_stalled_config_reload_delays_only_the_request_waiting_for_it(
    alice: RawMcp, http_server: HttpServer, deployment: Deployment
) -> None:
    good = deployment.config.read_text().encode()
    fifo = deployment.root / "config.fifo"
    os.mkfifo(fifo)
    fifo.rename(deployment.config)  # the next request notices; reading it hangs until someone writes
    serving, stop = threading.Event(), threading.Event()

    def slow_filesystem() -> None:
        """Once `serving` is set, hand the config to every reader of the FIFO (a reload may read it again)."""
        while not stop.is_set():
            if serving.is_set():
                try:
                    fd = os.open(deployment.config, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:  # no reader right now (or the FIFO is gone)
                    pass
                else:  # one copy per reading: a reader not yet scheduled must not find two
                    if not struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]:
                        os.write(fd, good)
                    os.close(fd)
            time.sleep(0.01)

    def noticing() -> int:
        client = RawMcp(http_server.url, ALICE_TOKEN)
        try:
            return client.request("tools/list").status
        finally:
            client.close()

    with ThreadPoolExecutor(2) as pool:
        feeder = pool.submit(slow_filesystem)
        try:
            waiting = pool.submit(noticing)
            time.sleep(0.5)
            assert not waiting.done(), "the request that noticed the change waits for its reading"
            reads = {
                "notes_list": {"workspaceUri": deployment.notes_uri},
                "notes_read": {"workspaceUri": deployment.notes_uri, "noteId": "todo.md"},
                "notes_search": {"workspaceUri": deployment.notes_uri, "query": "stapler"},
            }
            for tool, arguments in reads.items():
                reply, seconds = timed(lambda tool=tool, arguments=arguments: alice.call(tool, arguments))
                assert reply.status == 200 and not reply.result.get("isError"), (tool, reply.result)
                assert seconds < PROMPT_SECONDS, (tool, seconds)
            assert not waiting.done()
            serving.set()
            assert waiting.result(timeout=30) == 200
        finally:
            replacement = deployment.root / "config.new"
            replacement.write_bytes(good)
            replacement.rename(deployment.config)
            stop.set()
            feeder.result(timeout=10)
    assert alice.call("notes_list", {"workspaceUri": deployment.notes_uri}).status == 200
