"""`NoteStore.move_note` with link rewriting on the test vault (tests/vault_cases.py), in every store:
a move rewrites exactly the links whose target it would change, in every note, and no other byte
(every other note is compared byte for byte); each rewritten note keeps its old content in history;
a dry run writes nothing; undo (revert each rewritten note, then move back without rewriting) brings
back every byte; a note another writer changes during the move is rewritten on its new content."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.notes.history import Change, Retention
from notewarden.notes.store import Moved, replace_with
from notewarden.scope.fsroot import NoteExists
from notewarden.scope.uri import parse_file_uri
from tests.pg import PgDatabase
from tests.storage.test_history import Kit, open_kit
from tests.unit.test_links import MOVES, rewrite_all
from tests.vault_cases import VAULT

MOVE = Change("alice", "notes_move", "links follow the move")
UNDO = Change("alice", "notes_revert", "undo the move's rewrite")


@pytest.fixture(params=["files", "sqlite", "postgres"])
def kit(request: pytest.FixtureRequest, tmp_path: Path, pg: PgDatabase) -> Iterator[Kit]:
    workspace = parse_file_uri(f"file:///db/{time.time_ns()}/notes")
    opened = open_kit(request.param, tmp_path, pg, Retention(), workspace)
    for note_id, text in VAULT.items():
        opened.store.create_note(opened.scope, note_id, text.encode())
    yield opened
    opened.close()


def contents(kit: Kit) -> dict[str, bytes]:
    return {n.id: kit.store.read_note(kit.scope, n.id).data for n in kit.store.list_notes(kit.scope)}


@pytest.mark.parametrize(("moved_from", "moved_to"), MOVES)
def test_a_move_rewrites_exactly_the_links_it_would_break_and_undo_restores_every_byte(
    kit: Kit, moved_from: str, moved_to: str
) -> None:
    before = contents(kit)
    expected = {note_id: text.encode() for note_id, text in rewrite_all(moved_from, moved_to).items()}
    changed = {
        note_id for note_id, data in expected.items() if data != before.get(note_id, before.get(moved_from))
    }

    preview = kit.store.move_note(kit.scope, moved_from, moved_to, relink=MOVE, dry_run=True)
    assert contents(kit) == before, "a dry run writes nothing"
    assert {r.note_id for r in preview.relinked} == changed
    assert all(r.saved is None and r.rewrites for r in preview.relinked)

    moved = kit.store.move_note(kit.scope, moved_from, moved_to, relink=MOVE)
    assert moved.note.id == moved_to
    after = contents(kit)
    assert after == expected, "rewritten notes as the pure rewrite; every other note byte for byte"
    assert {r.note_id for r in moved.relinked} == changed
    assert [(r.note_id, r.rewrites) for r in moved.relinked] == [
        (r.note_id, r.rewrites) for r in preview.relinked
    ]
    for relinked in moved.relinked:
        assert relinked.saved is not None and relinked.saved.tool == "notes_move"
        _, saved = kit.store.saved_version(kit.scope, relinked.note_id, relinked.saved.version_id)
        original = moved_from if relinked.note_id == moved_to else relinked.note_id
        assert saved == before[original], "the history keeps what the rewrite replaced"

    undo(kit, moved, moved_from)
    assert contents(kit) == before, "undo: every byte back"


def undo(kit: Kit, moved: Moved, moved_from: str) -> None:
    """What docs/notes-toolset.md calls undoing a move: revert each rewritten note, move back alone."""
    for relinked in moved.relinked:
        assert relinked.saved is not None
        _, data = kit.store.saved_version(kit.scope, relinked.note_id, relinked.saved.version_id)
        kit.store.rewrite_note(kit.scope, relinked.note_id, replace_with(data, None), change=UNDO)
    kit.store.move_note(kit.scope, moved.note.id, moved_from)


def test_a_move_without_relinking_touches_only_the_moved_note_and_never_replaces(kit: Kit) -> None:
    before = contents(kit)
    with pytest.raises(NoteExists):
        kit.store.move_note(kit.scope, "Home.md", "Archive/Meeting.md", relink=MOVE)
    assert contents(kit) == before
    moved = kit.store.move_note(kit.scope, "Projects/Atlas/Plan.md", "Plan.md")
    assert moved.relinked == ()
    after = contents(kit)
    assert after.pop("Plan.md") == before.pop("Projects/Atlas/Plan.md")
    assert after == before
