"""Test-only tools the official conformance suite calls by name (never shipped).

`@modelcontextprotocol/conformance@0.2.0-alpha.12 server --requirements 2026-07-28` drives
a fixed set of tools (`test_*`) whose behaviour each scenario's description spells out.
They are written against notewarden's own `ToolDef` / `ToolCall` interface and added to
the real application by `tests/conformance/serve.py`, so the suite exercises notewarden's
wiring end to end: argument validation and error mapping in `ToolRegistry`
(`MissingCapability` -> -32021 + HTTP 400), the SDK's `RequestStateBoundary` sealing every
`requestState` these handlers return (and rejecting a tampered one before a handler runs),
per-request capabilities, and progress on the request's own response stream.

Nothing here is imported by `src/`; `fixture_tools()` and `install_fixture_features()` are the
entry points, used only by serve.py.

Scenario -> tool:

    tools-call-simple-text / -image / -audio      test_simple_text / test_image_content /
      / -embedded-resource / -mixed-content         test_audio_content / test_embedded_resource /
                                                    test_multiple_content_types
    tools-call-error / tools-call-with-progress     test_error_handling / test_tool_with_progress
    server-stateless (SEP-2575 diagnostics)         test_missing_capability, test_streaming_elicitation,
                                                    test_logging_tool
    input-required-result-basic-elicitation,        test_input_required_result_elicitation
      -missing-input-response, -result-type,
      -ignore-extra-params, -validate-input
    input-required-result-basic-sampling            test_input_required_result_sampling
    input-required-result-basic-list-roots          test_input_required_result_list_roots
    input-required-result-request-state             test_input_required_result_request_state
    input-required-result-multiple-input-requests   test_input_required_result_multiple_inputs
    input-required-result-multi-round               test_input_required_result_multi_round
    input-required-result-tampered-state            test_input_required_result_tampered_state
    input-required-result-capability-check          test_input_required_result_capabilities
    json-schema-2020-12 (pending, not scored)       json_schema_2020_12_tool
    http-custom-header-server-validation (pending)  test_custom_headers (x-mcp-header: Region)

Prompts, resources and completion (completion-complete, resources-*, sep-2164-resource-not-found,
prompts-*, caching, input-required-result-non-tool-request) are plain SDK handlers installed by
`install_fixture_features` through `build_http_app(configure_server=...)`, in place of the shipped
ones (`tools.prompts`, `tools.resources`), whose notes and prompts have other names and URIs than
the scenarios ask for. The scenarios the shipped handlers meet run without any fixture too
(`serve.py --shipped`; README.md, "The shipped server").

MRTR rules every `test_input_required_result_*` tool follows: it asks only for what this
request's `clientCapabilities` declare (else -32021 naming what is missing), re-asks
(a new `InputRequiredResult`) when an answer it needs is missing or of the wrong kind,
ignores keys it did not ask for, and keeps its cross-round context only in the
`requestState` it returns (plaintext here; the SDK boundary seals and verifies it).
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY

from notewarden.scope.rights import Right
from notewarden.tools.registry import MissingCapability, ToolCall, ToolDef, ToolResult

__all__ = ["FIXTURE_TOOL_NAMES", "fixture_tools", "install_fixture_features"]

NO_ARGS: dict[str, Any] = {"type": "object", "additionalProperties": False}

# A 1x1 red PNG and a 1-sample 8 kHz mono WAV: the smallest valid payloads of each kind.
RED_PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
SILENT_WAV = base64.b64encode(
    b"RIFF"
    + (38).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little")
    + (2).to_bytes(2, "little")
    + (16).to_bytes(2, "little")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\x00\x00"
).decode()

ELICITATION = "elicitation"
SAMPLING = "sampling"
ROOTS = "roots"


# --- helpers -------------------------------------------------------------------------------


def text(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)])


def declared(capabilities: types.ClientCapabilities | None, capability: str) -> bool:
    """Whether this request declared `capability`; elicitation counts only if form mode is usable."""
    if capabilities is None:
        return False
    if capability == ELICITATION:
        e = capabilities.elicitation
        return e is not None and (e.form is not None or e.url is None)
    return getattr(capabilities, capability) is not None


def require(call: ToolCall, *needed: str) -> None:
    missing = [c for c in needed if not declared(call.capabilities, c)]
    if missing:
        required: dict[str, dict[str, Any]] = {c: ({"form": {}} if c == ELICITATION else {}) for c in missing}
        raise MissingCapability(f"{call.name} needs the client capabilities: {', '.join(missing)}", required)


def form(message: str, properties: Mapping[str, Any]) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            mode="form",
            message=message,
            requested_schema={"type": "object", "properties": dict(properties), "required": list(properties)},
        )
    )


def sampling(prompt: str, max_tokens: int) -> types.CreateMessageRequest:
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(
            messages=[
                types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
            ],
            max_tokens=max_tokens,
        )
    )


def list_roots() -> types.ListRootsRequest:
    return types.ListRootsRequest()


def accepted(call: ToolCall, key: str, field: str, kind: type) -> Any | None:
    """The `field` of an accepted form answer under `key`, if it is there and of `kind`."""
    answer = call.input_responses.get(key)
    if not isinstance(answer, types.ElicitResult) or answer.action != "accept" or not answer.content:
        return None
    value = answer.content.get(field)
    if kind is bool:
        return value if isinstance(value, bool) else None
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def sampled_text(call: ToolCall, key: str) -> str | None:
    answer = call.input_responses.get(key)
    if not isinstance(answer, types.CreateMessageResult):
        return None
    content = answer.content
    return content.text if isinstance(content, types.TextContent) else None


def roots_given(call: ToolCall, key: str) -> list[str] | None:
    answer = call.input_responses.get(key)
    return [str(r.uri) for r in answer.roots] if isinstance(answer, types.ListRootsResult) else None


def new_state(tool: str, **claims: Any) -> str:
    """Plaintext state: which tool and round minted it, plus a nonce; sealed by the SDK boundary."""
    return json.dumps({"tool": tool, "nonce": secrets.token_hex(8), **claims}, sort_keys=True)


def read_state(call: ToolCall) -> dict[str, Any] | None:
    """The plaintext this server minted (already verified by the boundary), or None when absent."""
    if call.request_state is None:
        return None
    try:
        state = json.loads(call.request_state)
    except ValueError:
        return None
    return state if isinstance(state, dict) and state.get("tool") == call.name else None


def ask(
    requests: Mapping[str, types.ElicitRequest | types.CreateMessageRequest | types.ListRootsRequest],
    state: str | None = None,
) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests=dict(requests), request_state=state)


def tool(name: str, description: str, handler: Any, schema: dict[str, Any] | None = None) -> ToolDef:
    return ToolDef(
        tool=types.Tool(name=name, description=description, input_schema=schema or NO_ARGS),
        handler=handler,
        right=Right.READ,  # the suite's own tools read nothing; any principal of the server may call them
    )


# --- plain content (tools-call-*) ------------------------------------------------------------


async def simple_text(call: ToolCall) -> ToolResult:
    return text("This is a simple text response for testing.")


async def image_content(call: ToolCall) -> ToolResult:
    return types.CallToolResult(
        content=[types.ImageContent(type="image", data=RED_PIXEL_PNG, mime_type="image/png")]
    )


async def audio_content(call: ToolCall) -> ToolResult:
    return types.CallToolResult(
        content=[types.AudioContent(type="audio", data=SILENT_WAV, mime_type="audio/wav")]
    )


async def embedded_resource(call: ToolCall) -> ToolResult:
    return types.CallToolResult(
        content=[
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="test://embedded-resource",
                    mime_type="text/plain",
                    text="This is an embedded resource content.",
                ),
            )
        ]
    )


async def multiple_content_types(call: ToolCall) -> ToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="Multiple content types test:"),
            types.ImageContent(type="image", data=RED_PIXEL_PNG, mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text=json.dumps({"test": "data", "value": 123}),
                ),
            ),
        ]
    )


async def error_handling(call: ToolCall) -> ToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="This tool intentionally returns an error for testing")],
        is_error=True,
    )


async def tool_with_progress(call: ToolCall) -> ToolResult:
    for step, progress in enumerate((0.0, 50.0, 100.0)):
        if step:
            await anyio.sleep(0.05)
        if call.report_progress is not None:
            await call.report_progress(progress, 100.0, None)
    return text("Progress test completed: reported 0, 50 and 100 of 100.")


# --- SEP-2575 diagnostics (server-stateless) ---------------------------------------------


async def missing_capability(call: ToolCall) -> ToolResult:
    require(call, SAMPLING)
    return text("Sampling capability is declared.")


async def streaming_elicitation(call: ToolCall) -> ToolResult:
    """Progress (when asked for) then an interim result: the stream never carries a request."""
    require(call, ELICITATION)
    if call.report_progress is not None:
        await call.report_progress(50.0, 100.0, "asking the user")
    ok = accepted(call, "confirm", "ok", bool)
    if ok is None:
        return ask({"confirm": form("Continue the streaming test?", {"ok": {"type": "boolean"}})})
    return text(f"Streaming complete: ok={ok}.")


async def logging_tool(call: ToolCall) -> ToolResult:
    # Logging is deprecated and the request set no io.modelcontextprotocol/logLevel:
    # nothing may go out as notifications/message, so this tool only returns.
    return text("Logging test completed; no log level was requested, so nothing was logged.")


# --- SEP-2322 multi round-trip requests -----------------------------------------------------


NAME_FORM = {"name": {"type": "string"}}


async def mrtr_elicitation(call: ToolCall) -> ToolResult:
    require(call, ELICITATION)
    answer = call.input_responses.get("user_name")
    if isinstance(answer, types.ElicitResult) and answer.action in ("decline", "cancel"):
        return text(f"No name given (the user chose {answer.action}).")
    name = accepted(call, "user_name", "name", str)
    if name is None:
        return ask({"user_name": form("What is your name?", NAME_FORM)})
    return text(f"Hello, {name}!")


async def mrtr_sampling(call: ToolCall) -> ToolResult:
    require(call, SAMPLING)
    answer = sampled_text(call, "capital_question")
    if answer is None:
        return ask({"capital_question": sampling("What is the capital of France?", 100)})
    return text(f"The model answered: {answer}")


async def mrtr_list_roots(call: ToolCall) -> ToolResult:
    require(call, ROOTS)
    roots = roots_given(call, "client_roots")
    if roots is None:
        return ask({"client_roots": list_roots()})
    return text(f"The client has {len(roots)} root(s): {', '.join(roots) or 'none'}.")


async def mrtr_request_state(call: ToolCall) -> ToolResult:
    require(call, ELICITATION)
    state = read_state(call)
    ok = accepted(call, "confirm", "ok", bool)
    if state is None or ok is None:
        return ask(
            {"confirm": form("Please confirm", {"ok": {"type": "boolean"}})}, new_state(call.name, round=1)
        )
    return text(f"state-ok: requestState {state['nonce']} verified, ok={ok}.")


async def mrtr_multiple_inputs(call: ToolCall) -> ToolResult:
    require(call, ELICITATION, SAMPLING, ROOTS)
    name, greeting, roots = (
        accepted(call, "user_name", "name", str),
        sampled_text(call, "greeting"),
        roots_given(call, "client_roots"),
    )
    missing: dict[str, types.ElicitRequest | types.CreateMessageRequest | types.ListRootsRequest] = {}
    if name is None:
        missing["user_name"] = form("What is your name?", NAME_FORM)
    if greeting is None:
        missing["greeting"] = sampling("Generate a greeting", 50)
    if roots is None:
        missing["client_roots"] = list_roots()
    if missing or read_state(call) is None:
        # Ask again for whatever is still missing (all of it on the first round).
        return ask(
            missing
            or {
                "user_name": form("What is your name?", NAME_FORM),
                "greeting": sampling("Generate a greeting", 50),
                "client_roots": list_roots(),
            },
            new_state(call.name),
        )
    return text(f"{greeting} {name} ({len(roots or [])} root(s)).")


async def mrtr_multi_round(call: ToolCall) -> ToolResult:
    require(call, ELICITATION)
    state = read_state(call)
    step1 = ask({"step1": form("Step 1: What is your name?", NAME_FORM)}, new_state(call.name, round=1))
    if state is None:
        return step1
    if state.get("round") == 1:
        name = accepted(call, "step1", "name", str)
        if name is None:
            return step1
        return ask(
            {"step2": form("Step 2: What is your favorite color?", {"color": {"type": "string"}})},
            new_state(call.name, round=2, name=name),
        )
    if state.get("round") == 2:
        color = accepted(call, "step2", "color", str)
        if color is None:
            return ask(
                {"step2": form("Step 2: What is your favorite color?", {"color": {"type": "string"}})},
                new_state(call.name, round=2, name=state.get("name")),
            )
        return text(f"{state.get('name')}'s favorite color is {color}.")
    return step1


async def mrtr_tampered_state(call: ToolCall) -> ToolResult:
    # A tampered token never reaches this handler: the SDK boundary answers -32602 first.
    require(call, ELICITATION)
    state = read_state(call)
    ok = accepted(call, "confirm", "ok", bool)
    if state is None or ok is None:
        return ask({"confirm": form("Please confirm", {"ok": {"type": "boolean"}})}, new_state(call.name))
    return text(f"state-ok: ok={ok}.")


async def mrtr_capabilities(call: ToolCall) -> ToolResult:
    """Asks, through whichever of elicitation / sampling / roots this request declared, only those."""
    wanted: dict[str, types.ElicitRequest | types.CreateMessageRequest | types.ListRootsRequest] = {}
    if declared(call.capabilities, ELICITATION) and accepted(call, "user_name", "name", str) is None:
        wanted["user_name"] = form("What is your name?", NAME_FORM)
    if declared(call.capabilities, SAMPLING) and sampled_text(call, "summary") is None:
        wanted["summary"] = sampling("Summarize the capability check in one sentence.", 50)
    if declared(call.capabilities, ROOTS) and roots_given(call, "client_roots") is None:
        wanted["client_roots"] = list_roots()
    if not any(declared(call.capabilities, c) for c in (ELICITATION, SAMPLING, ROOTS)):
        require(call, SAMPLING)  # nothing usable was declared: name one way to proceed
    if wanted:
        return ask(wanted)
    return text("Every declared capability was used and answered.")


# --- JSON Schema 2020-12 (pending scenario, run for visibility) ---------------------------

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


async def json_schema_2020_12(call: ToolCall) -> ToolResult:
    return text(f"Received: {json.dumps(dict(call.arguments), sort_keys=True)}")


# --- SEP-2243 custom headers (pending scenario, run for visibility) ------------------------

CUSTOM_HEADERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {
            "type": "string",
            "x-mcp-header": "Region",
            "description": "Mirrored in Mcp-Param-Region.",
        },
        "note": {"type": "string", "description": "Not mirrored in any header."},
    },
    "required": ["region"],
    "additionalProperties": False,
}


LIVE: list[Any] = []
"""The application's `tools.live.LiveChanges`, put here by `serve.py` once the app is built."""


