"""The kit of notewarden's confirmed tools, on top of the confirmation path (`confirm.flow`).

What `notes_delete`, `notes_trash_empty` and `notes_history_purge` share, so that a new confirmed
tool writes only its own part (its schemas, its form, its store call):

    the check     `tools.registry.require_form_elicitation`: form mode, or -32021 naming it
    the binding   `confirm_in_workspace`: the tool's `ConfirmedAction`, claimed in the ledger that
                  owns the workspace's trash, bound to the workspace; `sealed_workspace` carries the
                  folder's identity to the commit (`Offer.data`)
    the re-check  `reauthorize_sealed`: in the commit, authorize and contain again on the live
                  configuration, and check the folder is the one confirmed
    the purge     `BoundedPurge`: a permanent purge of what a selection holds up to a time bound,
                  confirmed by yes or no (`notes_trash_empty`, `notes_history_purge`), declared
                  by `declare_purge`

Rule 1: a bounded purge is bound to what the user saw, not to what the commit finds. Round 1
seals the `Selection`: the bound (now minus `olderThanDays`), the count and `selection_digest` of
the entries' keys. The commit, in the claim's transaction, re-authorizes, selects again at the
sealed bound and purges only when the digest is the same; otherwise it refuses (`changed_code`),
nothing is purged, and the claim rolls back with the refusal; so when the store finds an entry
that is no longer the one listed (`IdentityMismatch`). Asked again (no answer), the form
keeps the sealed bound, so the same entries are offered.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import mcp_types as types

from notewarden.confirm.flow import (
    AskLive,
    Confirmed,
    ConfirmedAction,
    Done,
    EffectFn,
    Offer,
    OfferFn,
    Refusal,
    ToolResult,
    UnchangedFn,
    retriable,
)
from notewarden.confirm.forms import Answer, yes_no_form
from notewarden.confirm.state import ConfirmationState, Selection
from notewarden.ledger import LedgerTxn
from notewarden.notes.history import Change
from notewarden.notes.store import ProgressSink
from notewarden.scope.fs_errors import IdentityMismatch
from notewarden.scope.grants import Grants, WorkspaceScope
from notewarden.scope.rights import Caller, Right
from notewarden.services import Services
from notewarden.tools.own_forms import linted
from notewarden.tools.registry import DeclaredTool, ToolCall, declare, require_form_elicitation
from notewarden.tools.results import complete, progress_sink
from notewarden.tools.schemas import WORKSPACE_URI, args, returns

__all__ = [
    "OLDER_THAN_DAYS",
    "BoundedPurge",
    "confirm_in_workspace",
    "declare_purge",
    "purge_form",
    "reauthorize_sealed",
    "sealed_workspace",
    "selection_digest",
]

E = TypeVar("E")
E_contra = TypeVar("E_contra", contravariant=True)

OLDER_THAN_DAYS: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 36500}

PurgeFormBuilder = TypeVar("PurgeFormBuilder", bound=Callable[[str, int, Sequence[str], int], dict[str, Any]])


def sealed_workspace(scope: WorkspaceScope) -> dict[str, str]:
    """The workspace folder's identity, for a confirmation to carry to its commit (`Offer.data`)."""
    dev, ino = scope.identity
    return {"workspace_identity": f"{dev}:{ino}"}


def reauthorize_sealed(
    grants: Grants[Any], caller: Caller, workspace_uri: str, state: ConfirmationState
) -> WorkspaceScope:
    """In a confirmed commit: authorize (the call's right, on the live configuration) and contain
    again, and check the folder is the one confirmed."""
    scope = grants.reauthorize_workspace(caller, workspace_uri)
    dev, ino = state.data["workspace_identity"].split(":")
    scope.verify_identity((int(dev), int(ino)))
    return scope


