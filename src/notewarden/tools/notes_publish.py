"""`notes_publish`: send one note to a publish target named in config.

The first publish of a principal to a target needs the target's credential, and that
credential must never pass through the MCP client or the model. So the tool asks with a
URL-mode elicitation: the user opens notewarden's own connect page, signs in as the same
principal, and types the credential there (`web.connect`). The handler reads as:

    1 authorize   the principal may use workspaceUri; the target is configured
    2 find        read the note inside the authorized scope
    3 credential  already stored for (principal, target)? publish now, one round
    4 ask         input_required: URL elicitation to /connect/<id>, sealed state
    5 verify      authentic, unexpired, same principal/arguments (SDK) + same phase,
                  principal, arguments, workspace and target      (`confirm.flow`)
    6 judge       the answer *and the server's own record* -> `CONNECT_OUTCOMES`
    7 commit      decline, cancel, invalid: settled on the confirmation path (`confirm.flow`:
                  claim, receipt, one "already used"); connected: claim the confirmation
                  (pending), send the note, record: see below

`accept` only means the user agreed to open the URL: the record decides. Still pending
-> asked again (same link); done -> published; expired or abandoned -> an error that
says to start again. On a 2025-11-25 session (`call.live`) step 4 is a live
`elicitation/create` (with `elicitationId`), the server waits for its record to say done,
sends `notifications/elicitation/complete`, then runs the same judge and commit.

The send never happens inside the ledger's critical section (every delete on the host would
wait on a slow target): `ledger.pending` claims the confirmation as "publishing" in one short
transaction, the note is sent with no lock held (asynchronously, under one deadline), and a second
short transaction records "published", or releases the claim when the send failed so the same
accepted state can be answered again. A second attempt while a send is under way is told so
(`publish_in_progress`, nothing consumed); after a crash between the send and the record, the
lease goes stale and the next attempt sends again with the same `Idempotency-Key` (the
confirmation id), which a target that honours it turns into one publication (docs/publish.md).
The server's own records (connections, credentials) are read and written in worker threads. A
stored credential makes later publishes one round with no elicitation at all. The publication's
record (`notes.change_log`) goes in the second short transaction, with "published"; a one-round
publish writes it in a transaction of its own after the send, and logs it if it cannot (the note is
out: answering an error would invite a second publication).

| answer          | record    | verdict   | consumes | effect                                  |
|-----------------|-----------|-----------|----------|-----------------------------------------|
| none            | any       | MISSING   | no       | asked again (same link)                 |
| accept          | pending   | WAITING   | no       | asked again (same link)                 |
| accept          | done      | CONNECTED | yes      | note sent to the target                 |
| accept          | expired   | EXPIRED   | no       | tool error `connection_expired`         |
| accept          | abandoned | DECLINED  | yes      | nothing sent ("Don't connect" on the page) |
| decline         | any       | DECLINED  | yes      | link abandoned, nothing sent            |
| cancel          | any       | CANCELLED | no       | nothing sent, retriable until expiry    |
| anything else   | any       | INVALID   | no       | tool error `invalid_answer`             |
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urljoin

import anyio
import anyio.to_thread
import mcp_types as types

from notewarden.confirm.flow import (
    ConfirmedAction,
    Done,
    Refusal,
    already_used,
    iso8601,
    receipt,
)
from notewarden.confirm.forms import Answer, Outcome, Verdict, VerdictKind
from notewarden.confirm.state import ConfirmationState
from notewarden.display import visible, visible_line
from notewarden.ledger import Claim, LedgerTxn, LedgerUnavailable
from notewarden.ledger.pending import claim_pending, settle_pending
from notewarden.notes.change_log import NoteEffect
from notewarden.notes.store import NoteStore
from notewarden.publish.config import PublishTarget
from notewarden.publish.connections import AskedBy, Connections, ConnectionStatus, PendingConnection
from notewarden.publish.sender import CredentialRejected, Delivery, DeliveryFailed, send_note
from notewarden.scope.fs_errors import PathRejected
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import split_relative
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.own_forms import linted
from notewarden.tools.registry import MissingCapability, ToolCall, ToolFailure, ToolResult, declare
from notewarden.tools.schemas import NOTE_ID, WORKSPACE_URI, args, returns

__all__ = [
    "CONNECT_INPUT_KEY",
    "CONNECT_OUTCOMES",
    "NOTES_PUBLISH",
    "PHASE",
    "ConnectVerdict",
    "PublishTool",
    "judge_connect",
]

logger = logging.getLogger(__name__)

PHASE = "notes_publish/connect"
CONNECT_INPUT_KEY = "publish_connect"
MAX_NOTE_BYTES = 1024 * 1024
LEGACY_POLL_SECONDS = 0.5
PUBLISHING = "publishing"
"""The pending outcome of a confirmation whose note is being sent (`ledger.pending`)."""
PUBLISH_LEASE_SECONDS = 120.0
"""After this, a "publishing" claim is presumed abandoned by a dead process and may be taken over;
it outlasts `sender.DEADLINE_SECONDS`, the longest a live sender takes."""
_URL_CAPABILITY: dict[str, Any] = {"elicitation": {"url": {}}}


class ConnectVerdict(enum.Enum):
    MISSING = "missing"
    WAITING = "waiting"
    CONNECTED = "connected"
    EXPIRED = "expired"
    DECLINED = "declined"
    CANCELLED = "cancelled"
    INVALID = "invalid"


CONNECT_OUTCOMES: Mapping[ConnectVerdict, Outcome] = {
    ConnectVerdict.MISSING: Outcome(consumes=False, mutates=False, is_error=False, label="asked_again"),
    ConnectVerdict.WAITING: Outcome(consumes=False, mutates=False, is_error=False, label="asked_again"),
    ConnectVerdict.CONNECTED: Outcome(consumes=True, mutates=True, is_error=False, label="published"),
    ConnectVerdict.EXPIRED: Outcome(consumes=False, mutates=False, is_error=True, label="connection_expired"),
    ConnectVerdict.DECLINED: Outcome(consumes=True, mutates=False, is_error=False, label="declined"),
    ConnectVerdict.CANCELLED: Outcome(consumes=False, mutates=False, is_error=False, label="cancelled"),
    ConnectVerdict.INVALID: Outcome(consumes=False, mutates=False, is_error=True, label="invalid_answer"),
}


_SETTLED: Mapping[ConnectVerdict, Verdict] = {
    ConnectVerdict.DECLINED: Verdict(VerdictKind.DECLINED),
    ConnectVerdict.CANCELLED: Verdict(VerdictKind.CANCELLED),
    ConnectVerdict.INVALID: Verdict(VerdictKind.INVALID, problem="answer accept, decline or cancel"),
}
"""The verdicts that settle on the confirmation path like a form's (`ConfirmedAction.settle`)."""


