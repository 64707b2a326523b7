"""The Linux system calls the workspace root needs and Python does not offer (``openat2``, ``renameat2``,
``statx``'s mount id), and the fd helpers around them. Nothing here knows notes or workspaces: every
function takes directory fds and names beneath them, and raises ``OSError``.

Rule 1: ``raw_openat2`` resolves with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
RESOLVE_NO_XDEV`` (``fsroot`` Rules 1 and 3); EAGAIN and EINTR are retried a few times, then reported as
EAGAIN. ``probe_openat2`` decides once per process whether it can be used: ENOSYS, or EPERM/EINVAL/E2BIG
(seccomp filters, old kernels), say it cannot, and the root then walks one component at a time.

Rule 2: ``renameat2`` goes through glibc, else the raw syscall, else raises ENOSYS. Where it is refused
(ENOSYS/EPERM/EINVAL) ``rename_noreplace`` falls back to check-then-rename; the residual race is
described there.

Rule 3: ``mount_id`` is None where statx or ``STATX_MNT_ID`` is unavailable; callers then compare
``st_dev`` alone.

Rule 4: ``write_all`` writes every byte or raises; ``fsync_dir`` is best effort (the data itself is
already fsynced).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from typing import Final

__all__ = [
    "DIR_PATH",
    "DIR_READ",
    "RENAME_EXCHANGE",
    "UNAVAILABLE_ERRNOS",
    "errno_error",
    "fsync_dir",
    "mount_id",
    "probe_openat2",
    "raw_openat2",
    "rename_noreplace",
    "renameat2",
    "write_all",
]

_RESOLVE_NO_XDEV: Final = 0x01
_RESOLVE_NO_MAGICLINKS: Final = 0x02
_RESOLVE_NO_SYMLINKS: Final = 0x04
_RESOLVE_BENEATH: Final = 0x08
_RESOLVE_FLAGS: Final = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS | _RESOLVE_NO_XDEV
_SYS_OPENAT2: Final = 437
_SYS_RENAMEAT2: Final = {"x86_64": 316, "aarch64": 276}
RENAME_NOREPLACE: Final = 1
RENAME_EXCHANGE: Final = 2
_AT_SYMLINK_NOFOLLOW: Final = 0x100
_AT_NO_AUTOMOUNT: Final = 0x800
_AT_EMPTY_PATH: Final = 0x1000
_STATX_MNT_ID: Final = 0x1000
_STATX_MNT_ID_OFFSET: Final = 144
_EAGAIN_RETRIES: Final = 8
UNAVAILABLE_ERRNOS: Final = frozenset({errno.ENOSYS, errno.EPERM, errno.EINVAL, errno.E2BIG})

DIR_PATH: Final = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
DIR_READ: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


_libc: Final = ctypes.CDLL(None, use_errno=True)
_libc_syscall: Final = getattr(_libc, "syscall", None)
_libc_renameat2: Final = getattr(_libc, "renameat2", None)
_libc_statx: Final = getattr(_libc, "statx", None)
if _libc_renameat2 is not None:
    _libc_renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    _libc_renameat2.restype = ctypes.c_int
if _libc_statx is not None:
    _libc_statx.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p)
    _libc_statx.restype = ctypes.c_int

_openat2_state: bool | None = None
"""Process-wide probe result: None until the first ``WorkspaceRoot.open`` that does not force the walk."""


def errno_error(err: int) -> OSError:
    return OSError(err, os.strerror(err))


def raw_openat2(dirfd: int, path: str, flags: int) -> int:
    """One openat2 call; raises OSError. EAGAIN/EINTR are retried, then reported as EAGAIN."""
    if _libc_syscall is None:
        raise errno_error(errno.ENOSYS)
    how = _OpenHow(flags, 0, _RESOLVE_FLAGS)
    encoded = os.fsencode(path)
    err = errno.EAGAIN
    for _ in range(_EAGAIN_RETRIES):
        ctypes.set_errno(0)
        fd = int(
            _libc_syscall(
                ctypes.c_long(_SYS_OPENAT2),
                ctypes.c_int(dirfd),
                ctypes.c_char_p(encoded),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        )
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err not in (errno.EAGAIN, errno.EINTR):
            break
    raise errno_error(err)


def probe_openat2(dirfd: int) -> bool:
    """Probe once per process; seccomp filters answer EPERM/ENOSYS, old kernels ENOSYS or E2BIG."""
    global _openat2_state
    if _openat2_state is None:
        try:
            os.close(raw_openat2(dirfd, ".", DIR_PATH))
            _openat2_state = True
        except OSError as exc:
            _openat2_state = exc.errno not in UNAVAILABLE_ERRNOS
    return _openat2_state


def renameat2(src_dir: int, src: str, dst_dir: int, dst: str, flags: int) -> None:
    """renameat2 via glibc, else the raw syscall; raises OSError (ENOSYS when neither exists)."""
    a, b = os.fsencode(src), os.fsencode(dst)
    ctypes.set_errno(0)
    if _libc_renameat2 is not None:
        rc = int(_libc_renameat2(src_dir, a, dst_dir, b, flags))
    elif _libc_syscall is not None and platform.machine() in _SYS_RENAMEAT2:
        rc = int(
            _libc_syscall(
                ctypes.c_long(_SYS_RENAMEAT2[platform.machine()]),
                ctypes.c_int(src_dir),
                ctypes.c_char_p(a),
                ctypes.c_int(dst_dir),
                ctypes.c_char_p(b),
                ctypes.c_uint(flags),
            )
        )
    else:
        raise errno_error(errno.ENOSYS)
    if rc != 0:
        raise errno_error(ctypes.get_errno())


def rename_noreplace(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    """Move without replacing. If renameat2 is unavailable, check-then-rename: the residual race is
    another writer creating ``dst`` between the check and the rename, which would then be replaced.
    Our destinations are the private 0700 trash or a restore target, so that writer must be this uid."""
    try:
        renameat2(src_dir, src, dst_dir, dst, RENAME_NOREPLACE)
        return
    except OSError as exc:
        if exc.errno not in UNAVAILABLE_ERRNOS:
            raise
    try:
        os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
        return
    raise errno_error(errno.EEXIST)


def mount_id(dirfd: int, name: str = "") -> int | None:
    """Mount id from statx, or None where statx or STATX_MNT_ID is unavailable."""
    if _libc_statx is None:
        return None
    buf = ctypes.create_string_buffer(256)
    flags = _AT_EMPTY_PATH if not name else _AT_SYMLINK_NOFOLLOW | _AT_NO_AUTOMOUNT
    ctypes.set_errno(0)
    if int(_libc_statx(dirfd, os.fsencode(name), flags, _STATX_MNT_ID, buf)) != 0:
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EPERM, errno.EINVAL):
            return None
        raise errno_error(err)
    if not int.from_bytes(buf.raw[0:4], sys.byteorder) & _STATX_MNT_ID:
        return None
    return int.from_bytes(buf.raw[_STATX_MNT_ID_OFFSET : _STATX_MNT_ID_OFFSET + 8], sys.byteorder)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(dirfd: int) -> None:
    """Make a create or rename durable; best effort, since the data itself is already fsynced."""
    try:
        fd = os.open(".", DIR_READ, dir_fd=dirfd)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
