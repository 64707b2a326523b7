"""The long-lived parts a running server is made of, built once from configuration.

With the files store, each workspace folder's trash belongs to one ledger (`notes.ownership`):
at start-up every folder is marked or its owner read, and the rule for it (owner, shared,
refused) is decided and logged; `Services.trash_ledger` then hands every trash step of that
workspace the owner's ledger, or refuses it. Interrupted deletes are recovered only under the
ledger that wrote them.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path

from notewarden.config import Config, load_config
from notewarden.embeddings import SearchMode, open_search_mode
from notewarden.faults import installed as installed_faults
from notewarden.ledger import Ledger, LedgerUnavailable
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.change_log import ChangeLog
from notewarden.notes.live import ChangeFeed, Liveness, Relay
from notewarden.notes.ownership import (
    OwnerMarker,
    Relation,
    WorkspaceOwnedElsewhere,
    claim_owner,
    read_owner,
    sharing_notice,
    sharing_refusal,
)
from notewarden.notes.store import NoteStore
from notewarden.publish.connections import Connections, import_legacy_file
from notewarden.schema import SchemaOutOfDate
from notewarden.scope.fs_errors import FsError
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import Grants
from notewarden.scope.rights import ALL_RIGHTS, Right
from notewarden.scope.uri import FileUri, parse_file_uri
from notewarden.sealing import SealingKeys, load_or_create_keys
from notewarden.storage import LEDGERS, NOTE_STORES, open_ledger, open_store

__all__ = ["Services", "WorkspaceTrash", "open_services", "shared_state_dirs"]

logger = logging.getLogger(__name__)


@dataclass
class WorkspaceTrash:
    """How this server may use one workspace folder's trash."""

    workspace: FileUri
    relation: Relation
    owner: OwnerMarker | None
    ledger: Ledger | None = None
    """The owner's ledger (this server's own, or the shared one); None when refused."""
    refusal: WorkspaceOwnedElsewhere | None = None
    marked_now: bool = False
    """This server's start-up marked the folder (it was the first): said in the start-up block."""


@dataclass
class Services:
    config: Config
    grants: Grants[Config]
    ledger: Ledger
    store: NoteStore
    sealing_keys: list[bytes]
    connections: Connections | None = None  # notes_publish: pending URL-mode steps, sealed credentials
    changes: ChangeLog = field(default_factory=ChangeLog)
    """Where each change's record goes (`notes.change_log`): shared with the store, for notes_publish."""
    trash: dict[str, WorkspaceTrash] = field(default_factory=dict)
    """Per workspace folder (files store only): the rule of `notes.ownership` decided at start-up."""
    shared_ledgers: list[Ledger] = field(default_factory=list)
    """Other state dirs' SQLite ledgers this server uses for the folders they own."""
    search: SearchMode = field(default_factory=lambda: SearchMode("lexical", "no model configured"))
    """How searches are answered: words, or words and meaning (`notewarden.embeddings`)."""
    feed: ChangeFeed = field(default_factory=ChangeFeed)
    """Every note change this process learns of, for `subscriptions/listen` (`notes.live`)."""
    liveness: Liveness = field(default_factory=lambda: Liveness(None, None))
    """The watch drain and the PostgreSQL relay, running while someone listens (`notes.live`)."""
    _trash_lock: threading.Lock = field(default_factory=threading.Lock)

    def trash_ledger(self, workspace: FileUri | str) -> Ledger:
        """The ledger that holds this workspace's claims and trash rows; `WorkspaceOwnedElsewhere`
        when this server may not change its trash. A refused folder that a takeover has since
        marked for this server's ledger is served from then on (after recovering it)."""
        trash = self.trash.get(str(workspace))
        if trash is None:
            return self.ledger
        if trash.ledger is not None:
            return trash.ledger
        assert trash.refusal is not None
        with self._trash_lock:
            return self._served_after_takeover(trash)

    def _served_after_takeover(self, trash: WorkspaceTrash) -> Ledger:
        if trash.ledger is not None:
            return trash.ledger
        assert trash.refusal is not None
        workspace = trash.workspace
        try:
            owner = read_owner(self.grants.root(workspace))
        except (ValueError, FsError):
            raise trash.refusal from None
        if owner is None or owner.ledger_id != self.ledger.identity.ledger_id:
            raise trash.refusal
        with self.ledger.critical_section() as txn:
            self.store.recover(txn, workspace, self.grants.directory(workspace))
        trash.relation, trash.owner, trash.ledger, trash.refusal = Relation.OWNER, owner, self.ledger, None
        log_trash_rule(trash)
        return self.ledger

    def close(self) -> None:
        self.liveness.close()
        self.store.close()
        self.ledger.close()
        for shared in self.shared_ledgers:
            shared.close()
        self.grants.close()
        if self.connections is not None:
            self.connections.close()


