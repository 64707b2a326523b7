"""What a small edit costs as the note grows: `notes_edit` append on a 1 KB and a 1 MB note over HTTP,
the size of the receipt of a one-line change in notes of 1 KB, 100 KB and 1 MB, and the first search
after them (a store may leave a large note's indexing to the next query: `notes.sql` Rule 3).

    .venv/bin/python -m bench.edit_cost                   # 300 appends per note, files store
    .venv/bin/python -m bench.edit_cost --count 50 --store sqlite

Goals (issue 13): the append's p50 on the 1 MB note is at most 3x the one on the 1 KB note, and the
receipt of a one-line change stays under 1 KB whatever the note's size. One `notewarden serve`
process (the shipped entry point, pinned to CPU 0 when there are two) serves the raw Streamable
HTTP client of `bench.load` (pinned to CPU 1), one call at a time; appends alternate between the
two notes so that both see the same machine. Each append is a real write: the replaced content is
saved in the note's history (50 versions kept, so the steady state also prunes one per write).
"receipt" is the result's `structuredContent` as JSON; the whole HTTP body also carries it again
as the text block and the `_meta` envelope. Prints a table, writes bench/results/edit_cost-<store>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.load import McpHttp, percentile
from bench.servers import notewarden_config, start_notewarden
from notewarden.config import load_config
from notewarden.notes.history import Change
from notewarden.scope.rights import Caller, Right
from notewarden.services import open_services

RESULTS = Path(__file__).resolve().parent / "results"
LINE = "Some words of a note about projects and meetings, with a number: 12345.\n"
SIZES = {"1 KB": 1024, "100 KB": 100 * 1024, "1 MB": 1024 * 1024}
TIMED = ("1 KB", "1 MB")
RATIO_GOAL = 3.0
RECEIPT_GOAL = 1024


def note_text(size: int) -> str:
    lines = ["# A note\n", "\n"]
    while sum(map(len, lines)) + len(LINE) <= size:
        lines.append(LINE.replace("12345", f"{len(lines):05d}"))
    return "".join(lines)


async def measure(url: str, workspace_uri: str, token: str, count: int, warmup: int) -> dict[str, Any]:
    from bench.load import Target

    mcp = McpHttp(Target("notewarden", (url,), workspace_uri, token), connections=1)
    try:

        async def append(name: str, i: int) -> float:
            arguments = {
                "workspaceUri": workspace_uri,
                "noteId": f"{name.replace(' ', '')}.md",
                "edits": [{"op": "append", "text": f"- appended line {i}"}],
            }
            started = time.perf_counter()
            result = await mcp.call("notes_edit", arguments)
            elapsed = time.perf_counter() - started
            if result.get("isError"):
                raise RuntimeError(f"append failed: {json.dumps(result)[:300]}")
            return elapsed

        for i in range(warmup):
            for name in TIMED:
                await append(name, -i)
        samples: dict[str, list[float]] = {name: [] for name in TIMED}
        for i in range(count):
            for name in TIMED if i % 2 else reversed(TIMED):
                samples[name].append(await append(name, i))

        receipts = {}
        for name, size in SIZES.items():
            note_id = f"{name.replace(' ', '')}.md"
            text = note_text(size)
            middle = text.index("\n", len(text) // 2) + 1
            old_line = text[middle : text.index("\n", middle) + 1].rstrip("\n")
            arguments = {
                "workspaceUri": workspace_uri,
                "noteId": note_id,
                "edits": [
                    {"op": "replace", "oldText": old_line, "newText": old_line.replace("words", "WORDS")}
                ],
            }
            result = await mcp.call("notes_edit", arguments)
            if result.get("isError") or len(result["structuredContent"]["changes"]) != 1:
                raise RuntimeError(f"one-line change failed: {json.dumps(result)[:300]}")
            receipts[name] = {
                "receipt_bytes": len(json.dumps(result["structuredContent"], ensure_ascii=False).encode()),
                "result_bytes": len(json.dumps(result, ensure_ascii=False).encode()),
            }

        searches = []  # what the edits left for the next query (the SQL store's large notes: Rule 3)
        for _ in range(2):
            started = time.perf_counter()
            result = await mcp.call("notes_search", {"workspaceUri": workspace_uri, "query": "appended"})
            searches.append(round((time.perf_counter() - started) * 1000, 3))
            hits = {hit["id"] for hit in result.get("structuredContent", {}).get("results", [])}
            if result.get("isError") or not {"1KB.md", "1MB.md"} <= hits:
                raise RuntimeError(f"search after the edits failed: {json.dumps(result)[:300]}")
    finally:
        await mcp.aclose()
    appends = {
        name: {
            "p50_ms": round(statistics.median(s) * 1000, 3),
            "p90_ms": round(percentile(sorted(s), 90) * 1000, 3),
            "mean_ms": round(statistics.fmean(s) * 1000, 3),
            "samples": len(s),
        }
        for name, s in samples.items()
    }
    return {"appends": appends, "receipts": receipts, "search_after_edits_ms": searches}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="timed appends per note")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--store", choices=["files", "sqlite"], default="files")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="notewarden-edit-cost-"))
    two_cpus = len(os.sched_getaffinity(0)) >= 2
    try:
        workspace, state = work / "notes", work / "state"
        workspace.mkdir()
        state.mkdir(mode=0o700)
        config = work / "notewarden.toml"
        storage = None if args.store == "files" else {"notes": args.store}
        config.write_text(notewarden_config(workspace, state, storage))
        if args.store == "files":
            for name, size in SIZES.items():
                (workspace / f"{name.replace(' ', '')}.md").write_text(note_text(size))
        else:
            _create_rows(config)
        server = start_notewarden(config, cpus={0} if two_cpus else None, log_level="warning")
        try:
            if two_cpus:
                os.sched_setaffinity(0, {1})
            target = server.target
            found = asyncio.run(
                measure(target.urls[0], target.workspace_uri, target.token or "", args.count, args.warmup)
            )
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    small, big = (found["appends"][name]["p50_ms"] for name in TIMED)
    ratio = big / small
    largest = max(r["receipt_bytes"] for r in found["receipts"].values())
    print(f"notes_edit append over HTTP, {args.store} store, {args.count} timed appends per note")
    print(f"load average (1 min) before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f}")
    print(f"{'note':>8} | {'p50 ms':>8} | {'p90 ms':>8} | {'mean ms':>8}")
    for name in TIMED:
        a = found["appends"][name]
        print(f"{name:>8} | {a['p50_ms']:>8.3f} | {a['p90_ms']:>8.3f} | {a['mean_ms']:>8.3f}")
    print(
        f"1 MB / 1 KB p50: {ratio:.2f}x (goal <= {RATIO_GOAL}x: {'met' if ratio <= RATIO_GOAL else 'NOT met'})"
    )
    print(f"\none-line change: {'note':>8} | {'receipt B':>9} | {'whole result B':>14}")
    for name, r in found["receipts"].items():
        print(f"{'':>17}{name:>8} | {r['receipt_bytes']:>9} | {r['result_bytes']:>14}")
    print(
        f"largest receipt: {largest} B (goal < {RECEIPT_GOAL} B: {'met' if largest < RECEIPT_GOAL else 'NOT met'})"
    )
    first, again = found["search_after_edits_ms"]
    print(f"search right after the edits: {first:.1f} ms (what they left to index), then {again:.1f} ms")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"edit_cost-{args.store}.json").write_text(
        json.dumps(
            {
                "command": "python -m bench.edit_cost " + " ".join(sys.argv[1:] if argv is None else argv),
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "load_average_1m": {"before": load_before, "after": os.getloadavg()[0]},
                "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "pinned": two_cpus},
                "store": args.store,
                **found,
                "ratio_p50": round(ratio, 3),
                "ratio_goal_met": ratio <= RATIO_GOAL,
                "receipt_goal_met": largest < RECEIPT_GOAL,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


def _create_rows(config: Path) -> None:
    """A SQL store's notes are rows: create them with the store's own code, before the server starts."""
    services = open_services(load_config(config))
    try:
        scope = services.grants.authorize_workspace(
            Caller("bench", Right.WRITE), str(services.config.workspaces[0])
        )
        for name, size in SIZES.items():
            setup = Change("bench", "bench_setup", "a note of the bench")
            services.store.create_note(
                scope, f"{name.replace(' ', '')}.md", note_text(size).encode(), change=setup
            )
    finally:
        services.close()


if __name__ == "__main__":
    raise SystemExit(main())
