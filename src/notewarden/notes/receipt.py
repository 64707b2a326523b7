"""What a write changed, small whatever the note's size: changed line ranges and a capped diff.

Rule 1: the cost follows the change, not the note. The common head and tail of the two contents
are skipped with slice comparisons (C speed, on the bytes: nothing is decoded but the lines shown);
only the lines in between go through difflib, with `CONTEXT_LINES` of the head and tail around
them for the diff's context.

Rule 2: `changes` are the changed line ranges, 1-based: lines `oldStart .. oldStart+oldLines-1`
became `newStart .. newStart+newLines-1` (a count of 0 is a pure insertion or deletion before that
line). At most `CHANGES_MAX` are listed.

Rule 3: `diff` is a unified diff of hunks only (no file header), lines without their line ending,
at most `DIFF_MAX_CHARS` characters, cut at a line (`diff_truncated`). It is text for a person: each
line goes through `display.visible`, so it is not a patch to apply byte for byte.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from notewarden.display import visible

__all__ = ["CHANGES_MAX", "CONTEXT_LINES", "DIFF_MAX_CHARS", "LineChange", "Receipt", "receipt"]

CONTEXT_LINES = 2
DIFF_MAX_CHARS = 2000
CHANGES_MAX = 50
_BLOCK = 4096
_NO_NEWLINE = "\\ No newline at end of file"


@dataclass(frozen=True, slots=True)
class LineChange:
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int


@dataclass(frozen=True, slots=True)
class Receipt:
    changes: list[LineChange]
    changes_truncated: bool
    diff: str
    diff_truncated: bool


def receipt(before: bytes, after: bytes) -> Receipt:
    if before == after:
        return Receipt([], False, "", False)
    head = _common_head(before, after)
    head = before.rfind(b"\n", 0, head) + 1  # back to a line start
    tail = _common_tail(before, after, head)
    old, new = _lines(before[head : len(before) - tail]), _lines(after[head : len(after) - tail])
    head_lines = before.count(b"\n", 0, head)
    context_before = _lines(before[_lines_back(before, head, CONTEXT_LINES) : head])
    context_after = _lines(before[len(before) - tail : _lines_on(before, len(before) - tail, CONTEXT_LINES)])
    k = len(context_before)
    first = head_lines - k
    edits: list[tuple[str, int, int, int, int]] = [
        (tag, i1 + k, i2 + k, j1 + k, j2 + k)
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes()
    ]
    changes = [
        LineChange(first + i1 + 1, i2 - i1, first + j1 + 1, j2 - j1)
        for tag, i1, i2, j1, j2 in edits
        if tag != "equal"
    ]
    after_old, after_new = k + len(old), k + len(new)
    opcodes = [
        ("equal", 0, k, 0, k),
        *edits,
        ("equal", after_old, after_old + len(context_after), after_new, after_new + len(context_after)),
    ]
    diff, cut = _unified(
        _KnownOpcodes(opcodes),
        context_before + old + context_after,
        context_before + new + context_after,
        first,
    )
    return Receipt(changes[:CHANGES_MAX], len(changes) > CHANGES_MAX, diff, cut)


class _KnownOpcodes(difflib.SequenceMatcher[bytes]):
    """difflib's hunk grouping over opcodes computed elsewhere: the changed middle was matched
    alone, so that context lines never pair with changed ones."""

    def __init__(self, opcodes: list[tuple[str, int, int, int, int]]) -> None:
        super().__init__(None, [], [])
        self._known = [op for op in opcodes if op[1] != op[2] or op[3] != op[4]]

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:  # type: ignore[override]
        return self._known


def _common_head(a: bytes, b: bytes) -> int:
    """Length of the common prefix, compared a block at a time."""
    n = min(len(a), len(b))
    if (b if len(a) <= len(b) else a).startswith(a if len(a) <= len(b) else b):
        return n  # an append or a cut at the end: one comparison, no copy
    lo = 0
    while a[lo : lo + _BLOCK] == b[lo : lo + _BLOCK]:
        lo += _BLOCK
    hi = min(lo + _BLOCK, n)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_tail(a: bytes, b: bytes, head: int) -> int:
    """Length of the common suffix that starts at a line start in both and leaves `head` alone."""
    limit = min(len(a), len(b)) - head
    n = 0
    while n < limit:
        step = min(_BLOCK, limit - n)
        if a[len(a) - n - step : len(a) - n] != b[len(b) - n - step : len(b) - n]:
            while step and a[len(a) - n - 1] == b[len(b) - n - 1]:
                n += 1
                step -= 1
            break
        n += step
    a_start, b_start = len(a) - n, len(b) - n
    if n and not (_line_start(a, a_start) and _line_start(b, b_start)):
        line_end = a.find(b"\n", a_start)  # the tail's next line start is one in both texts
        n = 0 if line_end < 0 else len(a) - line_end - 1
    return n


def _line_start(text: bytes, at: int) -> bool:
    return at == 0 or text[at - 1] == 0x0A


def _lines_back(text: bytes, at: int, count: int) -> int:
    """The start of the `count`th line before the line start `at` (or 0)."""
    for _ in range(count):
        if at == 0:
            break
        at = text.rfind(b"\n", 0, at - 1) + 1
    return at


def _lines_on(text: bytes, at: int, count: int) -> int:
    """Where the `count` lines starting at `at` end (or the end of the text)."""
    for _ in range(count):
        end = text.find(b"\n", at)
        if end < 0:
            return len(text)
        at = end + 1
    return at


def _lines(text: bytes) -> list[bytes]:
    """Lines with their endings; a line ends at LF only (`splitlines` also splits at CR, FF, …)."""
    lines = text.split(b"\n")
    last = lines.pop()
    return [line + b"\n" for line in lines] + ([last] if last else [])


def _unified(
    matcher: difflib.SequenceMatcher[bytes], old: list[bytes], new: list[bytes], first: int
) -> tuple[str, bool]:
    out: list[str] = []
    size = 0
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        hunk = [f"@@ -{_range(first + i1, i2 - i1)} +{_range(first + j1, j2 - j1)} @@"]
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                hunk += _shown(" ", old[a1:a2])
                continue
            hunk += _shown("-", old[a1:a2]) + _shown("+", new[b1:b2])
        for line in hunk:
            if size + len(line) + 1 > DIFF_MAX_CHARS:
                return "".join(out), True
            out.append(line + "\n")
            size += len(line) + 1
    return "".join(out), False


def _shown(mark: str, lines: list[bytes]) -> list[str]:
    shown = []
    for line in lines:
        shown.append(mark + visible(line.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", "replace")))
        if not line.endswith(b"\n"):
            shown.append(_NO_NEWLINE)
    return shown


def _range(start: int, count: int) -> str:
    """A unified-diff range: 1-based start (the line before, for an empty range) and count."""
    return f"{start + 1 if count else start},{count}"
