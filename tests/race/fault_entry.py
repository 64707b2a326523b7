"""Test-only entry point: `python tests/race/fault_entry.py serve …` is `notewarden serve …` with
one fault point armed (`notewarden.faults`); `python tests/race/fault_entry.py path/to/server.py …`
runs that script instead (a server built on `notewarden.confirm`, as in examples/). The point is
read from this module's own variables:

    NOTEWARDEN_TEST_PAUSE_AT=after_claim|after_mutation|after_commit|move_rewriting|move_committed|write_uncommitted
    NOTEWARDEN_TEST_PAUSE_FILE=/some/path      # writable under the sandbox: e.g. inside state_dir

The first request that reaches the point (only the first: later ones pass) creates the file
(containing the pid) and waits while it exists: the test then kills the process (the crash
proofs) or removes the file to let it go on (the database-outage proofs). The product itself never
reads these variables; `StorageDeployment.start` runs this module when a test passes them.
"""

from __future__ import annotations

import logging
import os
import runpy
import sys
import time
from pathlib import Path

from notewarden import faults
from notewarden.cli import main

PAUSE_AT_ENV = "NOTEWARDEN_TEST_PAUSE_AT"
PAUSE_FILE_ENV = "NOTEWARDEN_TEST_PAUSE_FILE"

logger = logging.getLogger("tests.race.fault_entry")


def pause_hook(signal: Path) -> faults.FaultHook:
    paused: set[str] = set()

    def pause(name: str) -> None:
        if name in paused:
            return
        paused.add(name)
        logger.warning("test fault hook: pausing at %s", name)
        signal.write_text(str(os.getpid()))
        while signal.exists():
            time.sleep(0.01)
        logger.warning("test fault hook: resumed at %s", name)

    return pause


def arm_from_environment() -> None:
    point, signal = os.environ.get(PAUSE_AT_ENV), os.environ.get(PAUSE_FILE_ENV)
    if not point or not signal:
        raise SystemExit(f"fault_entry needs both {PAUSE_AT_ENV} and {PAUSE_FILE_ENV}")
    faults.install(point, pause_hook(Path(signal)))


if __name__ == "__main__":
    arm_from_environment()
    if len(sys.argv) > 1 and sys.argv[1].endswith(".py"):
        script = sys.argv.pop(1)
        sys.argv[0] = script
        sys.path.insert(0, str(Path(script).resolve().parent))
        runpy.run_path(script, run_name="__main__")
    else:
        sys.exit(main())
