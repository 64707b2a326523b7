"""`notes_delete`: move the one note the user picked and confirmed to the workspace trash.

The handler reads as the path of one delete:

    1 authorize   the principal may use workspaceUri          (scope.grants)
    2 contain     strict URI parse -> open directory handle     (scope.uri, scope.fsroot)
    3 find        candidates by title, each with its identity   (notes store)
    4 ask         input_required: pick + confirm, sealed state  (confirm.forms, SDK boundary)
    5 verify      authentic, unexpired, same principal/arguments (SDK boundary) + same phase
    6 judge       accept / decline / cancel against the form     (confirm.forms.OUTCOMES)
    7 commit      one critical section: claim, re-authorize, re-contain, re-verify, trash

With `noteIds` instead of `title` (a set the caller already knows, e.g. from notes_search),
step 3 looks those notes up instead, and the form is a multi-select with every note ticked:
the user unticks any to keep and confirms the rest, which move to the trash together or not
at all (one critical section). Multi-select because the caller chose the set, so the user's
job is to veto, not to pick; a single-select would turn "delete these 5" into 5 forms.

Without `workspaceUri`, a 2026-07-28 client that declares `roots` is asked for them first
(`tools.workspace_hint`): they only choose among the workspaces already granted.
On a 2025-11-25 session (`call.live`), step 4 asks live on the session and steps 5-7 run
at once on the state held in memory: the same form, judge, ledger claim and commit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.confirm.forms import (
    DELETE_INPUT_KEY,
    OUTCOMES,
    Verdict,
    VerdictKind,
    delete_form,
    delete_set_form,
    judge_choice,
    judge_selection,
)
from notewarden.confirm.state import Candidate, ConfirmationState, InvalidState, new_confirmation_id
from notewarden.display import visible
from notewarden.faults import pause_point
from notewarden.ledger import EXPIRY_SKEW_SECONDS, Claim
from notewarden.notes.model import match_words, matched_name
from notewarden.notes.store import TrashedNote
from notewarden.scope.fs_errors import IdentityMismatch, NoteMissing
from notewarden.scope.grants import WorkspaceScope
from notewarden.services import Services
from notewarden.tools.registry import (
    MissingCapability,
    ToolCall,
    ToolDef,
    ToolFailure,
    ToolResult,
    tool_error,
)
from notewarden.tools.results import already_used, receipt
from notewarden.tools.workspace_hint import resolve_workspace

__all__ = ["MAX_CANDIDATES", "PHASE", "notes_delete"]

PHASE = "notes_delete/confirm"
MAX_CANDIDATES = 25
_FORM_CAPABILITY: dict[str, Any] = {"elicitation": {"form": {}}}

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workspaceUri": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4096,
            "description": "file: URI of a workspace granted to you, or of a folder inside it "
            "(e.g. file:///srv/notes/team-a). The URI alone grants nothing.",
        },
        "title": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "pattern": r"\S",
            "description": "Words of the note's title; a note matches when its title, its file name or one "
            "of its aliases contains every word (case-insensitive).",
        },
        "noteIds": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 4095},
            "minItems": 1,
            "maxItems": MAX_CANDIDATES,
            "uniqueItems": True,
            "description": "Instead of title: the ids of the notes to delete (paths relative to the workspace "
            "root). The user still confirms them, and may untick any.",
        },
    },
    "required": [],
    "additionalProperties": False,
}
"""Exactly one of title and noteIds is checked by the handler, not by a top-level oneOf, which
several model APIs refuse in a tool's inputSchema; so is workspaceUri, which only a client that
declares `roots` may leave out (tools.workspace_hint)."""

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "outcome": {"enum": ["deleted", "declined", "cancelled", "not_confirmed"]},
        "workspaceUri": {"type": "string"},
        "deleted": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "title": {"type": "string"},
                    "trashId": {"type": "string"},
                },
                "required": ["id", "title", "trashId"],
            },
        },
        "retriableUntil": {"type": "string", "description": "For cancelled: when the confirmation expires."},
    },
    "required": ["outcome", "workspaceUri", "deleted"],
}


class DeleteTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        require_form_elicitation(call.capabilities)
        if "workspaceUri" not in call.arguments:
            hinted = resolve_workspace(self.services, call, workspace_in_state)
            if not isinstance(hinted, ToolCall):
                return hinted
            call = hinted
        uri, query = call.arguments["workspaceUri"], call.arguments.get("title")
        if (query is None) == ("noteIds" not in call.arguments):
            raise ToolFailure(
                "invalid_arguments",
                "give exactly one of title (words of the note title) and noteIds (note ids)",
            )
        scope = self.services.grants.authorize_workspace(call.principal, uri)  # 1 authorize, 2 contain
        self.services.trash_ledger(scope.workspace)  # a trash this server may not change: say so now
        note_ids = call.arguments.get("noteIds")
        if call.live is not None:
            return await self.ask_live(call, scope, query, note_ids)
        if call.request_state is None:
            candidates = await anyio.to_thread.run_sync(
                find_candidates, self.services, scope, query, note_ids
            )  # 3 find
            return self.ask(scope, query, candidates)  # 4 ask
        state = self.verify(call, scope)  # 5 verify
        judge = judge_choice if query is not None else judge_selection
        verdict = judge(call.input_responses.get(DELETE_INPUT_KEY), state.candidates)  # 6 judge
        if verdict.kind is VerdictKind.MISSING:
            return self.ask(scope, query, state.candidates)
        return await anyio.to_thread.run_sync(self.commit, call, state, verdict)  # 7 commit

    def ask(
        self, scope: WorkspaceScope, query: str | None, candidates: Sequence[Candidate]
    ) -> types.InputRequiredResult:
        return types.InputRequiredResult(
            input_requests={
                DELETE_INPUT_KEY: types.ElicitRequest.model_validate(delete_request(scope, query, candidates))
            },
            request_state=new_state(scope, candidates).encode(),
        )

    async def ask_live(
        self, call: ToolCall, scope: WorkspaceScope, query: str | None, note_ids: Sequence[str] | None
    ) -> types.CallToolResult:
        """Legacy session: 3 find, 4 ask live, 6 judge, 7 commit; the state never leaves memory."""
        assert call.live is not None
        candidates = await anyio.to_thread.run_sync(find_candidates, self.services, scope, query, note_ids)
        state = new_state(scope, candidates)
        form = delete_request(scope, query, candidates)["params"]
        answer = await call.live.form(form["message"], form["requestedSchema"])
        judge = judge_choice if query is not None else judge_selection
        verdict = judge(answer, state.candidates)
        return await anyio.to_thread.run_sync(partial(self.commit, call, state, verdict, retriable=False))

    def verify(self, call: ToolCall, scope: WorkspaceScope) -> ConfirmationState:
        state = ConfirmationState.decode(call.request_state, phase=PHASE)
        if state.principal != call.principal or state.workspace != str(scope.workspace):
            raise InvalidState("state was minted for another principal or workspace")
        return state

    def commit(
        self, call: ToolCall, state: ConfirmationState, verdict: Verdict, *, retriable: bool = True
    ) -> types.CallToolResult:
        """`retriable=False` on a legacy session, where the state dies with the call."""
        outcome = OUTCOMES[verdict.kind]
        ledger = self.services.trash_ledger(state.workspace)
        if not outcome.consumes:
            prior = ledger.consumed_outcome(state.confirmation_id, call.principal)
            if prior is not None:
                raise already_used(call.name, prior)
        if verdict.kind is VerdictKind.INVALID:
            again = "The confirmation is still usable; answer the form again." if retriable else "Call again."
            return tool_error("invalid_answer", f"nothing was deleted: {verdict.problem}. {again}")
        workspace = call.arguments["workspaceUri"]
        deleted: list[TrashedNote] = []
        if outcome.consumes:
            claim = Claim(
                confirmation_id=state.confirmation_id,
                principal=call.principal,
                tool=call.name,
                outcome=outcome.label,
                expires_at=state.issued_at
                + self.services.config.confirmation_ttl_seconds
                + EXPIRY_SKEW_SECONDS,
            )
            with ledger.critical_section() as txn:
                if not txn.claim_confirmation(claim):
                    raise already_used(call.name, txn.prior_outcome(state.confirmation_id, call.principal))
                pause_point("after_claim")
                if outcome.mutates:
                    scope = self.services.grants.reauthorize_workspace(
                        call.principal, call.arguments["workspaceUri"]
                    )
                    scope.verify_identity(state.workspace_identity)
                    for candidate in verdict.chosen:
                        try:
                            trashed = self.services.store.move_to_trash(
                                txn,
                                scope,
                                candidate,
                                principal=call.principal,
                                confirmation_id=state.confirmation_id,
                            )
                        except (IdentityMismatch, NoteMissing) as exc:
                            raise ToolFailure(
                                "note_changed",
                                f"nothing was deleted: {candidate.id} is no longer the file you confirmed "
                                f"({exc}). Call notes_delete again to see the current notes and confirm anew.",
                            ) from None
                        deleted.append(trashed)
                txn.record_receipt(state.confirmation_id, delete_receipt(outcome.label, workspace, deleted))
                if deleted:
                    pause_point("after_mutation")  # everything written; only COMMIT is left
            pause_point("after_commit")
        structured = delete_result(outcome.label, workspace, deleted)
        if len(deleted) > 1:
            text = f"Moved {len(deleted)} notes to the trash of {workspace}: " + ", ".join(
                d.note_id for d in deleted
            )
        elif deleted:
            text = f"Moved “{deleted[0].title}” ({deleted[0].note_id}) to the trash of {workspace}."
        elif verdict.kind is VerdictKind.CANCELLED and not retriable:
            text = "Cancelled: nothing was deleted."
        elif verdict.kind is VerdictKind.CANCELLED:
            until = time.strftime(
                "%Y-%m-%dT%H:%M:%SZ",
                time.gmtime(state.issued_at + self.services.config.confirmation_ttl_seconds),
            )
            structured["retriableUntil"] = until
            text = (
                f"Cancelled: nothing was deleted. The same confirmation can be answered again until {until}."
            )
        elif verdict.kind is VerdictKind.DECLINED:
            text = "Declined: nothing was deleted."
        else:
            text = "Not confirmed: nothing was deleted."
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=visible(text))], structured_content=structured
        )


def workspace_in_state(request_state: str) -> str:
    return ConfirmationState.decode(request_state, phase=PHASE).workspace


def new_state(scope: WorkspaceScope, candidates: Sequence[Candidate]) -> ConfirmationState:
    return ConfirmationState(
        phase=PHASE,
        principal=scope.principal,
        workspace=str(scope.workspace),
        workspace_identity=scope.identity,
        candidates=tuple(candidates),
        confirmation_id=new_confirmation_id(),
        issued_at=time.time(),
    )


def delete_request(
    scope: WorkspaceScope, query: str | None, candidates: Sequence[Candidate]
) -> dict[str, Any]:
    """The pick-one form for a title query, the veto-any form for a known set of ids."""
    if query is not None:
        return delete_form(str(scope.uri), query, candidates)
    return delete_set_form(str(scope.uri), candidates)


def delete_result(outcome: str, workspace: str, deleted: Sequence[TrashedNote]) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "workspaceUri": workspace,
        "deleted": [{"id": d.note_id, "title": d.title, "trashId": d.trash_id} for d in deleted],
    }


def delete_receipt(outcome: str, workspace: str, deleted: Sequence[TrashedNote]) -> dict[str, Any]:
    done = None
    if len(deleted) == 1:
        done = f"“{visible(deleted[0].title)}” ({visible(deleted[0].note_id)}) was moved to the trash of {workspace}"
    elif deleted:
        done = f"{len(deleted)} notes were moved to the trash of {workspace}: " + ", ".join(
            visible(d.note_id) for d in deleted
        )
    return receipt(delete_result(outcome, workspace, deleted), done, otherwise="nothing was deleted")


def require_form_elicitation(
    capabilities: types.ClientCapabilities | None,
    why: str = "notes_delete needs form elicitation to let the user pick and confirm the note",
) -> None:
    """Form mode only when this request declares it: `elicitation: {}` or `{form: {}}`."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is not None and (elicitation.form is not None or elicitation.url is None):
        return
    raise MissingCapability(
        f"{why}; declare elicitation.form in this request's clientCapabilities", _FORM_CAPABILITY
    )


