"""The wheel as a user installs it: built from this tree, installed into a fresh venv, run from there.

One venv for the module (the slow part is the install). It checks what issue 16 and 17 ask of the
packaging: the wheel pulls only runtime dependencies, those resolve inside the runtime lock file,
every module notewarden imports is declared, and `notewarden --help` and the demo run from it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PIP = ["--quiet", "--disable-pip-version-check", "--require-virtualenv"]


def run(argv: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def locked(name: str) -> dict[str, str]:
    lines = (ROOT / "requirements" / name).read_text().splitlines()
    pins = (line.split("==") for line in lines if re.match(r"[A-Za-z0-9]", line))
    return {normalize(n): v for n, v in pins}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, library_wheel: Path) -> Iterator[Path]:
    """A fresh venv with only the wheel and what it pulls, constrained to the runtime lock; the
    confirmation library it requires is this checkout's (packages/notewarden-confirm), not an index's."""
    work = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", *PIP[:2], "--no-deps", "-w", work / "dist", ROOT])
    [wheel] = (work / "dist").glob("notewarden-0*.whl")
    venv.create(work / "venv", with_pip=True)
    python = work / "venv" / "bin" / "python"
    lock = ROOT / "requirements" / "runtime.txt"
    run([python, "-m", "pip", "install", *PIP, "-c", lock, library_wheel, wheel])
    yield work / "venv" / "bin"


def test_the_wheel_pulls_only_locked_runtime_dependencies(installed: Path) -> None:
    frozen = run([installed / "python", "-m", "pip", "freeze", "--all"]).stdout.splitlines()
    assert any(line.startswith("notewarden @ file:") for line in frozen), frozen
    have = {normalize(n): v for n, v in (line.split("==") for line in frozen if "==" in line)}
    tools = {"pip", "setuptools", "wheel"}
    runtime = locked("runtime.txt")
    assert any(line.startswith("notewarden-confirm @ file:") for line in frozen), frozen
    assert {n: v for n, v in have.items() if n not in tools} == runtime, "installed set differs from the lock"
    for test_only in ("pytest", "playwright", "mypy", "fastmcp", "matplotlib", "psycopg"):
        assert test_only not in have
    assert runtime.items() <= locked("dev.txt").items(), "the dev lock must hold the runtime versions"


def test_help_and_demo_run_from_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    help_text = run([installed / "notewarden", "--help"]).stdout
    for command in ("serve", "init", "token", "doctor", "client", "demo"):
        assert command in help_text
    demo = run([installed / "notewarden", "demo", "--dir", tmp_path], timeout=180, cwd=tmp_path).stdout
    assert "8. The person picks “TPS report 2019 (old)” and confirms" in demo
    assert "Notes left in the workspace: meetings/standup.md, reports/tps-2026-q3.md, todo.md." in demo


def test_without_the_semantic_extra_search_is_by_words_and_says_why(installed: Path, tmp_path: Path) -> None:
    """Issue 25: the wheel alone (no `notewarden[semantic]`) answers searches by words, and the mode
    says so and how to get meaning; nothing of the extra is imported or installed."""
    said = run(
        [
            installed / "python",
            "-c",
            "from notewarden.embeddings import SearchSettings, open_search_mode\n"
            "mode = open_search_mode(SearchSettings())\n"
            "print(mode.mode, mode.embedder, mode.reason, sep='|')",
        ],
        cwd=tmp_path,
    ).stdout.strip()
    assert said == "lexical|None|the semantic extra is not installed: pip install 'notewarden[semantic]'", (
        said
    )


def declared() -> dict[str, Requirement]:
    """What pyproject.toml declares for the runtime and the postgres, semantic and testing extras."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    texts = project["dependencies"] + extras["postgres"] + extras["semantic"] + extras["testing"]
    found = {normalize(req.name): req for req in map(Requirement, texts)}
    found.pop("notewarden-confirm")  # built from this checkout, pinned exactly (test_library.py)
    return found


def test_every_imported_distribution_is_declared() -> None:
    """Issue 17: a module notewarden imports comes from a distribution pyproject.toml names."""
    imported = set()
    for source in (ROOT / "src" / "notewarden").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    stdlib = set(sys.stdlib_module_names) | {"notewarden", "__future__"}
    owners = importlib.metadata.packages_distributions()
    undeclared = {
        module: owners.get(module)
        for module in imported - stdlib
        if not {normalize(d) for d in owners.get(module, [])} & declared().keys()
    }
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_declared_versions_are_ranges_that_hold_the_locked_ones() -> None:
    """Issue 17: a range (a floor, no pin), so notewarden installs next to a server author's own pins;
    the versions every machine installs (the lock files) lie inside it."""
    locks = locked("dev.txt")
    for name, req in declared().items():
        operators = {spec.operator for spec in req.specifier}
        assert ">=" in operators and not operators & {"==", "==="}, f"{req}: give a range, not a pin"
        assert req.specifier.contains(locks[name]), f"locked {name}=={locks[name]} is outside {req}"
