"""`notewarden import` and `export` as a user runs them: folder -> SQL store -> folder, byte for byte.

The source folder is a files-store workspace with notes of every awkward kind (CRLF, a BOM,
trailing spaces, non-ASCII names, front matter, nested folders) and a trash filled by real
confirmed-delete moves, whose rows live in the folder's state directory. After import and
export into a new folder, every note and every trash entry has the same bytes and the same
modification time, and the files store of the new folder lists the same trash; every saved
version of the history (of live and trashed notes) comes back with the same bytes and rows.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from notewarden.config import load_config
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.files import FilesNoteStore
from notewarden.notes.history import HISTORY_COLUMNS, Change
from notewarden.notes.ownership import read_owner
from notewarden.notes.store import replace_with
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import HISTORY_DIR_NAME, TRASH_DIR_NAME, TRASH_JOURNAL_NAME, TRASH_OWNER_NAME
from notewarden.scope.uri import FileUri
from notewarden.storage import NOTE_STORES, upgrade_schema
from tests.pg import PgDatabase, database_url
from tests.store_changes import deleting

NOTES = {
    "plain.md": b"# Plain\n\nA note.\n",
    "dir/sub/crlf.markdown": b"\xef\xbb\xbf# Windows note\r\n\r\nline with trailing spaces   \r\n",
    "caf\xc3\xa9/\xc3\xbcber.md".encode().decode(): "# Über\n\nnon-ASCII name and body: é ß 漢字\n".encode(),
    "front.md": b"---\ntitle: Front title\naliases: [F]\ntags: [a, b]\n---\nbody without newline at end",
    "to-trash/one.md": b"# Trashed one\n\nfirst\n",
    "to-trash/two.md": b"# Trashed two\n\nsecond\n",
}
EDIT = Change("alice", "notes_edit", "append")
LEFT_OUT = {"attachments/image.png": b"\x89PNG\r\n\x1a\n\x00", ".hidden.md": b"# hidden\n"}


def notewarden(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "notewarden", *args], capture_output=True, text=True, timeout=120
    )


def personal_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A folder as `serve --workspace` leaves it (two notes deleted through the files store), and
    its state directory."""
    folder, state = tmp_path / "personal", tmp_path / "personal-state"
    for i, (name, data) in enumerate({**NOTES, **LEFT_OUT}.items()):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, ns=(1_700_000_000_123_456_789 + i, 1_700_000_000_123_456_789 + i))
    state.mkdir(mode=0o700)
    ledger = SqliteLedger(state / "notewarden.sqlite3", components=list(NOTE_STORES["files"].schemas))
    store = FilesNoteStore(ledger=ledger)
    root = WorkspaceRoot.open(str(folder))
    scope = WorkspaceScope("alice", FileUri.from_path(str(folder)), (), root)
    try:
        for note_id in ("plain.md", "plain.md", "to-trash/one.md", "dir/sub/crlf.markdown"):  # history
            current = store.read_note(scope, note_id)
            edited = current.data + b"\nedited\n"
            store.rewrite_note(scope, note_id, replace_with(edited, current.version), change=EDIT)
            os.utime(
                folder / note_id, ns=(current.note.identity.modified_ns, current.note.identity.modified_ns)
            )
            store.rewrite_note(scope, note_id, replace_with(current.data, None), change=EDIT)  # back
            os.utime(
                folder / note_id, ns=(current.note.identity.modified_ns, current.note.identity.modified_ns)
            )
        for note in store.notes_by_id(scope, ["to-trash/one.md", "to-trash/two.md"]):
            with ledger.critical_section() as txn:
                store.move_to_trash(txn, scope, [note], change=deleting("alice", secrets.token_hex(8)))
    finally:
        store.close()
        root.close()
        ledger.close()
    return folder, state


def team_config(tmp_path: Path, backend: str, pg: PgDatabase) -> tuple[Path, str]:
    workspace = f"file:///team/{secrets.token_hex(4)}/notes"
    config = tmp_path / f"team-{backend}.toml"
    storage = f'notes = "{backend}"\n'
    if backend == "postgres":
        storage += f'database_url = "{database_url(pg.name)}"\n'
    config.write_text(
        f'state_dir = "{tmp_path / ("team-state-" + backend)}"\n'
        f'[[workspace]]\nuri = "{workspace}"\n'
        f'[[principal]]\nid = "alice"\nworkspaces = ["{workspace}"]\n[storage]\n{storage}'
    )
    upgrade_schema(load_config(config))
    return config, workspace


def files_of(folder: Path) -> dict[str, tuple[bytes, int | None]]:
    """Every file under `folder` (the trash's journal and owner marker, which name a ledger, left
    out), with bytes and mtime (a saved version's bytes only: its mtime is its note's, not carried)."""
    return {
        str(p.relative_to(folder)): (
            p.read_bytes(),
            None if p.parent.name == HISTORY_DIR_NAME else p.stat().st_mtime_ns,
        )
        for p in folder.rglob("*")
        if p.is_file() and p.name not in (TRASH_JOURNAL_NAME, TRASH_OWNER_NAME)
    }


