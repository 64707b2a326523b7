"""Issue 26: every picture in docs/images is shown somewhere in the docs (or the README), and every
picture a page shows exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_image_is_referenced_and_every_reference_exists() -> None:
    texts = {p: p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
    referenced = {
        (path.parent / ref).resolve()
        for path, text in texts.items()
        for ref in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    }
    images = {p.resolve() for p in (ROOT / "docs" / "images").glob("*.png")}
    assert images - referenced == set(), "pictures no page shows"
    assert {p for p in referenced if not p.is_file()} == set(), "pictures a page shows that do not exist"
