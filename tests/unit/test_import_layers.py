"""Who may import whom (the layer map of docs/architecture.md), read from the sources with `ast`.

Every import counts: at module level, inside a function, under `if TYPE_CHECKING`. The layer table
of docs/architecture.md is read here too: a unit importing a higher layer, or a unit missing from the
table (or a row naming no unit), fails, so the doc cannot go stale. Beyond it, only the directions
that hold today are asserted; add one when an edge is removed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "notewarden"
LIBRARY = ROOT / "packages" / "notewarden-confirm" / "src" / "notewarden"
"""The confirmation library's units (its own distribution, docs/packaging.md): one namespace
package `notewarden` over both folders, one layer table."""


def home(unit: str) -> Path:
    """The folder (of the two) that holds `unit`."""
    return LIBRARY if (LIBRARY / unit).is_dir() or (LIBRARY / f"{unit}.py").is_file() else PACKAGE


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def imports_of(unit: str) -> dict[str, list[str]]:
    """The top-level units of notewarden (`config`, `scope`, ...) that `unit` imports, each with
    the `file:line` places that import it."""
    where = home(unit)
    sources = sorted((where / unit).rglob("*.py")) if (where / unit).is_dir() else [where / f"{unit}.py"]
    found: dict[str, list[str]] = {}
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                whole = node.module == "notewarden"  # from notewarden import config
                names = [f"notewarden.{alias.name}" for alias in node.names] if whole else [node.module]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "notewarden" and len(parts) > 1 and parts[1] != unit:
                    place = f"{source.relative_to(where)}:{node.lineno}"
                    found.setdefault(parts[1], []).append(place)
    return found


def top_level_units() -> list[str]:
    """The modules (but `__init__`) and packages directly under `src/notewarden/` and the library's folder."""
    return sorted(
        p.stem if p.is_file() else p.name
        for p in [*PACKAGE.iterdir(), *LIBRARY.iterdir()]
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    )


def documented_layers() -> dict[str, int]:
    """Unit -> layer number, from the table under "## The layers" of docs/architecture.md (rows such
    as "| 3 domain | `notes` | ... |")."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## The layers\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\|\s*(\d+)[^|]*\|\s*`(\w+)`\s*\|", section, flags=re.MULTILINE)
    layers: dict[str, int] = {}
    for number, unit in rows:
        assert unit not in layers, f"docs/architecture.md lists {unit} twice"
        layers[unit] = int(number)
    return layers


def test_the_layer_table_names_every_unit_and_only_those() -> None:
    """docs/architecture.md's layer table has one row per top-level unit of the package."""
    documented, present = set(documented_layers()), set(top_level_units())
    assert "notes" in documented, "the table is read"
    assert not present - documented, (
        f"units missing from docs/architecture.md: {sorted(present - documented)}"
    )
    assert not documented - present, f"rows naming no unit of the code: {sorted(documented - present)}"


def test_no_unit_imports_a_unit_of_a_higher_layer() -> None:
    """Each unit imports only units of its own layer or a lower one, as docs/architecture.md places them."""
    layers = documented_layers()
    upward = [
        f"{unit} (layer {layers[unit]}) imports {other} (layer {layers[other]}) at {', '.join(places)}"
        for unit in top_level_units()
        if unit in layers
        for other, places in sorted(imports_of(unit).items())
        if other in layers and layers[other] > layers[unit]
    ]
    assert not upward, "\n".join(upward)


def test_scope_does_not_import_config() -> None:
    """config reads scope's URI grammar and path rules; scope takes the configuration as data
    (`scope.grants.GrantConfig`, `scope.sandbox.plan_for`), so the two do not import each other."""
    assert "scope" in imports_of("config"), "the scanner sees config's imports"
    assert "config" not in imports_of("scope"), imports_of("scope")["config"]


def test_the_domain_does_not_import_config() -> None:
    """The configuration file is the wiring's business: the layers below it get plain values."""
    for unit in ("scope", "ledger", "notes", "confirm", "forms", "publish"):
        assert "config" not in imports_of(unit), (unit, imports_of(unit).get("config"))


def test_no_two_units_import_each_other_even_through_others() -> None:
    """The units form layers: following imports from any unit never leads back to it."""
    units = top_level_units()
    edges = {unit: set(imports_of(unit)) & set(units) for unit in units}
    assert edges["ledger"] >= {"schema"} and edges["schema"] == set(), "the scanner sees edges"

    def cycle_from(start: str) -> list[str] | None:
        path, seen = [start], set()

        def walk(unit: str) -> list[str] | None:
            for after in sorted(edges[unit]):
                if after == start:
                    return [*path, start]
                if after not in seen:
                    seen.add(after)
                    path.append(after)
                    if (found := walk(after)) is not None:
                        return found
                    path.pop()
            return None

        return walk(start)

    cycles = [found for unit in units if (found := cycle_from(unit)) is not None]
    assert not cycles, cycles[0]


def test_the_confirmation_library_stands_alone() -> None:
    """`notewarden.confirm` is public (docs/confirm-library.md): it reaches the ledger, the schema and
    the forms, never notewarden's notes, scope, tools or wiring; the notes layer does not know it."""
    allowed = {"ledger", "schema", "forms", "faults", "display"}
    assert set(imports_of("confirm")) <= allowed, imports_of("confirm")
    assert "confirm" not in imports_of("notes"), imports_of("notes").get("confirm")
    inside = [
        p.name for p in sorted((PACKAGE / "notes").rglob("*.py")) if "notewarden.ledger." in p.read_text()
    ]
    assert not inside, (
        "the notes layer uses the ledger's protocol (`notewarden.ledger`), never a module of it"
    )
