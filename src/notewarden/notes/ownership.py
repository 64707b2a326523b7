"""Who may change a workspace folder's trash: the owner marker, the ledger each line of the intent
journal names (`notes.trash_journal`), and the rule for a server whose ledger is not the owner.

Rule 1 (the invariant): a delete whose claim committed is never rolled back, by any process. The
files store moves a trash entry back only while it holds the ledger that would have recorded the
commit (that ledger's write lock, see `notes.files`) and that ledger has no row for it. So every
line of the intent journal names the ledger that wrote it, and a process settles only the lines of
the ledger it holds. Lines of other ledgers ("foreign") and lines of an earlier notewarden that
wrote no ledger id ("legacy") are left alone and reported; a legacy line is settled only when the
ledger at hand holds its committed row.

Rule 2 (one exactly-once domain per folder): two ledgers on one folder could each claim the same
note. `.notewarden-trash/~owner` names the ledger that owns the folder's trash: the first ledger
to mark it (at its server's start-up, or its first trash mutation). For a server whose ledger is
another:

| the owner named in the marker                                    | this server, for this folder      |
|------------------------------------------------------------------|-----------------------------------|
| its own ledger                                                   | `owner`                           |
| a SQLite ledger file on this host that it can open read-write    | `shared`: that ledger holds this folder's claims and trash rows |
| PostgreSQL, another host, a file gone or holding another ledger  | `refused`: delete, restore, trash list and trash empty answer `workspace_owned_elsewhere` with the fix |

The rule is logged per workspace at start-up, checked again inside every trash mutation (the
marker must name the ledger of the open transaction), and reported by `inspect_trash`.

Rule 3: a takeover (`take_over`) re-marks a folder whose owner is gone (e.g. restored from a
backup next to a fresh state dir). It moves nothing: the old owner's entries stay in the trash,
unresolved ones among them, and `inspect_trash` lists them with the paths they came from.
"""

from __future__ import annotations

import enum
import functools
import json
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notewarden.ledger import LedgerIdentity
from notewarden.notes.trash_journal import parse_journal, read_journal
from notewarden.scope.fsroot import HeldDir, RecordStamp, WorkspaceRoot
from notewarden.scope.note_paths import TRASH_OWNER_NAME

__all__ = [
    "OwnerMarker",
    "Relation",
    "TrashRecord",
    "TrashReport",
    "WorkspaceOwnedElsewhere",
    "claim_owner",
    "describe_ledger",
    "inspect_trash",
    "read_owner",
    "sharing_notice",
    "sharing_refusal",
    "take_over",
]

_MARKER_MAX = 16 * 1024
_STAMP_SETTLED_NS = 2_000_000_000
"""A marker last changed this long before it was read keeps its stamp until it is written again."""
_STAMPS_KEPT = 64
_JOURNAL_READ_MAX = 64 * 1024 * 1024


class Relation(enum.Enum):
    OWNER = "owner"
    SHARED = "shared"
    REFUSED = "refused"


def describe_ledger(kind: str, location: str) -> str:
    """How people find a ledger: the SQLite file and its state dir, or the PostgreSQL database."""
    if kind == "sqlite":
        return f"the SQLite ledger of state dir {Path(location).parent}"
    return f"the PostgreSQL ledger {location}"


@dataclass(frozen=True, slots=True)
class OwnerMarker:
    """`.notewarden-trash/~owner`: the ledger that owns this trash, and for people where it lives."""

    ledger_id: str
    kind: str
    location: str
    host: str
    since: str
    """When the ledger marked the folder (UTC, ISO 8601)."""
    previous: str | None = None
    """The ledger id this marker replaced, when it was written by a takeover."""

    @classmethod
    def of(cls, identity: LedgerIdentity, *, previous: str | None = None) -> OwnerMarker:
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return cls(
            identity.ledger_id, identity.kind, identity.location, socket.gethostname(), since, previous
        )

    def encode(self) -> bytes:
        fields: dict[str, Any] = {
            "v": 1,
            "ledger": self.ledger_id,
            "kind": self.kind,
            "location": self.location,
            "host": self.host,
            "since": self.since,
        }
        if self.previous is not None:
            fields["previous"] = self.previous
        return json.dumps(fields, indent=1).encode() + b"\n"

    @classmethod
    def decode(cls, data: bytes) -> OwnerMarker:
        """Raises ValueError on anything but a marker this version writes."""
        try:
            raw = json.loads(data)
            fields = [raw[k] for k in ("ledger", "kind", "location", "host", "since")]
        except (ValueError, KeyError, TypeError):
            raise ValueError(
                "the owner marker is not readable JSON with ledger, kind, location, host"
            ) from None
        previous = raw.get("previous")
        known = raw.get("v") == 1 and fields[1] in ("sqlite", "postgres")
        if not known or not all(isinstance(f, str) and f for f in fields):
            raise ValueError("the owner marker has an unknown version or kind, or empty fields")
        ledger, kind, location, host, since = fields
        return cls(ledger, kind, location, host, since, previous if isinstance(previous, str) else None)

    def describe(self) -> str:
        return f"{describe_ledger(self.kind, self.location)} on host {self.host}"

    @property
    def state_dir(self) -> str | None:
        return str(Path(self.location).parent) if self.kind == "sqlite" else None


