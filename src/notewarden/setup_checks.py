"""Set-up mistakes: what `serve` refuses and `notewarden doctor` fails, judged by one function each.

Rules:
1. One judge per thing a set-up can get wrong (the config has no workspace, a workspace folder, the
   state dir, the stdio principal, the HTTP port), each returning a `Problem`: what is wrong, named
   with its path or its config entry, and the fix (a command, or the line to change). `serve` raises
   the first as a `SetupProblem` before it changes anything (no state dir made, no folder marked);
   `doctor` prints every one as a FAIL with the same words.
2. A problem is said in one line: `notewarden: configuration error: <what>; fix: <fix>`, exit 2
   (the CLI's boundary, `cli.main`). An `OSError` no judge foresaw is still one line, from
   `describe_os_error`, never a traceback.
3. The state dir must be a folder this user can write and other users cannot (they could forge the
   ledger or read the sealing key): a state dir writable by its group or by others is refused by
   `serve`, as `doctor` fails it.
4. A workspace folder is opened as `serve` opens it (`scope.grants.folder_problem`); it must be
   writable when some principal may change notes there (a read-only server on a read-only folder
   is fine); on a read-only filesystem the fix is a read-only server or a read-write mount, never
   `chown`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from notewarden.config import Config, ConfigError
from notewarden.scope.grants import folder_problem
from notewarden.scope.rights import ALL_RIGHTS, Right
from notewarden.scope.uri import FileUri

__all__ = [
    "Problem",
    "SetupProblem",
    "describe_os_error",
    "port_problem",
    "require_servable",
    "state_dir_problem",
    "stdio_problem",
    "workspace_problems",
    "workspaces_problem",
]

CHANGING = frozenset({Right.WRITE, Right.DELETE, Right.PURGE})
"""Rights whose tools write into the workspace folder (notes, trash, history)."""


@dataclass(frozen=True, slots=True)
class Problem:
    topic: str
    what: str
    fix: str

    def line(self) -> str:
        return f"{self.what}; fix: {self.fix}"


class SetupProblem(ConfigError):
    """Rule 2: a `ConfigError` (exit 2) that carries its `Problem`."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.what, fix=problem.fix)
        self.found = problem


def workspaces_problem(config: Config) -> Problem | None:
    """A config that names no workspace serves nothing."""
    if config.workspaces:
        return None
    where = f"{config.source}" if config.source is not None else "the configuration"
    return Problem(
        "workspace",
        f"{where} has no [[workspace]]: there is nothing to serve",
        'add [[workspace]] uri = "file:///path/to/notes" (and grant it to a [[principal]]), '
        "or write a new config with notewarden init DIR",
    )


def _entry(config: Config, number: int, workspace: FileUri) -> str:
    if config.source is None:
        return f"--workspace {workspace.path}"
    return f'{config.source}: [[workspace]] #{number} uri = "{workspace}"'


def workspace_problems(
    config: Config, cap: frozenset[Right] = ALL_RIGHTS
) -> Iterator[tuple[FileUri, Problem | None]]:
    """Rule 4: each workspace folder with its problem (None: fine). `cap` is `serve --rights`."""
    if not config.storage.workspaces_are_directories:
        return
    for number, workspace in enumerate(config.workspaces, 1):
        path = workspace.path
        entry = _entry(config, number, workspace)
        why = folder_problem(path)
        if why is not None:
            yield workspace, Problem("workspace", f"{entry}: the folder {path} {why[0]}", why[1])
            continue
        changers = sorted(
            p.id
            for p in config.principals.values()
            if any(g.rights & CHANGING & cap for g in p.grants.get(workspace, ()))
        )
        if changers and not os.access(path, os.R_OK | os.W_OK | os.X_OK):
            who = f"{', '.join(changers)} may change notes there"
            if _read_only_filesystem(Path(path)):  # no chown helps: only a read-only server fits
                what = f"{entry}: the folder {path} is on a read-only filesystem, and {who}"
                fix = f"serve it read-only (serve --read-only), or mount {path} read-write"
            else:
                what = f"{entry}: the folder {path} is not readable and writable by this user, and {who}"
                fix = f"sudo chown -R $USER {path}, or serve it read-only (serve --read-only)"
            yield workspace, Problem("workspace", what, fix)
            continue
        yield workspace, None


def _nearest_existing(path: Path) -> Path:
    return next((p for p in (path, *path.parents) if os.path.lexists(p)), Path("/"))


