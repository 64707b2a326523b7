"""What the note tools have in common: argument schemas, the note object, results, progress,
and the one answer to a confirmation that was already used.

Every result of these tools carries `structuredContent` and, in one text block, exactly the same
object serialized as JSON (spec: TOOLS-5), so a client that reads only text loses nothing.

A confirmed tool (notes_delete, notes_trash_empty, notes_publish) keeps a receipt with its claim,
in the same transaction (`LedgerTxn.record_receipt`): whether it changed anything, a sentence for
people, and the result it answered. A reply lost on the way back is then not a mystery: the same
principal sending the same confirmation again gets `confirmation_already_used` saying what was
done, and the first result under `error.previous`. The ledger reads receipts back for the
principal that claimed them only, so another principal learns nothing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio.from_thread
import mcp_types as types

from notewarden.ledger import PriorUse
from notewarden.notes.model import Note
from notewarden.notes.store import ProgressSink
from notewarden.scope.fsroot import NOTE_SUFFIXES
from notewarden.scope.grants import WorkspaceScope
from notewarden.tools.notes_list import iso8601
from notewarden.tools.registry import ToolFailure

ProgressReporter = Callable[[float, float | None, str | None], Awaitable[None]]

__all__ = [
    "NOTE_ID",
    "NOTE_OBJECT",
    "WORKSPACE_URI",
    "already_used",
    "complete",
    "note_object",
    "note_uri",
    "progress_sink",
    "receipt",
    "require_note_path",
]

WORKSPACE_URI: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "file: URI of a workspace granted to you, or of a folder inside it "
    "(e.g. file:///srv/notes/team-a). The URI alone grants nothing.",
}
NOTE_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4095,
    "description": "The note's id: its path relative to the workspace root, as notes_list and "
    "notes_search return it (e.g. reports/tps-2019.md).",
}
NOTE_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "Path relative to the workspace root."},
        "title": {"type": "string"},
        "uri": {"type": "string", "description": "The note as a resource (resources/read)."},
        "size": {"type": "integer", "minimum": 0},
        "modified": {"type": "string", "format": "date-time"},
        "version": {"type": "string", "description": "Pass as expectedVersion to notes_update."},
    },
    "required": ["id", "title", "uri", "size", "modified"],
}


def note_uri(scope: WorkspaceScope, note_id: str) -> str:
    return str(scope.workspace.joinpath(tuple(note_id.split("/"))))


def note_object(scope: WorkspaceScope, note: Note, version: str | None = None) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": note.id,
        "title": note.title,
        "uri": note_uri(scope, note.id),
        "size": note.size,
        "modified": iso8601(note.modified),
    }
    if version is not None:
        shown["version"] = version
    return shown


def complete(structured: Mapping[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
        structured_content=dict(structured),
    )


def require_note_path(path: str, argument: str) -> str:
    """A new note's path must end like a note, or it would vanish from every listing."""
    if not path.lower().endswith(NOTE_SUFFIXES):
        raise ToolFailure(
            "path_refused",
            f"{argument} {path!r} does not end in {' or '.join(NOTE_SUFFIXES)}; notes are markdown files",
        )
    return path


def progress_sink(report: ProgressReporter | None) -> ProgressSink | None:
    """Forward progress from a worker thread to the request's `notifications/progress` (the SDK sends
    them only when the request carried a progressToken), keeping `progress` strictly increasing."""
    if report is None:
        return None
    last = 0.0

    def sink(done: float, total: float | None, message: str) -> None:
        nonlocal last
        if done <= last:
            return
        last = done

        async def send() -> None:
            await report(done, total, message)

        anyio.from_thread.run(send)

    return sink


_WHY_NOTHING = {"declined": "it was declined", "not_confirmed": "the answer did not confirm it"}


def receipt(
    result: Mapping[str, Any], done: str | None, *, otherwise: str = "nothing was changed"
) -> dict[str, Any]:
    """What a commit did. `done` says what it changed, completing "already done: …" for a person
    (names through `display.visible`); None when it changed nothing, which is said as "already
    answered: it was declined, so `otherwise`"."""
    if done is None:
        outcome = str(result.get("outcome"))
        why = _WHY_NOTHING.get(outcome, f"it was answered {outcome}")
        return {"done": False, "summary": f"{why}, so {otherwise}", "result": dict(result)}
    return {"done": True, "summary": done, "result": dict(result)}


def already_used(tool: str, prior: PriorUse | None) -> ToolFailure:
    """The answer to any use of a confirmation after its first, with its receipt when there is one."""
    again = f"Call {tool} again to start a new confirmation."
    kept = prior.receipt if prior is not None else None
    if kept is None or not isinstance(kept.get("summary"), str):
        outcome = prior.outcome if prior is not None else "consumed"
        return ToolFailure(
            "confirmation_already_used",
            f"this confirmation was already used ({outcome}); nothing more was done. {again}",
        )
    return ToolFailure(
        "confirmation_already_used",
        f"{'already done' if kept.get('done') else 'already answered'}: {kept['summary']}. This confirmation "
        f"was used once, and nothing more was done now. {again}",
        {"previous": kept.get("result")},
    )
