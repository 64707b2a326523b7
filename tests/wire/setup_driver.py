"""Runs many `notewarden` command lines in one interpreter: each in a process of its own, forked
from this one once notewarden is imported (a real process with its own stdin, stdout, stderr,
environment, working folder and sandbox; a fraction of a second instead of a fresh interpreter),
a few at a time.

    python -m tests.wire.setup_driver CASES.json RESULTS.json

CASES.json: [{"argv": [...], "env": {...}, "cwd": "...", "stdin": "..."}]; RESULTS.json gets
[{"status": N, "stdout": "...", "stderr": "..."}] in the same order. A child that raises out of
`main` prints the traceback Python prints, which the tests look for.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn

import notewarden.app
import notewarden.auditcommand
import notewarden.client.tui
import notewarden.console
import notewarden.dbcommand
import notewarden.embeddings
import notewarden.firstrun.commands
import notewarden.firstrun.doctor
import notewarden.forms.lint
import notewarden.scope.sandbox
import notewarden.services
import notewarden.transfer
import notewarden.trashcommand  # (all imported before the forks: each child starts warm)
from notewarden.cli import main

with contextlib.suppress(ImportError):  # the semantic extra: doctor's search check loads its model
    import notewarden.embeddings.bundled  # noqa: F401


@dataclass
class Running:
    index: int
    out: IO[bytes]
    err: IO[bytes]


def start_case(case: dict[str, Any], out: IO[bytes], err: IO[bytes]) -> int:
    """Fork a child for one command line; its stdout and stderr go to `out` and `err`."""
    with tempfile.TemporaryFile() as given:
        given.write(case.get("stdin", "").encode())
        given.seek(0)
        pid = os.fork()
        if pid == 0:
            run_child(case, given.fileno(), out, err)
    return pid


def run_child(case: dict[str, Any], stdin: int, out: IO[bytes], err: IO[bytes]) -> NoReturn:
    """The child: one command line, then _exit with its status."""
    status = 70
    try:
        os.dup2(stdin, 0)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        os.chdir(case.get("cwd", "/"))
        os.environ.update(case.get("env", {}))
        for name in case.get("unset", []):
            os.environ.pop(name, None)
        tempfile.tempdir = None  # a TMPDIR of the case's own is read again
        try:
            status = main(case["argv"])
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback

            traceback.print_exc()
            status = 99
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def run_cases(cases: list[dict[str, Any]], width: int) -> list[dict[str, Any]]:
    """Every case, at most `width` at a time (the cases share no state a result depends on)."""
    results: list[dict[str, Any]] = [{} for _ in cases]
    running: dict[int, Running] = {}

    def finish_one() -> None:
        pid, waited = os.wait()
        done = running.pop(pid)
        for stream in (done.out, done.err):
            stream.seek(0)
        results[done.index] = {
            "status": os.waitstatus_to_exitcode(waited),
            "stdout": done.out.read().decode(errors="replace"),
            "stderr": done.err.read().decode(errors="replace"),
        }

    with contextlib.ExitStack() as files:
        for index, case in enumerate(cases):
            if len(running) >= width:
                finish_one()
            out, err = (files.enter_context(tempfile.TemporaryFile()) for _ in range(2))
            running[start_case(case, out, err)] = Running(index, out, err)
        while running:
            finish_one()
    return results


if __name__ == "__main__":
    cases = json.loads(Path(sys.argv[1]).read_text())
    width = min(4, os.cpu_count() or 1)
    Path(sys.argv[2]).write_text(json.dumps(run_cases(cases, width)))
