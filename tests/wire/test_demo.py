"""The README's main job, `notewarden demo`, runs every checkpoint on both transports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from notewarden.scope.note_paths import TRASH_DIR_NAME

CHECKPOINTS = [
    "1. The client finds the server\n   It asks server/discover: protocol 2026-07-28;",
    "4. “Delete the TPS report”: the server asks which one before it deletes anything",
    "     ( ) TPS report 2019 (old) — reports/tps-2019.md",
    "5. A client that cannot show forms is refused",
    "refused, nothing deleted (error -32021)",
    "…/notes/%2e%2e/etc (a way up): refused.",
    "…/notes-evil (a neighbour): refused.",
    "The sealed state sent back with another title: refused (error -32602",
    "8. The person picks “TPS report 2019 (old)” and confirms\n   Moved “TPS report 2019 (old)”",
    "The same answer sent again: refused.",
    "Cancelled: “Cancelled: nothing was deleted",
    "An accept after the decline: refused.",
    "11. A client can leave both rounds to the SDK",
    "12. A small edit of meetings/standup.md, and its diff",
    "   -Nothing about TPS.\n   +Still nothing about TPS.\n   +- Atlas shipped",
    "notes_revert brings it back: the note is back byte for byte.",
    "14. A read-only assistant",
    "tools, each of which only reads: notes_health, notes_history, notes_links, notes_list,",
    "It asks for a delete anyway: refused (right_missing). “notes_delete needs the right delete",
    "What you saw:\n  * A delete asks the person first",
]
REPRS = ("[(", "{'", "['", "=True", "=False", "resultType", "requestState:", "structuredContent", "isError")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_demo_walks_through_every_checkpoint(tmp_path: Path, transport: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "notewarden", "demo", "--transport", transport, "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for checkpoint in CHECKPOINTS:
        assert checkpoint in done.stdout, f"missing {checkpoint!r} in:\n{done.stdout}"
    for trace in REPRS:  # a walkthrough for a person: no Python values, no protocol field names
        assert trace not in done.stdout, f"{trace!r} in:\n{done.stdout}"
    assert done.stdout.rstrip().endswith(
        "Notes left in the workspace: meetings/standup.md, reports/tps-2026-q3.md, todo.md."
    ), "it ends with the summary"
    if transport == "http":  # what it served and with which token, so a person can try it by hand
        assert "HTTP server: http://127.0.0.1:" in done.stdout and "/notewarden.toml" in done.stdout
        assert "bearer token (principal demo; the config holds only its SHA-256): nw_" in done.stdout
    trash = tmp_path / "notes" / TRASH_DIR_NAME
    assert [p.name for p in trash.iterdir() if not p.name.startswith("~")], (
        "the deleted notes are in the trash"
    )
