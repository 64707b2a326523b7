"""The record: who changed which notes, with what, through notewarden (issue 24).

Rule 1 (what): every call that changes something leaves exactly one record; a call that changes
nothing (a dry run, a decline or cancel, a refusal, a write of the bytes already there) leaves none.
A record is the rows of `change_log` that share its `record_id`, one per note the call touched, in
order (`seq` 0 is the note the call was about): when, which workspace, the principal (from its
credential), the client's name and version (as the client gave them in `clientInfo`: unverified,
shown, never used to decide anything), the tool, the confirmation id of a confirmed tool, a
one-line summary, and per note what happened to it:

| effect            | the note                                  | versions kept            |
|-------------------|-------------------------------------------|--------------------------|
| `created`         | was created (notes_create, notes_daily)   | after                    |
| `rewritten`       | got new content (update, edit, revert)    | before, after            |
| `moved`           | got a new id (`previous_id`: the old one) | before, after when read  |
| `relinked`        | had its links rewritten by a move         | before, after            |
| `restored`        | came back from the trash                  | after when read          |
| `trashed`         | went to the trash                         | -                        |
| `purged`          | left the trash for good                   | -                        |
| `versions_purged` | lost saved versions (the count: summary)  | -                        |
| `published`       | was sent to a publish target              | after: the version sent  |

A version is `model.content_version` of the bytes, where the store has them at hand (the files
store does not read a note it only renames). `state` is the note's `NoteIdentity` right after the
change (its fingerprint): what `notes_recent` compares to tell notewarden's change from an editor's.

Rule 2 (where, when): in the ledger's database, both dialects, written through the open
transaction that makes the change (`record`, with the change's other rows), so it commits or rolls
back with it. One INSERT statement per change, one row per note (a record of more than
`ROWS_PER_INSERT` notes takes one statement per that many): a record of two tables would cost two
statements for the common single-note change. The INSERT is the transaction's last write
(`LedgerTxn.write_at_commit`): PostgreSQL sends it with the COMMIT, so it costs no round trip;
SQLite, where a statement costs none, runs it at once. SQL stores: the change and its record are one
transaction, so a crash leaves both or neither. Files store: the file step happens inside that
transaction but the filesystem cannot join it; what a crash (SIGKILL, power loss) before COMMIT
can leave is the bound below, everything else is both or neither:

| files store        | the steps in the ledger transaction, in order                    | a crash before COMMIT leaves |
|--------------------|------------------------------------------------------------------|------------------------------|
| create             | create the file (O_EXCL); record                                 | the new note, no record |
| update/edit/revert | history row, saved copy; swap the new content in; record         | the new content, no record, no history row (its saved copy is left unlisted) |
| move               | rename; history re-keyed; record                                 | the note at its new id, no record (its history still under the old id) |
| move with links    | journal; each note rewritten; rename; commit mark; record        | nothing: the journal is settled back at the next start or write |
| delete             | intent journal; rename into the trash; trash row; record         | nothing: recovery moves it back |
| restore            | rename out of the trash; rows; record                            | the note back, no record (recovery drops its trash row) |
| trash empty        | each entry: row deleted, file unlinked; record                   | the unlinked notes gone, no record (recovery drops their rows) |
| history purge      | rows deleted; record; saved copies unlinked                      | the unlinked copies gone, no record (their rows stay, unreadable) |

So with the files store a record never names a change that did not happen, and a change is left
without its record only by a crash between its file step and its COMMIT, where nothing but the
transaction's own statements run (the record is written right after the file step). `notes_publish`
sends outside any transaction (`tools.notes_publish`): its record is written with the outcome, after
the send; a crash between the two leaves a publication without a record until a retry of the same
confirmation completes it (and it is then recorded once); a publish with a stored credential, which
has no confirmation, stays unrecorded.

Rule 3 (retention): records older than `[audit] retention_days` are deleted by `record` itself,
inside a change's transaction, at most once an hour per process and at most `PRUNE_BATCH` rows at
a time (a backlog, after retention was shortened, goes on the following writes). Hourly because
retention is counted in days: an hour late costs nothing, and pruning costs no transaction of its
own and never a read (a tool that only reads never prunes). The DELETE uses the index on `at`.

Rule 4 (who reads it): `notewarden audit` (the operator's: it reads the configuration and the
database directly) shows every record. Through the tools only `notes_recent` shows who changed a
note, to a caller that may read the workspace, for the notes in its reach, and only the principal,
the client's name and version, the tool and when (`authors`): never another note a record names
nor its summary. It attributes a change to the record that left the note in the state it shows
(the same `state`); a note that went to the record that moved it to the trash within
`MATCH_SECONDS` of when `notes_recent` says it went (its trash row and its record are written by
one transaction, so only clocks that disagree make this window matter). A change nobody recorded
(an editor's, seen by the files store's index) has no author.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from notewarden.ledger import LedgerTxn, SqlSession
from notewarden.notes.history import Change, HistoryEntry
from notewarden.notes.live import ChangeFeed
from notewarden.schema import SchemaComponent

__all__ = [
    "CHANGE_LOG_SCHEMA",
    "MATCH_SECONDS",
    "Author",
    "ChangeLog",
    "NoteEffect",
    "Record",
    "RecordRetention",
    "Seen",
    "moved_effects",
    "read_records",
    "versions_purged",
]

CHANGE_LOG_SCHEMA = SchemaComponent(
    "change_log",
    tables=("change_log",),
    sqlite=(
        """
        CREATE TABLE change_log (
            record_id       TEXT NOT NULL,
            seq             INTEGER NOT NULL,
            at              REAL NOT NULL,
            workspace       TEXT NOT NULL,
            principal       TEXT NOT NULL,
            client_name     TEXT NOT NULL,
            client_version  TEXT NOT NULL,
            tool            TEXT NOT NULL,
            confirmation_id TEXT,
            summary         TEXT NOT NULL,
            note_id         TEXT NOT NULL,
            previous_id     TEXT,
            effect          TEXT NOT NULL,
            version_before  TEXT,
            version_after   TEXT,
            state           TEXT
        );
        CREATE INDEX change_log_by_time ON change_log (at);
        CREATE INDEX change_log_by_note ON change_log (workspace, note_id, state);
        """,
    ),
    postgres=(
        """
        CREATE TABLE change_log (
            record_id       text NOT NULL,
            seq             integer NOT NULL,
            at              double precision NOT NULL,
            workspace       text NOT NULL,
            principal       text NOT NULL,
            client_name     text NOT NULL,
            client_version  text NOT NULL,
            tool            text NOT NULL,
            confirmation_id text,
            summary         text NOT NULL,
            note_id         text NOT NULL,
            previous_id     text,
            effect          text NOT NULL,
            version_before  text,
            version_after   text,
            state           text
        );
        CREATE INDEX change_log_by_time ON change_log (at);
        CREATE INDEX change_log_by_note ON change_log (workspace, note_id, state);
        """,
    ),
)

_UNCHANGED = frozenset({"purged", "versions_purged", "published"})
"""Effects that leave no note in another state: never the author of a change `notes_recent` shows."""

CLIENT_CHARS = 200
"""The most of a client's name or version a record keeps (the client chooses them)."""
SUMMARY_CHARS = 1000
ROWS_PER_INSERT = 500
"""Rows per INSERT statement (16 values each: well inside SQLite's 32,766 parameters)."""
PRUNE_EVERY_SECONDS = 3600.0
PRUNE_BATCH = 5000
MATCH_SECONDS = 120.0
"""How far apart a deletion's time in `notes_recent` and its record's may be (the ledger's clock skew,
`ledger.EXPIRY_SKEW_SECONDS`: instances' clocks must agree within it anyway)."""
_COLUMNS = (
    "record_id, seq, at, workspace, principal, client_name, client_version, tool, confirmation_id, "
    "summary, note_id, previous_id, effect, version_before, version_after, state"
)
_ROW_MARKS = "(" + ", ".join("?" * 16) + ")"