async def confirm_in_workspace(
    services: Services,
    call: ToolCall,
    scope: WorkspaceScope,
    *,
    answer: Answer,
    done_label: str,
    input_key: str,
    nothing_done: str,
    phase: str,
    offer: OfferFn,
    effect: EffectFn,
    unchanged: UnchangedFn,
    noun: str = "item",
    arguments: Mapping[str, Any] | None = None,
    live: AskLive | None = None,
) -> ToolResult:
    """Steps 5 verify, 6 judge and 7 commit of a confirmed tool on a workspace (`confirm.flow`): claimed
    in the ledger that owns the folder's trash, answerable for the configured time, bound to the
    call's principal, its arguments (or those given) and the workspace."""
    action = ConfirmedAction(
        tool=call.name,
        ledger=services.trash_ledger(scope.workspace),
        answer=answer,
        ttl_seconds=services.config.confirmation_ttl_seconds,
        done_label=done_label,
        input_key=input_key,
        nothing_done=nothing_done,
        phase=phase,
        noun=noun,
    )
    return await action.run(
        principal=call.principal,
        arguments=call.arguments if arguments is None else arguments,
        request_state=call.request_state,
        input_responses=call.input_responses,
        offer=offer,
        effect=effect,
        unchanged=unchanged,
        bound={"workspace": str(scope.workspace)},
        live=live,
    )


def selection_digest(keys: Iterable[str]) -> str:
    """What a confirmation binds a purge to: one line per entry, its key (unique id first, then
    whatever makes it the same entry: an identity, a version), in key order."""
    digest = hashlib.sha256()
    for key in sorted(keys):
        digest.update(f"{key}\n".encode())
    return digest.hexdigest()


def declare_purge(
    words: PurgeWords,
    title: str,
    description: str,
    selectors: Mapping[str, Any] | None = None,
    listed: Mapping[str, Any] | None = None,
) -> DeclaredTool:
    """A bounded purge as declared (`registry.declare`), needing the purge right: its arguments the
    workspace, the tool's own `selectors` and olderThanDays; its result the outcome, the workspace,
    how many were purged, the tool's own `listed` members (always present), and for a cancel
    `retriableUntil`."""
    outcomes = [words.done_label, words.nothing_label, "declined", "cancelled", "not_confirmed"]
    counted = {
        "outcome": {"enum": outcomes},
        "workspaceUri": {"type": "string"},
        "purged": {"type": "integer", "minimum": 0},
        **(listed or {}),
    }
    return declare(
        words.tool,
        title,
        description,
        args({"workspaceUri": WORKSPACE_URI}, {**(selectors or {}), "olderThanDays": OLDER_THAN_DAYS}),
        returns({**counted, "retriableUntil": {"type": "string"}}, counted),
        Right.PURGE,
    )


def purge_form(what: str, counted: str, listing: Sequence[str], more: int, aside: str = "") -> dict[str, Any]:
    """The yes/no form confirming a permanent purge: "Permanently delete `what`?`aside` This cannot be
    undone.", then what it purges (`listing`, and how many `more`), and "Yes, permanently delete
    `counted`". Each tool words `what` (`trash_empty_form`, `history_purge_form`)."""
    return yes_no_form(
        f"Permanently delete {what}?{aside} This cannot be undone.",
        listing,
        more,
        f"Yes, permanently delete {counted}",
    )


def linted_purge(
    name: str, where: str, line: str, shown: int
) -> Callable[[PurgeFormBuilder], PurgeFormBuilder]:
    """`own_forms.linted` for a purge's form builder `(where, count, listing, more)`: its form with
    the most lines it shows (`shown`, each `line` with its number for `{i}`) and more not shown."""
    listing = [line.format(i=i) for i in range(shown)]
    return linted(lambda build: {name: build(where, shown + 5, listing, 5)})


@dataclass(frozen=True, slots=True)
class PurgeWords:
    """A bounded purge's words on the wire: its name, outcomes, input key and refusals."""

    tool: str
    done_label: str
    """The outcome a commit answers ("emptied")."""
    nothing_label: str
    """The outcome when nothing is selected ("nothing_to_empty"): answered at once, nothing asked."""
    nothing_done: str
    """How "nothing happened" reads in every refusal ("nothing was deleted")."""
    input_key: str
    changed_code: str
    """The refusal when the selection changed between the form and the commit ("trash_changed")."""
    changed_what: str
    """What changed, in its message ("the trash")."""
    counted: str
    """After a count in that message: " notes" reads "(3 notes then, 4 now)"."""

    @property
    def phase(self) -> str:
        """The confirmation's phase: `<tool>/confirm`."""
        return f"{self.tool}/confirm"


class PurgeFn(Protocol[E_contra]):
    """The store's purge, through the claim's transaction (what it returns is not used); `progress`
    is None when the request asked for none, and a purge that reports none ignores it."""

    def __call__(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        entries: Sequence[E_contra],
        *,
        change: Change,
        progress: ProgressSink | None,
    ) -> object: ...


