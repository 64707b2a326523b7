"""Fixtures of the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from notewarden.app import default_tools
from notewarden.config import parse_config
from notewarden.services import open_services
from notewarden.tools.registry import ToolDef


@pytest.fixture(scope="session")
def shipped_tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ToolDef]]:
    """Every tool the server ships, by name, built on services over an empty workspace."""
    base = tmp_path_factory.mktemp("shipped-tools")
    (base / "ws").mkdir()
    config = parse_config(
        {
            "state_dir": str(base / "state"),
            "workspace": [{"uri": f"file://{base / 'ws'}"}],
            "principal": [{"id": "alice", "workspaces": [f"file://{base / 'ws'}"]}],
        }
    )
    services = open_services(config)
    yield {t.tool.name: t for t in default_tools(services)}
    services.close()
