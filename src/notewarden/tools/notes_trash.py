"""`notes_trash_list`, `notes_restore`, `notes_trash_empty`: everything deleted is recoverable
until the trash is emptied, and emptying it is confirmed like a delete.

Every trash step runs in the ledger's critical section (see `notes.files`). Emptying follows the
path of one delete (`notes_delete`), with its own phase and form:

    1 authorize, 2 contain   as everywhere
    3 find      the entries to purge: all, or those deleted more than olderThanDays ago
    4 ask       a yes/no form saying how many notes and which; sealed state with a `Selection`
                (count, digest of every entry's id and identity, the deleted-before bound)
    5 verify    SDK boundary + phase, principal, arguments, workspace  (`confirm.flow`, as every
                confirmed tool)
    6 judge     `forms.judge_confirmation` under the same OUTCOMES table
    7 commit    one transaction: claim the confirmation id (`confirm.flow`), re-authorize, re-contain,
                select again with the sealed bound; the digest must match (else `trash_changed`,
                nothing purged); purge, with progress when the request asked for it
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.confirm.flow import Confirmed, Done, Offer, retriable
from notewarden.confirm.forms import TRASH_EMPTY_INPUT_KEY, Answer, trash_empty_form
from notewarden.confirm.state import ConfirmationState, Selection
from notewarden.display import visible_line
from notewarden.notes.store import ProgressSink, TrashedNote
from notewarden.scope.fs_errors import IdentityMismatch, NoteExists
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.paging import cursor_key, listing_print, make_cursor, page_properties
from notewarden.tools.registry import ToolCall, ToolDef, ToolFailure, ToolResult, require_form_elicitation
from notewarden.tools.results import (
    NOTE_ID,
    NOTE_OBJECT,
    WORKSPACE_URI,
    complete,
    confirm_in_workspace,
    iso8601,
    note_object,
    progress_sink,
    reauthorize_sealed,
    require_note_path,
    sealed_workspace,
)

__all__ = ["PHASE", "notes_restore", "notes_trash_empty", "notes_trash_list"]

PHASE = "notes_trash_empty/confirm"
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


def selection_digest(entries: Sequence[TrashedNote]) -> str:
    digest = hashlib.sha256()
    for e in sorted(entries, key=lambda e: e.trash_id):
        i = e.identity
        digest.update(f"{e.trash_id}\0{i and (*i.key, i.modified_ns, i.size)}\n".encode())
    return digest.hexdigest()


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
        require_form_elicitation(
            call.capabilities, "notes_trash_empty needs form elicitation to let the user confirm the purge"
        )
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        shown_uri = str(scope.uri)

        def offer(prior: ConfirmationState | None) -> Offer | types.CallToolResult:  # 3 find, 4 ask
            if prior is not None and prior.selection is not None:
                bound = prior.selection.bound
            else:
                bound = time.time() - call.arguments.get("olderThanDays", 0) * 86400
            entries = self._entries(scope, bound)
            if not entries:
                return complete(self._result("nothing_to_empty", shown_uri, []))
            return Offer(
                self.form(scope, entries),
                selection=Selection(len(entries), selection_digest(entries), bound),
                data=sealed_workspace(scope),
            )

        def effect(confirmed: Confirmed) -> Done:  # 7 commit, inside the claim's transaction
            return empty_receipt(self._result("emptied", shown_uri, self.purge(call, confirmed, progress)))

        def unchanged(outcome: str, until: str | None) -> Done:
            return Done(retriable(self._result(outcome, shown_uri, []), until))

        async with progress_sink(call.report_progress) as progress:
            return await confirm_in_workspace(  # 5 verify, 6 judge, 7 commit: the confirmation path
                self.services,
                call,
                scope,
                answer=Answer.YES_NO,
                done_label="emptied",
                input_key=TRASH_EMPTY_INPUT_KEY,
                nothing_done="nothing was deleted",
                phase=PHASE,
                offer=offer,
                effect=effect,
                unchanged=unchanged,
            )

    @staticmethod
    def form(scope: WorkspaceScope, entries: Sequence[TrashedNote]) -> dict[str, Any]:
        shown = [
            f"{e.title} — {e.note_id} — deleted {datetime.fromtimestamp(e.deleted_at, tz=UTC):%Y-%m-%d %H:%M} UTC"
            for e in entries[:SHOWN_IN_FORM]
        ]
        return trash_empty_form(str(scope.uri), len(entries), shown, len(entries) - len(shown))

    def purge(self, call: ToolCall, confirmed: Confirmed, progress: ProgressSink | None) -> list[TrashedNote]:
        """Select again with the sealed bound; the digest must match, or nothing is purged."""
        selection = confirmed.state.selection
        assert selection is not None
        scope = reauthorize_sealed(
            self.services.grants, call.caller, call.arguments["workspaceUri"], confirmed.state
        )
        entries = [
            e for e in self.services.store.list_trash(confirmed.txn, scope) if e.deleted_at <= selection.bound
        ]
        if selection_digest(entries) != selection.digest:
            raise ToolFailure(
                "trash_changed",
                f"nothing was deleted: the trash changed since you confirmed ({selection.count} "
                f"notes then, {len(entries)} now). Call notes_trash_empty again and confirm anew.",
            )
        change = call.change(
            f"{len(entries)} note(s) permanently deleted from the trash",
            confirmation_id=confirmed.state.confirmation_id,
        )
        try:
            self.services.store.purge_trash(confirmed.txn, scope, entries, change=change, progress=progress)
        except IdentityMismatch as exc:
            raise ToolFailure("trash_changed", f"nothing was deleted: {exc}") from None
        return entries

    @staticmethod
    def _result(outcome: str, workspace: str, purged: list[TrashedNote]) -> dict[str, Any]:
        return {
            "outcome": outcome,
            "workspaceUri": workspace,
            "purged": len(purged),
            "purgedNotes": [trashed_object(e) for e in purged[:SHOWN_IN_RESULT]],
        }


def empty_receipt(result: dict[str, Any]) -> Done:
    """The emptied trash's result, and what it did in a sentence (for a replay's receipt)."""
    names = ", ".join(visible_line(e["id"]) for e in result["purgedNotes"][:SHOWN_IN_FORM])
    more = f" and {result['purged'] - SHOWN_IN_FORM} more" if result["purged"] > SHOWN_IN_FORM else ""
    return Done(
        result,
        f"{result['purged']} notes were permanently deleted from the trash of {result['workspaceUri']}: {names}{more}",
    )


def notes_trash_list(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_trash_list",
            title="List the trash",
            description=f"List the notes in a workspace's trash, newest deletion first ({PAGE_SIZE} a page by "
            f"default, limit up to {MAX_PAGE}; pass nextCursor back as cursor). Each can be put back with "
            "notes_restore. Read-only.",
            input_schema={
                "type": "object",
                "properties": {
                    "workspaceUri": WORKSPACE_URI,
                    **page_properties(PAGE_SIZE, MAX_PAGE, "entries"),
                },
                "required": ["workspaceUri"],
                "additionalProperties": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    "workspaceUri": {"type": "string"},
                    "count": {"type": "integer", "minimum": 0},
                    "entries": {"type": "array", "items": TRASHED},
                    "nextCursor": {"type": "string"},
                },
                "required": ["workspaceUri", "count", "entries"],
            },
            annotations=types.ToolAnnotations(
                title="List the trash",
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        ),
        handler=TrashTools(services).list_entries,
        right=Right.READ,
    )


def notes_restore(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_restore",
            title="Restore a note",
            description="Put a note from the trash back where it was (or at newPath), byte for byte. "
            "Never replaces an existing file.",
            input_schema={
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
            output_schema={
                "type": "object",
                "properties": {
                    "workspaceUri": {"type": "string"},
                    "trashId": {"type": "string"},
                    "note": NOTE_OBJECT,
                },
                "required": ["workspaceUri", "trashId", "note"],
            },
            annotations=types.ToolAnnotations(
                title="Restore a note",
                read_only_hint=False,
                destructive_hint=False,
                idempotent_hint=False,
                open_world_hint=False,
            ),
        ),
        handler=TrashTools(services).restore,
        right=Right.WRITE,
    )


def notes_trash_empty(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_trash_empty",
            title="Empty the trash",
            description="Permanently delete the notes in a workspace's trash (all, or those deleted more than "
            "olderThanDays ago). The user sees how many and which, and confirms in a form (elicitation); "
            "nothing is deleted without that. This cannot be undone.",
            input_schema={
                "type": "object",
                "properties": {
                    "workspaceUri": WORKSPACE_URI,
                    "olderThanDays": {"type": "integer", "minimum": 0, "maximum": 36500},
                },
                "required": ["workspaceUri"],
                "additionalProperties": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    "outcome": {
                        "enum": ["emptied", "nothing_to_empty", "declined", "cancelled", "not_confirmed"]
                    },
                    "workspaceUri": {"type": "string"},
                    "purged": {"type": "integer", "minimum": 0},
                    "purgedNotes": {
                        "type": "array",
                        "items": TRASHED,
                        "description": "The first 100 purged.",
                    },
                    "retriableUntil": {"type": "string"},
                },
                "required": ["outcome", "workspaceUri", "purged", "purgedNotes"],
            },
            annotations=types.ToolAnnotations(
                title="Empty the trash",
                read_only_hint=False,
                destructive_hint=True,
                idempotent_hint=False,
                open_world_hint=False,
            ),
        ),
        handler=TrashTools(services).empty,
        right=Right.PURGE,
    )
