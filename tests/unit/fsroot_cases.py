"""Case tables and helpers for test_fsroot.py (also importable by bench scripts).

The tables are ports of Go's ``src/os/root_test.go`` (``rootTestCases``) and of the layout of the kernel's
``tools/testing/selftests/openat2/resolve_test.c``, with our stricter policy: every symlink and every
``..``/``.`` component is refused, so cases that Go resolves inside the root fail here too.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import stat
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from notewarden.scope.fs_errors import EscapeBlocked, FsError, NoteMissing, PathRejected
from notewarden.scope.fsroot import FileIdentity, WorkspaceRoot

RACE_ITERATIONS = 300
"""Iterations of the symlink-swap race in the unit test; bench scripts pass 1000+ to run_symlink_swap_race."""

TARGET_DATA = b"target"
T = TypeVar("T")


def makefs(root: Path, entries: list[str], subst: dict[str, str] | None = None) -> None:
    """Go's makefs: "d/" is a directory, "f" a file containing its own name, "a => b" a symlink."""
    root.mkdir(parents=True, exist_ok=True)
    for raw in entries:
        ent = raw
        for key, value in (subst or {}).items():
            ent = ent.replace(key, value)
        base, sep, link = ent.partition(" => ")
        (root / base).parent.mkdir(parents=True, exist_ok=True)
        if sep:
            os.symlink(link, root / base)
        elif base.endswith("/"):
            (root / base).mkdir(parents=True, exist_ok=True)
        else:
            (root / base).write_bytes(base.encode())


def snapshot(top: Path) -> dict[str, tuple[int, int, int, int, bytes]]:
    """Names, types, inodes, mtimes, sizes and file contents under ``top`` (no symlink following)."""
    snap: dict[str, tuple[int, int, int, int, bytes]] = {}
    st = os.lstat(top)
    snap["."] = (st.st_mode, st.st_ino, st.st_mtime_ns, st.st_size, b"")
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            data = b""
            if stat.S_ISREG(st.st_mode):
                data = Path(full).read_bytes()
            elif stat.S_ISLNK(st.st_mode):
                data = os.readlink(full).encode()
            snap[os.path.relpath(full, top)] = (st.st_mode, st.st_ino, st.st_mtime_ns, st.st_size, data)
    return snap


@dataclass(frozen=True)
class RootCase:
    """One row of Go's rootTestCases with our expected outcomes.

    ``present`` is the outcome of read/stat/quarantine/replace with the target file in place; ``absent``
    that of create_note (no make_parents) with no target. create_note(make_parents=True) and restore create
    missing directories: they succeed where ``parents_ok``, else they give ``absent``. None means success.
    """

    name: str
    fs: tuple[str, ...]
    open: str
    target: str = ""
    present: type[FsError] | None = None
    absent: type[FsError] | None = None
    parents_ok: bool = False
    always_fails: bool = False

    @property
    def with_parents(self) -> type[FsError] | None:
        return None if self.parents_ok else self.absent


_E = EscapeBlocked
_R = PathRejected

