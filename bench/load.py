"""The load client: raw Streamable HTTP (2026-07-28) over keep-alive connections, N workers.

Raw HTTP with `httpx2.AsyncClient` (the HTTP client the SDK itself uses), not the SDK's
`Client`: every request is one POST with the 2026-07-28 envelope in `_meta` and the
routing headers, so the client's own cost per call stays small and identical for every
server. One event loop; `workers` coroutines each run one flow after another on a shared
connection pool of `workers` keep-alive connections.

Flows (each checks its answers; a wrong answer is counted as an error, never as a success):

    delete   notes_delete round 1 -> input_required with a form -> accept {note_id, confirm: true}
             -> complete with outcome "deleted": one confirmed delete, two round trips
    round1   notes_delete round 1 only (nothing is deleted; repeatable on the same notes)
    read     one plain read call: notes_read {workspaceUri, noteId}
    search   notes_search {workspaceUri, query}: the answer must name the note searched for

`run_flow` drives one server with N workers; `run_interleaved` drives several servers with one
client each, one call at a time, in alternating chunks (latency without queueing, the servers
measured seconds apart under the same conditions).

During the warm-up every JSON-RPC message is also validated against the 2026-07-28
schema (tests/schema.py); timed calls only check what the flow needs.

    python -m bench.load --url http://127.0.0.1:8765/mcp --token T --workspace-uri file:///w \\
        --flow read --first 0 --count 2000 --workers 8
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from bench.data import BenchNote

__all__ = ["FLOWS", "FlowStats", "McpHttp", "Target", "percentile", "run_flow", "run_interleaved"]

PROTOCOL = "2026-07-28"
_META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "notewarden-bench", "version": "1"},
}


class FlowError(Exception):
    """A server answered something the flow does not accept (or did not answer)."""


@dataclass(frozen=True, slots=True)
class Target:
    """One server to drive: its endpoints (several = instances behind a round-robin balancer)."""

    name: str
    urls: tuple[str, ...]
    workspace_uri: str
    token: str | None = None


class McpHttp:
    """Tool calls over Streamable HTTP; `validate` checks every message against the spec schema."""

    def __init__(self, target: Target, *, connections: int, validate: bool = False) -> None:
        self.target = target
        self.validate = validate
        self._ids = itertools.count(1)
        self._next_url = itertools.cycle(target.urls)
        self.http = httpx2.AsyncClient(
            timeout=600,  # a first call may build the search index of a large workspace
            limits=httpx2.Limits(max_connections=connections, max_keepalive_connections=connections),
        )
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
            "Mcp-Method": "tools/call",
        }
        if target.token:
            self._headers["Authorization"] = f"Bearer {target.token}"

    async def aclose(self) -> None:
        await self.http.aclose()

    async def request(self, method: str, params: dict[str, Any], *, url: str | None = None) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": next(self._ids),
            "method": method,
            "params": {**params, "_meta": _META},
        }
        headers = dict(self._headers, **{"Mcp-Method": method})
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
        response = await self.http.post(
            url or next(self._next_url), content=json.dumps(body), headers=headers
        )
        messages = _messages(response)
        if self.validate:
            from tests.schema import check_server_message

            for message in messages:
                check_server_message(method, message)
        if not messages:
            raise FlowError(
                f"HTTP {response.status_code} without a JSON-RPC message: {response.text[:200]!r}"
            )
        final = messages[-1]
        if "result" not in final:
            raise FlowError(f"{method} answered an error: {json.dumps(final.get('error'))[:300]}")
        result: dict[str, Any] = final["result"]
        return result

    async def call(
        self, tool: str, arguments: dict[str, Any], *, url: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments, **extra}, url=url)

    async def tool_names(self) -> set[str]:
        result = await self.request("tools/list", {})
        return {t["name"] for t in result["tools"]}


def _messages(response: httpx2.Response) -> list[dict[str, Any]]:
    ctype = response.headers.get("content-type", "")
    if ctype.startswith("application/json"):
        return [response.json()] if response.content else []
    if ctype.startswith("text/event-stream"):
        out = []
        for event in response.text.replace("\r\n", "\n").split("\n\n"):
            data = [line[5:].strip() for line in event.splitlines() if line.startswith("data:")]
            if data:
                out.append(json.loads("\n".join(data)))
        return out
    return []


def _complete(result: dict[str, Any], what: str) -> dict[str, Any]:
    if result.get("resultType", "complete") != "complete" or result.get("isError"):
        raise FlowError(f"{what}: expected a complete, successful result, got {json.dumps(result)[:300]}")
    return result


def _answer(form: dict[str, Any], note: BenchNote) -> dict[str, Any]:
    """Accept the form, picking `note` (it must be among the offered ones when ids are listed)."""
    schema = form.get("params", {}).get("requestedSchema", {})
    offered = [o.get("const") for o in schema.get("properties", {}).get("note_id", {}).get("oneOf", [])]
    if offered and note.id not in offered:
        raise FlowError(f"the form does not offer {note.id}: {offered[:5]}")
    return {"action": "accept", "content": {"note_id": note.id, "confirm": True}}


async def flow_delete(mcp: McpHttp, note: BenchNote) -> float:
    """Returns the seconds round 1 took (the caller times the whole flow)."""
    args = {"workspaceUri": mcp.target.workspace_uri, "title": note.token}
    # round 2 goes to the next instance when there are several: the state is all it needs
    started = time.perf_counter()
    asked = await mcp.call("notes_delete", args)
    round1 = time.perf_counter() - started
    if asked.get("resultType") != "input_required" or not asked.get("inputRequests"):
        raise FlowError(f"round 1: expected input_required with a form, got {json.dumps(asked)[:300]}")
    answers = {key: _answer(form, note) for key, form in asked["inputRequests"].items()}
    done = _complete(
        await mcp.call("notes_delete", args, inputResponses=answers, requestState=asked.get("requestState")),
        "round 2",
    )
    if done.get("structuredContent", {}).get("outcome") != "deleted":
        raise FlowError(f"round 2: the note was not deleted: {json.dumps(done)[:300]}")
    return round1


async def flow_round1(mcp: McpHttp, note: BenchNote) -> None:
    asked = await mcp.call("notes_delete", {"workspaceUri": mcp.target.workspace_uri, "title": note.token})
    if asked.get("resultType") != "input_required" or note.id not in json.dumps(asked.get("inputRequests")):
        raise FlowError(f"round 1: expected a form offering {note.id}, got {json.dumps(asked)[:300]}")


async def flow_read(mcp: McpHttp, note: BenchNote) -> None:
    result = _complete(
        await mcp.call("notes_read", {"workspaceUri": mcp.target.workspace_uri, "noteId": note.id}), "read"
    )
    if note.token not in json.dumps(result):
        raise FlowError(f"read: the answer does not contain {note.id}: {json.dumps(result)[:300]}")


async def flow_search(mcp: McpHttp, note: BenchNote) -> None:
    result = _complete(
        await mcp.call("notes_search", {"workspaceUri": mcp.target.workspace_uri, "query": note.token}),
        "search",
    )
    if note.id not in json.dumps(result):
        raise FlowError(f"search: {note.id} was not found: {json.dumps(result)[:300]}")


FLOWS: dict[str, Callable[[McpHttp, BenchNote], Any]] = {
    "delete": flow_delete,
    "round1": flow_round1,
    "read": flow_read,
    "search": flow_search,
}


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and all its threads, living or ended (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def database_cpu(database: str) -> dict[int, float]:
    """CPU seconds of each PostgreSQL backend serving `database` (its process title names it)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if title.startswith("postgres: ") and f" {database} " in title:
                found[int(entry.name)] = cpu_seconds(int(entry.name))
        except OSError:
            continue  # ended meanwhile
    return found


