"""`notes_delete`: move the one note the user picked and confirmed to the workspace trash.

The handler reads as the path of one delete:

    1 authorize   the principal may use workspaceUri          (scope.grants)
    2 contain     strict URI parse -> open directory handle     (scope.uri, scope.fsroot)
    3 find        candidates by title, each with its identity   (notes store)
    4 ask         input_required: pick + confirm, sealed state  (confirm.forms, SDK boundary)
    5 verify      authentic, unexpired, same principal/arguments (SDK boundary) + same phase
    6 judge       accept / decline / cancel against the form     (confirm.forms.OUTCOMES)
    7 commit      one critical section: claim, re-authorize, re-contain, re-verify, trash
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.confirm.forms import (
    DELETE_INPUT_KEY,
    OUTCOMES,
    Verdict,
    VerdictKind,
    delete_form,
    judge_choice,
)
from notewarden.confirm.state import Candidate, ConfirmationState, InvalidState, new_confirmation_id
from notewarden.faults import pause_point
from notewarden.ledger import EXPIRY_SKEW_SECONDS, Claim
from notewarden.notes.model import match_words, title_matches
from notewarden.scope.fsroot import IdentityMismatch, NoteMissing
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
            "description": "Words of the note's title; a note matches when its title contains every word "
            "(case-insensitive).",
        },
    },
    "required": ["workspaceUri", "title"],
    "additionalProperties": False,
}

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
        uri, query = call.arguments["workspaceUri"], call.arguments["title"]
        scope = self.services.grants.authorize_workspace(call.principal, uri)  # 1 authorize, 2 contain
        if call.request_state is None:
            candidates = await anyio.to_thread.run_sync(
                find_candidates, self.services, scope, query
            )  # 3 find
            return self.ask(scope, query, candidates)  # 4 ask
        state = self.verify(call, scope)  # 5 verify
        verdict = judge_choice(call.input_responses.get(DELETE_INPUT_KEY), state.candidates)  # 6 judge
        if verdict.kind is VerdictKind.MISSING:
            return self.ask(scope, query, state.candidates)
        return await anyio.to_thread.run_sync(self.commit, call, state, verdict)  # 7 commit

    def ask(
        self, scope: WorkspaceScope, query: str, candidates: Sequence[Candidate]
    ) -> types.InputRequiredResult:
        state = ConfirmationState(
            phase=PHASE,
            principal=scope.principal,
            workspace=str(scope.workspace),
            workspace_identity=scope.identity,
            candidates=tuple(candidates),
            confirmation_id=new_confirmation_id(),
            issued_at=time.time(),
        )
        return types.InputRequiredResult(
            input_requests={
                DELETE_INPUT_KEY: types.ElicitRequest.model_validate(
                    delete_form(str(scope.uri), query, candidates)
                )
            },
            request_state=state.encode(),
        )

    def verify(self, call: ToolCall, scope: WorkspaceScope) -> ConfirmationState:
        state = ConfirmationState.decode(call.request_state, phase=PHASE)
        if state.principal != call.principal or state.workspace != str(scope.workspace):
            raise InvalidState("state was minted for another principal or workspace")
        return state

    def commit(self, call: ToolCall, state: ConfirmationState, verdict: Verdict) -> types.CallToolResult:
        outcome = OUTCOMES[verdict.kind]
        if not outcome.consumes:
            prior = self.services.ledger.consumed_outcome(state.confirmation_id, call.principal)
            if prior is not None:
                raise already_used(prior)
        if verdict.kind is VerdictKind.INVALID:
            return tool_error(
                "invalid_answer",
                f"nothing was deleted: {verdict.problem}. The confirmation is still usable; answer the form again.",
            )
        deleted = []
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
            with self.services.ledger.critical_section() as txn:
                if not txn.claim_confirmation(claim):
                    raise already_used(txn.prior_outcome(state.confirmation_id, call.principal))
                pause_point("after_claim")
                if outcome.mutates:
                    assert verdict.candidate is not None
                    scope = self.services.grants.authorize_workspace(
                        call.principal, call.arguments["workspaceUri"]
                    )
                    scope.verify_identity(state.workspace_identity)
                    try:
                        trashed = self.services.store.move_to_trash(
                            txn,
                            scope,
                            verdict.candidate,
                            principal=call.principal,
                            confirmation_id=state.confirmation_id,
                        )
                    except (IdentityMismatch, NoteMissing) as exc:
                        raise ToolFailure(
                            "note_changed",
                            f"nothing was deleted: {verdict.candidate.id} is no longer the file you confirmed "
                            f"({exc}). Call notes_delete again to see the current notes and confirm anew.",
                        ) from None
                    deleted.append(trashed)
                    pause_point("after_mutation")
            pause_point("after_commit")
        workspace = call.arguments["workspaceUri"]
        structured: dict[str, Any] = {
            "outcome": outcome.label,
            "workspaceUri": workspace,
            "deleted": [{"id": d.note_id, "title": d.title, "trashId": d.trash_id} for d in deleted],
        }
        if deleted:
            text = f"Moved “{deleted[0].title}” ({deleted[0].note_id}) to the trash of {workspace}."
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
            content=[types.TextContent(type="text", text=text)], structured_content=structured
        )


def already_used(prior: str | None) -> ToolFailure:
    return ToolFailure(
        "confirmation_already_used",
        f"nothing was deleted: this confirmation was already used ({prior or 'consumed'}). "
        "Call notes_delete again to start a new confirmation.",
    )


def require_form_elicitation(capabilities: types.ClientCapabilities | None) -> None:
    """Form mode only when this request declares it: `elicitation: {}` or `{form: {}}`."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is not None and (elicitation.form is not None or elicitation.url is None):
        return
    raise MissingCapability(
        "notes_delete needs form elicitation to let the user pick and confirm the note; "
        "declare elicitation.form in this request's clientCapabilities",
        _FORM_CAPABILITY,
    )


def find_candidates(services: Services, scope: WorkspaceScope, query: str) -> list[Candidate]:
    words = match_words(query)
    found = [
        Candidate(id=n.id, title=n.title, identity=n.identity)
        for n in services.store.list_notes(scope)
        if title_matches(n.title, words)
    ]
    if not found:
        raise ToolFailure(
            "no_match", f"no note in {scope.uri} has a title containing every word of “{query}”"
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
                "Deleted notes stay in the workspace trash and can be restored."
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
