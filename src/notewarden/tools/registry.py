"""Tool registry: definitions, argument validation, and the error table.

A tool is declared one way, beside its handler: `declare(name, title, description, args(...),
returns(...), right)` (`tools.schemas`): the one right a call needs, from which its hints follow
(`HINTS_OF_RIGHT`; a `write` tool names its kind of write); `tools.catalog` gives each its handler
(`served_by`).

Every tool declares the one right it needs (`scope.rights` Rule 1). `tools/list` shows a caller
the tools whose right it holds somewhere (live configuration, narrowed by its credential), sorted
by name: one listing per set of rights, computed once, so the same caller always gets the same
bytes (`cacheScope: "private"`). A call of a tool whose right the caller holds nowhere, while it
holds others, is refused before anything runs (`right_missing`, naming the right and who grants
it; a caller holding no right at all is told, by the tool, that its workspace is not granted);
where it holds it, the scope layer checks it at every place the call touches. A call's arguments are validated against the tool's `inputSchema` (JSON
Schema 2020-12, no remote `$ref`) before the handler runs: `jsonschema` is the judge and
words the problems; a schema that uses only keywords whose meaning draft 7 and 2020-12
share is also compiled by `fastjsonschema` (~1 µs a call instead of ~17 µs), which lets
valid arguments through and hands anything it rejects to `jsonschema`. So the fast path
can only pass what `jsonschema` passes (`tests/unit/test_tool_arguments.py` checks it).

Error policy (spec open point O-4), as a table: protocol-level problems are JSON-RPC
errors, everything a model can correct is a tool result with `isError: true` and
`structuredContent.error = {code, message}`.

| raised                                   | becomes                                      |
|------------------------------------------|----------------------------------------------|
| unknown tool name                        | JSON-RPC -32602                              |
| a tool whose right the caller holds nowhere | tool error `right_missing`                |
| `MissingCapability`                      | JSON-RPC -32021, data.requiredCapabilities   |
| `confirm.state.InvalidState`             | JSON-RPC -32602 "Invalid or expired requestState" (`confirm.flow.invalid_state_error`, the one mapping) |
| `ToolFailure` (`confirm.flow.Refusal`) and the mapped domain errors below | tool error with the code in `ERROR_CODES` (`Refusal.result`) |
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import fastjsonschema
import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import x_mcp_header_map
from mcp_types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY

from notewarden.confirm.flow import Refusal, ToolResult, invalid_state_error
from notewarden.confirm.state import InvalidState
from notewarden.ledger import LedgerUnavailable
from notewarden.notes.history import Change
from notewarden.notes.ownership import WorkspaceOwnedElsewhere
from notewarden.notes.store import ContentRefused, VersionConflict
from notewarden.scope import fs_errors
from notewarden.scope.grants import AuthorizationError, ConfigUnavailable, ScopeError
from notewarden.scope.rights import Caller, Right, RightMissing, describe_rights

__all__ = [
    "ADDS",
    "ADDS_ONCE",
    "DESTRUCTIVE",
    "ERROR_CODES",
    "HINTS_OF_RIGHT",
    "READ_ONLY",
    "REPLACES",
    "DeclaredTool",
    "LiveElicitation",
    "MissingCapability",
    "ToolCall",
    "ToolDef",
    "ToolFailure",
    "ToolRegistry",
    "ToolResult",
    "declare",
    "known_failure",
    "require_form_elicitation",
    "tool_error",
]

ToolFailure = Refusal
"""A failure the caller can act on, `code` a stable machine-readable label: the confirmation
library's `Refusal` under the name notewarden's tools raise it by, so a tool and the confirmation
path speak one vocabulary, answered in one shape (`Refusal.result`)."""


class MissingCapability(Exception):
    def __init__(self, message: str, required: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.required = required


def require_form_elicitation(
    capabilities: types.ClientCapabilities | None,
    why: str,
) -> None:
    """A confirmed tool's first step: form mode only when this request declares it (`elicitation: {}`
    or `{form: {}}`); else `MissingCapability`, which answers -32021 naming it."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is not None and (elicitation.form is not None or elicitation.url is None):
        return
    raise MissingCapability(
        f"{why}; declare elicitation.form in this request's clientCapabilities", {"elicitation": {"form": {}}}
    )