def machine_busy_seconds() -> float:
    """CPU seconds every process of the machine spent, all CPUs (Linux /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / _TICKS


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass
class FlowStats:
    target: str
    flow: str
    workers: int
    ok: int
    errors: int
    seconds: float
    per_second: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    first_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Timed:
    """The flows one client ran: each one's latency, its round 1 (the delete flow) and failures.
    A latency and its round 1 are appended together, so the two lists stay aligned."""

    latencies: list[float] = field(default_factory=list)
    first_rounds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    async def drive(
        self,
        run: Callable[[McpHttp, BenchNote], Any],
        mcp: McpHttp,
        notes: Iterable[BenchNote],
        *,
        workers: int,
        deadline: float = math.inf,
    ) -> float:
        """The flow over `notes`, `workers` at once, none started after `deadline`; the wall seconds."""
        queue = iter(notes)

        async def worker() -> None:
            for note in queue:
                if time.perf_counter() > deadline:
                    return
                began = time.perf_counter()
                try:
                    round1 = await run(mcp, note)
                except (FlowError, httpx2.HTTPError, ValueError, KeyError) as exc:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                self.latencies.append(time.perf_counter() - began)
                if round1 is not None:
                    self.first_rounds.append(round1)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(workers)))
        return time.perf_counter() - began

    def rounds_split(self) -> dict[str, float]:
        """The delete flow: how its latency splits between the two rounds (p50 of each)."""
        if not self.first_rounds:
            return {}
        seconds = [t - r for t, r in zip(self.latencies, self.first_rounds, strict=True)]
        return {
            "round1_p50_ms": round(percentile(sorted(self.first_rounds), 50) * 1000, 2),
            "round2_p50_ms": round(percentile(sorted(seconds), 50) * 1000, 2),
        }


async def _warm_up(
    run: Callable[[McpHttp, BenchNote], Any], mcp: McpHttp, notes: Iterable[BenchNote]
) -> float:
    """Sequential, every message schema-checked, not timed; then validation is switched off."""
    began = time.perf_counter()
    for note in notes:
        await run(mcp, note)
    mcp.validate = False
    return time.perf_counter() - began


async def run_flow(
    target: Target,
    flow: str,
    notes: Iterable[BenchNote],
    *,
    workers: int,
    warmup: Iterable[BenchNote] = (),
    max_seconds: float | None = None,
    server_pids: Sequence[int] = (),
    database: str | None = None,
) -> FlowStats:
    """Warm up (validating every message), then time the flow over `notes` with `workers` at once.

    With `server_pids`, the CPU time those processes (all their threads) spent during the
    timed part is reported per flow: unlike wall-clock throughput, it hardly moves when
    other work shares the machine. With `database`, so is the CPU of the PostgreSQL backends
    serving it; and always the whole machine's busy CPU per flow, so the rest can be accounted for.
    """
    run = FLOWS[flow]
    mcp = McpHttp(target, connections=workers, validate=True)
    timed = _Timed()
    try:
        warmup_seconds = await _warm_up(run, mcp, warmup)
        deadline = math.inf if max_seconds is None else time.perf_counter() + max_seconds
        server_cpu = sum(cpu_seconds(pid) for pid in server_pids)
        backends = database_cpu(database) if database else {}
        busy = machine_busy_seconds()
        client_cpu = time.process_time()
        seconds = await timed.drive(run, mcp, notes, workers=workers, deadline=deadline)
        client_cpu = time.process_time() - client_cpu
        busy = machine_busy_seconds() - busy
        server_cpu = sum(cpu_seconds(pid) for pid in server_pids) - server_cpu
        if database:
            after = database_cpu(database)
            database_seconds = sum(cpu - backends.get(pid, 0.0) for pid, cpu in after.items())
    finally:
        await mcp.aclose()
    flows = len(timed.latencies)
    extra: dict[str, Any] = {"warmup_seconds": round(warmup_seconds, 3)}
    if flows:
        extra["client_cpu_ms_per_flow"] = round(client_cpu * 1000 / flows, 3)
        if server_pids:
            extra["server_cpu_ms_per_flow"] = round(server_cpu * 1000 / flows, 3)
        if database:
            extra["database_cpu_ms_per_flow"] = round(database_seconds * 1000 / flows, 3)
        extra["machine_cpu_ms_per_flow"] = round(busy * 1000 / flows, 3)
    extra.update(timed.rounds_split())
    return _stats(target.name, flow, workers, timed.latencies, timed.errors, seconds, extra)


async def run_interleaved(
    targets: Sequence[Target],
    flow: str,
    notes: Sequence[BenchNote],
    *,
    warmup: Sequence[BenchNote] = (),
    chunk: int = 10,
    workers: int = 1,
    server_pids: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, FlowStats]:
    """The targets take turns, `chunk` flows each, on the same notes (each target holds its own
    copy), in an order that rotates every turn; within a turn, `workers` flows run at once. So
    every target meets the same machine: a drift in its speed (a VM's neighbours) moves all of
    them alike instead of whichever ran in those seconds.

    Warm-up as in `run_flow`. A target's throughput is its flows over the wall time of its turns;
    its server CPU per flow is the CPU of its processes over the whole timed part, divided by its
    flows (a target idles while the others take their turn)."""
    run = FLOWS[flow]
    clients = {t.name: McpHttp(t, connections=workers, validate=True) for t in targets}
    pids = server_pids or {}
    timed = {name: _Timed() for name in clients}
    busy = dict.fromkeys(clients, 0.0)
    try:
        warmup_seconds = sum([await _warm_up(run, mcp, warmup) for mcp in clients.values()])
        cpu_before = {name: sum(cpu_seconds(p) for p in pids.get(name, ())) for name in clients}
        client_cpu = time.process_time()
        order = list(clients)
        for turn, first in enumerate(range(0, len(notes), chunk)):
            for name in order[turn % len(order) :] + order[: turn % len(order)]:
                busy[name] += await timed[name].drive(
                    run, clients[name], notes[first : first + chunk], workers=workers
                )
        client_cpu = time.process_time() - client_cpu
        cpu_after = {name: sum(cpu_seconds(p) for p in pids.get(name, ())) for name in clients}
    finally:
        for mcp in clients.values():
            await mcp.aclose()
    all_flows = sum(len(t.latencies) for t in timed.values())
    out = {}
    for name, measured in timed.items():
        extra: dict[str, Any] = {"warmup_seconds": round(warmup_seconds, 3)}
        if measured.latencies:
            extra["client_cpu_ms_per_flow"] = round(client_cpu * 1000 / all_flows, 3)
            if pids.get(name):
                extra["server_cpu_ms_per_flow"] = round(
                    (cpu_after[name] - cpu_before[name]) * 1000 / len(measured.latencies), 3
                )
        extra.update(measured.rounds_split())
        out[name] = _stats(name, flow, workers, measured.latencies, measured.errors, busy[name], extra)
    return out


def _stats(
    name: str,
    flow: str,
    workers: int,
    latencies: list[float],
    errors: list[str],
    seconds: float,
    extra: dict[str, Any],
) -> FlowStats:
    latencies = sorted(latencies)
    return FlowStats(
        target=name,
        flow=flow,
        workers=workers,
        ok=len(latencies),
        errors=len(errors),
        seconds=round(seconds, 3),
        per_second=round(len(latencies) / seconds, 1) if seconds > 0 else 0.0,
        p50_ms=round(percentile(latencies, 50) * 1000, 2),
        p90_ms=round(percentile(latencies, 90) * 1000, 2),
        p99_ms=round(percentile(latencies, 99) * 1000, 2),
        first_error=errors[0][:500] if errors else None,
        extra=extra,
    )


async def tools_of(target: Target) -> set[str]:
    mcp = McpHttp(target, connections=1)
    try:
        return await mcp.tool_names()
    finally:
        await mcp.aclose()


def main(argv: list[str] | None = None) -> int:
    from bench.data import bench_notes

    parser = argparse.ArgumentParser(description="Drive one flow against a running server.")
    parser.add_argument("--url", action="append", required=True, help="endpoint (repeat for instances)")
    parser.add_argument("--token", help="bearer token")
    parser.add_argument("--workspace-uri", required=True)
    parser.add_argument("--flow", choices=sorted(FLOWS), required=True)
    parser.add_argument("--first", type=int, default=0, help="number of the first bench note to use")
    parser.add_argument("--count", type=int, default=1000, help="how many flows to time")
    parser.add_argument("--warmup", type=int, default=20, help="flows run first, validated, not timed")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--max-seconds", type=float)
    parser.add_argument("--repeat-notes", type=int, help="cycle over this many notes (round1/read/search)")
    args = parser.parse_args(argv)
    target = Target("cli", tuple(args.url), args.workspace_uri, args.token)
    pool = args.repeat_notes or (args.warmup + args.count)
    numbers = itertools.cycle(range(args.first, args.first + pool))
    warm = [BenchNote(next(numbers)) for _ in range(args.warmup)]
    if args.flow == "delete":
        notes: Iterable[BenchNote] = bench_notes(args.first + args.warmup, args.count)
    else:
        notes = (BenchNote(next(numbers)) for _ in range(args.count))
    stats = asyncio.run(
        run_flow(target, args.flow, notes, workers=args.workers, warmup=warm, max_seconds=args.max_seconds)
    )
    print(json.dumps(stats.as_dict(), indent=2))
    return 1 if stats.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
