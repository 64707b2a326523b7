"""`notewarden lint-form`: the 2026-07-28 form subset, secrets, required, choices, links."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from notewarden.forms.lint import lint_form
from notewarden.tools.own_forms import check_own_forms, declared_builders, own_forms

SPEC = Path(__file__).resolve().parents[1] / "spec" / "schema-2026-07-28.json"


def problems(schema: Any, **kwargs: Any) -> set[tuple[str, str]]:
    return {(p.pointer, p.rule) for p in lint_form(schema, **kwargs)}


def form(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": sorted(properties)}


def test_the_shipped_definitions_are_the_official_ones() -> None:
    shipped = json.loads(
        resources.files("notewarden.forms").joinpath("elicitation-2026-07-28.schema.json").read_text()
    )["$defs"]
    official = json.loads(SPEC.read_text())["$defs"]
    assert shipped == {name: official[name] for name in shipped}
    assert "PrimitiveSchemaDefinition" in shipped and len(shipped) == 11


def test_every_form_the_server_emits_is_clean() -> None:
    assert len(own_forms()) >= 9
    assert check_own_forms() == {}


@pytest.mark.parametrize(
    "field",
    [
        {"type": "string", "minLength": 1, "maxLength": 9, "format": "email", "default": "a@b.c"},
        {"type": "integer", "minimum": 0, "maximum": 5},
        {"type": "boolean", "default": False},
        {"type": "string", "enum": ["a", "b"]},
        {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
        {"type": "array", "minItems": 1, "items": {"type": "string", "enum": ["x", "y"]}},
        {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
    ],
)
def test_every_primitive_kind_is_accepted(field: dict[str, Any]) -> None:
    assert lint_form(form(choice=field)) == []


@pytest.mark.parametrize(
    ("field", "pointer"),
    [
        ({"type": "object", "properties": {"x": {"type": "string"}}}, "/properties/f"),
        ({"type": "array", "items": {"type": "object"}}, "/properties/f/items"),
        ({"type": "string", "pattern": "x"}, "/properties/f/pattern"),
        ({"type": "string", "format": "hostname"}, "/properties/f/format"),
        ({"type": "null"}, "/properties/f/type"),
        ({"type": "integer", "minimum": "0"}, "/properties/f/minimum"),
    ],
)
def test_outside_the_subset_is_a_shape_problem_with_its_pointer(field: dict[str, Any], pointer: str) -> None:
    assert (pointer, "shape") in problems(form(f=field))


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("password", {"type": "string"}),
        ("apiKey", {"type": "string"}),
        ("api_key", {"type": "string"}),
        ("x", {"type": "string", "title": "Access token"}),
        ("x", {"type": "string", "description": "Your credit card number"}),
        ("cvv", {"type": "string"}),
        ("ssn", {"type": "string"}),
        ("clientSecret", {"type": "string"}),
    ],
)
def test_secret_fields_belong_in_url_mode(name: str, field: dict[str, Any]) -> None:
    assert "secret" in {rule for _, rule in problems(form(**{name: field}))}


@pytest.mark.parametrize("name", ["title", "note_id", "confirm", "workspace", "passage", "tokenizer_name"])
def test_ordinary_fields_are_not_secrets(name: str) -> None:
    assert "secret" not in {rule for _, rule in problems(form(**{name: {"type": "string"}}))}


def test_required_missing_unknown_and_empty_list() -> None:
    assert ("/required", "required") in problems({"type": "object", "properties": {"a": {"type": "string"}}})
    assert ("/required/0", "required") in problems(
        {"type": "object", "properties": {}, "required": ["ghost"]}
    )
    assert lint_form({"type": "object", "properties": {"a": {"type": "string"}}, "required": []}) == []


def test_choice_lists_too_long_empty_or_duplicated() -> None:
    long = form(f={"type": "string", "enum": [str(i) for i in range(26)]})
    assert ("/properties/f/enum", "choices") in problems(long)
    assert problems(long, max_choices=30) == set()
    assert ("/properties/f/enum", "choices") in problems(form(f={"type": "string", "enum": []}))
    assert ("/properties/f/enum/1", "choices") in problems(form(f={"type": "string", "enum": ["a", "a"]}))


def test_links_in_titles_are_flagged() -> None:
    linked = form(f={"type": "string", "oneOf": [{"const": "a", "title": "see https://evil.example"}]})
    assert ("/properties/f/oneOf/0/title", "link") in problems(linked)


def test_request_and_params_shapes_prefix_the_pointer() -> None:
    request = {
        "method": "elicitation/create",
        "params": {"message": "m", "requestedSchema": form(password={"type": "string"})},
    }
    assert ("/params/requestedSchema/properties/password", "secret") in problems(request)
    assert ("/message", "shape") in problems({"requestedSchema": form()})


def run(tmp_path: Path, content: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "form.json"
    path.write_text(content)
    return subprocess.run(
        [sys.executable, "-m", "notewarden", "lint-form", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_exit_status_for_ci(tmp_path: Path) -> None:
    clean = run(tmp_path, json.dumps(form(name={"type": "string"})))
    assert (clean.returncode, clean.stdout) == (0, "")
    dirty = run(tmp_path, json.dumps(form(password={"type": "string"})))
    assert dirty.returncode == 1
    assert dirty.stdout.startswith(f"{tmp_path / 'form.json'}:/properties/password: secret: ")
    assert run(tmp_path, "{not json").returncode == 2
    missing = subprocess.run(
        [sys.executable, "-m", "notewarden", "lint-form", str(tmp_path / "nope.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_every_form_builder_a_tool_calls_is_declared_for_the_start_up_check() -> None:
    """`own_forms` Rule 1: a builder a tool calls (`*_form(...)`) is declared with `@linted` beside
    it, or its forms would never be linted. A builder's own body is not a tool's call:
    `trash_empty_form` words the library's `yes_no_form` frame, and is itself declared."""
    tools = Path(__file__).resolve().parents[2] / "src" / "notewarden" / "tools"

    def builders_called(source: Path) -> set[str]:
        tree = ast.parse(source.read_text(encoding="utf-8"))
        inside_builders = {
            id(node)
            for builder in ast.walk(tree)
            if isinstance(builder, ast.FunctionDef) and builder.name.endswith("_form")
            for node in ast.walk(builder)
        }
        return {
            node.func.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id.endswith("_form")
            and id(node) not in inside_builders
        }

    called = set().union(*(builders_called(p) for p in tools.glob("*.py") if p.name != "own_forms.py"))
    assert called >= {
        "delete_form",
        "delete_set_form",
        "trash_empty_form",
        "history_purge_form",
        "connect_form",
    }, "the scanner sees the tools' calls"
    assert called <= declared_builders(), called - declared_builders()
