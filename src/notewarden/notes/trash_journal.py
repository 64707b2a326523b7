"""The trash's intent journal, `.notewarden-trash/~intents`: how the files store records each delete
before its rename, so that recovery can move back what did not commit (`notes.files`; who may act on
which line: `notes.ownership` Rule 1).

Rule 1 (the record): each line is one JSON object:

    {"trash_id", "note_id", "workspace", "ledger"}   an intent, appended before the rename
    {"committed": trash_id, "ledger"}                appended after COMMIT: a confirmed delete

The committed line is advisory (the ledger's row is the truth; a crash may lose the line), so a
reader that is not the owner can tell confirmed deletes from unresolved ones. Only holders of the
owner ledger's lock rewrite the journal (`reset_journal`); every other process only reads it.

Rule 2 (appending): a line is one `write` with `O_APPEND`, so the lines of concurrent writers never
interleave. Appending allocates no inode, unlike a file per entry (its kernel CPU per delete on
ext4: docs/performance.md). With `sync` the line is fsynced, and the
trash directory too when the append created the journal (survives power loss).

Rule 3: the journal is a record of the trash (`note_paths` Rule 2), reached only through the workspace
root's record primitives (`append_record`, `read_record`, `truncate_record`): opened beneath the trash
directory's fd, never through a symlink, and only while it is a regular file of the service
(`fsroot` Rule 5).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from notewarden.scope.fsroot import HeldDir, RecordAppender, WorkspaceRoot
from notewarden.scope.note_paths import TRASH_JOURNAL_NAME

__all__ = [
    "JournalLine",
    "append_line",
    "committed_line",
    "intent_line",
    "open_journal",
    "parse_journal",
    "read_journal",
    "reset_journal",
]


def append_line(root: WorkspaceRoot, line: bytes, *, sync: bool = True) -> None:
    """Append one line (Rule 2); the journal is created on first use."""
    root.append_record(TRASH_JOURNAL_NAME, line, sync=sync)


def open_journal(root: WorkspaceRoot, *, sync: bool, held: HeldDir | None = None) -> RecordAppender:
    """The journal open for appending (Rule 2), for a delete's intent line and, once its transaction
    has committed, its committed line; the caller closes it."""
    return root.record_appender(TRASH_JOURNAL_NAME, sync=sync, held=held)


def read_journal(root: WorkspaceRoot, max_bytes: int) -> bytes:
    """The journal's first `max_bytes` (empty when there is no trash or no journal)."""
    return root.read_record(TRASH_JOURNAL_NAME, max_bytes) or b""


def reset_journal(root: WorkspaceRoot, keep: bytes = b"") -> None:
    """Empty the journal once recovery has dealt with its lines, but for `keep`."""
    root.truncate_record(TRASH_JOURNAL_NAME, keep)


@dataclass(frozen=True, slots=True)
class JournalLine:
    raw: bytes
    trash_id: str
    ledger: str | None
    """None on a legacy line (an earlier notewarden): its ledger is unknown."""
    note_id: str | None
    """Where the note was (an intent); None on a committed line."""

    @property
    def committed(self) -> bool:
        return self.note_id is None


def intent_line(trash_id: str, note_id: str, workspace: str, ledger_id: str) -> bytes:
    fields = {"trash_id": trash_id, "note_id": note_id, "workspace": workspace, "ledger": ledger_id}
    return json.dumps(fields).encode() + b"\n"


def committed_line(trash_id: str, ledger_id: str) -> bytes:
    return json.dumps({"committed": trash_id, "ledger": ledger_id}).encode() + b"\n"


def parse_journal(journal: bytes) -> tuple[list[JournalLine], int]:
    """The readable lines, and how many were not (no process can act on those)."""
    lines, unreadable = [], 0
    for raw in journal.splitlines(keepends=True):
        try:
            fields = json.loads(raw)
            ledger = fields.get("ledger")
            if "committed" in fields:
                trash_id, note_id = fields["committed"], None
            else:
                trash_id, note_id = fields["trash_id"], fields["note_id"]
                if not isinstance(note_id, str):
                    raise TypeError("note_id must be a string")
            if not isinstance(trash_id, str) or not (ledger is None or isinstance(ledger, str)):
                raise TypeError("trash_id and ledger must be strings")
        except (ValueError, KeyError, TypeError, AttributeError):
            unreadable += 1
            continue
        lines.append(JournalLine(raw, trash_id, ledger, note_id))
    return lines, unreadable
