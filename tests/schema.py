"""Validation of every message the server emits against the official 2026-07-28 JSON schema.

`check_server_message(method, message)` picks the schema definition from the request's
method and the message's shape, validates, and asserts the rules the schema leaves to
prose (spec open point O-7): `resultType` is one of the two core values, an
`input_required` result carries `inputRequests` or `requestState` and no cache hints.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

_HERE = Path(__file__).resolve().parent
_SPEC_DIRS = (_HERE / "spec", _HERE.parents[1] / "shared" / "spec")

RESPONSE_DEFINITION = {
    "server/discover": "DiscoverResultResponse",
    "tools/list": "ListToolsResultResponse",
    "tools/call": "CallToolResultResponse",
    "resources/list": "ListResourcesResultResponse",
    "resources/templates/list": "ListResourceTemplatesResultResponse",
    "resources/read": "ReadResourceResultResponse",
    "prompts/list": "ListPromptsResultResponse",
    "prompts/get": "GetPromptResultResponse",
    "completion/complete": "CompleteResultResponse",
}
ERROR_DEFINITION = {
    -32700: "ParseError",
    -32600: "InvalidRequestError",
    -32601: "MethodNotFoundError",
    -32602: "InvalidParamsError",
    -32603: "InternalError",
    -32020: "HeaderMismatchError",
    -32021: "MissingRequiredClientCapabilityError",
    -32022: "UnsupportedProtocolVersionError",
}
ENVELOPE_ERRORS = {
    "HeaderMismatchError",
    "MissingRequiredClientCapabilityError",
    "UnsupportedProtocolVersionError",
}
FORBIDDEN_CODES = {-32002, -32042}


def _load(name: str) -> dict[str, Any]:
    for directory in _SPEC_DIRS:
        if (directory / name).exists():
            return json.loads((directory / name).read_text())
    raise FileNotFoundError(f"{name} not found in {', '.join(map(str, _SPEC_DIRS))}")


SCHEMA = _load("schema-2026-07-28.json")


@cache
def validator_for(definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": SCHEMA["$defs"]})


def assert_valid(message: Any, definition: str) -> None:
    errors = sorted(validator_for(definition).iter_errors(message), key=lambda e: list(e.absolute_path))
    assert not errors, f"not a valid {definition}: " + "; ".join(
        f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]
    )


def check_server_message(method: str | None, message: dict[str, Any]) -> None:
    """Validate one message the server sent in answer to a request of `method`."""
    assert_valid(message, "JSONRPCMessage")
    if "method" in message:
        assert "id" not in message, "the server must never send a JSON-RPC request (MRTR only)"
        assert_valid(message, "JSONRPCNotification")
        if message["method"] == "notifications/progress":
            assert_valid(message, "ProgressNotification")
        return
    if "error" in message:
        code = message["error"]["code"]
        assert code not in FORBIDDEN_CODES, f"error code {code} must not be emitted"
        assert not (-32099 <= code <= -32020) or code in ERROR_DEFINITION, f"undefined reserved code {code}"
        assert_valid(message, "JSONRPCErrorResponse")
        definition = ERROR_DEFINITION.get(code)
        if definition in ENVELOPE_ERRORS:
            assert_valid(message, definition)
        elif definition is not None:
            assert_valid(message["error"], definition)
        return
    result = message["result"]
    assert result.get("resultType") in ("complete", "input_required"), result.get("resultType")
    if result["resultType"] == "input_required":
        assert "inputRequests" in result or "requestState" in result
        assert "ttlMs" not in result and "cacheScope" not in result
        assert method in ("tools/call", "resources/read", "prompts/get"), f"input_required on {method}"
        assert_valid(result, "InputRequiredResult")
    if method in RESPONSE_DEFINITION:
        assert_valid(message, RESPONSE_DEFINITION[method])
    if method == "tools/call" and result["resultType"] == "complete":
        assert_valid(result, "CallToolResult")
