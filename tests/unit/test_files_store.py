"""The files store's writes against real folders and a real SQLite ledger: optimistic concurrency,
exact restores, purges bound to what was listed, recovery after a crash mid-purge or mid-delete
(from the intent journal), and that recovery settles only its own ledger's records: another
ledger's, or an earlier version's (lines and sidecars naming no ledger), are left alone."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.change_log import CHANGE_LOG_SCHEMA
from notewarden.notes.files import FILES_STORE_SCHEMA, FilesNoteStore
from notewarden.notes.history import HISTORY_SCHEMA, Change
from notewarden.notes.model import NoteIdentity, content_version
from notewarden.notes.ownership import WorkspaceOwnedElsewhere, read_owner
from notewarden.notes.store import NoteContent, VersionConflict, replace_with
from notewarden.notes.trash_journal import append_line, intent_line, read_journal, reset_journal
from notewarden.scope.fs_errors import IdentityMismatch, NoteMissing
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import TRASH_DIR_NAME, TRASH_JOURNAL_NAME, TRASH_OWNER_NAME
from notewarden.scope.uri import FileUri
from tests.store_changes import EMPTYING, SETUP, deleting

pytestmark = pytest.mark.resolves_files

ODD_BYTES = "# Ünïcode — TPS\r\nline two\r\n\ttabbed\u00a0nbsp\nno newline at the end".encode()


@pytest.fixture
def scope(tmp_path: Path) -> Iterator[WorkspaceScope]:
    folder = tmp_path / "notes"
    (folder / "reports").mkdir(parents=True)
    (folder / "reports" / "tps.md").write_bytes(ODD_BYTES)
    (folder / "todo.md").write_text("- stapler\n")
    with WorkspaceRoot.open(str(folder)) as root:
        yield WorkspaceScope("alice", FileUri.from_path(str(folder)), (), root)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    led = SqliteLedger(
        tmp_path / "ledger.sqlite3", components=[FILES_STORE_SCHEMA, HISTORY_SCHEMA, CHANGE_LOG_SCHEMA]
    )
    yield led
    led.close()


@pytest.fixture
def store(tmp_path: Path, ledger: SqliteLedger) -> Iterator[FilesNoteStore]:
    s = FilesNoteStore(tmp_path / "index.sqlite3", ledger=ledger)
    yield s
    s.close()


def update(
    store: FilesNoteStore, scope: WorkspaceScope, note_id: str, data: bytes, version: str
) -> NoteContent:
    change = Change("alice", "notes_update", "replaced the whole text")
    return store.rewrite_note(scope, note_id, replace_with(data, version), change=change).after


def trash(store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope, note_id: str) -> str:
    note = store.notes_by_id(scope, [note_id])[0]
    with ledger.critical_section() as txn:
        return store.move_to_trash(txn, scope, [note], change=deleting("alice", "c"))[0].trash_id


def test_a_note_identity_is_its_file_by_every_path(
    store: FilesNoteStore, scope: WorkspaceScope, tmp_path: Path
) -> None:
    st = os.stat(tmp_path / "notes" / "todo.md")
    expected = NoteIdentity((st.st_dev, st.st_ino), st.st_mtime_ns, st.st_size)
    listed = next(n for n in store.list_notes(scope) if n.id == "todo.md")
    (by_id,) = store.notes_by_id(scope, ["todo.md"])
    assert listed.identity == by_id.identity == store.read_note(scope, "todo.md").note.identity == expected
    assert scope.root.stat_note("todo.md").identity == expected.as_file(), "what the root is handed back"
    assert by_id.modified == st.st_mtime_ns / 1e9 and by_id.size == st.st_size


def test_racing_updates_of_one_version_have_one_winner(store: FilesNoteStore, scope: WorkspaceScope) -> None:
    version = store.read_note(scope, "todo.md").version
    results: dict[int, object] = {}
    barrier = threading.Barrier(8)

    def write(i: int) -> None:
        barrier.wait()
        try:
            results[i] = update(store, scope, "todo.md", f"- writer {i}\n".encode(), version)
        except VersionConflict as exc:
            results[i] = exc

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in results.items() if not isinstance(r, VersionConflict)]
    assert len(winners) == 1, results
    on_disk = (scope.root.read_note("todo.md")[0]).decode()
    assert on_disk == f"- writer {winners[0]}\n"
    conflicts = [r for r in results.values() if isinstance(r, VersionConflict)]
    assert {c.current_version for c in conflicts} == {content_version(on_disk.encode())}


def test_restore_gives_back_the_exact_bytes(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    trash_id = trash(store, ledger, scope, "reports/tps.md")
    with ledger.critical_section() as txn:
        [entry] = store.list_trash(txn, scope)
    assert (entry.trash_id, entry.note_id, entry.size) == (trash_id, "reports/tps.md", len(ODD_BYTES))
    assert store.find_titled(scope, ["tps"]) == []
    with ledger.critical_section() as txn:
        note = store.restore(txn, scope, trash_id, change=SETUP)
    assert note.id == "reports/tps.md"
    assert scope.root.read_note("reports/tps.md")[0] == ODD_BYTES
    assert [n.id for n in store.find_titled(scope, ["tps"])] == ["reports/tps.md"]
    with ledger.critical_section() as txn:
        assert store.list_trash(txn, scope) == []
        with pytest.raises(NoteMissing):
            store.restore(txn, scope, trash_id, change=SETUP)
    assert scope.root.list_trash() == []


def test_purge_refuses_an_entry_that_changed_and_deletes_the_rest(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    trash(store, ledger, scope, "todo.md")
    trash(store, ledger, scope, "reports/tps.md")
    with ledger.critical_section() as txn:
        listed = store.list_trash(txn, scope)
    trash_dir = Path(scope.workspace.path) / ".notewarden-trash"
    (trash_dir / listed[0].trash_id).write_bytes(b"swapped")
    with pytest.raises(IdentityMismatch), ledger.critical_section() as txn:
        store.purge_trash(txn, scope, listed, change=EMPTYING)
    assert len(scope.root.list_trash()) == 2  # nothing was deleted
    with ledger.critical_section() as txn:
        fresh = store.list_trash(txn, scope)
        assert store.purge_trash(txn, scope, fresh, change=EMPTYING) == 2
    assert sorted(p.name for p in trash_dir.iterdir()) == [TRASH_JOURNAL_NAME, TRASH_OWNER_NAME]


def test_recovery_finishes_a_purge_that_crashed_before_commit(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    trash_id = trash(store, ledger, scope, "todo.md")
    scope.root.purge_trash_entry(trash_id)  # the unlink happened; the COMMIT did not
    with ledger.critical_section() as txn:
        assert store.recover(txn, scope.workspace, scope.root) == 1
        assert store.list_trash(txn, scope) == []
        assert txn.connection.execute("SELECT count(*) FROM trash").fetchone() == (0,)
    assert scope.root.list_trash() == []


def half_done_delete(scope: WorkspaceScope, note_id: str, trash_id: str, ledger_id: str | None) -> None:
    """What a process killed between its move and its COMMIT leaves: a journal line and a trash
    entry, no trash row. `ledger_id` None: a line of an earlier version, which named no ledger."""
    if ledger_id is None:
        line = json.dumps({"trash_id": trash_id, "note_id": note_id, "workspace": str(scope.workspace)})
        append_line(scope.root, line.encode() + b"\n")
    else:
        append_line(scope.root, intent_line(trash_id, note_id, str(scope.workspace), ledger_id))
    scope.root.quarantine(note_id, trash_id, scope.root.stat_note(note_id).identity)


def journal(scope: WorkspaceScope) -> list[str]:
    return read_journal(scope.root, 1 << 20).decode().splitlines()


def test_recovery_moves_an_uncommitted_delete_back_and_empties_the_journal(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    committed = trash(store, ledger, scope, "reports/tps.md")
    half_done_delete(scope, "todo.md", "20260101T000000-aaaaaaaaaaaa", ledger.identity.ledger_id)
    assert [json.loads(line).get("committed") for line in journal(scope)] == [None, committed, None]
    with ledger.critical_section() as txn:
        assert store.recover(txn, scope.workspace, scope.root) == 1
        assert [e.trash_id for e in store.list_trash(txn, scope)] == [committed]
    assert store.read_note(scope, "todo.md").data == b"- stapler\n"
    assert scope.root.list_trash() == [committed]
    assert journal(scope) == []


def test_a_line_whose_path_is_taken_again_stays_in_the_journal(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope, tmp_path: Path
) -> None:
    half_done_delete(scope, "todo.md", "20260101T000000-bbbbbbbbbbbb", ledger.identity.ledger_id)
    (Path(scope.workspace.path) / "todo.md").write_text("- a new todo\n")
    (Path(scope.workspace.path) / TRASH_DIR_NAME / TRASH_JOURNAL_NAME).open("ab").write(b"not json\n")
    for _ in range(2):  # kept, not recovered, not lost: every recovery sees it again
        with ledger.critical_section() as txn:
            assert store.recover(txn, scope.workspace, scope.root) == 0
        assert [json.loads(line)["trash_id"] for line in journal(scope)] == ["20260101T000000-bbbbbbbbbbbb"]
    assert scope.root.list_trash() == ["20260101T000000-bbbbbbbbbbbb"]
    (Path(scope.workspace.path) / "todo.md").unlink()
    with ledger.critical_section() as txn:
        assert store.recover(txn, scope.workspace, scope.root) == 1
    assert store.read_note(scope, "todo.md").data == b"- stapler\n"
    assert journal(scope) == []


def test_recovery_leaves_another_ledgers_and_an_earlier_versions_records_alone(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    """Only the ledger that wrote an intent can prove its claim did not commit: a committed delete of
    another ledger (whose row this ledger cannot see) must stay in the trash."""
    half_done_delete(scope, "todo.md", "20260101T000000-eeeeeeeeeeee", "another-ledger")
    half_done_delete(scope, "reports/tps.md", "20260101T000000-ffffffffffff", None)
    before = journal(scope)
    with ledger.critical_section() as txn:
        assert store.recover(txn, scope.workspace, scope.root) == 0
    assert journal(scope) == before, "kept verbatim, for the ledgers that can settle them"
    assert scope.root.list_trash() == ["20260101T000000-eeeeeeeeeeee", "20260101T000000-ffffffffffff"]
    assert [n.id for n in store.list_notes(scope)] == [], "nothing came back"


def test_an_earlier_versions_line_is_settled_where_its_row_committed(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    trash_id = trash(store, ledger, scope, "todo.md")
    reset_journal(
        scope.root,
        json.dumps({"trash_id": trash_id, "note_id": "todo.md", "workspace": str(scope.workspace)}).encode()
        + b"\n",
    )
    with ledger.critical_section() as txn:
        assert store.recover(txn, scope.workspace, scope.root) == 0
        assert [e.trash_id for e in store.list_trash(txn, scope)] == [trash_id]
    assert journal(scope) == []


def test_an_earlier_versions_sidecar_is_left_in_the_trash(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope, caplog: pytest.LogCaptureFixture
) -> None:
    trash_dir = Path(scope.workspace.path) / TRASH_DIR_NAME
    trash_dir.mkdir(mode=0o700)
    (trash_dir / "20250101T000000-cccccccccccc.json").write_text(
        json.dumps({"workspace": str(scope.workspace), "note_id": "reports/tps.md", "deleted_at": 1.0})
    )
    (Path(scope.workspace.path) / "reports" / "tps.md").rename(trash_dir / "20250101T000000-cccccccccccc")
    with ledger.critical_section() as txn:
        assert store.recover(txn, scope.workspace, scope.root) == 0
    assert scope.root.list_trash() == ["20250101T000000-cccccccccccc", "20250101T000000-cccccccccccc.json"]
    assert "trash entries of an earlier version left in the trash" in caplog.text


def test_a_committed_delete_is_recorded_as_such_a_rolled_back_one_is_not(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    note = store.notes_by_id(scope, ["todo.md"])[0]
    with pytest.raises(RuntimeError), ledger.critical_section() as txn:
        store.move_to_trash(txn, scope, [note], change=deleting("alice", "c"))
        raise RuntimeError("the claim's transaction fails after the move")
    assert store.read_note(scope, "todo.md").data == b"- stapler\n"
    [rolled_back] = [json.loads(line) for line in journal(scope)]
    assert "committed" not in rolled_back
    trash_id = trash(store, ledger, scope, "todo.md")
    assert json.loads(journal(scope)[-1]) == {"committed": trash_id, "ledger": ledger.identity.ledger_id}


def test_a_trash_owned_by_another_ledger_is_not_changed(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope, tmp_path: Path
) -> None:
    committed = trash(store, ledger, scope, "todo.md")
    assert read_owner(scope.root).ledger_id == ledger.identity.ledger_id  # type: ignore[union-attr]
    other = SqliteLedger(tmp_path / "other.sqlite3", components=[FILES_STORE_SCHEMA])
    try:
        note = store.notes_by_id(scope, ["reports/tps.md"])[0]
        with pytest.raises(WorkspaceOwnedElsewhere) as refused, other.critical_section() as txn:
            store.move_to_trash(txn, scope, [note], change=deleting("alice", "d"))
        assert f"belongs to the SQLite ledger of state dir {tmp_path} on host" in str(refused.value)
        assert other.consumed_outcome("d", "alice") is None
        for step in (
            lambda txn: store.restore(txn, scope, committed, change=SETUP),
            lambda txn: store.purge_trash(txn, scope, [], change=EMPTYING),
        ):
            with pytest.raises(WorkspaceOwnedElsewhere), other.critical_section() as txn:
                step(txn)
    finally:
        other.close()
    assert store.read_note(scope, "reports/tps.md").data == ODD_BYTES
    assert scope.root.list_trash() == [committed]


def test_the_journal_is_recovered_and_emptied_as_it_grows(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("notewarden.notes.files.JOURNAL_RECOVERY_BYTES", 1)
    half_done_delete(scope, "todo.md", "20260101T000000-dddddddddddd", ledger.identity.ledger_id)  # one died
    first = trash(store, ledger, scope, "reports/tps.md")
    trash_ids = [json.loads(line).get("trash_id") for line in journal(scope)]
    assert trash_ids == ["20260101T000000-dddddddddddd", first, None]  # this process appended 1 delete so far
    (Path(scope.workspace.path) / "extra.md").write_text("# Extra\n")
    second = trash(store, ledger, scope, "extra.md")  # over the limit: recovers first, then appends
    assert [json.loads(line).get("trash_id") for line in journal(scope)] == [second, None]
    assert store.read_note(scope, "todo.md").data == b"- stapler\n"  # the dead process's move undone
    with ledger.critical_section() as txn:
        assert {e.trash_id for e in store.list_trash(txn, scope)} == {first, second}


def test_recent_lists_a_trashed_note_as_deleted_until_and_after_the_trash_is_emptied(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    """A trash move keeps no record of its own in the index: the trash row is it, and emptying
    the trash hands the record to the index with the time the note went."""
    store.list_notes(scope)  # the index is built: later changes are tracked
    trash(store, ledger, scope, "todo.md")
    trash(store, ledger, scope, "reports/tps.md")

    def deleted() -> dict[str, int]:
        return {c.note_id: c.at_ns for c in store.recent(scope, since_ns=0, limit=10) if c.kind == "deleted"}

    before = deleted()
    assert set(before) == {"todo.md", "reports/tps.md"}
    assert store.recent(scope, since_ns=before["reports/tps.md"] + 1, limit=10) == []
    with ledger.critical_section() as txn:
        store.purge_trash(
            txn, scope, [e for e in store.list_trash(txn, scope) if e.note_id == "todo.md"], change=EMPTYING
        )
    assert deleted() == before
    store.create_note(scope, "todo.md", b"# Todo again\n", change=SETUP)
    latest = {c.note_id: c.kind for c in store.recent(scope, since_ns=0, limit=10)}
    assert latest == {"todo.md": "created", "reports/tps.md": "deleted"}


def test_emptying_the_trash_records_its_notes_in_the_index_before_commit(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    """notes_recent's record of a purged note is in the index before the purge's COMMIT, so no
    crash loses it: not one right after COMMIT, nor one before it, whose purge recovery finishes
    (the entry's file is already gone, so its trash row goes too)."""
    store.list_notes(scope)
    trash(store, ledger, scope, "todo.md")
    (before,) = [c for c in store.recent(scope, since_ns=0, limit=10) if c.note_id == "todo.md"]
    workspace = str(scope.workspace)

    def in_index() -> list[tuple[str, str, int]]:
        changes = store.index.recent(workspace, scope.root, ("",), since_ns=0, limit=10)
        return [(c.note_id, c.kind, c.at_ns) for c in changes if c.note_id == "todo.md"]

    def listed() -> list[object]:
        return [c for c in store.recent(scope, since_ns=0, limit=10) if c.note_id == "todo.md"]

    assert in_index() == []  # the trash row is the record
    with pytest.raises(RuntimeError), ledger.critical_section() as txn:
        store.purge_trash(txn, scope, store.list_trash(txn, scope), change=EMPTYING)
        assert in_index() == [("todo.md", "deleted", before.at_ns)]
        raise RuntimeError("the process dies before COMMIT")
    assert listed() == [before]  # the trash row and the record: one change
    with ledger.critical_section() as txn:
        assert store.recover(txn, scope.workspace, scope.root) == 1
    assert listed() == [before]


def test_recent_in_a_folder_lists_its_trashed_notes_whatever_went_elsewhere_since(
    store: FilesNoteStore, ledger: SqliteLedger, scope: WorkspaceScope
) -> None:
    """The trash rows `recent` reads are those of the folder asked about: `limit` counts only them."""
    store.list_notes(scope)
    trash(store, ledger, scope, "reports/tps.md")
    trash(store, ledger, scope, "todo.md")  # later, outside reports/
    reports = WorkspaceScope("alice", scope.workspace, ("reports",), scope.root)
    assert [(c.note_id, c.kind) for c in store.recent(reports, since_ns=0, limit=1)] == [
        ("reports/tps.md", "deleted")
    ]
