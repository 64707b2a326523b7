"""`notes.health`'s pure rules (issue 27): what counts as empty, as an attachment, as a duplicate or a
near-duplicate title, and where each kind's stream resumes after a page."""

from __future__ import annotations

from notewarden.notes.health import (
    KINDS,
    HealthItem,
    HealthKey,
    bound,
    duplicates,
    is_attachment,
    is_empty,
    merge,
)


def test_empty_is_blank_or_a_title_alone() -> None:
    assert is_empty("") and is_empty("  \n\n\t") and is_empty("# Title\n\n") and is_empty("#\n")
    assert not is_empty("# Title\n\nA line.\n")
    assert not is_empty("---\nrole: designer\n---\n"), "a note of properties is a record"
    assert not is_empty("## Only a subheading\n") and not is_empty("#tag\n")
    assert not is_empty("# One\n# Two\n")


def test_attachments_are_obsidians_accepted_formats() -> None:
    assert is_attachment("diagram.png") and is_attachment("files/Spec.PDF") and is_attachment("a.canvas")
    assert not is_attachment("Plan") and not is_attachment("v1.2 notes") and not is_attachment("x.md")
    assert not is_attachment("images.png/Note"), "the last component decides"


def test_duplicates_exact_and_near_and_never_a_digit_apart() -> None:
    notes = [
        ("a.md", "Weekly sync"),
        ("b.md", "Weekly sync"),
        ("c.md", "Daily stand-up"),
        ("d.md", "daily stand up"),
        ("e.md", "Meeting 2024-01-05"),
        ("f.md", "Meeting 2024-01-06"),
        ("g.md", "Weekly Sync!"),
    ]
    found = {(i.kind, i.note_id, i.others) for i in duplicates(notes, None, 100, frozenset(KINDS))}
    assert found == {
        ("duplicate_title", "a.md", ("b.md",)),
        ("duplicate_title", "b.md", ("a.md",)),
        ("near_duplicate_title", "a.md", ("g.md",)),
        ("near_duplicate_title", "b.md", ("g.md",)),
        ("near_duplicate_title", "g.md", ("a.md", "b.md")),
        ("near_duplicate_title", "c.md", ("d.md",)),
        ("near_duplicate_title", "d.md", ("c.md",)),
    }


def test_each_stream_resumes_after_the_last_item_shown() -> None:
    last = HealthItem("orphan", "b.md", "B").key
    assert last == HealthKey("b.md", KINDS.index("orphan"), 0)
    assert bound("broken_link", last) == ("b.md", -1), "a later kind of the same note still follows"
    assert bound("front_matter", last)[0] == "b.md" and bound("front_matter", last)[1] > 10**9
    assert bound("orphan", last) == ("b.md", 0)
    page = merge(
        [
            [HealthItem("broken_link", "a.md", "A", 3, 7)],
            [HealthItem("empty", "a.md", "A")],
            [last_item := HealthItem("orphan", "b.md", "B")],
        ],
        2,
    )
    assert [(i.kind, i.note_id) for i in page] == [("empty", "a.md"), ("broken_link", "a.md")]
    assert last_item.key == last
