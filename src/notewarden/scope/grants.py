"""Authorization: may this authenticated principal touch this workspace?

Rule 1: the principal comes from the transport's authentication (a verified bearer
credential over HTTP, the configured `[stdio] principal` over stdio), never from tool
arguments, `clientInfo` or anything else a client writes.
Rule 2: a workspace URI never authorizes itself. It is parsed strictly (`uri`), then
matched by path components against the principal's grants from configuration.
Rule 3: authorization is re-evaluated on every round of every call against the live
configuration (the file is re-read when it changes), so a revocation between the two
rounds of a confirmation wins.
Rule 4: errors name what the caller sent and what *this* principal is granted, never
what any other principal may use.

The result of a successful check is a `WorkspaceScope`: the only way other modules get
a `WorkspaceRoot` (an open directory handle) to operate on. With a SQL note store the
workspace is a name in the database, not a folder: the URI is parsed and matched the same
way, but no directory is opened and the scope has none (`DATABASE_WORKSPACE_IDENTITY`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from notewarden.config import Config, load_config
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.uri import FileUri, UriError, parse_file_uri

__all__ = ["DATABASE_WORKSPACE_IDENTITY", "AuthorizationError", "Grants", "ScopeError", "WorkspaceScope"]

logger = logging.getLogger(__name__)


class ScopeError(Exception):
    """A workspace URI was refused before any grant was consulted (malformed)."""


class AuthorizationError(Exception):
    """The principal may not use the named workspace."""


DATABASE_WORKSPACE_IDENTITY = (0, 0)
"""The identity of a workspace kept in a database: there is no directory that could be swapped;
each note carries its own identity (row id and version), checked inside the store's transaction."""


@dataclass(frozen=True, slots=True)
class WorkspaceScope:
    """A principal's authorized view of one workspace, holding its directory handle."""

    principal: str
    workspace: FileUri
    subtree: tuple[str, ...]
    directory: WorkspaceRoot | None

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
        """Whether a note id (a POSIX path relative to the workspace root) is inside the subtree."""
        if not self.subtree:
            return True
        return tuple(note_id.split("/")[: len(self.subtree)]) == self.subtree and note_id.count("/") >= len(
            self.subtree
        )

    @property
    def uri(self) -> FileUri:
        return self.workspace.joinpath(self.subtree)


class Grants:
    """Live grants: configuration plus one open directory handle per configured workspace."""

    def __init__(self, config: Config, *, reload: Callable[[Path], Config] = load_config) -> None:
        self._config = config
        self._reload = reload
        self._mtime_ns = self._source_mtime(config)
        self._roots: dict[FileUri, WorkspaceRoot] = {}
        self._lock = threading.Lock()
        self._directories = config.storage.workspaces_are_directories  # [storage] applies at start-up

    @property
    def config(self) -> Config:
        return self._config

    def current_config(self) -> Config:
        """The live configuration, re-read first if the file changed (Rule 3)."""
        return self._current()

    def authorize_workspace(self, principal: str, workspace_uri: object) -> WorkspaceScope:
        """Parse, authorize and contain `workspace_uri` for `principal`, or raise saying why not."""
        try:
            uri = parse_file_uri(workspace_uri)
        except UriError as exc:
            raise ScopeError(f"workspaceUri is not acceptable: {exc}") from None
        config = self._current()
        grant = config.principals.get(principal)
        granted = grant.workspaces if grant is not None else ()
        for workspace in granted:
            below = uri.relative_to(workspace)
            if below is not None:
                return WorkspaceScope(principal, workspace, below, self.directory(workspace))
        listing = ", ".join(str(w) for w in granted) if granted else "none"
        raise AuthorizationError(
            f"workspace {uri} is not granted to principal {principal}; granted: {listing}"
        )

    def granted_workspaces(self, principal: str) -> tuple[FileUri, ...]:
        grant = self._current().principals.get(principal)
        return grant.workspaces if grant is not None else ()

    def open_all(self) -> None:
        """Open every configured workspace now, so a missing folder fails at start-up."""
        for workspace in self._config.workspaces:
            self.directory(workspace)

    def directory(self, workspace: FileUri) -> WorkspaceRoot | None:
        """The workspace's open folder, or `None` when notes live in a database (no folder needed)."""
        return self.root(workspace) if self._directories else None

    def close(self) -> None:
        with self._lock:
            for root in self._roots.values():
                root.close()
            self._roots.clear()

    def root(self, workspace: FileUri) -> WorkspaceRoot:
        with self._lock:
            root = self._roots.get(workspace)
            if root is None:
                root = WorkspaceRoot.open(workspace.path)
                self._roots[workspace] = root
            return root

    def _current(self) -> Config:
        source = self._config.source
        if source is None:
            return self._config
        mtime = self._source_mtime(self._config)
        if mtime != self._mtime_ns:
            with self._lock:
                try:
                    fresh = self._reload(source)
                except Exception as exc:  # a broken edit must not widen or crash anything
                    logger.error("config reload failed; every grant is refused until fixed: %s", exc)
                    self._mtime_ns = mtime
                    self._config = _without_grants(self._config)
                else:
                    logger.info("config reloaded from %s", source)
                    if fresh.storage != self._config.storage:
                        logger.warning("[storage] changed in %s; it takes effect at the next start", source)
                    self._config, self._mtime_ns = fresh, mtime
        return self._config

    @staticmethod
    def _source_mtime(config: Config) -> int | None:
        if config.source is None:
            return None
        try:
            return config.source.stat().st_mtime_ns
        except OSError:
            return -1


def _without_grants(config: Config) -> Config:
    return replace(config, principals={})
