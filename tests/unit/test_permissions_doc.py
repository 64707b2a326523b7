"""docs/permissions.md's tool → right table is what the tools declare, and every right is used."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from notewarden.scope.rights import Right
from notewarden.tools.registry import ToolDef

DOC = Path(__file__).resolve().parents[2] / "docs" / "permissions.md"


@pytest.fixture
def declared(shipped_tools: dict[str, ToolDef]) -> dict[str, Right]:
    return {name: t.right for name, t in shipped_tools.items()}


def test_the_documented_table_is_the_declared_one(declared: dict[str, Right]) -> None:
    section = DOC.read_text(encoding="utf-8").split("## Tool → right", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(notes_\w+)` \| `(\w+)` \|", section, re.M)
    assert dict(rows) == {name: str(right) for name, right in declared.items()}
    assert len(rows) == len(declared), "a tool is listed twice"


def test_every_right_is_needed_by_some_tool(declared: dict[str, Right]) -> None:
    assert set(declared.values()) == set(Right)
