"""Tests for notewarden.scope.fsroot. Every workspace test runs with both resolvers: openat2 and the walk."""

from __future__ import annotations

import ctypes
import errno
import gc
import os
import pickle
import platform
import socket
import stat
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from notewarden.notes.trash_journal import append_line, read_journal, reset_journal
from notewarden.scope import fs_syscalls, fsroot, note_paths
from notewarden.scope.fs_errors import (
    EscapeBlocked,
    FsError,
    IdentityMismatch,
    NotARegularFile,
    NoteExists,
    NoteMissing,
    PathRejected,
)
from notewarden.scope.fsroot import FileIdentity, NoteEntry, WorkspaceRoot
from notewarden.scope.note_paths import TRASH_DIR_NAME, split_relative

try:
    from . import fsroot_cases as cases
except ImportError:
    import fsroot_cases as cases  # type: ignore[no-redef]

Opener = Callable[[Path], WorkspaceRoot]


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def opener(resolver: str) -> Iterator[Opener]:
    roots: list[WorkspaceRoot] = []

    def open_root(path: Path) -> WorkspaceRoot:
        root = WorkspaceRoot.open(str(path), force_fallback=resolver == "walk")
        assert root.resolver == resolver
        roots.append(root)
        return root

    yield open_root
    for root in roots:
        root.close()


def expect_error(cls: type[FsError], fn: Callable[[], object], base: Path, given: str = "") -> FsError:
    """Exactly ``cls`` (not a sibling subclass). Apart from an echo of the caller's own ``given`` path,
    the message must not contain the lab's absolute path."""
    with pytest.raises(FsError) as info:
        fn()
    assert type(info.value) is cls, f"expected {cls.__name__}, got {type(info.value).__name__}: {info.value}"
    message = str(info.value).replace(given, "<given>") if given else str(info.value)
    assert str(base) not in message
    return info.value


def make_ws(tmp_path: Path, files: dict[str, bytes] | None = None) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for rel, data in (files or {}).items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(data)
    return ws


def ident_of(path: Path) -> FileIdentity:
    return FileIdentity.of(os.stat(path))


# split_relative and trash names


VALID_PATHS = {
    "a.md": ("a.md",),
    "dir/sub/n.md": ("dir", "sub", "n.md"),
    "ünï/ñ.md": ("ünï", "ñ.md"),
    "with space.md": ("with space.md",),
    ".hidden.md": (".hidden.md",),
    "a" * 255: ("a" * 255,),
    "...": ("...",),
    "a..b": ("a..b",),
}

INVALID_PATHS = [
    "",
    ".",
    "..",
    "./a.md",
    "a/./b.md",
    "a/../b.md",
    "../a.md",
    "/etc/passwd",
    "//a.md",
    "a//b.md",
    "a/",
    "a.md/",
    "a\\b.md",
    "..\\secret",
    "a\x00.md",
    "a\n.md",
    "a\t.md",
    "a\x7f.md",
    "a" * 256,
    "é" * 128,
    "/".join(["abcdefgh"] * 456),
    "caf\udce9.md",
    TRASH_DIR_NAME,
    f"{TRASH_DIR_NAME}/x.md",
    "dir/.nw-tmp-0123",
]


@pytest.mark.parametrize(("path", "parts"), VALID_PATHS.items(), ids=lambda v: repr(v)[:30])
def test_split_relative_accepts(path: str, parts: tuple[str, ...]) -> None:
    assert split_relative(path) == parts


@pytest.mark.parametrize("path", INVALID_PATHS, ids=lambda v: repr(v)[:30])
def test_split_relative_rejects(path: str) -> None:
    with pytest.raises(PathRejected):
        split_relative(path)


def test_split_relative_length_limits() -> None:
    limit = "/".join(["a" * 199] * 20) + "/" + "b" * 95
    assert len(limit.encode()) == 4095
    assert len(split_relative(limit)) == 21
    with pytest.raises(PathRejected):
        split_relative(limit + "b")
    with pytest.raises(PathRejected):
        split_relative(123)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "x" * 201, "ü", "a b", "a\x00", "a\\b"])
def test_bad_trash_names(name: str, tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"n.md": b"n"})
    root = opener(ws)
    expect_error(PathRejected, lambda: root.quarantine("n.md", name, ident_of(ws / "n.md")), tmp_path)
    expect_error(PathRejected, lambda: root.restore(name, "m.md"), tmp_path)
    expect_error(PathRejected, lambda: root.trash_entry(name), tmp_path)
    expect_error(PathRejected, lambda: root.purge_trash_entry(name), tmp_path)
    assert (ws / "n.md").read_bytes() == b"n"


# Go os.Root table (src/os/root_test.go rootTestCases)

PRESENT_OPS = ("read", "stat", "quarantine", "replace")
ABSENT_OPS = ("create", "create_parents", "restore")