async def trigger_tool_change(call: ToolCall) -> ToolResult:
    for live in LIVE:
        live.announce(tools=True)
    return text("the tool list changed")


async def trigger_prompt_change(call: ToolCall) -> ToolResult:
    for live in LIVE:
        live.announce(prompts=True)
    return text("the prompt list changed")


async def custom_headers(call: ToolCall) -> ToolResult:
    return text(f"region={call.arguments['region']}")


# --- registry --------------------------------------------------------------------------------


def fixture_tools() -> list[ToolDef]:
    return [
        tool(
            "test_trigger_tool_change",
            "Conformance (SEP-2575): listen streams that asked hear the tool list changed.",
            trigger_tool_change,
        ),
        tool(
            "test_trigger_prompt_change",
            "Conformance (SEP-2575): listen streams that asked hear the prompt list changed.",
            trigger_prompt_change,
        ),
        tool("test_simple_text", "Conformance: returns one text block.", simple_text),
        tool("test_image_content", "Conformance: returns a 1x1 PNG image block.", image_content),
        tool("test_audio_content", "Conformance: returns a tiny WAV audio block.", audio_content),
        tool("test_embedded_resource", "Conformance: returns an embedded text resource.", embedded_resource),
        tool(
            "test_multiple_content_types",
            "Conformance: returns text, image and resource blocks.",
            multiple_content_types,
        ),
        tool("test_error_handling", "Conformance: always returns a tool error (isError).", error_handling),
        tool(
            "test_tool_with_progress", "Conformance: reports progress 0, 50, 100 of 100.", tool_with_progress
        ),
        tool(
            "test_missing_capability",
            "Conformance (SEP-2575): needs the sampling client capability.",
            missing_capability,
        ),
        tool(
            "test_streaming_elicitation",
            "Conformance (SEP-2575): progress then an input_required result; never a request on the stream.",
            streaming_elicitation,
        ),
        tool(
            "test_logging_tool",
            "Conformance (SEP-2575): emits no log without a requested log level.",
            logging_tool,
        ),
        tool(
            "test_input_required_result_elicitation",
            "Conformance (SEP-2322): asks the user's name via MRTR.",
            mrtr_elicitation,
        ),
        tool(
            "test_input_required_result_sampling",
            "Conformance (SEP-2322): asks for a sampling result via MRTR.",
            mrtr_sampling,
        ),
        tool(
            "test_input_required_result_list_roots",
            "Conformance (SEP-2322): asks for the client's roots via MRTR.",
            mrtr_list_roots,
        ),
        tool(
            "test_input_required_result_request_state",
            "Conformance (SEP-2322): round-trips a sealed requestState and reports state-ok.",
            mrtr_request_state,
        ),
        tool(
            "test_input_required_result_multiple_inputs",
            "Conformance (SEP-2322): asks for elicitation, sampling and roots at once.",
            mrtr_multiple_inputs,
        ),
        tool(
            "test_input_required_result_multi_round",
            "Conformance (SEP-2322): two rounds of questions with evolving requestState.",
            mrtr_multi_round,
        ),
        tool(
            "test_input_required_result_tampered_state",
            "Conformance (SEP-2322): a tampered requestState is rejected.",
            mrtr_tampered_state,
        ),
        tool(
            "test_input_required_result_capabilities",
            "Conformance (SEP-2322): asks only through the capabilities this request declared.",
            mrtr_capabilities,
        ),
        tool(
            "json_schema_2020_12_tool",
            "Conformance (SEP-1613): an input schema using 2020-12 keywords.",
            json_schema_2020_12,
            JSON_SCHEMA_2020_12,
        ),
        tool(
            "test_custom_headers",
            "Conformance (SEP-2243): `region` travels in the Mcp-Param-Region header.",
            custom_headers,
            CUSTOM_HEADERS_SCHEMA,
        ),
    ]