ROOT_CASES: tuple[RootCase, ...] = (
    RootCase("plain path", (), "target", "target"),
    RootCase("path in directory", ("a/b/c/",), "a/b/c/target", "a/b/c/target"),
    RootCase("symlink", ("link => target",), "link", "target", _E, _E),
    RootCase("symlink dotdot slash", ("link => ../",), "link", "", _E, _E),
    RootCase("symlink ending in slash", ("dir/", "link => dir/"), "link/target", "dir/target", _E, _E),
    RootCase("slash after symlink to file", ("link => ../ROOT/target",), "link/", "target", _R, _R),
    RootCase("slash after symlink to dir", ("link => ../ROOT/target", "target/"), "link/", "", _R, _R),
    RootCase("symlink dotdot dotdot slash", ("dir/link => ../../",), "dir/link", "", _E, _E),
    RootCase(
        "symlink chain",
        ("link => a/b/c/target", "a/b => e", "a/e => ../f", "f => g/h/i", "g/h/i => ..", "g/c/"),
        "link",
        "g/c/target",
        _E,
        _E,
    ),
    RootCase("path with dot", ("a/b/",), "./a/./b/./target", "a/b/target", _R, _R),
    RootCase("path with dotdot", ("a/b/",), "a/../a/b/../../a/b/../b/target", "a/b/target", _R, _R),
    RootCase("path with dotdot slash", (), "../", "", _R, _R),
    RootCase("path with dotdot dotdot slash", ("a/",), "a/../../", "", _R, _R),
    RootCase("dotdot no symlink", ("a/",), "a/../target", "target", _R, _R),
    RootCase("dotdot after symlink", ("a => b/c", "b/c/"), "a/../target", "b/target", _R, _R),
    RootCase("dotdot before symlink", ("a => b/c", "b/c/"), "b/../a/target", "b/c/target", _R, _R),
    RootCase("symlink ends in dot", ("a => b/.", "b/"), "a/target", "b/target", _E, _E),
    RootCase(
        "directory does not exist",
        (),
        "a/file",
        "a/file",
        NoteMissing,
        NoteMissing,
        parents_ok=True,
        always_fails=True,
    ),
    RootCase("empty path", (), "", "", _R, _R, always_fails=True),
    RootCase("symlink cycle", ("a => a",), "a", "", _E, _E, always_fails=True),
    RootCase("path escapes", (), "../ROOT/target", "target", _R, _R),
    RootCase("long path escapes", ("a/",), "a/../../ROOT/target", "target", _R, _R),
    RootCase("absolute symlink", ("link => $ABS/target",), "link", "target", _E, _E),
    RootCase("relative symlink", ("link => ../ROOT/target",), "link", "target", _E, _E),
    RootCase(
        "symlink chain escapes",
        ("link => a/b/c/target", "a/b => e", "a/e => ../../ROOT", "c/"),
        "link",
        "c/target",
        _E,
        _E,
    ),
    # Additions: escapes that really leave the root (target under OUTSIDE), and our stricter rules.
    RootCase(
        "dir symlink to sibling", ("esc => ../OUTSIDE",), "esc/secret.md", "../OUTSIDE/secret.md", _E, _E
    ),
    RootCase("absolute dir symlink", ("abs => $OUT",), "abs/secret.md", "../OUTSIDE/secret.md", _E, _E),
    RootCase(
        "nested dotdot dir symlink",
        ("dir/up => ../../OUTSIDE",),
        "dir/up/secret.md",
        "../OUTSIDE/secret.md",
        _E,
        _E,
    ),
    RootCase(
        "leaf symlink to outside file",
        ("note.md => $OUT/secret.md",),
        "note.md",
        "../OUTSIDE/secret.md",
        _E,
        _E,
    ),
    RootCase("symlink staying inside", ("real/", "alias => real"), "alias/n.md", "real/n.md", _E, _E),
    RootCase("absolute path", (), "$OUT/secret.md", "../OUTSIDE/secret.md", _R, _R),
    RootCase("backslash", ("a/",), "a\\..\\target", "", _R, _R),
    RootCase("double slash", ("a/",), "a//target", "a/target", _R, _R),
    RootCase("NUL byte", (), "target\x00.md", "", _R, _R),
    RootCase("trailing slash on file", (), "target/", "target", _R, _R),
)


@dataclass(frozen=True)
class SelftestCase:
    path: str
    expect: type[FsError] | None
    reaches: str | None = None
    """Where plain path resolution would land (relative to the lab dir or absolute); None: no companion."""


