"""The grammar of note paths and of the names notewarden reserves in a workspace folder. Everything here is
checked before any system call is made; what breaks a rule raises ``PathRejected``.

Rule 1: note paths are relative POSIX paths of plain names joined by single slashes: UTF-8 (no lone
surrogates), no NUL or other control characters, no backslash, no empty, ``.`` or ``..`` component, no
leading or trailing slash, each component at most 255 bytes, the whole path at most 4095 bytes. The trash
directory ``.notewarden-trash`` and the history directory ``.notewarden-history`` (first component) and
names starting with ``.nw-tmp-`` are reserved.

Rule 2: entries of the trash and the history are named by 1-200 characters from ``[A-Za-z0-9._-]``, not
``.`` or ``..``. Names starting with ``~`` there are records, never entries: the trash's intent journal
``~intents`` (``notes.trash_journal``) and owner marker ``~owner`` (``notes.ownership``), the history's
move journal ``~move`` (``notes.files``); each record lives in one of the two directories
(``record_directory``).

Rule 3: a listing shows only the paths Rule 1 accepts (``addressable``), so every listed path can be used.
"""

from __future__ import annotations

import re
from typing import Final

from notewarden.scope.fs_errors import PathRejected

__all__ = [
    "HISTORY_DIR_NAME",
    "MAX_COMPONENT_BYTES",
    "MAX_PATH_BYTES",
    "MOVE_JOURNAL_NAME",
    "NOTE_SUFFIXES",
    "TMP_PREFIX",
    "TRASH_DIR_NAME",
    "TRASH_JOURNAL_NAME",
    "TRASH_NAME_RE",
    "TRASH_OWNER_NAME",
    "addressable",
    "check_trash_name",
    "record_directory",
    "split_dir",
    "split_relative",
]

TRASH_DIR_NAME: Final = ".notewarden-trash"
TRASH_JOURNAL_NAME: Final = "~intents"
"""In the trash directory; not a valid trash name, so never listed or purged as an entry."""
TRASH_OWNER_NAME: Final = "~owner"
"""In the trash directory: which ledger owns this trash (`notes.ownership`); a record, like the journal."""
HISTORY_DIR_NAME: Final = ".notewarden-history"
"""Saved versions of notes, one file per version (``notes.history``), named like trash entries."""
MOVE_JOURNAL_NAME: Final = "~move"
"""In the history directory: the journal of a move that rewrites links (``notes.files``), a record."""
_RECORDS: Final = {
    TRASH_JOURNAL_NAME: TRASH_DIR_NAME,
    TRASH_OWNER_NAME: TRASH_DIR_NAME,
    MOVE_JOURNAL_NAME: HISTORY_DIR_NAME,
}
NOTE_SUFFIXES: Final = (".md", ".markdown")
TMP_PREFIX: Final = ".nw-tmp-"
MAX_COMPONENT_BYTES: Final = 255
MAX_PATH_BYTES: Final = 4095

TRASH_NAME_RE: Final = re.compile(r"[A-Za-z0-9._-]{1,200}")
_CONTROL_RE: Final = re.compile(r"[\x00-\x1f\x7f]")


def split_dir(path: str) -> tuple[str, ...]:
    """Components of a directory path as ``DirListing`` spells it (``""`` is the root)."""
    return split_relative(path) if path else ()


def split_relative(path: str) -> tuple[str, ...]:
    """Validate a note path (Rule 1) and return its components."""
    if not isinstance(path, str):
        raise PathRejected("note path must be a string")
    if not path:
        raise PathRejected("note path is empty; give a relative path such as 'dir/note.md'")
    if _CONTROL_RE.search(path):
        raise PathRejected(f"note path {path!r} contains NUL or control characters, which are not allowed")
    if "\\" in path:
        raise PathRejected(f"note path {path!r} contains a backslash; separate components with '/'")
    if path.startswith("/"):
        raise PathRejected("note path is absolute; give a path relative to the workspace")
    if path.endswith("/"):
        raise PathRejected(f"note path {path!r} ends with '/'; name a file, not a directory")
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        raise PathRejected(f"note path {path!r} is not valid UTF-8") from None
    if len(encoded) > MAX_PATH_BYTES:
        raise PathRejected(f"note path is {len(encoded)} bytes long; at most {MAX_PATH_BYTES} are allowed")
    parts = tuple(path.split("/"))
    for part in parts:
        if part in ("", ".", ".."):
            raise PathRejected(
                f"note path {path!r} has an empty, '.' or '..' component; only plain names are allowed"
            )
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise PathRejected(f"note path {path!r} has a component longer than {MAX_COMPONENT_BYTES} bytes")
        if part.startswith(TMP_PREFIX):
            raise PathRejected(f"note path {path!r}: names starting with {TMP_PREFIX!r} are reserved")
    if parts[0] == TRASH_DIR_NAME:
        raise PathRejected(f"note path {path!r}: {TRASH_DIR_NAME!r} is reserved for the trash")
    if parts[0] == HISTORY_DIR_NAME:
        raise PathRejected(f"note path {path!r}: {HISTORY_DIR_NAME!r} is reserved for version history")
    return parts


def record_directory(name: str) -> str:
    """The service directory a record (a ``~`` name) lives in."""
    directory = _RECORDS.get(name)
    if directory is None:
        raise PathRejected(f"{name!r} is not a record of the trash or the history")
    return directory


def check_trash_name(name: str) -> str:
    """A trash or history entry's name (Rule 2), or ``PathRejected``."""
    if not isinstance(name, str) or not TRASH_NAME_RE.fullmatch(name) or name in (".", ".."):
        raise PathRejected(
            f"trash name {name!r} is not allowed; use 1-200 characters from [A-Za-z0-9._-], not '.' or '..'"
        )
    return name


def addressable(path: str) -> bool:
    """Listing shows only what the other operations accept, so every listed path can be used (Rule 3)."""
    try:
        split_relative(path)
    except PathRejected:
        return False
    return True
