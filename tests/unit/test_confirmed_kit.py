"""The kit of notewarden's confirmed tools (`tools.confirmed`) and its one error vocabulary."""

from __future__ import annotations

import hashlib

from notewarden.confirm import Refusal
from notewarden.notes.history import HistoryEntry
from notewarden.notes.model import NoteIdentity
from notewarden.notes.store import TrashedNote
from notewarden.tools.confirmed import selection_digest
from notewarden.tools.notes_trash import entry_key
from notewarden.tools.registry import ToolFailure, tool_error

TRASHED = [
    TrashedNote("t-b", "b.md", "B", 2.0, 3, NoteIdentity((1, 7), 11, 3)),
    TrashedNote("t-a", "a.md", "A", 1.0, 5, NoteIdentity((1, 8), 12, 5)),
    TrashedNote("t-a.2", "c.md", "C", 1.5, 0, None),
]
VERSIONS = [
    HistoryEntry("20261201T100000-bb", "x.md", 1.0, "alice", "notes_edit", "append", 3, "v2"),
    HistoryEntry("20261201T090000-aa", "x.md", 0.5, "alice", "notes_edit", "append", 2, "v1"),
]


def test_one_digest_binds_both_purges_as_each_did_before() -> None:
    """The same value as the two digests it replaces (sorted by id, one line per entry), so a
    confirmation sealed before the change still commits after it."""

    def before(lines: dict[str, str]) -> str:
        digest = hashlib.sha256()
        for key in sorted(lines):
            digest.update(f"{lines[key]}\n".encode())
        return digest.hexdigest()

    trash_then = before(
        {
            e.trash_id: f"{e.trash_id}\0{e.identity and (*e.identity.key, e.identity.modified_ns, e.identity.size)}"
            for e in TRASHED
        }
    )
    assert selection_digest(map(entry_key, TRASHED)) == trash_then
    history_then = before({e.version_id: f"{e.version_id}\0{e.note_id}\0{e.version}" for e in VERSIONS})
    assert selection_digest(f"{e.version_id}\0{e.note_id}\0{e.version}" for e in VERSIONS) == history_then


def test_a_changed_entry_changes_the_digest() -> None:
    changed = [TRASHED[0], TrashedNote("t-a", "a.md", "A", 1.0, 6, NoteIdentity((1, 8), 13, 6)), TRASHED[2]]
    assert selection_digest(map(entry_key, changed)) != selection_digest(map(entry_key, TRASHED))
    assert selection_digest(map(entry_key, TRASHED[:2])) != selection_digest(map(entry_key, TRASHED))


def test_a_tool_failure_is_the_librarys_refusal_and_answers_alike() -> None:
    assert ToolFailure is Refusal
    details = {"currentVersion": "v3"}
    assert (
        tool_error("version_conflict", "the note \u202echanged", details)
        == Refusal("version_conflict", "the note \u202echanged", details).result()
    )