def history_rows(folder: Path, state: Path) -> list[tuple[object, ...]]:
    """The folder's `note_history` rows in its ledger, without the workspace."""
    with closing(sqlite3.connect(state / "notewarden.sqlite3")) as conn:
        return conn.execute(
            f"SELECT {HISTORY_COLUMNS}, body FROM note_history WHERE workspace = ? ORDER BY version_id",
            (str(FileUri.from_path(str(folder))),),
        ).fetchall()


def trash_listing(folder: Path, state: Path) -> list[tuple[str, str, str]]:
    ledger = SqliteLedger(state / "notewarden.sqlite3", components=list(NOTE_STORES["files"].schemas))
    store = FilesNoteStore(ledger=ledger)
    root = WorkspaceRoot.open(str(folder))
    try:
        with ledger.critical_section() as txn:
            scope = WorkspaceScope("alice", FileUri.from_path(str(folder)), (), root)
            return sorted((t.trash_id, t.note_id, t.title) for t in store.list_trash(txn, scope))
    finally:
        store.close()
        root.close()
        ledger.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_folder_to_database_and_back_is_byte_identical(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    folder, state = personal_folder(tmp_path)
    config, workspace = team_config(tmp_path, backend, pg)
    source_trash = trash_listing(folder, state)
    assert len(source_trash) == 2

    imported = notewarden("import", str(folder), "--config", str(config), "--workspace", workspace,
                          "--state-dir", str(state))  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    source_history = history_rows(folder, state)
    assert len(source_history) == 8 and sum(r[2] is not None for r in source_history) == 2, (
        "one trashed note's"
    )
    assert "imported 4 notes, 2 trash entries and 8 saved versions" in imported.stdout
    assert "2 files are not notes" in imported.stdout
    again = notewarden("import", str(folder), "--config", str(config), "--workspace", workspace,
                       "--state-dir", str(state))  # fmt: skip
    assert again.returncode == 0 and "4 notes were already there with the same bytes" in again.stdout

    back, back_state = tmp_path / "exported", tmp_path / "exported-state"
    exported = notewarden("export", str(back), "--config", str(config), "--workspace", workspace,
                          "--state-dir", str(back_state))  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert "exported 4 notes, 2 trash entries and 8 saved versions" in exported.stdout

    expected = {name: entry for name, entry in files_of(folder).items() if name not in LEFT_OUT}
    assert files_of(back) == expected, "every note, trash entry and saved version: same bytes, same mtime"
    assert sum(p.startswith(HISTORY_DIR_NAME) for p in expected) == 8
    assert history_rows(back, back_state) == source_history, "the same history rows, for the new folder"
    assert sorted(p for p in expected if p.startswith(TRASH_DIR_NAME)) == sorted(
        f"{TRASH_DIR_NAME}/{t[0]}" for t in source_trash
    )
    assert trash_listing(back, back_state) == source_trash, "the files store sees the same trash"
    with WorkspaceRoot.open(str(back)) as root:
        owner = read_owner(root)
    assert owner is not None and owner.location == str(back_state / "notewarden.sqlite3"), owner

    found_by_marker = notewarden("import", str(folder), "--config", str(config), "--workspace", workspace)
    assert found_by_marker.returncode == 0, "without --state-dir: the ledger the folder's owner marker names"
    assert "imported 0 notes, 2 trash entries and 8 saved versions" in found_by_marker.stdout
    assert "4 notes were already there" in found_by_marker.stdout

    refused = notewarden("export", str(back), "--config", str(config), "--workspace", workspace,
                         "--state-dir", str(back_state))  # fmt: skip
    assert refused.returncode == 1 and "already exists" in refused.stderr


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_import_is_all_or_nothing(tmp_path: Path, pg: PgDatabase, backend: str) -> None:
    folder, state = personal_folder(tmp_path)
    config, workspace = team_config(tmp_path, backend, pg)
    (folder / "latin1.md").write_bytes(b"# caf\xe9\n")
    refused = notewarden("import", str(folder), "--config", str(config), "--workspace", workspace,
                         "--state-dir", str(state))  # fmt: skip
    assert refused.returncode == 1
    assert "nothing was imported" in refused.stderr and "latin1.md is not UTF-8" in refused.stderr
    (folder / "latin1.md").unlink()

    assert notewarden("import", str(folder), "--config", str(config), "--workspace", workspace,
                      "--state-dir", str(state)).returncode == 0  # fmt: skip
    (folder / "plain.md").write_bytes(b"# Plain, edited since\n")
    (folder / "new.md").write_bytes(b"# New\n")
    conflict = notewarden("import", str(folder), "--config", str(config), "--workspace", workspace,
                          "--state-dir", str(state))  # fmt: skip
    assert (
        conflict.returncode == 1
        and "1 notes already exist" in conflict.stderr
        and "plain.md" in conflict.stderr
    )
    back = tmp_path / "exported"
    assert notewarden("export", str(back), "--config", str(config), "--workspace", workspace).returncode == 0
    assert not (back / "new.md").exists(), "the refused import wrote nothing"
    assert (back / "plain.md").read_bytes() == NOTES["plain.md"]
