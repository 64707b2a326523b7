"""Authorization: may this authenticated principal do this, here?

Rule 1: the principal comes from the transport's authentication (a verified bearer
credential over HTTP, the configured `[stdio] principal` over stdio), never from tool
arguments, `clientInfo` or anything else a client writes.
Rule 2: a workspace URI never authorizes itself. It is parsed strictly (`uri`), then
matched by path components against the principal's grants from configuration, for the one right
the call needs (`rights`): the scope it yields reaches only the notes where that right holds.
Rule 3: authorization is re-evaluated on every round of every call against the live
configuration (the file is re-read when it changes, see `Grants`), and again inside the commit of
a confirmed change, so a revocation or a right lowered between the two rounds of a confirmation
wins.
Rule 4: errors name what the caller sent and what *this* principal is granted, never
what any other principal may use.

Rule 5: scope sits below the configuration file: it reads what it needs of a configuration
through `GrantConfig` (`notewarden.config.Config` is one) and re-reads the file with the loader it is
given, so config may use scope's URI grammar and path rules without an import cycle.

The result of a successful check is a `WorkspaceScope`: the only way other modules get
a `WorkspaceRoot` (an open directory handle) to operate on. With a SQL note store the
workspace is a name in the database, not a folder: the URI is parsed and matched the same
way, but no directory is opened and the scope has none (`DATABASE_WORKSPACE_IDENTITY`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, Self, TypeVar

import anyio.to_thread
import inotify_simple

from notewarden.scope.fs_errors import EscapeBlocked, FsError, NotARegularFile, NoteMissing, PathRejected
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.rights import (
    ALL_RIGHTS,
    Caller,
    FolderRights,
    Right,
    RightMissing,
    describe_rights,
    reach_of,
    rights_at,
)
from notewarden.scope.uri import FileUri, UriError, parse_file_uri

__all__ = [
    "DATABASE_WORKSPACE_IDENTITY",
    "AuthorizationError",
    "ConfigUnavailable",
    "GrantConfig",
    "Grants",
    "ScopeError",
    "WorkspaceFolderError",
    "WorkspaceScope",
    "check_workspace_folders",
]

logger = logging.getLogger(__name__)


class ScopeError(Exception):
    """A workspace URI was refused before any grant was consulted (malformed)."""


class AuthorizationError(Exception):
    """The principal may not use the named workspace."""


class ConfigUnavailable(Exception):
    """The configuration file became invalid while running: nothing is granted until it is fixed."""


class WorkspaceFolderError(Exception):
    """A configured workspace folder cannot be opened at start-up; the message names it and its entry."""


class GrantedPrincipal(Protocol):
    @property
    def grants(self) -> Mapping[FileUri, tuple[FolderRights, ...]]:
        """Per workspace, the folders granted and their rights (`rights` Rule 2)."""
        ...


class NoteStorage(Protocol):
    @property
    def workspaces_are_directories(self) -> bool: ...


class GrantConfig(Protocol):
    """What `Grants` reads of a configuration (Rule 5)."""

    @property
    def source(self) -> Path | None: ...
    @property
    def workspaces(self) -> tuple[FileUri, ...]: ...
    @property
    def principals(self) -> Mapping[str, GrantedPrincipal]: ...
    @property
    def storage(self) -> NoteStorage: ...
    def without_grants(self) -> Self:
        """The same configuration granting nothing: what a file that stopped parsing grants."""
        ...


C = TypeVar("C", bound=GrantConfig)


_WHY_NOT_OPENED: dict[type[FsError], tuple[str, str]] = {
    NoteMissing: ("does not exist", "mkdir -p {path}, or remove that entry"),
    EscapeBlocked: (
        "is a symbolic link, which notewarden never follows",
        "configure the folder it points to",
    ),
    NotARegularFile: ("is not a folder", "point the entry at a folder"),
}


def folder_problem(path: str) -> tuple[str, str] | None:
    """Why a workspace folder cannot be opened as `open_all` opens it, and the fix; None when it can.
    The same words for `serve` and `notewarden doctor`."""
    try:
        WorkspaceRoot.open(path).close()
    except FsError as exc:
        why, fix = _WHY_NOT_OPENED.get(type(exc), (f"cannot be opened ({exc})", "ls -ld {path}"))
        return why, fix.format(path=path)
    return None


DATABASE_WORKSPACE_IDENTITY = (0, 0)
"""The identity of a workspace kept in a database: there is no directory that could be swapped;
each note carries its own identity (row id and version), checked inside the store's transaction."""


