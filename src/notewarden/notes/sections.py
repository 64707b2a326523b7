"""A note cut into the pieces whose meaning is embedded: one per section, as the editing tools see
sections (`markdown.headings`), each piece carrying the note's path and the section's headings.

Rule 1: front matter is never part of a piece. The text before the first heading is one piece
(section ""), then each heading's own text, from its line to the next heading of any level, is one
piece named by its heading path (`Parent > Heading`, the form `notes_read {section}` and
`notes_edit` accept). A piece with nothing but its heading is dropped; a note with no text at all
(only headings, or empty) is one piece, its path, so that it can still be found by what it is called.

Rule 2: every piece starts with the note's path without its suffix, folders spelled out
(`Home / House manual`), and its heading path, so that a section knows what note it is in: a
question about "the flat's fuse box" meets the section `Electricity` of `Home / House manual`.

Rule 3: bounded. A section longer than `PIECE_CHARS` is cut at paragraph (else line) boundaries
into several pieces of the same section; a note gives at most `MAX_PIECES` pieces (what follows is
found by its words only), and only its first `SCAN_CHARS` are read.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from notewarden.notes.markdown import headings, split_front_matter

__all__ = ["MAX_PIECES", "PIECE_CHARS", "Piece", "pieces_of"]

PIECE_CHARS = 1200
MAX_PIECES = 24
SCAN_CHARS = 64 * 1024


@dataclass(frozen=True, slots=True)
class Piece:
    section: str
    """The heading path, `A > B`; "" for the text before the first heading."""
    text: str
    """What is embedded (Rule 2)."""

    def digest(self, model: str) -> str:
        """Names the vector of this text under `model`: an unchanged section keeps its vector."""
        return hashlib.sha256(f"{model}\0{self.text}".encode()).hexdigest()[:32]


def _cut(text: str) -> list[str]:
    """Rule 3: `text` in parts of at most `PIECE_CHARS`, at paragraph, else line, else any boundary."""
    if len(text) <= PIECE_CHARS:
        return [text]
    parts: list[str] = []
    current = ""
    for block in text.split("\n\n"):
        for line in block.split("\n") if len(block) > PIECE_CHARS else [block]:
            while len(line) > PIECE_CHARS:
                parts.append(line[:PIECE_CHARS])
                line = line[PIECE_CHARS:]
            if current and len(current) + len(line) + 2 > PIECE_CHARS:
                parts.append(current)
                current = ""
            current = f"{current}\n\n{line}" if current else line
    if current:
        parts.append(current)
    return parts


def pieces_of(note_id: str, text: str) -> list[Piece]:
    """Rules 1-3: the pieces of a note, in order."""
    text = text[:SCAN_CHARS]
    front = split_front_matter(text)
    skip_lines = front.lines if front is not None else 0
    lines = text.split("\n")
    found = headings(text)
    stem = note_id.rsplit(".", 1)[0] if note_id.lower().endswith((".md", ".markdown")) else note_id
    where = " / ".join(stem.split("/"))
    spans: list[tuple[str, int, int]] = []  # section, first text line, end (0-based, exclusive)
    spans.append(("", skip_lines, found[0].line - 1 if found else len(lines)))
    for n, heading in enumerate(found):
        end = found[n + 1].line - 1 if n + 1 < len(found) else len(lines)
        spans.append((" > ".join(heading.path), heading.body_line - 1, end))
    pieces: list[Piece] = []
    for section, body, end in spans:
        own = "\n".join(lines[body:end]).strip()
        if not own:
            continue
        head = f"{where}\n{section}" if section else where
        for part in _cut(own):
            pieces.append(Piece(section, f"{head}\n{part}"))
            if len(pieces) == MAX_PIECES:
                return pieces
    return pieces or [Piece("", where)]