def judge_connect(answer: Any, pending: PendingConnection | None) -> ConnectVerdict:
    """Classify the URL-mode answer against the server's record of the connection."""
    if answer is None:
        return ConnectVerdict.MISSING
    action = answer.get("action") if isinstance(answer, Mapping) else getattr(answer, "action", None)
    if action == "decline":
        return ConnectVerdict.DECLINED
    if action == "cancel":
        return ConnectVerdict.CANCELLED
    if action != "accept":
        return ConnectVerdict.INVALID
    if pending is None:
        return ConnectVerdict.EXPIRED
    if pending.status is ConnectionStatus.ABANDONED:  # the person chose "Don't connect" on the page
        return ConnectVerdict.DECLINED
    if pending.status is ConnectionStatus.DONE:
        return ConnectVerdict.CONNECTED
    return ConnectVerdict.EXPIRED if pending.expired() else ConnectVerdict.WAITING


@dataclass(frozen=True, slots=True)
class NoteToSend:
    note_id: str
    title: str
    markdown: str
    version: str = ""
    """`model.content_version` of the note as read: what the record says was sent."""


@linted(
    lambda build: {
        "notes_publish connect (URL mode)": build("Connect the target", "https://notes.example/connect/x")
    }
)
def connect_form(message: str, url: str) -> dict[str, Any]:
    """The URL-mode request that sends the user to the connect page (`web.connect`)."""
    return {"method": "elicitation/create", "params": {"mode": "url", "message": message, "url": url}}


class PublishTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    @property
    def connections(self) -> Connections:
        if self.services.connections is None:
            raise ToolFailure("publish_unavailable", "publishing is not set up on this server")
        return self.services.connections

    async def publish(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])  # 1
        target = self.target(call.arguments["target"])
        note = await anyio.to_thread.run_sync(
            read_note, self.services.store, scope, call.arguments["noteId"]
        )  # 2 find
        connections = self.connections
        credential = await anyio.to_thread.run_sync(connections.credential, call.principal, target.id)  # 3
        if call.request_state is None and credential is not None:
            delivery = await self.deliver(call, target, note, credential, idempotency_key=None)
            await anyio.to_thread.run_sync(self.record_sent, call, str(scope.workspace), target, note)
            return published(target, note, delivery)
        require_url_elicitation(call.capabilities)
        action = self.action(call)
        bound = {"workspace": str(scope.workspace), "target": target.id}
        if call.live is not None or call.request_state is None:  # 4 ask, on a new pending connection
            state = await anyio.to_thread.run_sync(self.start, call, action, bound, target, note)
            if call.live is None:
                return self.ask(target, note, state)
            return await self.ask_live(call, action, state, target, note)
        state = action.verify(  # 5 verify (a bad state: `InvalidState`, which the registry maps)
            call.request_state, principal=call.principal, arguments=call.arguments, bound=bound
        )
        record = await anyio.to_thread.run_sync(connections.get, state.data["connection_id"])
        verdict = judge_connect(call.input_responses.get(CONNECT_INPUT_KEY), record)  # 6 judge
        if verdict in (ConnectVerdict.MISSING, ConnectVerdict.WAITING):
            return self.ask(target, note, state, again=verdict is ConnectVerdict.WAITING)
        return await self.commit(call, action, state, verdict)  # 7 commit

    def action(self, call: ToolCall) -> ConfirmedAction:
        """The confirmation path's definition for this tool; the URL-mode answer itself is judged
        by `judge_connect` against the server's record, then settled like any other."""
        return ConfirmedAction(
            tool=call.name,
            ledger=self.services.ledger,
            answer=Answer.YES_NO,
            ttl_seconds=self.services.config.confirmation_ttl_seconds,
            done_label="published",
            input_key=CONNECT_INPUT_KEY,
            nothing_done="nothing was published",
            phase=PHASE,
        )

    def start(
        self,
        call: ToolCall,
        action: ConfirmedAction,
        bound: Mapping[str, str],
        target: PublishTarget,
        note: NoteToSend,
    ) -> ConfirmationState:
        """A new pending connection in the server's record, and the confirmation that names it."""
        asked_by = AskedBy(note.note_id, note.title, call.name, call.client_name)
        pending = self.connections.start(call.principal, target.id, self.ttl, asked_by)
        return action.mint(
            call.principal,
            call.arguments,
            bound,
            data={"note_id": note.note_id, "connection_id": pending.connection_id},
        )

    @property
    def ttl(self) -> float:
        return min(
            self.services.config.publish.connect_ttl_seconds, self.services.config.confirmation_ttl_seconds
        )

    def target(self, target_id: str) -> PublishTarget:
        targets = self.services.grants.config.publish.targets
        if target_id not in targets:
            listing = ", ".join(sorted(targets)) or "none is configured"
            raise ToolFailure("unknown_target", f"no publish target {target_id!r}; targets: {listing}")
        return targets[target_id]

    def connect_url(self, connection_id: str) -> str:
        http = self.services.config.http
        return f"{self.services.config.publish.page_base(http.host, http.port)}/connect/{connection_id}"

    def connect_message(self, target: PublishTarget, note: NoteToSend) -> str:
        return (
            f"To publish “{visible_line(note.title)}” to {target.title}, notewarden needs your {target.title} credential once. "
            "Open this page on notewarden, sign in as yourself, and enter it there: it goes straight to "
            "notewarden, is stored encrypted, and never passes through this app."
        )

    def not_finished_message(self, target: PublishTarget) -> str:
        return (
            f"The {target.title} connection is not finished yet: the page still waits for you to sign in "
            "and enter the credential (or choose “Don't connect”). Open the same link again to finish it."
        )

    def ask(
        self, target: PublishTarget, note: NoteToSend, state: ConfirmationState, *, again: bool = False
    ) -> types.InputRequiredResult:
        message = self.not_finished_message(target) if again else self.connect_message(target, note)
        request = connect_form(message, self.connect_url(state.data["connection_id"]))
        return types.InputRequiredResult(
            input_requests={CONNECT_INPUT_KEY: types.ElicitRequest.model_validate(request)},
            request_state=state.encode(),
        )

    async def ask_live(
        self,
        call: ToolCall,
        action: ConfirmedAction,
        state: ConfirmationState,
        target: PublishTarget,
        note: NoteToSend,
    ) -> types.CallToolResult:
        """Legacy session: ask live with an elicitationId, wait for the record, then judge and commit."""
        assert call.live is not None
        connection_id = state.data["connection_id"]
        answer = await call.live.url(
            self.connect_message(target, note), self.connect_url(connection_id), connection_id
        )
        record = await anyio.to_thread.run_sync(self.connections.get, connection_id)
        if answer.action == "accept" and record is not None:
            record = await self.wait_for_record(record)
            if record is not None and record.status is ConnectionStatus.DONE:
                await call.live.completed(record.connection_id)
        verdict = judge_connect(answer, record)
        return await self.commit(call, action, state, verdict, retriable=False)

    async def wait_for_record(self, pending: PendingConnection) -> PendingConnection | None:
        current: PendingConnection | None = pending
        while current is not None and current.status is ConnectionStatus.PENDING and not current.expired():
            await anyio.sleep(LEGACY_POLL_SECONDS)
            current = await anyio.to_thread.run_sync(self.connections.get, pending.connection_id)
        return current

    async def commit(
        self,
        call: ToolCall,
        action: ConfirmedAction,
        state: ConfirmationState,
        verdict: ConnectVerdict,
        *,
        retriable: bool = True,
    ) -> types.CallToolResult:
        """Decline, cancel and an invalid answer settle on the confirmation path; an expired link is
        refused; a finished connection sends the note under a pending claim (module docstring)."""
        if verdict is ConnectVerdict.CONNECTED:
            return await self.send(call, action, state)
        if verdict is ConnectVerdict.EXPIRED:
            prior = await anyio.to_thread.run_sync(
                action.ledger.consumed_outcome, state.confirmation_id, call.principal
            )
            if prior is not None:
                raise already_used(call.name, prior)
            raise Refusal(
                "connection_expired",
                "nothing was published: the connect link expired or was abandoned before it was completed. "
                "Call notes_publish again for a new link.",
            )
        structured = {"target": state.bound["target"], "noteId": state.data["note_id"]}

        def unchanged(outcome: str, until: str | None) -> Done:
            if outcome == "declined":
                return Done({**structured, "outcome": "declined"}, None, "Declined: nothing was published.")
            text = "Cancelled: nothing was published."
            if until is None:
                return Done({**structured, "outcome": "cancelled"}, None, text)
            until = iso8601(state.issued_at + self.ttl)  # the link's own expiry, not the state's
            text += f" The same link can be completed and answered again until {until}."
            return Done({**structured, "outcome": "cancelled", "retriableUntil": until}, None, text)

        def abandon(txn: LedgerTxn) -> None:  # with the decline's claim, in its transaction
            self.connections.abandon(state.data["connection_id"], call.principal, txn)

        settle = partial(
            action.settle,
            state,
            _SETTLED[verdict],
            call.principal,
            None,
            unchanged,
            retriable=retriable,
            withdraw=abandon,
        )
        return await anyio.to_thread.run_sync(settle)

    async def send(
        self, call: ToolCall, action: ConfirmedAction, state: ConfirmationState
    ) -> types.CallToolResult:
        target = self.target(state.bound["target"])
        claim = action.claim(state, call.principal, PUBLISHING)
        lease = await anyio.to_thread.run_sync(self.claim, call, state, claim)
        try:
            note, credential = await anyio.to_thread.run_sync(self.what_to_send, call, state, target)
            if credential is None:
                raise ToolFailure(
                    "credential_missing",
                    f"nothing was published: no {target.title} credential is stored any more. "
                    "Call notes_publish again to connect anew.",
                )
            delivery = await self.deliver(
                call, target, note, credential, idempotency_key=state.confirmation_id
            )
        except BaseException:
            with anyio.CancelScope(shield=True):  # a cancelled call still gives its claim back
                await anyio.to_thread.run_sync(self.give_back, call, state, lease)
            raise
        done = published(target, note, delivery)
        sent = f"“{visible_line(note.title)}” ({visible_line(note.note_id)}) was published to {visible_line(target.title)}"
        kept = receipt(Done(done.structured_content or {}, sent), "published")
        await anyio.to_thread.run_sync(self.record, call, state, lease, "published", kept, (target, note))
        return done

    def what_to_send(
        self, call: ToolCall, state: ConfirmationState, target: PublishTarget
    ) -> tuple[NoteToSend, str | None]:
        """Re-authorized now (the claim may come long after round 1): the note and the credential."""
        scope = self.services.grants.reauthorize_workspace(call.caller, call.arguments["workspaceUri"])
        note = read_note(self.services.store, scope, state.data["note_id"])
        return note, self.connections.credential(call.principal, target.id)

    def claim(self, call: ToolCall, state: ConfirmationState, claim: Claim) -> float:
        """The first short critical section: the confirmation is this call's to send (a lease)."""
        with self.services.ledger.critical_section() as txn:
            lease = claim_pending(txn, claim, now=time.time(), stale_after=PUBLISH_LEASE_SECONDS)
            if lease is not None:
                return lease
            prior = txn.prior_outcome(state.confirmation_id, call.principal)
        if prior is not None and prior.outcome == PUBLISHING:
            raise ToolFailure(
                "publish_in_progress",
                "an earlier attempt with this confirmation is still sending the note; nothing more was sent. "
                "Answer again in a minute: you will then see that it was published, or (if that attempt "
                "died) this one sends it.",
            )
        raise already_used(call.name, prior)

    def record(
        self,
        call: ToolCall,
        state: ConfirmationState,
        lease: float,
        outcome: str | None,
        kept: Mapping[str, Any] | None = None,
        sent: tuple[PublishTarget, NoteToSend] | None = None,
    ) -> None:
        """The second short critical section: the outcome, its receipt and the change's record
        (`notes.change_log`), or (None) the claim given back. A lease another attempt took over
        records nothing (`ledger.pending` Rule 2)."""
        with self.services.ledger.critical_section() as txn:
            settled = settle_pending(
                txn, state.confirmation_id, call.principal, pending=PUBLISHING, lease=lease, outcome=outcome
            )
            if settled and kept is not None:
                txn.record_receipt(state.confirmation_id, kept)
            if settled and sent is not None:
                self.record_change(txn, call, state.bound["workspace"], *sent, state.confirmation_id)

    def record_sent(self, call: ToolCall, workspace: str, target: PublishTarget, note: NoteToSend) -> None:
        """A publish with a stored credential (no confirmation): its record, after the send. The note
        is out: a record that cannot be written now is logged, never answered as a failure (a retry
        would publish it again)."""
        try:
            with self.services.ledger.critical_section() as txn:
                self.record_change(txn, call, workspace, target, note, None)
        except LedgerUnavailable:
            logger.warning(
                "a note was published but its record could not be written",
                extra={"note": note.note_id, "target": target.id, "principal": call.principal},
            )

    def record_change(
        self,
        txn: LedgerTxn,
        call: ToolCall,
        workspace: str,
        target: PublishTarget,
        note: NoteToSend,
        confirmation_id: str | None,
    ) -> None:
        change = call.change(f"published {note.note_id} to {target.id}", confirmation_id=confirmation_id)
        sent = NoteEffect(note.note_id, "published", version_after=note.version or None)
        self.services.changes.record(txn, workspace, change, [sent])

    def give_back(self, call: ToolCall, state: ConfirmationState, lease: float) -> None:
        """Nothing was sent: the same answer may be given again. If the ledger cannot be reached
        now, the lease goes stale and a later attempt takes it over (`ledger.pending`)."""
        try:
            self.record(call, state, lease, None)
        except LedgerUnavailable:
            logger.warning("a failed publish could not give its claim back; its lease goes stale instead")

    async def deliver(
        self,
        call: ToolCall,
        target: PublishTarget,
        note: NoteToSend,
        credential: str,
        *,
        idempotency_key: str | None,
    ) -> Delivery:
        try:
            return await send_note(
                target,
                credential,
                note_id=note.note_id,
                title=note.title,
                markdown=note.markdown,
                idempotency_key=idempotency_key,
            )
        except CredentialRejected as exc:
            await anyio.to_thread.run_sync(self.connections.forget, call.principal, target.id)
            raise ToolFailure(
                "credential_rejected",
                f"nothing was published: {exc}. The credential was forgotten; call notes_publish again "
                "to connect with a new one.",
            ) from None
        except DeliveryFailed as exc:
            raise ToolFailure("publish_failed", f"nothing was published: {exc}. Try again later.") from None