@dataclass(frozen=True, slots=True)
class WorkspaceScope:
    """A principal's authorized view of one workspace for one right, holding its directory handle.

    Its reach (`rights` Rule 4) is the notes below `subtree` where `right` holds: `contains` and
    `check` answer for one note, `regions` gives the folders a store's queries are confined to."""

    principal: str
    workspace: FileUri
    subtree: tuple[str, ...]
    directory: WorkspaceRoot | None
    right: Right = Right.READ
    reach: tuple[tuple[str, ...], ...] | None = None
    """The folders inside `subtree` where `right` holds; None: all of `subtree` (a scope a test or a
    store builds itself, never one `Grants` hands out)."""
    held: tuple[FolderRights, ...] = ()
    """The principal's grants in this workspace, narrowed by the request's credential: what a refusal
    names, and what `whole_workspace` reaches."""

    @property
    def root(self) -> WorkspaceRoot:
        """The workspace folder's handle; only a folder-backed store asks for it."""
        if self.directory is None:
            raise RuntimeError(f"{self.workspace} is kept in the database; it has no directory")
        return self.directory

    @property
    def identity(self) -> tuple[int, int]:
        """What round 1 seals and the commit re-checks: the folder's (dev, ino), or the database marker."""
        return self.directory.identity if self.directory is not None else DATABASE_WORKSPACE_IDENTITY

    def verify_identity(self, expected: tuple[int, int]) -> None:
        if self.directory is not None:
            self.directory.verify_identity(expected)
        elif tuple(expected) != DATABASE_WORKSPACE_IDENTITY:
            raise AuthorizationError(f"{self.workspace} is not the workspace that was confirmed")

    def contains(self, note_id: str) -> bool:
        """Whether a note id (a POSIX path relative to the workspace root) is in reach: inside the
        subtree, where the scope's right holds."""
        if not _below(self.subtree, note_id):
            return False
        if self.reach is None or self.reach == (self.subtree,):
            return True
        return any(_below(folder, note_id) for folder in self.reach)

    def check(self, note_id: str) -> str:
        """`note_id` when in reach; else `PathRejected` (outside the subtree) or `RightMissing`
        (inside it, where the right does not hold), each saying what is allowed."""
        if not _below(self.subtree, note_id):
            raise PathRejected(f"{note_id!r} is outside {self.uri}; name a note inside it")
        if not self.contains(note_id):
            raise self.missing_at(note_id)
        return note_id

    def missing_at(self, note_id: str) -> RightMissing:
        here = rights_at(self.held, tuple(note_id.split("/")))
        elsewhere = reach_of(self.held, (), self.right)
        granted = ", ".join(str(self.workspace.joinpath(f)) for f in elsewhere) or "nowhere"
        return RightMissing(
            f"{self.right} is not granted to {self.principal} at {note_id} in {self.workspace} "
            f"({self.principal} holds {describe_rights(here)} there; {self.right} in: {granted})",
            right=self.right,
            where=str(self.workspace.joinpath(tuple(note_id.split("/")))),
        )

    def may(self, right: Right, note_id: str) -> bool:
        """Whether the principal holds `right` at the note (whatever this scope's own right)."""
        return self.reach is None or right in rights_at(self.held, tuple(note_id.split("/")))

    @property
    def regions(self) -> tuple[str, ...]:
        """The folders (relative ids, "" for the whole workspace) a query of this scope is confined to."""
        return tuple("/".join(f) for f in ((self.subtree,) if self.reach is None else self.reach))

    def whole_workspace(self) -> WorkspaceScope:
        """The same principal and right over the whole workspace (links resolve across it): a move's
        linking notes, a link's target. Reaches only where the right holds."""
        reach = None if self.reach is None else reach_of(self.held, (), self.right)
        return dataclasses.replace(self, subtree=(), reach=reach)

    def as_server(self) -> WorkspaceScope:
        """The whole workspace as the server itself reads it, for a note its configuration names (a
        daily-note template): never for a path a caller gives."""
        return dataclasses.replace(self, subtree=(), reach=None, right=Right.READ)

    @property
    def uri(self) -> FileUri:
        return self.workspace.joinpath(self.subtree)


def _below(folder: tuple[str, ...], note_id: str) -> bool:
    """Whether `note_id` names something strictly inside `folder` (() is the workspace root)."""
    if not folder:
        return True
    return tuple(note_id.split("/")[: len(folder)]) == folder and note_id.count("/") >= len(folder)


