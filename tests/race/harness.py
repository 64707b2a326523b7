"""Deployments over every storage backend, and the 8-process race, for tests/race and bench/soak_race.py.

A `StorageDeployment` is a config (one per instance), real server processes, a workspace
with notes, and an independent view of what the storage holds (plain SQL on the SQLite file
or the PostgreSQL database, a directory listing of the trash), so the proofs check the
outcome without trusting the code under test.

Backends (`[storage]` notes + ledger):

    files+sqlite    notes are files; ledger and trash rows in state_dir/notewarden.sqlite3
    sqlite          notes are rows in state_dir/notewarden.sqlite3, next to the ledger
    postgres        notes are rows in PostgreSQL, next to the ledger
    files+postgres  notes are files; ledger and trash rows in PostgreSQL (advisory workspace locks)

SQL-store workspaces are URIs of folders that do not exist: the workspace is a name in the
database, and nothing on the servers' disks is needed.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from bench.data import bench_notes, write_workspace

from notewarden.config import load_config
from notewarden.ledger import Ledger
from notewarden.notes.history import Change
from notewarden.notes.sql import SqlNoteStore
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import TRASH_DIR_NAME as TRASH_DIR
from notewarden.scope.note_paths import TRASH_JOURNAL_NAME, TRASH_OWNER_NAME
from notewarden.scope.uri import parse_file_uri
from notewarden.storage import open_ledger, sqlite_path, upgrade_schema
from tests.conftest import NO_LIMITS, HttpServer, sha256, start_http_server
from tests.pg import PG_PORT, database_url
from tests.race.fault_entry import PAUSE_AT_ENV
from tests.race.senders import SenderPool, accept
from tests.wire.rawhttp import RawMcp

SETUP_TOOL = "test_setup"
"""The tool a test's own writes through the store are recorded with."""
FAULT_ENTRY = [sys.executable, str(Path(__file__).with_name("fault_entry.py")), "serve"]
"""`notewarden serve` with a fault point armed (tests/race/fault_entry.py)."""
BACKENDS = ("files+sqlite", "sqlite", "postgres", "files+postgres")
STORAGE = {
    "files+sqlite": ("files", "sqlite"),
    "sqlite": ("sqlite", "sqlite"),
    "postgres": ("postgres", "postgres"),
    "files+postgres": ("files", "postgres"),
}


@dataclass
class Round1:
    arguments: dict[str, Any]
    state: str
    options: list[str]

    def retry_params(self, note_id: str) -> dict[str, Any]:
        return {"inputResponses": accept(note_id), "requestState": self.state}


