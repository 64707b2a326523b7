"""server.json, the MCP Registry entry, against the registry's published schema (a pinned copy).

tests/spec/server.schema-2025-09-29.json is docs/reference/server-json/server.schema.json of
modelcontextprotocol/registry at commit 7c0bbf25bcdf794c4622afbf1b72b99d0281ca6b, byte for byte.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from jsonschema import Draft7Validator

from notewarden.version import __version__

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "tests" / "spec" / "server.schema-2025-09-29.json"


def test_server_json_is_valid_for_the_registry() -> None:
    schema = json.loads(SCHEMA.read_text())
    entry = json.loads((ROOT / "server.json").read_text())
    assert entry["$schema"] == schema["$id"]
    errors = sorted(
        Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER).iter_errors(entry), key=str
    )
    assert not errors, [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def test_server_json_names_this_release_and_how_to_start_it() -> None:
    entry = json.loads((ROOT / "server.json").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [package] = entry["packages"]
    assert entry["version"] == package["version"] == project["version"] == __version__
    assert package["identifier"] == project["name"]
    assert [a.get("value") or a.get("name") for a in package["packageArguments"]] == ["serve", "--workspace"]
    # the registry checks PyPI ownership by this line in the package's README
    assert f"mcp-name: {entry['name']}" in (ROOT / "README.md").read_text()


def test_the_validator_rejects_a_broken_entry() -> None:
    schema = json.loads(SCHEMA.read_text())
    broken = {"name": "no-slash", "description": "", "version": "1"}
    assert len(list(Draft7Validator(schema).iter_errors(broken))) >= 2