@dataclass(frozen=True, slots=True)
class RecordRetention:
    """`[audit]`: how long records are kept."""

    retention_days: float = 365.0


@dataclass(frozen=True, slots=True)
class NoteEffect:
    """One note a change touched, and what happened to it (Rule 1's table)."""

    note_id: str
    """Its id after the change (a move: the new id)."""
    effect: str
    previous_id: str | None = None
    version_before: str | None = None
    version_after: str | None = None
    state: str | None = None
    """`NoteIdentity.fingerprint()` of the note right after the change; None when it is not a live note
    (trashed, purged) or the change left it as it was."""


@dataclass(frozen=True, slots=True)
class Author:
    """Who made a change, as its record says: what `notes_recent` shows (Rule 4)."""

    principal: str
    client_name: str
    client_version: str
    tool: str
    at: float


@dataclass(frozen=True, slots=True)
class Record:
    """One record as `notewarden audit` shows it."""

    record_id: str
    at: float
    workspace: str
    principal: str
    client_name: str
    client_version: str
    tool: str
    confirmation_id: str | None
    summary: str
    notes: tuple[NoteEffect, ...]

    def as_json(self) -> dict[str, Any]:
        def note(n: NoteEffect) -> dict[str, Any]:
            shown: dict[str, Any] = {"id": n.note_id, "effect": n.effect}
            extra = {
                "from": n.previous_id,
                "versionBefore": n.version_before,
                "versionAfter": n.version_after,
            }
            return shown | {k: v for k, v in extra.items() if v is not None}

        return {
            "recordId": self.record_id,
            "at": _iso(self.at),
            "workspace": self.workspace,
            "principal": self.principal,
            "client": {"name": self.client_name, "version": self.client_version, "verified": False},
            "tool": self.tool,
            "confirmationId": self.confirmation_id,
            "summary": self.summary,
            "notes": [note(n) for n in self.notes],
        }


