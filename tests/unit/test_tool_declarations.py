"""One way to declare a tool: `registry.declare` with `schemas.args` and `schemas.returns`."""

from __future__ import annotations

import pytest

from notewarden.scope.rights import Right
from notewarden.tools.notes_history import PURGE_WORDS
from notewarden.tools.notes_trash import EMPTY_WORDS
from notewarden.tools.registry import ADDS, READ_ONLY, ToolDef, declare
from notewarden.tools.schemas import args, returns

NOTHING = returns({}, [])


def test_arguments_are_a_closed_object_with_the_required_ones_first() -> None:
    schema = args({"a": {"type": "string"}}, {"b": {"type": "integer"}})
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert list(schema["properties"]) == ["a", "b"]


def test_a_result_cannot_promise_a_member_it_does_not_have() -> None:
    assert returns({"a": {"type": "string"}}, ["a"])["required"] == ["a"]
    with pytest.raises(ValueError, match="names a member"):
        returns({"a": {"type": "string"}}, ["a", "b"])


def test_every_shipped_tool_takes_no_argument_it_does_not_name(shipped_tools: dict[str, ToolDef]) -> None:
    for name, tool in shipped_tools.items():
        schema = tool.tool.input_schema
        assert schema["additionalProperties"] is False, name
        assert set(schema["required"]) <= schema["properties"].keys(), name
        assert tool.argument_problems({"notAnArgument": 1}), name


def test_a_tools_hints_follow_from_its_right(shipped_tools: dict[str, ToolDef]) -> None:
    for name, tool in shipped_tools.items():
        hints = tool.tool.annotations
        assert hints is not None and hints.title == tool.tool.title, name
        assert hints.read_only_hint is (tool.right is Right.READ), name
        assert hints.open_world_hint is (tool.right is Right.PUBLISH), name
        if tool.right in (Right.DELETE, Right.PURGE):
            assert hints.destructive_hint is True, name


def test_only_a_tool_needing_write_names_its_kind_of_write() -> None:
    with pytest.raises(ValueError, match="write right"):
        declare("notes_x", "X", "d", args({}), NOTHING, Right.READ, READ_ONLY)
    with pytest.raises(ValueError, match="write right"):
        declare("notes_x", "X", "d", args({}), NOTHING, Right.WRITE)
    written = declare("notes_x", "X", "d", args({}), NOTHING, Right.WRITE, ADDS)
    assert written.tool.annotations is not None and written.tool.annotations.read_only_hint is False
    assert written.right is Right.WRITE


def test_the_purges_keep_the_phases_their_sealed_confirmations_name() -> None:
    """A confirmation sealed before a release must still be answerable after it."""
    assert EMPTY_WORDS.phase == "notes_trash_empty/confirm"
    assert PURGE_WORDS.phase == "notes_history_purge/confirm"
