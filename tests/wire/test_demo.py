"""The README's main job, `notewarden demo`, runs every checkpoint on both transports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from notewarden.scope.note_paths import TRASH_DIR_NAME

CHECKPOINTS = [
    "[1 discover] server/discover → supportedVersions=['2026-07-28']",
    "[4 round 1] resultType=input_required",
    "[5 capability] a request without elicitation.form → error -32021",
    "[6 scope] workspaceUri …/%2e%2e/etc → isError=True",
    "[7 binding] same state, changed title → error -32602",
    "[8 round 2] accept reports/tps-2019.md + confirm → resultType=complete",
    "[9 replay] the same accepted state again → isError=True",
    "[10 cancel] Cancelled: nothing was deleted",
    "[10 terminal] accept after decline → isError=True",
    "[11 SDK driver]",
    "[12 edit] notes_edit meetings/standup.md: replace + append",
    "-Nothing about TPS.",
    "+Still nothing about TPS.",
    "+- Atlas shipped",
    "[13 revert] notes_revert to ",
    "the note is back byte for byte: True",
    "[14 read-only]",
    "tools/list shows 9 tools, each needing only read: notes_history, notes_links, notes_list,",
    "notes_delete anyway → isError=True right_missing: notes_delete needs the right delete",
]


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
    assert "notes left in the workspace: meetings/standup.md, reports/tps-2026-q3.md, todo.md" in done.stdout
    if transport == "http":  # what it served and with which token, so a person can try it by hand
        assert "HTTP server: http://127.0.0.1:" in done.stdout and "/notewarden.toml" in done.stdout
        assert "bearer token (principal demo; the config holds only its SHA-256): nw_" in done.stdout
    trash = tmp_path / "notes" / TRASH_DIR_NAME
    assert [p.name for p in trash.iterdir() if not p.name.startswith("~")], (
        "the deleted notes are in the trash"
    )
