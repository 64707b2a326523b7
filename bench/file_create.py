"""Kernel CPU of one trash step's file write: creating a small file versus appending a line.

    .venv/bin/python -m bench.file_create                 # in fresh directories under the temp dir
    .venv/bin/python -m bench.file_create --under /srv/notes --dirs 5

Why the files store journals its delete intents instead of writing a sidecar file per delete
(docs/design.md, docs/performance.md): on ext4 a new file allocates an inode, and what that costs
depends on the block group a new directory lands in. Each of `--dirs` fresh directories (as a
new workspace's trash directory is) gets `--files` files created with O_CREAT|O_EXCL and a
120-byte write, then as many 120-byte appends to one journal file; thread CPU time (user +
system) per operation is reported. Prints a table and writes bench/results/file_create.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
LINE = b"x" * 119 + b"\n"


def per_op_us(folder: Path, files: int) -> tuple[float, float]:
    """(µs of CPU per file created, µs per line appended) in `folder`."""
    dirfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        started = time.thread_time()
        for i in range(files):
            fd = os.open(
                f"s{i:06d}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=dirfd
            )
            os.write(fd, LINE)
            os.close(fd)
        created = (time.thread_time() - started) / files * 1e6
        started = time.thread_time()
        for _ in range(files):
            fd = os.open(
                "~intents", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600, dir_fd=dirfd
            )
            os.write(fd, LINE)
            os.close(fd)
        appended = (time.thread_time() - started) / files * 1e6
    finally:
        os.close(dirfd)
    return created, appended


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--under", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--dirs", type=int, default=5)
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args(argv)
    rows = []
    print(f"{'directory':>9} | {'create + write, µs CPU':>22} | {'append a line, µs CPU':>21}")
    for n in range(args.dirs):
        folder = Path(tempfile.mkdtemp(prefix="notewarden-create-", dir=args.under))
        try:
            created, appended = per_op_us(folder, args.files)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        rows.append({"created_us": round(created, 1), "appended_us": round(appended, 1)})
        print(f"{n + 1:>9} | {created:>22.1f} | {appended:>21.1f}", flush=True)
    summary = {
        "created_us_median": statistics.median(r["created_us"] for r in rows),
        "appended_us_median": statistics.median(r["appended_us"] for r in rows),
    }
    print(f"{'median':>9} | {summary['created_us_median']:>22.1f} | {summary['appended_us_median']:>21.1f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "file_create.json").write_text(
        json.dumps(
            {
                "command": "python -m bench.file_create " + " ".join(argv or []),
                "under": str(args.under),
                "files_per_directory": args.files,
                "machine": {"kernel": platform.release(), "python": platform.python_version()},
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "directories": rows,
                "summary": summary,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
