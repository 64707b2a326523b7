"""The baselines' shared part: an in-memory note map seeded with the bench data set, and the
framework-independent bodies of their tools (each baseline keeps its own confirmation)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from bench.data import bench_notes

__all__ = ["Memo", "NoteMap", "parse_args"]


@dataclass(slots=True)
class Memo:
    id: str
    title: str
    body: str


class NoteMap:
    def __init__(
        self, workspace_uri: str, first: int, count: int, *, error: type[Exception] = ValueError
    ) -> None:
        """`error`: the framework's tool error, raised for a note that does not exist."""
        self.workspace_uri = workspace_uri
        self.notes = {n.id: Memo(n.id, n.title, n.body) for n in bench_notes(first, count)}
        self.error = error

    def check_workspace(self, uri: str) -> None:
        if uri != self.workspace_uri:
            raise ValueError(f"unknown workspace {uri!r}; this server serves {self.workspace_uri}")

    def by_title(self, query: str) -> list[Memo]:
        words = [w.casefold() for w in query.split()]
        return [m for m in self.notes.values() if all(w in m.title.casefold() for w in words)]

    def read(self, workspace_uri: str, note_id: str) -> dict[str, Any]:
        """The `notes_read` tool."""
        self.check_workspace(workspace_uri)
        memo = self.notes.get(note_id)
        if memo is None:
            raise self.error(f"note {note_id!r} does not exist")
        return {"id": memo.id, "title": memo.title, "body": memo.body}

    def search_result(self, workspace_uri: str, query: str) -> dict[str, Any]:
        """The `notes_search` tool."""
        self.check_workspace(workspace_uri)
        return {"notes": [{"id": m.id, "title": m.title} for m in self.search(query)[:20]]}

    def delete(self, workspace_uri: str, note_id: str) -> dict[str, Any]:
        """The confirmed step of `notes_delete`: remove the note, report it deleted."""
        memo = self.notes.pop(note_id, None)
        if memo is None:
            raise self.error(f"note {note_id!r} does not exist")
        return {
            "outcome": "deleted",
            "workspaceUri": workspace_uri,
            "deleted": [{"id": memo.id, "title": memo.title}],
        }

    def search(self, query: str) -> list[Memo]:
        words = [w.casefold() for w in query.split()]
        return [
            m
            for m in self.notes.values()
            if all(w in m.title.casefold() or w in m.body.casefold() for w in words)
        ]


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workspace-uri", required=True)
    parser.add_argument("--first", type=int, default=0, help="number of the first bench note")
    parser.add_argument("--notes", type=int, required=True, help="how many bench notes to hold")
    parser.add_argument("--json-response", action="store_true", help="answer application/json, not SSE")
    return parser.parse_args()
