"""The owner marker and the rule for a second ledger (`notes.ownership`), on real folders."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.ledger import LedgerIdentity
from notewarden.notes import ownership
from notewarden.notes.ownership import (
    OwnerMarker,
    WorkspaceOwnedElsewhere,
    claim_owner,
    inspect_trash,
    read_owner,
    sharing_refusal,
    take_over,
)
from notewarden.notes.trash_journal import (
    append_line,
    committed_line,
    intent_line,
    parse_journal,
    read_journal,
)
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.note_paths import TRASH_DIR_NAME, TRASH_OWNER_NAME

pytestmark = pytest.mark.resolves_files


@pytest.fixture
def root(tmp_path: Path) -> Iterator[WorkspaceRoot]:
    (tmp_path / "notes").mkdir()
    with WorkspaceRoot.open(str(tmp_path / "notes")) as opened:
        yield opened


def sqlite_ledger(path: Path, ledger_id: str) -> LedgerIdentity:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return LedgerIdentity(ledger_id, "sqlite", str(path))


def test_the_first_ledger_to_mark_a_folder_owns_it(root: WorkspaceRoot, tmp_path: Path) -> None:
    ledgers = [sqlite_ledger(tmp_path / f"s{i}" / "notewarden.sqlite3", f"{i:032x}") for i in range(8)]
    barrier, owners = threading.Barrier(8), []

    def claim(identity: LedgerIdentity) -> None:
        barrier.wait()
        owners.append(claim_owner(root, identity))

    threads = [threading.Thread(target=claim, args=(identity,)) for identity in ledgers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({o.ledger_id for o in owners}) == 1, "every claimant reads the one winner"
    winner = owners[0]
    assert read_owner(root) == winner and winner.host == socket.gethostname()
    assert claim_owner(root, ledgers[0]) == winner, "a marked folder keeps its owner"


def test_the_rule_for_a_second_ledger(tmp_path: Path) -> None:
    on_this_host = OwnerMarker.of(sqlite_ledger(tmp_path / "theirs" / "notewarden.sqlite3", "a" * 32))
    assert sharing_refusal(on_this_host) is None, "a SQLite file on this host: share it"
    postgres = OwnerMarker.of(LedgerIdentity("c" * 32, "postgres", "nw@db:5432/notes"))
    assert "PostgreSQL" in (sharing_refusal(postgres) or "")
    elsewhere = OwnerMarker("a" * 32, "sqlite", on_this_host.location, "another-host", on_this_host.since)
    assert "host another-host" in (sharing_refusal(elsewhere) or "")
    (tmp_path / "theirs" / "notewarden.sqlite3").unlink()
    assert "no longer exists" in (sharing_refusal(on_this_host) or "")


def test_a_marker_says_whose_it_is_and_a_takeover_names_the_previous_owner(
    root: WorkspaceRoot, tmp_path: Path
) -> None:
    old = sqlite_ledger(tmp_path / "old" / "notewarden.sqlite3", "a" * 32)
    new = LedgerIdentity("d" * 32, "postgres", "nw@db:5432/notes")
    first = claim_owner(root, old)
    assert take_over(root, new) == first
    marker = read_owner(root)
    assert marker is not None and (marker.ledger_id, marker.previous, marker.kind) == (
        "d" * 32,
        "a" * 32,
        "postgres",
    )
    assert OwnerMarker.decode(marker.encode()) == marker
    assert marker.describe() == f"the PostgreSQL ledger nw@db:5432/notes on host {socket.gethostname()}"
    (tmp_path / "notes" / TRASH_DIR_NAME / TRASH_OWNER_NAME).write_text('{"v": 1, "ledger": ""}')
    with pytest.raises(ValueError):
        read_owner(root)


def test_a_marker_read_through_a_held_trash_is_kept_until_it_changes(
    root: WorkspaceRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamp cache of `read_owner` (one fstatat per delete) still sees every change of the marker:
    a takeover, and an edit in place that keeps the size and puts the mtime back."""
    monkeypatch.setattr(ownership, "_STAMP_SETTLED_NS", -(10**18))  # a marker just written counts as settled
    monkeypatch.setattr(ownership, "_by_stamp", {})
    first = sqlite_ledger(tmp_path / "a" / "notewarden.sqlite3", "a" * 32)
    claim_owner(root, first)
    path = tmp_path / "notes" / TRASH_DIR_NAME / TRASH_OWNER_NAME
    with root.held_trash() as held:
        assert read_owner(root, held) == read_owner(root)
        assert len(ownership._by_stamp) == 1  # kept: the next read is one fstatat
        assert read_owner(root, held) == read_owner(root)

        take_over(root, sqlite_ledger(tmp_path / "b" / "notewarden.sqlite3", "b" * 32))
        marker = read_owner(root, held)
        assert marker is not None and (marker.ledger_id, marker.previous) == ("b" * 32, "a" * 32)

        before = path.stat()
        edited = path.read_bytes().replace(b"b" * 32, b"c" * 32, 1)
        with path.open("r+b") as f:  # same inode, same size
            f.write(edited)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the mtime put back; the ctime moved
        marker = read_owner(root, held)
        assert marker is not None and marker.ledger_id == "c" * 32
        path.unlink()
        assert read_owner(root, held) is None


