"""Resolution beneath a held directory: how the workspace root opens a note's parent directory and checks
its last component (``fsroot`` Rules 1, 3 and 4 are what this guarantees).

Rule 1: a ``Resolver`` opens intermediate directories with ``openat2`` (mode ``"openat2"``: one call for
the whole path, or one per component when missing directories are made) or one component at a time with
``O_NOFOLLOW | O_DIRECTORY`` (mode ``"walk"``, where openat2 is unavailable or the walk is forced), never
following a symlink: a symlink, a magic link or a mount crossing met on the way raises ``EscapeBlocked``.

Rule 2: every directory the walk opens, and every leaf (``lstat_leaf``), must be on the root's device and,
where statx reports one, on its mount (``fs_syscalls`` Rule 3), so a bind mount of the same filesystem is
refused too.

Rule 3: a leaf is ``lstat``ed, never followed: a symlink raises ``EscapeBlocked``, anything but a regular
file ``NotARegularFile``. Errors name the path the caller displays (``fs_errors`` Rule 1).

Rule 4: an fd this module opens is either returned (the caller closes it) or closed before raising.
"""

from __future__ import annotations

import errno
import os
import stat

from notewarden.scope.fs_errors import (
    EscapeBlocked,
    FsError,
    NotARegularFile,
    NoteMissing,
    escape_blocked,
    os_error,
)
from notewarden.scope.fs_syscalls import DIR_PATH, mount_id, raw_openat2

__all__ = ["Resolver"]


class Resolver:
    """Resolution beneath one root directory (module rules): its device, its mount id (None where statx
    does not report one) and the mode, ``"openat2"`` or ``"walk"``."""

    __slots__ = ("dev", "mnt", "mode")

    def __init__(self, dev: int, mnt: int | None, mode: str) -> None:
        self.dev = dev
        self.mnt = mnt
        self.mode = mode

    def check_same_mount(self, fd: int, display: str, st: os.stat_result | None = None) -> None:
        """``st``: the caller's own ``fstat`` of ``fd``, when it has one (one system call less)."""
        if (os.fstat(fd) if st is None else st).st_dev != self.dev:
            raise escape_blocked(display)
        if self.mnt is not None and mount_id(fd) != self.mnt:
            raise escape_blocked(display)

    def check_leaf_mount(self, st: os.stat_result, dirfd: int, name: str, display: str) -> None:
        if st.st_dev != self.dev:
            raise escape_blocked(display)
        if self.mnt is not None:
            try:
                mnt = mount_id(dirfd, name)
            except FileNotFoundError:
                raise NoteMissing(f"{display}: no such note") from None
            if mnt != self.mnt:
                raise escape_blocked(display)

    def classify_step(self, prev: int, part: str, exc: OSError, display: str) -> FsError:
        if exc.errno == errno.ENOENT:
            return NoteMissing(f"{display}: directory {part!r} does not exist")
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            try:
                st = os.stat(part, dir_fd=prev, follow_symlinks=False)
            except FileNotFoundError:
                return NoteMissing(f"{display}: directory {part!r} does not exist")
            except OSError:
                return escape_blocked(display)
            if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
                return escape_blocked(display)
            return NoteMissing(f"{display}: {part!r} is not a directory")
        if exc.errno in (errno.EXDEV, errno.EAGAIN):
            return escape_blocked(display)
        return os_error(display, exc)

    def step(self, prev: int, part: str, flags: int, display: str) -> int:
        """Open one directory component beneath ``prev``, refusing symlinks and mount crossings."""
        try:
            if self.mode == "openat2":
                return raw_openat2(prev, part, flags)
            fd = os.open(part, flags | os.O_NOFOLLOW, dir_fd=prev)
        except OSError as exc:
            raise self.classify_step(prev, part, exc, display) from exc
        try:
            self.check_same_mount(fd, display)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_dir(
        self, root: int, parts: tuple[str, ...], flags: int, display: str, *, create: bool = False
    ) -> int:
        """Open the directory ``parts`` beneath ``root``; ``create`` makes missing ones with mkdirat."""
        if not parts:
            return os.open(".", flags, dir_fd=root)
        if self.mode == "openat2" and not create:
            try:
                return raw_openat2(root, "/".join(parts), flags)
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    raise NoteMissing(f"{display}: a parent directory does not exist") from exc
                if exc.errno == errno.ENOTDIR:
                    raise NoteMissing(f"{display}: a parent component is not a directory") from exc
                if exc.errno in (errno.ELOOP, errno.EXDEV, errno.EAGAIN):
                    raise escape_blocked(display) from exc
                raise os_error(display, exc) from exc
        prev = root
        try:
            for i, part in enumerate(parts):
                step_flags = flags if i == len(parts) - 1 else DIR_PATH
                try:
                    fd = self.step(prev, part, step_flags, display)
                except NoteMissing:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, 0o777, dir_fd=prev)
                    except FileExistsError:
                        pass
                    except OSError as exc:
                        raise os_error(display, exc) from exc
                    fd = self.step(prev, part, step_flags, display)
                if prev != root:
                    os.close(prev)
                prev = fd
            return prev
        except BaseException:
            if prev != root:
                os.close(prev)
            raise

    def lstat_leaf(self, pfd: int, name: str, display: str) -> os.stat_result:
        """lstat the last component; require a regular file on the workspace's mount."""
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            raise NoteMissing(f"{display}: no such note") from None
        except OSError as exc:
            raise os_error(display, exc) from exc
        if stat.S_ISLNK(st.st_mode):
            raise EscapeBlocked(f"{display}: is a symbolic link; symlinks are never followed")
        self.check_leaf_mount(st, pfd, name, display)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(f"{display}: is not a regular file; only regular files are notes")
        return st
