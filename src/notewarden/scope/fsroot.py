"""A capability for one workspace directory: with the modules it builds on (``note_paths``: the names it
accepts; ``resolver``: opening beneath the held directory; ``fs_syscalls``: openat2, renameat2, statx;
``fs_errors``) the only code in notewarden that touches workspace files.

A ``WorkspaceRoot`` holds an open directory fd, like Go's ``os.Root`` or Rust's ``cap_std::fs::Dir``, and
resolves every note path relative to that fd. Linux only. Every path and name it is given is checked
against ``note_paths`` first, and its errors follow ``fs_errors`` Rule 1.

Rule 1: nothing follows a symbolic link, not even one that stays inside the workspace. Symlinks are never
listed as notes or folders (``list_dir`` reports each in ``skipped``, with why), and using one as a parent
or as the note itself raises ``EscapeBlocked``. Intermediate components
are resolved with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
RESOLVE_NO_XDEV)``; where openat2 is unavailable (ENOSYS, or EPERM/EINVAL/E2BIG from seccomp filters), or
when forced, by opening one component at a time with ``O_NOFOLLOW | O_DIRECTORY`` (``resolver`` Rule 1,
``fs_syscalls`` Rule 1). The last component is then used with ``*at()`` calls relative to the parent fd and no-follow flags.

Rule 2: no path string is ever re-opened by name from the root of the filesystem. The configured
workspace path is opened once in ``WorkspaceRoot.open``; afterwards only the held fd is used, so renaming
or replacing the configured directory does not redirect an open ``WorkspaceRoot``.

Rule 3: resolution never crosses a mount point. openat2 enforces this with RESOLVE_NO_XDEV; the walk
compares ``st_dev`` and, where ``statx`` reports it, the mount id of every directory with the root's.
The mount id also catches bind mounts of the same filesystem, which keep ``st_dev``. Leaves (the note
itself) get the same check, so a file bind-mounted over a note name is refused too.

Rule 4: only regular files are notes. Files are opened with ``O_NONBLOCK | O_NOCTTY`` after an ``lstat``
check and verified again with ``fstat``, so a FIFO, socket or device planted under a note name raises
``NotARegularFile`` instead of hanging or opening a device.

Rule 5: changes are exclusive or verified. New files use ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a dangling
symlink at the name is refused, never written through). Replacement writes a temp file and swaps it in
with ``renameat2(RENAME_EXCHANGE)``, then verifies the displaced entry is the expected one and swaps back
if not. Quarantine, restore and ``move_note`` move with ``renameat2(RENAME_NOREPLACE)`` and compare
identities before and after. Where renameat2 is refused (ENOSYS/EPERM/EINVAL) both fall back to check-then-rename; the
residual races are described at ``fs_syscalls.rename_noreplace`` and ``replace_note``. Quarantine never unlinks
anything; only ``purge_trash_entry`` and ``purge_history_entry`` delete, and only inside the trash and
history directories, and ``remove_created``, which undoes a note creation whose change did not commit,
only while the name still holds the file created. Records (``note_paths`` Rule 2) are the only files appended to (``append_record``,
which the trash's intent journal uses, ``notes.trash_journal``): ``O_APPEND | O_NOFOLLOW | O_NONBLOCK``,
and only while the record is a regular file of the service. A record is replaced by writing a temp file
and renaming it over, or created exclusively by linking it into place. A
history entry is a hard link to the inode of the version it saves (``linkat`` without following,
identity-checked), or a copy created with ``O_EXCL``; neither is ever written again.

Rule 6: hard links are visible, not refused. A hard link is another name for an inode, so no path check
can tell whether its data also lives outside the workspace. ``NoteEntry.nlink`` reports the count, and
``read_note``/``quarantine`` refuse ``st_nlink > 1`` only when called with ``refuse_hardlinked=True``.
The real defence is deployment: workspaces on their own filesystem and ``fs.protected_hardlinks=1``.

Rule 7: observing is done on held fds too: ``list_dir`` hands a watcher (inotify) the
``/proc/self/fd/N`` name of the directory it has just opened, so a watch lands on exactly the
inode that is listed, never on whatever a path names later.

Rule 8: every fd opened by an operation is closed before it returns (try/finally), on success and on
error. ``close()`` must not race with operations still running on the same ``WorkspaceRoot``.

Rule 8a: the exceptions to Rule 8 serve the steps of one change. ``held_trash`` opens the trash
directory once, with the checks of every other opening (a confirmed delete reads the owner marker,
appends its intent line and moves the note through the same fd), and closes it when the ``with``
block ends. ``record_appender`` keeps a record open for a later line of the same change (the
delete's committed line, appended after its transaction commits); its owner closes it when the
transaction ends, and it closes itself if it is dropped unclosed. Neither outlives a request.

Rule 9: a root remembers the path it was opened from, and ``require_in_place`` (which callers run
before every change they make) compares what that path names now, without following a symlink,
with the held directory. A folder renamed away and replaced by another directory or a symlink, or
simply gone, raises ``WorkspaceMoved`` (naming the workspace by the label its opener gave, never
by path) and is logged: the held fd would otherwise keep writing into a folder the operator moved
away. Reads go on from the held directory, the one that was configured and opened (Rule 2).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final

from notewarden.scope.fs_errors import (
    EscapeBlocked,
    FsError,
    IdentityMismatch,
    NotARegularFile,
    NoteExists,
    NoteMissing,
    PathRejected,
    WorkspaceMoved,
    escape_blocked,
    os_error,
)
from notewarden.scope.fs_syscalls import (
    DIR_PATH,
    DIR_READ,
    RENAME_EXCHANGE,
    UNAVAILABLE_ERRNOS,
    fsync_dir,
    mount_id,
    probe_openat2,
    rename_noreplace,
    renameat2,
    write_all,
)
from notewarden.scope.note_paths import (
    HISTORY_DIR_NAME,
    NOTE_SUFFIXES,
    TMP_PREFIX,
    TRASH_DIR_NAME,
    TRASH_NAME_RE,
    addressable,
    check_trash_name,
    record_directory,
    split_dir,
    split_relative,
)
from notewarden.scope.resolver import Resolver

__all__ = [
    "FORCE_FALLBACK_ENV",
    "SKIPPED_OTHER_FILESYSTEM",
    "SKIPPED_SYMLINK",
    "DirListing",
    "DirStamp",
    "FileIdentity",
    "HeldDir",
    "NoteEntry",
    "RecordAppender",
    "RecordStamp",
    "WorkspaceRoot",
]

logger = logging.getLogger(__name__)

FORCE_FALLBACK_ENV: Final = "NOTEWARDEN_FORCE_FALLBACK"

_READ_CHUNK: Final = 1 << 16
_RECORD_OPEN: Final = os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC

RecordStamp = tuple[int, int, int, int, int]
"""(dev, ino, size, mtime_ns, ctime_ns) of a record: what any write or replacement changes."""


@dataclass(frozen=True, slots=True)
class HeldDir:
    """A service directory opened once (``WorkspaceRoot.held_trash``, Rule 8a): its name and fd."""

    name: str
    fd: int


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """What makes a confirmed file that file: its inode plus the content version callers saw."""

    dev: int
    ino: int
    mtime_ns: int
    size: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileIdentity:
        return cls(st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


@dataclass(frozen=True, slots=True)
class NoteEntry:
    path: str
    identity: FileIdentity
    nlink: int


@dataclass(frozen=True, slots=True)
class DirStamp:
    """A directory's inode and mtime: an unchanged stamp means no entry was added, removed or renamed."""

    ino: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class DirListing:
    path: str
    """Relative POSIX path of the directory, ``""`` for the workspace root."""
    stamp: DirStamp
    notes: list[NoteEntry]
    subdirs: list[tuple[str, DirStamp]]
    """(relative path, stamp from the parent's listing) of each addressable subdirectory."""
    entries: int
    """How many directory entries were read, listed or not."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(relative path, why) of each visible entry left out on purpose: a symlink, another filesystem."""


