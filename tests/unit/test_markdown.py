"""notes.markdown: titles, headings and front matter as CommonMark reads a note; display escapes."""

from __future__ import annotations

import pytest

from notewarden.display import visible
from notewarden.notes.markdown import headings, split_front_matter
from notewarden.notes.model import extract_title

TITLES = {
    "# Hello\n\ntext": "Hello",
    "```\n# {{title}}\n```\n\ntext": "stem name",
    "```md\n# Login\n```\n# Real\n": "Real",
    "~~~\n# Dog\n~~~\n": "stem name",
    "para\n\n    # indented code\n": "stem name",
    "<!--\n# hidden\n-->\n# shown\n": "shown",
    "---\ntitle: 'Quoted: yes'\ntags: [a]\n---\n# Heading\n": "Quoted: yes",
    "---\ntitle: [oops\n---\n# After\n": "After",
    "---\n# not a heading: front matter\n---\nbody\n": "stem name",
    "Title here\n==========\n\nbody": "Title here",
    "> # quoted\n\n# Top\n": "Top",
    "- # in a list\n\n# Top\n": "Top",
    "## Sub\ntext": "stem name",
    "---\r\ntitle: CR\r\n---\r\n# x\r\n": "CR",
    "#\n\n# Second\n": "Second",
    "# Closing hashes ##\n": "Closing hashes",
    "```\n# a\n```\n```\n# b\n```\n```\n# c\n```\n# d\n": "d",
    "```\nunclosed fence\n# e\n": "stem name",
}


@pytest.mark.parametrize(("text", "title"), TITLES.items())
def test_title_is_what_commonmark_calls_the_first_h1(text: str, title: str) -> None:
    assert extract_title(text.encode(), "dir/stem name.md") == title


def test_headings_have_sections_and_paths_and_skip_code() -> None:
    text = "---\na: 1\n---\n# A\ntext\n## B\n```\n# no\n```\n### C\n# D\nend\n"
    found = [(h.level, h.text, h.line, h.end_line, h.path) for h in headings(text)]
    assert found == [
        (1, "A", 4, 10, ("A",)),
        (2, "B", 6, 10, ("A", "B")),
        (3, "C", 10, 10, ("A", "B", "C")),
        (1, "D", 11, 12, ("D",)),
    ]


def test_front_matter_errors_are_reported_not_raised() -> None:
    bad = split_front_matter("---\ntitle: [oops\n---\nbody")
    assert bad is not None and bad.data is None and bad.error is not None and "YAML" in bad.error
    scalar = split_front_matter("---\njust text\n---\n")
    assert scalar is not None and scalar.data is None and "mapping" in (scalar.error or "")
    good = split_front_matter("---\ntags: [a, b]\n...\nbody")
    assert good is not None and good.data == {"tags": ["a", "b"]} and good.lines == 3
    assert split_front_matter("---\nnever closed\n") is None
    assert split_front_matter("--- \nnot: fm\n---\n") is not None  # trailing blanks on the fence


def test_visible_escapes_format_and_control_characters_only() -> None:
    assert visible("report\u202egpj.md") == "report\\u202egpj.md"
    assert visible("a\u200bb\ufeffc\u2066d\u00ade") == "a\\u200bb\\ufeffc\\u2066d\\u00ade"
    assert visible("tab\tnew\nline é 日本 👍") == "tab\tnew\nline é 日本 👍"
    assert visible("bell\x07") == "bell\\u0007"
    assert visible("tag\U000e0041") == "tag\\U000e0041"