ERROR_CODES: Mapping[type[Exception], str] = {
    ScopeError: "invalid_workspace_uri",
    RightMissing: "right_missing",
    AuthorizationError: "workspace_not_granted",
    ConfigUnavailable: "config_invalid",
    LedgerUnavailable: "temporarily_unavailable",
    WorkspaceOwnedElsewhere: "workspace_owned_elsewhere",
    VersionConflict: "version_conflict",
    ContentRefused: "content_refused",
    fs_errors.WorkspaceMoved: "workspace_moved",
    fs_errors.IdentityMismatch: "note_changed",
    fs_errors.NoteMissing: "note_missing",
    fs_errors.EscapeBlocked: "path_refused",
    fs_errors.PathRejected: "path_refused",
    fs_errors.NotARegularFile: "not_a_note",
    fs_errors.NoteExists: "note_exists",
    fs_errors.FsError: "file_error",
}


class LiveElicitation(Protocol):
    """A 2025-11-25 session's back channel: ask the user now, as a server→client request, and wait.

    Only legacy (initialize-handshake) sessions have one; a 2026-07-28 request never does,
    and its tools ask through `input_required` instead.
    """

    async def form(self, message: str, requested_schema: Mapping[str, Any]) -> types.ElicitResult: ...

    async def url(self, message: str, url: str, elicitation_id: str) -> types.ElicitResult: ...

    async def completed(self, elicitation_id: str) -> None:
        """Tell the client a URL-mode step finished (`notifications/elicitation/complete`)."""
        ...


@dataclass(frozen=True, slots=True)
class ToolCall:
    """Everything a handler may rely on: nothing here comes from earlier requests."""

    name: str
    principal: str
    arguments: Mapping[str, Any]
    capabilities: types.ClientCapabilities | None
    input_responses: Mapping[str, Any]
    request_state: str | None
    report_progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None
    live: LiveElicitation | None = None
    """Set on a legacy (2025-11-25) session only: the tool then asks live instead of input_required."""
    client_name: str = ""
    """What the client calls itself (`clientInfo`): shown to the person, never used to decide anything."""
    client_version: str = ""
    """The version the client gives in `clientInfo`: kept in the record of a change, like its name."""
    right: Right = Right.READ
    """The right the tool needs (set by the registry from the tool's declaration)."""
    credential_rights: frozenset[Right] | None = None
    """What the request's credential narrows the principal's rights to (None: it does not)."""

    @property
    def caller(self) -> Caller:
        """Who asks, for what right: what every authorization of this call is made with."""
        return Caller(self.principal, self.right, self.credential_rights)

    def change(self, summary: str, *, confirmation_id: str | None = None) -> Change:
        """The change this call makes, as its history rows and its record keep it (`notes.change_log`)."""
        return Change(
            self.principal, self.name, summary, self.client_name, self.client_version, confirmation_id
        )


ToolHandler = Callable[[ToolCall], Awaitable[ToolResult]]


_SHARED_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "const",
        "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf", "allOf", "oneOf", "not",
        "title", "description", "default", "examples",
    }
)  # fmt: skip
"""Keywords draft 7 (fastjsonschema) and 2020-12 (jsonschema) read alike. Left out on purpose:
`format` (fastjsonschema checks it, jsonschema by default does not), `$ref`/`$defs`, array-form
`items`, and everything 2020-12 added."""


def fast_validator(schema: Mapping[str, Any]) -> Callable[[Any], Any] | None:
    """A compiled draft-7 check of `schema`, or None when it uses a keyword outside the shared set."""

    def shared(node: Any) -> bool:
        if isinstance(node, bool):
            return True
        if not isinstance(node, Mapping) or not node.keys() <= _SHARED_KEYWORDS:
            return False
        subs = [*node.get("properties", {}).values(), *node.get("anyOf", ()), *node.get("allOf", ())]
        subs += [
            *node.get("oneOf", ()),
            *(node[k] for k in ("items", "additionalProperties", "not") if k in node),
        ]
        return all(shared(sub) for sub in subs)

    return fastjsonschema.compile(dict(schema)) if shared(schema) else None


_SIZE_LIMITS: Mapping[str, tuple[str, str, Callable[[Any], int]]] = {
    "maxLength": ("characters long", "at most", lambda v: len(v)),
    "minLength": ("characters long", "at least", lambda v: len(v)),
    "maxItems": ("items", "at most", lambda v: len(v)),
    "minItems": ("items", "at least", lambda v: len(v)),
}
"""A size limit's problem is worded with the limit and the size received, never the value itself."""
_SHOWN_VALUE_CHARS = 80
_MESSAGE_CHARS = 300


