"""notes.editing: every operation, byte for byte, on real-shaped notes (front matter, CRLF, no final
newline, unicode, headings inside fenced code, setext headings, nested and empty sections)."""

from __future__ import annotations

from typing import Any

import pytest

from notewarden.notes.editing import Edit, EditError, apply_edits, find_section, section_version

NOTE = """---
title: Weekly review
tags: [work, review]   # keep
date: 2026-12-01
---
# Weekly review

Intro line.

## Projects

### Atlas

- shipped v2

### Borealis

## Empty

## Code

```md
# not a heading
## nor this
```

Setext title
------------

under setext
"""
UNICODE = "# Café ☕\n\n## Naïve — “quoted”\n\nzwj 👩\u200d💻 and \u202eRTL\n"


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def swap(text: str, old: str, new: str) -> str:
    """`text` with the one occurrence of `old` replaced: how each expectation below is spelled."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


def edit(op: str, **fields: Any) -> Edit:
    return Edit(op=op, **fields)


CASES: list[tuple[str, str, list[Edit], str]] = [
    ("append", NOTE, [edit("append", text="- new item")], NOTE + "- new item\n"),
    ("append several lines", NOTE, [edit("append", text="a\nb\n")], NOTE + "a\nb\n"),
    ("append, no final newline", NOTE[:-1], [edit("append", text="tail")], NOTE[:-1] + "\ntail"),
    ("append to an empty note", "", [edit("append", text="first")], "first\n"),
    ("append, CRLF", crlf(NOTE), [edit("append", text="x\ny")], crlf(NOTE) + "x\r\ny\r\n"),
    (
        "prepend goes after the front matter",
        NOTE,
        [edit("prepend", text="Top line")],
        swap(NOTE, "---\n# Weekly", "---\nTop line\n# Weekly"),
    ),
    ("prepend without front matter", "# A\nb\n", [edit("prepend", text="x")], "x\n# A\nb\n"),
    (
        "prepend after front matter that ends the note",
        "---\na: 1\n---",
        [edit("prepend", text="x")],
        "---\na: 1\n---\nx",
    ),
    ("replace", NOTE, [edit("replace", old="shipped v2", new="shipped v3")], swap(NOTE, "v2", "v3")),
    (
        "replace every occurrence when counted",
        "a x b x\nx\n",
        [edit("replace", old="x", new="yy", expected_count=3)],
        "a yy b yy\nyy\n",
    ),
    (
        "replace across lines in a CRLF note, given LF",
        crlf(NOTE),
        [edit("replace", old="Intro line.\n\n## Projects", new="Intro.\n\n## Work")],
        swap(crlf(NOTE), "Intro line.\r\n\r\n## Projects", "Intro.\r\n\r\n## Work"),
    ),
    (
        "replace unicode, zero-width joiners and bidi controls kept as they are",
        UNICODE,
        [edit("replace", old="👩\u200d💻", new="🧑\u200d🔬")],
        swap(UNICODE, "👩\u200d💻", "🧑\u200d🔬"),
    ),
    (
        "replace_section by path",
        NOTE,
        [edit("replace_section", heading="Projects > Atlas", text="- rewritten\n- twice")],
        swap(NOTE, "- shipped v2\n", "- rewritten\n- twice\n"),
    ),
    (
        "replace_section of a parent takes its subsections",
        NOTE,
        [edit("replace_section", heading="## Projects", text="new projects")],
        swap(NOTE, "### Atlas\n\n- shipped v2\n\n### Borealis\n", "new projects\n"),
    ),
    (
        "replace_section of an empty section",
        NOTE,
        [edit("replace_section", heading="Empty", text="now full")],
        swap(NOTE, "## Empty\n\n## Code", "## Empty\n\nnow full\n## Code"),
    ),
    (
        "replace_section under a setext heading",
        NOTE,
        [edit("replace_section", heading="Setext title", text="replaced")],
        swap(NOTE, "------------\n\nunder setext\n", "------------\n\nreplaced\n"),
    ),
    (
        "replace_section at the end of a note without final newline",
        NOTE[:-1],
        [edit("replace_section", heading="Setext title", text="replaced\n")],
        swap(NOTE[:-1], "under setext", "replaced"),
    ),
    (
        "replace_section, CRLF",
        crlf(NOTE),
        [edit("replace_section", heading="Atlas", text="- one\n- two")],
        swap(crlf(NOTE), "- shipped v2\r\n", "- one\r\n- two\r\n"),
    ),
    (
        "replace_section by unicode text, case-insensitively",
        UNICODE,
        [edit("replace_section", heading="naïve — “QUOTED”", text="plain")],
        swap(UNICODE, "zwj 👩\u200d💻 and \u202eRTL\n", "plain\n"),
    ),
    (
        "insert before a heading",
        NOTE,
        [edit("insert", heading="Borealis", position="before", text="> note")],
        swap(NOTE, "### Borealis", "> note\n### Borealis"),
    ),
    (
        "insert after a whole section (subsections included)",
        NOTE,
        [edit("insert", heading="Projects", position="after", text="after projects")],
        swap(NOTE, "\n## Empty", "\nafter projects\n## Empty"),
    ),
    (
        "insert at the start of a section's content",
        NOTE,
        [edit("insert", heading="Atlas", position="start", text="- first")],
        swap(NOTE, "- shipped v2", "- first\n- shipped v2"),
    ),
    (
        "insert at the end of a section's content, a fence inside it",
        NOTE,
        [edit("insert", heading="Code", position="end", text="after the fence")],
        swap(NOTE, "## nor this\n```\n", "## nor this\n```\nafter the fence\n"),
    ),
    (
        "insert into an empty section",
        NOTE,
        [edit("insert", heading="Borealis", position="start", text="started")],
        swap(NOTE, "### Borealis\n\n## Empty", "### Borealis\n\nstarted\n## Empty"),
    ),
    (
        "set_frontmatter adds a key at the end of the block",
        NOTE,
        [edit("set_frontmatter", key="status", value="done")],
        swap(NOTE, "date: 2026-12-01\n---", "date: 2026-12-01\nstatus: done\n---"),
    ),
    (
        "set_frontmatter keeps flow style and the line's comment",
        NOTE,
        [edit("set_frontmatter", key="tags", value=["work", "done"])],
        swap(NOTE, "tags: [work, review]   # keep", "tags: [work, done]   # keep"),
    ),
    (
        "set_frontmatter quotes what YAML would read as another type",
        NOTE,
        [edit("set_frontmatter", key="title", value="2026-12-08")],
        swap(NOTE, "title: Weekly review", "title: '2026-12-08'"),
    ),
    (
        "set_frontmatter creates the block",
        "# Plain\n",
        [edit("set_frontmatter", key="tags", value=["a"])],
        "---\ntags:\n- a\n---\n# Plain\n",
    ),
    (
        "set_frontmatter, CRLF",
        crlf(NOTE),
        [edit("set_frontmatter", key="owner", value={"name": "Zoë", "team": 7})],
        swap(crlf(NOTE), "2026-12-01\r\n---", "2026-12-01\r\nowner:\r\n  name: Zoë\r\n  team: 7\r\n---"),
    ),
    (
        "remove_frontmatter",
        NOTE,
        [edit("remove_frontmatter", key="date")],
        swap(NOTE, "date: 2026-12-01\n", ""),
    ),
    (
        "several edits apply in order",
        NOTE,
        [
            edit("append", text="- log"),
            edit("replace", old="Intro line.", new="Intro."),
            edit("set_frontmatter", key="date", value="2026-12-08"),
        ],
        swap(swap(NOTE, "Intro line.", "Intro."), "date: 2026-12-01", "date: '2026-12-08'") + "- log\n",
    ),
]


@pytest.mark.parametrize(("note", "edits", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_operation_is_byte_exact(note: str, edits: list[Edit], expected: str) -> None:
    assert apply_edits(note, edits) == expected


def refused(note: str, *edits: Edit) -> EditError:
    with pytest.raises(EditError) as caught:
        apply_edits(note, list(edits))
    return caught.value


def test_a_count_other_than_expected_lists_every_match_line() -> None:
    error = refused(NOTE, edit("replace", old="review", new="x"))
    assert error.code == "match_count"
    assert error.details["count"] == 3 and error.details["lines"] == [2, 3, 6]
    assert "3 times (expected 1)" in str(error) and "2, 3, 6" in str(error)


def test_a_missing_anchor_points_at_the_nearest_region() -> None:
    error = refused(NOTE, edit("replace", old="- shipped v1\n", new="x"))
    assert error.code == "anchor_missing" and error.details["count"] == 0
    assert error.details["region"] == {"lines": [14, 14], "text": "- shipped v2\n"}


def test_headings_inside_code_are_not_headings_and_missing_ones_list_the_real_ones() -> None:
    error = refused(NOTE, edit("insert", heading="not a heading", position="end", text="x"))
    assert error.code == "heading_not_found"
    listed = [(h["line"], h["heading"]) for h in error.details["headings"]]
    assert listed == [
        (6, "Weekly review"),
        (10, "Projects"),
        (12, "Atlas"),
        (16, "Borealis"),
        (18, "Empty"),
        (20, "Code"),
        (27, "Setext title"),
    ]
    assert "L12 ### Atlas" in str(error)


def test_an_ambiguous_heading_lists_the_matches() -> None:
    note = "# A\n## Notes\nx\n# B\n## Notes\ny\n"
    error = refused(note, edit("replace_section", heading="Notes", text="z"))
    assert error.code == "heading_ambiguous"
    assert [h["path"] for h in error.details["headings"]] == ["A > Notes", "B > Notes"]
    assert apply_edits(note, [edit("replace_section", heading="B > Notes", text="z")]) == note.replace(
        "y", "z"
    )


def test_section_version_refuses_a_section_changed_since_it_was_read() -> None:
    atlas = find_section(NOTE, "Atlas")
    read_version = section_version(NOTE, atlas)
    changed = NOTE.replace("shipped v2", "shipped v2 and v2.1")
    error = refused(changed, edit("replace_section", heading="Atlas", text="x", section_version=read_version))
    assert error.code == "section_changed"
    assert error.details["region"]["lines"] == [12, 15]
    assert "v2.1" in error.details["region"]["text"]
    elsewhere = NOTE.replace("Intro line.", "Intro line, edited by a person.")
    assert "- mine" in apply_edits(
        elsewhere, [edit("replace_section", heading="Atlas", text="- mine", section_version=read_version)]
    )


def test_the_first_failing_edit_is_named_and_nothing_applies() -> None:
    error = refused(NOTE, edit("append", text="fine"), edit("replace", old="absent text", new="x"))
    assert error.index == 1 and error.details["edit"] == 1
    assert str(error).startswith("edits[1]: ") and str(error).endswith("nothing was written")


@pytest.mark.parametrize(
    ("front", "edits", "why"),
    [
        ("---\ntitle: [oops\n---\n", [edit("set_frontmatter", key="a", value=1)], "not valid YAML"),
        ("---\n{a: 1}\n---\n", [edit("set_frontmatter", key="a", value=2)], "not a block mapping"),
        ("---\na: 1\na: 2\n---\n", [edit("set_frontmatter", key="a", value=3)], "2 times"),
        ("---\nbase: &b 1\nref: *b\n---\n", [edit("remove_frontmatter", key="base")], "would not read back"),
        ("---\na: 1\n---\n", [edit("remove_frontmatter", key="b")], "no key 'b'; its keys: 'a'"),
        ("# no front matter\n", [edit("remove_frontmatter", key="b")], "no front matter"),
    ],
)
def test_front_matter_that_cannot_be_edited_key_by_key_is_refused(
    front: str, edits: list[Edit], why: str
) -> None:
    error = refused(front, *edits)
    assert error.code == "front_matter_unusable" and why in str(error)


def test_an_alias_entry_is_rewritten_without_touching_its_anchor() -> None:
    note = "---\nbase: &b 1\nref: *b   # alias\nother: x\n---\n"
    assert apply_edits(note, [edit("set_frontmatter", key="ref", value=2)]) == note.replace("*b", "2")