def test_the_refusal_says_whose_the_trash_is_and_how_to_fix_it(tmp_path: Path) -> None:
    ours = sqlite_ledger(tmp_path / "ours" / "notewarden.sqlite3", "b" * 32)
    owner = OwnerMarker.of(sqlite_ledger(tmp_path / "theirs" / "notewarden.sqlite3", "a" * 32))
    refusal = WorkspaceOwnedElsewhere(f"file://{tmp_path}/notes", owner, ours, "its file is gone")
    message = str(refusal)
    assert message.startswith("nothing was changed: the trash of file://")
    assert f"--state-dir {tmp_path / 'theirs'}" in message, "serve with the owner's state dir"
    assert f"notewarden takeover {tmp_path}/notes --state-dir {tmp_path / 'ours'}" in message


def test_the_journal_tells_committed_from_unresolved_and_mine_from_foreign(
    root: WorkspaceRoot, tmp_path: Path
) -> None:
    mine = sqlite_ledger(tmp_path / "mine" / "notewarden.sqlite3", "a" * 32)
    claim_owner(root, mine)
    for name in ("t-mine", "t-theirs-done", "t-theirs-open", "t-gone"):
        (tmp_path / "notes" / TRASH_DIR_NAME / name).write_text("x")
    (tmp_path / "notes" / TRASH_DIR_NAME / "t-gone").unlink()
    for line in (
        intent_line("t-mine", "a.md", "file:///w", "a" * 32),
        intent_line("t-theirs-done", "b.md", "file:///w", "f" * 32),
        committed_line("t-theirs-done", "f" * 32),
        intent_line("t-theirs-open", "c.md", "file:///w", "f" * 32),
        intent_line("t-gone", "d.md", "file:///w", "f" * 32),
        b"not json\n",
    ):
        append_line(root, line)
    lines, unreadable = parse_journal(read_journal(root, 1 << 20))
    assert unreadable == 1 and [line.committed for line in lines] == [False, False, True, False, False]

    report = inspect_trash(root, "file:///w", "a" * 32)
    assert report.owned and report.unreadable_lines == 1
    assert [(r.trash_id, r.committed) for r in report.pending] == [("t-mine", False)]
    assert [(r.trash_id, r.note_id, r.committed) for r in report.foreign] == [
        ("t-theirs-done", "b.md", True),
        ("t-theirs-open", "c.md", False),
    ], "an entry no longer in the trash is not reported"
    text = "\n".join(report.lines())
    assert "owned by this ledger" in text and "t-theirs-open (from c.md)" in text and "unresolved" in text
