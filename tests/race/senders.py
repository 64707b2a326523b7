"""Racing senders: long-lived processes that post the same request at the same instant.

Kept apart from the harness so that a spawned sender imports only the raw HTTP client
(fast start); every reply is still validated against the 2026-07-28 schema (`RawMcp`).
"""

from __future__ import annotations

import json
import multiprocessing
import queue
import time
from typing import Any

from tests.wire.rawhttp import RawMcp


def accept(note_id: str) -> dict[str, Any]:
    return {"delete_choice": {"action": "accept", "content": {"note_id": note_id, "confirm": True}}}


def classify(result: dict[str, Any], note_id: str) -> str:
    """`deleted`, `replay` (confirmation_already_used) or a description of anything else."""
    if result.get("resultType") == "complete" and not result.get("isError"):
        structured = result.get("structuredContent", {})
        if structured.get("outcome") == "deleted" and [d["id"] for d in structured["deleted"]] == [note_id]:
            return "deleted"
    elif result.get("isError") and result.get("structuredContent", {}).get("error", {}).get("code") == (
        "confirmation_already_used"
    ):
        return "replay"
    return "other: " + json.dumps(result)[:300]


def _sender(index: int, barrier: Any, tasks: Any, results: Any) -> None:
    clients: dict[tuple[str, str], RawMcp] = {}
    results.put((-1, index, "ready"))
    while (task := tasks.get()) is not None:
        trial, url, token, arguments, params, note_id = task
        try:
            if (url, token) not in clients:
                clients[url, token] = RawMcp(url, token)
                clients[url, token].request("tools/list")  # open the keep-alive connection before racing
            barrier.wait(timeout=60)
            reply = clients[url, token].call("notes_delete", arguments, **params)
            kind = classify(reply.result, note_id)
        except Exception as exc:  # includes schema-validation failures: reported, never swallowed
            kind = f"exception: {exc.__class__.__name__}: {str(exc)[:300]}"
        results.put((trial, index, kind))
    for client in clients.values():
        client.close()


class SenderPool:
    """`n` sender processes; `fire` sends them one request and releases them together at a barrier.

    Sender i posts to `urls[i % len(urls)]`, over a connection it keeps per server.
    """

    def __init__(self, n: int = 8) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.n = n
        self.barrier = ctx.Barrier(n)
        self.tasks = [ctx.Queue() for _ in range(n)]
        self.results: Any = ctx.Queue()
        self.processes = [
            ctx.Process(target=_sender, args=(i, self.barrier, self.tasks[i], self.results), daemon=True)
            for i in range(n)
        ]
        for p in self.processes:
            p.start()
        self._collect(-1)

    def _collect(self, trial: int) -> list[tuple[int, int, str]]:
        replies: list[tuple[int, int, str]] = []
        deadline = time.monotonic() + 120
        while len(replies) < self.n:
            try:
                replies.append(self.results.get(timeout=1))
            except queue.Empty:
                dead = [p.exitcode for p in self.processes if not p.is_alive()]
                assert not dead and time.monotonic() < deadline, f"senders died or hung: {dead}"
        assert all(t == trial for t, _, _ in replies), replies
        return replies

    def fire(
        self,
        trial: int,
        urls: list[str],
        token: str,
        arguments: dict[str, Any],
        params: dict[str, Any],
        note_id: str,
    ) -> list[str]:
        for i, tasks in enumerate(self.tasks):
            tasks.put((trial, urls[i % len(urls)], token, arguments, params, note_id))
        return [kind for _, _, kind in sorted(self._collect(trial), key=lambda r: r[1])]

    def close(self) -> None:
        for tasks in self.tasks:
            tasks.put(None)
        for p in self.processes:
            p.join(timeout=20)
            if p.is_alive():
                p.kill()
