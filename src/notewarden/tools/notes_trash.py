"""`notes_trash_list`, `notes_restore`, `notes_trash_empty`: everything deleted is recoverable
until the trash is emptied, and emptying it is confirmed like a delete.

Every trash step runs in the ledger's critical section (see `notes.files`). Emptying follows the
path of one delete (`notes_delete`), with its own phase and form:

    1 authorize, 2 contain   as everywhere
    3 find      the entries to purge: all, or those deleted more than olderThanDays ago
    4 ask       a yes/no form saying how many notes and which; sealed state with a `Selection`
                (count, digest of every entry's id and identity, the deleted-before bound)
    5 verify    SDK boundary + phase, principal, workspace
    6 judge     `forms.judge_confirmation` under the same OUTCOMES table
    7 commit    one critical section: claim the confirmation id, re-authorize, re-contain,
                select again with the sealed bound; the digest must match (else `trash_changed`,
                nothing purged); purge, with progress when the request asked for it
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.confirm.forms import (
    OUTCOMES,
    TRASH_EMPTY_INPUT_KEY,
    Verdict,
    VerdictKind,
    judge_confirmation,
    trash_empty_form,
)
from notewarden.confirm.state import ConfirmationState, InvalidState, Selection, new_confirmation_id
from notewarden.display import visible
from notewarden.ledger import EXPIRY_SKEW_SECONDS, Claim
from notewarden.notes.store import ProgressSink, TrashedNote
from notewarden.scope.fs_errors import IdentityMismatch, NoteExists
from notewarden.scope.grants import WorkspaceScope
from notewarden.services import Services
from notewarden.tools.notes_delete import require_form_elicitation
from notewarden.tools.registry import ToolCall, ToolDef, ToolFailure, ToolResult, tool_error
from notewarden.tools.results import (
    NOTE_ID,
    NOTE_OBJECT,
    WORKSPACE_URI,
    already_used,
    complete,
    iso8601,
    note_object,
    progress_sink,
    receipt,
    require_note_path,
)

__all__ = ["PHASE", "notes_restore", "notes_trash_empty", "notes_trash_list"]

PHASE = "notes_trash_empty/confirm"
PAGE_SIZE = 100
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
        scope = self.services.grants.authorize_workspace(call.principal, call.arguments["workspaceUri"])
        entries = await anyio.to_thread.run_sync(self._entries, scope)
        start = 0
        if "cursor" in call.arguments:
            ids = [e.trash_id for e in entries]
            after = _decode_trash_cursor(call.arguments["cursor"])
            if after not in ids:
                raise invalid_trash_cursor()
            start = ids.index(after) + 1
        page = entries[start : start + PAGE_SIZE]
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "count": len(entries),
            "entries": [trashed_object(e) for e in page],
        }
        if start + PAGE_SIZE < len(entries):
            structured["nextCursor"] = base64.urlsafe_b64encode(page[-1].trash_id.encode()).decode()
        return complete(structured)

    # notes_restore

    async def restore(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.principal, call.arguments["workspaceUri"])
        trash_id = call.arguments["trashId"]
        new_path = call.arguments.get("newPath")
        if new_path is not None:
            require_note_path(new_path, "newPath")

        def restore() -> Any:
            with self.services.trash_ledger(scope.workspace).critical_section() as txn:
                return self.services.store.restore(txn, scope, trash_id, new_id=new_path)

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
        scope = self.services.grants.authorize_workspace(call.principal, call.arguments["workspaceUri"])
        if call.request_state is None:
            days = call.arguments.get("olderThanDays")
            bound = time.time() - (days or 0) * 86400
            entries = await anyio.to_thread.run_sync(self._entries, scope, bound)
            if not entries:
                return complete(self._result("nothing_to_empty", str(scope.uri), []))
            return self.ask(scope, entries, bound)
        state = ConfirmationState.decode(call.request_state, phase=PHASE)
        if (
            state.principal != call.principal
            or state.workspace != str(scope.workspace)
            or not state.selection
        ):
            raise InvalidState("state was minted for another principal or workspace")
        verdict = judge_confirmation(call.input_responses.get(TRASH_EMPTY_INPUT_KEY))
        if verdict.kind is VerdictKind.MISSING:
            entries = await anyio.to_thread.run_sync(self._entries, scope, state.selection.bound)
            return self.ask(scope, entries, state.selection.bound)
        async with progress_sink(call.report_progress) as progress:
            return await anyio.to_thread.run_sync(self.commit, call, state, verdict, progress)

    def ask(
        self, scope: WorkspaceScope, entries: list[TrashedNote], bound: float
    ) -> types.InputRequiredResult:
        state = ConfirmationState(
            phase=PHASE,
            principal=scope.principal,
            workspace=str(scope.workspace),
            workspace_identity=scope.identity,
            candidates=(),
            confirmation_id=new_confirmation_id(),
            issued_at=time.time(),
            selection=Selection(len(entries), selection_digest(entries), bound),
        )
        shown = [
            f"{e.title} — {e.note_id} — deleted {datetime.fromtimestamp(e.deleted_at, tz=UTC):%Y-%m-%d %H:%M} UTC"
            for e in entries[:SHOWN_IN_FORM]
        ]
        form = trash_empty_form(str(scope.uri), len(entries), shown, len(entries) - len(shown))
        return types.InputRequiredResult(
            input_requests={TRASH_EMPTY_INPUT_KEY: types.ElicitRequest.model_validate(form)},
            request_state=state.encode(),
        )

    def commit(
        self, call: ToolCall, state: ConfirmationState, verdict: Verdict, progress: ProgressSink | None
    ) -> types.CallToolResult:
        assert state.selection is not None
        outcome = OUTCOMES[verdict.kind]
        ledger = self.services.trash_ledger(state.workspace)
        if not outcome.consumes:
            prior = ledger.consumed_outcome(state.confirmation_id, call.principal)
            if prior is not None:
                raise already_used(call.name, prior)
        label = "emptied" if outcome.mutates else outcome.label
        shown_uri = str(
            self.services.grants.authorize_workspace(call.principal, call.arguments["workspaceUri"]).uri
        )
        if verdict.kind is VerdictKind.INVALID:
            return tool_error(
                "invalid_answer",
                f"nothing was deleted: {verdict.problem}. The confirmation is still usable; answer the form again.",
            )
        purged: list[TrashedNote] = []
        if outcome.consumes:
            claim = Claim(
                confirmation_id=state.confirmation_id,
                principal=call.principal,
                tool=call.name,
                outcome=label,
                expires_at=state.issued_at
                + self.services.config.confirmation_ttl_seconds
                + EXPIRY_SKEW_SECONDS,
            )
            with ledger.critical_section() as txn:
                if not txn.claim_confirmation(claim):
                    raise already_used(call.name, txn.prior_outcome(state.confirmation_id, call.principal))
                if outcome.mutates:
                    scope = self.services.grants.reauthorize_workspace(
                        call.principal, call.arguments["workspaceUri"]
                    )
                    scope.verify_identity(state.workspace_identity)
                    entries = [
                        e
                        for e in self.services.store.list_trash(txn, scope)
                        if e.deleted_at <= state.selection.bound
                    ]
                    if selection_digest(entries) != state.selection.digest:
                        raise ToolFailure(
                            "trash_changed",
                            f"nothing was deleted: the trash changed since you confirmed ({state.selection.count} "
                            f"notes then, {len(entries)} now). Call notes_trash_empty again and confirm anew.",
                        )
                    try:
                        self.services.store.purge_trash(txn, scope, entries, progress=progress)
                    except IdentityMismatch as exc:
                        raise ToolFailure("trash_changed", f"nothing was deleted: {exc}") from None
                    purged = entries
                txn.record_receipt(
                    state.confirmation_id, empty_receipt(self._result(label, shown_uri, purged))
                )
        structured = self._result(label, shown_uri, purged)
        if verdict.kind is VerdictKind.CANCELLED:
            structured["retriableUntil"] = iso8601(
                state.issued_at + self.services.config.confirmation_ttl_seconds
            )
        return complete(structured)

    @staticmethod
    def _result(outcome: str, workspace: str, purged: list[TrashedNote]) -> dict[str, Any]:
        return {
            "outcome": outcome,
            "workspaceUri": workspace,
            "purged": len(purged),
            "purgedNotes": [trashed_object(e) for e in purged[:SHOWN_IN_RESULT]],
        }


def invalid_trash_cursor() -> ToolFailure:
    return ToolFailure(
        "invalid_cursor",
        "cursor is not a nextCursor of notes_trash_list for this trash; omit it to start over",
    )


def _decode_trash_cursor(cursor: str) -> str:
    try:
        return base64.urlsafe_b64decode(cursor.encode()).decode()
    except (ValueError, binascii.Error):
        raise invalid_trash_cursor() from None


def empty_receipt(result: dict[str, Any]) -> dict[str, Any]:
    done = None
    if result["outcome"] == "emptied":
        names = ", ".join(visible(e["id"]) for e in result["purgedNotes"][:SHOWN_IN_FORM])
        more = f" and {result['purged'] - SHOWN_IN_FORM} more" if result["purged"] > SHOWN_IN_FORM else ""
        done = f"{result['purged']} notes were permanently deleted from the trash of {result['workspaceUri']}: {names}{more}"
    return receipt(result, done, otherwise="nothing was deleted")


def notes_trash_list(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_trash_list",
            title="List the trash",
            description="List the notes in a workspace's trash, newest deletion first (100 per page; pass "
            "nextCursor back as cursor). Each can be put back with notes_restore. Read-only.",
            input_schema={
                "type": "object",
                "properties": {"workspaceUri": WORKSPACE_URI, "cursor": {"type": "string", "maxLength": 400}},
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
    )