_by_stamp: dict[RecordStamp, OwnerMarker] = {}
"""Markers read through a held trash, by the stamp of the file they were read from."""


def read_owner(root: WorkspaceRoot, held: HeldDir | None = None) -> OwnerMarker | None:
    """The folder's owner marker, None when unmarked; ValueError when it cannot be read as one.
    Read on every trash mutation, so the few distinct markers a process meets are decoded once.

    With `held` (the trash, open for a mutation), a marker whose stamp (device, inode, size, mtime,
    ctime) is that of a marker read before is not read again: one `fstatat` instead of an open and
    two reads. Any change of the marker changes its stamp: a takeover renames a new file over it (a
    new inode and ctime), an edit in place moves the ctime, which no one can set back. Only a marker
    whose ctime was 2 s old when it was read is kept (as git does with racily clean files: a write
    within the same clock tick as the ctime would leave it unchanged), and only when the stamp is
    the same before and after the read."""
    if held is None:
        data = root.read_record(TRASH_OWNER_NAME, _MARKER_MAX)
        return None if data is None else _decoded(data)
    stamp = root.record_stamp(TRASH_OWNER_NAME, held=held)
    if stamp is not None and (known := _by_stamp.get(stamp)) is not None:
        return known
    now = time.time_ns()
    data = root.read_record(TRASH_OWNER_NAME, _MARKER_MAX, held=held)
    if data is None:
        return None
    marker = _decoded(data)
    if (
        stamp is not None
        and now - stamp[4] > _STAMP_SETTLED_NS
        and root.record_stamp(TRASH_OWNER_NAME, held=held) == stamp
    ):
        if len(_by_stamp) >= _STAMPS_KEPT:
            _by_stamp.clear()
        _by_stamp[stamp] = marker
    return marker


@functools.lru_cache(maxsize=16)
def _decoded(data: bytes) -> OwnerMarker:
    return OwnerMarker.decode(data)


def claim_owner(root: WorkspaceRoot, identity: LedgerIdentity, held: HeldDir | None = None) -> OwnerMarker:
    """The folder's owner, marking it for `identity` first when nobody has (the first ledger wins;
    a process that loses the race reads the winner's marker). `held`: the trash, already open."""
    marker = read_owner(root, held)
    if marker is None:
        root.write_record(TRASH_OWNER_NAME, OwnerMarker.of(identity).encode(), replace=False)
        marker = read_owner(root, held)
        assert marker is not None, "a marker was just created, by this process or another"
    return marker


def take_over(root: WorkspaceRoot, identity: LedgerIdentity) -> OwnerMarker | None:
    """Re-mark the folder for `identity`; the previous owner (None if there was none). Moves nothing."""
    try:
        previous = read_owner(root)
    except ValueError:
        previous = None
    marker = OwnerMarker.of(identity, previous=previous.ledger_id if previous else None)
    root.write_record(TRASH_OWNER_NAME, marker.encode(), replace=True)
    return previous


def sharing_refusal(owner: OwnerMarker) -> str | None:
    """Why a server of another ledger may not share the owner's ledger; None when it may try to
    open it (a SQLite file on this host; the caller then checks the file's ledger id)."""
    if owner.kind != "sqlite":
        return "a PostgreSQL ledger is used only by servers configured with that database"
    if owner.host != socket.gethostname():
        return f"it is on host {owner.host}, and a SQLite ledger is shared only by processes of one host"
    if not Path(owner.location).is_file():
        return f"its file {owner.location} no longer exists"
    return None


def sharing_notice(folder: str, owner: OwnerMarker) -> tuple[str, str]:
    """What `serve` logs and `notewarden doctor` warns, in the same words, when a folder's trash is
    owned by another state dir's ledger that this server shares: the finding and its fix."""
    return (
        f"{folder} is owned by {owner.describe()}: this config's servers share that ledger for it "
        "(one exactly-once domain, two state dirs)",
        f'serve the folder from one config: state_dir = "{owner.state_dir}"',
    )