@dataclass(frozen=True, slots=True)
class Seen:
    """A change `notes_recent` shows: the note, when, and its state now (None: the note went)."""

    note_id: str
    at: float
    state: str | None


def moved_effects(
    moved_from: str, moved_to: str, state: str, relinked: Sequence[NoteEffect]
) -> list[NoteEffect]:
    """A move's notes: the moved one first (with its versions when its own links were rewritten), then
    each note whose links it rewrote."""
    own = next((e for e in relinked if e.note_id == moved_to), None)
    before, after = (None, None) if own is None else (own.version_before, own.version_after)
    moved = NoteEffect(moved_to, "moved", moved_from, before, after, state)
    return [moved, *(e for e in relinked if e is not own)]


def versions_purged(entries: Sequence[HistoryEntry]) -> list[NoteEffect]:
    """The notes whose saved versions a purge deletes, each once, in the order of their first entry."""
    return [NoteEffect(note_id, "versions_purged") for note_id in dict.fromkeys(e.note_id for e in entries)]


def _kept(text: str, limit: int) -> str:
    """What a record keeps of a text a client may have written: at most `limit` characters, no NUL
    (PostgreSQL's text refuses it, and a record must never be what fails its change's COMMIT)."""
    text = text.replace("\x00", "\ufffd")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _new_record_id() -> str:
    """Time-ordered and random: two records never share one, whatever the process or host."""
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(8)}"


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


