"""`NoteStore.move_note` with link rewriting on the test vault (tests/vault_cases.py), in every store:
a move rewrites exactly the links whose target it would change, in every note, and no other byte
(every other note is compared byte for byte); each rewritten note keeps its old content in history;
a dry run writes nothing; undo (revert each rewritten note, then move back without rewriting) brings
back every byte; a note another writer changes during the move is rewritten on its new content."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.change_log import CHANGE_LOG_SCHEMA
from notewarden.notes.files import FILES_STORE_SCHEMA, FilesNoteStore
from notewarden.notes.history import HISTORY_SCHEMA, Change, Retention
from notewarden.notes.links import MemoryVault, relink
from notewarden.notes.markdown import parse_note
from notewarden.notes.store import Moved, replace_with
from notewarden.scope.fs_errors import NoteExists
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import FileUri, parse_file_uri
from tests.pg import PgDatabase
from tests.storage.test_history import Kit, open_kit
from tests.store_changes import SETUP
from tests.unit.test_links import MOVES, rewrite_all
from tests.vault_cases import VAULT, write_vault

MOVE = Change("alice", "notes_move", "links follow the move")
UNDO = Change("alice", "notes_revert", "undo the move's rewrite")


@pytest.fixture(params=["files", "sqlite", "postgres"])
def kit(request: pytest.FixtureRequest, tmp_path: Path, pg: PgDatabase) -> Iterator[Kit]:
    workspace = parse_file_uri(f"file:///db/{time.time_ns()}/notes")
    opened = open_kit(request.param, tmp_path, pg, Retention(), workspace)
    for note_id, text in VAULT.items():
        opened.store.create_note(opened.scope, note_id, text.encode(), change=SETUP)
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

    preview = kit.store.move_note(kit.scope, moved_from, moved_to, relink=True, dry_run=True, change=MOVE)
    assert contents(kit) == before, "a dry run writes nothing"
    assert {r.note_id for r in preview.relinked} == changed
    assert all(r.saved is None and r.rewrites for r in preview.relinked)

    moved = kit.store.move_note(kit.scope, moved_from, moved_to, relink=True, change=MOVE)
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
    kit.store.move_note(kit.scope, moved.note.id, moved_from, change=SETUP)


def test_a_move_without_relinking_touches_only_the_moved_note_and_never_replaces(kit: Kit) -> None:
    before = contents(kit)
    with pytest.raises(NoteExists):
        kit.store.move_note(kit.scope, "Home.md", "Archive/Meeting.md", relink=True, change=MOVE)
    assert contents(kit) == before
    moved = kit.store.move_note(kit.scope, "Projects/Atlas/Plan.md", "Plan.md", change=SETUP)
    assert moved.relinked == ()
    after = contents(kit)
    assert after.pop("Plan.md") == before.pop("Projects/Atlas/Plan.md")
    assert after == before


class EditedDuringMove(FilesNoteStore):
    """The files store, with an editor's write landing after the move planned and before it swaps:
    the window a real editor can hit (the plan reads every linking note first)."""

    def _plan_move(
        self, scope: WorkspaceScope, moved_from: str, moved_to: str, files: bool = False
    ) -> list[Any]:
        planned = super()._plan_move(scope, moved_from, moved_to, files)
        with (Path(scope.workspace.path) / "Home.md").open("a") as editor:
            editor.write("\nAdded while it moved: [[Plan]].\n")
        return planned


def test_a_note_an_editor_changes_during_the_move_is_rewritten_on_its_new_content(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    write_vault(folder)
    ledger = SqliteLedger(
        tmp_path / "ledger.sqlite3", components=[FILES_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA]
    )
    store = EditedDuringMove(tmp_path / "index.sqlite3", ledger=ledger)
    with WorkspaceRoot.open(str(folder)) as root:
        scope = WorkspaceScope("alice", FileUri.from_path(str(folder)), (), root)
        moved_from, moved_to = "Projects/Atlas/Plan.md", "Projects/Atlas/Atlas plan.md"
        moved = store.move_note(scope, moved_from, moved_to, relink=True, change=MOVE)
        edited = VAULT["Home.md"] + "\nAdded while it moved: [[Plan]].\n"
        aliases = {n: parse_note(t, n).aliases for n, t in VAULT.items()}
        expected, _ = relink(edited, "Home.md", "Home.md", moved_from, moved_to, MemoryVault(VAULT, aliases))
        assert (folder / "Home.md").read_text() == expected, "the editor's line kept, its link rewritten too"
        assert "Added while it moved: [[Atlas plan]]." in expected
        home = next(r for r in moved.relinked if r.note_id == "Home.md")
        assert home.saved is not None
        assert store.saved_version(scope, "Home.md", home.saved.version_id)[1] == edited.encode()
    store.close()
    ledger.close()
