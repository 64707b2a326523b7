"""`notewarden import` and `notewarden export`: a markdown folder into a SQL store, and back.

    notewarden import FOLDER --config TEAM.toml --workspace URI [--state-dir DIR]
    notewarden export FOLDER --config TEAM.toml --workspace URI [--state-dir DIR]

Rule 1 (what is carried): the notes, exactly the files the files store lists (`fsroot.list_notes`:
`.md`/`.markdown`, no dot names, no symlinks), and the trash: each entry of the folder's
`.notewarden-trash/` with the row the files store keeps for it in the ledger that owns the
folder (the SQLite ledger its owner marker names, `notes.ownership`; `--state-dir` names another;
default: where `notewarden serve --workspace FOLDER` keeps it); and the version history: each
saved version in `.notewarden-history/` with its `note_history` row from the same ledger, into the
SQL store's `note_history` rows (the bytes in `body`), and back. Export writes the rows into
`--state-dir`'s ledger and marks the new folder as that ledger's. Anything else in the folder
(attachments, dot files) is counted and left out (the trash and the history are not counted: they
are carried). A history row whose saved file is gone (purged by hand) cannot be carried and is
counted apart. A saved version's file gets its `saved_at` as its modification time on export.

Rule 2 (byte-identical): a note is kept as its exact bytes (it must be UTF-8 without NUL, which
a database text column requires; anything else stops the import and names the file), with its
modification time in nanoseconds; export writes back the same bytes and times, so folder ->
import -> export gives the same files (tests/storage/test_transfer.py).

Rule 3 (all-or-nothing): import checks every note before writing, then writes everything in one
transaction: an error leaves the database as it was. A note already in the workspace with the
same bytes is skipped, so running a finished import again changes nothing; with other bytes,
the import stops before writing and names every such note. Export builds the folder under a
temporary name next to the destination, renames it into place, then commits the trash rows in
one transaction (removing the folder again if that fails); the destination must not exist.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from notewarden.config import Config, ConfigError, default_state_dir
from notewarden.ledger import LedgerTxn
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.history import HISTORY_COLUMNS
from notewarden.notes.ownership import read_owner, take_over
from notewarden.scope.fs_errors import FsError, NoteMissing, PathRejected
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.note_paths import HISTORY_DIR_NAME, TRASH_DIR_NAME, split_relative
from notewarden.scope.uri import FileUri, UriError, parse_file_uri
from notewarden.storage import NOTE_STORES, open_ledger, open_row_store, refuse_files_store

__all__ = ["TransferError", "export_folder", "import_folder", "run_transfer"]

NOTE_MAX_BYTES = 64 * 1024 * 1024
_BATCH = 500


class TransferError(Exception):
    """Nothing was written; the message says what stopped it and how to fix it."""


@dataclass(frozen=True, slots=True)
class TrashEntry:
    trash_id: str
    note_id: str
    title: str
    text: str
    modified_ns: int
    principal: str
    confirmation_id: str
    deleted_at: float


@dataclass(frozen=True, slots=True)
class SavedVersion:
    """A `note_history` row (`HISTORY_COLUMNS` order) and the saved bytes, as text."""

    row: tuple[Any, ...]
    text: str

    @property
    def version_id(self) -> str:
        return str(self.row[0])


@dataclass(frozen=True, slots=True)
class Report:
    notes: int
    skipped_same: int
    trash: int
    left_out: int
    history: int = 0
    history_missing: int = 0

    def lines(self, verb: str) -> list[str]:
        out = [f"{verb} {self.notes} notes, {self.trash} trash entries and {self.history} saved versions"]
        if self.skipped_same:
            out.append(f"{self.skipped_same} notes were already there with the same bytes (left as they are)")
        if self.left_out:
            out.append(f"{self.left_out} files are not notes and were left out")
        if self.history_missing:
            out.append(f"{self.history_missing} saved versions have no file any more and were left out")
        return out


def _text(path: str, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TransferError(
            f"{path} is not UTF-8 text (byte {exc.start}); a database keeps notes as text"
        ) from None
    if "\x00" in text:
        raise TransferError(f"{path} contains a NUL character, which a database text column cannot hold")
    return text


def _sql_workspace(config: Config, uri: str) -> str:
    refuse_files_store(config)
    try:
        workspace = parse_file_uri(uri)
    except UriError as exc:
        raise ConfigError(f"--workspace: {exc}") from None
    if workspace not in config.workspaces:
        listed = ", ".join(map(str, config.workspaces)) or "none"
        raise ConfigError(
            f"--workspace {workspace} is not a [[workspace]] of the config; configured: {listed}"
        )
    return str(workspace)


_SOURCE_QUERIES = {
    "trash": "SELECT trash_id, note_id, title, principal, confirmation_id, deleted_at FROM trash WHERE workspace = ?",
    "note_history": f"SELECT {HISTORY_COLUMNS} FROM note_history WHERE workspace = ? ORDER BY version_id",
}


def _source_rows(
    root: WorkspaceRoot, state_dir: Path | None, workspace: str, table: str
) -> list[tuple[Any, ...]]:
    """The files store's rows of a folder (`trash` or `note_history`), read without changing
    anything: from the SQLite ledger its owner marker names (`notes.ownership`), else from
    `state_dir`'s."""
    path = None if state_dir is None else state_dir / "notewarden.sqlite3"
    if path is None:
        try:
            owner = read_owner(root)
        except ValueError:
            owner = None
        path = Path(owner.location) if owner is not None and owner.kind == "sqlite" else None
        path = path or default_state_dir() / "notewarden.sqlite3"
    if not path.exists():
        return []
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
        if not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone():
            return []
        return conn.execute(_SOURCE_QUERIES[table], (workspace,)).fetchall()