SELFTEST_LAYOUT: tuple[str, ...] = (
    "procexe => /proc/self/exe",
    "procroot => /proc/self/root",
    "root/",
    "mnt/self => ../mnt/",
    "mnt/absself => $FAKE/mnt/",
    "etc/passwd",
    "creatlink => $FAKE/newfile3",
    "reletc => etc/",
    "relsym => etc/passwd",
    "absetc => $FAKE/etc/",
    "abssym => $FAKE/etc/passwd",
    "abscheeky => $FAKE/cheeky",
    "cheeky/absself => $FAKE/",
    "cheeky/self => ../../root/",
    "cheeky/garbageself => $FAKE/../../root/",
    "cheeky/passwd => ../cheeky/../cheeky/../etc/../etc/passwd",
    "cheeky/abspasswd => $FAKE/../cheeky/../cheeky/../etc/../etc/passwd",
    "cheeky/dotdotlink => $DOTDOT$FAKE/etc/passwd",
    "cheeky/garbagelink => $FAKE/../../../../../../../../../../../../../../etc/passwd",
)
"""resolve_test.c's tree. ``$FAKE`` is "" for the faithful variant (targets are the real /etc, /mnt, /)
and a scratch "fake root" directory for the variant used by mutating operations."""

SELFTEST_READ_CASES: tuple[SelftestCase, ...] = (
    SelftestCase("etc/passwd", None),
    SelftestCase("procexe", EscapeBlocked, "/proc/self/exe"),
    SelftestCase("procroot/etc/passwd", EscapeBlocked, "/etc/passwd"),
    SelftestCase("procroot/proc/self/status", EscapeBlocked, "/proc/self/status"),
    SelftestCase("abssym", EscapeBlocked, "/etc/passwd"),
    SelftestCase("absetc/passwd", EscapeBlocked, "/etc/passwd"),
    SelftestCase("reletc/passwd", EscapeBlocked, "etc/passwd"),
    SelftestCase("relsym", EscapeBlocked, "etc/passwd"),
    SelftestCase("cheeky/passwd", EscapeBlocked, "etc/passwd"),
    SelftestCase("cheeky/abspasswd", EscapeBlocked),
    SelftestCase("cheeky/dotdotlink", EscapeBlocked, "/etc/passwd"),
    SelftestCase("cheeky/garbagelink", EscapeBlocked, "/etc/passwd"),
    SelftestCase("cheeky/absself/etc/passwd", EscapeBlocked, "/etc/passwd"),
    SelftestCase("cheeky/self/etc/passwd", EscapeBlocked, "etc/passwd"),
    SelftestCase("cheeky/garbageself/etc/passwd", EscapeBlocked),
    SelftestCase("abscheeky/passwd", EscapeBlocked),
    SelftestCase("mnt/self/self/self", EscapeBlocked),
    SelftestCase("mnt/absself", EscapeBlocked),
    SelftestCase("/etc/passwd", PathRejected),
    SelftestCase("../etc/passwd", PathRejected),
    SelftestCase("../../../../../../../../../../../../../../etc/passwd", PathRejected),
    SelftestCase("/proc/self/root/etc/passwd", PathRejected),
    SelftestCase("procroot/../etc/passwd", PathRejected),
    SelftestCase("./etc/passwd", PathRejected),
)

SELFTEST_CREATE_PATHS: tuple[str, ...] = (
    "creatlink",
    "abssym",
    "absetc/new.md",
    "reletc/new.md",
    "abscheeky/new.md",
    "cheeky/absself/etc/new.md",
    "cheeky/self/etc/new.md",
    "cheeky/garbageself/new.md",
    "mnt/self/new.md",
    "mnt/absself/new.md",
    "procroot$FAKE/etc/new.md",
)

SELFTEST_MUTATE_PATHS: tuple[str, ...] = (
    "abssym",
    "relsym",
    "absetc/passwd",
    "reletc/passwd",
    "cheeky/passwd",
    "cheeky/dotdotlink",
    "cheeky/absself/etc/passwd",
    "cheeky/self/etc/passwd",
    "procroot$FAKE/etc/passwd",
)


def build_selftest_lab(base: Path, *, fake: bool) -> tuple[Path, Path | None]:
    """Create the resolve_test.c tree under base/root; returns (workspace, fake root or None)."""
    ws = base / "root"
    fake_root: Path | None = None
    prefix = ""
    if fake:
        fake_root = base / "fakeroot"
        makefs(fake_root, ["etc/passwd", "mnt/", "cheeky/", "root/"])
        prefix = str(fake_root)
    makefs(ws, list(SELFTEST_LAYOUT), {"$FAKE": prefix, "$DOTDOT": "../" * 14})
    assert len(ws.parts) < 14, "dotdotlink must climb to / as in the kernel test"
    return ws, fake_root