@dataclass
class StorageDeployment:
    root: Path
    backend: str
    database: str | None = None  # PostgreSQL database name for postgres ledgers
    principal: str = field(default_factory=lambda: f"alice-{secrets.token_hex(3)}")
    token: str = field(default_factory=lambda: f"token-{secrets.token_hex(16)}")
    keys: str = field(default_factory=lambda: secrets.token_hex(32))
    servers: list[HttpServer] = field(default_factory=list)
    granted: bool = True
    rights: tuple[str, ...] = ("owner",)
    """The principal's rights on the workspace (`write_configs(rights=...)` changes them live)."""
    extra_config: str = ""  # TOML tables appended to every instance's config
    own_state_dirs: set[str] = field(default_factory=set)
    """Instances given a state dir of their own (`state-<instance>`), e.g. a second server on the folder."""
    own_ledgers: dict[str, str] = field(default_factory=dict)
    """Instances whose `[storage] ledger` differs from the backend's (files store only)."""
    _ledger: Ledger | None = None

    def __post_init__(self) -> None:
        self.notes_kind, self.ledger_kind = STORAGE[self.backend]
        self.workspace_dir = self.root / "notes"
        if self.notes_kind == "files":
            self.workspace_dir.mkdir(parents=True, exist_ok=True)
            self.workspace_uri = f"file://{self.workspace_dir}"
        else:
            self.workspace_uri = f"file:///nw-db-workspaces/{secrets.token_hex(6)}/notes"
            assert not Path(self.workspace_uri[7:]).exists()
        self.write_configs()

    # --- configuration and processes ------------------------------------------------------

    @property
    def uses_postgres(self) -> bool:
        return self.ledger_kind == "postgres"

    def config_path(self, instance: str = "a") -> Path:
        return self.root / f"notewarden-{instance}.toml"

    def state_dir(self, instance: str = "a") -> Path:
        """Instances on one host share state_dir (the SQLite ledger, the files store's index and its
        update lock live there); with notes in PostgreSQL each instance has its own."""
        shared = self.notes_kind != "postgres" and instance not in self.own_state_dirs
        return self.root / ("state" if shared else f"state-{instance}")

    def write_configs(
        self,
        *,
        granted: bool | None = None,
        rights: tuple[str, ...] | None = None,
        instances: tuple[str, ...] = (),
    ) -> None:
        if granted is not None:
            self.granted = granted
        if rights is not None:
            self.rights = rights
        existing = {p.name[len("notewarden-") : -len(".toml")] for p in self.root.glob("notewarden-*.toml")}
        for instance in sorted(existing | set(instances) | {"a"}):
            path = self.config_path(instance)
            self.state_dir(instance).mkdir(mode=0o700, exist_ok=True)
            grants = json.dumps([self.workspace_uri] if self.granted else [])
            ledger = self.own_ledgers.get(instance, self.ledger_kind)
            storage = f'[storage]\nnotes = "{self.notes_kind}"\nledger = "{ledger}"\n'
            if ledger == "postgres":
                assert self.database is not None
                storage += f'database_url = "{database_url(self.database)}"\nconnect_timeout_seconds = 2\n'
            path.write_text(
                f'state_dir = "{self.state_dir(instance)}"\n'
                f'[[workspace]]\nuri = "{self.workspace_uri}"\n'
                f'[[principal]]\nid = "{self.principal}"\nworkspaces = {grants}\nrights = {json.dumps(list(self.rights))}\n'
                f'token_sha256 = ["{sha256(self.token)}"]\n' + NO_LIMITS + storage + self.extra_config
            )
            stamp = time.time() + len(existing) + getattr(self, "_bump", 0)
            self._bump = getattr(self, "_bump", 0) + 1
            os.utime(path, (stamp, stamp))  # servers notice a reload by the file's mtime

    def env(self, **extra: str) -> dict[str, str]:
        return {"NOTEWARDEN_SEALING_KEYS": self.keys, **extra}

    def start(self, instance: str = "a", **env: str) -> HttpServer:
        self.write_configs(instances=(instance,))
        log = self.root / f"server-{instance}.log"
        armed = PAUSE_AT_ENV in env  # a fault point: the test-only entry module installs its hook
        server = start_http_server(
            self.config_path(instance), log, env=self.env(**env), argv=FAULT_ENTRY if armed else None
        )
        self.servers.append(server)
        return server

    def client(self, server: HttpServer) -> RawMcp:
        return RawMcp(server.url, self.token)

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        if self._ledger is not None:
            self._ledger.close()

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.root.glob("server-*.log")))

    # --- notes ----------------------------------------------------------------------------

    def ledger(self) -> Ledger:
        """This test process's own connection to the storage (the product's code, for writing notes)."""
        if self._ledger is None:
            self._ledger = open_ledger(load_config(self.config_path()))
        return self._ledger

    def add_note(self, note_id: str, body: str) -> None:
        if self.notes_kind == "files":
            path = self.workspace_dir / note_id
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
        else:
            scope = WorkspaceScope(self.principal, parse_file_uri(self.workspace_uri), (), None)
            SqlNoteStore(self.ledger()).create_note(scope, note_id, body.encode(), change=self.setup)

    @property
    def setup(self) -> Change:
        """Who the test's own writes through the store are by (they leave records too: `SETUP_TOOL`)."""
        return Change(self.principal, SETUP_TOOL, "written by the test")

    def edit_note(self, note_id: str, body: str) -> None:
        """Another writer edits the note in place (same file / same row)."""
        if self.notes_kind == "files":
            with (self.workspace_dir / note_id).open("w") as f:
                f.write(body)
        else:
            self.sql(
                "UPDATE notes SET body = ? WHERE workspace = ? AND path = ?",
                (body, self.workspace_uri, note_id),
            )

    def replace_note(self, note_id: str, body: str) -> None:
        """Another writer replaces the note with a new one of the same name and the same content size."""
        if self.notes_kind == "files":
            tmp = self.workspace_dir / (note_id + ".new")
            tmp.write_text(body)
            tmp.rename(self.workspace_dir / note_id)
        else:
            self.sql("DELETE FROM notes WHERE workspace = ? AND path = ?", (self.workspace_uri, note_id))
            self.sql(
                "INSERT INTO notes (workspace, path, body, modified_ns) VALUES (?, ?, ?, ?)",
                (self.workspace_uri, note_id, body, time.time_ns()),
            )

    # --- what the storage holds, read independently ----------------------------------------

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.uses_postgres:
            assert self.database is not None
            with psycopg.connect(
                f"host=127.0.0.1 port={PG_PORT} user=postgres dbname={self.database}", autocommit=True
            ) as conn:
                cursor = conn.execute(statement.replace("?", "%s").encode(), params)
                return cursor.fetchall() if cursor.description else []
        with sqlite3.connect(sqlite_path(load_config(self.config_path())), isolation_level=None) as conn:
            conn.execute("PRAGMA busy_timeout = 10000")
            return conn.execute(statement, params).fetchall()

    def note_body(self, note_id: str) -> str | None:
        if self.notes_kind == "files":
            path = self.workspace_dir / note_id
            return path.read_text() if path.exists() else None
        rows = self.sql(
            "SELECT body FROM notes WHERE workspace = ? AND path = ?", (self.workspace_uri, note_id)
        )
        return str(rows[0][0]) if rows else None

    def trash_rows(self, note_id: str) -> int:
        """Committed trash rows for the note."""
        if self.notes_kind == "files":
            query = "SELECT count(*) FROM trash WHERE workspace = ? AND note_id = ?"
        else:
            query = "SELECT count(*) FROM notes_trash WHERE workspace = ? AND path = ?"
        return int(self.sql(query, (self.workspace_uri, note_id))[0][0])

    def trash_copies(self, note_id: str) -> int:
        """Copies of the note in the trash: folder entries (files store) or rows (SQL stores). A folder
        entry is the note's when a trash row (committed) or a journal line (not yet) names it."""
        if self.notes_kind != "files":
            return self.trash_rows(note_id)
        rows = self.sql(
            "SELECT trash_id FROM trash WHERE workspace = ? AND note_id = ?", (self.workspace_uri, note_id)
        )
        named = {r[0] for r in rows}
        named |= {line["trash_id"] for line in self.trash_journal() if line.get("note_id") == note_id}
        return len(named & set(self.trash_entries()))

    def trash_entries(self) -> list[str]:
        """The trash folder's entries (files store), its records (the intent journal, the owner) left out."""
        trash = self.workspace_dir / TRASH_DIR
        return sorted(p.name for p in trash.iterdir() if not p.name.startswith("~")) if trash.exists() else []

    def trash_owner(self) -> dict[str, Any]:
        """The folder's owner marker (files store): which ledger owns its trash."""
        return dict(json.loads((self.workspace_dir / TRASH_DIR / TRASH_OWNER_NAME).read_text()))

    def trash_journal(self) -> list[dict[str, Any]]:
        """The lines of the files store's intent journal: intents not yet settled by their ledger's
        recovery, and `committed` lines."""
        journal = self.workspace_dir / TRASH_DIR / TRASH_JOURNAL_NAME
        return [json.loads(line) for line in journal.read_text().splitlines()] if journal.exists() else []

    def claims(self) -> int:
        """Consumed confirmations of this deployment's principal."""
        return int(
            self.sql("SELECT count(*) FROM confirmations WHERE principal = ?", (self.principal,))[0][0]
        )

    def records(self, tool: str | None = None) -> int:
        """Records (`notes.change_log`) of this deployment's principal, of `tool` or of any tool but the
        test's own writes: what the server's changes left, counted independently."""
        which = "tool = ?" if tool is not None else "tool <> ?"
        query = f"SELECT count(DISTINCT record_id) FROM change_log WHERE principal = ? AND {which}"
        return int(self.sql(query, (self.principal, tool or SETUP_TOOL))[0][0])

    # --- the flow ---------------------------------------------------------------------------

    def round1(self, client: RawMcp, title: str) -> Round1:
        arguments = {"workspaceUri": self.workspace_uri, "title": title}
        result = client.call("notes_delete", arguments).result
        assert result["resultType"] == "input_required", result
        options = result["inputRequests"]["delete_choice"]["params"]["requestedSchema"]["properties"][
            "note_id"
        ]
        return Round1(arguments, result["requestState"], [o["const"] for o in options["oneOf"]])

    def round2(self, client: RawMcp, first: Round1, note_id: str) -> dict[str, Any]:
        return client.call("notes_delete", first.arguments, **first.retry_params(note_id)).result


