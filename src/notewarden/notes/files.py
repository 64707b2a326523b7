"""The files store: notes are markdown files in the workspace folder (the embedded default).

The filesystem cannot join a database transaction, so the ledger's write transaction is
the critical section and the file step is reversible until COMMIT:

    BEGIN (SQLite: IMMEDIATE)
      claim the confirmation id                       (ledger)
      lock the workspace                              (PostgreSQL: pg_advisory_xact_lock)
      write trash/<id>.json  naming the original path
      rename the note to trash/<id>, no-replace, identity-checked   (undo: rename back, remove .json)
      INSERT the trash row
    COMMIT

Every process writes a workspace's trash only while holding that workspace's lock (on
SQLite the database write lock, which covers every workspace). So while `recover` holds
the lock, a trash entry without a committed row can only be a leftover of a process that
died between its rename and its COMMIT (or whose COMMIT's outcome was unknown), and
recovery moves it back. Recovery runs at start-up, and again inside a delete that finds
its note missing, so a retry on any instance heals a dead instance's half-done move. The
outcome after any crash is "in the trash and consumed" or "untouched and still usable".
Nothing is unlinked here: everything deleted stays in the trash until it is emptied.

The trash rows live in the ledger's database (SQLite or PostgreSQL) and are written with
the portable SQL of `LedgerTxn.execute`.
"""

from __future__ import annotations

import json
import logging
import secrets
import time

from notewarden.confirm.state import Candidate
from notewarden.ledger import LedgerTxn
from notewarden.ledger.schema import SchemaComponent
from notewarden.notes.model import TITLE_SCAN_BYTES, Note, extract_title
from notewarden.notes.store import TrashedNote
from notewarden.scope.fsroot import FsError, NoteExists, NoteMissing, WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import FileUri

__all__ = ["FILES_STORE_SCHEMA", "FilesNoteStore"]

logger = logging.getLogger(__name__)

FILES_STORE_SCHEMA = SchemaComponent(
    "files_store",
    tables=("trash",),
    sqlite=(
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
    ),
    postgres=(
        """
        CREATE TABLE trash (
            trash_id        text PRIMARY KEY,
            workspace       text NOT NULL,
            note_id         text NOT NULL,
            title           text NOT NULL,
            principal       text NOT NULL,
            confirmation_id text,
            deleted_at      double precision NOT NULL,
            dev bigint NOT NULL, ino bigint NOT NULL, size bigint NOT NULL, mtime_ns bigint NOT NULL
        );
        CREATE INDEX trash_by_workspace ON trash (workspace, deleted_at);
        """,
    ),
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
        txn.lock_workspace(str(scope.workspace))
        try:
            return self._trash(txn, scope, candidate, principal=principal, confirmation_id=confirmation_id)
        except NoteMissing:
            if not self.recover(txn, scope.workspace, scope.root):
                raise
        return self._trash(txn, scope, candidate, principal=principal, confirmation_id=confirmation_id)

    def _trash(
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
        sidecar_name = trash_id + _SIDECAR
        deleted_at = time.time()
        sidecar = json.dumps(
            {"workspace": str(scope.workspace), "note_id": candidate.id, "deleted_at": deleted_at}
        )
        root.write_trash_file(sidecar_name, sidecar.encode())
        try:
            identity = root.quarantine(candidate.id, trash_id, candidate.identity)
        except BaseException:
            root.purge_trash_entry(sidecar_name)
            raise

        def put_back() -> None:
            root.restore(trash_id, candidate.id)
            root.purge_trash_entry(sidecar_name)  # only once the note is back: recovery needs it until then

        txn.on_rollback(put_back)
        txn.execute(
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

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot | None) -> int:
        if root is None:
            raise ValueError(f"the files store needs the directory of {workspace} to recover it")
        txn.lock_workspace(str(workspace))
        committed = {
            row[0] for row in txn.execute("SELECT trash_id FROM trash WHERE workspace = ?", (str(workspace),))
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