def _bar(total: int | None, what: str) -> tqdm:  # type: ignore[type-arg]
    return tqdm(total=total, desc=what, unit=" notes", file=sys.stderr, disable=None, leave=False)


# --- import ---------------------------------------------------------------------------------------


def _read_folder(root: WorkspaceRoot) -> tuple[list[tuple[str, str, int]], int]:
    """Every note as (path, text, modified_ns), checked (Rule 2); and how many entries are not notes."""
    entries = root.list_notes(max_entries=10_000_000)
    notes, problems = [], []
    with _bar(len(entries), "reading") as bar:
        for entry in entries:
            try:
                data, identity = root.read_note(entry.path, max_bytes=NOTE_MAX_BYTES)
                notes.append((entry.path, _text(entry.path, data), identity.mtime_ns))
            except (TransferError, FsError) as exc:
                problems.append(str(exc))
            bar.update()
    if problems:
        raise TransferError("nothing was imported:\n  " + "\n  ".join(problems[:50]))
    return notes, sum(1 for _ in _all_files(root)) - len(notes)


def _all_files(root: WorkspaceRoot) -> Iterator[str]:
    """Every regular file under the folder but the trash and the history, hidden or not (to count what
    is left out)."""
    stack: list[tuple[str, ...]] = [()]
    while stack:
        listing = root.list_dir(stack.pop(), suffixes=("",), skip_hidden=False)
        stack += [
            split_relative(d) for d, _ in listing.subdirs if d not in (TRASH_DIR_NAME, HISTORY_DIR_NAME)
        ]
        yield from (n.path for n in listing.notes)


def _read_trash(root: WorkspaceRoot, source: str, state_dir: Path | None) -> list[TrashEntry]:
    entries = []
    for trash_id, note_id, title, principal, confirmation_id, deleted_at in _source_rows(
        root, state_dir, source, "trash"
    ):
        identity = root.trash_entry(trash_id)
        if identity is None:
            continue  # purged, or never committed: not in this folder's trash
        text = _text(f"{TRASH_DIR_NAME}/{trash_id}", root.read_trash_file(trash_id, NOTE_MAX_BYTES))
        entries.append(
            TrashEntry(
                trash_id,
                note_id,
                title,
                text,
                identity.mtime_ns,
                principal,
                confirmation_id or "",
                deleted_at,
            )
        )
    return entries


def _read_history(root: WorkspaceRoot, source: str, state_dir: Path | None) -> tuple[list[SavedVersion], int]:
    """The folder's saved versions with their rows, and how many rows have no file any more."""
    versions, missing = [], 0
    for row in _source_rows(root, state_dir, source, "note_history"):
        try:
            data = root.read_history(str(row[0]), NOTE_MAX_BYTES)
        except NoteMissing:
            missing += 1
            continue
        versions.append(SavedVersion(tuple(row), _text(f"{HISTORY_DIR_NAME}/{row[0]}", data)))
    return versions, missing


def import_folder(config: Config, workspace_uri: str, folder: Path, *, state_dir: Path | None) -> Report:
    workspace = _sql_workspace(config, workspace_uri)
    try:
        root = WorkspaceRoot.open(str(folder.resolve()))
    except FsError as exc:
        raise TransferError(f"cannot open {folder}: {exc}") from None
    with root:
        notes, left_out = _read_folder(root)
        source = str(FileUri.from_path(str(folder.resolve())))
        trash = _read_trash(root, source, state_dir)
        history, missing = _read_history(root, source, state_dir)
    ledger = open_ledger(config)
    try:
        store = open_row_store(config, ledger)
        with ledger.critical_section() as txn:
            added, same, conflicts = 0, 0, []
            with _bar(len(notes), "importing") as bar:
                for start in range(0, len(notes), _BATCH):
                    batch = notes[start : start + _BATCH]
                    for (path, text, _), inserted in zip(
                        batch, store.add_rows(txn, workspace, batch), strict=True
                    ):
                        if inserted:
                            added += 1
                        elif store.row_body(txn, workspace, path) == text:
                            same += 1
                        else:
                            conflicts.append(path)
                    bar.update(len(batch))
            if conflicts:
                raise TransferError(
                    f"nothing was imported: {len(conflicts)} notes already exist in {workspace} with other "
                    "content (move or delete them first):\n  " + "\n  ".join(conflicts[:50])
                )
            for entry in trash:
                _insert_trash(txn, workspace, entry)
            for version in history:
                txn.execute(
                    f"INSERT INTO note_history (workspace, body, {HISTORY_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (version_id) DO NOTHING",
                    (workspace, version.text, *version.row),
                )
        if added:
            store.settle_after_bulk_write(workspace)
    finally:
        ledger.close()
    return Report(added, same, len(trash), left_out, len(history), missing)


