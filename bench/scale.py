"""Search and round-1 `notes_delete` latency at 1k, 10k and 100k notes (goal: 100k <= 2x 1k).

    .venv/bin/python -m bench.scale                 # 1000 10000 100000
    .venv/bin/python -m bench.scale 1000 10000      # a subset

For each size: a real folder of markdown notes (100 per directory, bodies from a fixed
vocabulary; 5 notes titled "TPS report …" and 8 mentioning "zeppelin", whatever the size), a
real state directory, `open_services` and the shipped tool registry, called in process (the
transport adds a constant). Measured, each over REPEATS warm calls after one warm-up:

* first call: the full index build (every file read once) of a fresh state directory;
* restart: a new process's first call on an existing index (a full stat-only verification);
* search "zeppelin" (8 hits) and round-1 notes_delete "TPS report" (5 candidates), with
  inotify (the default) and with directory stamps only (no inotify: every directory is
  stat'ed per call);
* search "common" (a word in 10% of notes, first page of 10): ranking visits every match,
  so this one grows with the workspace by design; shown for honesty.

Prints a table; writes bench/results/scale.json and bench/results/scale.md.
"""

from __future__ import annotations

import json
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from notewarden.app import default_tools
from notewarden.config import parse_config
from notewarden.notes.files import FilesNoteStore
from notewarden.services import Services, open_services
from notewarden.tools.registry import ToolCall, ToolRegistry

SIZES = (1000, 10_000, 100_000)
REPEATS = 30
PER_DIR = 100
RESULTS = Path(__file__).resolve().parent / "results"
CAPS = types.ClientCapabilities(
    elicitation=types.ElicitationCapability(form=types.FormElicitationCapability())
)


def vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnoprstuvw"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(3000)]


def write_workspace(folder: Path, count: int) -> None:
    rng = random.Random(count)
    words = vocabulary(rng)
    for i in range(count):
        directory = folder / f"d{i // PER_DIR:04}"
        if i % PER_DIR == 0:
            directory.mkdir(parents=True)
        title = " ".join(rng.choices(words, k=4))
        body = " ".join(rng.choices(words, k=60))
        if i % 10 == 0:
            body += " common"
        (directory / f"n{i:06}.md").write_text(f"# {title.capitalize()}\n\n{body}\n")
    for i in range(5):
        (folder / f"d{i:04}" / f"tps-{i}.md").write_text(f"# TPS report {2020 + i}\n\nCover sheets.\n")
    for i in range(8):
        (folder / f"d{i:04}" / f"zep-{i}.md").write_text(f"# Airships {i}\n\nThe zeppelin flies.\n")


def open_at(
    folder: Path, state: Path, *, watch: bool = True, search: dict[str, Any] | None = None
) -> Services:
    config = parse_config(
        {
            "state_dir": str(state),
            "workspace": [{"uri": f"file://{folder}"}],
            "principal": [{"id": "bench", "workspaces": [f"file://{folder}"]}],
            "stdio": {"principal": "bench"},
            **({"search": search} if search is not None else {}),
        }
    )
    services = open_services(config)
    if not watch:
        services.store.close()
        services.store = FilesNoteStore(state / "notes-index.sqlite3", ledger=services.ledger, watch=False)
    return services


def call(registry: ToolRegistry, name: str, arguments: dict[str, Any]) -> Any:
    async def run() -> Any:
        return await registry.call(ToolCall(name, "bench", arguments, CAPS, {}, None))

    return anyio.run(run)


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def latency(fn: Callable[[], Any]) -> dict[str, float]:
    fn()
    samples = sorted(timed(fn) for _ in range(REPEATS))
    return {"median_ms": statistics.median(samples), "p95_ms": samples[int(len(samples) * 0.95) - 1]}


def measure(count: int, base: Path) -> dict[str, Any]:
    folder, state = base / f"notes-{count}", base / f"state-{count}"
    started = time.perf_counter()
    write_workspace(folder, count)
    written_s = time.perf_counter() - started
    ws = f"file://{folder}"
    search = {"workspaceUri": ws, "query": "zeppelin"}
    common = {"workspaceUri": ws, "query": "common"}
    delete = {"workspaceUri": ws, "title": "TPS report"}
    row: dict[str, Any] = {"notes": count, "write_s": round(written_s, 2)}

    services = open_at(folder, state)
    registry = ToolRegistry(default_tools(services))
    row["first_call_index_s"] = round(timed(lambda: call(registry, "notes_search", search)) / 1000, 2)
    time.sleep(2.1)  # let every row settle (index_refresh Rule 3) so warm calls measure the steady state
    result = call(registry, "notes_search", search)
    assert len(result.structured_content["results"]) == 8, result
    result = call(registry, "notes_delete", delete)
    assert isinstance(result, types.InputRequiredResult), result
    row["search"] = latency(lambda: call(registry, "notes_search", search))
    row["delete_round1"] = latency(lambda: call(registry, "notes_delete", delete))
    row["search_common"] = latency(lambda: call(registry, "notes_search", common))
    services.close()

    services = open_at(folder, state, watch=False)
    registry = ToolRegistry(default_tools(services))
    row["restart_verify_s"] = round(timed(lambda: call(registry, "notes_search", search)) / 1000, 2)
    row["search_stamps"] = latency(lambda: call(registry, "notes_search", search))
    row["delete_round1_stamps"] = latency(lambda: call(registry, "notes_delete", delete))
    services.close()
    shutil.rmtree(folder)
    shutil.rmtree(state)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| notes | index build (s) | restart verify (s) | search (ms) | delete round 1 (ms) "
        "| search, no inotify (ms) | delete r1, no inotify (ms) | search 'common' (ms) |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        cells = [
            f"{r['notes']:,}",
            f"{r['first_call_index_s']}",
            f"{r['restart_verify_s']}",
            *(
                f"{r[k]['median_ms']:.2f} (p95 {r[k]['p95_ms']:.2f})"
                for k in ("search", "delete_round1", "search_stamps", "delete_round1_stamps", "search_common")
            ),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    first, last = rows[0], rows[-1]
    for key in ("search", "delete_round1"):
        ratio = last[key]["median_ms"] / first[key]["median_ms"]
        lines.append(
            f"\n{key}: {last['notes']:,} notes / {first['notes']:,} notes = {ratio:.2f}x (goal <= 2x)"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or list(SIZES)
    rows = []
    with tempfile.TemporaryDirectory(prefix="nw-bench-") as tmp:
        for count in sizes:
            rows.append(measure(count, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    text = table(rows)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "repeats": REPEATS}
    (RESULTS / "scale.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    (RESULTS / "scale.md").write_text(
        "# bench/scale.py\n\n`.venv/bin/python -m bench.scale "
        + " ".join(map(str, sizes))
        + "`\n\n"
        + text
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
