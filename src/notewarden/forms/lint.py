"""`lint-form`: check an elicitation form against what a 2026-07-28 client can render safely.

Rules, each reported with the JSON pointer of the offending value:

1. **Shape** (`shape`): `requestedSchema` is a flat `{type: "object", properties, required?}`
   whose every property is one `PrimitiveSchemaDefinition` of the official schema (string,
   number/integer, boolean, single- or multi-select enum). Nested objects, arrays of
   anything but enum strings, and JSON Schema keywords outside the subset are refused: the
   definitions come from the official schema, shipped with the package
   (`elicitation-2026-07-28.schema.json`), never from a hand-written list.
2. **Secrets** (`secret`): a field whose name, title or description asks for a password,
   token, API key, private key, payment card, CVV, bank or social-security number belongs
   in URL mode, never in a form (spec ELIC-1).
3. **Required** (`required`): a form without `required` accepts an empty answer as valid;
   state the needed fields (or `[]` on purpose). Every listed name must be a property.
4. **Choices** (`choices`): an enum needs at least one option, no duplicates, and at most
   `max_choices` options (a longer list does not fit a dialog: narrow it first).
5. **Links** (`link`): no clickable URL in a title or description (spec ELIC-10).

The input may be the `requestedSchema` itself, the `elicitation/create` params, or the
whole request (`{method, params}`, as in an `inputRequests` value).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

__all__ = ["DEFAULT_MAX_CHOICES", "Problem", "lint_form", "lint_requested_schema", "run_lint_form"]

DEFAULT_MAX_CHOICES = 25
_SCHEMA_FILE = "elicitation-2026-07-28.schema.json"

_SECRET_WORDS = re.compile(
    r"\b("
    r"pass ?words?|passwd|pass ?phrases?|pass ?codes?|pin codes?|pin numbers?|otp|one time (pass)?codes?|"
    r"secrets?|client secrets?|tokens?|access tokens?|refresh tokens?|bearer|"
    r"api ?keys?|access keys?|private keys?|secret keys?|signing keys?|credentials?|"
    r"credit cards?|debit cards?|card numbers?|cvv2?|cvc2?|csc|security codes?|"
    r"iban|bank accounts?|account numbers?|routing numbers?|sort codes?|"
    r"ssn|social security( numbers?)?|tax ids?"
    r")\b"
)
_URL = re.compile(r"\b(?:https?|ftp|file|javascript|data):[^\s]*", re.IGNORECASE)
_WORD_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-.]+")


@dataclass(frozen=True, slots=True)
class Problem:
    pointer: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.rule}: {self.message}"


@cache
def _definitions() -> Mapping[str, Any]:
    text = resources.files("notewarden.forms").joinpath(_SCHEMA_FILE).read_text(encoding="utf-8")
    definitions: Mapping[str, Any] = json.loads(text)["$defs"]
    return definitions


@cache
def _validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": _definitions()})


def _pointer(*parts: object) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def lint_form(document: Any, *, max_choices: int = DEFAULT_MAX_CHOICES) -> list[Problem]:
    """Every problem in a form given as a requestedSchema, elicitation params, or a whole request."""
    if isinstance(document, Mapping) and "method" in document:
        if document["method"] != "elicitation/create":
            return [Problem("/method", "shape", f"expected elicitation/create, got {document['method']!r}")]
        return [_under("/params", p) for p in _lint_params(document.get("params"), max_choices)]
    if isinstance(document, Mapping) and ("requestedSchema" in document or "mode" in document):
        return _lint_params(document, max_choices)
    return lint_requested_schema(document, max_choices=max_choices)


def _under(prefix: str, problem: Problem) -> Problem:
    return Problem(prefix + problem.pointer, problem.rule, problem.message)


def _lint_params(params: Any, max_choices: int) -> list[Problem]:
    if not isinstance(params, Mapping):
        return [Problem("", "shape", "elicitation params must be an object with message and requestedSchema")]
    if params.get("mode") == "url":
        return [_shape_problem(e) for e in _validator("ElicitRequestURLParams").iter_errors(dict(params))]
    problems = [
        _shape_problem(e)
        for e in _validator("ElicitRequestFormParams").iter_errors(dict(params))
        if e.validator == "required" or (e.path and e.path[0] in ("message", "mode"))
    ]
    if not problems and not str(params["message"]).strip():
        problems.append(Problem("/message", "shape", "message is empty; say what the user is asked and why"))
    if "requestedSchema" in params:
        problems += [
            _under("/requestedSchema", p)
            for p in lint_requested_schema(params["requestedSchema"], max_choices=max_choices)
        ]
    return problems


def lint_requested_schema(schema: Any, *, max_choices: int = DEFAULT_MAX_CHOICES) -> list[Problem]:
    if not isinstance(schema, Mapping):
        return [
            Problem("", "shape", "requestedSchema must be an object {type: 'object', properties, required}")
        ]
    problems: list[Problem] = []
    allowed_top = {"$schema", "type", "properties", "required"}
    problems += [
        Problem(
            _pointer(k),
            "shape",
            f"keyword {k!r} is not allowed at the top of a form; allowed: " + ", ".join(sorted(allowed_top)),
        )
        for k in sorted(set(schema) - allowed_top)
    ]
    if schema.get("type") != "object":
        problems.append(Problem("/type", "shape", f"type must be 'object', got {schema.get('type')!r}"))
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        problems.append(Problem("/properties", "shape", "properties must be an object of form fields"))
        properties = {}
    for name, field in properties.items():
        problems += [
            _under(_pointer("properties", name), p) for p in _lint_field(str(name), field, max_choices)
        ]
    problems += _lint_required(schema, properties)
    return problems


def _lint_required(schema: Mapping[str, Any], properties: Mapping[str, Any]) -> list[Problem]:
    if "required" not in schema:
        return [
            Problem(
                "/required",
                "required",
                "no required list: an accept with empty content would be a valid answer; list the fields "
                f"the answer needs (of {', '.join(properties) or 'none'}), or write [] if none is",
            )
        ]
    required = schema["required"]
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return [Problem("/required", "shape", "required must be a list of property names")]
    return [
        Problem(_pointer("required", i), "required", f"{name!r} is required but is not a property")
        for i, name in enumerate(required)
        if name not in properties
    ]


def _lint_field(name: str, field: Any, max_choices: int) -> list[Problem]:
    if not isinstance(field, Mapping):
        return [Problem("", "shape", "a form field must be an object such as {type: 'string'}")]
    definition, problems = _classify(field)
    if definition is not None:
        allowed = set(_definitions()[definition]["properties"])
        problems += [
            Problem(
                _pointer(k),
                "shape",
                f"keyword {k!r} is not part of the 2026-07-28 form subset for this field; "
                f"allowed here: {', '.join(sorted(allowed))}",
            )
            for k in sorted(set(field) - allowed)
        ]
    problems += _secret_problems(name, field)
    problems += _choice_problems(field, max_choices)
    problems += _link_problems(field)
    return problems


def _classify(field: Mapping[str, Any]) -> tuple[str | None, list[Problem]]:
    """The one definition this field is meant to be, and its schema errors against it."""
    kind = field.get("type")
    if kind == "object" or "properties" in field:
        return None, [
            Problem("", "shape", "nested objects are not allowed: flatten this into top-level fields")
        ]
    if kind == "array":
        items = field.get("items")
        definition = (
            "TitledMultiSelectEnumSchema"
            if isinstance(items, Mapping) and "anyOf" in items
            else "UntitledMultiSelectEnumSchema"
        )
        if not isinstance(items, Mapping) or not ({"anyOf", "enum"} & set(items)):
            return None, [
                Problem(
                    "/items",
                    "shape",
                    "arrays are allowed only as multi-select enums: items must be "
                    "{type: 'string', enum: [...]} or {anyOf: [{const, title}, ...]}",
                )
            ]
    elif kind == "string" and "oneOf" in field:
        definition = "TitledSingleSelectEnumSchema"
    elif kind == "string" and "enumNames" in field:
        definition = "LegacyTitledEnumSchema"
    elif kind == "string" and "enum" in field:
        definition = "UntitledSingleSelectEnumSchema"
    else:
        definition = {
            "string": "StringSchema",
            "number": "NumberSchema",
            "integer": "NumberSchema",
            "boolean": "BooleanSchema",
        }.get(kind if isinstance(kind, str) else "", "")
        if not definition:
            return None, [
                Problem(
                    "/type",
                    "shape",
                    f"type {kind!r} is not a form field type; use string, number, integer, boolean, "
                    "or array (multi-select enum)",
                )
            ]
    return definition, [_shape_problem(e) for e in _validator(definition).iter_errors(dict(field))]


def _shape_problem(error: Any) -> Problem:
    if error.validator == "required" and isinstance(error.instance, Mapping):
        missing = [k for k in error.validator_value if k not in error.instance]
        if missing:  # point at what is missing, not at its parent
            return Problem(_pointer(*error.absolute_path, missing[0]), "shape", f"{missing[0]!r} is required")
    return Problem(_pointer(*error.absolute_path), "shape", error.message)


def _words(text: str) -> str:
    return " ".join(_WORD_BREAK.sub(" ", text).lower().split())


def _secret_problems(name: str, field: Mapping[str, Any]) -> list[Problem]:
    problems = []
    for key, text in (("", name), ("/title", field.get("title")), ("/description", field.get("description"))):
        if not isinstance(text, str):
            continue
        found = _SECRET_WORDS.search(_words(text))
        if found:
            where = "name" if not key else key[1:]
            problems.append(
                Problem(
                    key,
                    "secret",
                    f"the field's {where} asks for {found.group(0)!r}: passwords, tokens, keys and payment "
                    "data must not pass through the client; collect them in URL mode on your own page",
                )
            )
    if field.get("format") == "password" or field.get("writeOnly") is True:
        problems.append(Problem("/format", "secret", "a password-like field belongs in URL mode, not a form"))
    return problems


def _options(field: Mapping[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    items = field.get("items")
    for key, value in (("/enum", field.get("enum")), ("/oneOf", field.get("oneOf"))):
        if isinstance(value, list):
            yield key, value
    if isinstance(items, Mapping):
        for key, value in (("/items/enum", items.get("enum")), ("/items/anyOf", items.get("anyOf"))):
            if isinstance(value, list):
                yield key, value


def _choice_problems(field: Mapping[str, Any], max_choices: int) -> list[Problem]:
    problems = []
    for key, options in _options(field):
        values = [o.get("const") if isinstance(o, Mapping) else o for o in options]
        if not values:
            problems.append(Problem(key, "choices", "the choice list is empty; the user could not answer"))
        if len(values) > max_choices:
            problems.append(
                Problem(
                    key,
                    "choices",
                    f"{len(values)} options do not fit a dialog (at most {max_choices}); narrow the choice "
                    "before asking (a search term, a folder) or split it into steps",
                )
            )
        seen: set[str] = set()
        for i, value in enumerate(values):
            if isinstance(value, str) and value in seen:
                problems.append(Problem(f"{key}/{i}", "choices", f"option {value!r} is listed twice"))
            if isinstance(value, str):
                seen.add(value)
    return problems


def _link_problems(field: Mapping[str, Any]) -> list[Problem]:
    texts: list[tuple[str, Any]] = [
        ("/title", field.get("title")),
        ("/description", field.get("description")),
    ]
    for key, options in _options(field):
        texts += [
            (f"{key}/{i}/title", o.get("title")) for i, o in enumerate(options) if isinstance(o, Mapping)
        ]
    return [
        Problem(key, "link", f"{text!r} contains a URL; forms must not carry clickable links (use URL mode)")
        for key, text in texts
        if isinstance(text, str) and _URL.search(text)
    ]


def run_lint_form(path: str, *, max_choices: int = DEFAULT_MAX_CHOICES) -> int:
    """The `notewarden lint-form` command: 0 clean, 1 problems found, 2 unreadable input."""
    import sys

    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except OSError as exc:
        print(f"notewarden lint-form: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except (ValueError, RecursionError) as exc:
        print(f"notewarden lint-form: {path} is not JSON: {exc}", file=sys.stderr)
        return 2
    problems = lint_form(document, max_choices=max_choices)
    for problem in problems:
        print(f"{path}:{problem}")
    count = len(problems)
    print(f"{path}: {count} problem{'s' if count != 1 else ''}" if count else f"{path}: ok", file=sys.stderr)
    return 1 if problems else 0