def open_services(config: Config, *, cap: frozenset[Right] = ALL_RIGHTS) -> Services:
    """Open workspaces, ledger and keys, decide who owns each folder's trash, then finish any
    delete a crash interrupted. `cap`: the most any request may do (`serve --rights`)."""
    config.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    grants = Grants(config, reload=load_config, cap=cap)
    grants.open_all()
    if installed_faults():
        logger.warning(
            "test fault hooks installed at %s: a test harness started this server", installed_faults()
        )
    ledger = open_ledger(config)
    changes = ChangeLog(config.audit)
    keys = load_or_create_keys(config.state_dir)
    log_sealing_keys(keys, config)

    def trash_ledger(workspace: str) -> Ledger:
        return services.trash_ledger(workspace)  # decided below, before any request

    services = Services(
        config=config,
        grants=grants,
        ledger=ledger,
        # the store asks which ledger owns a folder's trash; the answer needs the store itself (a
        # takeover recovers the folder's interrupted deletes first), so it asks the services it is in
        store=open_store(config, ledger, changes, trash_ledger=trash_ledger),
        sealing_keys=keys.keys,
        connections=Connections(ledger, keys.keys),  # seen by every instance (docs/deployment.md)
        changes=changes,
        search=open_search_mode(config.search),
    )
    logger.info("search mode", extra={"mode": services.search.mode, "reason": services.search.reason})
    import_legacy_file(ledger, config.state_dir / "publish.sqlite3")
    wire_live_changes(services)
    if config.storage.workspaces_are_directories:
        for workspace in config.workspaces:
            services.trash[str(workspace)] = settle_trash_owner(services, workspace)
            log_trash_rule(services.trash[str(workspace)])
    recover_interrupted_deletes(services)
    directories = [grants.directory(w) for w in config.workspaces]
    resolvers = sorted({d.resolver for d in directories if d is not None})
    logger.info(
        "workspaces opened; files are resolved with %s",
        "/".join(resolvers) or "nothing (no workspace folders)",
        extra={
            "event": "workspaces_opened",
            "resolver": ",".join(resolvers),
            "workspaces": len(config.workspaces),
        },
    )
    return services


def wire_live_changes(services: Services) -> None:
    """`notes.live` Rule 2: the change log, what the store watches (`NoteStore.watch_changes`) and
    (PostgreSQL) the relay feed `services.feed`; the drain and the relay run only while someone listens."""
    feed, grants = services.feed, services.grants
    services.changes.feed = feed
    drain = services.store.watch_changes(feed, lambda workspace: grants.root(parse_file_uri(workspace)))
    listen = LEDGERS[services.config.storage.ledger].listen
    relay = None
    if listen is not None:
        feed.notify = True
        relay = Relay(listen(services.config), feed)
    services.liveness = Liveness(drain, relay)


def settle_trash_owner(services: Services, workspace: FileUri) -> WorkspaceTrash:
    """Mark the folder for this server's ledger, or apply the rule of `notes.ownership` to its owner."""
    ours = services.ledger.identity
    root = services.grants.root(workspace)
    try:
        unmarked = read_owner(root) is None
        owner = claim_owner(root, ours)
    except ValueError as exc:
        refusal = WorkspaceOwnedElsewhere(str(workspace), None, ours, str(exc))
        return WorkspaceTrash(workspace, Relation.REFUSED, None, refusal=refusal)
    if owner.ledger_id == ours.ledger_id:
        return WorkspaceTrash(workspace, Relation.OWNER, owner, services.ledger, marked_now=unmarked)
    reason = sharing_refusal(owner)
    if reason is None:
        shared, reason = open_shared_ledger(services, owner)
        if shared is not None:
            return WorkspaceTrash(workspace, Relation.SHARED, owner, shared)
    refusal = WorkspaceOwnedElsewhere(str(workspace), owner, ours, reason)
    return WorkspaceTrash(workspace, Relation.REFUSED, owner, refusal=refusal)