@pytest.mark.parametrize("op", PRESENT_OPS + ABSENT_OPS)
@pytest.mark.parametrize("case", cases.ROOT_CASES, ids=lambda c: c.name)
def test_go_root_cases(case: cases.RootCase, op: str, tmp_path: Path, opener: Opener) -> None:
    root_dir, outside = tmp_path / "ROOT", tmp_path / "OUTSIDE"
    outside.mkdir()
    (outside / "secret.md").write_bytes(b"secret")
    cases.makefs(root_dir, list(case.fs), {"$ABS": str(root_dir), "$OUT": str(outside)})
    path = case.open.replace("$OUT", str(outside))
    target = Path(os.path.normpath(root_dir / case.target)) if case.target else None
    present = op in PRESENT_OPS
    if present and target is not None and target.parent.is_dir() and not target.exists():
        target.write_bytes(cases.TARGET_DATA)
    expected = case.present if present else (case.absent if op == "create" else case.with_parents)
    root = opener(root_dir)
    if op == "restore":
        seed = root.create_note("seed.md", b"seed")
        root.quarantine("seed.md", "seed", seed)

    if expected is EscapeBlocked and target is not None and not case.always_fails:
        # Companion: without the Root, plain path resolution really reaches the target.
        if present:
            assert (root_dir / path).read_bytes() == target.read_bytes()
        else:
            assert os.path.realpath(root_dir / path) == os.path.realpath(target)

    claimed = ident_of(target) if target is not None and target.exists() else FileIdentity(0, 0, 0, 0)
    run: dict[str, Callable[[], Any]] = {
        "read": lambda: root.read_note(path),
        "stat": lambda: root.stat_note(path),
        "quarantine": lambda: root.quarantine(path, "q", claimed),
        "replace": lambda: root.replace_note(path, b"replaced", expected=claimed),
        "create": lambda: root.create_note(path, b"created"),
        "create_parents": lambda: root.create_note(path, b"created", make_parents=True),
        "restore": lambda: root.restore("seed", path),
    }
    before = cases.snapshot(tmp_path)
    if expected is not None:
        expect_error(expected, run[op], tmp_path)
        assert cases.snapshot(tmp_path) == before
        assert (outside / "secret.md").read_bytes() == b"secret"
        return

    assert target is not None
    result = run[op]()
    if op == "read":
        assert result == (cases.TARGET_DATA, ident_of(target))
    elif op == "stat":
        assert result == NoteEntry(path, ident_of(target), 1)
    elif op == "quarantine":
        assert not target.exists()
        assert root.trash_entry("q") == result == claimed
    elif op == "replace":
        assert target.read_bytes() == b"replaced"
        assert result == ident_of(target)
    elif op in ("create", "create_parents"):
        assert target.read_bytes() == b"created"
        assert result == ident_of(target)
    else:
        assert target.read_bytes() == b"seed"
        assert root.trash_entry("seed") is None
    assert (outside / "secret.md").read_bytes() == b"secret"


# Kernel openat2 selftest layout (tools/testing/selftests/openat2/resolve_test.c)


@pytest.mark.parametrize("case", cases.SELFTEST_READ_CASES, ids=lambda c: c.path[:40])
def test_openat2_selftest_read(case: cases.SelftestCase, tmp_path: Path, opener: Opener) -> None:
    ws, _ = cases.build_selftest_lab(tmp_path, fake=False)
    root = opener(ws)
    if case.reaches is not None:
        reach = case.reaches if case.reaches.startswith("/") else str(ws / case.reaches)
        assert os.path.exists(ws / case.path)
        assert os.path.realpath(ws / case.path) == os.path.realpath(reach)
    if case.expect is None:
        data, ident = root.read_note(case.path)
        assert data == (ws / case.path).read_bytes()
        assert root.stat_note(case.path).identity == ident
        return
    expect_error(case.expect, lambda: root.read_note(case.path), tmp_path)
    expect_error(case.expect, lambda: root.stat_note(case.path), tmp_path)


def test_openat2_selftest_listing(tmp_path: Path, opener: Opener) -> None:
    ws, _ = cases.build_selftest_lab(tmp_path, fake=False)
    root = opener(ws)
    assert [n.path for n in root.list_notes(suffixes=("passwd", "exe", "status"))] == ["etc/passwd"]


@pytest.mark.parametrize("path", cases.SELFTEST_CREATE_PATHS)
def test_openat2_selftest_create(path: str, tmp_path: Path, opener: Opener) -> None:
    ws, fake = cases.build_selftest_lab(tmp_path, fake=True)
    path = path.replace("$FAKE", str(fake))
    root = opener(ws)
    before = cases.snapshot(tmp_path)
    expect_error(EscapeBlocked, lambda: root.create_note(path, b"pwned"), tmp_path, path)
    expect_error(EscapeBlocked, lambda: root.create_note(path, b"pwned", make_parents=True), tmp_path, path)
    assert cases.snapshot(tmp_path) == before
    seed = root.create_note("seed.md", b"seed")
    root.quarantine("seed.md", "seed", seed)
    before = cases.snapshot(tmp_path)
    expect_error(EscapeBlocked, lambda: root.restore("seed", path), tmp_path, path)
    assert cases.snapshot(tmp_path) == before


@pytest.mark.parametrize("path", cases.SELFTEST_MUTATE_PATHS)
def test_openat2_selftest_mutate(path: str, tmp_path: Path, opener: Opener) -> None:
    ws, fake = cases.build_selftest_lab(tmp_path, fake=True)
    path = path.replace("$FAKE", str(fake))
    landing = Path(os.path.realpath(ws / path))
    assert landing.is_file()
    claimed = ident_of(landing)
    root = opener(ws)
    before = cases.snapshot(tmp_path)
    expect_error(EscapeBlocked, lambda: root.quarantine(path, "q", claimed), tmp_path, path)
    expect_error(EscapeBlocked, lambda: root.replace_note(path, b"pwned", expected=claimed), tmp_path, path)
    expect_error(EscapeBlocked, lambda: root.stat_note(path), tmp_path, path)
    assert cases.snapshot(tmp_path) == before


