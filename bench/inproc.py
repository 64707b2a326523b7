"""Server CPU per confirmed delete, in process: for A/B of code changes on a busy machine.

    .venv/bin/python -m bench.inproc --calls 500

The shipped HTTP application (`build_http_app`, every middleware, the SDK's transport,
the ledger and the files store) is driven directly as an ASGI app: no sockets, no
uvicorn, no load client in the measurement. The workspace holds one note, re-created
after each delete outside the measured part, so the folder scan stays constant and
what is measured is the fixed cost of a confirmed delete (two requests, the sealed
state, the ledger transaction, the trash move with its fsyncs). CPU time of the whole
process (all threads) is summed over the measured requests only, so other load on the
machine moves it far less than it moves wall-clock throughput.

A/B of two versions of src/ (e.g. before and after a change), alternating runs:

    git archive HEAD~1 src | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/src:. .venv/bin/python -m bench.inproc     # A
    .venv/bin/python -m bench.inproc                                  # B
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Message

from bench.data import BenchNote, write_workspace
from bench.load import _META
from bench.servers import BENCH_TOKEN, prepare_notewarden

__all__ = ["cpu_per_confirmed_delete"]


async def _post(app: ASGIApp, params: dict[str, Any], request_id: int) -> dict[str, Any]:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {**params, "_meta": _META}}
    ).encode()
    headers = [
        (b"host", b"127.0.0.1:8765"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", params["name"].encode()),
        (b"authorization", b"Bearer " + BENCH_TOKEN.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8765),
    }
    delivered = False
    done = asyncio.Event()
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await app(scope, receive, send)
    raw = b"".join(chunks).decode()
    if not raw.startswith("{"):  # an SSE stream: the result is the last data line
        raw = [line[5:] for line in raw.replace("\r\n", "\n").split("\n") if line.startswith("data:")][-1]
    result: dict[str, Any] = json.loads(raw)["result"]
    return result


async def cpu_per_confirmed_delete(calls: int, warmup: int = 20) -> float:
    """Milliseconds of process CPU per confirmed delete, averaged over `calls` deletes."""
    from notewarden.app import build_http_app
    from notewarden.config import load_config
    from notewarden.services import open_services

    work = Path(tempfile.mkdtemp(prefix="notewarden-inproc-"))
    note = BenchNote(1)
    try:
        config = load_config(prepare_notewarden(work, iter([note]), tag="inproc"))
        services = open_services(config)
        app = build_http_app(services)
        folder, uri = Path(config.workspaces[0].path), str(config.workspaces[0])
        args = {"workspaceUri": uri, "title": note.token}
        answer = {"action": "accept", "content": {"note_id": note.id, "confirm": True}}
        cpu = 0.0
        async with app.router.lifespan_context(app):
            for i in range(warmup + calls):
                started = time.process_time()
                asked = await _post(app, {"name": "notes_delete", "arguments": args}, 2 * i)
                key = next(iter(asked["inputRequests"]))
                done = await _post(
                    app,
                    {
                        "name": "notes_delete",
                        "arguments": args,
                        "inputResponses": {key: answer},
                        "requestState": asked["requestState"],
                    },
                    2 * i + 1,
                )
                if i >= warmup:
                    cpu += time.process_time() - started
                if done.get("structuredContent", {}).get("outcome") != "deleted":
                    raise RuntimeError(f"the delete did not complete: {json.dumps(done)[:300]}")
                write_workspace(folder, iter([note]))
        services.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return cpu / calls * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1, help="runs in this process, each printed")
    args = parser.parse_args(argv)
    for _ in range(args.repeat):
        ms = asyncio.run(cpu_per_confirmed_delete(args.calls))
        print(f"server CPU per confirmed delete: {ms:.3f} ms (mean of {args.calls}, in process)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