def schema_problems(validator: Draft202012Validator, instance: Any) -> list[str]:
    """Every way `instance` breaks the schema, as `path: message`, in path order. A value is quoted
    only when short: a 2 MB body must not come back as a 2 MB error."""
    return [
        f"{'/'.join(map(str, e.absolute_path)) or 'arguments'}: {_problem(e)}"
        for e in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    ]


def _problem(error: Any) -> str:
    if error.validator in _SIZE_LIMITS:
        unit, bound, size = _SIZE_LIMITS[error.validator]
        counted = "is" if unit == "characters long" else "has"
        return f"{counted} {size(error.instance)} {unit}; {bound} {error.validator_value} allowed"
    message = str(error.message)
    shown = repr(error.instance)
    if len(shown) > _SHOWN_VALUE_CHARS:
        message = message.replace(shown, _described(error.instance))
    return message if len(message) <= _MESSAGE_CHARS else message[:_MESSAGE_CHARS] + "…"


def _described(value: Any) -> str:
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} members"
    return f"a {type(value).__name__}"


READ_ONLY: Mapping[str, bool] = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True}
"""The hints of a tool that only reads (`docs/notes-toolset.md` says why each tool's hints are what they are)."""
ADDS: Mapping[str, bool] = {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False}
"""The hints of a tool that writes without replacing or removing anything (create, restore, publish)."""
ADDS_ONCE: Mapping[str, bool] = {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": True}
"""The hints of a tool that adds what is missing, and nothing when called again (the daily note)."""
REPLACES: Mapping[str, bool] = {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": True}
"""The hints of a tool that replaces content, the same call again changing nothing more (update, revert)."""
DESTRUCTIVE: Mapping[str, bool] = {
    "read_only_hint": False,
    "destructive_hint": True,
    "idempotent_hint": False,
}
"""The hints of a tool that replaces or removes, and does more when called again (delete, purge)."""
HINTS_OF_RIGHT: Mapping[Right, Mapping[str, bool]] = {
    Right.READ: READ_ONLY,
    Right.DELETE: DESTRUCTIVE,
    Right.PURGE: DESTRUCTIVE,
    Right.PUBLISH: {**ADDS, "open_world_hint": True},
}
"""A tool's hints follow from the one right it needs, so they cannot claim less than it may do; only
a tool needing `write` says which write it makes (`ADDS`, `ADDS_ONCE`, `REPLACES`, `DESTRUCTIVE`).
Publishing sends to a configured target: the one tool whose world is open."""


def declare(
    name: str,
    title: str,
    description: str,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    right: Right,
    hints: Mapping[str, bool] | None = None,
) -> DeclaredTool:
    """A tool as `tools/list` shows it (`inputs` from `schemas.args`, `outputs` from
    `schemas.returns`) and the one right a call of it needs. `hints` only for a tool needing
    `write`: every other tool's follow from its right (`HINTS_OF_RIGHT`)."""
    if (hints is None) == (right is Right.WRITE):
        raise ValueError(f"{name}: hints are given for a tool needing the write right, and only for it")
    tool = types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=dict(inputs),
        output_schema=dict(outputs),
        annotations=types.ToolAnnotations(
            title=title, **{"open_world_hint": False, **(hints or HINTS_OF_RIGHT[right])}
        ),
    )
    return DeclaredTool(tool, right)


@dataclass(frozen=True, slots=True)
class DeclaredTool:
    """What `declare` made: the tool and its right, waiting for the handler that serves it."""

    tool: types.Tool
    right: Right

    def served_by(self, handler: ToolHandler) -> ToolDef:
        return ToolDef(self.tool, handler, self.right)


@dataclass(frozen=True, slots=True)
class ToolDef:
    tool: types.Tool
    handler: ToolHandler
    right: Right
    """The one right a call of this tool needs (`scope.rights` Rule 1)."""
    _validator: Draft202012Validator = field(init=False, repr=False, compare=False)
    _fast: Callable[[Any], Any] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        Draft202012Validator.check_schema(self.tool.input_schema)
        object.__setattr__(self, "_validator", Draft202012Validator(self.tool.input_schema))
        object.__setattr__(self, "_fast", fast_validator(self.tool.input_schema))

    def argument_problems(self, arguments: Mapping[str, Any]) -> list[str]:
        instance = dict(arguments)
        if self._fast is not None:
            try:
                self._fast(instance)
                return []
            except fastjsonschema.JsonSchemaException:
                pass  # jsonschema decides, and says what is wrong
        return schema_problems(self._validator, instance)


def known_failure(exc: Exception) -> ToolFailure | None:
    """`exc` as the tool error it stands for (`ERROR_CODES`); None for an unexpected exception."""
    if isinstance(exc, ToolFailure):
        return exc
    code = next((c for t, c in ERROR_CODES.items() if isinstance(exc, t)), None)
    if code is None:
        return None
    details: dict[str, Any] | None = None
    if isinstance(exc, RightMissing):
        details = {"right": str(exc.right), "where": exc.where}
    elif isinstance(exc, VersionConflict):
        details = {"currentVersion": exc.current_version}
    return ToolFailure(code, str(exc), details)


def tool_error(code: str, message: str, details: Mapping[str, Any] | None = None) -> types.CallToolResult:
    """`details` (e.g. `currentVersion`) go beside code and message in `structuredContent.error`.
    The message is prose for a person: format characters in names it quotes are escaped."""
    return Refusal(code, message, details).result()


RightsHeld = Callable[[ToolCall], frozenset[Right]]
"""Every right the call's principal holds somewhere, as its credential narrows them."""


class ToolRegistry:
    def __init__(self, tools: Iterable[ToolDef], *, rights_held: RightsHeld | None = None) -> None:
        """`rights_held`: None for a registry that shows and runs every tool (a test's)."""
        self._tools = {t.tool.name: t for t in sorted(tools, key=lambda t: t.tool.name)}
        self._rights_held = rights_held
        self._listings: dict[frozenset[Right], types.ListToolsResult] = {}
        self._header_schemas = {
            name: t.tool.input_schema
            for name, t in self._tools.items()
            if x_mcp_header_map(t.tool.input_schema)
        }

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def right_of(self, name: str) -> Right | None:
        tool = self._tools.get(name)
        return tool.right if tool is not None else None

    def listing(self, held: frozenset[Right] | None = None) -> types.ListToolsResult:
        """The tools whose right is in `held` (None: every tool), by name; one object per set."""
        key = frozenset(Right) if held is None else held
        listing = self._listings.get(key)
        if listing is None:
            shown = [t.tool for t in self._tools.values() if t.right in key]
            listing = self._listings.setdefault(
                key, types.ListToolsResult(tools=shown, cache_scope="private")
            )
        return listing

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The schema the SDK checks a call's `Mcp-Param-*` headers against, for a tool that declares
        any (`x-mcp-header`); None for the others, which have no header a client may send. The SDK
        walks the schema it gets on every `tools/call` (twice: its validity, then its annotations),
        ~0.2 M instructions per call on these schemas, to find nothing."""
        return self._header_schemas.get(name)

    async def call(self, call: ToolCall) -> ToolResult:
        tool = self._tools.get(call.name)
        if tool is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"unknown tool {call.name!r}; available: {', '.join(self._tools)}",
            )
        call = replace(call, right=tool.right)
        if self._rights_held is not None:
            held = self._rights_held(call)
            if held and tool.right not in held:  # holding nothing at all, the workspace is not granted
                granted = self._rights_held(replace(call, credential_rights=None))
                return right_refused(call, granted)
        problems = tool.argument_problems(call.arguments)
        if problems:
            return tool_error(
                "invalid_arguments", f"invalid arguments for {call.name}: " + "; ".join(problems)
            )
        try:
            return await tool.handler(call)
        except MissingCapability as exc:
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=str(exc),
                data={"requiredCapabilities": dict(exc.required)},
            ) from None
        except InvalidState as exc:
            raise invalid_state_error(call.name, exc) from None
        except Exception as exc:
            failure = known_failure(exc)
            if failure is None:
                raise
            return tool_error(failure.code, str(failure), failure.details)


def right_refused(call: ToolCall, granted: frozenset[Right]) -> types.CallToolResult:
    """A tool whose right the caller holds in no workspace: refused before it runs, saying who can
    give it: another credential only when the principal's grants (`granted`, without the credential's
    narrowing) hold the right somewhere, else the operator. `tools/list` does not show this caller
    the tool."""
    if call.right in granted and call.credential_rights is not None:  # the credential narrowed it away
        who = (
            f"your credential carries only {describe_rights(call.credential_rights)}: use one with "
            f"{call.right} (an OAuth token with the scope for it, or a token made with --rights)"
        )
    else:
        who = "rights are granted by the server's operator ([[principal]] in its configuration)"
    return tool_error(
        "right_missing",
        f"{call.name} needs the right {call.right}, which {call.principal} holds in no workspace here; {who}.",
        {"right": str(call.right)},
    )
