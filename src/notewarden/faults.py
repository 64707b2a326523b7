"""Test-only fault injection: hold a write path at a named point so a test can SIGKILL it there.

Inert unless the environment says otherwise; no configuration file or client can arm it.
Tests start a server with

    NOTEWARDEN_TEST_PAUSE_AT=after_claim|after_mutation|after_commit|move_rewriting|move_committed
    NOTEWARDEN_TEST_PAUSE_FILE=/some/path      # writable under the sandbox: e.g. inside state_dir

and the first request that reaches that point (only the first: later ones pass) creates
the file (containing the pid) and waits while the file exists: the test then kills the process (the crash proofs) or removes
the file to let it go on (the database-outage proofs). The points are, in `notes_delete`:

    after_claim     the confirmation is claimed, nothing else happened (transaction open)
    after_mutation  the note is in the trash (file renamed or row moved), not committed
    after_commit    committed, the response not yet sent

and in `notes_move` with link rewriting:

    move_rewriting  half of the linking notes rewritten, the note not moved, nothing committed (every store)
    move_committed  committed, the move's journal not yet removed

Never set these variables in a deployment: a paused request holds the ledger's lock.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

__all__ = ["MOVE_POINTS", "PAUSE_AT_ENV", "PAUSE_FILE_ENV", "POINTS", "armed_point", "pause_point"]

logger = logging.getLogger(__name__)

PAUSE_AT_ENV = "NOTEWARDEN_TEST_PAUSE_AT"
PAUSE_FILE_ENV = "NOTEWARDEN_TEST_PAUSE_FILE"
POINTS = ("after_claim", "after_mutation", "after_commit")
MOVE_POINTS = ("move_rewriting", "move_committed")


def armed_point() -> str | None:
    """The point tests armed, or `None`; an unknown name or a missing file path is an error."""
    point = os.environ.get(PAUSE_AT_ENV)
    if not point:
        return None
    if point not in POINTS + MOVE_POINTS:
        raise ValueError(
            f"{PAUSE_AT_ENV}={point!r} is not a pause point; use one of {', '.join(POINTS + MOVE_POINTS)}"
        )
    if not os.environ.get(PAUSE_FILE_ENV):
        raise ValueError(f"{PAUSE_AT_ENV} is set without {PAUSE_FILE_ENV}")
    return point


_paused: set[str] = set()


def pause_point(name: str) -> None:
    if os.environ.get(PAUSE_AT_ENV) != name or name in _paused:
        return
    _paused.add(name)
    signal = Path(os.environ[PAUSE_FILE_ENV])
    logger.warning("test fault hook: pausing", extra={"point": name})
    signal.write_text(str(os.getpid()))
    while signal.exists():
        time.sleep(0.01)
    logger.warning("test fault hook: resumed", extra={"point": name})
