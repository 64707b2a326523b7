"""The one confirmation path: ask, verify, judge, claim exactly once with the effect, answer.

Every confirmed tool (notewarden's `notes_delete`, `notes_trash_empty`, `notes_history_purge`,
and any server author's) runs `ConfirmedAction.run`, and no tool repeats one of its steps:

    1 ask      round 1: the caller's `offer` finds what would be affected and builds the form;
               the state is minted (phase, principal, argument digest, the exact candidates or
               selection, the caller's bindings, a random confirmation id, expiry) and returned
               as the plaintext `requestState` of an `input_required` result, which the SDK's
               `RequestStateBoundary` seals on the way out
    2 verify   a retry: the SDK has opened and checked the seal; the plaintext must be this
               phase's, for this principal, these arguments and bindings, and unexpired
    3 judge    the answer under the action's input key, by the form's `Answer` shape, into one
               verdict of `forms.OUTCOMES`; no answer asks again with a fresh state
    4 commit   a terminal verdict (accept+confirm, accept+not-confirmed, decline) opens ONE
               ledger transaction: claim the confirmation id, run the caller's `effect` in that
               transaction (confirmed only), record the receipt, commit. Cancel and an invalid
               answer consume nothing: the same state may be answered again until it expires
    5 answer   the caller's result, or a tool error from `Refusal` with a stable code

Rule 1: the claim and the effect share the transaction. The effect must do every write through
the `Confirmed.txn` it is given (`txn.execute`, or a store that writes through it) and raise to
undo: a crash before COMMIT leaves neither the claim nor the effect, after COMMIT both.

Rule 2: a confirmation is used once. Any later use, by any process on the same ledger, is
answered `confirmation_already_used`, in one wording (`already_used`), with the first commit's
receipt (what it did, and its result under `error.previous`) to the principal that claimed it;
another principal learns nothing.

Rule 3: every error is mapped here. A state that fails verification is the SDK's own refusal
(JSON-RPC -32602 "Invalid or expired requestState", the reason in the log only:
`invalid_state_error`); `Refusal` and an unreachable ledger are tool errors (`isError`,
`structuredContent.error = {code, message}`: `Refusal.result`); anything else is a bug and
propagates. notewarden's own registry answers with these two as well (its `ToolFailure` is
`Refusal`), so a server has one wording of each.

Rule 4: blocking work (the caller's `offer` and `effect`, every ledger call) runs in a worker
thread (`anyio.to_thread`), never on the event loop. Fault points (`faults.fault_point`) mark
`after_claim`, `after_mutation` and `after_commit` for the crash tests; they are inert unless a
test installs a hook.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.request_state import RequestStateSecurity, authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from notewarden.confirm.forms import OUTCOMES, Answer, Verdict, VerdictKind
from notewarden.confirm.state import (
    Candidate,
    ConfirmationState,
    InvalidState,
    Selection,
    arguments_digest,
    new_confirmation_id,
)
from notewarden.display import visible, visible_json
from notewarden.faults import fault_point
from notewarden.ledger import EXPIRY_SKEW_SECONDS, Claim, Ledger, LedgerTxn, LedgerUnavailable, PriorUse

__all__ = [
    "Confirmed",
    "ConfirmedAction",
    "Done",
    "Offer",
    "Refusal",
    "already_used",
    "answer",
    "invalid_state_error",
    "iso8601",
    "receipt",
    "retriable",
    "sealing",
]

logger = logging.getLogger(__name__)

ToolResult = types.CallToolResult | types.InputRequiredResult


class Refusal(Exception):
    """Nothing was done, and the caller can act on why: a tool error with a stable `code`.
    Raised inside `effect`, it also rolls the claim back (the confirmation stays usable)."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.details = dict(details or {})

    def result(self) -> types.CallToolResult:
        message = visible(str(self))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)],
            structured_content={"error": {**self.details, "code": self.code, "message": message}},
            is_error=True,
        )


@dataclass(frozen=True, slots=True)
class Offer:
    """What round 1 found: the form to show, and what the confirmation binds."""

    form: Mapping[str, Any]
    """An `elicitation/create` request (`forms.pick_one_form`, `pick_some_form`, `yes_no_form`)."""
    candidates: Sequence[Candidate] = ()
    selection: Selection | None = None
    data: Mapping[str, str] = field(default_factory=dict)
    """Carried to the commit in the sealed state (`ConfirmationState.data`)."""


@dataclass(frozen=True, slots=True)
class Done:
    """What a commit answers: the structured result, and for the receipt what it changed."""

    result: Mapping[str, Any]
    summary: str | None = None
    """Completes "already done: …" for a replay; None when nothing was changed."""
    text: str | None = None
    """The result's text block; None: the result itself as JSON (spec TOOLS-5)."""