@dataclass
class RaceReport:
    outcomes: Counter[str] = field(default_factory=Counter)
    swaps: int = 0
    unexpected: list[str] = field(default_factory=list)
    outside_before: dict[str, tuple[int, int, int, int, bytes]] = field(default_factory=dict)
    outside_after: dict[str, tuple[int, int, int, int, bytes]] = field(default_factory=dict)
    diagnosis: str = ""


REPO = Path(__file__).resolve().parents[2]


def swap_until_stopped(sub: Path, sub_old: Path, outside: Path, stop_file: Path, pause: float) -> None:
    """The attacker's loop (``python -m tests.unit.fsroot_cases``): say "ready" after 16 swaps, and the
    number of swaps when ``stop_file`` appears."""
    os.sched_setaffinity(0, range(os.cpu_count() or 1))  # not confined to the CPU of a pinned caller
    rng, n = random.Random(0), 0
    while not stop_file.exists():
        try:
            os.rename(sub, sub_old)
            os.symlink(outside, sub)
            if pause:
                time.sleep(rng.uniform(0, pause))
            os.unlink(sub)
            os.rename(sub_old, sub)
            if pause:
                time.sleep(rng.uniform(0, pause))
        except OSError:
            _restore_layout(sub, sub_old)
            continue
        n += 1
        if n == 16:
            print("ready", flush=True)
    print(n, flush=True)


class SwapAttacker:
    """Another process flipping ``sub`` between the real directory and a symlink to ``outside``.

    ``pause`` > 0 holds each state for a random 0..pause seconds, so the operations being raced land in
    every state instead of mostly in the transitions. The attacker is a fresh interpreter, not a fork of
    the test process: a fork inherits the locks of the test process's other threads, and a child that
    blocks on one mid-swap leaves ``sub`` missing for the rest of the run. It runs on every CPU even if
    the test process is pinned to one: sharing that CPU, each side sees the other frozen for whole
    time slices, and the race can stall in one state. ``swaps`` is set on exit.
    """

    def __init__(self, sub: Path, sub_old: Path, outside: Path, pause: float = 0.0) -> None:
        self.sub, self.sub_old, self.outside, self.pause = sub, sub_old, outside, pause
        self.stop_file = sub.parent.parent / f".stop-attacker-{os.getpid()}"
        self.swaps = 0
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> SwapAttacker:
        args = [str(self.sub), str(self.sub_old), str(self.outside), str(self.stop_file), repr(self.pause)]
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.unit.fsroot_cases", *args],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], 30)
        line = self._proc.stdout.readline().strip() if ready else ""
        if line != "ready":
            self.__exit__(None, None, None)
            raise RuntimeError(f"the attacker did not start swapping (said {line!r})")
        return self

    def describe(self) -> str:
        """The layout and the attacker's scheduler state, for a race that did not race."""
        assert self._proc is not None
        layout = {p.name: _kind(p) for p in (self.sub, self.sub_old)}
        proc = Path(f"/proc/{self._proc.pid}")
        parts = [f"layout={layout}", f"ws={sorted(os.listdir(self.sub.parent))}"]
        for name in ("stat", "wchan", "stack"):
            with contextlib.suppress(OSError):
                parts.append(f"{name}={(proc / name).read_text().strip()!r}")
        return " ".join(parts)

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        self.stop_file.touch()
        try:
            out, _ = self._proc.communicate(timeout=30)
            lines = out.split()
            self.swaps = int(lines[-1]) if lines and lines[-1].isdigit() else 0  # 0: it died early
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self.stop_file.unlink(missing_ok=True)
            _restore_layout(self.sub, self.sub_old)


def _kind(path: Path) -> str:
    try:
        st = os.lstat(path)
    except OSError as exc:
        return type(exc).__name__
    return "symlink" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "other"


def _restore_layout(sub: Path, sub_old: Path) -> None:
    with contextlib.suppress(OSError):
        if sub.is_symlink():
            sub.unlink()
        if sub_old.exists() and not sub.exists():
            sub_old.rename(sub)