class Grants(Generic[C]):
    """Live grants: configuration plus one open directory handle per configured workspace.

    The configuration file is watched, never read on the event loop (Rule 3 without blocking):
    `refresh`, awaited once at the start of every request, asks an inotify watch on the file's
    folder whether anything happened there (a non-blocking read of the inotify descriptor, no
    filesystem access) and, when something did, re-reads the file in a worker thread. The request
    that noticed the change waits for that read, so a revocation saved before a request started
    wins; requests that arrive while a read is under way are answered under the configuration as it
    was (an edit takes effect when it has been read), so a slow read delays nothing else. Where
    inotify is unavailable, and at least once a second anyway (network filesystems report no
    events), the file's stamp is compared in a worker thread instead. A file that no longer parses
    refuses every grant until it is fixed (`problem` says so; HTTP answers 503). Without `reload`
    the configuration is fixed (start-up checks): the file is neither watched nor read.
    """

    def __init__(
        self,
        config: C,
        *,
        reload: Callable[[Path], C] | None = None,
        cap: frozenset[Right] = ALL_RIGHTS,
    ) -> None:
        """`cap`: the most any request of this process may do (`serve --rights`), whatever the grants."""
        self._config = config
        self._cap = cap
        self._narrowed: dict[
            tuple[str, frozenset[Right] | None], dict[FileUri, tuple[FolderRights, ...]]
        ] = {}
        """`_grants` per (principal, credential rights) under `_config` and `_cap`: every call asks twice."""
        self._reload = reload
        self._source = config.source if reload is not None else None
        self._stamp = _stamp(self._source)
        self._checked_at = time.monotonic()
        self._reloading = False
        self._reload_lock = threading.Lock()
        self._watch = ConfigWatch.start(self._source) if self._source is not None else None
        self._roots: dict[FileUri, WorkspaceRoot] = {}
        self._roots_lock = threading.Lock()
        self._directories = config.storage.workspaces_are_directories  # [storage] applies at start-up
        self.problem: str | None = None
        """Why every request is refused (the file stopped parsing), in words safe to show a client."""

    @property
    def config(self) -> C:
        return self._config

    @property
    def cap(self) -> frozenset[Right]:
        return self._cap

    @cap.setter
    def cap(self, rights: frozenset[Right]) -> None:
        self._cap, self._narrowed = rights, {}

    async def refresh(self) -> None:
        """Bring the configuration up to date with its file before a request uses it (see the class)."""
        if self._source is None or self._reloading:
            return
        forced = self._watch is not None and self._watch.names_changed()
        if self._watch is not None and self._watch.broken:
            self._watch.close()
            self._watch = None
        stale = self._watch is None or time.monotonic() - self._checked_at >= RECHECK_SECONDS
        if not (forced or stale or (self._watch is not None and self._watch.something_changed)):
            return
        self._reloading = True
        try:
            await anyio.to_thread.run_sync(functools.partial(self.reload_if_changed, force=forced))
        finally:
            self._reloading = False

    def reload_if_changed(self, *, force: bool = False, wait: bool = True) -> C:
        """Re-read the file if its stamp changed (or `force`); blocking, for worker threads. With
        `wait=False`, a read already under way in another thread is not waited for."""
        source, reload = self._source, self._reload
        if source is None or reload is None or not self._reload_lock.acquire(blocking=wait):
            return self._config
        try:
            stamp = _stamp(source)
            self._checked_at = time.monotonic()
            if self._watch is not None:
                self._watch.something_changed = False
            if stamp == self._stamp and not force:
                return self._config
            self._stamp = stamp
            try:
                fresh = reload(source)
            except Exception as exc:  # a broken edit must not widen or crash anything
                logger.error("config reload failed; every grant is refused until fixed: %s", exc)
                self._config, self._narrowed = self._config.without_grants(), {}
                self.problem = BROKEN_CONFIG
                return self._config
            self.problem = None
            if fresh == self._config:
                return fresh
            logger.info("config reloaded from %s", source)
            if fresh.storage != self._config.storage:
                logger.warning("[storage] changed in %s; it takes effect at the next start", source)
            self._config, self._narrowed = fresh, {}
        finally:
            self._reload_lock.release()
        for workspace in fresh.workspaces:  # open new folders here, not on the event loop
            with contextlib.suppress(FsError):
                self.directory(workspace)
        return fresh

    def authorize_workspace(self, caller: Caller, workspace_uri: object) -> WorkspaceScope:
        """Parse, authorize and contain `workspace_uri` for the caller's principal and right, or raise
        saying why not. Uses the configuration `refresh` last loaded: no file is read here.

        `AuthorizationError`: no grant of the principal touches the URI (covers it, or lies inside
        it). `RightMissing`: grants touch it, but none gives the call's right there or below."""
        try:
            uri = parse_file_uri(workspace_uri)
        except UriError as exc:
            raise ScopeError(f"workspaceUri is not acceptable: {exc}") from None
        if self.problem is not None:
            raise ConfigUnavailable(self.problem)
        grants = self._grants(caller)
        for workspace, held in grants.items():
            below = uri.relative_to(workspace)
            if below is None or not any(
                g.covers(below) or g.folder[: len(below)] == below for g in held if g.rights
            ):
                continue
            reach = reach_of(held, below, caller.right)
            if not reach:
                raise self._missing(caller, uri, workspace, held)
            return WorkspaceScope(
                caller.principal, workspace, below, self.directory(workspace), caller.right, reach, held
            )
        raise AuthorizationError(
            f"workspace {uri} is not granted to principal {caller.principal}; granted: "
            + _listing(grants, caller.principal)
        )

    def reauthorize_workspace(self, caller: Caller, workspace_uri: object) -> WorkspaceScope:
        """`authorize_workspace` after re-reading a changed file: for a commit in a worker thread,
        which may come long after its request started (a 2025-11-25 session's live question). A read
        another thread has under way is not waited for: a commit holds the ledger's lock."""
        self.reload_if_changed(wait=False)
        return self.authorize_workspace(caller, workspace_uri)

    def granted_workspaces(self, caller: Caller) -> tuple[FileUri, ...]:
        """The workspaces where the caller's right holds somewhere, in configuration order."""
        return tuple(w for w, held in self._grants(caller).items() if reach_of(held, (), caller.right))

    def rights_held(self, principal: str, credential_rights: frozenset[Right] | None) -> frozenset[Right]:
        """Every right the principal holds somewhere, as narrowed by the credential and the process:
        what decides which tools it is shown."""
        caller = Caller(principal, credential_rights=credential_rights)
        return frozenset(r for held in self._grants(caller).values() for g in held for r in g.rights)

    def _grants(self, caller: Caller) -> dict[FileUri, tuple[FolderRights, ...]]:
        """The principal's grants per workspace, each narrowed to the credential's rights and the
        process's (`rights` Rule 3)."""
        key = (caller.principal, caller.credential_rights)
        found = self._narrowed.get(key)
        if found is not None:
            return found
        config = self._config
        principal = config.principals.get(caller.principal)
        narrow = self._cap if caller.credential_rights is None else self._cap & caller.credential_rights
        found = {
            workspace: tuple(FolderRights(g.folder, g.rights & narrow) for g in held)
            for workspace, held in (principal.grants.items() if principal is not None else ())
        }
        if config is self._config and len(self._narrowed) < _NARROWED_KEPT:
            self._narrowed[key] = found
        return found

    def _missing(
        self, caller: Caller, uri: FileUri, workspace: FileUri, held: tuple[FolderRights, ...]
    ) -> RightMissing:
        right, who = caller.right, caller.principal
        here = rights_at(held, uri.relative_to(workspace) or ())
        elsewhere = [str(workspace.joinpath(f)) for f in reach_of(held, (), right)]
        message = f"{right} is not granted to {who} in {uri} ({who} holds {describe_rights(here)} there"
        message += f"; {right} in: {', '.join(elsewhere)})." if elsewhere else ")."
        unnarrowed = self._grants(Caller(who, right))  # the grant alone, without the credential's limit
        if self.cap != ALL_RIGHTS and right not in self.cap:
            message += f" This server was started with only {describe_rights(self.cap)} (serve --rights)."
        elif caller.credential_rights is not None and reach_of(unnarrowed.get(workspace, ()), (), right):
            message += (
                f" Your credential carries only {describe_rights(caller.credential_rights)}: use one "
                f"with {right} (an OAuth token with the scope for it, or a token made with --rights)."
            )
        else:
            message += " Rights are granted by the server's operator ([[principal]] in its configuration)."
        return RightMissing(message, right=right, where=str(uri))

    def open_all(self) -> None:
        """Open every configured workspace now, so a missing folder fails at start-up: a
        `WorkspaceFolderError` naming the folder and its config entry (the CLI prints it, exit 2)."""
        for number, workspace in enumerate(self._config.workspaces, 1):
            try:
                self.directory(workspace)
            except FsError as exc:
                source = self._config.source
                entry = (
                    f'{source}: [[workspace]] #{number} uri = "{workspace}"'
                    if source is not None
                    else f"--workspace {workspace.path}"
                )
                why, fix = _WHY_NOT_OPENED.get(type(exc), (f"cannot be opened ({exc})", "ls -ld {path}"))
                raise WorkspaceFolderError(
                    f"{entry}: the folder {workspace.path} {why}; fix: {fix.format(path=workspace.path)}"
                ) from None

    def directory(self, workspace: FileUri) -> WorkspaceRoot | None:
        """The workspace's open folder, or `None` when notes live in a database (no folder needed)."""
        return self.root(workspace) if self._directories else None

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
        with self._roots_lock:
            for root in self._roots.values():
                root.close()
            self._roots.clear()

    def root(self, workspace: FileUri) -> WorkspaceRoot:
        root = self._roots.get(workspace)
        if root is not None:
            return root
        opened = WorkspaceRoot.open(workspace.path, label=f"workspace {workspace}")
        with self._roots_lock:
            root = self._roots.setdefault(workspace, opened)
        if root is not opened:  # another thread opened it first
            opened.close()
        return root