@contextmanager
def deployment(root: Path, backend: str, database: str | None) -> Iterator[StorageDeployment]:
    d = StorageDeployment(root, backend, database if STORAGE[backend][1] == "postgres" else None)
    if d.uses_postgres:
        upgrade_schema(
            load_config(d.config_path())
        )  # what `notewarden db upgrade` does (tested in tests/storage)
    try:
        yield d
    finally:
        d.close()


# --- the race -----------------------------------------------------------------------------


@dataclass
class TrialRecord:
    trial: int
    kinds: dict[str, int]
    present_after: bool
    trash_copies: int
    trash_rows: int
    claims_added: int
    seconds: float
    records_added: int
    """Records of notes_delete (`notes.change_log`) the trial left: one per commit."""

    @property
    def ok(self) -> bool:
        return (
            self.kinds == {"deleted": 1, "replay": 7}
            and not self.present_after
            and self.trash_copies == 1
            and self.trash_rows == 1
            and self.claims_added == 1
            and self.records_added == self.claims_added
        )


def seed_background(d: StorageDeployment, count: int) -> None:
    """`count` other notes in the workspace (bench/soak_race.py --notes): one transaction on a SQL
    store, files on the files store."""
    if not count:
        return
    if d.notes_kind == "files":
        write_workspace(d.workspace_dir, bench_notes(0, count))
        return
    store = SqlNoteStore(d.ledger())
    rows = [(note.id, note.markdown, time.time_ns()) for note in bench_notes(0, count)]
    with d.ledger().critical_section() as txn:
        store.add_rows(txn, d.workspace_uri, rows)
    store.settle_after_bulk_write(d.workspace_uri)


