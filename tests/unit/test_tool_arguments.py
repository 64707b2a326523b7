"""Argument validation: the fastjsonschema fast path never passes what jsonschema would refuse.

`ToolDef.argument_problems` asks a compiled draft-7 check first and `jsonschema` (2020-12) only
when that check fails; these tests hold the fast path to the judge, on every shipped tool's real
`inputSchema`, with arguments made to sit on each keyword's edges.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from notewarden.scope.rights import Right
from notewarden.tools.registry import (
    ToolDef,
    ToolRegistry,
    declare,
    fast_validator,
    schema_problems,
)
from notewarden.tools.schemas import args, returns


@pytest.fixture
def tools(shipped_tools: dict[str, ToolDef]) -> dict[str, ToolDef]:
    return shipped_tools


def test_every_shipped_tool_takes_the_fast_path(tools: dict[str, ToolDef]) -> None:
    slow = [name for name, t in tools.items() if fast_validator(t.tool.input_schema) is None]
    assert slow == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}},
        {"$defs": {"s": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/s"}}},
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "object", "dependentRequired": {"a": ["b"]}},
        {"type": "object", "properties": {"deep": {"anyOf": [{"type": "string", "format": "uri"}]}}},
    ],
)
def test_keywords_read_differently_keep_jsonschema_alone(schema: dict[str, Any]) -> None:
    assert fast_validator(schema) is None


EDGE_STRINGS = ["", " ", "\t\n", "x", "a" * 200, "a" * 201, "a" * 4096, "a" * 4097, "file:///ws", "ü" * 3]
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 300)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0, 1, 1.0, 2.5, -1, 100, 101, 1000, 1001])
    | st.sampled_from(EDGE_STRINGS)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=27) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=30,
)


@st.composite
def arguments(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    names = [*schema.get("properties", {}), "unexpected"]
    keys = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    out = {}
    for key in keys:
        sub = schema.get("properties", {}).get(key, {})
        if sub.get("type") == "array" and draw(st.booleans()):  # lists of the right item type
            item = st.sampled_from(EDGE_STRINGS) if sub.get("items", {}).get("type") == "string" else values
            out[key] = draw(st.lists(item, max_size=27))
        elif "enum" in sub and draw(st.booleans()):
            out[key] = draw(st.sampled_from(sub["enum"]))
        else:
            out[key] = draw(values)
    return out


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=st.data())
def test_the_fast_path_agrees_with_jsonschema(tools: dict[str, ToolDef], data: st.DataObject) -> None:
    for name, tool in sorted(tools.items()):
        schema = tool.tool.input_schema
        args = data.draw(arguments(schema), label=name)
        expected = schema_problems(Draft202012Validator(schema), args)  # jsonschema alone
        assert tool.argument_problems(args) == expected, (name, args)


def test_the_sdk_gets_a_schema_to_check_mcp_param_headers_against_only_where_a_tool_declares_one(
    tools: dict[str, ToolDef],
) -> None:
    handler = next(iter(tools.values())).handler  # never called

    routed = args({"workspaceUri": {"type": "string", "x-mcp-header": "Workspace"}})
    plain = args({"workspaceUri": {"type": "string"}})
    nothing = returns({}, [])
    registry = ToolRegistry(
        [
            declare("routed", "Routed", "d", routed, nothing, Right.READ).served_by(handler),
            declare("plain", "Plain", "d", plain, nothing, Right.READ).served_by(handler),
        ]
    )
    assert registry.input_schema("routed") == routed
    assert registry.input_schema("plain") is None  # nothing a client may mirror into a header
    assert registry.input_schema("unknown") is None
    shipped = ToolRegistry(tools.values())
    assert [name for name in tools if shipped.input_schema(name) is not None] == []