def find_candidates(
    services: Services, scope: WorkspaceScope, query: str | None, note_ids: Sequence[str] | None = None
) -> list[Candidate]:
    if query is None:
        assert note_ids is not None
        return [
            Candidate(n.id, n.title, n.identity.as_file())
            for n in services.store.notes_by_id(scope, note_ids)
        ]
    words = match_words(query)
    found = []
    for note in services.store.find_titled(scope, words):
        matched = matched_name(note.id, note.title, note.aliases, words)
        found.append(
            Candidate(
                note.id, note.title, note.identity.as_file(), "" if matched == "title" else matched or ""
            )
        )
    if not found:
        raise ToolFailure(
            "no_match",
            f"no note in {scope.uri} has a title, file name or alias containing every word of “{query}”",
        )
    if len(found) > MAX_CANDIDATES:
        raise ToolFailure(
            "too_many_matches",
            f"{len(found)} notes in {scope.uri} match “{query}”; at most {MAX_CANDIDATES} can be offered. "
            "Use more words of the title, or a folder inside the workspace as workspaceUri.",
        )
    return found


def notes_delete(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_delete",
            title="Delete a note",
            description=(
                "Move one note of a workspace to its trash. The user picks the note among those whose "
                "title matches and confirms it in a form (elicitation); nothing is deleted without that. "
                "Deleted notes stay in the workspace trash and can be restored. Give noteIds instead of "
                "title to delete a known set of notes; the user confirms them (and may untick any)."
            ),
            input_schema=INPUT_SCHEMA,
            output_schema=OUTPUT_SCHEMA,
            annotations=types.ToolAnnotations(
                title="Delete a note",
                read_only_hint=False,
                destructive_hint=True,
                idempotent_hint=False,
                open_world_hint=False,
            ),
        ),
        handler=DeleteTool(services),
    )