FIXTURE_TOOL_NAMES = frozenset(t.tool.name for t in fixture_tools())


# --- prompts, resources, completion ------------------------------------------------------
#
# The names, URIs and contents the scenarios ask for: plain SDK handlers, registered on the
# lowlevel `Server` that `build_server` made (through the `configure_server` hook of
# `build_http_app`), in place of the shipped note resources and prompts. They still run behind notewarden's
# authentication, Host/Origin checks, `_meta`/header validation and `RequestStateBoundary`
# (which seals and verifies `requestState` on `prompts/get` and `resources/read` too).

Ctx = ServerRequestContext[Any, Any]
CACHE_TTL_MS = 60_000  # public: the fixture lists and contents are the same for every caller

STATIC_TEXT_URI = "test://static-text"
STATIC_BINARY_URI = "test://static-binary"
TEMPLATE = "test://template/{id}/data"
_TEMPLATE_PREFIX, _TEMPLATE_SUFFIX = "test://template/", "/data"


def _user(content: types.TextContent | types.ImageContent | types.EmbeddedResource) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


def _user_text(message: str) -> types.PromptMessage:
    return _user(types.TextContent(type="text", text=message))


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="Conformance: a prompt without arguments."),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="Conformance: a prompt with two required arguments.",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="Conformance: a prompt embedding a resource.",
        arguments=[
            types.PromptArgument(
                name="resourceUri", description="URI of the resource to embed", required=True
            )
        ],
    ),
    types.Prompt(name="test_prompt_with_image", description="Conformance: a prompt with an image."),
    types.Prompt(
        name="test_input_required_result_prompt",
        description="Conformance (SEP-2322): asks for context via MRTR before returning its messages.",
    ),
]
COMPLETIONS = {("test_prompt_with_arguments", "arg1"): ["paris", "park", "party", "test", "testing"]}


