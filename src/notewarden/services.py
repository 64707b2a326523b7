"""The long-lived parts a running server is made of, built once from configuration."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from notewarden.config import Config
from notewarden.faults import armed_point
from notewarden.ledger import Ledger
from notewarden.notes.store import NoteStore
from notewarden.publish.connections import Connections
from notewarden.publish.ledger_connections import ConnectionStore, LedgerConnections
from notewarden.scope.grants import Grants
from notewarden.sealing import load_or_create_keys
from notewarden.storage import open_ledger, open_store

__all__ = ["Services", "open_services"]

logger = logging.getLogger(__name__)


@dataclass
class Services:
    config: Config
    grants: Grants
    ledger: Ledger
    store: NoteStore
    sealing_keys: list[bytes]
    connections: ConnectionStore | None = None  # notes_publish: pending URL-mode steps, sealed credentials

    def close(self) -> None:
        self.store.close()
        self.ledger.close()
        self.grants.close()
        if self.connections is not None:
            self.connections.close()


def open_services(config: Config) -> Services:
    """Open workspaces, ledger and keys, then finish any delete a crash interrupted."""
    config.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    grants = Grants(config)
    grants.open_all()
    if armed_point():
        logger.warning("test fault hook armed: this server pauses deletes (never set it in a deployment)")
    ledger = open_ledger(config)
    store = open_store(config, ledger)
    keys = load_or_create_keys(config.state_dir)
    services = Services(
        config=config,
        grants=grants,
        ledger=ledger,
        store=store,
        sealing_keys=keys,
        connections=(
            LedgerConnections(ledger, keys)  # shared by every instance (docs/deployment.md)
            if config.storage.ledger == "postgres"
            else Connections(config.state_dir / "publish.sqlite3", keys)
        ),
    )
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


def recover_interrupted_deletes(services: Services) -> int:
    recovered = 0
    with services.ledger.critical_section() as txn:
        for workspace in services.config.workspaces:
            recovered += services.store.recover(txn, workspace, services.grants.directory(workspace))
    if recovered:
        logger.warning("recovered %d interrupted delete(s) at start-up", recovered)
    return recovered
