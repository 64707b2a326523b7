"""Crash tests for a server built on `notewarden.confirm`: hold a request at a point of the commit.

Public (docs/confirm-library.md, "Testing your tool"; versioned with `API_VERSION`). The three
points of every confirmed commit, in order (`CRASH_POINTS`):

    after_claim     the confirmation is claimed in the open transaction, your effect not yet run
    after_mutation  your effect has written through `confirmed.txn`, nothing committed
    after_commit    committed, the result not yet sent

Two ways to reach them:

* In a server process (the real test: SIGKILL). Start the server through this module, which arms
  one point and then runs your script as `__main__`:

      python -m notewarden.confirm.testing --pause-at after_claim --pause-file /tmp/p server.py ARGS

  `Pause(point, file)` builds that command (`command(script, *args)`); the first request to reach
  the point writes the process id into the file and waits while the file exists. `await
  pause.kill()` waits for that, SIGKILLs the process and removes the file; `release()` removes the
  file instead, and the request goes on.
* In the test's own process: `with arm(point, hook):` runs `hook(point)` there; `crash` as the hook
  raises `SimulatedCrash`, which rolls the transaction back like a crash before COMMIT would.

With pytest, `pytest_plugins = ["notewarden.confirm.pytest_plugin"]` gives the fixtures
`confirm_pause` (a `Pause` factory in the test's tmp_path) and `confirm_arm` (`arm`, undone after
the test).

Rule 1: nothing here reads the environment, and production code never imports this module: a point
is armed only by a process started through it, or by a test calling `arm`.
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from notewarden import faults

__all__ = ["CRASH_POINTS", "Pause", "SimulatedCrash", "arm", "crash"]

CRASH_POINTS: tuple[str, ...] = faults.CONFIRM_POINTS


class SimulatedCrash(BaseException):
    """Raised by `crash` at an armed point: a BaseException, so no `except Exception` swallows it."""


def crash(point: str) -> None:
    """A hook for `arm`: fail the commit at `point`, as a crash there would (in-process)."""
    raise SimulatedCrash(point)


@contextmanager
def arm(point: str, hook: Callable[[str], None] = crash) -> Iterator[None]:
    """Run `hook(point)` whenever this process reaches `point` (one of `CRASH_POINTS`), until exit."""
    if point not in CRASH_POINTS:
        raise ValueError(f"{point!r} is not a crash point; use one of {', '.join(CRASH_POINTS)}")
    faults.install(point, hook)
    try:
        yield
    finally:
        faults.uninstall(point)


@dataclass(frozen=True)
class Pause:
    """One server process held at `point`: its command line, and the file that signals it."""

    point: str
    file: Path

    def __post_init__(self) -> None:
        if self.point not in CRASH_POINTS:
            raise ValueError(f"{self.point!r} is not a crash point; use one of {', '.join(CRASH_POINTS)}")

    def command(self, script: str | os.PathLike[str], *args: str) -> list[str]:
        """`python -m notewarden.confirm.testing …` running `script` with `args`, this point armed."""
        armed = ["--pause-at", self.point, "--pause-file", str(self.file)]
        return [sys.executable, "-m", "notewarden.confirm.testing", *armed, str(script), *args]

    async def paused(self, timeout: float = 30.0) -> int:
        """Wait until a request is held at the point; the process id that holds it."""
        with anyio.fail_after(timeout):
            while True:
                try:
                    text = self.file.read_text()
                except FileNotFoundError:
                    text = ""
                if text.strip():
                    return int(text)
                await anyio.sleep(0.02)

    async def kill(self, timeout: float = 30.0) -> int:
        """Wait for the pause, SIGKILL the process there (nothing after the point runs), remove the
        file; the killed process id (reap it with your `Popen.wait`)."""
        pid = await self.paused(timeout)
        os.kill(pid, signal.SIGKILL)
        self.release()
        return pid

    def release(self) -> None:
        """Let a held request go on (and a process started later pause afresh)."""
        self.file.unlink(missing_ok=True)


def _pause_hook(file: Path) -> Callable[[str], None]:
    held: set[str] = set()

    def pause(point: str) -> None:
        if point in held:  # only the first request to reach the point is held
            return
        held.add(point)
        partial = file.with_name(file.name + ".tmp")
        partial.write_text(str(os.getpid()))
        partial.replace(file)
        while file.exists():
            time.sleep(0.01)

    return pause


def main(argv: list[str] | None = None) -> None:
    """`python -m notewarden.confirm.testing --pause-at POINT --pause-file FILE script.py ARGS…`"""
    parser = argparse.ArgumentParser(
        prog="python -m notewarden.confirm.testing",
        description="Run a server script with one confirmation crash point armed (tests only).",
    )
    parser.add_argument("--pause-at", required=True, choices=CRASH_POINTS)
    parser.add_argument("--pause-file", required=True, type=Path)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    faults.install(options.pause_at, _pause_hook(options.pause_file))
    sys.argv = [options.script, *options.args]
    sys.path.insert(0, str(Path(options.script).resolve().parent))
    runpy.run_path(options.script, run_name="__main__")


if __name__ == "__main__":
    main()
