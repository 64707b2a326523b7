"""Server CPU per confirmed delete, in process: for A/B of code changes on a busy machine.

    .venv/bin/python -m bench.inproc --calls 500
    .venv/bin/python -m bench.inproc --server fastmcp     # a baseline, the same way (JSON mode)
    .venv/bin/python -m bench.inproc --server minimal     # bench/baselines/minimal_notes.py

The shipped HTTP application (`build_http_app`, every middleware, the SDK's transport,
the ledger and the files store) is driven directly as an ASGI app: no sockets, no
uvicorn, no load client in the measurement. As in the comparison (bench/run_all.py), the
workspace holds `--notes` resident notes (1,000) and each delete takes a note of its own, so
what is measured is what one confirmed delete costs there (two requests, the title lookup,
the sealed state, the ledger transaction, the trash move with its fsyncs, the index's
write-through). CPU time of the whole
process (all threads), user and system apart, is summed over the measured requests only,
so other load on the machine moves it less than it moves wall-clock throughput (for a
number nothing moves, count instructions: bench/instructions.py).

A/B of two versions of src/ (e.g. before and after a change), alternating runs:

    git archive HEAD~1 src | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/src:. .venv/bin/python -m bench.inproc     # A
    .venv/bin/python -m bench.inproc                                  # B

The PostgreSQL store (`[storage] notes = ledger = "postgres"`), on a database of its own that is
created, filled by `notewarden import` and dropped:

    .venv/bin/python -m bench.inproc --storage postgres \
        --database-url postgresql://postgres@127.0.0.1:5432/nw_inproc --trace

There too each delete takes a note of its own out of `--notes` resident ones, and the PostgreSQL
backends' CPU is measured as well. `--trace` counts what the server sends PostgreSQL per
confirmed delete (libpq's protocol trace of each connection, turned on after the warm-up): round
trips (a `Sync` or a simple `Query` the client then waits on) and statements (`Bind` or `Query`);
tracing costs CPU, so measure CPU in a run without it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Message

from bench.data import BenchNote, bench_notes
from bench.load import _META, database_cpu
from bench.pgtrace import ROUND_TRIP, STATEMENT, sent, trace
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


@contextlib.contextmanager
def served(server: str, notes: list[BenchNote]) -> Iterator[tuple[ASGIApp, str]]:
    """(the ASGI app, its workspace URI), holding `notes` (on notewarden, a workspace at rest:
    `bench.data.write_workspace`)."""
    work = Path(tempfile.mkdtemp(prefix="notewarden-inproc-"))
    try:
        if server == "notewarden":
            from notewarden.app import build_http_app
            from notewarden.config import load_config
            from notewarden.services import open_services

            config = load_config(prepare_notewarden(work, iter(notes), tag="inproc"))
            services = open_services(config)
            try:
                yield build_http_app(services), str(config.workspaces[0])
            finally:
                services.close()
        else:
            uri = f"file://{work}/workspace-{server}"
            if server in ("mcpserver", "minimal"):
                from bench.baselines import mcpserver_notes, minimal_notes

                module = mcpserver_notes if server == "mcpserver" else minimal_notes
                yield (
                    module.build(uri, notes[0].number, len(notes)).streamable_http_app(json_response=True),
                    uri,
                )
            else:
                from bench.baselines import fastmcp_notes

                yield fastmcp_notes.build(uri, notes[0].number, len(notes)).http_app(json_response=True), uri
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _confirmed_delete(app: ASGIApp, uri: str, note: BenchNote, request_id: int) -> None:
    args = {"workspaceUri": uri, "title": note.token}
    answer = {"action": "accept", "content": {"note_id": note.id, "confirm": True}}
    asked = await _post(app, {"name": "notes_delete", "arguments": args}, request_id)
    key = next(iter(asked["inputRequests"]))
    done = await _post(
        app,
        {
            "name": "notes_delete",
            "arguments": args,
            "inputResponses": {key: answer},
            "requestState": asked["requestState"],
        },
        request_id + 1,
    )
    if done.get("structuredContent", {}).get("outcome") != "deleted":
        raise RuntimeError(f"the delete did not complete: {json.dumps(done)[:300]}")


async def cpu_per_confirmed_delete(
    calls: int, *, server: str = "notewarden", warmup: int = 20, notes: int = 1000
) -> tuple[float, float]:
    """Milliseconds of process CPU per confirmed delete (user, system), averaged over `calls` deletes,
    each of its own note out of max(`notes`, `warmup` + `calls`) resident ones."""
    resident = list(bench_notes(0, max(notes, warmup + calls)))
    with served(server, resident) as (app, uri):
        user = system = 0.0
        async with app.router.lifespan_context(app):  # type: ignore[attr-defined]
            for i, note in enumerate(resident[: warmup + calls]):
                started = os.times()
                await _confirmed_delete(app, uri, note, 2 * i)
                if i >= warmup:
                    ended = os.times()
                    user += ended.user - started.user
                    system += ended.system - started.system
    return user / calls * 1000, system / calls * 1000


class _Tracer:
    """libpq's protocol trace of every PostgreSQL connection the process opens, one file each,
    switched on by `start` (connections opened before it are traced from then on)."""

    def __init__(self, folder: Path) -> None:
        import psycopg

        self._folder, self._connections, self._files = folder, [], []  # type: ignore[var-annotated]
        self._on = False
        connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

        def traced(cls: Any, *args: Any, **kwargs: Any) -> Any:
            conn = connect(cls, *args, **kwargs)
            self._connections.append(conn)
            if self._on:
                self._trace(conn)
            return conn

        psycopg.Connection.connect = classmethod(traced)  # type: ignore[method-assign,assignment]

    def _trace(self, conn: Any) -> None:
        file = open(self._folder / f"trace-{len(self._files)}.txt", "w")  # noqa: SIM115
        self._files.append(file)
        trace(conn, file)

    def start(self) -> None:
        self._on = True
        for conn in self._connections:
            self._trace(conn)

    def counts(self) -> Counter[str]:
        """Frontend messages by type, once every trace is flushed."""
        for conn in self._connections:
            if not conn.closed:
                conn.pgconn.untrace()
        found: Counter[str] = Counter()
        for file in self._files:
            file.close()
            found += sent(Path(file.name).read_text(errors="replace"))
        return found


async def postgres_costs(
    calls: int, *, database_url: str, warmup: int = 20, notes: int = 1000, trace: bool = False
) -> dict[str, Any]:
    """Per confirmed delete on the PostgreSQL store: server process CPU (user, system), the
    PostgreSQL backends' CPU, and with `trace` the round trips and statements sent."""
    from bench.run_all import drop_database, prepare_postgres
    from notewarden.app import build_http_app
    from notewarden.config import load_config
    from notewarden.services import open_services

    database = database_url.rsplit("/", 1)[1]
    work = Path(tempfile.mkdtemp(prefix="notewarden-inproc-"))
    tracer = _Tracer(work) if trace else None
    resident = list(bench_notes(0, max(notes, warmup + calls)))
    try:
        config = load_config(prepare_postgres(work, resident, tag="inproc", database_url=database_url))
        services = open_services(config)
        try:
            app, uri = build_http_app(services), str(config.workspaces[0])
            async with app.router.lifespan_context(app):  # type: ignore[attr-defined]
                for i, note in enumerate(resident[:warmup]):
                    await _confirmed_delete(app, uri, note, 2 * i)
                if tracer is not None:
                    tracer.start()
                started, backends = os.times(), database_cpu(database)
                for i, note in enumerate(resident[warmup : warmup + calls], warmup):
                    await _confirmed_delete(app, uri, note, 2 * i)
                ended, backends_after = os.times(), database_cpu(database)
                messages = tracer.counts() if tracer is not None else None
        finally:
            services.close()
    finally:
        drop_database(database_url)
        shutil.rmtree(work, ignore_errors=True)
    database_seconds = sum(cpu - backends.get(pid, 0.0) for pid, cpu in backends_after.items())
    out: dict[str, Any] = {
        "user_ms": round((ended.user - started.user) / calls * 1000, 3),
        "system_ms": round((ended.system - started.system) / calls * 1000, 3),
        "database_ms": round(database_seconds / calls * 1000, 3),
    }
    if messages is not None:
        out["round_trips"] = round(sum(messages[m] for m in ROUND_TRIP) / calls, 2)
        out["statements"] = round(sum(messages[m] for m in STATEMENT) / calls, 2)
        out["parses"] = round(messages["Parse"] / calls, 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--server", choices=["notewarden", "mcpserver", "minimal", "fastmcp"], default="notewarden"
    )
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1, help="runs in this process, each printed")
    parser.add_argument("--json", action="store_true", help="print {user_ms, system_ms} as JSON")
    parser.add_argument("--storage", choices=["files", "postgres"], default="files")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/nw_inproc_bench")
    parser.add_argument("--notes", type=int, default=1000, help="resident notes")
    parser.add_argument("--trace", action="store_true", help="count round trips and statements (postgres)")
    args = parser.parse_args(argv)
    for _ in range(args.repeat):
        if args.storage == "postgres":
            costs = asyncio.run(
                postgres_costs(args.calls, database_url=args.database_url, notes=args.notes, trace=args.trace)
            )
            print(json.dumps(costs) if args.json else f"postgres, per confirmed delete: {costs}", flush=True)
            continue
        user, system = asyncio.run(cpu_per_confirmed_delete(args.calls, server=args.server, notes=args.notes))
        if args.json:
            print(json.dumps({"user_ms": round(user, 3), "system_ms": round(system, 3)}), flush=True)
            continue
        print(
            f"{args.server}: CPU per confirmed delete: {user + system:.3f} ms = {user:.3f} user + "
            f"{system:.3f} system (mean of {args.calls}, in process)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
