"""The pick-and-confirm form, and the judge of its answers.

Missing content is never consent. The judge turns whatever came back under the input
key into exactly one `Verdict`, and `OUTCOMES` says, as a table, what each verdict does:
whether it consumes the confirmation, whether it mutates, and how it reads to the user.

| answer                                       | verdict        | consumes | mutates |
|----------------------------------------------|----------------|----------|---------|
| no answer under the key                      | MISSING        | no       | no  (ask again) |
| accept, confirm=true, note_id in the set     | CONFIRMED      | yes      | yes |
| accept, confirm=false                        | NOT_CONFIRMED  | yes      | no  |
| accept, content missing/ill-typed/off-set    | INVALID        | no       | no  |
| decline                                      | DECLINED       | yes      | no  |
| cancel                                       | CANCELLED      | no       | no  (retriable until expiry) |
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from notewarden.confirm.state import Candidate

__all__ = [
    "DELETE_INPUT_KEY",
    "OUTCOMES",
    "Outcome",
    "Verdict",
    "VerdictKind",
    "delete_form",
    "judge_choice",
]

DELETE_INPUT_KEY = "delete_choice"
_CHOICE_FIELD = "note_id"
_CONFIRM_FIELD = "confirm"


class VerdictKind(enum.Enum):
    MISSING = "missing"
    CONFIRMED = "confirmed"
    NOT_CONFIRMED = "not_confirmed"
    INVALID = "invalid"
    DECLINED = "declined"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: VerdictKind
    candidate: Candidate | None = None
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    consumes: bool
    mutates: bool
    is_error: bool
    label: str


OUTCOMES: Mapping[VerdictKind, Outcome] = {
    VerdictKind.CONFIRMED: Outcome(consumes=True, mutates=True, is_error=False, label="deleted"),
    VerdictKind.NOT_CONFIRMED: Outcome(consumes=True, mutates=False, is_error=False, label="not_confirmed"),
    VerdictKind.DECLINED: Outcome(consumes=True, mutates=False, is_error=False, label="declined"),
    VerdictKind.CANCELLED: Outcome(consumes=False, mutates=False, is_error=False, label="cancelled"),
    VerdictKind.INVALID: Outcome(consumes=False, mutates=False, is_error=True, label="invalid_answer"),
    VerdictKind.MISSING: Outcome(consumes=False, mutates=False, is_error=False, label="asked_again"),
}


def candidate_label(candidate: Candidate) -> str:
    modified = datetime.fromtimestamp(candidate.identity.mtime_ns / 1e9, tz=UTC).strftime(
        "%Y-%m-%d %H:%M UTC"
    )
    return f"{candidate.title} — {candidate.id} — modified {modified}"


def delete_form(workspace: str, query: str, candidates: Sequence[Candidate]) -> dict[str, Any]:
    """The `elicitation/create` input request asking the user to pick one note and confirm."""
    count = len(candidates)
    matches = "1 note matches" if count == 1 else f"{count} notes match"
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": (
                f"Delete a note from workspace {workspace}: {matches} “{query}”. "
                "Pick the one to delete and confirm. It will be moved to the workspace trash."
            ),
            "requestedSchema": {
                "type": "object",
                "properties": {
                    _CHOICE_FIELD: {
                        "type": "string",
                        "title": "Note to delete",
                        "description": "Title, path and last modification of each matching note.",
                        "oneOf": [{"const": c.id, "title": candidate_label(c)} for c in candidates],
                    },
                    _CONFIRM_FIELD: {
                        "type": "boolean",
                        "title": "Yes, move the selected note to the trash",
                        "default": False,
                    },
                },
                "required": [_CHOICE_FIELD, _CONFIRM_FIELD],
            },
        },
    }


def judge_choice(answer: Any, candidates: Sequence[Candidate]) -> Verdict:
    """Classify the answer found under the form's input key (`None` when absent)."""
    if answer is None:
        return Verdict(VerdictKind.MISSING)
    action = _field(answer, "action")
    if action == "decline":
        return Verdict(VerdictKind.DECLINED)
    if action == "cancel":
        return Verdict(VerdictKind.CANCELLED)
    if action != "accept":
        return Verdict(
            VerdictKind.INVALID, problem=f"action must be accept, decline or cancel, got {action!r}"
        )
    content = _field(answer, "content")
    if not isinstance(content, Mapping):
        return Verdict(
            VerdictKind.INVALID,
            problem="the form was accepted without content; it needs note_id (one of the offered notes) "
            "and confirm (true or false)",
        )
    extra = sorted(set(content) - {_CHOICE_FIELD, _CONFIRM_FIELD})
    if extra:
        return Verdict(
            VerdictKind.INVALID,
            problem=f"unexpected field(s) {', '.join(extra)}; the form has note_id, confirm",
        )
    confirm = content.get(_CONFIRM_FIELD)
    if not isinstance(confirm, bool):
        return Verdict(VerdictKind.INVALID, problem=f"confirm must be true or false, got {confirm!r}")
    note_id = content.get(_CHOICE_FIELD)
    chosen = next((c for c in candidates if c.id == note_id), None)
    if not confirm:
        return Verdict(VerdictKind.NOT_CONFIRMED, candidate=chosen)
    if not isinstance(note_id, str):
        return Verdict(
            VerdictKind.INVALID, problem=f"note_id must be one of the offered note ids, got {note_id!r}"
        )
    if chosen is None:
        return Verdict(VerdictKind.INVALID, problem=f"note_id {note_id!r} was not among the offered notes")
    return Verdict(VerdictKind.CONFIRMED, candidate=chosen)


def _field(answer: Any, name: str) -> Any:
    if isinstance(answer, Mapping):
        return answer.get(name)
    return getattr(answer, name, None)
