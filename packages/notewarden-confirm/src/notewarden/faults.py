"""Fault points: named places in the write paths where a test may hold a request.

Rule 1: production code only *calls* `fault_point(name)`; nothing here reads the environment, a
file or a client's words, so no deployment and no request can arm a point. The registry is empty
unless code running in the same process calls `install` before serving, which only test code does:
the tests' own entry module (`tests/race/fault_entry.py`: it reads its test-only variables,
installs a pause hook, then starts `notewarden` as usual) and the confirmation library's public
test helpers (`notewarden.confirm.testing`, whose command-line arguments arm a point in a server
author's test process).

Rule 2: a point without a hook costs one dictionary lookup; a hook runs on the thread that reached
the point, inside whatever transaction is open there, so it may block (hold the ledger's lock) to
let a test SIGKILL the process at exactly that point.

The points, in the confirmation path (`confirm.flow`, every confirmed tool):

    after_claim     the confirmation is claimed, nothing else happened (transaction open)
    after_mutation  the effect is written (a note in the trash, a row moved), not committed
    after_commit    committed, the response not yet sent

and in `notes_move` with link rewriting (the notes stores):

    move_rewriting  half of the linking notes rewritten, the note not moved, nothing committed
    move_committed  committed, the move's journal not yet removed

and in every other write of the notes stores (create, update, edit, revert, move, restore):

    write_uncommitted  the change made (the files store: its file step done) and its record written
                       (`notes.change_log`), not committed
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "CONFIRM_POINTS",
    "MOVE_POINTS",
    "POINTS",
    "WRITE_POINTS",
    "fault_point",
    "install",
    "installed",
    "uninstall",
]

CONFIRM_POINTS = ("after_claim", "after_mutation", "after_commit")
MOVE_POINTS = ("move_rewriting", "move_committed")
WRITE_POINTS = ("write_uncommitted",)
POINTS = CONFIRM_POINTS + MOVE_POINTS + WRITE_POINTS

FaultHook = Callable[[str], None]
_hooks: dict[str, FaultHook] = {}


def fault_point(name: str) -> None:
    """Run the hook installed at `name`, if any (never one in production)."""
    hook = _hooks.get(name)
    if hook is not None:
        hook(name)


def install(name: str, hook: FaultHook) -> None:
    """Test-only: run `hook` whenever `name` is reached; an unknown name is an error."""
    if name not in POINTS:
        raise ValueError(f"{name!r} is not a fault point; use one of {', '.join(POINTS)}")
    _hooks[name] = hook


def uninstall(name: str) -> None:
    """Test-only: remove the hook at `name`, if any."""
    _hooks.pop(name, None)


def installed() -> tuple[str, ...]:
    """The points with a hook (none in production), for the start-up warning."""
    return tuple(_hooks)