def published(target: PublishTarget, note: NoteToSend, delivery: Delivery) -> types.CallToolResult:
    structured: dict[str, Any] = {
        "outcome": "published",
        "target": target.id,
        "noteId": note.note_id,
        "status": delivery.status,
    }
    text = f"Published “{visible_line(note.title)}” ({visible_line(note.note_id)}) to {target.title}"
    if delivery.location:  # a 201's Location, possibly relative to the target's URL
        structured["url"] = urljoin(target.url, delivery.location)
        text += f": {visible(structured['url'])}"
    return result(structured, text + ".")


def result(structured: dict[str, Any], text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=visible(text))], structured_content=structured
    )


def read_note(store: NoteStore, scope: WorkspaceScope, note_id: str) -> NoteToSend:
    """The note's text, read through the configured store; only ids inside the scope."""
    split_relative(note_id)  # refuses absolute paths, '..', empty parts with a clear message
    try:
        scope.check(note_id)  # RightMissing where the principal may not publish
    except PathRejected:
        raise ToolFailure("note_missing", f"note {note_id!r} is not inside {scope.uri}") from None
    content = store.read_note(scope, note_id)
    if len(content.data) > MAX_NOTE_BYTES:
        raise ToolFailure(
            "note_too_large",
            f"{note_id} is {len(content.data)} bytes; at most {MAX_NOTE_BYTES} can be published",
        )
    return NoteToSend(
        note_id=note_id,
        title=content.note.title,
        markdown=content.data.decode("utf-8", "replace"),
        version=content.version,
    )


