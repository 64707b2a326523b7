"""`notes_delete`: move the one note the user picked and confirmed to the workspace trash.

The handler reads as the path of one delete:

    1 authorize   the principal may use workspaceUri          (scope.grants)
    2 contain     strict URI parse -> open directory handle     (scope.uri, scope.fsroot)
    3 find        candidates by title, each with its identity   (notes store)
    4 ask         input_required: pick + confirm, sealed state  (confirm.flow, confirm.forms, SDK)
    5 verify      authentic, unexpired, same principal/arguments (SDK boundary) + same phase,
                  principal, argument digest and workspace       (confirm.flow)
    6 judge       accept / decline / cancel against the form     (confirm.forms.OUTCOMES)
    7 commit      one transaction: claim (confirm.flow), then here re-authorize, re-contain,
                  re-verify each note's identity, trash

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

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from notewarden.confirm.flow import Confirmed, Done, Offer, retriable
from notewarden.confirm.forms import Answer, pick_one_form, pick_some_form
from notewarden.confirm.state import Candidate, ConfirmationState, InvalidState
from notewarden.display import visible_line
from notewarden.notes.model import Note, NoteIdentity, match_words, matched_name
from notewarden.notes.store import TrashedNote
from notewarden.scope.fs_errors import IdentityMismatch, NoteMissing
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.confirmed import confirm_in_workspace, reauthorize_sealed, sealed_workspace
from notewarden.tools.own_forms import linted
from notewarden.tools.registry import (
    ToolCall,
    ToolFailure,
    ToolResult,
    declare,
    require_form_elicitation,
)
from notewarden.tools.schemas import WORKSPACE_URI, args, returns
from notewarden.tools.workspace_hint import resolve_workspace

__all__ = [
    "DELETE_INPUT_KEY",
    "MAX_CANDIDATES",
    "NOTES_DELETE",
    "PHASE",
    "DeleteTool",
    "delete_form",
    "delete_set_form",
]

PHASE = "notes_delete/confirm"
DELETE_INPUT_KEY = "delete_choice"
MAX_CANDIDATES = 25


class DeleteTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        require_form_elicitation(
            call.capabilities, "notes_delete needs form elicitation to let the user pick and confirm the note"
        )
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
        scope = self.services.grants.authorize_workspace(call.caller, uri)  # 1 authorize, 2 contain
        self.services.trash_ledger(scope.workspace)  # a trash this server may not change: say so now
        note_ids = call.arguments.get("noteIds")
        workspace = str(call.arguments["workspaceUri"])

        def offer(prior: ConfirmationState | None) -> Offer:  # 3 find (once), 4 ask
            found = prior.candidates if prior else find_candidates(self.services, scope, query, note_ids)
            return Offer(
                delete_request(scope, query, found),
                candidates=found,
                data=sealed_workspace(scope),
            )

        def effect(confirmed: Confirmed) -> Done:  # 7 commit, inside the claim's transaction
            return self.trash(call, confirmed, workspace)

        def unchanged(outcome: str, until: str | None) -> Done:
            return not_deleted(outcome, workspace, until)

        live = call.live
        return await confirm_in_workspace(  # 5 verify, 6 judge, 7 commit: the confirmation path
            self.services,
            call,
            scope,
            answer=Answer.PICK_ONE if query is not None else Answer.PICK_SOME,
            done_label="deleted",
            input_key=DELETE_INPUT_KEY,
            nothing_done="nothing was deleted",
            phase=PHASE,
            noun="note",
            offer=offer,
            effect=effect,
            unchanged=unchanged,
            arguments={k: v for k, v in call.arguments.items() if k != "workspaceUri"},
            live=None if live is None else (lambda form: live.form(form["message"], form["requestedSchema"])),
        )

    def trash(self, call: ToolCall, confirmed: Confirmed, workspace: str) -> Done:
        """Re-authorize, re-contain, re-verify each chosen note, move it to the trash, all in the
        claim's transaction: every chosen note goes, or (raising) none."""
        scope = reauthorize_sealed(self.services.grants, call.caller, workspace, confirmed.state)
        chosen = [shown_note(candidate) for candidate in confirmed.chosen]
        change = call.change(
            "moved to the trash: " + ", ".join(note.id for note in chosen),
            confirmation_id=confirmed.state.confirmation_id,
        )
        try:
            deleted = self.services.store.move_to_trash(confirmed.txn, scope, chosen, change=change)
        except (IdentityMismatch, NoteMissing) as exc:
            raise ToolFailure(
                "note_changed",
                f"nothing was deleted: a note you confirmed is no longer the file you confirmed ({exc}). "
                "Call notes_delete again to see the current notes and confirm anew.",
            ) from None
        return deleted_result(workspace, deleted)


def workspace_in_state(request_state: str) -> str:
    workspace = ConfirmationState.decode(request_state, phase=PHASE).bound.get("workspace")
    if workspace is None:
        raise InvalidState("state names no workspace")
    return workspace


def shown_note(candidate: Candidate) -> Note:
    """The note as the user was shown it, for the store to check it is still that one."""
    return Note(candidate.id, candidate.title, NoteIdentity.from_fingerprint(candidate.fingerprint))