@dataclass(frozen=True, slots=True)
class Confirmed:
    """Handed to `effect`: the open transaction (write through it), the verified state, the verdict."""

    txn: LedgerTxn
    state: ConfirmationState
    verdict: Verdict
    principal: str

    @property
    def chosen(self) -> tuple[Candidate, ...]:
        """What the user confirmed: the picked candidate, the ticked ones, or for a yes/no form every
        candidate of the `Offer` (so `(order,) = confirmed.chosen` reads the same for either form)."""
        return self.verdict.chosen


OfferFn = Callable[[ConfirmationState | None], "Offer | types.CallToolResult"]
"""Round 1 (`None`), or asked again after no answer (the previous state): the form, or a result
that ends the call without asking (nothing to do)."""
EffectFn = Callable[[Confirmed], Done]
UnchangedFn = Callable[[str, "str | None"], Done]
"""(outcome label, retriable-until or None) -> the answer when nothing was changed."""


def retriable(result: Mapping[str, Any], until: str | None) -> dict[str, Any]:
    """An unchanged outcome's result, saying until when the same confirmation can be answered again
    (`retriableUntil`, for a cancel; `until` is None for the other outcomes)."""
    return dict(result) if until is None else {**result, "retriableUntil": until}


WithdrawFn = Callable[[LedgerTxn], None]
AskLive = Callable[[Mapping[str, Any]], Awaitable[Any]]
"""A 2025-11-25 session: send the form's params as `elicitation/create` now, return the answer."""


