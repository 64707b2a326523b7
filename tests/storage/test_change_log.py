"""The record (`notes.change_log`) in every store (files, SQLite, PostgreSQL): each mutating store
operation leaves exactly one record with the right fields, in the transaction of its change; a change
rolled back (after its file step, too) leaves none, and its file step is undone; a write of the same
bytes, a dry run or a refusal leaves none; `recent` says who made a change notewarden recorded, and
nobody for an editor's; retention prunes in batches; `notewarden audit`'s reading and its input."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden import faults
from notewarden.auditcommand import parse_since, run_audit, shown
from notewarden.config import ConfigError, parse_config
from notewarden.notes import change_log
from notewarden.notes.change_log import ChangeLog, Record, RecordRetention, read_records
from notewarden.notes.history import Change, Retention
from notewarden.notes.model import content_version
from notewarden.notes.store import replace_with
from notewarden.scope.uri import parse_file_uri
from tests.pg import PgDatabase
from tests.storage.test_history import Kit, open_kit

EDITING = Change("alice", "notes_edit", "append a line", "Claude Desktop", "1.2.3")
MOVING = Change("alice", "notes_move", "moved a.md to c.md", "raw-test", "1")
DELETING = Change("bob", "notes_delete", "moved to the trash: c.md, b.md", "cli", "0.1", "confirm-1")
RESTORING = Change("alice", "notes_restore", "restored", "raw-test", "1")
EMPTYING = Change("alice", "notes_trash_empty", "1 note(s) deleted for good", "raw-test", "1", "confirm-2")
PURGING = Change("alice", "notes_history_purge", "purged", "raw-test", "1", "confirm-3")
CREATING = Change("alice", "notes_create", "created", "raw-test", "1")


@pytest.fixture(params=["files", "sqlite", "postgres"])
def kit(request: pytest.FixtureRequest, tmp_path: Path, pg: PgDatabase) -> Iterator[Kit]:
    opened = open_kit(
        request.param, tmp_path, pg, Retention(), parse_file_uri(f"file:///db/{time.time_ns()}/notes")
    )
    yield opened
    opened.close()


def records(kit: Kit) -> list[Record]:
    """The workspace's records, newest first, read with plain SQL through the ledger."""
    with kit.ledger.snapshot() as db:
        return read_records(db, workspace=str(kit.scope.workspace), limit=1000)


def one_more(kit: Kit, before: list[Record]) -> Record:
    now = records(kit)
    assert len(now) == len(before) + 1, [r.tool for r in now]
    return now[0]


def notes_of(record: Record) -> list[tuple[str, str, str | None]]:
    return [(n.effect, n.note_id, n.previous_id) for n in record.notes]