SKIPPED_SYMLINK: Final = (
    "a symbolic link: not followed (notewarden never follows symlinks, not even inside the workspace)"
)
SKIPPED_OTHER_FILESYSTEM: Final = "on another filesystem (a mount point): not read"


class RecordAppender:
    """A record open with ``O_APPEND`` (``WorkspaceRoot.record_appender``): each ``append`` is one
    ``write``, so the lines of concurrent writers never interleave (Rule 5)."""

    __slots__ = ("_fd", "_name")

    def __init__(self, name: str, fd: int) -> None:
        self._name = name
        self._fd: int | None = fd

    def append(self, data: bytes, *, sync: bool) -> None:
        if self._fd is None:
            raise FsError(f"record {self._name!r}: closed")
        try:
            if os.write(self._fd, data) != len(data):
                raise FsError(f"record {self._name!r}: short write; no space left in the workspace?")
            if sync:
                os.fsync(self._fd)
        except OSError as exc:
            raise os_error(f"record {self._name!r}", exc) from exc

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:  # a transaction that ended without running its steps (Rule 8a)
        self.close()


class WorkspaceRoot:
    """An open workspace directory; every operation resolves beneath it (see the module rules)."""

    __slots__ = ("_dev", "_fd", "_ino", "_label", "_path", "_resolve")

    def __init__(self, fd: int, resolver: str, path: str | None = None, label: str | None = None) -> None:
        st = os.fstat(fd)
        self._fd: int | None = fd
        self._dev = st.st_dev
        self._ino = st.st_ino
        self._resolve = Resolver(st.st_dev, mount_id(fd), resolver)
        self._path = path
        self._label = label or "workspace"

    @classmethod
    def open(
        cls, path: str, *, force_fallback: bool | None = None, label: str | None = None
    ) -> WorkspaceRoot:
        """Open an operator-configured absolute directory. Its last component must not be a symlink.
        ``label`` names the workspace in ``WorkspaceMoved`` (its URI, which the caller already knows)."""
        if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
            raise PathRejected("workspace root must be an absolute path without NUL characters")
        if force_fallback is None:
            force_fallback = os.environ.get(FORCE_FALLBACK_ENV) == "1"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise NoteMissing("workspace root does not exist") from None
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                if os.path.islink(path):
                    raise EscapeBlocked(
                        "workspace root is a symbolic link; configure the real directory"
                    ) from None
                raise NotARegularFile("workspace root is not a directory") from None
            raise os_error("workspace root", exc) from exc
        try:
            resolver = "walk" if force_fallback or not probe_openat2(fd) else "openat2"
            return cls(fd, resolver, path, label)
        except BaseException:
            os.close(fd)
            raise

    @property
    def identity(self) -> tuple[int, int]:
        return (self._dev, self._ino)

    @property
    def resolver(self) -> str:
        return self._resolve.mode

    def __repr__(self) -> str:
        return f"WorkspaceRoot(identity={self.identity}, resolver={self._resolve.mode!r})"

    def __enter__(self) -> WorkspaceRoot:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _root(self) -> int:
        if self._fd is None:
            raise FsError("workspace root is closed")
        return self._fd

    def verify_identity(self, expected: tuple[int, int]) -> None:
        """Check that the held root is the directory recorded earlier (e.g. sealed in requestState)."""
        st = os.fstat(self._root())
        if (st.st_dev, st.st_ino) != tuple(expected):
            raise EscapeBlocked("workspace root is not the directory that was confirmed")
        if st.st_nlink == 0:
            raise EscapeBlocked("workspace root directory has been removed")

    def require_in_place(self) -> None:
        """Rule 9: the configured path still names the held directory, or ``WorkspaceMoved``."""
        if self._path is None:
            return
        try:
            st: os.stat_result | None = os.stat(self._path, follow_symlinks=False)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == (self._dev, self._ino):
            return
        if st is None:
            now = "is gone"
        elif stat.S_ISLNK(st.st_mode):
            now = "is now a symbolic link"
        elif stat.S_ISDIR(st.st_mode):
            now = "is now another directory"
        else:
            now = "is no longer a directory"
        logger.warning(
            "workspace folder renamed or replaced since start-up: changes refused",
            extra={"event": "workspace_moved", "workspace": self._label, "found": now},
        )
        raise WorkspaceMoved(
            f"{self._label}: its folder was renamed or replaced after notewarden opened it (the configured "
            f"path {now}); nothing was changed. Put the folder back, or restart notewarden to serve what "
            "is at that path now"
        )

    # Notes

    def list_notes(
        self,
        suffixes: tuple[str, ...] = NOTE_SUFFIXES,
        *,
        skip_hidden: bool = True,
        max_entries: int = 1_000_000,
    ) -> list[NoteEntry]:
        """All regular files with one of ``suffixes`` (case-insensitive), sorted by path.

        Each directory is opened through the same resolver as note paths and must still be the inode
        seen in its parent's listing, so a directory swapped for a symlink or mount mid-walk is skipped,
        as are unreadable directories, names that ``split_relative`` would reject, the trash and temp
        files. More than ``max_entries`` directory entries raise FsError rather than truncating.
        """
        notes: list[NoteEntry] = []
        stack: list[tuple[tuple[str, ...], tuple[int, int]]] = [((), self.identity)]
        seen = 0
        while stack:
            parts, expected = stack.pop()
            try:
                listing = self.list_dir(parts, suffixes, skip_hidden=skip_hidden, expected=expected)
            except (EscapeBlocked, NoteMissing):
                continue
            except FsError:
                if not parts:
                    raise
                continue
            seen += listing.entries
            if seen > max_entries:
                raise FsError(f"workspace has more than {max_entries} entries; listing refused")
            notes.extend(listing.notes)
            stack.extend((split_dir(d), (self._dev, stamp.ino)) for d, stamp in listing.subdirs)
        notes.sort(key=lambda n: n.path)
        return notes

    def list_dir(
        self,
        parts: tuple[str, ...],
        suffixes: tuple[str, ...] = NOTE_SUFFIXES,
        *,
        skip_hidden: bool = True,
        expected: tuple[int, int] | None = None,
        watch: Callable[[str], object] | None = None,
    ) -> DirListing:
        """One directory: its stamp, its notes and its subdirectories (one level, same rules as
        ``list_notes``). ``expected`` is the (dev, ino) the caller saw for it; another inode raises
        EscapeBlocked. ``watch`` is called with a ``/proc/self/fd/N`` path naming the opened directory
        before it is read (for inotify), so no change after the listing can go unnoticed."""
        wanted = tuple(s.lower() for s in suffixes)
        display = "/".join(parts) or "workspace root"
        dfd = self._resolve.open_dir(self._root(), parts, DIR_READ, display)
        try:
            st = os.fstat(dfd)
            if expected is not None and (st.st_dev, st.st_ino) != expected:
                raise EscapeBlocked(f"{display}: was replaced while being listed")
            if watch is not None:
                watch(f"/proc/self/fd/{dfd}")
                st = os.fstat(dfd)
            with os.scandir(dfd) as it:
                entries = list(it)
            notes: list[NoteEntry] = []
            subdirs: list[tuple[str, DirStamp]] = []
            skipped: list[tuple[str, str]] = []
            for entry in entries:
                name = entry.name
                if skip_hidden and name.startswith("."):
                    continue
                if not (
                    name.lower().endswith(wanted) or entry.is_dir(follow_symlinks=False) or entry.is_symlink()
                ):
                    continue  # a file that is not listed: no lstat (the entry's type is known without one)
                rel = "/".join((*parts, name))
                if not addressable(rel):
                    continue
                try:
                    est = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISLNK(est.st_mode):
                    skipped.append((rel, SKIPPED_SYMLINK))
                    continue
                if est.st_dev != self._dev:
                    skipped.append((rel, SKIPPED_OTHER_FILESYSTEM))
                    continue
                if stat.S_ISDIR(est.st_mode):
                    subdirs.append((rel, DirStamp(est.st_ino, est.st_mtime_ns)))
                elif stat.S_ISREG(est.st_mode) and name.lower().endswith(wanted):
                    if self._resolve.mnt is not None:
                        try:
                            if mount_id(dfd, name) != self._resolve.mnt:
                                continue
                        except OSError:
                            continue
                    notes.append(NoteEntry(rel, FileIdentity.of(est), est.st_nlink))
            return DirListing(
                "/".join(parts), DirStamp(st.st_ino, st.st_mtime_ns), notes, subdirs, len(entries), skipped
            )
        finally:
            os.close(dfd)

    def dir_stamp(self, parts: tuple[str, ...]) -> DirStamp:
        """The inode and mtime of a directory: its mtime changes whenever an entry is added, removed
        or renamed in it (not when a file in it is edited in place)."""
        display = "/".join(parts) or "workspace root"
        dfd = self._resolve.open_dir(self._root(), parts, DIR_PATH, display)
        try:
            st = os.fstat(dfd)
            return DirStamp(st.st_ino, st.st_mtime_ns)
        finally:
            os.close(dfd)

    def stat_note(self, path: str) -> NoteEntry:
        parts = split_relative(path)
        pfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_PATH, path)
        try:
            st = self._resolve.lstat_leaf(pfd, parts[-1], path)
        finally:
            os.close(pfd)
        return NoteEntry(path, FileIdentity.of(st), st.st_nlink)

    def read_note(
        self, path: str, *, max_bytes: int = 8 * 1024 * 1024, refuse_hardlinked: bool = False
    ) -> tuple[bytes, FileIdentity]:
        """Read a whole note. The identity comes from the fstat taken before reading, so a concurrent
        write makes it stale (and a later replace/quarantine with it fails) rather than falsely current."""
        return self._read(path, max_bytes, whole=True, refuse_hardlinked=refuse_hardlinked)

    def read_head(self, path: str, max_bytes: int) -> tuple[bytes, FileIdentity]:
        """The first ``max_bytes`` of a note (its title lives there), with the same checks as read_note."""
        return self._read(path, max_bytes, whole=False, refuse_hardlinked=False)

    def _read(
        self, path: str, max_bytes: int, *, whole: bool, refuse_hardlinked: bool
    ) -> tuple[bytes, FileIdentity]:
        parts = split_relative(path)
        pfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_PATH, path)
        try:
            self._resolve.lstat_leaf(pfd, parts[-1], path)
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
            try:
                fd = os.open(parts[-1], flags, dir_fd=pfd)
            except FileNotFoundError:
                raise NoteMissing(f"{path}: no such note") from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise EscapeBlocked(f"{path}: is a symbolic link; symlinks are never followed") from exc
                if exc.errno in (errno.ENXIO, errno.EISDIR, errno.ENODEV):
                    raise NotARegularFile(f"{path}: is not a regular file") from exc
                raise os_error(path, exc) from exc
        finally:
            os.close(pfd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotARegularFile(f"{path}: is not a regular file; only regular files are notes")
            self._resolve.check_same_mount(fd, path, st)
            if refuse_hardlinked and st.st_nlink > 1:
                raise FsError(f"{path}: has {st.st_nlink} hard links; hard-linked notes are refused here")
            if whole and st.st_size > max_bytes:
                raise FsError(f"{path}: is {st.st_size} bytes; at most {max_bytes} may be read")
            return _read_fd(fd, max_bytes, whole, path), FileIdentity.of(st)
        finally:
            os.close(fd)

    def _classify_exists(self, pfd: int, name: str, display: str) -> FsError:
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except OSError:
            return NoteExists(f"{display}: already exists")
        if stat.S_ISLNK(st.st_mode):
            return EscapeBlocked(
                f"{display}: a symbolic link occupies this name; symlinks are never followed"
            )
        return NoteExists(f"{display}: already exists; choose another name")

    def create_note(self, path: str, data: bytes, *, make_parents: bool = False) -> FileIdentity:
        """Create a new note exclusively. Missing parents are made with mkdirat when ``make_parents``."""
        parts = split_relative(path)
        name = parts[-1]
        pfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_READ, path, create=make_parents)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
            try:
                fd = os.open(name, flags, 0o666, dir_fd=pfd)
            except FileExistsError:
                raise self._classify_exists(pfd, name, path) from None
            except OSError as exc:
                raise os_error(path, exc) from exc
            try:
                write_all(fd, data)
                os.fsync(fd)
                st = os.fstat(fd)
            except OSError as exc:
                self._unlink_if_same(pfd, name, os.fstat(fd))
                raise os_error(path, exc) from exc
            finally:
                os.close(fd)
            fsync_dir(pfd)
            return FileIdentity.of(st)
        finally:
            os.close(pfd)

    def remove_created(self, path: str, created: FileIdentity) -> None:
        """Undo a ``create_note`` whose change did not commit: remove the note only while it is still
        the file that was created (same inode, size and mtime: nobody wrote it since)."""
        parts = split_relative(path)
        try:
            pfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_PATH, path)
        except NoteMissing:
            return
        try:
            st = os.stat(parts[-1], dir_fd=pfd, follow_symlinks=False)
            if FileIdentity.of(st) == created:
                os.unlink(parts[-1], dir_fd=pfd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise os_error(path, exc) from exc
        finally:
            os.close(pfd)

    @staticmethod
    def _unlink_if_same(dirfd: int, name: str, ours: os.stat_result) -> None:
        """Remove a file we created, only while the name still refers to our inode."""
        try:
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            if (st.st_dev, st.st_ino) == (ours.st_dev, ours.st_ino):
                os.unlink(name, dir_fd=dirfd)
        except OSError:
            pass

    def replace_note(
        self, path: str, data: bytes, *, expected: FileIdentity, temp_name: str | None = None
    ) -> FileIdentity:
        """Replace a note's content if it is still ``expected`` (optimistic concurrency).

        The new content is written to an O_EXCL temp file and fsynced, then swapped in with
        RENAME_EXCHANGE; the displaced entry is checked against ``expected`` and swapped back on
        mismatch, so no other writer's version is lost. Without RENAME_EXCHANGE the check runs just
        before a plain renameat, leaving a window in which a concurrent write can be overwritten.
        ``temp_name`` (from ``new_temp_name``) names the temp file, so that a journal written before
        can tell recovery which leftover to remove (``discard_temp``).
        """
        parts = split_relative(path)
        name = parts[-1]
        pfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_READ, path)
        try:
            st = self._resolve.lstat_leaf(pfd, name, path)
            if FileIdentity.of(st) != expected:
                raise IdentityMismatch(f"{path}: changed since it was read; re-read it and retry")
            tmp, tst = self._write_temp(pfd, data, stat.S_IMODE(st.st_mode) & 0o777, path, temp_name)
            try:
                self._swap_in(pfd, tmp, name, expected, path)
            except BaseException:
                self._unlink_if_same(pfd, tmp, tst)
                raise
            fsync_dir(pfd)
            return FileIdentity.of(tst)
        finally:
            os.close(pfd)

    @staticmethod
    def new_temp_name() -> str:
        return TMP_PREFIX + secrets.token_hex(8)

    def discard_temp(self, path: str, temp_name: str) -> None:
        """Remove a temp file ``replace_note`` left beside ``path`` (a crash between its steps);
        nothing when there is none."""
        if not re.fullmatch(re.escape(TMP_PREFIX) + "[0-9a-f]{16}", temp_name):
            raise PathRejected(f"{temp_name!r} is not a temp name of notewarden")
        parts = split_relative(path)
        try:
            pfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_PATH, path)
        except NoteMissing:
            return
        try:
            os.unlink(temp_name, dir_fd=pfd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise os_error(path, exc) from exc
        finally:
            os.close(pfd)

    def _write_temp(
        self, pfd: int, data: bytes, mode: int, display: str, name: str | None = None
    ) -> tuple[str, os.stat_result]:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
        tmp = name or self.new_temp_name()
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=pfd)
        except OSError as exc:
            raise os_error(display, exc) from exc
        try:
            write_all(fd, data)
            os.fchmod(fd, mode)
            os.fsync(fd)
            return tmp, os.fstat(fd)
        except OSError as exc:
            self._unlink_if_same(pfd, tmp, os.fstat(fd))
            raise os_error(display, exc) from exc
        finally:
            os.close(fd)

    def _swap_in(self, pfd: int, tmp: str, name: str, expected: FileIdentity, display: str) -> None:
        try:
            renameat2(pfd, tmp, pfd, name, RENAME_EXCHANGE)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise NoteMissing(f"{display}: no such note") from exc
            if exc.errno not in UNAVAILABLE_ERRNOS:
                raise os_error(display, exc) from exc
            if FileIdentity.of(self._resolve.lstat_leaf(pfd, name, display)) != expected:
                raise IdentityMismatch(
                    f"{display}: changed since it was read; re-read it and retry"
                ) from None
            try:
                os.rename(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
            except OSError as exc2:
                raise os_error(display, exc2) from exc2
            return
        try:
            old = os.stat(tmp, dir_fd=pfd, follow_symlinks=False)
        except OSError:
            old = None
        if old is None or not stat.S_ISREG(old.st_mode) or FileIdentity.of(old) != expected:
            try:
                renameat2(pfd, tmp, pfd, name, RENAME_EXCHANGE)
            except OSError as exc:
                raise IdentityMismatch(
                    f"{display}: changed during the replace and could not be swapped back; "
                    f"the other version is kept as {tmp!r} in the same directory"
                ) from exc
            raise IdentityMismatch(f"{display}: changed since it was read; re-read it and retry")
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=pfd)

    def move_note(self, path: str, new_path: str, *, expected: FileIdentity) -> FileIdentity:
        """Rename a note inside the workspace without replacing anything; missing parents of
        ``new_path`` are made. The note must still be ``expected`` before the move and the same inode
        after it; otherwise it is moved back and IdentityMismatch raised."""
        parts, new_parts = split_relative(path), split_relative(new_path)
        spfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_PATH, path)
        try:
            st = self._resolve.lstat_leaf(spfd, parts[-1], path)
            if FileIdentity.of(st) != expected:
                raise IdentityMismatch(f"{path}: changed since it was read; nothing was moved")
            dpfd = self._resolve.open_dir(self._root(), new_parts[:-1], DIR_PATH, new_path, create=True)
            try:
                self._move(spfd, parts[-1], dpfd, new_parts[-1], path, new_path)
                try:
                    moved = os.stat(new_parts[-1], dir_fd=dpfd, follow_symlinks=False)
                except OSError:
                    moved = None
                if moved is None or (moved.st_dev, moved.st_ino) != (expected.dev, expected.ino):
                    with contextlib.suppress(OSError):
                        rename_noreplace(dpfd, new_parts[-1], spfd, parts[-1])
                    raise IdentityMismatch(f"{path}: changed during the move; it was moved back")
                fsync_dir(dpfd)
                return FileIdentity.of(moved)
            finally:
                os.close(dpfd)
        finally:
            os.close(spfd)

    # Trash

    def _open_trash(self, *, create: bool) -> int:
        return self._open_private_dir(TRASH_DIR_NAME, "trash directory", create=create)

    @contextlib.contextmanager
    def held_trash(self) -> Iterator[HeldDir]:
        """The trash directory (created if needed) opened once for the steps of one change (Rule 8a):
        each opening costs an ``openat``, an ``fstat``, a mount-id ``statx`` and a ``geteuid``."""
        fd = self._open_trash(create=True)
        try:
            yield HeldDir(TRASH_DIR_NAME, fd)
        finally:
            os.close(fd)

    def _held_fd(self, held: HeldDir | None, directory: str) -> int | None:
        """The held fd of ``directory``; None when nothing is held (the caller opens it)."""
        if held is None:
            return None
        if held.name != directory:
            raise ValueError(f"{held.name!r} is held, not {directory!r}")
        return held.fd

    def _open_private_dir(self, name: str, display: str, *, create: bool) -> int:
        """Open a service directory held by fd (the trash, the history): a real 0700 directory of this
        uid on the workspace's mount."""
        root = self._root()
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        for attempt in (0, 1):
            try:
                fd = os.open(name, flags, dir_fd=root)
                break
            except FileNotFoundError:
                if not create or attempt:
                    raise NoteMissing(f"the {display} does not exist") from None
                try:
                    os.mkdir(name, 0o700, dir_fd=root)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise os_error(display, exc) from exc
            except OSError as exc:
                err = self._resolve.classify_step(root, name, exc, display)
                if isinstance(err, NoteMissing):
                    err = FsError(f"{name!r} exists but is not a directory; move it away")
                raise err from exc
        try:
            st = os.fstat(fd)
            self._resolve.check_same_mount(fd, display, st)
            if st.st_uid != os.geteuid():
                raise FsError(f"{display} is owned by another user; it must belong to the service")
            if stat.S_IMODE(st.st_mode) != 0o700:
                os.fchmod(fd, 0o700)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def quarantine(
        self,
        path: str,
        trash_name: str,
        expected: FileIdentity,
        *,
        refuse_hardlinked: bool = False,
        held: HeldDir | None = None,
    ) -> FileIdentity:
        """Move a confirmed note into the trash as ``trash_name``; nothing is unlinked.

        The entry must be a regular file whose identity equals ``expected`` before the move, and the
        moved entry must still have it afterwards; otherwise it is moved back and IdentityMismatch raised.
        ``held``: the trash as ``held_trash`` opened it for this change.
        """
        parts = split_relative(path)
        check_trash_name(trash_name)
        name = parts[-1]
        pfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_PATH, path)
        try:
            st = self._resolve.lstat_leaf(pfd, name, path)
            if FileIdentity.of(st) != expected:
                raise IdentityMismatch(f"{path}: is not the file that was confirmed; nothing was moved")
            if refuse_hardlinked and st.st_nlink > 1:
                raise FsError(f"{path}: has {st.st_nlink} hard links; hard-linked notes are refused here")
            held_fd = self._held_fd(held, TRASH_DIR_NAME)
            tfd = self._open_trash(create=True) if held_fd is None else held_fd
            try:
                self._move(pfd, name, tfd, trash_name, path, f"trash entry {trash_name!r}")
                try:
                    moved = os.stat(trash_name, dir_fd=tfd, follow_symlinks=False)
                except OSError:
                    moved = None
                if moved is None or not stat.S_ISREG(moved.st_mode) or FileIdentity.of(moved) != expected:
                    try:
                        rename_noreplace(tfd, trash_name, pfd, name)
                    except OSError:
                        raise IdentityMismatch(
                            f"{path}: changed during quarantine and its name was taken again; "
                            f"the moved entry stays in the trash as {trash_name!r}"
                        ) from None
                    raise IdentityMismatch(f"{path}: changed during quarantine; it was moved back")
                return FileIdentity.of(moved)
            finally:
                if held_fd is None:
                    os.close(tfd)
        finally:
            os.close(pfd)

    def _move(
        self, src_dir: int, src: str, dst_dir: int, dst: str, src_display: str, dst_display: str
    ) -> None:
        try:
            rename_noreplace(src_dir, src, dst_dir, dst)
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                raise self._classify_exists(dst_dir, dst, dst_display) from exc
            if exc.errno == errno.ENOENT:
                raise NoteMissing(f"{src_display}: no such note") from exc
            if exc.errno in (errno.EXDEV, errno.EBUSY):
                raise escape_blocked(src_display) from exc
            if exc.errno in (errno.EISDIR, errno.ENOTDIR, errno.ENOTEMPTY):
                raise NotARegularFile(f"{src_display}: is not a regular file") from exc
            raise os_error(src_display, exc) from exc

    def restore(self, trash_name: str, path: str) -> FileIdentity:
        """Move a trash entry back to ``path`` without replacing anything; parents are recreated."""
        check_trash_name(trash_name)
        parts = split_relative(path)
        display = f"trash entry {trash_name!r}"
        tfd = self._open_trash(create=False)
        try:
            st = self._resolve.lstat_leaf(tfd, trash_name, display)
            pfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_PATH, path, create=True)
            try:
                self._move(tfd, trash_name, pfd, parts[-1], display, path)
            finally:
                os.close(pfd)
            return FileIdentity.of(st)
        finally:
            os.close(tfd)

    def trash_entry(self, trash_name: str) -> FileIdentity | None:
        check_trash_name(trash_name)
        try:
            tfd = self._open_trash(create=False)
        except NoteMissing:
            return None
        try:
            return FileIdentity.of(self._resolve.lstat_leaf(tfd, trash_name, f"trash entry {trash_name!r}"))
        except NoteMissing:
            return None
        finally:
            os.close(tfd)

    def list_trash(self) -> list[str]:
        """Names in the trash directory, sorted; empty when there is no trash yet."""
        try:
            tfd = self._open_trash(create=False)
        except NoteMissing:
            return []
        try:
            return sorted(name for name in os.listdir(tfd) if TRASH_NAME_RE.fullmatch(name))
        finally:
            os.close(tfd)

    def append_record(self, name: str, data: bytes, *, sync: bool) -> None:
        """Append ``data`` to a record (created on first use) in one ``write`` with ``O_APPEND``, so the
        appends of concurrent writers never interleave. With ``sync`` it is fsynced, and the record's
        directory too when this call created the record (survives power loss)."""
        appender = self.record_appender(name, sync=sync)
        try:
            appender.append(data, sync=sync)
        finally:
            appender.close()

    def record_appender(self, name: str, *, sync: bool, held: HeldDir | None = None) -> RecordAppender:
        """A record (created on first use) opened for appending, for a change that appends to it
        again later (Rule 8a): the caller closes it."""
        fd = self._open_record(name, os.O_WRONLY | os.O_APPEND, create=True, sync=sync, held=held)
        assert fd is not None  # with create, a missing record is created, not None
        return RecordAppender(name, fd)

    def truncate_record(self, name: str, keep: bytes = b"") -> None:
        """Empty a record but for ``keep``, written in its place; nothing when it does not exist."""
        fd = self._open_record(name, os.O_WRONLY)
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
            if keep:
                os.pwrite(fd, keep, 0)
        finally:
            os.close(fd)

    def read_record(self, name: str, max_bytes: int, *, held: HeldDir | None = None) -> bytes | None:
        """The first ``max_bytes`` of a record (a ``~`` name), or None when it does not exist."""
        fd = self._open_record(name, os.O_RDONLY, held=held)
        if fd is None:
            return None
        try:
            return _read_fd(fd, max_bytes, False, name)
        finally:
            os.close(fd)

    def record_stamp(self, name: str, *, held: HeldDir) -> RecordStamp | None:
        """One ``fstatat`` of a record in a held directory: its stamp while it is a regular file of the
        service, None otherwise (absent, or something else: reading it then says what is wrong)."""
        fd = self._held_fd(held, record_directory(name))
        assert fd is not None
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def write_record(self, name: str, data: bytes, *, replace: bool) -> bool:
        """Write a whole record, fsynced, creating its directory if needed. ``replace=False`` creates
        it only if it does not exist (False when it did: another process was first); ``replace=True``
        renames the new content over the old. Readers see the old record or the new one, never a part."""
        directory = record_directory(name)
        tfd = self._open_private_dir(directory, directory, create=True)
        try:
            tmp = f"{name}{TMP_PREFIX}{secrets.token_hex(6)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _RECORD_OPEN, 0o600, dir_fd=tfd)
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                if replace:
                    os.rename(tmp, name, src_dir_fd=tfd, dst_dir_fd=tfd)
                    return True
                os.link(tmp, name, src_dir_fd=tfd, dst_dir_fd=tfd, follow_symlinks=False)
                return True
            except FileExistsError:
                return False
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=tfd)
                fsync_dir(tfd)
        except OSError as exc:
            raise os_error(f"record {name!r}", exc) from exc
        finally:
            os.close(tfd)

    def remove_record(self, name: str) -> None:
        """Delete a record (fsynced); nothing when it does not exist."""
        directory = record_directory(name)
        try:
            dfd = self._open_private_dir(directory, directory, create=False)
        except NoteMissing:
            return
        try:
            os.unlink(name, dir_fd=dfd)
            fsync_dir(dfd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise os_error(f"record {name!r}", exc) from exc
        finally:
            os.close(dfd)

    def _open_record(
        self, name: str, flags: int, *, create: bool = False, sync: bool = False, held: HeldDir | None = None
    ) -> int | None:
        """A record (the trash's journal and owner marker, the history's move journal), opened beneath
        its directory's fd (``held``, or opened here) and checked to be a regular file of the service;
        None when there is no such directory or record and ``create`` is false. A record this call
        creates has its directory entry fsynced when ``sync``."""
        directory = record_directory(name)
        held_fd = self._held_fd(held, directory)
        try:
            tfd = self._open_private_dir(directory, directory, create=create) if held_fd is None else held_fd
        except NoteMissing:
            if create:
                raise
            return None
        try:
            flags |= _RECORD_OPEN
            try:
                fd = os.open(name, flags, dir_fd=tfd)
            except FileNotFoundError:
                if not create:
                    return None
                fd = os.open(name, flags | os.O_CREAT, 0o600, dir_fd=tfd)
                if sync:
                    fsync_dir(tfd)
            except OSError as exc:
                if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without a reader, a directory
                    raise NotARegularFile(f"record {name!r}: is not a regular file; move it away") from exc
                raise self._resolve.classify_step(tfd, name, exc, f"record {name!r}") from exc
        finally:
            if held_fd is None:
                os.close(tfd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            os.close(fd)
            raise NotARegularFile(f"record {name!r}: is not a regular file of the service; move it away")
        return fd

    def read_trash_file(self, trash_name: str, max_bytes: int) -> bytes:
        return self._read_private(TRASH_DIR_NAME, "trash", trash_name, max_bytes)

    def purge_trash_entry(self, trash_name: str) -> None:
        """Permanently delete one trash entry (unlinkat in the trash fd; never follows, never recurses)."""
        self._purge_private(TRASH_DIR_NAME, "trash", trash_name)

    def _read_private(self, directory: str, what: str, name: str, max_bytes: int) -> bytes:
        """A whole file of a service directory (the trash, the history); ``NoteMissing`` when absent."""
        check_trash_name(name)
        display = f"{what} entry {name!r}"
        dfd = self._open_private_dir(directory, f"{what} directory", create=False)
        try:
            self._resolve.lstat_leaf(dfd, name, display)
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        finally:
            os.close(dfd)
        try:
            return _read_fd(fd, max_bytes, True, display)
        finally:
            os.close(fd)

    def _purge_private(self, directory: str, what: str, name: str) -> None:
        check_trash_name(name)
        display = f"{what} entry {name!r}"
        dfd = self._open_private_dir(directory, f"{what} directory", create=False)
        try:
            os.unlink(name, dir_fd=dfd)
        except FileNotFoundError:
            raise NoteMissing(f"{display}: does not exist") from None
        except IsADirectoryError:
            raise NotARegularFile(f"{display}: is a directory; only files are purged") from None
        except OSError as exc:
            raise os_error(display, exc) from exc
        finally:
            os.close(dfd)

    # History (``notes.history``): saved versions, created exclusively, read back, purged

    def _open_history(self, *, create: bool) -> int:
        return self._open_private_dir(HISTORY_DIR_NAME, "history directory", create=create)

    def keep_version(self, path: str, name: str, expected: FileIdentity, data: bytes, *, sync: bool) -> None:
        """Save the note at ``path``, which must still be ``expected`` (its bytes being ``data``), as the
        history entry ``name`` (the history directory is created on first use; nothing is replaced).

        A note with no other name is hard-linked, not copied: the write that then swaps new content
        in (``replace_note``) leaves the old inode to the history alone, so saving a version costs the
        same for a large note as for a small one. The linked entry must still be ``expected``, else it
        is removed and IdentityMismatch raised. A note with other hard links (whose in-place edits
        would reach the entry), or one the kernel will not link, is copied from ``data``. With
        ``sync`` the entry and the directory are fsynced (survives power loss)."""
        parts = split_relative(path)
        check_trash_name(name)
        display = f"history entry {name!r}"
        pfd = self._resolve.open_dir(self._root(), parts[:-1], DIR_PATH, path)
        try:
            st = self._resolve.lstat_leaf(pfd, parts[-1], path)
            if FileIdentity.of(st) != expected:
                raise IdentityMismatch(f"{path}: changed since it was read; re-read it and retry")
            hfd = self._open_history(create=True)
            try:
                if st.st_nlink == 1 and self._link_version(pfd, parts[-1], hfd, name, expected, path):
                    if sync:
                        fd = os.open(
                            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=hfd
                        )
                        try:
                            os.fsync(fd)
                        finally:
                            os.close(fd)
                else:
                    self._write_version(hfd, name, data, sync=sync, display=display)
                if sync:
                    fsync_dir(hfd)
            finally:
                os.close(hfd)
        finally:
            os.close(pfd)

    def _link_version(
        self, pfd: int, leaf: str, hfd: int, name: str, expected: FileIdentity, display: str
    ) -> bool:
        """Hard-link the note into the history; False when the kernel refuses (then copy)."""
        try:
            os.link(leaf, name, src_dir_fd=pfd, dst_dir_fd=hfd, follow_symlinks=False)
        except FileExistsError:
            raise NoteExists(f"history entry {name!r}: already exists") from None
        except OSError as exc:
            if exc.errno in (errno.EPERM, errno.EACCES, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
                return False  # e.g. fs.protected_hardlinks and a note of another user
            raise os_error(display, exc) from exc
        try:
            linked = os.stat(name, dir_fd=hfd, follow_symlinks=False)
        except OSError:
            linked = None
        if linked is None or not stat.S_ISREG(linked.st_mode) or FileIdentity.of(linked) != expected:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=hfd)
            raise IdentityMismatch(f"{display}: changed since it was read; re-read it and retry")
        return True

    def _write_version(self, hfd: int, name: str, data: bytes, *, sync: bool, display: str) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
        try:
            fd = os.open(name, flags, 0o600, dir_fd=hfd)
        except FileExistsError:
            raise NoteExists(f"{display}: already exists") from None
        except OSError as exc:
            raise os_error(display, exc) from exc
        try:
            write_all(fd, data)
            if sync:
                os.fsync(fd)
        except OSError as exc:
            self._unlink_if_same(hfd, name, os.fstat(fd))
            raise os_error(display, exc) from exc
        finally:
            os.close(fd)

    def read_history(self, name: str, max_bytes: int) -> bytes:
        """A saved version's bytes; ``NoteMissing`` when there is no such entry."""
        return self._read_private(HISTORY_DIR_NAME, "history", name, max_bytes)

    def purge_history_entry(self, name: str) -> None:
        """Permanently delete one saved version (unlinkat in the history fd; never follows)."""
        self._purge_private(HISTORY_DIR_NAME, "history", name)


def _read_fd(fd: int, max_bytes: int, whole: bool, display: str) -> bytes:
    """Read up to ``max_bytes``; with ``whole``, a file that grows past the limit is an error."""
    chunks: list[bytes] = []
    total = 0
    limit = max_bytes + 1 if whole else max_bytes
    while total < limit:
        chunk = os.read(fd, min(_READ_CHUNK, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if whole and total > max_bytes:
        raise FsError(f"{display}: grew beyond {max_bytes} bytes while being read")
    return b"".join(chunks)
