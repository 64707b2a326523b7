"""Version history in every store (files, SQLite, PostgreSQL): kept on each content write, following
moves, going to the trash with its note and back, bounded by retention, surviving a restart,
purged on request; and the files store's write that an editor overtakes between read and swap."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from notewarden.ledger import Ledger
from notewarden.ledger.postgres import PostgresLedger
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.change_log import CHANGE_LOG_SCHEMA
from notewarden.notes.files import FILES_STORE_SCHEMA, FilesNoteStore
from notewarden.notes.history import HISTORY_SCHEMA, Change, Retention
from notewarden.notes.model import content_version
from notewarden.notes.sql import SQL_STORE_SCHEMA, SqlNoteStore
from notewarden.notes.store import NoteContent, NoteStore, VersionConflict, replace_with
from notewarden.scope.fs_errors import NoteMissing
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import HISTORY_DIR_NAME
from notewarden.scope.uri import FileUri, parse_file_uri
from tests.pg import PgDatabase
from tests.store_changes import EMPTYING, PURGING, SETUP, deleting

CHANGE = Change("alice", "notes_edit", "append")


@dataclass
class Kit:
    """A store, its ledger and a workspace scope, and how to open them again (a restart)."""

    kind: str
    store: NoteStore
    ledger: Ledger
    scope: WorkspaceScope
    reopen: Callable[[Retention], Kit]
    folder: Path | None = None

    def close(self) -> None:
        self.store.close()
        self.ledger.close()

    def saved_files(self) -> set[str]:
        history = self.folder / HISTORY_DIR_NAME if self.folder else None
        return {p.name for p in history.iterdir()} if history and history.exists() else set()


def open_kit(kind: str, tmp_path: Path, pg: PgDatabase, retention: Retention, workspace: FileUri) -> Kit:
    def again(new_retention: Retention) -> Kit:
        return open_kit(kind, tmp_path, pg, new_retention, workspace)

    if kind == "files":
        folder = tmp_path / "notes"
        folder.mkdir(exist_ok=True)
        ledger: Ledger = SqliteLedger(
            tmp_path / "ledger.sqlite3", components=[FILES_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA]
        )
        root = WorkspaceRoot.open(str(folder))
        store: NoteStore = FilesNoteStore(tmp_path / "index.sqlite3", ledger=ledger, retention=retention)
        kit = Kit(
            kind,
            store,
            ledger,
            WorkspaceScope("alice", FileUri.from_path(str(folder)), (), root),
            again,
            folder,
        )
        original_close = kit.close

        def close() -> None:
            original_close()
            root.close()

        kit.close = close  # type: ignore[method-assign]
        return kit
    if kind == "sqlite":
        ledger = SqliteLedger(
            tmp_path / "notes.sqlite3", components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA]
        )
    else:
        upgrader = PostgresLedger(
            pg.url, components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA], check_schema=False
        )
        upgrader.upgrade()
        upgrader.close()
        ledger = PostgresLedger(pg.url, components=[SQL_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA])
    store = SqlNoteStore(ledger, retention=retention)
    return Kit(kind, store, ledger, WorkspaceScope("alice", workspace, (), None), again)


@pytest.fixture(params=["files", "sqlite", "postgres"])
def kit(request: pytest.FixtureRequest, tmp_path: Path, pg: PgDatabase) -> Iterator[Kit]:
    opened = open_kit(
        request.param, tmp_path, pg, Retention(), parse_file_uri(f"file:///db/{time.time_ns()}/notes")
    )
    yield opened
    opened.close()


def write(kit: Kit, note_id: str, data: bytes, change: Change = CHANGE) -> NoteContent:
    return kit.store.rewrite_note(kit.scope, note_id, replace_with(data, None), change=change).after


def trash(kit: Kit, note_id: str) -> str:
    (note,) = kit.store.notes_by_id(kit.scope, [note_id])
    with kit.ledger.critical_section() as txn:
        return kit.store.move_to_trash(txn, kit.scope, [note], change=deleting("alice", "c"))[0].trash_id


def test_every_write_keeps_what_it_replaced_and_history_follows_the_note(kit: Kit) -> None:
    kit.store.create_note(kit.scope, "a.md", b"# A\n\nv1\n", change=SETUP)
    write(kit, "a.md", b"# A\n\nv2\n")
    write(kit, "a.md", b"# A\n\nv3\n", Change("bob", "notes_update", "replaced the whole text"))
    unchanged = kit.store.rewrite_note(kit.scope, "a.md", replace_with(b"# A\n\nv3\n", None), change=CHANGE)
    assert unchanged.saved is None, "writing what is there keeps no version"
    newest, oldest = kit.store.note_history(kit.scope, "a.md")
    assert (newest.principal, newest.tool, newest.summary) == (
        "bob",
        "notes_update",
        "replaced the whole text",
    )
    assert (newest.version, newest.size) == (content_version(b"# A\n\nv2\n"), len(b"# A\n\nv2\n"))
    assert kit.store.saved_version(kit.scope, "a.md", oldest.version_id)[1] == b"# A\n\nv1\n"

    kit.store.move_note(kit.scope, "a.md", "moved/b.md", change=SETUP)
    assert [e.version_id for e in kit.store.note_history(kit.scope, "moved/b.md")] == [
        newest.version_id,
        oldest.version_id,
    ]
    with pytest.raises(NoteMissing):
        kit.store.note_history(kit.scope, "a.md")

    trash_id = trash(kit, "moved/b.md")
    kit.store.create_note(kit.scope, "moved/b.md", b"# Another note, same id\n", change=SETUP)
    assert kit.store.note_history(kit.scope, "moved/b.md") == [], "a new note there starts afresh"
    with kit.ledger.critical_section() as txn:
        kit.store.restore(txn, kit.scope, trash_id, new_id="restored.md", change=SETUP)
    assert len(kit.store.note_history(kit.scope, "restored.md")) == 2, "it came back with its note"
    assert kit.store.saved_version(kit.scope, "restored.md", oldest.version_id)[1] == b"# A\n\nv1\n"

    trash_id = trash(kit, "restored.md")
    with kit.ledger.critical_section() as txn:
        kit.store.purge_trash(txn, kit.scope, kit.store.list_trash(txn, kit.scope), change=EMPTYING)
    with kit.ledger.snapshot() as db:
        assert db.execute(
            "SELECT count(*) FROM note_history WHERE workspace = ?", (str(kit.scope.workspace),)
        ) == [(0,)]
    assert kit.saved_files() == set(), "emptying the trash purged its notes' history"


def test_retention_keeps_the_newest_versions_and_drops_old_ones(kit: Kit) -> None:
    kit.close()
    kept = kit.reopen(Retention(max_versions=3, max_age_days=1))
    try:
        kept.store.create_note(kept.scope, "log.md", b"0\n", change=SETUP)
        for i in range(1, 6):
            write(kept, "log.md", f"{i}\n".encode())
        history = kept.store.note_history(kept.scope, "log.md")
        assert [e.version for e in history] == [content_version(f"{i}\n".encode()) for i in (4, 3, 2)]
        if kept.folder is not None:
            assert kept.saved_files() == {e.version_id for e in history}
        kept.store.create_note(kept.scope, "other.md", b"x\n", change=SETUP)
        with kept.ledger.critical_section() as txn:
            txn.execute(
                "UPDATE note_history SET saved_at = saved_at - 2 * 86400 WHERE workspace = ? AND note_id = ?",
                (str(kept.scope.workspace), "log.md"),
            )
        write(kept, "other.md", b"y\n")
        assert kept.store.note_history(kept.scope, "log.md") == [], "older than max_age_days"
        assert len(kept.store.note_history(kept.scope, "other.md")) == 1
    finally:
        kept.close()


def test_history_survives_a_restart(kit: Kit) -> None:
    kit.store.create_note(kit.scope, "n.md", "Ünïcode\r\nno final newline".encode(), change=SETUP)
    write(kit, "n.md", b"replaced\n")
    kit.close()
    again = kit.reopen(Retention())
    try:
        (entry,) = again.store.note_history(again.scope, "n.md")
        assert (
            again.store.saved_version(again.scope, "n.md", entry.version_id)[1]
            == "Ünïcode\r\nno final newline".encode()
        )
    finally:
        again.close()


def test_select_and_purge_on_request(kit: Kit) -> None:
    for name in ("p.md", "q.md"):
        kit.store.create_note(kit.scope, name, b"1\n", change=SETUP)
        write(kit, name, b"2\n")
    with kit.ledger.critical_section() as txn:
        selected = kit.store.select_history(txn, kit.scope, saved_before=time.time())
        assert sorted(e.note_id for e in selected) == ["p.md", "q.md"]
        assert (
            kit.store.purge_history(
                txn, kit.scope, [e for e in selected if e.note_id == "p.md"], change=PURGING
            )
            == 1
        )
    assert kit.store.note_history(kit.scope, "p.md") == []
    assert len(kit.store.note_history(kit.scope, "q.md")) == 1
    if kit.folder is not None:
        assert len(kit.saved_files()) == 1


@pytest.fixture
def files_kit(tmp_path: Path, pg: PgDatabase) -> Iterator[Kit]:
    opened = open_kit("files", tmp_path, pg, Retention(), parse_file_uri(f"file://{tmp_path}/notes"))
    yield opened
    opened.close()


def editor(path: Path, text: str) -> None:
    """Another process writes the file in place, as an editor saving would."""
    subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'w').write({text!r})"], check=True)


def test_an_editor_writing_between_read_and_swap_is_merged_not_lost(files_kit: Kit) -> None:
    assert files_kit.folder is not None
    path = files_kit.folder / "shared.md"
    path.write_text("# Shared\n\nfirst line\n")
    calls: list[bytes] = []

    def append_line(current: NoteContent) -> bytes:
        calls.append(current.data)
        if len(calls) == 1:  # the editor saves right after our read, before our swap
            editor(path, "# Shared\n\nfirst line, edited by a person\n")
        return current.data + b"- appended by the assistant\n"

    done = files_kit.store.rewrite_note(files_kit.scope, "shared.md", append_line, change=CHANGE)
    assert len(calls) == 2, "the swap noticed the editor and the edit ran again on its content"
    assert path.read_text() == "# Shared\n\nfirst line, edited by a person\n- appended by the assistant\n"
    assert done.before.data == b"# Shared\n\nfirst line, edited by a person\n"
    assert len(files_kit.saved_files()) == 1, "the overtaken attempt left no saved copy behind"


def test_an_editor_that_keeps_writing_is_a_conflict_and_nothing_is_written(files_kit: Kit) -> None:
    assert files_kit.folder is not None
    path = files_kit.folder / "busy.md"
    path.write_text("start\n")

    def overtaken(current: NoteContent) -> bytes:
        editor(path, f"person's edit at {time.time_ns()}\n")
        return b"assistant's version\n"

    with pytest.raises(VersionConflict) as caught:
        files_kit.store.rewrite_note(files_kit.scope, "busy.md", overtaken, change=CHANGE)
    assert path.read_text().startswith("person's edit at ")
    assert caught.value.current_version == content_version(path.read_bytes())
    assert files_kit.saved_files() == set()
    assert files_kit.store.note_history(files_kit.scope, "busy.md") == []