# Non-regular files


@pytest.mark.timeout(5)
def test_fifo_planted_as_note(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"real.md": b"real"})
    os.mkfifo(ws / "pipe.md")
    root = opener(ws)
    started = time.monotonic()
    expect_error(NotARegularFile, lambda: root.read_note("pipe.md"), tmp_path)
    expect_error(NotARegularFile, lambda: root.stat_note("pipe.md"), tmp_path)
    fifo = ident_of(ws / "pipe.md")
    expect_error(NotARegularFile, lambda: root.quarantine("pipe.md", "q", fifo), tmp_path)
    expect_error(NotARegularFile, lambda: root.replace_note("pipe.md", b"x", expected=fifo), tmp_path)
    expect_error(NoteExists, lambda: root.create_note("pipe.md", b"x"), tmp_path)
    assert time.monotonic() - started < 1
    assert [n.path for n in root.list_notes()] == ["real.md"]
    assert stat.S_ISFIFO(os.lstat(ws / "pipe.md").st_mode)


@pytest.mark.timeout(5)
def test_socket_device_and_directory_are_not_notes(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path)
    (ws / "dir.md").mkdir()
    os.mknod(ws / "null.md", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(ws / "sock.md"))
        root = opener(ws)
        for name in ("dir.md", "null.md", "sock.md"):
            expect_error(NotARegularFile, lambda name=name: root.read_note(name), tmp_path)
            expect_error(NotARegularFile, lambda name=name: root.stat_note(name), tmp_path)
            claimed = ident_of(ws / name)
            expect_error(
                NotARegularFile, lambda name=name, c=claimed: root.quarantine(name, "q", c), tmp_path
            )
        assert root.list_notes() == []
        assert root.trash_entry("q") is None


# Quarantine and restore


def test_quarantine_and_restore_round_trip(tmp_path: Path, opener: Opener) -> None:
    payload = bytes(range(256)) * 40 + b"\x00end"
    ws = make_ws(tmp_path, {"reports/tps.md": payload})
    root = opener(ws)
    entry = root.stat_note("reports/tps.md")
    moved = root.quarantine("reports/tps.md", "20260728-tps.md", entry.identity)
    assert moved == entry.identity
    assert not (ws / "reports/tps.md").exists()
    trash = ws / TRASH_DIR_NAME
    assert stat.S_IMODE(os.lstat(trash).st_mode) == 0o700
    assert root.trash_entry("20260728-tps.md") == entry.identity
    assert root.list_notes(skip_hidden=False) == []
    (ws / "reports").rmdir()
    restored = root.restore("20260728-tps.md", "reports/tps.md")
    assert restored == entry.identity
    assert root.read_note("reports/tps.md") == (payload, entry.identity)
    assert root.trash_entry("20260728-tps.md") is None


def test_quarantine_refuses_edited_file(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"n.md": b"v1"})
    root = opener(ws)
    confirmed = root.stat_note("n.md").identity
    with open(ws / "n.md", "ab") as f:
        f.write(b"+more")
    expect_error(IdentityMismatch, lambda: root.quarantine("n.md", "q", confirmed), tmp_path)
    assert (ws / "n.md").read_bytes() == b"v1+more"
    now = root.stat_note("n.md").identity
    os.utime(ws / "n.md", ns=(now.mtime_ns, now.mtime_ns + 1_000_000))
    assert os.stat(ws / "n.md").st_size == now.size
    expect_error(IdentityMismatch, lambda: root.quarantine("n.md", "q", now), tmp_path)
    assert (ws / "n.md").read_bytes() == b"v1+more"
    assert root.trash_entry("q") is None


def test_quarantine_refuses_swapped_file(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"n.md": b"same"})
    root = opener(ws)
    confirmed = root.stat_note("n.md").identity
    (ws / "other").write_bytes(b"same")
    os.utime(ws / "other", ns=(confirmed.mtime_ns, confirmed.mtime_ns))
    os.rename(ws / "other", ws / "n.md")
    swapped = ident_of(ws / "n.md")
    assert (swapped.size, swapped.mtime_ns) == (confirmed.size, confirmed.mtime_ns)
    assert swapped.ino != confirmed.ino
    expect_error(IdentityMismatch, lambda: root.quarantine("n.md", "q", confirmed), tmp_path)
    assert ident_of(ws / "n.md") == swapped
    assert root.trash_entry("q") is None


def test_quarantine_trash_name_collision(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"a.md": b"a", "b.md": b"b"})
    root = opener(ws)
    a = root.quarantine("a.md", "t", root.stat_note("a.md").identity)
    expect_error(NoteExists, lambda: root.quarantine("b.md", "t", root.stat_note("b.md").identity), tmp_path)
    assert (ws / "b.md").read_bytes() == b"b"
    assert root.trash_entry("t") == a
    assert (ws / TRASH_DIR_NAME / "t").read_bytes() == b"a"


def test_restore_to_existing_path(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"a.md": b"old"})
    root = opener(ws)
    moved = root.quarantine("a.md", "t", root.stat_note("a.md").identity)
    (ws / "a.md").write_bytes(b"new")
    expect_error(NoteExists, lambda: root.restore("t", "a.md"), tmp_path)
    assert (ws / "a.md").read_bytes() == b"new"
    assert root.trash_entry("t") == moved
    expect_error(NoteMissing, lambda: root.restore("absent", "b.md"), tmp_path)