@dataclass(frozen=True, slots=True)
class BoundedPurge(Generic[E]):
    """One bounded confirmed purge (module docstring, Rule 1): the tool's words, and what only it
    knows (how to select, key, show, summarize, purge and answer); `run` is the rest. `E` is an
    entry (`TrashedNote`, `HistoryEntry`)."""

    words: PurgeWords
    select: Callable[[LedgerTxn, WorkspaceScope, float], list[E]]
    """The entries up to the bound, read in the transaction given (round 1: a critical section of
    the workspace's ledger; the commit: the claim's)."""
    key: Callable[[E], str]
    """The entry's line in `selection_digest`."""
    form: Callable[[WorkspaceScope, Sequence[E]], dict[str, Any]]
    """The yes/no form saying how many and which."""
    purge: PurgeFn[E]
    result: Callable[[str, WorkspaceScope, Sequence[E]], dict[str, Any]]
    """The structured result for an outcome and what was purged."""
    change: Callable[[Sequence[E], WorkspaceScope, ConfirmationState], str]
    """The summary of the change, as its history and its record keep it."""
    receipt: Callable[[Sequence[E], WorkspaceScope, ConfirmationState], str]
    """What a commit did, in a sentence (for a replay's receipt)."""

    async def run(self, services: Services, call: ToolCall) -> ToolResult:
        """Steps 1-7 of a bounded purge of `call.arguments["workspaceUri"]`."""
        require_form_elicitation(
            call.capabilities, f"{call.name} needs form elicitation to let the user confirm the purge"
        )
        scope = services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])

        def offer(prior: ConfirmationState | None) -> Offer | types.CallToolResult:  # 3 find, 4 ask
            if prior is not None and prior.selection is not None:
                bound = prior.selection.bound
            else:
                bound = time.time() - call.arguments.get("olderThanDays", 0) * 86400
            with services.trash_ledger(scope.workspace).critical_section() as txn:
                entries = self.select(txn, scope, bound)
            if not entries:
                return complete(self.result(self.words.nothing_label, scope, []))
            return Offer(
                self.form(scope, entries),
                selection=Selection(len(entries), selection_digest(map(self.key, entries)), bound),
                data=sealed_workspace(scope),
            )

        def effect(confirmed: Confirmed) -> Done:  # 7 commit, inside the claim's transaction
            purged = self.commit(services, call, confirmed, progress)
            result = self.result(self.words.done_label, scope, purged)
            return Done(result, self.receipt(purged, scope, confirmed.state))

        def unchanged(outcome: str, until: str | None) -> Done:
            return Done(retriable(self.result(outcome, scope, []), until))

        async with progress_sink(call.report_progress) as progress:
            return await confirm_in_workspace(  # 5 verify, 6 judge, 7 commit: the confirmation path
                services,
                call,
                scope,
                answer=Answer.YES_NO,
                done_label=self.words.done_label,
                input_key=self.words.input_key,
                nothing_done=self.words.nothing_done,
                phase=self.words.phase,
                offer=offer,
                effect=effect,
                unchanged=unchanged,
            )

    def commit(
        self, services: Services, call: ToolCall, confirmed: Confirmed, progress: ProgressSink | None
    ) -> Sequence[E]:
        """Re-authorize, select again with the sealed bound; the digest must match, or nothing is
        purged (the refusal rolls the claim back)."""
        selection = confirmed.state.selection
        assert selection is not None
        scope = reauthorize_sealed(
            services.grants, call.caller, call.arguments["workspaceUri"], confirmed.state
        )
        entries = self.select(confirmed.txn, scope, selection.bound)
        if selection_digest(map(self.key, entries)) != selection.digest:
            raise Refusal(
                self.words.changed_code,
                f"{self.words.nothing_done}: {self.words.changed_what} changed since you confirmed ({selection.count}"
                f"{self.words.counted} then, {len(entries)} now). Call {call.name} again and confirm anew.",
            )
        change = call.change(
            self.change(entries, scope, confirmed.state), confirmation_id=confirmed.state.confirmation_id
        )
        try:
            self.purge(confirmed.txn, scope, entries, change=change, progress=progress)
        except IdentityMismatch as exc:  # the store found an entry that is no longer the one listed
            raise Refusal(self.words.changed_code, f"{self.words.nothing_done}: {exc}") from None
        return entries