def run_symlink_swap_race(
    base: Path, *, force_fallback: bool, iterations: int = RACE_ITERATIONS, attacker_pause: float = 0.0
) -> RaceReport:
    """Race note operations on ``sub/x.md`` against a process swapping ``sub`` with a symlink outside.

    Returns the outcome counts. The caller asserts that ``base/outside`` is unchanged (see snapshot).
    """
    ws, outside = base / "ws", base / "outside"
    sub, sub_old = ws / "sub", ws / "sub_old"
    sub.mkdir(parents=True)
    outside.mkdir()
    (sub / "x.md").write_bytes(b"inside")
    (outside / "x.md").write_bytes(b"OUTSIDE")
    outside_identity = FileIdentity.of(os.stat(outside / "x.md"))
    report = RaceReport(outside_before=snapshot(outside))
    attacker = SwapAttacker(sub, sub_old, outside, attacker_pause)
    with WorkspaceRoot.open(str(ws), force_fallback=force_fallback) as root, attacker:

        def attempt(label: str, fn: Callable[[], T]) -> T | None:
            try:
                result = fn()
            except FsError as exc:
                report.outcomes[f"{label}:{type(exc).__name__}"] += 1
                return None
            except Exception as exc:  # anything but FsError is a bug
                report.unexpected.append(f"{label}: {exc!r}")
                return None
            report.outcomes[f"{label}:ok"] += 1
            return result

        # At least `iterations` rounds, and on until both the symlink state and the directory
        # state were hit (so the race really raced), within a bounded time.
        i = 0
        give_up = time.monotonic() + 60
        while i < iterations or (
            time.monotonic() < give_up
            and not (outcome_total(report, ":EscapeBlocked") and outcome_total(report, ":ok"))
        ):
            i += 1
            got = attempt("read", lambda: root.read_note("sub/x.md"))
            if got is not None and got[0] == b"OUTSIDE":
                report.unexpected.append("read returned the outside file")
            entry = attempt("stat", lambda: root.stat_note("sub/x.md"))
            if entry is not None:
                ident = entry.identity
                if ident == outside_identity:
                    report.unexpected.append("stat returned the outside file")
                attempt(
                    "replace",
                    lambda ident=ident: root.replace_note("sub/x.md", b"inside", expected=ident),
                )
                fresh = attempt("stat", lambda: root.stat_note("sub/x.md"))
                if fresh is not None:
                    ident = fresh.identity
                    attempt(
                        "quarantine", lambda ident=ident, i=i: root.quarantine("sub/x.md", f"q{i}", ident)
                    )
            attempt("quarantine-outside", lambda i=i: root.quarantine("sub/x.md", f"o{i}", outside_identity))
            attempt("create", lambda i=i: root.create_note(f"sub/new-{i}.md", b"new"))
            attempt("recreate", lambda: root.create_note("sub/x.md", b"inside"))
        if i > iterations:
            report.diagnosis = attacker.describe()
    report.swaps = attacker.swaps
    report.outside_after = snapshot(outside)
    return report


def outcome_total(report: RaceReport, suffix: str) -> int:
    return sum(n for key, n in report.outcomes.items() if key.endswith(suffix))


__all__ = [
    "RACE_ITERATIONS",
    "ROOT_CASES",
    "SELFTEST_CREATE_PATHS",
    "SELFTEST_LAYOUT",
    "SELFTEST_MUTATE_PATHS",
    "SELFTEST_READ_CASES",
    "TARGET_DATA",
    "RaceReport",
    "RootCase",
    "SelftestCase",
    "SwapAttacker",
    "build_selftest_lab",
    "makefs",
    "outcome_total",
    "run_symlink_swap_race",
    "snapshot",
]


if __name__ == "__main__":
    sub_arg, sub_old_arg, outside_arg, stop_arg, pause_arg = sys.argv[1:]
    swap_until_stopped(Path(sub_arg), Path(sub_old_arg), Path(outside_arg), Path(stop_arg), float(pause_arg))