def test_trash_missing_and_purge(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"a.md": b"a"})
    root = opener(ws)
    assert root.trash_entry("t") is None
    expect_error(NoteMissing, lambda: root.purge_trash_entry("t"), tmp_path)
    expect_error(NoteMissing, lambda: root.restore("t", "a2.md"), tmp_path)
    assert not (ws / TRASH_DIR_NAME).exists()
    root.quarantine("a.md", "t", root.stat_note("a.md").identity)
    root.purge_trash_entry("t")
    assert root.trash_entry("t") is None
    expect_error(NoteMissing, lambda: root.purge_trash_entry("t"), tmp_path)
    (ws / TRASH_DIR_NAME / "d").mkdir()
    expect_error(NotARegularFile, lambda: root.purge_trash_entry("d"), tmp_path)
    expect_error(NotARegularFile, lambda: root.trash_entry("d"), tmp_path)
    assert (ws / TRASH_DIR_NAME / "d").is_dir()


def test_trash_symlink_to_outside_is_refused(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"a.md": b"a"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / TRASH_DIR_NAME).symlink_to(outside)
    root = opener(ws)
    before = cases.snapshot(tmp_path)
    expect_error(EscapeBlocked, lambda: root.quarantine("a.md", "t", ident_of(ws / "a.md")), tmp_path)
    expect_error(EscapeBlocked, lambda: root.trash_entry("t"), tmp_path)
    assert cases.snapshot(tmp_path) == before
    (outside / "t").write_bytes(b"outside")
    before = cases.snapshot(tmp_path)
    expect_error(EscapeBlocked, lambda: root.purge_trash_entry("t"), tmp_path)
    expect_error(EscapeBlocked, lambda: root.restore("t", "b.md"), tmp_path)
    assert cases.snapshot(tmp_path) == before


def test_trash_must_be_private_directory(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"a.md": b"a", "b.md": b"b"})
    trash = ws / TRASH_DIR_NAME
    trash.write_bytes(b"not a dir")
    root = opener(ws)
    expect_error(FsError, lambda: root.quarantine("a.md", "t", ident_of(ws / "a.md")), tmp_path)
    assert (ws / "a.md").exists()
    trash.unlink()
    trash.mkdir(mode=0o777)
    os.chmod(trash, 0o777)
    root.quarantine("a.md", "t", ident_of(ws / "a.md"))
    assert stat.S_IMODE(os.lstat(trash).st_mode) == 0o700
    os.chown(trash, 65534, 65534)
    expect_error(FsError, lambda: root.quarantine("b.md", "u", ident_of(ws / "b.md")), tmp_path)
    assert (ws / "b.md").exists()


def test_hardlink_policy(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"a.md": b"shared"})
    os.link(ws / "a.md", ws / "b.md")
    root = opener(ws)
    assert [(n.path, n.nlink) for n in root.list_notes()] == [("a.md", 2), ("b.md", 2)]
    assert root.read_note("a.md")[0] == b"shared"
    expect_error(FsError, lambda: root.read_note("a.md", refuse_hardlinked=True), tmp_path)
    claimed = root.stat_note("b.md").identity
    expect_error(FsError, lambda: root.quarantine("b.md", "t", claimed, refuse_hardlinked=True), tmp_path)
    assert (ws / "b.md").exists()
    root.quarantine("b.md", "t", claimed)
    assert root.stat_note("a.md").nlink == 2
    root.purge_trash_entry("t")
    assert root.read_note("a.md", refuse_hardlinked=True)[0] == b"shared"


# Create and replace


def test_create_refuses_dangling_symlink(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "new.md").symlink_to(outside / "created.md")
    (ws / "newdir").symlink_to(outside / "made")
    (ws / "d").mkdir()
    (ws / "d" / "up").symlink_to("../../outside")
    root = opener(ws)
    assert os.path.realpath(ws / "new.md") == str(outside / "created.md")
    expect_error(EscapeBlocked, lambda: root.create_note("new.md", b"x"), tmp_path)
    expect_error(EscapeBlocked, lambda: root.create_note("new.md", b"x", make_parents=True), tmp_path)
    expect_error(EscapeBlocked, lambda: root.create_note("newdir/x.md", b"x", make_parents=True), tmp_path)
    expect_error(EscapeBlocked, lambda: root.create_note("d/up/x.md", b"x", make_parents=True), tmp_path)
    expect_error(
        EscapeBlocked, lambda: root.create_note("d/up/deeper/x.md", b"x", make_parents=True), tmp_path
    )
    assert os.listdir(outside) == []
    assert os.readlink(ws / "new.md") == str(outside / "created.md")


def test_create_note(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"a.md": b"a", "file.md": b"f"})
    root = opener(ws)
    ident = root.create_note("x/y/z.md", b"deep", make_parents=True)
    assert (ws / "x/y/z.md").read_bytes() == b"deep"
    assert ident == ident_of(ws / "x/y/z.md")
    expect_error(NoteExists, lambda: root.create_note("a.md", b"b"), tmp_path)
    expect_error(NoteMissing, lambda: root.create_note("q/r.md", b"b"), tmp_path)
    expect_error(NoteMissing, lambda: root.create_note("file.md/r.md", b"b", make_parents=True), tmp_path)
    assert (ws / "a.md").read_bytes() == b"a"
    assert not (ws / "q").exists()
    assert root.create_note("empty.md", b"") == ident_of(ws / "empty.md")