def require_url_elicitation(capabilities: types.ClientCapabilities | None) -> None:
    """URL mode only when this request (or, on a legacy session, its initialize) declares it."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is not None and elicitation.url is not None:
        return
    raise MissingCapability(
        "notes_publish needs URL-mode elicitation to let the user enter the target's credential on "
        "notewarden's own page; declare elicitation.url in this request's clientCapabilities",
        _URL_CAPABILITY,
    )


NOTES_PUBLISH = declare(
    "notes_publish",
    "Publish a note",
    "Send one note to a publish target configured on the server (for example a team blog). "
    "The first time, the user connects the target on notewarden's own web page (URL "
    "elicitation): the credential never passes through the client.",
    args(
        {
            "workspaceUri": {
                **WORKSPACE_URI,
                "description": "file: URI of a workspace granted to you (or a folder inside it).",
            },
            "noteId": {
                **NOTE_ID,
                "maxLength": 1024,
                "description": "The note's id: its path inside the workspace, as notes_list shows it.",
            },
            "target": {
                "type": "string",
                "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$",
                "description": "The id of a publish target configured on the server.",
            },
        }
    ),
    returns(
        {
            "outcome": {"enum": ["published", "declined", "cancelled"]},
            "target": {"type": "string"},
            "noteId": {"type": "string"},
            "status": {"type": "integer", "description": "The target's HTTP status, when published."},
            "url": {
                "type": "string",
                "description": "Where the target published it (its Location), if it said.",
            },
            "retriableUntil": {"type": "string", "description": "For cancelled: when the link expires."},
        },
        ["outcome", "target", "noteId"],
    ),
    Right.PUBLISH,
)
