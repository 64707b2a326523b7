"""The confirmation forms, and the judge of their answers.

Missing content is never consent. The judge turns whatever came back under the input
key into exactly one `Verdict`, and `OUTCOMES` says, as a table, what each verdict does:
whether it consumes the confirmation, whether it mutates, and how it reads to the user.

| answer                                       | verdict        | consumes | mutates |
|----------------------------------------------|----------------|----------|---------|
| no answer under the key                      | MISSING        | no       | no  (ask again) |
| accept, confirm=true, the pick in the set    | CONFIRMED      | yes      | yes |
| accept, confirm=false                        | NOT_CONFIRMED  | yes      | no  |
| accept, content missing/ill-typed/off-set    | INVALID        | no       | no  |
| decline                                      | DECLINED       | yes      | no  |
| cancel                                       | CANCELLED      | no       | no  (retriable until expiry) |

Three shapes of form share this table (`Answer`): pick one of the candidates and confirm
(`pick_one_form`, judged by `judge_choice`), keep or untick each of a set the caller named, all
ticked at first (`pick_some_form`, `judge_selection`), and yes or no to a described effect
(`yes_no_form`, `judge_confirmation`). For the two with a selection, "the set in the set" rule
holds: a selection outside the offered candidates is INVALID, never partly applied. notewarden's
own tools word their forms with these shapes beside their code (`tools.notes_delete`,
`tools.notes_trash`, `tools.notes_history`); none of that wording is in this library.

Every text a form shows (its message, each choice's title, each line of a listing) goes through
`display.visible`, so a name with a bidi control or a zero-width character reads as what it is;
the `const` of a choice stays the exact candidate id the answer must name.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from notewarden.confirm.state import Candidate
from notewarden.display import visible, visible_line

__all__ = [
    "CHOICE_FIELD",
    "CONFIRM_FIELD",
    "OUTCOMES",
    "SET_FIELD",
    "Answer",
    "Outcome",
    "Verdict",
    "VerdictKind",
    "judge_choice",
    "judge_confirmation",
    "judge_selection",
    "pick_one_form",
    "pick_some_form",
    "yes_no_form",
]

CHOICE_FIELD = "note_id"
"""The pick-one field (the name is kept from notewarden's first form; any candidate id goes in it)."""
SET_FIELD = "note_ids"
CONFIRM_FIELD = "confirm"


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
    chosen: tuple[Candidate, ...] = ()
    """Every candidate a CONFIRMED verdict applies to: the one picked, the ticked set, or for a
    yes/no form every offered candidate (none when the offer had none, e.g. a `Selection`)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    consumes: bool
    mutates: bool
    is_error: bool
    label: str


OUTCOMES: Mapping[VerdictKind, Outcome] = {
    VerdictKind.CONFIRMED: Outcome(consumes=True, mutates=True, is_error=False, label="confirmed"),
    VerdictKind.NOT_CONFIRMED: Outcome(consumes=True, mutates=False, is_error=False, label="not_confirmed"),
    VerdictKind.DECLINED: Outcome(consumes=True, mutates=False, is_error=False, label="declined"),
    VerdictKind.CANCELLED: Outcome(consumes=False, mutates=False, is_error=False, label="cancelled"),
    VerdictKind.INVALID: Outcome(consumes=False, mutates=False, is_error=True, label="invalid_answer"),
    VerdictKind.MISSING: Outcome(consumes=False, mutates=False, is_error=False, label="asked_again"),
}


class Answer(enum.Enum):
    """The shape of a confirmation form, and so which judge reads its answers."""

    PICK_ONE = "pick_one"
    PICK_SOME = "pick_some"
    YES_NO = "yes_no"

    def judge(
        self, answer: Any, candidates: Sequence[Candidate], *, field: str | None = None, noun: str = "note"
    ) -> Verdict:
        """`field`: the form's pick field (default `CHOICE_FIELD` or `SET_FIELD`); `noun` names a
        candidate in the problems an invalid answer is told."""
        if self is Answer.PICK_ONE:
            return judge_choice(answer, candidates, field=field or CHOICE_FIELD, noun=noun)
        if self is Answer.PICK_SOME:
            return judge_selection(answer, candidates, field=field or SET_FIELD, noun=noun)
        return judge_confirmation(answer, candidates)


def candidate_label(candidate: Candidate) -> str:
    detail = f" — {candidate.detail}" if candidate.detail else ""
    return visible_line(f"{candidate.title} — {candidate.id}{detail}")


def pick_one_form(
    message: str,
    candidates: Sequence[Candidate],
    *,
    pick_title: str,
    confirm_title: str,
    description: str = "",
    field: str = CHOICE_FIELD,
) -> dict[str, Any]:
    """An `elicitation/create` input request: pick one of `candidates` (under `field`) and confirm."""
    choice: dict[str, Any] = {"type": "string", "title": pick_title}
    if description:
        choice["description"] = description
    choice["oneOf"] = [{"const": c.id, "title": candidate_label(c)} for c in candidates]
    return _form(
        message,
        {field: choice, CONFIRM_FIELD: {"type": "boolean", "title": confirm_title, "default": False}},
    )


def pick_some_form(
    message: str,
    candidates: Sequence[Candidate],
    *,
    pick_title: str,
    confirm_title: str,
    description: str = "",
    field: str = SET_FIELD,
) -> dict[str, Any]:
    """An input request for a set the caller named: every candidate ticked, the user unticks any."""
    chosen: dict[str, Any] = {"type": "array", "title": pick_title}
    if description:
        chosen["description"] = description
    chosen |= {
        "items": {"anyOf": [{"const": c.id, "title": candidate_label(c)} for c in candidates]},
        "minItems": 1,
        "default": [c.id for c in candidates],
    }
    return _form(
        message,
        {field: chosen, CONFIRM_FIELD: {"type": "boolean", "title": confirm_title, "default": False}},
    )


def yes_no_form(
    question: str,
    listing: Sequence[str | Candidate] = (),
    more: int = 0,
    confirm_title: str = "Yes",
) -> dict[str, Any]:
    """An input request confirming one described effect: the question, what it affects (`listing`:
    lines, or the offered `Candidate`s, each shown as "title — id — detail"; and how many `more`
    were left out), then one boolean `confirm` titled `confirm_title`. A confirmed answer applies
    to every candidate of the `Offer` (`Confirmed.chosen`), so list them all."""
    shown = (candidate_label(line) if isinstance(line, Candidate) else line for line in listing)
    lines = "\n".join(f"• {visible_line(line)}" for line in shown)
    if more:
        lines += f"\n… and {more} more"
    text = f"{question}\n{lines}" if lines else question
    return _form(text, {CONFIRM_FIELD: {"type": "boolean", "title": confirm_title, "default": False}})


def _form(message: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": visible(message),
            "requestedSchema": {"type": "object", "properties": properties, "required": list(properties)},
        },
    }


def judge_choice(
    answer: Any, candidates: Sequence[Candidate], *, field: str = CHOICE_FIELD, noun: str = "note"
) -> Verdict:
    """Classify the answer found under the form's input key (`None` when absent)."""
    judged = _content(answer, (field, CONFIRM_FIELD), f"{field} (one of the offered {noun}s)")
    if isinstance(judged, Verdict):
        return judged
    content, confirm = judged
    picked = content.get(field)
    chosen = next((c for c in candidates if c.id == picked), None)
    if not confirm:
        return Verdict(VerdictKind.NOT_CONFIRMED, candidate=chosen)
    if not isinstance(picked, str):
        return Verdict(
            VerdictKind.INVALID, problem=f"{field} must be one of the offered {noun} ids, got {picked!r}"
        )
    if chosen is None:
        return Verdict(VerdictKind.INVALID, problem=f"{field} {picked!r} was not among the offered {noun}s")
    return Verdict(VerdictKind.CONFIRMED, candidate=chosen, chosen=(chosen,))


def judge_selection(
    answer: Any, candidates: Sequence[Candidate], *, field: str = SET_FIELD, noun: str = "note"
) -> Verdict:
    """Classify an answer to a pick-some form: the ticked candidates must be a non-empty subset."""
    judged = _content(answer, (field, CONFIRM_FIELD), f"{field} (some of the offered {noun}s)")
    if isinstance(judged, Verdict):
        return judged
    content, confirm = judged
    if not confirm:
        return Verdict(VerdictKind.NOT_CONFIRMED)
    ids = content.get(field)
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        return Verdict(
            VerdictKind.INVALID,
            problem=f"{field} must be a non-empty list of offered {noun} ids, got {ids!r}",
        )
    offered = {c.id: c for c in candidates}
    unknown = [i for i in ids if i not in offered]
    if unknown:
        return Verdict(VerdictKind.INVALID, problem=f"{unknown[0]!r} was not among the offered {noun}s")
    if len(set(ids)) != len(ids):
        return Verdict(VerdictKind.INVALID, problem=f"{field} names a {noun} twice")
    return Verdict(VerdictKind.CONFIRMED, chosen=tuple(c for c in candidates if c.id in set(ids)))


def judge_confirmation(answer: Any, candidates: Sequence[Candidate] = ()) -> Verdict:
    """Classify an answer to a yes/no form (`yes_no_form`). A yes applies to
    every offered candidate (`chosen`: the sealed set the form listed, nothing the answer names)."""
    judged = _content(answer, (CONFIRM_FIELD,), "")
    if isinstance(judged, Verdict):
        return judged
    if not judged[1]:
        return Verdict(VerdictKind.NOT_CONFIRMED)
    return Verdict(VerdictKind.CONFIRMED, chosen=tuple(candidates))


def _content(answer: Any, fields: tuple[str, ...], needs: str) -> Verdict | tuple[Mapping[str, Any], bool]:
    """The verdict for anything but an accepted form with only `fields` and a boolean `confirm`;
    otherwise the content and the confirm value."""
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
        wanted = f"{needs} and confirm (true or false)" if needs else "confirm (true or false)"
        return Verdict(
            VerdictKind.INVALID, problem=f"the form was accepted without content; it needs {wanted}"
        )
    extra = sorted(set(content) - set(fields))
    if extra:
        return Verdict(
            VerdictKind.INVALID,
            problem=f"unexpected field(s) {', '.join(extra)}; the form has {', '.join(fields)}",
        )
    confirm = content.get(CONFIRM_FIELD)
    if not isinstance(confirm, bool):
        return Verdict(VerdictKind.INVALID, problem=f"confirm must be true or false, got {confirm!r}")
    return content, confirm


def _field(answer: Any, name: str) -> Any:
    if isinstance(answer, Mapping):
        return answer.get(name)
    return getattr(answer, name, None)
