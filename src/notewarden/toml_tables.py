"""TOML tables checked by pydantic, and the words of every configuration error.

Rule 1: a table is a frozen pydantic dataclass with `config=FORBID` (`extra="forbid"`), checked on its own
(`validate_table`) so that an error names it. An unknown key names the key, the table and the
allowed keys; a wrong value names the key, what is allowed (the field's description, or its
validator's words) and what was given: a number or a boolean as such, a string only as "a string"
(a token or a password may sit under the wrong key). A validator quotes a value only where it
cannot be a secret.
Rule 2: every field carries its description (`Field(description=...)` or one of the aliases here),
so that no error has to say less than what is allowed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator, ConfigDict, Field, Strict, StrictStr, TypeAdapter, ValidationError

__all__ = [
    "FORBID",
    "ConfigError",
    "Seconds",
    "String",
    "Table",
    "Tables",
    "Text",
    "Texts",
    "between",
    "must",
    "one_of",
    "validate_table",
]

T = TypeVar("T")


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the fix. `fix`, when given, is the
    command or the change that mends it: said after the problem ("…; fix: …"), and kept apart for
    `notewarden doctor`, which prints it on a line of its own."""

    def __init__(self, problem: str, *, fix: str = "") -> None:
        super().__init__(f"{problem}; fix: {fix}" if fix else problem)
        self.problem = problem
        self.fix = fix


FORBID = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
"""Every table's pydantic config (Rule 1): an unknown key is an error, never ignored."""


def must(test: Callable[[Any], object], problem: Callable[[Any], str]) -> Callable[[Any], Any]:
    """A validator: the value if `test(value)`, else a ValueError saying `problem(value)`."""

    def check(value: Any) -> Any:
        if not test(value):
            raise ValueError(problem(value))
        return value

    return check


def one_of(choices: tuple[str, ...], problem: str) -> BeforeValidator:
    """One of `choices`, else "<the value> <problem>" (a choice is never a secret)."""
    return BeforeValidator(
        must(lambda value: isinstance(value, str) and value in choices, lambda v: f"{v!r} {problem}")
    )


def between(low: float, high: float, what: str = "a number") -> Any:
    return Field(ge=low, le=high, description=f"{what} between {low:g} and {high:g}")


String = Annotated[StrictStr, Field(description="a string")]
Text = Annotated[StrictStr, Field(min_length=1, description="a non-empty string")]
Texts = Annotated[tuple[Text, ...], Field(description="a list of non-empty strings")]
Seconds = Annotated[float, Strict()]  # an int or a float, never a bool or a string
Table = Annotated[dict[str, Any] | None, Field(description="a table")]
Tables = Annotated[tuple[dict[str, Any], ...], Field(description="an array of tables")]


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}
"""One adapter per table class: building one costs ten times a validation."""


def validate_table(cls: type[T], value: object, where: str) -> T:
    """`value` as the table `cls`, or a `ConfigError` in the words of Rule 1."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    try:
        adapter = _ADAPTERS.get(cls) or _ADAPTERS.setdefault(cls, TypeAdapter(cls))
        table: T = adapter.validate_python(value)
    except ValidationError as exc:
        raise ConfigError(_explain(cls, exc, where)) from None
    return table


def _explain(cls: type[Any], exc: ValidationError, where: str) -> str:
    """The first problem of `exc`: the key, what is allowed, and what was given, never a given string."""
    errors = exc.errors(include_url=False)
    unknown = sorted(str(e["loc"][0]) for e in errors if e["type"] == "unexpected_keyword_argument")
    if unknown:
        allowed = sorted(f.name for f in dataclasses.fields(cls))
        return f"unknown key(s) {', '.join(unknown)} in {where}; allowed: {', '.join(allowed)}"
    error = errors[0]
    key, item = (str(error["loc"][0]) if error["loc"] else ""), error["loc"][1:]
    at = f"{where} {key}".strip() if where != "the top level" else key
    if error["type"] == "value_error":  # a validator's own words (Rule 1)
        problem = error["ctx"]["error"]
        return f"{at}: {problem}" if key else f"{where} {problem}"
    wanted = cls.__pydantic_fields__[key].description
    if error["type"] == "missing":
        return f"{where} needs {key}: {wanted}"
    given = _shown(error["input"])
    return f"{at} must be {wanted}; " + (f"item {int(item[0]) + 1} is {given}" if item else f"got {given}")


def _shown(value: object) -> str:
    """What was given, without the value when it is a string (a secret may sit under the wrong key)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    return "a list" if isinstance(value, list) else "a table" if isinstance(value, dict) else "a value"
