"""docs/permissions.md's tool → right table is what the tools declare, and every right is used."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.app import default_tools
from notewarden.config import parse_config
from notewarden.scope.rights import Right
from notewarden.services import open_services

DOC = Path(__file__).resolve().parents[2] / "docs" / "permissions.md"


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Right]]:
    base = tmp_path_factory.mktemp("permissions")
    (base / "ws").mkdir()
    config = parse_config(
        {
            "state_dir": str(base / "state"),
            "workspace": [{"uri": f"file://{base / 'ws'}"}],
            "principal": [{"id": "alice", "workspaces": [f"file://{base / 'ws'}"]}],
        }
    )
    services = open_services(config)
    yield {t.tool.name: t.right for t in default_tools(services)}
    services.close()


def test_the_documented_table_is_the_declared_one(declared: dict[str, Right]) -> None:
    section = DOC.read_text(encoding="utf-8").split("## Tool → right", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(notes_\w+)` \| `(\w+)` \|", section, re.M)
    assert dict(rows) == {name: str(right) for name, right in declared.items()}
    assert len(rows) == len(declared), "a tool is listed twice"


def test_every_right_is_needed_by_some_tool(declared: dict[str, Right]) -> None:
    assert set(declared.values()) == set(Right)