class ChangeLog:
    """The `change_log` rows of one process's writes (Rule 2), pruned as Rule 3 says."""

    def __init__(self, retention: RecordRetention | None = None) -> None:
        self.retention = retention or RecordRetention()
        self._next_prune = 0.0
        self.feed: ChangeFeed | None = None
        """Told of every record, in its transaction (`notes.live` Rule 2): live changes."""

    def record(
        self, txn: LedgerTxn, workspace: str, change: Change, notes: Sequence[NoteEffect]
    ) -> str | None:
        """Write the record of `change` through `txn` (the transaction making it, with its COMMIT:
        `LedgerTxn.write_at_commit`); its id, or None when it touched no note (nothing changed)."""
        if not notes:
            return None
        record_id, at = _new_record_id(), time.time()
        common = (
            workspace,
            change.principal,
            _kept(change.client_name, CLIENT_CHARS),
            _kept(change.client_version, CLIENT_CHARS),
            change.tool,
            change.confirmation_id,
            _kept(change.summary, SUMMARY_CHARS),
        )
        rows = [
            (
                record_id,
                seq,
                at,
                *common,
                n.note_id,
                n.previous_id,
                n.effect,
                n.version_before,
                n.version_after,
                n.state,
            )
            for seq, n in enumerate(notes)
        ]
        for start in range(0, len(rows), ROWS_PER_INSERT):
            chunk = rows[start : start + ROWS_PER_INSERT]
            txn.write_at_commit(
                f"INSERT INTO change_log ({_COLUMNS}) VALUES {', '.join([_ROW_MARKS] * len(chunk))}",
                [value for row in chunk for value in row],
            )
        if at >= self._next_prune:
            self._prune(txn, at)
        if self.feed is not None:
            self.feed.on_record(
                txn, workspace, [(n.note_id, n.effect, n.previous_id, n.state) for n in notes]
            )
        return record_id

    def _prune(self, txn: SqlSession, now: float) -> None:
        """Rule 3: at most `PRUNE_BATCH` of the oldest expired rows; sooner again when there were more."""
        cutoff = now - self.retention.retention_days * 86400
        bound = txn.execute(
            "SELECT at FROM change_log WHERE at < ? ORDER BY at LIMIT 1 OFFSET ?", (cutoff, PRUNE_BATCH)
        )
        txn.execute("DELETE FROM change_log WHERE at < ?", (bound[0][0] if bound else cutoff,))
        self._next_prune = now + (0 if bound else PRUNE_EVERY_SECONDS)

    def authors(self, db: SqlSession, workspace: str, seen: Sequence[Seen]) -> list[Author | None]:
        """Rule 4: for each change shown, the record that made it, or None."""
        found: dict[str, list[tuple[Any, ...]]] = {}
        for start in range(0, len(seen), 100):
            terms: list[str] = []
            params: list[object] = []
            for s in seen[start : start + 100]:
                if s.state is not None:
                    terms.append("(note_id = ? AND state = ?)")
                    params += [s.note_id, s.state]
                else:
                    terms.append("(note_id = ? AND at >= ? AND at <= ?)")
                    params += [s.note_id, s.at - MATCH_SECONDS, s.at + MATCH_SECONDS]
            for row in db.execute(
                "SELECT note_id, state, effect, at, principal, client_name, client_version, tool "
                f"FROM change_log WHERE workspace = ? AND ({' OR '.join(terms)})",
                (workspace, *params),
            ):
                found.setdefault(row[0], []).append(row)
        return [_author(s, found.get(s.note_id, ())) for s in seen]


def _author(seen: Seen, rows: Sequence[tuple[Any, ...]]) -> Author | None:
    newest_first = sorted(rows, key=lambda r: -float(r[3]))
    if seen.state is not None:
        row = next((r for r in newest_first if r[1] == seen.state), None)
    else:
        near = [r for r in newest_first if abs(float(r[3]) - seen.at) <= MATCH_SECONDS]
        latest = next((r for r in near if r[2] not in _UNCHANGED), None)
        row = latest if latest is not None and latest[2] == "trashed" else None
    if row is None:
        return None
    return Author(str(row[4]), str(row[5]), str(row[6]), str(row[7]), float(row[3]))


def read_records(
    db: SqlSession,
    *,
    workspace: str | None = None,
    principal: str | None = None,
    since: float | None = None,
    limit: int = 100,
) -> list[Record]:
    """The newest `limit` records matching the filters, newest first (`notewarden audit`)."""
    where, params = ["1 = 1"], []
    for clause, value in (("workspace = ?", workspace), ("principal = ?", principal), ("at >= ?", since)):
        if value is not None:
            where.append(clause)
            params.append(value)
    chosen = db.execute(
        f"SELECT DISTINCT at, record_id FROM change_log WHERE {' AND '.join(where)} "
        "ORDER BY at DESC, record_id DESC LIMIT ?",
        (*params, limit),
    )
    records: list[Record] = []
    for start in range(0, len(chosen), 500):
        ids = [row[1] for row in chosen[start : start + 500]]
        rows = db.execute(
            f"SELECT {_COLUMNS} FROM change_log WHERE record_id IN ({', '.join('?' * len(ids))}) "
            "ORDER BY at DESC, record_id DESC, seq",
            ids,
        )
        records += _grouped(rows)
    return records


def _grouped(rows: Sequence[tuple[Any, ...]]) -> list[Record]:
    by_id: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        by_id.setdefault(str(row[0]), []).append(row)
    return [_record(group) for group in by_id.values()]


def _record(rows: Sequence[tuple[Any, ...]]) -> Record:
    first = rows[0]
    return Record(
        record_id=str(first[0]),
        at=float(first[2]),
        workspace=str(first[3]),
        principal=str(first[4]),
        client_name=str(first[5]),
        client_version=str(first[6]),
        tool=str(first[7]),
        confirmation_id=None if first[8] is None else str(first[8]),
        summary=str(first[9]),
        notes=tuple(NoteEffect(str(r[10]), str(r[12]), r[11], r[13], r[14], r[15]) for r in rows),
    )