def _require_form(ctx: Ctx, what: str) -> None:
    if not declared(ctx.session.client_capabilities, ELICITATION):
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"{what} needs form elicitation",
            data={"requiredCapabilities": {"elicitation": {"form": {}}}},
        )


def _arguments(params: types.GetPromptRequestParams, *names: str) -> list[str]:
    given = params.arguments or {}
    missing = [n for n in names if not given.get(n)]
    if missing:
        raise MCPError(
            code=INVALID_PARAMS, message=f"prompt {params.name!r} needs the argument(s) {', '.join(missing)}"
        )
    return [given[n] for n in names]


async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS, ttl_ms=CACHE_TTL_MS, cache_scope="public")


async def get_prompt(
    ctx: Ctx, params: types.GetPromptRequestParams
) -> types.GetPromptResult | types.InputRequiredResult:
    name = params.name
    if name == "test_simple_prompt":
        return types.GetPromptResult(messages=[_user_text("This is a simple prompt for testing.")])
    if name == "test_prompt_with_arguments":
        arg1, arg2 = _arguments(params, "arg1", "arg2")
        return types.GetPromptResult(
            messages=[_user_text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]
        )
    if name == "test_prompt_with_embedded_resource":
        (uri,) = _arguments(params, "resourceUri")
        resource = types.TextResourceContents(
            uri=uri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return types.GetPromptResult(
            messages=[
                _user(types.EmbeddedResource(type="resource", resource=resource)),
                _user_text("Please process the embedded resource above."),
            ]
        )
    if name == "test_prompt_with_image":
        return types.GetPromptResult(
            messages=[
                _user(types.ImageContent(type="image", data=RED_PIXEL_PNG, mime_type="image/png")),
                _user_text("Please analyze the image above."),
            ]
        )
    if name == "test_input_required_result_prompt":
        _require_form(ctx, name)
        answer = (params.input_responses or {}).get("user_context")
        context = (
            answer.content.get("context")
            if isinstance(answer, types.ElicitResult) and answer.content
            else None
        )
        if not (
            isinstance(answer, types.ElicitResult) and answer.action == "accept" and isinstance(context, str)
        ):
            return ask(
                {"user_context": form("What context should the prompt use?", {"context": {"type": "string"}})}
            )
        return types.GetPromptResult(messages=[_user_text(f"Use this context: {context}")])
    raise MCPError(code=INVALID_PARAMS, message=f"unknown prompt {name!r}")


async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[
            types.Resource(
                uri=STATIC_TEXT_URI,
                name="static-text",
                description="Conformance: static text.",
                mime_type="text/plain",
            ),
            types.Resource(
                uri=STATIC_BINARY_URI,
                name="static-binary",
                description="Conformance: a 1x1 PNG.",
                mime_type="image/png",
            ),
        ],
        ttl_ms=CACHE_TTL_MS,
        cache_scope="public",
    )


