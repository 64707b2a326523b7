"""Every kind of elicitation this server can emit, checked by `forms.lint` at start-up.

The forms are built from live data (candidates, workspaces), so the check runs on the
extremes each builder allows: one option and the most options a tool will ever offer.
A failing check is a bug in this server, so `build_server` refuses to start.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notewarden.confirm.state import Candidate
from notewarden.forms.lint import Problem, lint_form
from notewarden.notes.model import Note, NoteIdentity
from notewarden.tools.notes_delete import MAX_CANDIDATES, as_candidate, delete_form, delete_set_form
from notewarden.tools.notes_history import history_purge_form
from notewarden.tools.notes_trash import trash_empty_form
from notewarden.tools.workspace_hint import MAX_OFFERED_WORKSPACES, choice_form

__all__ = ["check_own_forms", "own_forms"]


def _candidates(count: int) -> list[Candidate]:
    return [
        as_candidate(
            Note(f"folder/note-{i}.md", f"Note {i}", NoteIdentity((1, i), 1_700_000_000_000_000_000, 10))
        )
        for i in range(count)
    ]


def own_forms() -> Mapping[str, Any]:
    """Name -> an `elicitation/create` request exactly as the tools build it."""
    return {
        "notes_delete (1 candidate)": delete_form("file:///srv/notes", "TPS", _candidates(1)),
        f"notes_delete ({MAX_CANDIDATES} candidates)": delete_form(
            "file:///srv/notes", "n", _candidates(MAX_CANDIDATES)
        ),
        "notes_delete noteIds (1)": delete_set_form("file:///srv/notes", _candidates(1)),
        f"notes_delete noteIds ({MAX_CANDIDATES})": delete_set_form(
            "file:///srv/notes", _candidates(MAX_CANDIDATES)
        ),
        "notes_trash_empty": trash_empty_form(
            "file:///srv/notes",
            25,
            [f"Note {i} — note-{i}.md — deleted 2026-12-01 10:00 UTC" for i in range(20)],
            5,
        ),
        "notes_history_purge": history_purge_form(
            "the notes of file:///srv/notes",
            25,
            [f"note-{i}.md — saved 2026-12-01 10:00 UTC — append" for i in range(20)],
            5,
        ),
        "workspace choice (2)": choice_form(["file:///srv/a", "file:///srv/b"]),
        f"workspace choice ({MAX_OFFERED_WORKSPACES})": choice_form(
            [f"file:///srv/w{i}" for i in range(MAX_OFFERED_WORKSPACES)]
        ),
        "notes_publish connect (URL mode)": {
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": "Connect the target",
                "url": "https://notes.example/connect/x",
            },
        },
    }


def check_own_forms() -> dict[str, list[Problem]]:
    """Problems per form; empty when every form passes."""
    found = {name: lint_form(form) for name, form in own_forms().items()}
    return {name: problems for name, problems in found.items() if problems}
