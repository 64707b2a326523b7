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

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from notewarden.display import visible_line
from notewarden.ledger import LedgerTxn
from notewarden.notes.store import TrashedNote
from notewarden.scope.fs_errors import NoteExists
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.confirmed import (
    BoundedPurge,
    PurgeWords,
    linted_purge,
    purge_form,
    purge_inputs,
    purge_outputs,
)
from notewarden.tools.paging import cursor_key, listing_print, make_cursor, page_properties
from notewarden.tools.registry import (
    ADDS,
    DESTRUCTIVE,
    READ_ONLY,
    ToolCall,
    ToolDef,
    ToolFailure,
    ToolResult,
    declare,
)
from notewarden.tools.results import (
    NOTE_ID,
    NOTE_OBJECT,
    WORKSPACE_URI,
    complete,
    iso8601,
    note_object,
    require_note_path,
)

__all__ = [
    "PHASE",
    "TRASH_EMPTY_INPUT_KEY",
    "notes_restore",
    "notes_trash_empty",
    "notes_trash_list",
    "trash_empty_form",
]

PHASE = "notes_trash_empty/confirm"
TRASH_EMPTY_INPUT_KEY = "empty_trash"
EMPTY_WORDS = PurgeWords(
    "emptied", "nothing_to_empty", "nothing was deleted", TRASH_EMPTY_INPUT_KEY, PHASE, "trash_changed", "the trash",
    " notes",
)  # fmt: skip
PAGE_SIZE, MAX_PAGE = 100, 500
SHOWN_IN_FORM = 20
SHOWN_IN_RESULT = 100
TRASH_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "pattern": "^[A-Za-z0-9._-]+$",
    "description": "A trashId from notes_trash_list or notes_delete.",
}
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
        start = 0
        print_ = listing_print("notes_trash_list", scope.uri)
        if "cursor" in call.arguments:
            ids = [e.trash_id for e in entries]
            (after,) = cursor_key(call.arguments["cursor"], print_, made_by="notes_trash_list", shape=(str,))
            if after not in ids:
                raise ToolFailure(
                    "invalid_cursor",
                    "the entry this cursor resumes after has left the trash; omit it to start over",
                )
            start = ids.index(after) + 1
        limit = call.arguments.get("limit", PAGE_SIZE)
        page = entries[start : start + limit]
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "count": len(entries),
            "entries": [trashed_object(e) for e in page],
        }
        if start + limit < len(entries):
            structured["nextCursor"] = make_cursor([page[-1].trash_id], print_)
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
            change=lambda entries, _: f"{len(entries)} note(s) permanently deleted from the trash",
            purge=lambda txn, scope, entries, change, progress: store.purge_trash(
                txn, scope, entries, change=change, progress=progress
            ),
            result=lambda outcome, scope, purged: empty_result(outcome, str(scope.uri), purged),
            receipt=lambda result, _purged, _state: empty_receipt(result),
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


def empty_result(outcome: str, workspace: str, purged: Sequence[TrashedNote]) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "workspaceUri": workspace,
        "purged": len(purged),
        "purgedNotes": [trashed_object(e) for e in purged[:SHOWN_IN_RESULT]],
    }


def empty_receipt(result: Mapping[str, Any]) -> str:
    """What emptying the trash did, in a sentence (for a replay's receipt)."""
    names = ", ".join(visible_line(e["id"]) for e in result["purgedNotes"][:SHOWN_IN_FORM])
    more = f" and {result['purged'] - SHOWN_IN_FORM} more" if result["purged"] > SHOWN_IN_FORM else ""
    return f"{result['purged']} notes were permanently deleted from the trash of {result['workspaceUri']}: {names}{more}"


def notes_trash_list(services: Services) -> ToolDef:
    return ToolDef(
        tool=declare(
            "notes_trash_list",
            "List the trash",
            f"List the notes in a workspace's trash, newest deletion first ({PAGE_SIZE} a page by "
            f"default, limit up to {MAX_PAGE}; pass nextCursor back as cursor). Each can be put back with "
            "notes_restore. Read-only.",
            {
                "type": "object",
                "properties": {
                    "workspaceUri": WORKSPACE_URI,
                    **page_properties(PAGE_SIZE, MAX_PAGE, "entries"),
                },
                "required": ["workspaceUri"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "workspaceUri": {"type": "string"},
                    "count": {"type": "integer", "minimum": 0},
                    "entries": {"type": "array", "items": TRASHED},
                    "nextCursor": {"type": "string"},
                },
                "required": ["workspaceUri", "count", "entries"],
            },
            **READ_ONLY,
        ),
        handler=TrashTools(services).list_entries,
        right=Right.READ,
    )


def notes_restore(services: Services) -> ToolDef:
    return ToolDef(
        tool=declare(
            "notes_restore",
            "Restore a note",
            "Put a note from the trash back where it was (or at newPath), byte for byte. "
            "Never replaces an existing file.",
            {
                "type": "object",
                "properties": {
                    "workspaceUri": WORKSPACE_URI,
                    "trashId": TRASH_ID,
                    "newPath": {
                        **NOTE_ID,
                        "description": "Restore under this id instead of the original one.",
                    },
                },
                "required": ["workspaceUri", "trashId"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "workspaceUri": {"type": "string"},
                    "trashId": {"type": "string"},
                    "note": NOTE_OBJECT,
                },
                "required": ["workspaceUri", "trashId", "note"],
            },
            **ADDS,
        ),
        handler=TrashTools(services).restore,
        right=Right.WRITE,
    )


def notes_trash_empty(services: Services) -> ToolDef:
    return ToolDef(
        tool=declare(
            "notes_trash_empty",
            "Empty the trash",
            "Permanently delete the notes in a workspace's trash (all, or those deleted more than "
            "olderThanDays ago). The user sees how many and which, and confirms in a form (elicitation); "
            "nothing is deleted without that. This cannot be undone.",
            purge_inputs(),
            purge_outputs(
                "emptied",
                "nothing_to_empty",
                purgedNotes={"type": "array", "items": TRASHED, "description": "The first 100 purged."},
            ),
            **DESTRUCTIVE,
        ),
        handler=TrashTools(services).empty,
        right=Right.PURGE,
    )