async def list_resource_templates(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(
                uri_template=TEMPLATE,
                name="template-data",
                description="Conformance: data for an id.",
                mime_type="application/json",
            )
        ],
        ttl_ms=CACHE_TTL_MS,
        cache_scope="public",
    )


async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == STATIC_TEXT_URI:
        contents: list[types.TextResourceContents | types.BlobResourceContents] = [
            types.TextResourceContents(
                uri=uri, mime_type="text/plain", text="This is the content of the static text resource."
            )
        ]
    elif uri == STATIC_BINARY_URI:
        contents = [types.BlobResourceContents(uri=uri, mime_type="image/png", blob=RED_PIXEL_PNG)]
    elif (
        uri.startswith(_TEMPLATE_PREFIX)
        and uri.endswith(_TEMPLATE_SUFFIX)
        and "/" not in (ident := uri[len(_TEMPLATE_PREFIX) : -len(_TEMPLATE_SUFFIX)])
        and ident
    ):
        data = {"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}
        contents = [types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(data))]
    else:
        # 2026-07-28: an unknown resource is -32602 (never -32002), naming the uri (SEP-2164).
        raise MCPError(code=INVALID_PARAMS, message="Resource not found", data={"uri": uri})
    return types.ReadResourceResult(contents=contents, ttl_ms=CACHE_TTL_MS, cache_scope="public")


async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
    ref = params.ref
    key = (ref.name, params.argument.name) if isinstance(ref, types.PromptReference) else None
    prefix = params.argument.value
    values = [v for v in COMPLETIONS.get(key, []) if v.startswith(prefix)] if key else []
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))


def install_fixture_features(server: Server[Any]) -> None:
    """Register the test-only prompts, resources and completion on `server` (the `configure_server` hook)."""
    server.add_request_handler("prompts/list", types.PaginatedRequestParams, list_prompts)
    server.add_request_handler("prompts/get", types.GetPromptRequestParams, get_prompt)
    server.add_request_handler("resources/list", types.PaginatedRequestParams, list_resources)
    server.add_request_handler(
        "resources/templates/list", types.PaginatedRequestParams, list_resource_templates
    )
    server.add_request_handler("resources/read", types.ReadResourceRequestParams, read_resource)
    server.add_request_handler("completion/complete", types.CompleteRequestParams, complete)
