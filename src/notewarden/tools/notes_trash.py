"""`notes_trash_list`, `notes_restore`, `notes_trash_empty`: everything deleted is recoverable
until the trash is emptied, and emptying it is confirmed like a delete.

Every trash step runs in the ledger's critical section (see `notes.files`). Emptying is a bounded
confirmed purge (`tools.confirmed.BoundedPurge`, whose steps it follows), with its own phase and form:

    3 find      the entries to purge: all, or those deleted more than olderThanDays ago
    4 ask       a yes/no form saying how many notes and which (`trash_empty_form`); the sealed
                `Selection` digests every entry's id and identity (`entry_key`)
    7 commit    the digest must match, and the store re-checks each file's identity (else
                `trash_changed`, nothing purged); purge, with progress when the request asked for it
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from notewarden.confirm.state import ConfirmationState
from notewarden.display import visible_line
from notewarden.ledger import LedgerTxn
from notewarden.notes.store import TrashedNote
from notewarden.scope.fs_errors import NoteExists
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.confirmed import BoundedPurge, PurgeWords, declare_purge, linted_purge, purge_form
from notewarden.tools.paging import listing_print, page_after, page_properties
from notewarden.tools.registry import ADDS, ToolCall, ToolFailure, ToolResult, declare
from notewarden.tools.results import complete, iso8601, note_object, require_note_path
from notewarden.tools.schemas import ISSUED_ID, NOTE_ID, NOTE_OBJECT, WORKSPACE_URI, args, returns

__all__ = [
    "NOTES_RESTORE",
    "NOTES_TRASH_EMPTY",
    "NOTES_TRASH_LIST",
    "PHASE",
    "TRASH_EMPTY_INPUT_KEY",
    "TrashTools",
    "trash_empty_form",
]

TRASH_EMPTY_INPUT_KEY = "empty_trash"
EMPTY_WORDS = PurgeWords(
    "notes_trash_empty", "emptied", "nothing_to_empty", "nothing was deleted", TRASH_EMPTY_INPUT_KEY, "trash_changed",
    "the trash", " notes",
)  # fmt: skip
PHASE = EMPTY_WORDS.phase
PAGE_SIZE, MAX_PAGE = 100, 500
SHOWN_IN_FORM = 20
SHOWN_IN_RESULT = 100
TRASH_ID: dict[str, Any] = {**ISSUED_ID, "description": "A trashId from notes_trash_list or notes_delete."}
TRASHED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "trashId": {"type": "string"},
        "id": {"type": "string", "description": "Where the note was (and is restored to)."},
        "title": {"type": "string"},
        "deletedAt": {"type": "string", "format": "date-time"},
        "size": {"type": "integer", "minimum": 0},
    },
    "required": ["trashId", "id", "title", "deletedAt", "size"],
}


def trashed_object(entry: TrashedNote) -> dict[str, Any]:
    return {
        "trashId": entry.trash_id,
        "id": entry.note_id,
        "title": entry.title,
        "deletedAt": iso8601(entry.deleted_at),
        "size": entry.size,
    }


class TrashTools:
    def __init__(self, services: Services) -> None:
        self.services = services

    def _entries(self, scope: WorkspaceScope, bound: float | None = None) -> list[TrashedNote]:
        with self.services.trash_ledger(scope.workspace).critical_section() as txn:
            entries = self.services.store.list_trash(txn, scope)
        return [e for e in entries if bound is None or e.deleted_at <= bound]

    # notes_trash_list

    async def list_entries(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        entries = await anyio.to_thread.run_sync(self._entries, scope)
        page, more = page_after(
            entries,
            lambda e: e.trash_id,
            call.arguments,
            listing_print("notes_trash_list", scope.uri),
            made_by="notes_trash_list",
            default=PAGE_SIZE,
            gone="the entry this cursor resumes after has left the trash",
        )
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "count": len(entries),
            "entries": [trashed_object(e) for e in page],
        }
        if more is not None:
            structured["nextCursor"] = more
        return complete(structured)

    # notes_restore

    async def restore(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        trash_id = call.arguments["trashId"]
        new_path = call.arguments.get("newPath")
        if new_path is not None:
            require_note_path(new_path, "newPath")

        def restore() -> Any:
            change = call.change(
                f"restored {trash_id} from the trash" + (f" as {new_path}" if new_path else "")
            )
            with self.services.trash_ledger(scope.workspace).critical_section() as txn:
                return self.services.store.restore(txn, scope, trash_id, change=change, new_id=new_path)

        try:
            note = await anyio.to_thread.run_sync(restore)
        except NoteExists as exc:
            raise ToolFailure(
                "note_exists", f"nothing was restored: {exc}. Give newPath to restore it under another name."
            ) from None
        return complete(
            {"workspaceUri": str(scope.uri), "trashId": trash_id, "note": note_object(scope, note)}
        )

    # notes_trash_empty

    async def empty(self, call: ToolCall) -> ToolResult:
        store = self.services.store

        def select(txn: LedgerTxn, scope: WorkspaceScope, bound: float) -> list[TrashedNote]:
            return [e for e in store.list_trash(txn, scope) if e.deleted_at <= bound]

        return await BoundedPurge(
            EMPTY_WORDS,
            select,
            entry_key,
            empty_request,
            store.purge_trash,
            empty_result,
            emptied,
            empty_receipt,
        ).run(self.services, call)


def entry_key(entry: TrashedNote) -> str:
    """A trash entry as its purge's confirmation binds it: its id and the file's identity."""
    i = entry.identity
    return f"{entry.trash_id}\0{i and (*i.key, i.modified_ns, i.size)}"


def empty_request(scope: WorkspaceScope, entries: Sequence[TrashedNote]) -> dict[str, Any]:
    shown = [
        f"{e.title} — {e.note_id} — deleted {datetime.fromtimestamp(e.deleted_at, tz=UTC):%Y-%m-%d %H:%M} UTC"
        for e in entries[:SHOWN_IN_FORM]
    ]
    return trash_empty_form(str(scope.uri), len(entries), shown, len(entries) - len(shown))


@linted_purge("notes_trash_empty", "file:///srv/notes", "Note {i} — note-{i}.md — deleted …", SHOWN_IN_FORM)
def trash_empty_form(workspace: str, count: int, listing: Sequence[str], more: int) -> dict[str, Any]:
    """The input request confirming a permanent purge: how many notes, and which (`listing`)."""
    notes = "1 note" if count == 1 else f"{count} notes"
    return purge_form(f"{notes} from the trash of workspace {workspace}", notes, listing, more)


def empty_result(outcome: str, scope: WorkspaceScope, purged: Sequence[TrashedNote]) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "workspaceUri": str(scope.uri),
        "purged": len(purged),
        "purgedNotes": [trashed_object(e) for e in purged[:SHOWN_IN_RESULT]],
    }


def emptied(purged: Sequence[TrashedNote], _scope: WorkspaceScope, _state: ConfirmationState) -> str:
    """The change emptying the trash made, as its history and its record keep it."""
    return f"{len(purged)} note(s) permanently deleted from the trash"


def empty_receipt(purged: Sequence[TrashedNote], scope: WorkspaceScope, _state: ConfirmationState) -> str:
    """What emptying the trash did, in a sentence (for a replay's receipt)."""
    names = ", ".join(visible_line(e.note_id) for e in purged[:SHOWN_IN_FORM])
    more = f" and {len(purged) - SHOWN_IN_FORM} more" if len(purged) > SHOWN_IN_FORM else ""
    return f"{len(purged)} notes were permanently deleted from the trash of {scope.uri}: {names}{more}"


NOTES_TRASH_LIST = declare(
    "notes_trash_list",
    "List the trash",
    f"List the notes in a workspace's trash, newest deletion first ({PAGE_SIZE} a page by "
    f"default, limit up to {MAX_PAGE}; pass nextCursor back as cursor). Each can be put back with "
    "notes_restore. Read-only.",
    args({"workspaceUri": WORKSPACE_URI}, page_properties(PAGE_SIZE, MAX_PAGE, "entries")),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "count": {"type": "integer", "minimum": 0},
            "entries": {"type": "array", "items": TRASHED},
            "nextCursor": {"type": "string"},
        },
        ["workspaceUri", "count", "entries"],
    ),
    Right.READ,
)
NOTES_RESTORE = declare(
    "notes_restore",
    "Restore a note",
    "Put a note from the trash back where it was (or at newPath), byte for byte. "
    "Never replaces an existing file.",
    args(
        {"workspaceUri": WORKSPACE_URI, "trashId": TRASH_ID},
        {"newPath": {**NOTE_ID, "description": "Restore under this id instead of the original one."}},
    ),
    returns(
        {"workspaceUri": {"type": "string"}, "trashId": {"type": "string"}, "note": NOTE_OBJECT},
        ["workspaceUri", "trashId", "note"],
    ),
    Right.WRITE,
    ADDS,
)
NOTES_TRASH_EMPTY = declare_purge(
    EMPTY_WORDS,
    "Empty the trash",
    "Permanently delete the notes in a workspace's trash (all, or those deleted more than "
    "olderThanDays ago). The user sees how many and which, and confirms in a form (elicitation); "
    "nothing is deleted without that. This cannot be undone.",
    listed={"purgedNotes": {"type": "array", "items": TRASHED, "description": "The first 100 purged."}},
)
