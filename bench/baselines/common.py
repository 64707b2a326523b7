"""The baselines' shared part: an in-memory note map seeded with the bench data set."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from bench.data import bench_notes

__all__ = ["Memo", "NoteMap", "parse_args"]


@dataclass(slots=True)
class Memo:
    id: str
    title: str
    body: str


class NoteMap:
    def __init__(self, workspace_uri: str, first: int, count: int) -> None:
        self.workspace_uri = workspace_uri
        self.notes = {n.id: Memo(n.id, n.title, n.body) for n in bench_notes(first, count)}

    def check_workspace(self, uri: str) -> None:
        if uri != self.workspace_uri:
            raise ValueError(f"unknown workspace {uri!r}; this server serves {self.workspace_uri}")

    def by_title(self, query: str) -> list[Memo]:
        words = [w.casefold() for w in query.split()]
        return [m for m in self.notes.values() if all(w in m.title.casefold() for w in words)]

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