def _insert_trash(txn: LedgerTxn, workspace: str, entry: TrashEntry) -> None:
    txn.execute(
        "INSERT INTO notes_trash (trash_id, workspace, path, title, body, note_row, version, modified_ns, "
        "principal, confirmation_id, deleted_at) VALUES (?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?) "
        "ON CONFLICT (trash_id) DO NOTHING",
        (
            entry.trash_id,
            workspace,
            entry.note_id,
            entry.title,
            entry.text,
            entry.modified_ns,
            entry.principal,
            entry.confirmation_id,
            entry.deleted_at,
        ),
    )


# --- export ---------------------------------------------------------------------------------------


def _write(path: Path, text: str, modified_ns: int, mode: int = 0o644) -> os.stat_result:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        data = text.encode()
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.utime(fd, ns=(modified_ns, modified_ns))
        return os.fstat(fd)
    finally:
        os.close(fd)


def export_folder(config: Config, workspace_uri: str, folder: Path, *, state_dir: Path | None) -> Report:
    workspace = _sql_workspace(config, workspace_uri)
    folder = folder.absolute()
    if folder.exists() or folder.is_symlink():
        raise TransferError(
            f"{folder} already exists; export writes a new folder (name one that does not exist)"
        )
    partial = folder.with_name(f".{folder.name}.partial-{secrets.token_hex(4)}")
    ledger = open_ledger(config)
    try:
        partial.mkdir(parents=True, mode=0o755)
        store = open_row_store(config, ledger)
        notes, left_out = 0, 0
        with _bar(None, "exporting") as bar:  # no total: counting the notes would read them all once more
            for path, text, modified_ns in store.all_rows(workspace):
                try:
                    split_relative(path)
                except PathRejected:
                    left_out += 1
                    continue
                _write(partial / path, text, modified_ns)
                notes += 1
                bar.update()
        trash = store.trash_rows(workspace)
        if trash:
            (partial / TRASH_DIR_NAME).mkdir(mode=0o700)
        written = [
            (entry, _write(partial / TRASH_DIR_NAME / entry.trash_id, entry.text, entry.modified_ns, 0o600))
            for entry in (TrashEntry(*row) for row in trash)
        ]
        history = [SavedVersion(row, text) for row, text in store.history_rows(workspace)]
        if history:
            (partial / HISTORY_DIR_NAME).mkdir(mode=0o700)
        for version in history:
            saved_ns = int(float(version.row[3]) * 1e9)  # saved_at
            _write(partial / HISTORY_DIR_NAME / version.version_id, version.text, saved_ns, 0o600)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        ledger.close()
        raise
    ledger.close()
    partial.rename(folder)
    state_dir = state_dir or default_state_dir()
    try:
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = SqliteLedger(state_dir / "notewarden.sqlite3", components=list(NOTE_STORES["files"].schemas))
        try:
            with WorkspaceRoot.open(str(folder)) as root:  # the folder's trash belongs to that ledger
                take_over(root, target.identity)
            with target.critical_section() as txn:
                uri = str(FileUri.from_path(str(folder)))
                for entry, st in written:
                    txn.execute(
                        "INSERT INTO trash (trash_id, workspace, note_id, title, principal, confirmation_id, "
                        "deleted_at, dev, ino, size, mtime_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            entry.trash_id,
                            uri,
                            entry.note_id,
                            entry.title,
                            entry.principal,
                            entry.confirmation_id or None,
                            entry.deleted_at,
                            st.st_dev,
                            st.st_ino,
                            st.st_size,
                            st.st_mtime_ns,
                        ),
                    )
                for version in history:
                    txn.execute(
                        f"INSERT INTO note_history (workspace, body, {HISTORY_COLUMNS}) "
                        "VALUES (?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (uri, *version.row),
                    )
        finally:
            target.close()
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return Report(notes, 0, len(written), left_out, len(history))


# --- the command ----------------------------------------------------------------------------------


def run_transfer(action: str, config: Config, workspace_uri: str, folder: str, state_dir: str | None) -> int:
    """`import` or `export`; exit 0 done, 1 stopped (nothing written)."""
    run = import_folder if action == "import" else export_folder
    try:
        report = run(config, workspace_uri, Path(folder), state_dir=Path(state_dir) if state_dir else None)
    except TransferError as exc:
        print(f"notewarden {action}: {exc}", file=sys.stderr)
        return 1
    for line in report.lines("imported" if action == "import" else "exported"):
        print(line)
    return 0
