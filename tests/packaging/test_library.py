"""The confirmation library as its own distribution, `notewarden-confirm` (issue 28), as an author
installs it: its wheel holds the library's five units and nothing of the server, declares exactly
what the library imports, and, installed alone in a fresh venv, adds nothing beyond the SDK's own
dependencies (cryptography among them); the page's complete server (docs/confirm-library.md) then
runs from that venv over stdio.

One venv for the module, like test_wheel.py: the install is the slow part.
"""

from __future__ import annotations

import ast
import email.parser
import importlib.metadata
import json
import re
import sqlite3
import sys
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest
from packaging.requirements import Requirement

import notewarden.confirm
from tests.examples.test_docs import blocks, outcome, shop_server
from tests.packaging.test_wheel import PIP, normalize, run

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "packages" / "notewarden-confirm"
SOURCES = LIBRARY / "src" / "notewarden"
UNITS = {"confirm", "ledger", "schema", "faults", "display"}
TOOLS = {"pip", "setuptools", "wheel"}


def project(path: Path) -> dict[str, object]:
    return tomllib.loads(path.read_text())["project"]  # type: ignore[no-any-return]


def declared() -> dict[str, list[Requirement]]:
    """The library's requirements: "" for the dependencies, else the extra's name."""
    library = project(LIBRARY / "pyproject.toml")
    found = {"": [Requirement(r) for r in library["dependencies"]]}  # type: ignore[attr-defined]
    for extra, reqs in library["optional-dependencies"].items():  # type: ignore[attr-defined]
        found[extra] = [Requirement(r) for r in reqs]
    return found


def test_one_version_for_the_library_its_api_and_notewarden_s_pin() -> None:
    """The distribution's version is `API_VERSION`, and notewarden requires exactly it (both are
    built from this checkout)."""
    version = project(LIBRARY / "pyproject.toml")["version"]
    assert version == notewarden.confirm.API_VERSION
    pins = [Requirement(r) for r in project(ROOT / "pyproject.toml")["dependencies"]]  # type: ignore[attr-defined]
    [pin] = [r for r in pins if r.name == "notewarden-confirm"]
    assert str(pin.specifier) == f"=={version}"


def test_it_declares_exactly_what_it_imports() -> None:
    """Every distribution the library's sources import is declared (the dependencies, or the extra
    whose module imports it), nothing more; of notewarden it imports only its own units."""
    imported: set[str] = set()
    reaches: set[str] = set()
    for source in SOURCES.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                whole = node.module == "notewarden"
                names = [f"notewarden.{a.name}" for a in node.names] if whole else [node.module]
            for name in names:
                top, _, rest = name.partition(".")
                if top == "notewarden":
                    reaches.add(rest.split(".")[0])
                elif top not in sys.stdlib_module_names and top != "__future__":
                    imported.add(top)
    assert reaches <= UNITS, f"the library imports notewarden units it does not ship: {reaches - UNITS}"
    owners = importlib.metadata.packages_distributions()
    needed = {normalize(d) for module in imported for d in owners[module]}
    named = {normalize(r.name) for reqs in declared().values() for r in reqs}
    assert needed == named, (
        f"imported but not declared: {needed - named}; declared, not imported: {named - needed}"
    )
    assert {normalize(r.name) for r in declared()["postgres"]} == {"psycopg", "psycopg-pool"}


