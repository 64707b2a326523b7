"""Instructions per confirmed delete (valgrind callgrind): a cost that no other load can move.

    .venv/bin/python -m bench.instructions                 # needs valgrind (apt-get install valgrind)
    .venv/bin/python -m bench.instructions --server fastmcp    # a baseline, the same way
    PYTHONPATH=/tmp/before/src:. .venv/bin/python -m bench.instructions     # another src/ tree

Runs `bench.inproc` (the shipped HTTP app driven in process, each delete taking a note of its
own out of 1,000 resident ones) under callgrind twice, with `--few` and `--many` confirmed
deletes, and divides the difference of the two instruction totals by the difference of the
counts: start-up, imports and warm-up cancel out. Every thread's instructions count (valgrind
serializes them), the kernel's (fsync, rename) do not.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def instructions(calls: int, server: str) -> int:
    result = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-m",
            "bench.inproc",
            "--calls",
            str(calls),
            "--server",
            server,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = _COLLECTED.search(result.stderr)
    if found is None:
        raise SystemExit(f"callgrind reported no total: {result.stderr[-500:]}")
    return int(found.group(1))


def per_delete(server: str, few: int = 20, many: int = 120) -> float:
    """Instructions per confirmed delete: the difference of two runs over the difference of their counts."""
    return (instructions(many, server) - instructions(few, server)) / (many - few)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--server", choices=["notewarden", "mcpserver", "minimal", "fastmcp"], default="notewarden"
    )
    parser.add_argument("--few", type=int, default=20)
    parser.add_argument("--many", type=int, default=120)
    args = parser.parse_args(argv)
    per = per_delete(args.server, args.few, args.many)
    print(
        f"{args.server}: instructions per confirmed delete: {per / 1e6:.2f} M ({args.few} vs {args.many} deletes)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