def _read_only_filesystem(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def state_dir_problem(state: Path) -> Problem | None:
    """Rule 3: the state dir as `serve` would make and use it."""
    option = "state_dir in the config (or --state-dir)"
    existing = _nearest_existing(state)
    if existing != state:
        if not existing.is_dir():
            return Problem(
                "state dir",
                f"state dir {state} cannot be created: {existing} is a file, not a folder",
                f"point {option} at a folder, or move {existing} away",
            )
        if not os.access(existing, os.W_OK | os.X_OK):
            where = (
                "is on a read-only filesystem"
                if _read_only_filesystem(existing)
                else "is not writable by this user"
            )
            return Problem(
                "state dir",
                f"state dir {state} does not exist and cannot be created: {existing} {where}",
                f"choose a writable place with {option}, or create it: sudo install -d -m 700 -o $USER {state}",
            )
        return None
    if not state.is_dir():
        return Problem(
            "state dir",
            f"state dir {state} is a file, not a folder",
            f"point {option} at a folder, or move {state} away",
        )
    if not os.access(state, os.W_OK | os.X_OK):
        if _read_only_filesystem(state):
            return Problem(
                "state dir",
                f"state dir {state} is on a read-only filesystem",
                f"choose a writable place with {option}",
            )
        return Problem(
            "state dir", f"state dir {state} is not writable by this user", f"sudo chown $USER {state}"
        )
    mode = state.stat().st_mode
    if mode & 0o022:
        return Problem(
            "state dir",
            f"state dir {state} is writable by other users (mode {stat.filemode(mode)}): they could forge "
            "the ledger",
            f"chmod 700 {state}",
        )
    return None


def stdio_problem(config: Config) -> Problem | None:
    """A stdio server needs to know who its client is."""
    if config.stdio_principal is not None:
        return None
    return Problem(
        "stdio",
        f"{config.source or 'the configuration'} has no [stdio] principal: a stdio client would be nobody",
        'add [stdio] principal = "<one of the [[principal]] ids>", or serve --transport http',
    )


_PORT_ERRORS = {
    errno.EADDRINUSE: (
        "port {port} on {host} is already in use (another notewarden, or another program)",
        "stop that program (ss -ltnp 'sport = :{port}' names it), or choose another port: --port N or "
        "[http] port",
    ),
    errno.EACCES: (
        "port {port} on {host} needs privileges this user does not have (ports below 1024)",
        "use a port from 1024 up: --port 8765, behind a reverse proxy for port 443 (docs/deployment.md)",
    ),
    errno.EADDRNOTAVAIL: (
        "{host} is not an address of this machine: cannot listen on it",
        '[http] host = "127.0.0.1" (this machine only) or an address this machine has (ip -brief address)',
    ),
}


def port_problem(host: str, port: int, exc: OSError) -> Problem:
    what, fix = _PORT_ERRORS.get(
        exc.errno or 0, ("cannot listen on {host} port {port} ({strerror})", "check [http] host and port")
    )
    fields = {"host": host, "port": port, "strerror": exc.strerror or exc}
    return Problem("http", what.format(**fields), fix.format(**fields))


def require_servable(config: Config, *, transport: str, cap: frozenset[Right] = ALL_RIGHTS) -> None:
    """Rule 1: the first problem `serve` would trip on, as a `SetupProblem`, before anything changes."""
    problems = [
        workspaces_problem(config),
        *(problem for _, problem in workspace_problems(config, cap)),
        state_dir_problem(config.state_dir),
        stdio_problem(config) if transport == "stdio" else None,
    ]
    first = next((p for p in problems if p is not None), None)
    if first is not None:
        raise SetupProblem(first)


_OS_FIXES = {
    errno.EACCES: "run as the user who owns it, or change its permissions",
    errno.EPERM: "run as the user who owns it, or change its permissions",
    errno.EROFS: "use a place on a writable filesystem",
    errno.ENOSPC: "free some space on that filesystem",
    errno.EDQUOT: "free some space (the user's quota is used up)",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
    errno.EISDIR: "give a file, not a folder",
    errno.EEXIST: "move it away, or choose another path",
    errno.EMFILE: "raise the limit of open files (ulimit -n)",
}


def describe_os_error(exc: OSError) -> str:
    """Rule 2's last resort: an `OSError` as one line with the path and what to do."""
    where = f": {exc.filename}" if exc.filename else ""
    fix = _OS_FIXES.get(exc.errno or 0, "check the path and its permissions")
    return f"{exc.strerror or exc}{where}; fix: {fix}"
