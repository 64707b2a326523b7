"""`notes_history`, `notes_revert`, `notes_history_purge`: nothing written is lost until purged.

Every write that replaces a note's content saves what it replaced (`notes.history`).
`notes_history` lists a note's saved versions, newest first; `notes_revert` brings one back
through the same `rewrite_note` as every write (so the content it replaces is saved in turn, and
a revert is undone by reverting to the version it saved) and answers with `notes_edit`'s receipt.

Purging is permanent, so it is confirmed like emptying the trash (`notes_trash`), with its own
phase and form:

    1 authorize, 2 contain   as everywhere
    3 find      the saved versions to purge: all of the workspace (or folder, or one note's), or
                those saved more than olderThanDays ago; not those of notes in the trash, which
                go when the trash is emptied
    4 ask       a yes/no form saying how many and which; sealed state with a `Selection`
    5 verify    SDK boundary + phase, principal, arguments, workspace  (`confirm.flow`)
    6 judge     `forms.judge_confirmation` under the same OUTCOMES table
    7 commit    one transaction: claim the confirmation id (`confirm.flow`), re-authorize, re-contain, select
                again with the sealed bound; the digest must match (else `history_changed`,
                nothing purged); purge
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.confirm.flow import Confirmed, Done, Offer, retriable
from notewarden.confirm.forms import HISTORY_PURGE_INPUT_KEY, Answer, history_purge_form
from notewarden.confirm.state import ConfirmationState, Selection
from notewarden.display import visible, visible_line
from notewarden.notes.history import HistoryEntry, selection_digest
from notewarden.notes.store import replace_with
from notewarden.scope.fs_errors import NoteMissing
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.notes_edit import EXPECTED_VERSION, RECEIPT, receipt_object
from notewarden.tools.notes_read import HISTORY_ENTRY, history_object
from notewarden.tools.paging import cursor_key, listing_print, make_cursor, page_properties
from notewarden.tools.registry import ToolCall, ToolDef, ToolFailure, ToolResult, require_form_elicitation
from notewarden.tools.results import (
    NOTE_ID,
    WORKSPACE_URI,
    complete,
    confirm_in_workspace,
    iso8601,
    reauthorize_sealed,
    sealed_workspace,
)

__all__ = ["PHASE", "notes_history", "notes_history_purge", "notes_revert"]

PHASE = "notes_history_purge/confirm"
PAGE_SIZE, MAX_PAGE = 50, 500
SHOWN_IN_FORM = 20
VERSION_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "pattern": "^[A-Za-z0-9._-]+$",
    "description": "A versionId from notes_history (or a receipt's previousVersionId).",
}


class HistoryTools:
    def __init__(self, services: Services) -> None:
        self.services = services

    # notes_history

    async def list_versions(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        note_id = call.arguments["noteId"]

        def read() -> tuple[list[HistoryEntry], dict[str, Any] | None]:
            entries = list(self.services.store.note_history(scope, note_id))
            try:
                current = self.services.store.read_note(scope, note_id)
            except NoteMissing:
                return entries, None
            return entries, {"version": current.version, "size": len(current.data)}

        entries, current = await anyio.to_thread.run_sync(read)
        start = 0
        print_ = listing_print("notes_history", scope.uri, note_id)
        if "cursor" in call.arguments:
            ids = [e.version_id for e in entries]
            (after,) = cursor_key(call.arguments["cursor"], print_, made_by="notes_history", shape=(str,))
            if after not in ids:
                raise ToolFailure(
                    "invalid_cursor", "the version this cursor resumes after is gone; omit it to start over"
                )
            start = ids.index(after) + 1
        limit = call.arguments.get("limit", PAGE_SIZE)
        page = entries[start : start + limit]
        shown: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "noteId": note_id,
            "count": len(entries),
            "versions": [history_object(e) for e in page],
        }
        if current is not None:
            shown["current"] = current
        if start + limit < len(entries):
            shown["nextCursor"] = make_cursor([page[-1].version_id], print_)
        return complete(shown)

    # notes_revert

    async def revert(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        note_id, version_id = call.arguments["noteId"], call.arguments["versionId"]
        store = self.services.store

        def revert() -> dict[str, Any]:
            entry, data = store.saved_version(scope, note_id, version_id)
            rewrite = replace_with(data, call.arguments.get("expectedVersion"))
            if call.arguments.get("dryRun"):
                current = store.read_note(scope, note_id)
                return receipt_object(scope, note_id, current, rewrite(current), None)
            summary = f"reverted to {version_id} (saved {iso8601(entry.saved_at)})"
            done = store.rewrite_note(scope, note_id, rewrite, change=call.change(summary))
            return receipt_object(scope, note_id, done.before, done.after.data, done)

        shown = await anyio.to_thread.run_sync(revert)
        return complete({**shown, "revertedTo": version_id})

    # notes_history_purge

    def _selected(self, scope: WorkspaceScope, note_id: str | None, bound: float) -> list[HistoryEntry]:
        with self.services.trash_ledger(scope.workspace).critical_section() as txn:
            entries = self.services.store.select_history(txn, scope, saved_before=bound)
        return [e for e in entries if note_id is None or e.note_id == note_id]

    async def purge(self, call: ToolCall) -> ToolResult:
        require_form_elicitation(
            call.capabilities, "notes_history_purge needs form elicitation to let the user confirm the purge"
        )
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        note_id = call.arguments.get("noteId")
        workspace = str(call.arguments["workspaceUri"])

        def offer(prior: ConfirmationState | None) -> Offer | types.CallToolResult:  # 3 find, 4 ask
            if prior is not None and prior.selection is not None:
                bound = prior.selection.bound
            else:
                bound = time.time() - call.arguments.get("olderThanDays", 0) * 86400
            entries = self._selected(scope, note_id, bound)
            if not entries:
                return complete(self._result("nothing_to_purge", str(scope.uri), 0))
            return Offer(
                self.form(scope, note_id, entries),
                selection=Selection(len(entries), selection_digest(entries), bound),
                data=sealed_workspace(scope),
            )

        def effect(confirmed: Confirmed) -> Done:  # 7 commit, inside the claim's transaction
            purged = self.purge_selected(call, confirmed)
            where = visible_line(note_id or str(confirmed.state.bound["workspace"]))
            return Done(
                self._result("purged", workspace, purged),
                f"{purged} saved version(s) of {where} were purged for good",
            )

        def unchanged(outcome: str, until: str | None) -> Done:
            return Done(retriable(self._result(outcome, workspace, 0), until))

        return await confirm_in_workspace(  # 5 verify, 6 judge, 7 commit: the confirmation path
            self.services,
            call,
            scope,
            answer=Answer.YES_NO,
            done_label="purged",
            input_key=HISTORY_PURGE_INPUT_KEY,
            nothing_done="nothing was purged",
            phase=PHASE,
            offer=offer,
            effect=effect,
            unchanged=unchanged,
        )

    @staticmethod
    def form(scope: WorkspaceScope, note_id: str | None, entries: Sequence[HistoryEntry]) -> dict[str, Any]:
        shown = [
            f"{e.note_id} — saved {datetime.fromtimestamp(e.saved_at, tz=UTC):%Y-%m-%d %H:%M} UTC — {e.summary}"
            for e in entries[:SHOWN_IN_FORM]
        ]
        where = f"note {note_id}" if note_id is not None else f"the notes of {scope.uri}"
        return history_purge_form(visible_line(where), len(entries), shown, len(entries) - len(shown))

    def purge_selected(self, call: ToolCall, confirmed: Confirmed) -> int:
        """Select again with the sealed bound; the digest must match, or nothing is purged."""
        selection = confirmed.state.selection
        assert selection is not None
        scope = reauthorize_sealed(
            self.services.grants, call.caller, call.arguments["workspaceUri"], confirmed.state
        )
        note_id = call.arguments.get("noteId")
        entries = [
            e
            for e in self.services.store.select_history(confirmed.txn, scope, saved_before=selection.bound)
            if note_id is None or e.note_id == note_id
        ]
        if selection_digest(entries) != selection.digest:
            raise ToolFailure(
                "history_changed",
                f"nothing was purged: the saved versions changed since you confirmed "
                f"({selection.count} then, {len(entries)} now). Call notes_history_purge "
                "again and confirm anew.",
            )
        where = visible(note_id or str(confirmed.state.bound["workspace"]))
        change = call.change(
            f"{len(entries)} saved version(s) of {where} purged for good",
            confirmation_id=confirmed.state.confirmation_id,
        )
        return self.services.store.purge_history(confirmed.txn, scope, entries, change=change)

    @staticmethod
    def _result(outcome: str, workspace: str, purged: int) -> dict[str, Any]:
        return {"outcome": outcome, "workspaceUri": workspace, "purged": purged}


def _annotations(
    title: str, *, read_only: bool, destructive: bool, idempotent: bool
) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def notes_history(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_history",
            title="List a note's versions",
            description="List the saved versions of a note, newest first: each is a content the note had until a "
            "write replaced it (when, by whom, with which tool, a one-line summary, size). notes_read with "
            f"versionId shows one; notes_revert brings one back. {PAGE_SIZE} a page by default (limit up to "
            f"{MAX_PAGE}; pass nextCursor back as cursor). Read-only.",
            input_schema={
                "type": "object",
                "properties": {
                    "workspaceUri": WORKSPACE_URI,
                    "noteId": NOTE_ID,
                    **page_properties(PAGE_SIZE, MAX_PAGE, "versions"),
                },
                "required": ["workspaceUri", "noteId"],
                "additionalProperties": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    "workspaceUri": {"type": "string"},
                    "noteId": {"type": "string"},
                    "count": {"type": "integer", "minimum": 0},
                    "current": {
                        "type": "object",
                        "properties": {
                            "version": {"type": "string"},
                            "size": {"type": "integer", "minimum": 0},
                        },
                        "required": ["version", "size"],
                    },
                    "versions": {"type": "array", "items": HISTORY_ENTRY},
                    "nextCursor": {"type": "string"},
                },
                "required": ["workspaceUri", "noteId", "count", "versions"],
            },
            annotations=_annotations(
                "List a note's versions", read_only=True, destructive=False, idempotent=True
            ),
        ),
        handler=HistoryTools(services).list_versions,
        right=Right.READ,
    )


def notes_revert(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_revert",
            title="Revert a note",
            description="Bring back a saved version of a note (versionId from notes_history or a receipt's "
            "previousVersionId). The current content is saved in turn, so a revert can itself be reverted. "
            "With expectedVersion, only if the note is still at that version. Returns the same receipt as "
            "notes_edit; dryRun: true previews the diff and writes nothing.",
            input_schema={
                "type": "object",
                "properties": {
                    "workspaceUri": WORKSPACE_URI,
                    "noteId": NOTE_ID,
                    "versionId": VERSION_ID,
                    "expectedVersion": EXPECTED_VERSION,
                    "dryRun": {"type": "boolean"},
                },
                "required": ["workspaceUri", "noteId", "versionId"],
                "additionalProperties": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    "workspaceUri": {"type": "string"},
                    **RECEIPT,
                    "revertedTo": {"type": "string"},
                },
                "required": [
                    "workspaceUri",
                    "noteId",
                    "dryRun",
                    "before",
                    "after",
                    "changes",
                    "diff",
                    "revertedTo",
                ],
            },
            annotations=_annotations("Revert a note", read_only=False, destructive=True, idempotent=True),
        ),
        handler=HistoryTools(services).revert,
        right=Right.WRITE,
    )


def notes_history_purge(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_history_purge",
            title="Purge saved versions",
            description="Permanently delete saved versions of notes: of every note in the workspace (or folder), "
            "or of noteId only; all, or those saved more than olderThanDays ago. The user sees how many and "
            "which, and confirms in a form (elicitation); nothing is deleted without that. The current notes "
            "are not touched. This cannot be undone.",
            input_schema={
                "type": "object",
                "properties": {
                    "workspaceUri": WORKSPACE_URI,
                    "noteId": NOTE_ID,
                    "olderThanDays": {"type": "integer", "minimum": 0, "maximum": 36500},
                },
                "required": ["workspaceUri"],
                "additionalProperties": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    "outcome": {
                        "enum": ["purged", "nothing_to_purge", "declined", "cancelled", "not_confirmed"]
                    },
                    "workspaceUri": {"type": "string"},
                    "purged": {"type": "integer", "minimum": 0},
                    "retriableUntil": {"type": "string"},
                },
                "required": ["outcome", "workspaceUri", "purged"],
            },
            annotations=_annotations(
                "Purge saved versions", read_only=False, destructive=True, idempotent=False
            ),
        ),
        handler=HistoryTools(services).purge,
        right=Right.PURGE,
    )
