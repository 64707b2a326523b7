"""`notes_history`, `notes_revert`, `notes_history_purge`: nothing written is lost until purged.

Every write that replaces a note's content saves what it replaced (`notes.history`).
`notes_history` lists a note's saved versions, newest first; `notes_revert` brings one back
through the same `rewrite_note` as every write (so the content it replaces is saved in turn, and
a revert is undone by reverting to the version it saved) and answers with `notes_edit`'s receipt.

Purging is permanent, so it is confirmed like emptying the trash (`notes_trash`): a bounded
confirmed purge (`tools.confirmed.BoundedPurge`, whose steps it follows), with its own phase and
form:

    3 find      the saved versions to purge: all of the workspace (or folder, or one note's), or
                those saved more than olderThanDays ago; not those of notes in the trash, which
                go when the trash is emptied
    4 ask       a yes/no form saying how many and which (`history_purge_form`); the sealed
                `Selection` digests each version's id, note and content version
    7 commit    the digest must match (else `history_changed`, nothing purged); purge
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from notewarden.confirm.state import ConfirmationState
from notewarden.display import visible, visible_line
from notewarden.ledger import LedgerTxn
from notewarden.notes.history import Change, HistoryEntry
from notewarden.notes.store import ProgressSink, replace_with
from notewarden.scope.fs_errors import NoteMissing
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.confirmed import BoundedPurge, PurgeWords, declare_purge, linted_purge, purge_form
from notewarden.tools.notes_edit import EXPECTED_VERSION, RECEIPT, receipt_object
from notewarden.tools.notes_read import HISTORY_ENTRY, history_object
from notewarden.tools.paging import listing_print, page_after, page_properties
from notewarden.tools.registry import REPLACES, ToolCall, ToolResult, declare
from notewarden.tools.results import complete, iso8601
from notewarden.tools.schemas import ISSUED_ID, NOTE_ID, WORKSPACE_URI, args, returns

__all__ = [
    "HISTORY_PURGE_INPUT_KEY",
    "NOTES_HISTORY",
    "NOTES_HISTORY_PURGE",
    "NOTES_REVERT",
    "PHASE",
    "HistoryTools",
    "history_purge_form",
]

HISTORY_PURGE_INPUT_KEY = "purge_history"
PURGE_WORDS = PurgeWords(
    "notes_history_purge", "purged", "nothing_to_purge", "nothing was purged", HISTORY_PURGE_INPUT_KEY,
    "history_changed", "the saved versions", "",
)  # fmt: skip
PHASE = PURGE_WORDS.phase
PAGE_SIZE, MAX_PAGE = 50, 500
SHOWN_IN_FORM = 20
VERSION_ID: dict[str, Any] = {
    **ISSUED_ID,
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
        page, more = page_after(
            entries,
            lambda e: e.version_id,
            call.arguments,
            listing_print("notes_history", scope.uri, note_id),
            made_by="notes_history",
            default=PAGE_SIZE,
            gone="the version this cursor resumes after is gone",
        )
        shown: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "noteId": note_id,
            "count": len(entries),
            "versions": [history_object(e) for e in page],
        }
        if current is not None:
            shown["current"] = current
        if more is not None:
            shown["nextCursor"] = more
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

    async def purge(self, call: ToolCall) -> ToolResult:
        store = self.services.store
        note_id = call.arguments.get("noteId")
        workspace = str(call.arguments["workspaceUri"])

        def select(txn: LedgerTxn, scope: WorkspaceScope, bound: float) -> list[HistoryEntry]:
            entries = store.select_history(txn, scope, saved_before=bound)
            return [e for e in entries if note_id is None or e.note_id == note_id]

        def form(scope: WorkspaceScope, entries: Sequence[HistoryEntry]) -> dict[str, Any]:
            shown = [
                f"{e.note_id} — saved {datetime.fromtimestamp(e.saved_at, tz=UTC):%Y-%m-%d %H:%M} UTC — {e.summary}"
                for e in entries[:SHOWN_IN_FORM]
            ]
            where = f"note {note_id}" if note_id is not None else f"the notes of {scope.uri}"
            return history_purge_form(visible_line(where), len(entries), shown, len(entries) - len(shown))

        def purge(
            txn: LedgerTxn,
            scope: WorkspaceScope,
            entries: Sequence[HistoryEntry],
            *,
            change: Change,
            progress: ProgressSink | None,
        ) -> int:
            return store.purge_history(txn, scope, entries, change=change)  # it reports no progress

        def result(outcome: str, scope: WorkspaceScope, purged: Sequence[HistoryEntry]) -> dict[str, Any]:
            shown = str(scope.uri) if outcome == "nothing_to_purge" else workspace
            return {"outcome": outcome, "workspaceUri": shown, "purged": len(purged)}

        def where(state: ConfirmationState) -> str:
            return note_id or str(state.bound["workspace"])

        def change(purged: Sequence[HistoryEntry], _: WorkspaceScope, state: ConfirmationState) -> str:
            return f"{len(purged)} saved version(s) of {visible(where(state))} purged for good"

        def receipt(purged: Sequence[HistoryEntry], _: WorkspaceScope, state: ConfirmationState) -> str:
            return f"{len(purged)} saved version(s) of {visible_line(where(state))} were purged for good"

        return await BoundedPurge(PURGE_WORDS, select, version_key, form, purge, result, change, receipt).run(
            self.services, call
        )


def version_key(entry: HistoryEntry) -> str:
    """A saved version as its purge's confirmation binds it: its id, its note and its content version."""
    return f"{entry.version_id}\0{entry.note_id}\0{entry.version}"


