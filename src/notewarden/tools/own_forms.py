"""Every kind of elicitation this server can emit, checked by `forms.lint` at start-up.

Rule 1 (linted by construction): a builder of a form a tool emits is declared with `@linted(...)`
beside it, with the forms it builds at the extremes it allows (one option, and the most options a
tool will ever offer): the forms are built from live data (candidates, workspaces), so these
samples stand for all of them. `check_own_forms` lints every declared builder's samples, and a
failing check is a bug in this server, so `build_server` refuses to start. A `*_form` builder a
tool calls that is not declared fails `tests/unit/test_form_lint.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from notewarden.forms.lint import Problem, lint_form

__all__ = ["check_own_forms", "linted", "own_forms"]

Form = Mapping[str, Any]
Builder = TypeVar("Builder", bound=Callable[..., dict[str, Any]])
_SAMPLES: dict[str, Callable[[], Mapping[str, Form]]] = {}


def linted(samples: Callable[[Any], Mapping[str, Form]]) -> Callable[[Builder], Builder]:
    """Rule 1: declares the decorated form builder; `samples(builder)` builds its forms at the
    extremes (called at start-up, when every tool module is loaded: name -> `elicitation/create`)."""

    def declare(builder: Builder) -> Builder:
        _SAMPLES[f"{builder.__module__}.{builder.__qualname__}"] = lambda: samples(builder)
        return builder

    return declare


def own_forms() -> Mapping[str, Form]:
    """Name -> an `elicitation/create` request exactly as the tools build it."""
    from notewarden.tools import catalog  # noqa: F401  (every tool module, so every builder is declared)

    return {name: form for samples in _SAMPLES.values() for name, form in samples().items()}


def declared_builders() -> set[str]:
    """The declared builders' names (without their module), for the test that none is missing."""
    from notewarden.tools import catalog  # noqa: F401  (every tool module, so every builder is declared)

    return {name.rsplit(".", 1)[1] for name in _SAMPLES}


def check_own_forms() -> dict[str, list[Problem]]:
    """Problems per form; empty when every form passes."""
    found = {name: lint_form(form) for name, form in own_forms().items()}
    return {name: problems for name, problems in found.items() if problems}
