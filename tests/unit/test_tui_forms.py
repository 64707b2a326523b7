"""How `notewarden client` asks each kind of form field (rule 2 of client/tui.py)."""

from __future__ import annotations

import pytest

from notewarden.client.tui import field_question


def test_single_select_titled_enum_by_number() -> None:
    q = field_question(
        "color",
        {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
        True,
    )
    assert q.lines[1:] == ["  1) Red", "  2) Green"]
    assert q.parse("2") == "g"
    with pytest.raises(ValueError, match="from 1 to 2"):
        q.parse("3")
    with pytest.raises(ValueError, match="required"):
        q.parse("")


def test_multi_select_checks_min_and_max_items() -> None:
    schema = {
        "type": "array",
        "minItems": 1,
        "maxItems": 2,
        "items": {"type": "string", "enum": ["a", "b", "c"]},
    }
    q = field_question("tags", schema, False)
    assert q.parse("1, 3") == ["a", "c"]
    with pytest.raises(ValueError, match="between 1 and 2"):
        q.parse("1,2,3")


def test_boolean_default_and_optional_blank() -> None:
    q = field_question("ok", {"type": "boolean", "default": False}, True)
    assert q.prompt.endswith("[y/N]: ")
    assert q.parse("") is False and q.parse("Y") is True
    with pytest.raises(ValueError, match="y or n"):
        q.parse("maybe")


def test_numbers_respect_type_and_bounds() -> None:
    q = field_question("n", {"type": "integer", "minimum": 1, "maximum": 10}, True)
    assert "1..10" in q.prompt and q.parse("7") == 7
    for bad in ("0", "11", "2.5", "x"):
        with pytest.raises(ValueError):
            q.parse(bad)
    assert field_question("x", {"type": "number"}, False).parse("") is None


def test_strings_check_length_and_format() -> None:
    q = field_question("mail", {"type": "string", "format": "email", "maxLength": 20}, True)
    assert q.parse("a@b.example") == "a@b.example"
    with pytest.raises(ValueError, match="email"):
        q.parse("not-an-email")
    with pytest.raises(ValueError, match="at most 20"):
        q.parse("a" * 15 + "@b.example")
    assert field_question("d", {"type": "string", "format": "date"}, True).parse("2026-07-28") == "2026-07-28"