def open_shared_ledger(services: Services, owner: OwnerMarker) -> tuple[Ledger | None, str]:
    """The owner's SQLite ledger file, opened read-write, if it still is that ledger; else why not."""
    for shared in services.shared_ledgers:
        if shared.identity.ledger_id == owner.ledger_id:
            return shared, ""
    try:
        opened = SqliteLedger(
            Path(owner.location),
            components=list(NOTE_STORES["files"].schemas),
            durability=services.config.storage.durability,
        )
    except (LedgerUnavailable, SchemaOutOfDate, sqlite3.Error, OSError) as exc:
        return None, f"its file {owner.location} cannot be opened read-write here ({exc})"
    if opened.identity.ledger_id != owner.ledger_id:
        opened.close()
        return None, (
            f"its file {owner.location} now holds another ledger ({opened.identity.ledger_id}), so the owner is gone"
        )
    services.shared_ledgers.append(opened)
    return opened, ""


def log_trash_rule(trash: WorkspaceTrash) -> None:
    """The rule for one folder; a shared one is a warning in `notewarden doctor`'s words (doctor and
    serve judge it alike), a folder this start-up marked says so (it now decides for other servers)."""
    extra = {
        "event": "trash_owner",
        "workspace": str(trash.workspace),
        "rule": trash.relation.value,
        "owner_ledger": trash.owner.ledger_id if trash.owner else None,
        "owner": trash.owner.describe() if trash.owner else None,
        "marked_now": trash.marked_now,
    }
    if trash.refusal is not None:
        logger.warning("workspace trash refused: %s", trash.refusal.explanation, extra=extra)
    elif trash.relation is Relation.SHARED and trash.owner is not None:
        finding, fix = sharing_notice(trash.workspace.path, trash.owner)
        logger.warning("workspace trash shared: %s; fix: %s", finding, fix, extra=extra)
    elif trash.marked_now and trash.owner is not None:
        logger.info(
            "workspace trash marked now: %s belongs to %s; servers with another state dir will share it",
            trash.workspace.path,
            trash.owner.describe(),
            extra=extra,
        )
    else:
        logger.info("workspace trash owned by this server's ledger", extra=extra)


def log_sealing_keys(keys: SealingKeys, config: Config) -> None:
    """Which key set seals (ids, never keys), from where; a warning where other instances need it too."""
    extra = {"event": "sealing_keys", "key_ids": ",".join(keys.key_ids), "source": keys.source}
    logger.info(
        "sealing keys %s from %s%s",
        extra["key_ids"],
        keys.source,
        " (created now)" if keys.created else "",
        extra=extra,
    )
    if keys.from_file and LEDGERS[config.storage.ledger].shared:
        logger.warning(
            "the PostgreSQL ledger serves several instances, but this one's sealing keys come from its own "
            "state dir (%s): another instance cannot open its confirmations (-32602 Invalid or expired "
            "requestState). Give every instance the same NOTEWARDEN_SEALING_KEYS (docs/deployment.md, section 4)",
            keys.source,
            extra=extra,
        )


def shared_state_dirs(config: Config) -> list[Path]:
    """State dirs of other ledgers this server may share (`notes.ownership` Rule 2), read from the
    folders' owner markers before the sandbox is applied, so that it can grant them."""
    if not config.storage.workspaces_are_directories:
        return []
    found: list[Path] = []
    for workspace in config.workspaces:
        try:
            with WorkspaceRoot.open(workspace.path) as root:
                owner = read_owner(root)
        except (FsError, ValueError, OSError):
            continue  # start-up reports it
        if owner is None or owner.state_dir is None or sharing_refusal(owner) is not None:
            continue
        if Path(owner.state_dir) not in (config.state_dir, *found):
            found.append(Path(owner.state_dir))
    return found


def recover_interrupted_deletes(services: Services) -> int:
    """Under each folder's owner ledger (never another's: `notes.ownership` Rule 1)."""
    recovered = 0
    for workspace in services.config.workspaces:
        trash = services.trash.get(str(workspace))
        ledger = services.ledger if trash is None else trash.ledger
        if ledger is None:
            continue  # refused: its owner's servers recover it
        with ledger.critical_section() as txn:
            recovered += services.store.recover(txn, workspace, services.grants.directory(workspace))
    if recovered:
        logger.warning("recovered %d interrupted delete(s) at start-up", recovered)
    return recovered
