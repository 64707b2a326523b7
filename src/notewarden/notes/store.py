"""The `NoteStore` protocol: what every note backend offers the tools.

A store never authorizes: it receives a `WorkspaceScope` that `grants` produced, and
operates only inside it. Every store uses the same note model (`notes.model`): a note
belongs to a workspace URI and its id is a relative path under `fsroot.split_relative`'s
rules, so a scope's subtree contains the same ids whatever the store. Mutations take the ledger's open transaction (`LedgerTxn`), so
that a store sharing the ledger's database writes its rows in the same transaction as
the claim, and a store that cannot (files) registers an undo step to run on rollback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from notewarden.confirm.state import Candidate
from notewarden.ledger import LedgerTxn
from notewarden.notes.model import Note
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import FileUri

__all__ = ["NoteStore", "TrashedNote"]


@dataclass(frozen=True, slots=True)
class TrashedNote:
    trash_id: str
    note_id: str
    title: str
    deleted_at: float


class NoteStore(Protocol):
    def list_notes(self, scope: WorkspaceScope) -> Sequence[Note]:
        """Every note inside the scope's subtree, sorted by id."""
        ...

    def move_to_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        candidate: Candidate,
        *,
        principal: str,
        confirmation_id: str,
    ) -> TrashedNote:
        """Move the confirmed note to the trash inside `txn`, after checking it is still that file.

        Raises `fsroot.IdentityMismatch` when the note changed since it was shown, and
        `fsroot.NoteMissing` when it is gone.
        """
        ...

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot | None) -> int:
        """Undo trash moves whose transaction never committed (a crash); returns how many.
        `root` is the workspace's directory, `None` for stores whose workspaces are not folders."""
        ...
