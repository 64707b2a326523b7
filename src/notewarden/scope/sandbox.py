"""Landlock self-sandbox for `notewarden serve`: the process can reach only what it serves.

Rule 1: it is applied once, at start-up, before anything starts a thread. Before Landlock ABI 8
(kernels up to 6.18) `landlock_restrict_self` confines only the calling thread and its later
children, so a thread that already exists would stay unconfined. `apply_sandbox` therefore
refuses to run in a process with more than one thread; the CLI calls it before it opens the
ledger, starts anyio, uvicorn or the SDK's stdio threads.

Rule 2: the allowances, nothing else.

| beneath                                                     | rights                          |
|-------------------------------------------------------------|---------------------------------|
| every configured workspace, the state dir, the state dir of a ledger this server shares (`notes.ownership`) | read, write, create, remove, rename (no symlinks, devices, FIFOs, sockets) |
| Python (its prefixes and `sys.path`), /usr, /lib*           | read                            |
| /etc/ssl and the resolver files (JWKS over https)           | read                            |
| the config file's and the JWKS file's directories           | read files (reloads see edits saved by rename) |
| `[sandbox] read_paths`                                      | read                            |
| /dev/null                                                   | read, write                     |

The caller names the configured paths (`plan_for` takes them as plain values: scope does not read
the configuration file). Nothing may be executed anywhere. The current directory is not allowed unless it is one of the
above. Binding a TCP port (Landlock ABI 4) is allowed only for the HTTP port being served; a
stdio server may bind none.

Rule 3: best effort across kernels. Rights the running kernel does not know are dropped
(landlockpy does this per ABI) and the ABI applied is logged. A kernel without Landlock gets
one warning line (`"sandbox": "unavailable"`) and the server runs without this layer; the
authorization and containment layers do not depend on it. `--no-sandbox` or
`[sandbox] enabled = false` is an explicit opt-out, logged as `"sandbox": "disabled"`.

Rule 4: Landlock is path-based. A pre-existing hard link inside a workspace to an outside
inode stays readable (see fsroot Rule 6). Outgoing connections (JWKS over https, a database)
and connections to pathname UNIX sockets are not restricted here; the systemd unit in deploy/
restricts the network.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import landlockpy
from landlockpy import AccessFS, AccessNet, Scope
from landlockpy.flags import LATEST_ABI

__all__ = ["SandboxPlan", "SandboxReport", "apply_sandbox", "plan_for"]

logger = logging.getLogger(__name__)

READ: Final = AccessFS.READ_FILE | AccessFS.READ_DIR
READ_WRITE: Final = (
    READ
    | AccessFS.WRITE_FILE
    | AccessFS.TRUNCATE
    | AccessFS.MAKE_REG
    | AccessFS.MAKE_DIR
    | AccessFS.REMOVE_FILE
    | AccessFS.REMOVE_DIR
    | AccessFS.REFER
)
# Every filesystem right the library knows, except connecting to pathname UNIX sockets (Rule 4).
HANDLED: Final = landlockpy.fs_for_abi(LATEST_ABI) & ~AccessFS.RESOLVE_UNIX
_FILE_RIGHTS: Final = AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.TRUNCATE | AccessFS.IOCTL_DEV
SYSTEM_READ: Final = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/etc/ssl", "/etc/ca-certificates")
SYSTEM_READ_FILES: Final = (
    "/etc/localtime",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/host.conf",
    "/etc/services",
    "/etc/protocols",
    "/dev/urandom",
)


class SandboxError(RuntimeError):
    """The sandbox cannot be applied safely (threads already running)."""


@dataclass(frozen=True, slots=True)
class SandboxPlan:
    read_write: tuple[Path, ...]
    read: tuple[Path, ...]
    read_files: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class SandboxReport:
    status: str  # "enforced" | "unavailable" | "disabled"
    abi: int = 0


def plan_for(
    *,
    read_write: Iterable[Path],
    read_paths: Iterable[Path] = (),
    config_files: Iterable[Path] = (),
) -> SandboxPlan:
    """The allowances of Rule 2 (paths that do not exist are dropped later): `read_write` is the
    workspaces and the state dirs, `read_paths` the `[sandbox] read_paths`, `config_files` the config
    file and the JWKS file, whose directories' files may be read."""
    python = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    cwd = os.getcwd()
    python |= {p for p in sys.path if p and os.path.abspath(p) != cwd}
    read = [Path(p) for p in sorted(python)] + [Path(p) for p in SYSTEM_READ] + list(read_paths)
    files = [Path(p) for p in SYSTEM_READ_FILES] + [p.parent for p in config_files]
    return SandboxPlan(tuple(read_write), tuple(read), tuple(files))


def thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def apply_sandbox(plan: SandboxPlan, *, enabled: bool = True, bind_port: int | None = None) -> SandboxReport:
    """Confine this process to `plan` (module Rules 1-3) and log what was done.

    `bind_port` is the one TCP port the process may listen on (HTTP); None allows none.
    """
    if not enabled:
        logger.warning(
            "sandbox disabled by configuration or --no-sandbox: the process is not confined by Landlock",
            extra={"event": "sandbox", "sandbox": "disabled"},
        )
        return SandboxReport("disabled")
    reason = "this kernel has no Landlock (needs Linux >= 5.13 with landlock in the LSM list)"
    try:
        abi = landlockpy.abi_version()
    except OSError as exc:  # EPERM from a seccomp filter: containers, systemd SystemCallFilter=
        abi = 0
        reason = f"landlock_create_ruleset failed with {errno.errorcode.get(exc.errno or 0, exc.errno)}"
    if abi < 1:
        logger.warning(
            "sandbox unavailable: %s; serving without the Landlock layer",
            reason,
            extra={"event": "sandbox", "sandbox": "unavailable", "abi": 0},
        )
        return SandboxReport("unavailable")
    threads = thread_count()
    if threads != 1:
        raise SandboxError(
            f"the sandbox must be applied before any thread starts, but {threads} threads exist; "
            "apply it first thing in main()"
        )
    with landlockpy.Ruleset(
        handled_fs=HANDLED, handled_net=AccessNet.BIND_TCP, scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL
    ) as ruleset:
        if bind_port is not None:
            ruleset.allow_port(bind_port, AccessNet.BIND_TCP)
        _allow(ruleset, plan.read_write, READ_WRITE)
        _allow(ruleset, plan.read, READ)
        _allow(ruleset, plan.read_files, AccessFS.READ_FILE)
        _allow(ruleset, [Path("/dev/null")], AccessFS.READ_FILE | AccessFS.WRITE_FILE)
        ruleset.restrict()
    logger.info(
        "sandbox enforced: Landlock ABI %d; read-write beneath the workspaces and the state dir only",
        abi,
        extra={
            "event": "sandbox",
            "sandbox": "enforced",
            "abi": abi,
            "read_write": ":".join(map(str, plan.read_write)),
            "read": ":".join(map(str, plan.read)),
            "bind_port": bind_port,
        },
    )
    return SandboxReport("enforced", abi)


def _allow(ruleset: landlockpy.Ruleset, paths: Iterable[Path], access: AccessFS) -> None:
    """Add one rule per path; a path that does not exist on this system (/lib32, …) is left out."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            ruleset.allow_path(path, access if path.is_dir() else access & _FILE_RIGHTS)