class ConfigWatch:
    """inotify on the folder(s) of the config file: whether anything may have changed, answered
    without touching the filesystem. Any trouble (no inotify, a watch dropped, a queue overflow)
    turns it off for good, and `Grants` compares stamps on every request instead."""

    def __init__(self, inotify: inotify_simple.INotify, names: set[str]) -> None:
        self._inotify = inotify
        self._names = names
        self.something_changed = False
        """An event about another entry of the folder (a symlink swapped in, as Kubernetes does)."""
        self.broken = False
        """A watched folder went away (removed, unmounted): the watch can no longer tell."""

    @classmethod
    def start(cls, source: Path) -> ConfigWatch | None:
        paths = {source.absolute(), source.resolve()}
        try:
            inotify = inotify_simple.INotify(nonblocking=True)
        except OSError as exc:
            logger.warning("config file not watched (%s); its stamp is checked on every request", exc)
            return None
        try:
            for folder in {p.parent for p in paths}:
                inotify.add_watch(str(folder), _CONFIG_EVENTS)
        except OSError as exc:
            inotify.close()
            logger.warning("config file not watched (%s); its stamp is checked on every request", exc)
            return None
        return cls(inotify, {p.name for p in paths})

    def names_changed(self) -> bool:
        """Drain the events: True when one names the config file (or the watch can no longer tell)."""
        try:
            events = self._inotify.read(timeout=0)
        except OSError:
            events = []
        named = False
        for event in events:
            if event.mask & (inotify_simple.flags.Q_OVERFLOW | inotify_simple.flags.IGNORED):
                named = self.something_changed = True
                self.broken = self.broken or bool(event.mask & inotify_simple.flags.IGNORED)
            elif event.name in self._names:
                named = True
            else:
                self.something_changed = True
        return named

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._inotify.close()


