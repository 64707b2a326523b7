"""fsroot's history directory: versions saved as hard links (or copies), reached only through the handle,
never through a symlink, with both resolvers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from notewarden.scope.fs_errors import EscapeBlocked, FsError, IdentityMismatch, NoteMissing, PathRejected
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.note_paths import HISTORY_DIR_NAME, split_relative


@pytest.fixture(params=[False, True], ids=["openat2", "walk"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[WorkspaceRoot]:
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "note.md").write_bytes(b"version one\n")
    with WorkspaceRoot.open(str(tmp_path), force_fallback=request.param) as opened:
        yield opened


def test_a_version_is_the_replaced_inode_itself(root: WorkspaceRoot, tmp_path: Path) -> None:
    data, identity = root.read_note("dir/note.md")
    root.keep_version("dir/note.md", "v1", identity, data, sync=True)
    saved = tmp_path / HISTORY_DIR_NAME / "v1"
    assert saved.stat().st_ino == identity.ino, "hard-linked, not copied"
    root.replace_note("dir/note.md", b"version two\n", expected=identity)
    assert saved.stat().st_nlink == 1 and root.read_history("v1", 1024) == b"version one\n"
    assert (tmp_path / "dir" / "note.md").read_bytes() == b"version two\n"
    assert oct((tmp_path / HISTORY_DIR_NAME).stat().st_mode & 0o777) == "0o700"
    root.purge_history_entry("v1")
    with pytest.raises(NoteMissing):
        root.read_history("v1", 1024)


def test_a_hard_linked_note_is_copied(root: WorkspaceRoot, tmp_path: Path) -> None:
    os.link(tmp_path / "dir" / "note.md", tmp_path / "elsewhere")
    data, identity = root.read_note("dir/note.md")
    root.keep_version("dir/note.md", "v1", identity, data, sync=False)
    assert (tmp_path / HISTORY_DIR_NAME / "v1").stat().st_ino != identity.ino
    (tmp_path / "elsewhere").write_bytes(b"changed through the other name\n")
    assert root.read_history("v1", 1024) == b"version one\n"


def test_a_note_changed_since_it_was_read_is_not_saved(root: WorkspaceRoot, tmp_path: Path) -> None:
    data, identity = root.read_note("dir/note.md")
    (tmp_path / "dir" / "note.md").write_bytes(b"an editor's longer version\n")
    with pytest.raises(IdentityMismatch):
        root.keep_version("dir/note.md", "v1", identity, data, sync=False)
    assert not (tmp_path / HISTORY_DIR_NAME).exists() or not any((tmp_path / HISTORY_DIR_NAME).iterdir())


def test_the_history_directory_is_reserved_and_never_followed(root: WorkspaceRoot, tmp_path: Path) -> None:
    with pytest.raises(PathRejected):
        split_relative(f"{HISTORY_DIR_NAME}/v1")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (tmp_path / HISTORY_DIR_NAME).symlink_to(outside)
    data, identity = root.read_note("dir/note.md")
    with pytest.raises((EscapeBlocked, FsError)):
        root.keep_version("dir/note.md", "v1", identity, data, sync=False)
    assert list(outside.iterdir()) == []
    with pytest.raises(PathRejected):
        root.read_history("../escape", 10)
