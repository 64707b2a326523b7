"""Where a confirmed delete's time goes: py-spy samples a server under the delete load.

    .venv/bin/python -m bench.profile                       # notewarden, 1,000 resident notes
    .venv/bin/python -m bench.profile --server fastmcp      # a baseline, same load
    .venv/bin/python -m bench.profile --notes 0 --flow read
    .venv/bin/python -m bench.profile --workers 1           # one client, one call at a time

py-spy (the `bench` extra; a sampling tool attached to the running process, nothing
imports it) samples every thread of the server at `--rate` Hz while the load client runs;
threads waiting for work are left out. Each sample is charged to an owner:
walking from the innermost frame outwards, the first frame that is ours (src/notewarden or
bench/baselines), the SDK's (mcp, mcp_types), FastMCP's, or the HTTP server's (uvicorn,
starlette, h11) decides; a library frame (pydantic, jsonschema, sqlite3, cryptography)
belongs to whoever called it. The summary goes to bench/results/profile-*.txt; the
collapsed stacks beside it (not committed) feed flame graphs (speedscope, flamegraph.pl).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.data import bench_notes
from bench.load import BenchNote, run_flow
from bench.servers import prepare_notewarden, start_baseline, start_notewarden

RESULTS = Path(__file__).resolve().parent / "results"
OWNERS = (
    ("ours", ("/src/notewarden/", "/bench/baselines/")),
    ("mcp SDK", ("/site-packages/mcp/", "/site-packages/mcp_types/")),
    ("FastMCP", ("/site-packages/fastmcp/",)),
    (
        "HTTP server",
        (
            "/site-packages/uvicorn/",
            "/site-packages/starlette/",
            "/site-packages/h11/",
            "/site-packages/sse_starlette/",
        ),
    ),
)
LIBRARIES = {
    "pydantic": ("/site-packages/pydantic", "pydantic_core"),
    "jsonschema": ("/site-packages/jsonschema", "/site-packages/referencing", "/site-packages/rpds"),
    "sqlite3": ("/sqlite3/",),
    "cryptography": ("/site-packages/cryptography/",),
    "json": ("/json/",),
    "anyio/asyncio": ("/site-packages/anyio/", "/asyncio/", "selectors.py"),
}


IDLE_LEAVES = ("Condition.wait (", "EpollSelector.select (", "Event.wait (")
"""Innermost frames of a thread that waits for work: pool threads and the idle event loop."""


def owner(frames: list[str]) -> str:
    for frame in reversed(frames):  # innermost first
        for name, markers in OWNERS:
            if any(m in frame for m in markers):
                return name
    return "other (stdlib, event loop)"


def library(frames: list[str]) -> str | None:
    for frame in reversed(frames):
        for name, markers in LIBRARIES.items():
            if any(m in frame for m in markers):
                return name
        if any(m in frame for _, markers in OWNERS for m in markers):
            return None
    return None


def summarize(raw: Path, top: int = 25) -> str:
    samples: list[tuple[list[str], int]] = []
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            frames = stack.split(";")
            if not frames[-1].startswith(IDLE_LEAVES):
                samples.append((frames, int(count)))
    total = sum(c for _, c in samples) or 1
    owners: collections.Counter[str] = collections.Counter()
    libs: collections.Counter[tuple[str, str]] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    for frames, count in samples:
        leaves[" <- ".join(_short(f) for f in reversed(frames[-3:]))] += count
        who = owner(frames)
        owners[who] += count
        lib = library(frames)
        if lib:
            libs[(who, lib)] += count
        seen = set()
        for frame in frames:
            short = _short(frame)
            if any(m in frame for _, markers in OWNERS[:3] for m in markers) and short not in seen:
                seen.add(short)
                inclusive[short] += count
    out = [
        f"{total} samples (threads waiting for work left out)",
        "",
        "owner of the innermost frame that is not a library:",
    ]
    out += [f"  {100 * c / total:5.1f}%  {name}" for name, c in owners.most_common()]
    out += ["", "of which in libraries (owner / library):"]
    out += [f"  {100 * c / total:5.1f}%  {who} / {lib}" for (who, lib), c in libs.most_common(12)]
    out += ["", f"top {top} functions of ours, the SDK's and FastMCP's, inclusive:"]
    out += [f"  {100 * c / total:5.1f}%  {frame}" for frame, c in inclusive.most_common(top)]
    # where a thread is when sampled: a waker descheduled in favour of the thread it woke shows here
    out += ["", "top 10 innermost frames (with their two callers), any owner:"]
    out += [f"  {100 * c / total:5.1f}%  {stack}" for stack, c in leaves.most_common(10)]
    return "\n".join(out)


def _short(frame: str) -> str:
    """`func (/long/path/site-packages/pkg/mod.py:123)` -> `func (pkg/mod.py)`: one entry per function."""
    head, _, tail = frame.partition(" (")
    path = tail.rstrip(")").rsplit(":", 1)[0]
    for marker in ("/src/", "/site-packages/", "/bench/", "/lib/"):  # /lib/: the stdlib, python3.X/mod.py
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{head} ({path})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=["notewarden", "mcpserver", "fastmcp"], default="notewarden")
    parser.add_argument("--flow", choices=["delete", "read", "round1"], default="delete")
    parser.add_argument("--notes", type=int, default=1000, help="resident notes")
    parser.add_argument("--calls", type=int, default=400, help="timed flows while sampling")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    parser.add_argument(
        "--gil",
        action="store_true",
        help="sample only the thread holding the GIL: where CPU goes, not where threads wait",
    )
    parser.add_argument(
        "--py-spy", default=shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    )
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="notewarden-profile-"))
    warm = 30
    total = args.notes + warm + args.calls
    if args.server == "notewarden":
        server = start_notewarden(prepare_notewarden(work, bench_notes(0, total), tag="p"), cpus={1})
    else:
        server = start_baseline(args.server, work, first=0, count=total, cpus={1})
    name = (
        f"profile-{args.server}-{args.flow}-{args.notes}"
        + ("-sequential" if args.workers == 1 else "")
        + ("-gil" if args.gil else "")
    )
    raw = RESULTS / f"{name}.collapsed.txt"
    RESULTS.mkdir(exist_ok=True)
    try:
        if args.flow == "delete":
            warmup = list(bench_notes(args.notes, warm))
            calls = list(bench_notes(args.notes + warm, args.calls))
        else:
            pool = max(1, args.notes)
            warmup = [BenchNote(i % pool) for i in range(warm)]
            calls = [BenchNote(i % pool) for i in range(args.calls)]
        asyncio.run(run_flow(server.target, args.flow, warmup, workers=1))
        spy = subprocess.Popen(
            [
                args.py_spy,
                "record",
                "--pid",
                str(server.pids[0]),
                "--rate",
                str(args.rate),
                "--format",
                "raw",
                "--threads",
                "--full-filenames",
                "--output",
                str(raw),
                *(["--gil"] if args.gil else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        stats = asyncio.run(run_flow(server.target, args.flow, calls, workers=args.workers))
        spy.send_signal(signal.SIGINT)
        _, err = spy.communicate(timeout=60)
        if not raw.exists():
            raise SystemExit(f"py-spy wrote nothing: {err.decode(errors='replace')[-500:]}")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    _strip_threads(raw)
    report = (
        f"{name}: {stats.per_second:.1f} flows/s, p50 {stats.p50_ms:.1f} ms, errors {stats.errors}\n"
        + summarize(raw)
    )
    (RESULTS / f"{name}.txt").write_text(report + "\n")
    print(report)
    return 0


def _strip_threads(raw: Path) -> None:
    """py-spy --threads puts the thread as the first frame; keep stacks comparable without it."""
    lines = []
    for line in raw.read_text().splitlines():
        first, _, rest = line.partition(";")
        lines.append(rest if first.startswith("thread (") and rest else line)
    raw.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
