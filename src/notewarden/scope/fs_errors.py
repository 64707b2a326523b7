"""The errors of every workspace file operation (`scope.fsroot`, `scope.note_paths`); the tools map
each to an error code (`tools.registry`).

Rule 1: error messages name the relative note path that was given and say what is allowed. They never
contain absolute paths, not even the workspace's own; a rejected absolute note path is not echoed.
"""

from __future__ import annotations

import errno

__all__ = [
    "EscapeBlocked",
    "FsError",
    "IdentityMismatch",
    "NotARegularFile",
    "NoteExists",
    "NoteMissing",
    "PathRejected",
    "WorkspaceMoved",
    "escape_blocked",
    "os_error",
]


class FsError(Exception):
    """Base class. The message says what was wrong and what is allowed, with relative paths only."""


class PathRejected(FsError):
    """A note path or trash name is malformed; rejected before touching the filesystem."""


class EscapeBlocked(FsError):
    """Resolution met a symlink, magic link, mount crossing or other way out of the workspace."""


class NotARegularFile(FsError):
    """A directory, FIFO, socket or device sits where a note was expected."""


class IdentityMismatch(FsError):
    """The entry is not the file that was confirmed (dev, ino, mtime_ns or size differ)."""


class NoteMissing(FsError):
    """The note, a parent directory or a trash entry does not exist."""


class NoteExists(FsError):
    """An exclusive create, restore or quarantine found its target name taken."""


class WorkspaceMoved(FsError):
    """The workspace's configured path no longer names the directory this root holds (`fsroot` Rule 9)."""


def os_error(display: str, exc: OSError) -> FsError:
    """An ``OSError`` that no operation has a better word for, said per Rule 1."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return FsError(f"{display}: permission denied")
    if exc.errno == errno.ENAMETOOLONG:
        return PathRejected(f"{display}: name too long")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return FsError(f"{display}: no space left in the workspace")
    return FsError(f"{display}: {exc.strerror or 'error'}")


def escape_blocked(display: str) -> EscapeBlocked:
    """What resolution says when a component is a symlink or mount point (``fsroot`` Rules 1 and 3)."""
    return EscapeBlocked(
        f"{display}: a component is a symbolic link or mount point, or leaves the workspace; "
        "symlinks are never followed and paths must stay on the workspace's own mount"
    )