def test_each_store_change_leaves_one_record_with_who_what_and_versions(kit: Kit) -> None:
    store, scope = kit.store, kit.scope
    seen = records(kit)
    created = store.create_note(scope, "a.md", b"# A\n\nv1\n", change=CREATING)
    record = one_more(kit, seen)
    assert (record.principal, record.tool, record.client_name, record.client_version) == (
        "alice",
        "notes_create",
        "raw-test",
        "1",
    )
    assert record.workspace == str(scope.workspace) and record.confirmation_id is None
    assert record.summary == "created" and abs(record.at - time.time()) < 60
    (note,) = record.notes
    assert (note.effect, note.note_id, note.version_before, note.version_after) == (
        "created",
        "a.md",
        None,
        created.version,
    )
    assert note.state == created.note.identity.fingerprint()

    seen = records(kit)
    done = store.rewrite_note(scope, "a.md", replace_with(b"# A\n\nv2\n", None), change=EDITING)
    record = one_more(kit, seen)
    assert (record.client_name, record.client_version, record.summary) == (
        "Claude Desktop",
        "1.2.3",
        "append a line",
    )
    (note,) = record.notes
    assert (note.effect, note.version_before, note.version_after) == (
        "rewritten",
        content_version(b"# A\n\nv1\n"),
        content_version(b"# A\n\nv2\n"),
    )
    assert note.state == done.after.note.identity.fingerprint()

    seen = records(kit)
    again = store.rewrite_note(scope, "a.md", replace_with(b"# A\n\nv2\n", None), change=EDITING)
    assert again.saved is None and records(kit) == seen, "the same bytes change nothing: no record"

    store.create_note(scope, "b.md", b"# B\n\nsee [[a]]\n", change=CREATING)
    seen = records(kit)
    preview = store.move_note(scope, "a.md", "c.md", change=MOVING, relink=True, dry_run=True)
    assert [r.note_id for r in preview.relinked] == ["b.md"] and records(kit) == seen, "a dry run: none"
    moved = store.move_note(scope, "a.md", "c.md", change=MOVING, relink=True)
    record = one_more(kit, seen)
    assert notes_of(record) == [("moved", "c.md", "a.md"), ("relinked", "b.md", None)]
    assert record.notes[0].state == moved.note.identity.fingerprint()
    relinked = record.notes[1]
    assert (relinked.version_before, relinked.version_after) == (
        content_version(b"# B\n\nsee [[a]]\n"),
        store.read_note(scope, "b.md").version,
    )
    assert relinked.state == store.read_note(scope, "b.md").note.identity.fingerprint()

    seen = records(kit)
    store.move_note(scope, "c.md", "d.md", change=MOVING)
    assert notes_of(one_more(kit, seen)) == [("moved", "d.md", "c.md")]

    seen = records(kit)
    shown_notes = store.notes_by_id(scope, ["d.md", "b.md"])
    with kit.ledger.critical_section() as txn:
        trashed = store.move_to_trash(txn, scope, shown_notes, change=DELETING)
    record = one_more(kit, seen)
    assert (record.principal, record.tool, record.confirmation_id) == ("bob", "notes_delete", "confirm-1")
    assert notes_of(record) == [("trashed", "d.md", None), ("trashed", "b.md", None)], "one record, two notes"

    seen = records(kit)
    with kit.ledger.critical_section() as txn:
        restored = store.restore(txn, scope, trashed[0].trash_id, change=RESTORING, new_id="e.md")
    record = one_more(kit, seen)
    assert notes_of(record) == [("restored", "e.md", "d.md")]
    assert (
        record.notes[0].state
        == store.read_note(scope, "e.md").note.identity.fingerprint()
        == (restored.identity.fingerprint())
    )

    seen = records(kit)
    with kit.ledger.critical_section() as txn:
        assert store.purge_trash(txn, scope, store.list_trash(txn, scope), change=EMPTYING) == 1
    record = one_more(kit, seen)
    assert notes_of(record) == [("purged", "b.md", None)] and record.confirmation_id == "confirm-2"

    seen = records(kit)
    with kit.ledger.critical_section() as txn:
        saved = store.select_history(txn, scope, saved_before=time.time())
        assert {e.note_id for e in saved} == {"e.md"} and len(saved) == 1
        store.purge_history(txn, scope, saved, change=PURGING)
    assert notes_of(one_more(kit, seen)) == [("versions_purged", "e.md", None)]

    assert [r.tool for r in records(kit)] == [
        "notes_history_purge",
        "notes_trash_empty",
        "notes_restore",
        "notes_delete",
        "notes_move",
        "notes_move",
        "notes_create",
        "notes_edit",
        "notes_create",
    ]