def as_candidate(note: Note, matched: str = "") -> Candidate:
    modified = datetime.fromtimestamp(note.modified, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    detail = f"modified {modified}" + (f" — matched {matched}" if matched else "")
    return Candidate(note.id, note.title, note.identity.fingerprint(), detail)


def delete_request(
    scope: WorkspaceScope, query: str | None, candidates: Sequence[Candidate]
) -> dict[str, Any]:
    """The pick-one form for a title query, the veto-any form for a known set of ids."""
    if query is not None:
        return delete_form(str(scope.uri), query, candidates)
    return delete_set_form(str(scope.uri), candidates)


def sample_candidates(count: int) -> list[Candidate]:
    """`count` candidates as a tool shows them, for the start-up check of the forms (`own_forms`)."""
    at = 1_700_000_000_000_000_000
    return [
        as_candidate(Note(f"folder/note-{i}.md", f"Note {i}", NoteIdentity((1, i), at, 10)))
        for i in range(count)
    ]


@linted(
    lambda build: {
        "notes_delete (1 candidate)": build("file:///srv/notes", "TPS", sample_candidates(1)),
        f"notes_delete ({MAX_CANDIDATES} candidates)": build(
            "file:///srv/notes", "n", sample_candidates(MAX_CANDIDATES)
        ),
    }
)
def delete_form(workspace: str, query: str, candidates: Sequence[Candidate]) -> dict[str, Any]:
    """notes_delete by title: pick the one note to delete and confirm."""
    count = len(candidates)
    matches = "1 note matches" if count == 1 else f"{count} notes match"
    return pick_one_form(
        f"Delete a note from workspace {workspace}: {matches} “{visible_line(query)}”. "
        "Pick the one to delete and confirm. It will be moved to the workspace trash.",
        candidates,
        pick_title="Note to delete",
        description="Title, path and last modification of each matching note.",
        confirm_title="Yes, move the selected note to the trash",
    )


@linted(
    lambda build: {
        "notes_delete noteIds (1)": build("file:///srv/notes", sample_candidates(1)),
        f"notes_delete noteIds ({MAX_CANDIDATES})": build(
            "file:///srv/notes", sample_candidates(MAX_CANDIDATES)
        ),
    }
)
def delete_set_form(workspace: str, candidates: Sequence[Candidate]) -> dict[str, Any]:
    """notes_delete by ids: every note ticked, the user unticks any to keep."""
    count = len(candidates)
    notes = "this note" if count == 1 else f"these {count} notes"
    return pick_some_form(
        f"Delete {notes} from workspace {workspace}? Untick any you want to keep, then confirm. "
        "They will be moved to the workspace trash.",
        candidates,
        pick_title="Notes to delete",
        description="Title, path and last modification of each note.",
        confirm_title="Yes, move the selected notes to the trash",
    )


def delete_result(outcome: str, workspace: str, deleted: Sequence[TrashedNote]) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "workspaceUri": workspace,
        "deleted": [{"id": d.note_id, "title": d.title, "trashId": d.trash_id} for d in deleted],
    }


def deleted_result(workspace: str, deleted: Sequence[TrashedNote]) -> Done:
    if len(deleted) == 1:
        note = f"“{visible_line(deleted[0].title)}” ({visible_line(deleted[0].note_id)})"
        text, summary = (
            f"Moved {note} to the trash of {workspace}.",
            f"{note} was moved to the trash of {workspace}",
        )
    else:
        ids = ", ".join(visible_line(d.note_id) for d in deleted)
        text = f"Moved {len(deleted)} notes to the trash of {workspace}: {ids}"
        summary = f"{len(deleted)} notes were moved to the trash of {workspace}: {ids}"
    return Done(delete_result("deleted", workspace, deleted), summary, text)


_NOT_DELETED: Mapping[str, str] = {
    "declined": "Declined: nothing was deleted.",
    "not_confirmed": "Not confirmed: nothing was deleted.",
    "cancelled": "Cancelled: nothing was deleted.",
}


def not_deleted(outcome: str, workspace: str, until: str | None) -> Done:
    text = _NOT_DELETED[outcome]
    if until is not None:
        text += f" The same confirmation can be answered again until {until}."
    return Done(retriable(delete_result(outcome, workspace, []), until), None, text)


def find_candidates(
    services: Services, scope: WorkspaceScope, query: str | None, note_ids: Sequence[str] | None = None
) -> list[Candidate]:
    if query is None:
        assert note_ids is not None
        return [as_candidate(n) for n in services.store.notes_by_id(scope, note_ids)]
    words = match_words(query)
    found = []
    for note in services.store.find_titled(scope, words):
        matched = matched_name(note.id, note.title, note.aliases, words)
        found.append(as_candidate(note, "" if matched == "title" else matched or ""))
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


NOTES_DELETE = declare(
    "notes_delete",
    "Delete a note",
    "Move one note of a workspace to its trash. The user picks the note among those whose "
    "title matches and confirms it in a form (elicitation); nothing is deleted without that. "
    "Deleted notes stay in the workspace trash and can be restored. Give noteIds instead of "
    "title to delete a known set of notes; the user confirms them (and may untick any).",
    args(
        {},
        {
            "workspaceUri": WORKSPACE_URI,
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
    ),
    returns(
        {
            "outcome": {"enum": ["deleted", "declined", "cancelled", "not_confirmed"]},
            "workspaceUri": {"type": "string"},
            "deleted": {
                "type": "array",
                "items": returns(
                    {"id": {"type": "string"}, "title": {"type": "string"}, "trashId": {"type": "string"}},
                    ["id", "title", "trashId"],
                ),
            },
            "retriableUntil": {
                "type": "string",
                "description": "For cancelled: when the confirmation expires.",
            },
        },
        ["outcome", "workspaceUri", "deleted"],
    ),
    Right.DELETE,
)
"""Exactly one of title and noteIds is checked by the handler, not by a top-level oneOf, which
several model APIs refuse in a tool's inputSchema; so is workspaceUri, which only a client that
declares `roots` may leave out (tools.workspace_hint)."""
