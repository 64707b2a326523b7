"""scripts/test's second pass, with the fallback resolver, runs the tests marked `resolves_files`.

The marker is the selection: registered in pyproject.toml, on the tests that reach workspace files
through a `WorkspaceRoot`, never on test_fsroot / test_fsroot_history (they run each case with both
resolvers already). pytest exits 5 when a marker selects nothing, and the pass is the script's last
command (`exec`), so an empty selection fails the run.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fallback_pass() -> str:
    script = (ROOT / "scripts" / "test").read_text()
    [line] = [line.strip() for line in script.splitlines() if "NOTEWARDEN_FORCE_FALLBACK=1" in line]
    return line


def marked_modules(marker: str) -> set[str]:
    """Test modules that apply `pytest.mark.<marker>` anywhere (pytestmark or a decorator)."""
    found = set()
    for folder in ("unit", "wire"):
        for source in (ROOT / "tests" / folder).glob("test_*.py"):
            tree = ast.parse(source.read_text(encoding="utf-8"))
            if any(isinstance(n, ast.Attribute) and n.attr == marker for n in ast.walk(tree)):
                found.add(f"{folder}/{source.name}")
    return found


def test_the_fallback_pass_selects_a_registered_marker_that_marks_file_tests() -> None:
    line = fallback_pass()
    assert line.startswith("NOTEWARDEN_FORCE_FALLBACK=1 exec "), "its exit status must be the script's"
    match = re.search(r" -m (\w+) ", line)
    assert match is not None and "--ignore" not in line, line
    marker = match.group(1)
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert marker in {m.split(":")[0] for m in markers}, f"{marker} is not registered in pyproject.toml"
    marked = marked_modules(marker)
    assert {"unit/test_files_store.py", "wire/test_note_tools.py", "wire/test_hostile_inputs.py"} <= marked
    assert not marked & {"unit/test_fsroot.py", "unit/test_fsroot_history.py"}, "those run both resolvers"


def test_the_fallback_pass_runs_a_test_of_both_transports_over_stdio_only() -> None:
    """The transport does not change how files are resolved: in the fallback pass a test parametrized
    over both runs once (tests/conftest.py), and a test of one transport still runs."""
    import os
    import subprocess
    import sys

    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "resolves_files",
            "tests/wire/test_note_tools.py",
            "tests/wire/test_http.py",
        ],
        cwd=ROOT,
        env={**os.environ, "NOTEWARDEN_FORCE_FALLBACK": "1"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    tests = [line for line in listed.splitlines() if "::" in line]
    assert not [t for t in tests if t.endswith("[http]")]
    assert "tests/wire/test_note_tools.py::test_notes_are_resources[stdio]" in tests
    assert "tests/wire/test_http.py::test_accept_moves_the_chosen_note_to_trash_once" in tests
