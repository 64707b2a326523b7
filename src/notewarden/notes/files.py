"""The files store: notes are markdown files in the workspace folder (the embedded default).

The filesystem cannot join a database transaction, so the ledger's write transaction is
the critical section and the file step is reversible until COMMIT:

    BEGIN IMMEDIATE
      claim the confirmation id                       (ledger)
      write trash/<id>.json  naming the original path (undo: remove it)
      rename the note to trash/<id>, no-replace, identity-checked   (undo: rename back)
      INSERT the trash row
    COMMIT

Every process writes the trash only while holding the ledger's write lock. So while
`recover` holds that lock, a trash entry without a committed row can only be a leftover
of a process that died between its rename and its COMMIT; recovery moves it back. The
outcome after any crash is "in the trash and consumed" or "untouched and still usable".
Nothing is unlinked here: everything deleted stays in the trash until it is emptied.
"""

from __future__ import annotations

import json
import logging
import secrets
import sqlite3
import time
from collections.abc import Sequence

from notewarden.confirm.state import Candidate
from notewarden.ledger import LedgerTxn
from notewarden.notes.model import TITLE_SCAN_BYTES, Note, extract_title
from notewarden.notes.store import TrashedNote
from notewarden.scope.fsroot import FsError, NoteExists, WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import FileUri

__all__ = ["FILES_STORE_MIGRATIONS", "FilesNoteStore"]

logger = logging.getLogger(__name__)

FILES_STORE_MIGRATIONS: Sequence[str] = (
    """
    CREATE TABLE trash (
        trash_id        TEXT PRIMARY KEY,
        workspace       TEXT NOT NULL,
        note_id         TEXT NOT NULL,
        title           TEXT NOT NULL,
        principal       TEXT NOT NULL,
        confirmation_id TEXT,
        deleted_at      REAL NOT NULL,
        dev INTEGER NOT NULL, ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL
    );
    CREATE INDEX trash_by_workspace ON trash (workspace, deleted_at);
    """,
)

_SIDECAR = ".json"


def _new_trash_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"


class FilesNoteStore:
    def list_notes(self, scope: WorkspaceScope) -> list[Note]:
        notes = []
        for entry in scope.root.list_notes():
            if not scope.contains(entry.path):
                continue
            try:
                head, identity = scope.root.read_head(entry.path, TITLE_SCAN_BYTES)
            except FsError as exc:
                logger.info("skipping unreadable note", extra={"note": entry.path, "reason": str(exc)})
                continue
            notes.append(Note(id=entry.path, title=extract_title(head, entry.path), identity=identity))
        return notes

    def move_to_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        candidate: Candidate,
        *,
        principal: str,
        confirmation_id: str,
    ) -> TrashedNote:
        root = scope.root
        trash_id = _new_trash_id()
        deleted_at = time.time()
        sidecar = json.dumps(
            {"workspace": str(scope.workspace), "note_id": candidate.id, "deleted_at": deleted_at}
        )
        root.write_trash_file(trash_id + _SIDECAR, sidecar.encode())
        txn.on_rollback(lambda: root.purge_trash_entry(trash_id + _SIDECAR))
        identity = root.quarantine(candidate.id, trash_id, candidate.identity)
        txn.on_rollback(lambda: root.restore(trash_id, candidate.id))
        txn.connection.execute(
            "INSERT INTO trash (trash_id, workspace, note_id, title, principal, confirmation_id, deleted_at, "
            "dev, ino, size, mtime_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                trash_id,
                str(scope.workspace),
                candidate.id,
                candidate.title,
                principal,
                confirmation_id,
                deleted_at,
                identity.dev,
                identity.ino,
                identity.size,
                identity.mtime_ns,
            ),
        )
        return TrashedNote(
            trash_id=trash_id, note_id=candidate.id, title=candidate.title, deleted_at=deleted_at
        )

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot) -> int:
        conn: sqlite3.Connection = txn.connection
        committed = {
            row[0]
            for row in conn.execute("SELECT trash_id FROM trash WHERE workspace = ?", (str(workspace),))
        }
        recovered = 0
        for name in root.list_trash():
            if not name.endswith(_SIDECAR):
                continue
            trash_id = name[: -len(_SIDECAR)]
            if trash_id in committed:
                continue
            try:
                note_id = json.loads(root.read_trash_file(name, 64 * 1024))["note_id"]
            except (ValueError, KeyError, TypeError, FsError):
                logger.error("unreadable trash sidecar left in place", extra={"entry": name})
                continue
            if root.trash_entry(trash_id) is not None:
                try:
                    root.restore(trash_id, note_id)
                except NoteExists:
                    logger.error(
                        "uncommitted trash entry kept in trash: its original path is taken again",
                        extra={"trash_id": trash_id, "note": note_id},
                    )
                    continue
            root.purge_trash_entry(name)
            recovered += 1
            logger.warning("recovered an uncommitted delete", extra={"trash_id": trash_id, "note": note_id})
        return recovered
