"""Validation of what the server sends a 2025-11-25 (initialize-handshake) client.

On a legacy session the server *does* send JSON-RPC requests (`elicitation/create`), so
`tests.schema.check_server_message` (2026-07-28, MRTR only) does not apply; every line is
checked against the official 2025-11-25 schema instead, by its kind.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SPEC = Path(__file__).resolve().parents[1] / "spec" / "schema-2025-11-25.json"
RESULTS = {"initialize": "InitializeResult", "tools/call": "CallToolResult", "tools/list": "ListToolsResult"}
REQUESTS = {"elicitation/create": "ElicitRequest"}
NOTIFICATIONS = {"notifications/elicitation/complete": "ElicitationCompleteNotification"}


@cache
def _validator(definition: str) -> Draft202012Validator:
    defs = json.loads(SPEC.read_text())["$defs"]
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": defs})


def _valid(value: Any, definition: str) -> None:
    errors = list(_validator(definition).iter_errors(value))
    assert not errors, f"not a valid 2025-11-25 {definition}: " + "; ".join(e.message for e in errors[:3])


def check_legacy_server_message(request_method: str | None, message: dict[str, Any]) -> None:
    _valid(message, "JSONRPCMessage")
    assert "resultType" not in message.get("result", {}), "no 2026 result shape on a legacy session"
    if "method" in message:
        definition = REQUESTS.get(message["method"]) or NOTIFICATIONS.get(message["method"])
        if definition:
            _valid(message, definition)
        assert "id" not in message or message["method"] in REQUESTS, message["method"]
    elif "result" in message and request_method in RESULTS:
        _valid(message["result"], RESULTS[request_method])


def check_legacy_recording(sent: Path, received: Path) -> list[dict[str, Any]]:
    """Validate every line the server wrote, matched to the client request that caused it."""
    methods = {}
    for line in sent.read_text().splitlines():
        message = json.loads(line)
        if "id" in message and "method" in message:
            methods[message["id"]] = message["method"]
    out = [json.loads(line) for line in received.read_text().splitlines()]
    assert out, "the server wrote nothing"
    for message in out:
        check_legacy_server_message(methods.get(message.get("id")), message)
    return out