def seed_race_notes(d: StorageDeployment, trials: int) -> None:
    for trial in range(trials):
        d.add_note(f"race/trial-{trial:04d}.md", f"# Race trial marker{trial:04d}x\n\nbody {trial}\n")


def race_trial(
    d: StorageDeployment, pool: SenderPool, servers: list[HttpServer], clients: list[RawMcp], trial: int
) -> TrialRecord:
    note_id = f"race/trial-{trial:04d}.md"
    first = d.round1(clients[trial % len(clients)], f"marker{trial:04d}x")
    assert first.options == [note_id], first.options
    claims_before, records_before = d.claims(), d.records("notes_delete")
    started = time.perf_counter()
    kinds = pool.fire(
        trial, [s.url for s in servers], d.token, first.arguments, first.retry_params(note_id), note_id
    )
    seconds = time.perf_counter() - started
    return TrialRecord(
        trial=trial,
        kinds=dict(Counter(kinds)),
        present_after=d.note_body(note_id) is not None,
        trash_copies=d.trash_copies(note_id),
        trash_rows=d.trash_rows(note_id),
        claims_added=d.claims() - claims_before,
        seconds=seconds,
        records_added=d.records("notes_delete") - records_before,
    )


def run_race(d: StorageDeployment, pool: SenderPool, trials: int, servers: int = 3) -> list[TrialRecord]:
    """`trials` races of the pool's sender processes, spread over `servers` HTTP servers of one deployment."""
    seed_race_notes(d, trials)
    started = [d.start(chr(ord("a") + i)) for i in range(servers)]
    clients = [d.client(s) for s in started]
    try:
        return [race_trial(d, pool, started, clients, trial) for trial in range(trials)]
    finally:
        for c in clients:
            c.close()