def test_the_wheel_holds_the_library_and_nothing_else(library_wheel: Path) -> None:
    """The five units as in the tree, the package's `py.typed`, no `notewarden/__init__.py` (the
    namespace is shared with notewarden) and no command."""
    with zipfile.ZipFile(library_wheel) as wheel:
        names = set(wheel.namelist())
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = email.parser.Parser().parsestr(wheel.read(metadata).decode())
    files = {n for n in names if ".dist-info/" not in n}
    tree = {str(p.relative_to(SOURCES.parent)) for p in SOURCES.rglob("*.py")} | {"notewarden/py.typed"}
    assert files == tree
    assert {f.split("/")[1].removesuffix(".py") for f in files} == UNITS | {"py.typed"}
    assert not any(n.endswith("entry_points.txt") for n in names), "the library installs no command"
    assert meta["Name"] == "notewarden-confirm" and meta["Version"] == notewarden.confirm.API_VERSION
    wanted = {str(r) for reqs in declared().values() for r in reqs}
    got = {re.sub(r' ?; ?extra == "\w+"', "", r) for r in meta.get_all("Requires-Dist")}
    assert {str(Requirement(r)) for r in got} == wanted
    assert sorted(meta.get_all("Provides-Extra")) == ["postgres", "testing"]


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory, library_wheel: Path) -> Iterator[Path]:
    """A fresh venv with only the library's wheel and what it pulls, constrained to the runtime lock."""
    work = tmp_path_factory.mktemp("library")
    venv.create(work / "venv", with_pip=True)
    python = work / "venv" / "bin" / "python"
    run([python, "-m", "pip", "install", *PIP, "-c", ROOT / "requirements" / "runtime.txt", library_wheel])
    yield work / "venv" / "bin"


_REQUIRES = """
import importlib.metadata as m, json
print(json.dumps({d.metadata["Name"]: d.requires or [] for d in m.distributions()}))
"""


def closure(requires: dict[str, list[str]], root: str) -> set[str]:
    """`root` and every distribution it requires, transitively (markers and extras evaluated)."""
    by_name = {normalize(n): reqs for n, reqs in requires.items()}
    seen: set[str] = set()
    todo: list[tuple[str, frozenset[str]]] = [(normalize(root), frozenset())]
    while todo:
        name, extras = todo.pop()
        if name in seen and not extras:
            continue
        seen.add(name)
        for text in by_name[name]:
            req = Requirement(text)
            environments = [{"extra": e} for e in extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in environments):
                todo.append((normalize(req.name), frozenset(req.extras)))
    return seen


def test_installed_alone_it_adds_only_the_sdk(alone: Path) -> None:
    """Issue 28's goal: the library adds at most the SDK and `cryptography` (which the SDK requires
    already): the venv holds the library, and `mcp` with what `mcp` requires, nothing else; no
    `notewarden` command, none of notewarden's own dependencies."""
    requires = json.loads(run([alone / "python", "-c", _REQUIRES]).stdout)
    installed = {normalize(n) for n in requires} - TOOLS
    assert installed == closure(requires, "mcp") | {"notewarden-confirm"}
    assert "cryptography" in installed
    for server_only in ("prompt-toolkit", "pyyaml", "markdown-it-py", "tqdm", "tomlkit", "fastjsonschema"):
        assert server_only not in installed
    assert not (alone / "notewarden").exists()


@pytest.mark.anyio
async def test_the_page_s_server_runs_on_the_library_alone(alone: Path, tmp_path: Path) -> None:
    """docs/confirm-library.md's `shop.py`, verbatim, served by the library-only venv's Python: a pick,
    accepted, commits (test_docs.py runs every shape on the development venv)."""
    (tmp_path / "shop.py").write_text(blocks()["shop.py"])
    async with shop_server(tmp_path, python=str(alone / "python")) as session:
        assert {t.name for t in (await session.list_tools()).tools} == {"cancel_order", "cancel_order_by_id"}
        with sqlite3.connect(tmp_path / "shop.sqlite3") as conn:
            conn.execute("INSERT INTO orders (customer, item) VALUES ('ada', 'kettle')")
        args = {"customer": "ada"}
        asked = await session.session.call_tool("cancel_order", args, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        yes = types.ElicitResult(action="accept", content={"order_id": "1", "confirm": True})
        done = await session.session.call_tool(
            "cancel_order",
            args,
            input_responses={"confirm": yes},
            request_state=asked.request_state,
            allow_input_required=True,
        )
        assert outcome(done) == "cancelled_order"