def test_replace_note(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"d/n.md": b"v1"})
    os.chmod(ws / "d/n.md", 0o640)
    root = opener(ws)
    _, v1 = root.read_note("d/n.md")
    v2 = root.replace_note("d/n.md", b"version two", expected=v1)
    assert (ws / "d/n.md").read_bytes() == b"version two"
    assert v2 == ident_of(ws / "d/n.md") != v1
    assert stat.S_IMODE(os.stat(ws / "d/n.md").st_mode) == 0o640
    expect_error(IdentityMismatch, lambda: root.replace_note("d/n.md", b"stale", expected=v1), tmp_path)
    assert (ws / "d/n.md").read_bytes() == b"version two"
    expect_error(NoteMissing, lambda: root.replace_note("d/none.md", b"x", expected=v1), tmp_path)
    assert sorted(os.listdir(ws / "d")) == ["n.md"]


def test_read_limits(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"big.md": b"x" * 1000})
    root = opener(ws)
    assert root.read_note("big.md", max_bytes=1000)[0] == b"x" * 1000
    expect_error(FsError, lambda: root.read_note("big.md", max_bytes=999), tmp_path)
    expect_error(NoteMissing, lambda: root.read_note("nope.md"), tmp_path)
    expect_error(NoteMissing, lambda: root.read_note("big.md/x.md"), tmp_path)
    expect_error(NoteMissing, lambda: root.stat_note("no/dir.md"), tmp_path)


# Listing