class WorkspaceOwnedElsewhere(Exception):
    """This server's ledger is not the folder's owner and cannot use the owner's ledger (Rule 2)."""

    def __init__(self, workspace: str, owner: OwnerMarker | None, ours: LedgerIdentity, reason: str) -> None:
        folder = workspace.removeprefix("file://")
        if ours.kind == "sqlite":
            takeover = f"notewarden takeover {folder} --state-dir {Path(ours.location).parent}"
        else:
            takeover = f"notewarden takeover {folder} --config <this server's config file>"
        if owner is None:
            whose = "an owner this server cannot read"
            serve = "repair or remove .notewarden-trash/~owner"
        elif owner.kind == "sqlite":
            whose = owner.describe()
            serve = (
                f"serve this folder with that state dir (notewarden serve --workspace {folder} "
                f'--state-dir {owner.state_dir}, or state_dir = "{owner.state_dir}" in the config)'
            )
        else:
            whose = owner.describe()
            serve = "serve this folder from a server configured with that PostgreSQL database"
        self.explanation = (
            f"the trash of {workspace} belongs to {whose}, and this server "
            f"({describe_ledger(ours.kind, ours.location)}) cannot use it: {reason}. Two ledgers on one "
            f"folder would each take the other's deletes for unfinished ones, so this server leaves that "
            f"trash alone. To fix it, {serve}; or, only if that ledger is gone for good (e.g. the folder "
            f"was restored from a backup), run `{takeover}` once"
        )
        super().__init__(f"nothing was changed: {self.explanation}.")


# --- what a folder's trash says about itself (for `notewarden doctor`) ------------------------------


@dataclass(frozen=True, slots=True)
class TrashRecord:
    """An intent of the journal whose entry is still in the trash."""

    trash_id: str
    note_id: str
    ledger: str | None
    committed: bool
    """A committed line says it was a confirmed delete; False: unresolved, as far as the folder knows."""


@dataclass(frozen=True, slots=True)
class TrashReport:
    workspace: str
    owner: OwnerMarker | None
    owner_problem: str | None
    """Why the marker could not be read, if it could not."""
    ledger_id: str | None
    """The ledger the report was made for (None: no ledger; every intent is then listed as foreign)."""
    pending: tuple[TrashRecord, ...]
    """This ledger's unresolved intents: its next recovery settles them."""
    foreign: tuple[TrashRecord, ...]
    """Other ledgers' and legacy intents: only their own ledger settles them; left alone here."""
    unreadable_lines: int

    @property
    def owned(self) -> bool:
        return self.owner is not None and self.owner.ledger_id == self.ledger_id

    def lines(self) -> list[str]:
        """The report as a person reads it, one finding per line."""
        if self.owner_problem is not None:
            out = [f"{self.workspace}: owner marker unreadable ({self.owner_problem})"]
        elif self.owner is None:
            out = [f"{self.workspace}: not marked yet (the first server to start marks it)"]
        else:
            whose = "this ledger" if self.owned else f"another ledger ({self.owner.ledger_id})"
            out = [f"{self.workspace}: owned by {whose}, {self.owner.describe()}"]
        out += [f"  pending recovery: {r.trash_id} (from {r.note_id})" for r in self.pending]
        for r in self.foreign:
            state = "confirmed delete" if r.committed else "unresolved: only its ledger can settle it"
            out.append(
                f"  left alone: {r.trash_id} (from {r.note_id}) of ledger {r.ledger or 'unknown (earlier version)'}"
                f", {state}"
            )
        if self.unreadable_lines:
            out.append(f"  unreadable journal lines: {self.unreadable_lines}")
        return out


def inspect_trash(root: WorkspaceRoot, workspace: str, ledger_id: str | None) -> TrashReport:
    """Read-only: the folder's owner and the intents that are not settled, as seen by `ledger_id`."""
    try:
        owner, problem = read_owner(root), None
    except ValueError as exc:
        owner, problem = None, str(exc)
    lines, unreadable = parse_journal(read_journal(root, _JOURNAL_READ_MAX))
    committed = {line.trash_id for line in lines if line.committed}
    in_trash = set(root.list_trash())
    pending: list[TrashRecord] = []
    foreign: list[TrashRecord] = []
    for line in lines:
        if line.note_id is None or line.trash_id not in in_trash:
            continue
        record = TrashRecord(line.trash_id, line.note_id, line.ledger, line.trash_id in committed)
        (pending if ledger_id is not None and line.ledger == ledger_id else foreign).append(record)
    return TrashReport(
        workspace,
        owner,
        problem,
        ledger_id,
        tuple(r for r in pending if not r.committed),
        tuple(foreign),
        unreadable,
    )
