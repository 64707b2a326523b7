"""notes.receipt: changed line ranges that describe the change exactly, a diff capped at a line, and a
size that follows the change, not the note."""

from __future__ import annotations

import json
from dataclasses import asdict

from hypothesis import given, settings
from hypothesis import strategies as st

from notewarden.notes.receipt import DIFF_MAX_CHARS, receipt

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "# h", "x\r", "ü"]), max_size=30)


def text_of(lines: list[str], final_newline: bool) -> str:
    return "\n".join(lines) + ("\n" if final_newline and lines else "")


def split(text: str) -> list[str]:
    parts = text.split("\n")
    last = parts.pop()
    return [p + "\n" for p in parts] + ([last] if last else [])


@settings(max_examples=300, deadline=None)
@given(LINES, st.booleans(), LINES, st.booleans())
def test_changes_rebuild_the_new_text_from_the_old(
    old_lines: list[str], old_final: bool, new_lines: list[str], new_final: bool
) -> None:
    before, after = text_of(old_lines, old_final), text_of(new_lines, new_final)
    old, new = split(before), split(after)
    rebuilt: list[str] = []
    at = 0
    for change in receipt(before.encode(), after.encode()).changes:
        rebuilt += old[at : change.old_start - 1]
        assert (
            old[at : change.old_start - 1] == new[len(rebuilt) - (change.old_start - 1 - at) : len(rebuilt)]
        )
        assert change.new_start - 1 == len(rebuilt), "new ranges line up with what came before"
        rebuilt += new[change.new_start - 1 : change.new_start - 1 + change.new_lines]
        at = change.old_start - 1 + change.old_lines
    rebuilt += old[at:]
    assert "".join(rebuilt) == after


def test_a_one_line_change_costs_the_same_in_a_small_and_a_huge_note() -> None:
    line = "Some words of a note about projects and meetings, with numbers 12345.\n"
    sizes = {}
    for count in (10, 15_000):
        before = "# Title\n\n" + line * count
        middle = len(before) // 2
        at = before.index("\n", middle) + 1
        after = before[:at] + "One changed line, said differently.\n" + before[at + len(line) :]
        result = receipt(before.encode(), after.encode())
        assert [(c.old_lines, c.new_lines) for c in result.changes] == [(1, 1)]
        assert result.diff.count("\n") == 2 + 2 * 2 + 1, result.diff  # hunk header, 2+2 context, -/+
        sizes[count] = len(json.dumps(result.diff)) + len(json.dumps([asdict(c) for c in result.changes]))
    assert sizes[15_000] - sizes[10] <= 4 * 4, "only the line numbers grow (by their digits)"


def test_the_diff_is_cut_at_a_line_and_says_so() -> None:
    before = "".join(f"line {i}\n" for i in range(2000))
    after = before.replace("line ", "LINE ")
    result = receipt(before.encode(), after.encode())
    assert result.diff_truncated and len(result.diff) <= DIFF_MAX_CHARS and result.diff.endswith("\n")
    assert receipt(b"same\n", b"same\n").changes == []


def test_the_diff_shows_control_characters_escaped_and_a_missing_final_newline() -> None:
    result = receipt(b"a\nb", "a\nb\u202ec".encode())
    assert (
        result.diff
        == "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\\u202ec\n\\ No newline at end of file\n"
    )