@dataclass(frozen=True, slots=True)
class ConfirmedAction:
    """One confirmed tool: its name, its ledger, the shape of its form, how long it may be answered."""

    tool: str
    ledger: Ledger
    answer: Answer
    ttl_seconds: float = 600.0
    done_label: str = "confirmed"
    """The outcome a confirmed commit records and answers ("deleted", "cancelled", …)."""
    input_key: str = "confirm"
    """The key of the input request in `inputRequests` (and of its answer in `inputResponses`)."""
    nothing_done: str = "nothing was changed"
    """How "nothing happened" reads for this tool, in errors and receipts ("nothing was deleted")."""
    phase: str = ""
    """Names the step in the sealed state; default `<tool>/confirm`."""
    pick_field: str | None = None
    """The form's pick field, if not `forms.CHOICE_FIELD` / `SET_FIELD` (pass the same to the form)."""
    noun: str = "item"
    """What a candidate is called in the problems an invalid answer is told ("order")."""

    def __post_init__(self) -> None:
        if not (isinstance(self.ttl_seconds, int | float) and 0 < self.ttl_seconds < float("inf")):
            raise ValueError(f"ttl_seconds must be a positive number of seconds, got {self.ttl_seconds!r}")

    def judge(self, answer: Any, candidates: Sequence[Candidate]) -> Verdict:
        return self.answer.judge(answer, candidates, field=self.pick_field, noun=self.noun)

    @property
    def step(self) -> str:
        return self.phase or f"{self.tool}/confirm"

    async def run(
        self,
        *,
        principal: str,
        arguments: Mapping[str, Any],
        request_state: str | None,
        input_responses: Mapping[str, Any] | None,
        offer: OfferFn,
        effect: EffectFn,
        unchanged: UnchangedFn,
        bound: Mapping[str, str] | None = None,
        live: AskLive | None = None,
    ) -> ToolResult:
        """Answer one `tools/call` round of this confirmed tool (module docstring, steps 1-5).

        `principal` comes from the caller's authentication, never from the client's words;
        `arguments` are those that decide what is affected; `request_state` and `input_responses`
        are the round's (the SDK has already verified the seal). `bound` values must be the same
        on every round. With `live`, a legacy session is asked now and judged in the same call."""
        bound = dict(bound or {})
        try:
            if live is not None:
                return await self._run_live(principal, arguments, bound, offer, effect, unchanged, live)
            if request_state is None:
                return await self._ask(principal, arguments, bound, offer, None)
            state = self.verify(request_state, principal=principal, arguments=arguments, bound=bound)
            verdict = self.judge((input_responses or {}).get(self.input_key), state.candidates)
            if verdict.kind is VerdictKind.MISSING:
                return await self._ask(principal, arguments, bound, offer, state)
            settle = partial(self.settle, state, verdict, principal, effect, unchanged, retriable=True)
            return await anyio.to_thread.run_sync(settle)
        except InvalidState as exc:
            raise invalid_state_error(self.tool, exc) from None
        except Refusal as refusal:
            return refusal.result()
        except LedgerUnavailable as exc:
            return Refusal("temporarily_unavailable", str(exc)).result()

    def mint(
        self,
        principal: str,
        arguments: Mapping[str, Any],
        bound: Mapping[str, str],
        *,
        candidates: Sequence[Candidate] = (),
        selection: Selection | None = None,
        data: Mapping[str, str] | None = None,
    ) -> ConfirmationState:
        """A new confirmation: a fresh id, valid for `ttl_seconds` from now."""
        now = time.time()
        return ConfirmationState(
            phase=self.step,
            principal=principal,
            arguments=arguments_digest(arguments),
            candidates=tuple(candidates),
            confirmation_id=new_confirmation_id(),
            issued_at=now,
            expires_at=now + self.ttl_seconds,
            bound=dict(bound),
            data=dict(data or {}),
            selection=selection,
        )

    def claim(self, state: ConfirmationState, principal: str, outcome: str) -> Claim:
        """The ledger row that consumes `state`'s confirmation; it outlives the state by the skew."""
        return Claim(
            confirmation_id=state.confirmation_id,
            principal=principal,
            tool=self.tool,
            outcome=outcome,
            expires_at=state.expires_at + EXPIRY_SKEW_SECONDS,
        )

    def _offered(
        self, principal: str, arguments: Mapping[str, Any], bound: Mapping[str, str], offer: Offer
    ) -> ConfirmationState:
        return self.mint(
            principal,
            arguments,
            bound,
            candidates=offer.candidates,
            selection=offer.selection,
            data=offer.data,
        )

    def verify(
        self, request_state: str, *, principal: str, arguments: Mapping[str, Any], bound: Mapping[str, str]
    ) -> ConfirmationState:
        """The sealed plaintext, if it is this step's, this principal's, for these arguments and
        bindings, and unexpired; `InvalidState` otherwise."""
        state = ConfirmationState.decode(request_state, phase=self.step)
        if state.principal != principal:
            raise InvalidState("state was minted for another principal")
        if state.arguments != arguments_digest(arguments):
            raise InvalidState("state was minted for other arguments")
        if dict(state.bound) != dict(bound):
            raise InvalidState(f"state was minted for another {', '.join(sorted(bound)) or 'binding'}")
        if state.expired():
            raise InvalidState("confirmation expired")
        return state

    async def _ask(
        self,
        principal: str,
        arguments: Mapping[str, Any],
        bound: Mapping[str, str],
        offer: OfferFn,
        prior: ConfirmationState | None,
    ) -> ToolResult:
        offered = await anyio.to_thread.run_sync(offer, prior)
        if isinstance(offered, types.CallToolResult):
            return offered
        state = self._offered(principal, arguments, bound, offered)
        return types.InputRequiredResult(
            input_requests={self.input_key: types.ElicitRequest.model_validate(offered.form)},
            request_state=state.encode(),
        )

    async def _run_live(
        self,
        principal: str,
        arguments: Mapping[str, Any],
        bound: Mapping[str, str],
        offer: OfferFn,
        effect: EffectFn,
        unchanged: UnchangedFn,
        live: AskLive,
    ) -> ToolResult:
        """Legacy session: ask now, judge and commit in this call; the state never leaves memory."""
        offered = await anyio.to_thread.run_sync(offer, None)
        if isinstance(offered, types.CallToolResult):
            return offered
        state = self._offered(principal, arguments, bound, offered)
        answer = await live(offered.form["params"])
        verdict = self.judge(answer, state.candidates)
        settle = partial(self.settle, state, verdict, principal, effect, unchanged, retriable=False)
        return await anyio.to_thread.run_sync(settle)

    def settle(
        self,
        state: ConfirmationState,
        verdict: Verdict,
        principal: str,
        effect: EffectFn | None,
        unchanged: UnchangedFn,
        *,
        retriable: bool,
        withdraw: WithdrawFn | None = None,
    ) -> types.CallToolResult:
        """Steps 4-5 for a judged answer (blocking: run it in a worker thread). `retriable=False` on
        a legacy session, where the state dies with the call. `withdraw` runs in the claim's
        transaction for a terminal answer that changes nothing (decline, not confirmed): the
        caller's clean-up of what round 1 set up (`notes_publish` abandons its connect link)."""
        outcome = OUTCOMES[verdict.kind]
        if not outcome.consumes:
            prior = self.ledger.consumed_outcome(state.confirmation_id, principal)
            if prior is not None:
                raise already_used(self.tool, prior)
        if verdict.kind is VerdictKind.INVALID:
            again = "The confirmation is still usable; answer the form again." if retriable else "Call again."
            raise Refusal("invalid_answer", f"{self.nothing_done}: {verdict.problem}. {again}")
        label = self.done_label if outcome.mutates else outcome.label
        if not outcome.consumes:  # cancelled: nothing recorded, answerable again until it expires
            return answer(unchanged(label, iso8601(state.expires_at) if retriable else None))
        with self.ledger.critical_section() as txn:
            if not txn.claim_confirmation(self.claim(state, principal, label)):
                raise already_used(self.tool, txn.prior_outcome(state.confirmation_id, principal))
            fault_point("after_claim")
            if outcome.mutates:
                if effect is None:
                    raise RuntimeError(f"{self.tool} settled a confirmed answer without an effect")
                done = effect(Confirmed(txn, state, verdict, principal))
            else:
                if withdraw is not None:
                    withdraw(txn)
                done = unchanged(label, None)
            txn.record_receipt(state.confirmation_id, receipt(done, label, otherwise=self.nothing_done))
            if outcome.mutates:
                fault_point("after_mutation")  # everything written; only COMMIT is left
        fault_point("after_commit")
        return answer(done)


