"""Roots as a migration adapter: choosing a *granted* workspace when `workspaceUri` is omitted.

Rules:
1. Only a 2026-07-28 request that omits `workspaceUri` and declares the `roots` capability
   is asked, and only through MRTR: an `inputRequests` entry `{"method": "roots/list"}`,
   never a live request. A legacy session, or a request without `roots`, must name the
   workspace (the error lists the granted ones).
2. The answer is a hint, never a grant: it only selects among the workspaces the
   principal's configuration already grants. A root matches a granted workspace when one
   contains the other; roots that are not strict `file:` URIs are ignored.
3. One match proceeds; several are offered in a form (pick one); none is refused with the
   list of granted workspaces.
4. Once chosen, the workspace travels in the tool's own sealed state, so later rounds of
   the same call (same arguments, still without `workspaceUri`) use it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import mcp_types as types

from notewarden.confirm.state import InvalidState
from notewarden.scope.uri import FileUri, UriError, parse_file_uri
from notewarden.services import Services
from notewarden.tools.own_forms import linted
from notewarden.tools.registry import ToolCall, ToolFailure, tool_error

__all__ = ["CHOICE_KEY", "MAX_OFFERED_WORKSPACES", "ROOTS_KEY", "choice_form", "resolve_workspace"]

ROOTS_KEY = "workspace_roots"
CHOICE_KEY = "workspace_choice"
_ROOTS_PHASE = "workspace/roots"
_CHOICE_PHASE = "workspace/choice"
_FIELD = "workspaceUri"
MAX_OFFERED_WORKSPACES = 25  # a longer choice does not fit a dialog (forms.lint)


@dataclass(frozen=True, slots=True)
class HintState:
    phase: str
    principal: str
    offered: tuple[str, ...]
    issued_at: float

    def encode(self) -> str:
        return json.dumps(
            {
                "v": 1,
                "phase": self.phase,
                "sub": self.principal,
                "offered": list(self.offered),
                "iat": self.issued_at,
            }
        )

    @classmethod
    def decode(cls, text: str, principal: str) -> HintState:
        try:
            raw = json.loads(text)
            state = cls(
                str(raw["phase"]), str(raw["sub"]), tuple(map(str, raw["offered"])), float(raw["iat"])
            )
        except (ValueError, KeyError, TypeError):
            raise InvalidState("malformed workspace hint state") from None
        if state.principal != principal:
            raise InvalidState("workspace hint state was minted for another principal")
        return state


def state_phase(text: str | None) -> str | None:
    try:
        raw = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return raw.get("phase") if isinstance(raw, dict) else None


def resolve_workspace(
    services: Services, call: ToolCall, workspace_in_state: Callable[[str], str]
) -> ToolCall | types.InputRequiredResult | types.CallToolResult:
    """The call with `workspaceUri` filled in from a granted workspace, or the next question."""
    granted = services.grants.granted_workspaces(call.caller)
    listing = ", ".join(map(str, granted)) or "none"
    roots_declared = call.capabilities is not None and call.capabilities.roots is not None
    if call.live is not None or not roots_declared:
        raise ToolFailure(
            "invalid_arguments",
            f"invalid arguments for {call.name}: give workspaceUri (a workspace granted to you: {listing}); without it the server can only "
            "use a 2026-07-28 client's roots, which this request did not declare",
        )
    phase = state_phase(call.request_state)
    if call.request_state is None or phase == _ROOTS_PHASE:
        answer = call.input_responses.get(ROOTS_KEY)
        if call.request_state is None or answer is None:
            return ask_roots(call.principal)
        HintState.decode(call.request_state, call.principal)
        matches = matching_workspaces(granted, _root_uris(answer))
        if not matches:
            raise ToolFailure(
                "no_granted_root",
                f"none of your client's roots is a workspace granted to you; granted: {listing}. "
                "Give workspaceUri explicitly.",
            )
        if len(matches) == 1:
            return _with_workspace(call, str(matches[0]), fresh=True)
        if len(matches) > MAX_OFFERED_WORKSPACES:
            raise ToolFailure(
                "too_many_matches",
                f"{len(matches)} of your workspaces match this client's roots; give workspaceUri explicitly",
            )
        return ask_choice(call.principal, [str(m) for m in matches])
    if phase == _CHOICE_PHASE:
        state = HintState.decode(call.request_state, call.principal)
        answer = call.input_responses.get(CHOICE_KEY)
        if answer is None:
            return ask_choice(call.principal, list(state.offered))
        action, content = _field(answer, "action"), _field(answer, "content")
        if action in ("decline", "cancel"):
            return tool_error("workspace_not_chosen", f"nothing was done: the workspace choice was {action}d")
        chosen = content.get(_FIELD) if isinstance(content, Mapping) else None
        if action != "accept" or chosen not in state.offered:
            return tool_error(
                "invalid_answer", f"pick one of the offered workspaces: {', '.join(state.offered)}"
            )
        services.grants.authorize_workspace(call.caller, chosen)  # still granted now
        return _with_workspace(call, str(chosen), fresh=True)
    return _with_workspace(call, workspace_in_state(call.request_state), fresh=False)


def matching_workspaces(granted: Sequence[FileUri], roots: Sequence[FileUri]) -> list[FileUri]:
    return [
        w for w in granted if any(r.relative_to(w) is not None or w.relative_to(r) is not None for r in roots)
    ]


def _root_uris(answer: Any) -> list[FileUri]:
    roots = _field(answer, "roots")
    uris = []
    for root in roots if isinstance(roots, list) else []:
        try:
            uris.append(parse_file_uri(str(_field(root, "uri"))))
        except UriError:
            continue
    return uris


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _with_workspace(call: ToolCall, uri: str, *, fresh: bool) -> ToolCall:
    arguments = {**call.arguments, _FIELD: uri}
    if fresh:  # the hint rounds are over: the tool starts its own first round
        return replace(call, arguments=arguments, request_state=None, input_responses={})
    return replace(call, arguments=arguments)


def ask_roots(principal: str) -> types.InputRequiredResult:
    state = HintState(_ROOTS_PHASE, principal, (), time.time())
    return types.InputRequiredResult(
        input_requests={ROOTS_KEY: types.ListRootsRequest()}, request_state=state.encode()
    )


@linted(
    lambda build: {
        "workspace choice (2)": build(["file:///srv/a", "file:///srv/b"]),
        f"workspace choice ({MAX_OFFERED_WORKSPACES})": build(
            [f"file:///srv/w{i}" for i in range(MAX_OFFERED_WORKSPACES)]
        ),
    }
)
def choice_form(offered: Sequence[str]) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Several of your workspaces match this client's roots. Which one do you mean?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    _FIELD: {
                        "type": "string",
                        "title": "Workspace",
                        "oneOf": [{"const": uri, "title": parse_file_uri(uri).path} for uri in offered],
                    }
                },
                "required": [_FIELD],
            },
        },
    }


def ask_choice(principal: str, offered: Sequence[str]) -> types.InputRequiredResult:
    state = HintState(_CHOICE_PHASE, principal, tuple(offered), time.time())
    return types.InputRequiredResult(
        input_requests={CHOICE_KEY: types.ElicitRequest.model_validate(choice_form(offered))},
        request_state=state.encode(),
    )