def test_list_notes(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(
        tmp_path,
        {
            "a.md": b"a",
            "B.MD": b"b",
            "c.markdown": b"c",
            "notes.txt": b"t",
            "sub/d.md": b"d",
            "sub/deeper/e.md": b"e",
            ".hidden.md": b"h",
            ".hdir/f.md": b"f",
            f"sub/{TRASH_DIR_NAME}/g.md": b"g",
            "back\\slash.md": b"x",
            "new\nline.md": b"x",
        },
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.md").write_bytes(b"o")
    (ws / "link.md").symlink_to("a.md")
    (ws / "dirlink").symlink_to("sub")
    (ws / "outlink").symlink_to(outside)
    (ws / "outfile.md").symlink_to(outside / "o.md")
    os.mkfifo(ws / "pipe.md")
    os.close(os.open(os.fsencode(ws) + b"/\xff.md", os.O_CREAT | os.O_WRONLY, 0o644))
    root = opener(ws)
    notes = root.list_notes()
    assert [n.path for n in notes] == ["B.MD", "a.md", "c.markdown", "sub/d.md", "sub/deeper/e.md"]
    assert notes[1] == NoteEntry("a.md", ident_of(ws / "a.md"), 1)
    root.quarantine("a.md", "t", notes[1].identity)
    assert [n.path for n in root.list_notes(skip_hidden=False)] == [
        ".hdir/f.md",
        ".hidden.md",
        "B.MD",
        "c.markdown",
        f"sub/{TRASH_DIR_NAME}/g.md",
        "sub/d.md",
        "sub/deeper/e.md",
    ]
    assert [n.path for n in root.list_notes((".txt",))] == ["notes.txt"]
    expect_error(FsError, lambda: root.list_notes(max_entries=3), tmp_path)


# Root handle


def test_open_root_errors(tmp_path: Path, resolver: str) -> None:
    ws = make_ws(tmp_path, {"f.md": b"f"})
    (tmp_path / "wslink").symlink_to(ws)
    ff = resolver == "walk"
    expect_error(PathRejected, lambda: WorkspaceRoot.open("relative/ws", force_fallback=ff), tmp_path)
    expect_error(PathRejected, lambda: WorkspaceRoot.open(str(ws) + "\x00", force_fallback=ff), tmp_path)
    expect_error(
        EscapeBlocked, lambda: WorkspaceRoot.open(str(tmp_path / "wslink"), force_fallback=ff), tmp_path
    )
    expect_error(NotARegularFile, lambda: WorkspaceRoot.open(str(ws / "f.md"), force_fallback=ff), tmp_path)
    expect_error(NoteMissing, lambda: WorkspaceRoot.open(str(tmp_path / "none"), force_fallback=ff), tmp_path)


def test_identity_and_close(tmp_path: Path, opener: Opener) -> None:
    ws = make_ws(tmp_path, {"a.md": b"a"})
    other = tmp_path / "other"
    other.mkdir()
    root = opener(ws)
    st = os.stat(ws)
    assert root.identity == (st.st_dev, st.st_ino)
    root.verify_identity((st.st_dev, st.st_ino))
    expect_error(EscapeBlocked, lambda: root.verify_identity((st.st_dev, os.stat(other).st_ino)), tmp_path)
    # Replacing the configured directory by name does not redirect the held capability.
    os.rename(ws, tmp_path / "ws_moved")
    other.rename(ws)
    (ws / "a.md").write_bytes(b"impostor")
    assert root.read_note("a.md")[0] == b"a"
    root.verify_identity((st.st_dev, st.st_ino))
    os.unlink(tmp_path / "ws_moved" / "a.md")
    os.rmdir(tmp_path / "ws_moved")
    expect_error(EscapeBlocked, lambda: root.verify_identity((st.st_dev, st.st_ino)), tmp_path)
    root.close()
    root.close()
    expect_error(FsError, lambda: root.read_note("a.md"), tmp_path)
    with WorkspaceRoot.open(str(ws), force_fallback=root.resolver == "walk") as again:
        assert again.read_note("a.md")[0] == b"impostor"
        assert "ws" not in repr(again)


def test_env_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_ws(tmp_path)
    expected = "walk" if os.environ.get(fsroot.FORCE_FALLBACK_ENV) == "1" else "openat2"
    with WorkspaceRoot.open(str(ws)) as root:
        assert root.resolver == expected
    for value, want in (("1", "walk"), ("0", "openat2"), ("", "openat2")):
        monkeypatch.setenv(fsroot.FORCE_FALLBACK_ENV, value)
        with WorkspaceRoot.open(str(ws)) as root:
            assert root.resolver == want
    monkeypatch.setenv(fsroot.FORCE_FALLBACK_ENV, "1")
    with WorkspaceRoot.open(str(ws), force_fallback=False) as root:
        assert root.resolver == "openat2"
    monkeypatch.delenv(fsroot.FORCE_FALLBACK_ENV)
    with WorkspaceRoot.open(str(ws), force_fallback=True) as root:
        assert root.resolver == "walk"


# fd hygiene


def _open_fds() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


def _fd_battery(root: WorkspaceRoot, i: int, outside: Path) -> None:
    """Every public operation, succeeding and failing in each way we classify."""
    root.list_notes()
    root.list_notes(skip_hidden=False)
    e = root.stat_note("sub/b.md")
    root.read_note("sub/b.md")
    new = root.replace_note("sub/b.md", b"b2", expected=e.identity)
    root.create_note(f"n{i}/c.md", b"c", make_parents=True)
    root.quarantine("sub/b.md", f"t{i}", new)
    root.trash_entry(f"t{i}")
    root.restore(f"t{i}", "sub/b.md")
    root.quarantine(f"n{i}/c.md", f"c{i}", root.stat_note(f"n{i}/c.md").identity)
    root.purge_trash_entry(f"c{i}")
    failing: list[Callable[[], object]] = [
        lambda: root.read_note("esc/s.md"),
        lambda: root.read_note("leaf.md"),
        lambda: root.read_note("pipe.md"),
        lambda: root.read_note("big.md", max_bytes=10),
        lambda: root.read_note("missing/x.md"),
        lambda: root.read_note("../x.md"),
        lambda: root.stat_note("esc/s.md"),
        lambda: root.create_note("a.md", b""),
        lambda: root.create_note("leaf.md", b""),
        lambda: root.create_note("esc/x.md", b"", make_parents=True),
        lambda: root.create_note("a.md/x.md", b"", make_parents=True),
        lambda: root.replace_note("a.md", b"", expected=new),
        lambda: root.quarantine("a.md", "q", new),
        lambda: root.quarantine("esc/s.md", "q", ident_of(outside / "s.md")),
        lambda: root.restore("nothing", "z.md"),
        lambda: root.restore("q", "a.md"),
        lambda: root.purge_trash_entry("nothing"),
        lambda: root.verify_identity((0, 0)),
    ]
    for fn in failing:
        with pytest.raises(FsError):
            fn()


def test_no_fd_leaks(tmp_path: Path, resolver: str) -> None:
    ws = make_ws(tmp_path, {"a.md": b"a", "sub/b.md": b"b", "big.md": b"x" * 100})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.md").write_bytes(b"s")
    (ws / "esc").symlink_to(outside)
    (ws / "leaf.md").symlink_to(outside / "s.md")
    os.mkfifo(ws / "pipe.md")
    gc.collect()
    before = _open_fds()
    for i in range(3):
        with WorkspaceRoot.open(str(ws), force_fallback=resolver == "walk") as root:
            assert len(_open_fds()) == len(before) + 1
            _fd_battery(root, i, outside)
            assert len(_open_fds()) == len(before) + 1
    gc.collect()
    assert _open_fds() == before


# Races


@pytest.mark.timeout(120)
def test_symlink_swap_race(tmp_path: Path, resolver: str) -> None:
    report = cases.run_symlink_swap_race(tmp_path, force_fallback=resolver == "walk")
    assert report.unexpected == []
    assert report.outside_after == report.outside_before
    assert report.swaps > 0
    assert cases.outcome_total(report, ":EscapeBlocked") > 0, (report.outcomes, report.diagnosis)
    assert cases.outcome_total(report, ":ok") > 0, (report.outcomes, report.diagnosis)
    trash = tmp_path / "ws" / TRASH_DIR_NAME
    for entry in os.scandir(trash) if trash.exists() else ():
        assert entry.is_file(follow_symlinks=False)
        assert Path(entry.path).read_bytes() == b"inside"


# Forked children: mount namespaces and seccomp


def run_in_child(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a forked child (own mount namespace or seccomp filter) and return its result.

    The child stops the garbage collector first: a finalizer of an object inherited from the parent
    could wait for a lock that one of the parent's other threads held at fork time.
    """
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        gc.disable()
        try:
            os.close(rfd)
            try:
                payload = pickle.dumps(("ok", fn()))
            except BaseException:
                payload = pickle.dumps(("error", traceback.format_exc()))
            with os.fdopen(wfd, "wb") as out:
                out.write(payload)
        finally:
            os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    kind, value = pickle.loads(data)
    if kind == "error":
        pytest.fail(f"child failed:\n{value}")
    return value


_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_CLONE_NEWNS = 0x00020000


def _libc_check(rc: int) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _mount_child(tmp: Path, force_fallback: bool) -> dict[str, Any]:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p)
    _libc_check(libc.unshare(_CLONE_NEWNS))
    _libc_check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None))
    ws, other = tmp / "ws", tmp / "other"
    _libc_check(libc.mount(b"tmpfs", bytes(ws / "tmpfs"), b"tmpfs", 0, None))
    (ws / "tmpfs" / "x.md").write_bytes(b"tmpfs")
    _libc_check(libc.mount(bytes(other), bytes(ws / "bind"), None, _MS_BIND, None))
    _libc_check(libc.mount(bytes(other), bytes(ws / "sub" / "deep"), None, _MS_BIND, None))
    _libc_check(libc.mount(bytes(other / "x.md"), bytes(ws / "filebind.md"), None, _MS_BIND, None))
    out: dict[str, Any] = {"bind same st_dev": os.stat(ws / "bind").st_dev == os.stat(ws).st_dev}

    def record(key: str, fn: Callable[[], object]) -> None:
        try:
            fn()
            out[key] = "ok"
        except FsError as exc:
            out[key] = type(exc).__name__
            out[key + " msg"] = str(exc)

    with WorkspaceRoot.open(str(ws), force_fallback=force_fallback) as root:
        out["resolver"] = root.resolver
        for p in ("tmpfs/x.md", "bind/x.md", "sub/deep/x.md", "filebind.md"):
            claimed = FileIdentity.of(os.stat(ws / p))
            record(f"read {p}", lambda p=p: root.read_note(p))
            record(f"stat {p}", lambda p=p: root.stat_note(p))
            record(f"quarantine {p}", lambda p=p, c=claimed: root.quarantine(p, "q", c))
            record(f"replace {p}", lambda p=p, c=claimed: root.replace_note(p, b"pwned", expected=c))
        for p in ("tmpfs/new.md", "bind/new.md", "sub/deep/new.md", "bind/a/b.md"):
            record(f"create {p}", lambda p=p: root.create_note(p, b"pwned", make_parents=True))
        seed = root.create_note("seed.md", b"seed")
        root.quarantine("seed.md", "seed", seed)
        record("restore bind/r.md", lambda: root.restore("seed", "bind/r.md"))
        out["list"] = [n.path for n in root.list_notes()]
        out["plain"] = root.read_note("plain.md")[0]
    for sub in ("tmpfs", "bind"):
        with WorkspaceRoot.open(str(ws / sub), force_fallback=force_fallback) as inner:
            ident = inner.create_note("inner.md", b"inner")
            inner.quarantine("inner.md", "i", ident)
            inner.restore("i", "inner.md")
            out[f"inner {sub}"] = (inner.read_note("x.md")[0], inner.read_note("inner.md")[0])
            (ws / sub / "inner.md").unlink()
            os.rmdir(ws / sub / TRASH_DIR_NAME)
    return out


@pytest.mark.timeout(30)
def test_mount_crossing(tmp_path: Path, resolver: str) -> None:
    ws = make_ws(tmp_path, {"plain.md": b"plain", "filebind.md": b"placeholder"})
    for d in ("tmpfs", "bind", "sub/deep"):
        (ws / d).mkdir(parents=True)
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_bytes(b"other")
    before = cases.snapshot(other)
    out = run_in_child(lambda: _mount_child(tmp_path, resolver == "walk"))
    assert out["resolver"] == resolver
    assert out["bind same st_dev"] is True
    for p in ("tmpfs/x.md", "bind/x.md", "sub/deep/x.md", "filebind.md"):
        for op in ("read", "stat", "quarantine", "replace"):
            assert out[f"{op} {p}"] == "EscapeBlocked", (op, p, out)
            assert str(tmp_path) not in out[f"{op} {p} msg"]
    for p in ("tmpfs/new.md", "bind/new.md", "sub/deep/new.md", "bind/a/b.md"):
        assert out[f"create {p}"] == "EscapeBlocked", (p, out)
    assert out["restore bind/r.md"] == "EscapeBlocked"
    assert out["list"] == ["plain.md"]
    assert out["plain"] == b"plain"
    assert out["inner tmpfs"] == (b"tmpfs", b"inner")
    assert out["inner bind"] == (b"other", b"inner")
    after = cases.snapshot(other)
    assert {k: v for k, v in after.items() if k != "."} == {k: v for k, v in before.items() if k != "."}
    assert (ws / "filebind.md").read_bytes() == b"placeholder"
    assert sorted(os.listdir(ws / "bind")) == []


def _seccomp_child(ws: Path, openat2_errno: int) -> dict[str, Any]:
    sc = ctypes.CDLL("libseccomp.so.2")
    sc.seccomp_init.restype = ctypes.c_void_p
    sc.seccomp_init.argtypes = (ctypes.c_uint32,)
    sc.seccomp_rule_add.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint)
    sc.seccomp_load.argtypes = (ctypes.c_void_p,)
    sc.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    ctx = sc.seccomp_init(0x7FFF0000)
    blocked = [(b"openat2", openat2_errno)]
    if platform.machine() == "x86_64":  # aarch64 glibc implements renameat() with renameat2
        blocked.append((b"renameat2", errno.ENOSYS))
    for name, err in blocked:
        nr = sc.seccomp_syscall_resolve_name(name)
        assert sc.seccomp_rule_add(ctx, 0x00050000 | err, nr, 0) == 0
    assert sc.seccomp_load(ctx) == 0
    fs_syscalls._openat2_state = None
    out: dict[str, Any] = {}
    with WorkspaceRoot.open(str(ws), force_fallback=False) as root:
        out["resolver"] = root.resolver
        data, ident = root.read_note("sub/a.md")
        out["read"] = data
        try:
            root.read_note("esc/s.md")
        except FsError as exc:
            out["escape"] = type(exc).__name__
        ident = root.replace_note("sub/a.md", b"a2", expected=ident)
        try:
            root.replace_note("sub/a.md", b"a3", expected=FileIdentity(0, 0, 0, 0))
        except FsError as exc:
            out["stale replace"] = type(exc).__name__
        root.quarantine("sub/a.md", "t", ident)
        other = root.create_note("sub/b.md", b"b")
        try:
            root.quarantine("sub/b.md", "t", other)
        except FsError as exc:
            out["collision"] = type(exc).__name__
        root.create_note("sub/a.md", b"again")
        try:
            root.restore("t", "sub/a.md")
        except FsError as exc:
            out["restore over"] = type(exc).__name__
        out["restored"] = root.restore("t", "sub/restored.md") == ident
    out["files"] = {p: (ws / "sub" / p).read_bytes() for p in sorted(os.listdir(ws / "sub"))}
    return out


@pytest.mark.timeout(30)
@pytest.mark.parametrize("openat2_errno", [errno.EPERM, errno.ENOSYS], ids=["EPERM", "ENOSYS"])
def test_seccomp_blocked_syscalls_fall_back(tmp_path: Path, openat2_errno: int) -> None:
    ws = make_ws(tmp_path, {"sub/a.md": b"a"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.md").write_bytes(b"s")
    (ws / "esc").symlink_to(outside)
    out = run_in_child(lambda: _seccomp_child(ws, openat2_errno))
    assert out["resolver"] == "walk"
    assert out["read"] == b"a"
    assert out["escape"] == "EscapeBlocked"
    assert out["stale replace"] == "IdentityMismatch"
    assert out["collision"] == "NoteExists"
    assert out["restore over"] == "NoteExists"
    assert out["restored"] is True
    assert out["files"] == {"a.md": b"again", "b.md": b"b", "restored.md": b"a2"}
    assert (outside / "s.md").read_bytes() == b"s"


def test_the_trash_journal_is_appended_never_written_through(opener: Opener, tmp_path: Path) -> None:
    ws = make_ws(tmp_path, {"n.md": b"# n\n"})
    root = opener(ws)
    assert read_journal(root, 1024) == b""  # no trash yet
    append_line(root, b"one\n")
    append_line(root, b"two\n", sync=False)
    assert read_journal(root, 1024) == b"one\ntwo\n"
    assert root.list_trash() == []  # the journal is not an entry
    reset_journal(root, b"two\n")
    assert read_journal(root, 1024) == b"two\n"
    journal = ws / TRASH_DIR_NAME / note_paths.TRASH_JOURNAL_NAME
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep\n")
    journal.unlink()
    journal.symlink_to(outside)
    expect_error(EscapeBlocked, lambda: append_line(root, b"x\n"), tmp_path)
    expect_error(EscapeBlocked, lambda: read_journal(root, 1024), tmp_path)
    expect_error(EscapeBlocked, lambda: reset_journal(root), tmp_path)
    assert outside.read_bytes() == b"keep\n"
    journal.unlink()
    os.mkfifo(journal)
    expect_error(NotARegularFile, lambda: append_line(root, b"x\n"), tmp_path)
    expect_error(NotARegularFile, lambda: read_journal(root, 1024), tmp_path)


def test_trash_records_are_written_whole_created_once_never_through_a_symlink(
    opener: Opener, tmp_path: Path
) -> None:
    ws = make_ws(tmp_path, {"n.md": b"# n\n"})
    root = opener(ws)
    assert root.read_record(note_paths.TRASH_OWNER_NAME, 1024) is None  # no trash yet
    assert root.write_record(note_paths.TRASH_OWNER_NAME, b"first\n", replace=False) is True
    assert root.write_record(note_paths.TRASH_OWNER_NAME, b"second\n", replace=False) is False
    assert root.read_record(note_paths.TRASH_OWNER_NAME, 1024) == b"first\n"
    assert root.write_record(note_paths.TRASH_OWNER_NAME, b"third\n", replace=True) is True
    assert root.read_record(note_paths.TRASH_OWNER_NAME, 1024) == b"third\n"
    trash = ws / TRASH_DIR_NAME
    assert sorted(p.name for p in trash.iterdir()) == [note_paths.TRASH_OWNER_NAME], "no temp file left"
    assert root.list_trash() == []  # a record is not an entry
    expect_error(PathRejected, lambda: root.read_record("n.md", 1024), tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep\n")
    (trash / note_paths.TRASH_OWNER_NAME).unlink()
    (trash / note_paths.TRASH_OWNER_NAME).symlink_to(outside)
    expect_error(EscapeBlocked, lambda: root.read_record(note_paths.TRASH_OWNER_NAME, 1024), tmp_path)
    assert root.write_record(note_paths.TRASH_OWNER_NAME, b"x\n", replace=False) is False
    assert root.write_record(note_paths.TRASH_OWNER_NAME, b"mine\n", replace=True) is True
    assert outside.read_bytes() == b"keep\n", "the symlink was replaced, never written through"
    assert not (trash / note_paths.TRASH_OWNER_NAME).is_symlink()