PrincipalBinding = Callable[[Any], "str | None"]


def sealing(
    *actions: ConfirmedAction,
    keys: Sequence[bytes | str],
    bind_principal: PrincipalBinding | None = authenticated_principal,
    audience: str | None = None,
) -> RequestStateSecurity:
    """The SDK's `RequestStateSecurity` for a server whose confirmed tools are `actions`, its `ttl`
    taken from theirs: the one TTL setting is `ConfirmedAction.ttl_seconds`. Actions with different
    TTLs are refused (the SDK seals every tool of a server with one TTL).

    `keys`: each at least 32 bytes of secret randomness (`secrets.token_hex(32)`), the same list on
    every process serving the ledger; `keys[0]` seals, all open (rotate with `[new, old]`).
    `bind_principal`: the SDK's default binds the authenticated caller (token) when there is one;
    `confirm` binds the `principal` you pass to `run` in every case."""
    if not actions:
        raise ValueError("sealing() needs the server's ConfirmedAction(s), to take their ttl_seconds")
    ttls = {action.ttl_seconds for action in actions}
    if len(ttls) != 1:
        listing = ", ".join(f"{a.tool}={a.ttl_seconds:g}s" for a in actions)
        raise ValueError(
            f"one server seals every requestState with one TTL, but these ConfirmedActions differ: {listing}; "
            "give them the same ttl_seconds"
        )
    return RequestStateSecurity(
        keys=list(keys), ttl=ttls.pop(), bind_principal=bind_principal, audience=audience
    )


def answer(done: Done) -> types.CallToolResult:
    text = visible(done.text) if done.text is not None else visible_json(done.result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=dict(done.result)
    )


_WHY_NOTHING = {"declined": "it was declined", "not_confirmed": "the answer did not confirm it"}


def receipt(done: Done, outcome: str, *, otherwise: str = "nothing was changed") -> dict[str, Any]:
    """What a commit did, kept with its claim: `{"done", "summary", "result"}`. A commit that changed
    nothing reads "already answered: it was declined, so `otherwise`"."""
    if done.summary is None:
        why = _WHY_NOTHING.get(outcome, f"it was answered {outcome}")
        return {"done": False, "summary": f"{why}, so {otherwise}", "result": dict(done.result)}
    return {"done": True, "summary": done.summary, "result": dict(done.result)}


def already_used(tool: str, prior: PriorUse | None) -> Refusal:
    """The one answer to any use of a confirmation after its first, with its receipt when there is one."""
    again = f"Call {tool} again to start a new confirmation."
    kept = prior.receipt if prior is not None else None
    if kept is None or not isinstance(kept.get("summary"), str):
        outcome = prior.outcome if prior is not None else "consumed"
        return Refusal(
            "confirmation_already_used",
            f"this confirmation was already used ({outcome}); nothing more was done. {again}",
        )
    return Refusal(
        "confirmation_already_used",
        f"{'already done' if kept.get('done') else 'already answered'}: {kept['summary']}. This confirmation "
        f"was used once, and nothing more was done now. {again}",
        {"previous": kept.get("result")},
    )


def invalid_state_error(tool: str, exc: InvalidState) -> MCPError:
    """The SDK's own refusal of a bad `requestState`; the reason goes to the log only."""
    logger.warning("requestState rejected by %s: %s", tool, exc)
    return MCPError(
        code=INVALID_PARAMS,
        message="Invalid or expired requestState",
        data={"reason": "invalid_request_state"},
    )


def iso8601(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