@linted_purge(
    "notes_history_purge", "the notes of file:///srv/notes", "note-{i}.md — saved … — append", SHOWN_IN_FORM
)
def history_purge_form(where: str, count: int, listing: Sequence[str], more: int) -> dict[str, Any]:
    """The input request confirming that saved versions of notes (`where`) are deleted for good."""
    versions = "1 saved version" if count == 1 else f"{count} saved versions"
    return purge_form(f"{versions} of {where}", versions, listing, more, " They can no longer be restored.")


NOTES_HISTORY = declare(
    "notes_history",
    "List a note's versions",
    "List the saved versions of a note, newest first: each is a content the note had until a "
    "write replaced it (when, by whom, with which tool, a one-line summary, size). notes_read with "
    f"versionId shows one; notes_revert brings one back. {PAGE_SIZE} a page by default (limit up to "
    f"{MAX_PAGE}; pass nextCursor back as cursor). Read-only.",
    args(
        {"workspaceUri": WORKSPACE_URI, "noteId": NOTE_ID}, page_properties(PAGE_SIZE, MAX_PAGE, "versions")
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "noteId": {"type": "string"},
            "count": {"type": "integer", "minimum": 0},
            "current": returns(
                {"version": {"type": "string"}, "size": {"type": "integer", "minimum": 0}},
                ["version", "size"],
            ),
            "versions": {"type": "array", "items": HISTORY_ENTRY},
            "nextCursor": {"type": "string"},
        },
        ["workspaceUri", "noteId", "count", "versions"],
    ),
    Right.READ,
)
NOTES_REVERT = declare(
    "notes_revert",
    "Revert a note",
    "Bring back a saved version of a note (versionId from notes_history or a receipt's "
    "previousVersionId). The current content is saved in turn, so a revert can itself be reverted. "
    "With expectedVersion, only if the note is still at that version. Returns the same receipt as "
    "notes_edit; dryRun: true previews the diff and writes nothing.",
    args(
        {"workspaceUri": WORKSPACE_URI, "noteId": NOTE_ID, "versionId": VERSION_ID},
        {"expectedVersion": EXPECTED_VERSION, "dryRun": {"type": "boolean"}},
    ),
    returns(
        {"workspaceUri": {"type": "string"}, **RECEIPT, "revertedTo": {"type": "string"}},
        ["workspaceUri", "noteId", "dryRun", "before", "after", "changes", "diff", "revertedTo"],
    ),
    Right.WRITE,
    REPLACES,
)
NOTES_HISTORY_PURGE = declare_purge(
    PURGE_WORDS,
    "Purge saved versions",
    "Permanently delete saved versions of notes: of every note in the workspace (or folder), "
    "or of noteId only; all, or those saved more than olderThanDays ago. The user sees how many and "
    "which, and confirms in a form (elicitation); nothing is deleted without that. The current notes "
    "are not touched. This cannot be undone.",
    selectors={"noteId": NOTE_ID},
)