_CONFIG_EVENTS = (
    inotify_simple.flags.CLOSE_WRITE
    | inotify_simple.flags.MOVED_TO
    | inotify_simple.flags.MOVED_FROM
    | inotify_simple.flags.CREATE
    | inotify_simple.flags.DELETE
    | inotify_simple.flags.ATTRIB
    | inotify_simple.flags.DELETE_SELF
    | inotify_simple.flags.MOVE_SELF
    | inotify_simple.flags.ONLYDIR
)
RECHECK_SECONDS = 1.0
_NARROWED_KEPT = 4096
"""At most this many (principal, credential) entries of `Grants._grants` are kept per configuration."""
"""Even with a watch, the file's stamp is compared this often (network filesystems send no events)."""
BROKEN_CONFIG = (
    "the server's configuration file no longer parses after an edit; every request is refused until "
    "the operator fixes it"
)


def _listing(grants: Mapping[FileUri, tuple[FolderRights, ...]], principal: str) -> str:
    """The caller's own grants, for a refusal (Rule 4): `file:///a (read, write), …`, or none."""
    shown = [
        f"{workspace.joinpath(g.folder)} ({describe_rights(g.rights)})"
        for workspace, held in grants.items()
        for g in held
        if g.rights
    ]
    return ", ".join(shown) or "none"


def _stamp(source: Path | None) -> tuple[int, ...] | None:
    if source is None:
        return None
    try:
        st = source.stat()
    except OSError:
        return (-1,)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def check_workspace_folders(config: GrantConfig) -> None:
    """Before anything else starts (and logs): every workspace folder opens, else a
    `WorkspaceFolderError` that names the folder and its config entry."""
    grants = Grants(config)
    try:
        grants.open_all()
    finally:
        grants.close()
