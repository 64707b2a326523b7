"""The form, the judge of answers, the outcome table and the state payload."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from notewarden.confirm.forms import OUTCOMES, VerdictKind, judge_choice, judge_confirmation, judge_selection
from notewarden.confirm.state import Candidate, ConfirmationState, InvalidState, Selection
from notewarden.tools.notes_delete import delete_form, delete_set_form
from notewarden.tools.notes_trash import trash_empty_form
from tests.schema import assert_valid

CANDIDATES = (
    Candidate("reports/tps-2019.md", "TPS report 2019", "1:10:1500000000000000000:12", "modified 2017-07-14"),
    Candidate("reports/tps.md", "TPS report", "1:11:1700000000000000000:40"),
)


def accept(**content: object) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


JUDGE_TABLE = [
    (None, VerdictKind.MISSING),
    (types.ElicitResult(action="decline"), VerdictKind.DECLINED),
    (types.ElicitResult(action="cancel"), VerdictKind.CANCELLED),
    (
        types.ElicitResult(action="decline", content={"note_id": "reports/tps.md", "confirm": True}),
        VerdictKind.DECLINED,
    ),
    (accept(note_id="reports/tps.md", confirm=True), VerdictKind.CONFIRMED),
    (accept(note_id="reports/tps.md", confirm=False), VerdictKind.NOT_CONFIRMED),
    (accept(confirm=False), VerdictKind.NOT_CONFIRMED),
    (types.ElicitResult(action="accept"), VerdictKind.INVALID),
    (accept(), VerdictKind.INVALID),
    (accept(note_id="reports/tps.md"), VerdictKind.INVALID),
    (accept(note_id="reports/tps.md", confirm="true"), VerdictKind.INVALID),
    (accept(note_id="reports/tps.md", confirm=1), VerdictKind.INVALID),
    (accept(note_id="reports/other.md", confirm=True), VerdictKind.INVALID),
    (accept(note_id=["reports/tps.md"], confirm=True), VerdictKind.INVALID),
    (accept(note_id=None, confirm=True), VerdictKind.INVALID),
    (accept(note_id="reports/tps.md", confirm=True, extra="x"), VerdictKind.INVALID),
    ({"action": "accept", "content": {"note_id": "reports/tps.md", "confirm": True}}, VerdictKind.CONFIRMED),
    ({"action": "maybe"}, VerdictKind.INVALID),
]


@pytest.mark.parametrize(("answer", "kind"), JUDGE_TABLE)
def test_judge_turns_every_answer_into_one_verdict(answer: object, kind: VerdictKind) -> None:
    verdict = judge_choice(answer, CANDIDATES)
    assert verdict.kind is kind
    if kind is VerdictKind.CONFIRMED:
        assert verdict.candidate == CANDIDATES[1]
    if kind is VerdictKind.INVALID:
        assert verdict.problem


def test_missing_content_is_never_consent() -> None:
    for answer, kind in JUDGE_TABLE:
        if kind is VerdictKind.CONFIRMED:
            content = answer["content"] if isinstance(answer, dict) else answer.content
            assert content["confirm"] is True and content["note_id"] in {c.id for c in CANDIDATES}


def test_outcome_table() -> None:
    consumes = {k for k, o in OUTCOMES.items() if o.consumes}
    mutates = {k for k, o in OUTCOMES.items() if o.mutates}
    assert consumes == {VerdictKind.CONFIRMED, VerdictKind.NOT_CONFIRMED, VerdictKind.DECLINED}
    assert mutates == {VerdictKind.CONFIRMED}
    assert set(OUTCOMES) == set(VerdictKind)


def test_form_is_a_valid_flat_elicitation_with_required_choice_and_confirm() -> None:
    request = delete_form("file:///srv/notes", "TPS report", CANDIDATES)
    assert_valid(request, "ElicitRequest")
    schema = request["params"]["requestedSchema"]
    assert schema["required"] == ["note_id", "confirm"]
    assert [o["const"] for o in schema["properties"]["note_id"]["oneOf"]] == [c.id for c in CANDIDATES]
    assert (
        schema["properties"]["note_id"]["oneOf"][0]["title"]
        == "TPS report 2019 — reports/tps-2019.md — modified 2017-07-14"
    )
    assert schema["properties"]["note_id"]["oneOf"][1]["title"] == "TPS report — reports/tps.md"
    assert schema["properties"]["confirm"] == {
        "type": "boolean",
        "title": "Yes, move the selected note to the trash",
        "default": False,
    }
    assert (
        "file:///srv/notes" in request["params"]["message"]
        and "2 notes match" in request["params"]["message"]
    )


def make_state() -> ConfirmationState:
    return ConfirmationState(
        phase="notes_delete/confirm",
        principal="alice",
        arguments="digest",
        candidates=CANDIDATES,
        confirmation_id="cid-123",
        issued_at=1_700_000_000.5,
        expires_at=1_700_000_600.5,
        bound={"workspace": "file:///srv/notes"},
        data={"workspace_identity": "1:2"},
    )


def test_state_round_trips_and_binds_phase() -> None:
    state = make_state()
    assert ConfirmationState.decode(state.encode(), phase="notes_delete/confirm") == state
    with pytest.raises(InvalidState, match="another step"):
        ConfirmationState.decode(state.encode(), phase="notes_trash_empty/confirm")


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("cid"),
        lambda d: d.pop("exp"),
        lambda d: d.update(v=1),
        lambda d: d.update(bound=[1]),
        lambda d: d.update(data={"workspace_identity": 1}),
        lambda d: d.update(cand=[["a", "t", "f"]]),
        lambda d: d.update(cand=[["a", "t", 1, ""]]),
        lambda d: d.update(sub=None),
        lambda d: d.update(exp=True),
    ],
)
def test_state_decode_is_strict(mutate) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads(make_state().encode())
    mutate(raw)
    with pytest.raises(InvalidState):
        ConfirmationState.decode(json.dumps(raw), phase="notes_delete/confirm")


# --- the set form (notes_delete noteIds) and the yes/no form (notes_trash_empty) ---------------

SET_TABLE = [
    (None, VerdictKind.MISSING, ()),
    (types.ElicitResult(action="decline"), VerdictKind.DECLINED, ()),
    (types.ElicitResult(action="cancel"), VerdictKind.CANCELLED, ()),
    (accept(note_ids=["reports/tps.md"], confirm=True), VerdictKind.CONFIRMED, ("reports/tps.md",)),
    (
        accept(note_ids=["reports/tps.md", "reports/tps-2019.md"], confirm=True),
        VerdictKind.CONFIRMED,
        ("reports/tps-2019.md", "reports/tps.md"),
    ),
    (accept(note_ids=["reports/tps.md"], confirm=False), VerdictKind.NOT_CONFIRMED, ()),
    (accept(note_ids=[], confirm=True), VerdictKind.INVALID, ()),
    (accept(note_ids=["reports/tps.md", "reports/other.md"], confirm=True), VerdictKind.INVALID, ()),
    (accept(note_ids=["reports/tps.md", "reports/tps.md"], confirm=True), VerdictKind.INVALID, ()),
    (accept(note_ids="reports/tps.md", confirm=True), VerdictKind.INVALID, ()),
    (accept(note_ids=["reports/tps.md"]), VerdictKind.INVALID, ()),
    (accept(note_id="reports/tps.md", confirm=True), VerdictKind.INVALID, ()),
]


@pytest.mark.parametrize(("answer", "kind", "chosen"), SET_TABLE)
def test_a_selection_applies_wholly_or_not_at_all(answer: object, kind: VerdictKind, chosen: tuple) -> None:
    verdict = judge_selection(answer, CANDIDATES)
    assert verdict.kind is kind
    assert tuple(c.id for c in verdict.chosen) == chosen
    if kind is VerdictKind.INVALID:
        assert verdict.problem


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (None, VerdictKind.MISSING),
        (accept(confirm=True), VerdictKind.CONFIRMED),
        (accept(confirm=False), VerdictKind.NOT_CONFIRMED),
        (accept(), VerdictKind.INVALID),
        (accept(confirm=True, note_id="x"), VerdictKind.INVALID),
        (types.ElicitResult(action="accept"), VerdictKind.INVALID),
        (types.ElicitResult(action="decline"), VerdictKind.DECLINED),
    ],
)
def test_yes_no_judge(answer: object, kind: VerdictKind) -> None:
    assert judge_confirmation(answer).kind is kind


def test_set_and_trash_forms_are_valid_form_requests() -> None:
    form = delete_set_form("file:///srv/notes", CANDIDATES)
    assert_valid(form["params"], "ElicitRequestFormParams")
    field = form["params"]["requestedSchema"]["properties"]["note_ids"]
    assert field["default"] == [c.id for c in CANDIDATES]
    assert_valid(field, "TitledMultiSelectEnumSchema")
    empty = trash_empty_form("file:///srv/notes", 30, ["a", "b"], 28)
    assert_valid(empty["params"], "ElicitRequestFormParams")
    assert "30 notes" in empty["params"]["message"] and "28 more" in empty["params"]["message"]


def test_a_selection_survives_the_state_round_trip() -> None:
    state = ConfirmationState(
        phase="p",
        principal="alice",
        arguments="digest",
        candidates=(),
        confirmation_id="cid",
        issued_at=1.5,
        expires_at=601.5,
        selection=Selection(3, "ab" * 32, 1234.5),
    )
    assert ConfirmationState.decode(state.encode(), phase="p") == state
