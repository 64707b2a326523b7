"""Fault points: production code only calls them; nothing in `notewarden` can arm one."""

from __future__ import annotations

from pathlib import Path

import pytest

from notewarden import faults

SOURCE = Path(faults.__file__).resolve().parent


def test_no_module_of_the_product_reads_a_test_variable() -> None:
    readers = [p for p in SOURCE.rglob("*.py") if "NOTEWARDEN_TEST" in p.read_text()]
    assert readers == []
    assert faults.installed() == ()  # nothing installed by importing the product


def test_a_point_runs_only_an_installed_hook() -> None:
    reached: list[str] = []
    faults.fault_point("after_claim")  # inert
    faults.install("after_claim", reached.append)
    try:
        faults.fault_point("after_claim")
        faults.fault_point("after_commit")
        assert reached == ["after_claim"] and faults.installed() == ("after_claim",)
    finally:
        faults._hooks.clear()
    with pytest.raises(ValueError, match="not a fault point"):
        faults.install("after_lunch", reached.append)