@pytest.fixture
def failing_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write of a store fails right before its COMMIT: after its file step and its record."""
    monkeypatch.setattr(faults, "_hooks", {})

    def fail(point: str) -> None:
        raise RuntimeError(f"the process fails at {point}")

    faults.install("write_uncommitted", fail)


def test_a_change_rolled_back_after_its_file_step_leaves_no_record_and_is_undone(
    kit: Kit, failing_commit: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, scope = kit.store, kit.scope
    monkeypatch.setattr(faults, "_hooks", {})
    store.create_note(scope, "a.md", b"# A\n", change=CREATING)
    store.create_note(scope, "link.md", b"[[a]]\n", change=CREATING)
    with kit.ledger.critical_section() as txn:
        (trashed,) = store.move_to_trash(txn, scope, store.notes_by_id(scope, ["link.md"]), change=DELETING)
    seen = records(kit)
    faults.install("write_uncommitted", _fail)

    with pytest.raises(RuntimeError):
        store.create_note(scope, "new.md", b"# New\n", change=CREATING)
    assert [n.id for n in store.list_notes(scope)] == ["a.md"], "the created file was removed"
    with pytest.raises(RuntimeError):
        store.rewrite_note(scope, "a.md", replace_with(b"# A2\n", None), change=EDITING)
    assert store.read_note(scope, "a.md").data == b"# A\n"
    assert store.note_history(scope, "a.md") == []
    with pytest.raises(RuntimeError):
        store.move_note(scope, "a.md", "b.md", change=MOVING)
    with pytest.raises(RuntimeError):
        store.move_note(scope, "a.md", "b.md", change=MOVING, relink=True)
    assert [n.id for n in store.list_notes(scope)] == ["a.md"], "moved back"
    with pytest.raises(RuntimeError), kit.ledger.critical_section() as txn:
        store.restore(txn, scope, trashed.trash_id, change=RESTORING)
    assert [n.id for n in store.list_notes(scope)] == ["a.md"]
    assert records(kit) == seen

    monkeypatch.setattr(faults, "_hooks", {})
    for step in (
        lambda txn: store.move_to_trash(txn, scope, store.notes_by_id(scope, ["a.md"]), change=DELETING),
        lambda txn: store.purge_trash(txn, scope, store.list_trash(txn, scope), change=EMPTYING),
        lambda txn: store.purge_history(txn, scope, [], change=PURGING),
    ):
        with pytest.raises(RuntimeError), kit.ledger.critical_section() as txn:
            step(txn)
            raise RuntimeError("the claim's transaction fails after the change")
    assert [n.id for n in store.list_notes(scope)] == ["a.md"]
    with kit.ledger.critical_section() as txn:
        left = [e.trash_id for e in store.list_trash(txn, scope)]
    # the files store unlinks as it purges: gone without a record (`change_log` Rule 2's bound)
    assert left == ([] if kit.kind == "files" else [trashed.trash_id])
    assert records(kit) == seen


def _fail(point: str) -> None:
    raise RuntimeError(f"the process fails at {point}")


def test_refused_changes_leave_no_record(kit: Kit) -> None:
    store, scope = kit.store, kit.scope
    store.create_note(scope, "a.md", b"# A\n", change=CREATING)
    store.create_note(scope, "b.md", b"# B\n", change=CREATING)
    seen = records(kit)
    for refused in (
        lambda: store.create_note(scope, "a.md", b"# again\n", change=CREATING),
        lambda: store.move_note(scope, "a.md", "b.md", change=MOVING),
        lambda: store.rewrite_note(scope, "a.md", replace_with(b"x\n", "not-the-version"), change=EDITING),
    ):
        with pytest.raises(Exception):  # noqa: B017  NoteExists, VersionConflict: each refuses
            refused()
    with kit.ledger.critical_section() as txn:
        assert store.purge_trash(txn, scope, [], change=EMPTYING) == 0
    assert records(kit) == seen


def editor_writes(kit: Kit, note_id: str, text: str) -> None:
    """A change nobody records: a person's editor (files), another program's UPDATE (SQL stores)."""
    if kit.folder is not None:
        (kit.folder / note_id).write_text(text)
        return
    with kit.ledger.critical_section() as txn:
        txn.execute(
            "UPDATE notes SET body = ? WHERE workspace = ? AND path = ?",
            (text, str(kit.scope.workspace), note_id),
        )


def test_recent_says_who_made_each_change_it_recorded_and_nobody_for_an_editors(kit: Kit) -> None:
    store, scope = kit.store, kit.scope
    store.list_notes(scope)  # the files index is built: later changes are tracked
    store.create_note(scope, "made.md", b"# Made\n", change=CREATING)
    store.create_note(scope, "edited.md", b"# Edited\n", change=CREATING)
    store.rewrite_note(
        scope, "edited.md", replace_with(b"# Edited\n\nby an assistant\n", None), change=EDITING
    )
    store.create_note(scope, "gone.md", b"# Gone\n", change=CREATING)
    store.create_note(scope, "person.md", b"# Person\n", change=CREATING)
    time.sleep(0.01)  # a distinct mtime for the editor's write
    editor_writes(kit, "person.md", "# Person\n\nwritten in an editor afterwards\n")
    with kit.ledger.critical_section() as txn:
        store.move_to_trash(txn, scope, store.notes_by_id(scope, ["gone.md"]), change=DELETING)
    store.move_note(scope, "made.md", "moved.md", change=MOVING)

    changes = {c.note_id: c for c in store.recent(scope, since_ns=0, limit=20)}
    assert {n: c.kind for n, c in changes.items()} == {
        "moved.md": "moved",
        "edited.md": changes["edited.md"].kind,
        "gone.md": "deleted",
        "person.md": changes["person.md"].kind,
    }
    who = {n: (c.by.principal, c.by.tool, c.by.client_name) if c.by else None for n, c in changes.items()}
    assert who == {
        "moved.md": ("alice", "notes_move", "raw-test"),
        "edited.md": ("alice", "notes_edit", "Claude Desktop"),
        "gone.md": ("bob", "notes_delete", "cli"),
        "person.md": None,
    }
    by = changes["edited.md"].by
    assert by is not None and by.client_version == "1.2.3" and abs(by.at - time.time()) < 60

    with kit.ledger.critical_section() as txn:
        store.purge_trash(txn, scope, store.list_trash(txn, scope), change=EMPTYING)
    gone = next(c for c in store.recent(scope, since_ns=0, limit=20) if c.note_id == "gone.md")
    assert gone.by is not None and gone.by.tool == "notes_delete", "emptying the trash: still who deleted it"


def test_a_folder_scope_sees_who_changed_its_notes_only(kit: Kit) -> None:
    store, scope = kit.store, kit.scope
    store.list_notes(scope)
    store.create_note(scope, "team/in.md", b"# In\n", change=CREATING)
    store.create_note(scope, "other/out.md", b"# Out\n", change=CREATING)
    folder = dataclasses.replace(scope, subtree=("team",))
    changes = store.recent(folder, since_ns=0, limit=20)
    assert [(c.note_id, c.by is not None) for c in changes] == [("team/in.md", True)]


def test_retention_prunes_old_records_in_batches(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    log = ChangeLog(RecordRetention(retention_days=1))
    monkeypatch.setattr(change_log, "PRUNE_BATCH", 2)
    workspace = str(kit.scope.workspace)
    effect = [change_log.NoteEffect("x.md", "created")]
    with kit.ledger.critical_section() as txn:
        for _ in range(5):
            log.record(txn, workspace, CREATING, effect)
    with kit.ledger.critical_section() as txn:
        txn.execute("UPDATE change_log SET at = at - 2 * 86400 WHERE workspace = ?", (workspace,))
    log._next_prune = 0.0  # due: the first write of a process prunes
    counts = []
    for _ in range(3):
        with kit.ledger.critical_section() as txn:
            log.record(txn, workspace, CREATING, effect)
        counts.append(len(records(kit)))
    assert counts == [4, 3, 3], "two expired at a time while a backlog lasts, then one hour's wait"
    assert all(time.time() - r.at < 60 for r in records(kit))
    with kit.ledger.critical_section() as txn:
        log.record(txn, workspace, CREATING, effect)
    assert len(records(kit)) == 4, "not due again within the hour"


def test_what_a_client_wrote_is_kept_bounded_and_without_nul(kit: Kit) -> None:
    odd = Change("alice", "notes_create", "created", "evil\x00client" + "x" * 500, "1\x00")
    kit.store.create_note(kit.scope, "n.md", b"# N\n", change=odd)
    (record,) = records(kit)
    assert "\x00" not in record.client_name + record.client_version
    assert record.client_name.startswith("evil\ufffdclient") and len(record.client_name) == 200


def test_audit_reads_and_words_its_input(tmp_path: Path) -> None:
    now = time.time()
    assert parse_since("7d", now) == now - 7 * 86400 and parse_since("24h", now) == now - 86400
    assert parse_since("2026-12-01", now) == 1796083200.0
    assert parse_since("2026-12-01T10:00+01:00", now) == 1796083200.0 + 9 * 3600
    for bad in ("yesterday", "7w", "-1d", ""):
        with pytest.raises(ConfigError, match="ISO 8601 date or date-time"):
            parse_since(bad, now)
    config = parse_config(
        {"state_dir": str(tmp_path / "state"), "workspace": [{"uri": f"file://{tmp_path}/notes"}]}
    )
    with pytest.raises(ConfigError, match=f"configured: file://{tmp_path}/notes"):
        run_audit(config, workspace="file:///elsewhere", principal=None, since=None, limit=5, as_json=False)
    with pytest.raises(ConfigError, match="not a file: URI"):
        run_audit(config, workspace="notes", principal=None, since=None, limit=5, as_json=False)
    lines: list[str] = []
    assert (
        run_audit(
            config, workspace=None, principal=None, since=None, limit=5, as_json=False, write=lines.append
        )
        == 3
    )
    assert "does not exist yet" in lines[0]

    record = Record(
        "r1", now, "file:///w", "alice", "Claude\u202e", "1.0", "notes_move", "c-1", "moved a.md to b.md",
        (change_log.NoteEffect("b.md", "moved", "a.md", "0" * 32, "1" * 32, "s"),),
    )  # fmt: skip
    text = shown(record)
    assert "\u202e" not in text and "client Claude\\u202e 1.0 (unverified)" in text
    assert "confirmation c-1" in text and text.splitlines()[1].split() == [
        "moved", "b.md", "(from", "a.md)", "0" * 12, "→", "1" * 12,
    ]  # fmt: skip
    as_json = record.as_json()
    assert json.loads(json.dumps(as_json))["client"] == {
        "name": "Claude\u202e",
        "version": "1.0",
        "verified": False,
    }


def test_audit_table_says_what_it_takes() -> None:
    assert parse_config({}).audit == RecordRetention(365.0)
    assert parse_config({"audit": {"retention_days": 30}}).audit == RecordRetention(30.0)
    for raw, words in (
        ({"retention_days": 0}, "[audit] retention_days must be a number of days between 1 and 36500; got 0"),
        ({"retention_days": "30"}, "got a string"),
        ({"retention": 3}, "unknown key(s) retention in [audit]; allowed: retention_days"),
    ):
        with pytest.raises(ConfigError) as refused:
            parse_config({"audit": raw})
        assert words in str(refused.value)
