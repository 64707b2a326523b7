"""Who the store tests' own writes are by: the `history.Change` every mutating store method takes, and
records (`notes.change_log`)."""

from __future__ import annotations

from notewarden.notes.history import Change

__all__ = ["EMPTYING", "PURGING", "SETUP", "deleting"]

SETUP = Change("alice", "notes_create", "written by the test", "store-test", "1")
"""A test's writes that set the scene (creates, moves, restores)."""
EMPTYING = Change("alice", "notes_trash_empty", "the trash emptied by the test", confirmation_id="empty-1")
PURGING = Change(
    "alice", "notes_history_purge", "saved versions purged by the test", confirmation_id="purge-1"
)


def deleting(principal: str, confirmation_id: str) -> Change:
    """A confirmed delete's change."""
    return Change(
        principal, "notes_delete", "moved to the trash by the test", confirmation_id=confirmation_id
    )
