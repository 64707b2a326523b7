"""The bench data set: the same notes for notewarden (files) and the in-memory baselines.

A note's id is `bench/nNNNNNN.md`, its title `Bench note NNNNNNN` and its body a few
sentences naming the number, so a title query or a search for `NNNNNNN` matches exactly
one note (the number has a fixed width: no number is a substring of another).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BenchNote", "bench_notes", "note_number", "write_workspace"]

_WIDTH = 7
_BODY = (
    "Minutes of the weekly sync, item {n}. The team reviewed the open questions, agreed on the "
    "next steps and assigned owners. Follow-up is due before the next meeting.\n"
)


@dataclass(frozen=True, slots=True)
class BenchNote:
    number: int

    @property
    def token(self) -> str:
        """The word that matches this note and no other."""
        return f"{self.number:0{_WIDTH}d}"

    @property
    def id(self) -> str:
        return f"bench/n{self.token}.md"

    @property
    def title(self) -> str:
        return f"Bench note {self.token}"

    @property
    def body(self) -> str:
        return _BODY.format(n=self.token)

    @property
    def markdown(self) -> str:
        return f"# {self.title}\n\n{self.body}"


def bench_notes(start: int, count: int) -> Iterator[BenchNote]:
    return (BenchNote(n) for n in range(start, start + count))


def note_number(note_id: str) -> int:
    return int(note_id.rsplit("/n", 1)[1].removesuffix(".md"))


AT_REST_SECONDS = 3600


def write_workspace(folder: Path, notes: Iterator[BenchNote]) -> int:
    """Write the notes as markdown files under `folder` (created); returns how many. Each is dated
    `AT_REST_SECONDS` back, as the notes of a workspace in use are: none is in the files index's
    racy window, so no measured call pays for the one re-read of every note that a workspace
    written the moment before the server started gets once that window has passed."""
    (folder / "bench").mkdir(parents=True, exist_ok=True)
    at_rest = time.time() - AT_REST_SECONDS
    written = 0
    for note in notes:
        fd = os.open(folder / note.id, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, note.markdown.encode())
            os.utime(fd, (at_rest, at_rest))
        finally:
            os.close(fd)
        written += 1
    return written
