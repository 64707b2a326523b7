"""Issue 26: every set-up mistake is one line naming the problem and its fix, with the documented exit
status (cli.py: 2 for a configuration or set-up mistake, 3 for the database), never a traceback.

The corpus runs in one interpreter (`tests.wire.setup_driver`: a forked process per command line),
against real folders, real files, a real busy port, a read-only filesystem (a read-only tmpfs when
the tests run as root, as CI does; else a folder without write permission) and a PostgreSQL port
where nothing listens. `serve` and `doctor` are run on the same broken set-ups: a refusal of one is
a FAIL of the other, in the same words, and doctor shows one FAIL per mistake (no second,
misleading one).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port, sha256

CONFIG_ERROR, DATABASE_ERROR, DOCTOR_FAIL, STOPPED = 2, 3, 1, 1


@dataclass
class Case:
    id: str
    argv: list[str]
    status: int
    says: list[str]
    """Substrings of the output: the problem (with its path or entry) and the fix."""
    env: dict[str, str] = field(default_factory=dict)
    stdin: str = ""
    doctor: bool = False
    """A doctor report on stdout (one FAIL line) instead of one line on stderr."""


@dataclass
class World:
    root: Path
    notes: Path
    read_only: Path
    busy_port: int
    mounted: bool = False
    """`read_only` is a read-only filesystem (root), not a folder without write permission."""
    dry: bool = False
    """Only the cases' names are wanted (collection): nothing is written."""

    def config(self, name: str, body: str, *, state: str | None = None) -> str:
        path = self.root / name
        state_line = f'state_dir = "{state or self.root / "state"}"\n'
        if not self.dry:
            path.write_text(state_line + body)
        return str(path)

    def serving(self, folder: Path | str, *, stdio: bool = True, rights: str = '["maintainer"]') -> str:
        uri = f"file://{folder}"
        return (
            f'[[workspace]]\nuri = "{uri}"\n[[principal]]\nid = "me"\nworkspaces = ["{uri}"]\n'
            f'rights = {rights}\ntoken_sha256 = ["{sha256("t")}"]\n'
            + ('[stdio]\nprincipal = "me"\n' if stdio else "")
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("setups")
    notes = root / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n")
    read_only = root / "read-only"
    read_only.mkdir()
    mounted = os.geteuid() == 0
    if mounted:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(read_only)], check=True)
    else:
        read_only.chmod(0o555)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        yield World(root, notes, read_only, busy.getsockname()[1], mounted=mounted)
    finally:
        busy.close()
        if mounted:
            subprocess.run(["umount", str(read_only)], check=True)
        else:
            read_only.chmod(0o755)


def make_files(w: World) -> None:
    """The folders and files the cases' configs name."""
    r = w.root
    (r / "not-utf8.toml").write_bytes(b'state_dir = "/tmp/caf\xe9"\n')
    (r / "a-folder").mkdir()
    (r / "a-folder" / "notewarden.toml").write_text(f'state_dir = "{r / "state"}"\n' + w.serving(w.notes))
    (r / "state-file").write_text("not a folder\n")
    (r / "open-state").mkdir()
    (r / "open-state").chmod(0o777)
    (r / "keys-state").mkdir(mode=0o700)
    (r / "keys-state" / "sealing-keys").write_text("ab" * 32 + "\n")
    (r / "keys-state" / "sealing-keys").chmod(0o644)
    (r / "link-to-notes").symlink_to(w.notes)
    (r / "a-file.md").write_text("x")
    (r / "home").mkdir()
    (r / "existing-export").mkdir()
    (r / "existing-export" / "x.md").write_text("x")


def corpus(w: World) -> list[Case]:
    r = w.root
    ok = w.config("ok.toml", w.serving(w.notes))
    state_file = w.config("state-file.toml", w.serving(w.notes), state=str(r / "state-file"))
    under_file = w.config("under-file.toml", w.serving(w.notes), state=str(r / "state-file" / "inner"))
    ro_parent = w.config("ro-parent.toml", w.serving(w.notes), state=str(w.read_only / "state"))
    open_state = w.config("open-state.toml", w.serving(w.notes), state=str(r / "open-state"))
    keys_open = w.config("keys-open.toml", w.serving(w.notes), state=str(r / "keys-state"))
    empty = w.config("empty.toml", "")
    gone = r / "gone-notes"
    missing_folder = w.config("missing-folder.toml", w.serving(gone))
    symlinked = w.config("symlinked.toml", w.serving(r / "link-to-notes"))
    file_ws = w.config("file-workspace.toml", w.serving(r / "a-file.md"))
    ro_ws = w.config("ro-workspace.toml", w.serving(w.read_only))
    no_stdio = w.config("no-stdio.toml", w.serving(w.notes, stdio=False))
    bad_syntax = w.config("bad-syntax.toml", "[[workspace]\nuri = 1\n")
    unknown_key = w.config("unknown-key.toml", w.serving(w.notes) + "[http]\nprot = 8765\n")
    bad_port = w.config("bad-port.toml", w.serving(w.notes) + "[http]\nport = 99999\n")
    pg = w.config(
        "pg.toml", w.serving(w.notes) + '[storage]\nnotes = "postgres"\nconnect_timeout_seconds = 0.5\n'
    )
    sqlite = w.config("sqlite.toml", w.serving(w.notes) + '[storage]\nnotes = "sqlite"\n')
    dead_pg = {"NOTEWARDEN_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/none"}
    home = {"HOME": str(r / "home"), "XDG_CONFIG_HOME": str(r / "home" / ".config")}
    existing = r / "existing-export"
    ws = f"file://{w.notes}"
    unwritable, unwritable_fix = (
        ("is on a read-only filesystem", f"or mount {w.read_only} read-write")
        if w.mounted
        else ("is not readable and writable by this user", f"sudo chown -R $USER {w.read_only}")
    )
    return [
        Case("doctor --config FOLDER", ["doctor", "--config", str(r / "a-folder")], CONFIG_ERROR,
             ["is a folder, not a file", f"fix: --config {r / 'a-folder' / 'notewarden.toml'}"], doctor=True),
        Case("serve --config FOLDER", ["serve", "--config", str(r)], CONFIG_ERROR,
             [f"config file {r} is a folder, not a file", "fix: pass the TOML file itself"]),
        Case("a config that is not UTF-8", ["serve", "--config", str(r / "not-utf8.toml")], CONFIG_ERROR,
             ["is not UTF-8 text (byte 0xe9", "fix: save it as UTF-8"]),
        Case("doctor: a config that is not UTF-8", ["doctor", "--config", str(r / "not-utf8.toml")],
             CONFIG_ERROR, ["is not UTF-8 text", "fix: save it as UTF-8"], doctor=True),
        Case("a config that does not exist", ["serve", "--config", str(r / "nope.toml")], CONFIG_ERROR,
             ["nope.toml does not exist", "fix: notewarden init DIR"]),
        Case("a config that is not TOML", ["serve", "--config", bad_syntax], CONFIG_ERROR,
             ["is not valid TOML", "line 2", "fix: correct that line"]),
        Case("an unknown key", ["serve", "--config", unknown_key], CONFIG_ERROR, ["prot", "port"]),
        Case("a port out of range", ["serve", "--config", bad_port], CONFIG_ERROR, ["port", "0-65535"]),
        Case("state_dir naming a file", ["serve", "--config", state_file], CONFIG_ERROR,
             [f"state dir {r / 'state-file'} is a file, not a folder", "fix: point state_dir"]),
        Case("doctor: state_dir naming a file", ["doctor", "--config", state_file], DOCTOR_FAIL,
             ["is a file, not a folder", "fix: point state_dir", "sealing keys   not checked"], doctor=True),
        Case("a state dir below a file", ["serve", "--config", under_file], CONFIG_ERROR,
             [f"{r / 'state-file'} is a file, not a folder", "fix: point state_dir"]),
        Case("a state dir whose parent is read-only", ["serve", "--config", ro_parent], CONFIG_ERROR,
             [f"state dir {w.read_only / 'state'} does not exist and cannot be created", "fix: choose a writable place"]),
        Case("doctor: a state dir whose parent is read-only", ["doctor", "--config", ro_parent], DOCTOR_FAIL,
             ["cannot be created", "fix: choose a writable place"], doctor=True),
        Case("a world-writable state dir", ["serve", "--config", open_state], CONFIG_ERROR,
             ["is writable by other users (mode drwxrwxrwx)", f"fix: chmod 700 {r / 'open-state'}"]),
        Case("doctor: a world-writable state dir", ["doctor", "--config", open_state], DOCTOR_FAIL,
             ["is writable by other users", f"fix: chmod 700 {r / 'open-state'}"], doctor=True),
        Case("a sealing key file others can read", ["serve", "--config", keys_open], CONFIG_ERROR,
             ["sealing-keys is readable by other users", "chmod 600"]),
        Case("doctor: a sealing key file others can read", ["doctor", "--config", keys_open], DOCTOR_FAIL,
             ["sealing-keys is readable by other users", "chmod 600"], doctor=True),
        Case("malformed NOTEWARDEN_SEALING_KEYS", ["serve", "--config", ok], CONFIG_ERROR,
             ["NOTEWARDEN_SEALING_KEYS", "fix: each key is 64 hex digits", "openssl rand -hex 32"], env={"NOTEWARDEN_SEALING_KEYS": "abc"}),
        Case("doctor: malformed NOTEWARDEN_SEALING_KEYS", ["doctor", "--config", ok], DOCTOR_FAIL,
             ["NOTEWARDEN_SEALING_KEYS", "fix: each key is 64 hex digits", "openssl rand -hex 32"],
             env={"NOTEWARDEN_SEALING_KEYS": "abc"}, doctor=True),
        Case("a config with no workspace", ["serve", "--config", empty], CONFIG_ERROR,
             ["has no [[workspace]]", "fix: add [[workspace]]", "notewarden init DIR"]),
        Case("doctor: a config with no workspace", ["doctor", "--config", empty], DOCTOR_FAIL,
             ["has no [[workspace]]", "fix: add [[workspace]]"], doctor=True),
        Case("a workspace folder that does not exist", ["serve", "--config", missing_folder], CONFIG_ERROR,
             [f"the folder {gone} does not exist", f"fix: mkdir -p {gone}, or remove that entry"]),
        Case("doctor: a workspace folder that does not exist", ["doctor", "--config", missing_folder],
             DOCTOR_FAIL, [f"the folder {gone} does not exist", f"fix: mkdir -p {gone}",
                           "trash owner    not checked"], doctor=True),
        Case("a workspace that is a symlink", ["serve", "--config", symlinked], CONFIG_ERROR,
             ["is a symbolic link", "fix: configure the folder it points to"]),
        Case("a workspace that is a file", ["serve", "--config", file_ws], CONFIG_ERROR,
             ["a-file.md is not a folder", "fix: point the entry at a folder"]),
        Case("a workspace that is not writable", ["serve", "--config", ro_ws], CONFIG_ERROR,
             [f"the folder {w.read_only} {unwritable}", "me may change notes there", "serve --read-only",
              unwritable_fix]),
        Case("doctor: a workspace that is not writable", ["doctor", "--config", ro_ws], DOCTOR_FAIL,
             [unwritable, "serve --read-only", unwritable_fix], doctor=True),
        Case("stdio without a [stdio] principal", ["serve", "--config", no_stdio], CONFIG_ERROR,
             ["has no [stdio] principal", 'fix: add [stdio] principal = "'],),
        Case("a port already in use",
             ["serve", "--config", ok, "--transport", "http", "--port", str(w.busy_port)], CONFIG_ERROR,
             [f"port {w.busy_port} on 127.0.0.1 is already in use", "--port N or [http] port"]),
        Case("a host that is not this machine's",
             ["serve", "--config", ok, "--transport", "http", "--host", "192.0.2.7", "--port", "0"], CONFIG_ERROR,
             ["192.0.2.7 is not an address of this machine", '[http] host = "127.0.0.1"']),
        Case("serve --workspace of a missing folder", ["serve", "--workspace", str(gone)], CONFIG_ERROR,
             [f"workspace directory '{gone}' does not exist"]),
        Case("--workspace over HTTP", ["serve", "--workspace", str(w.notes), "--transport", "http"],
             CONFIG_ERROR, ["--transport http needs --config FILE"]),
        Case("--rights with a typo", ["serve", "--workspace", str(w.notes), "--rights", "raed"], CONFIG_ERROR,
             ["--rights", "raed", "reader"]),
        Case("PostgreSQL without a database URL", ["serve", "--config", pg], CONFIG_ERROR,
             ["no database URL is set", "NOTEWARDEN_DATABASE_URL"], env={"NOTEWARDEN_DATABASE_URL": ""}),
        Case("PostgreSQL that nothing answers", ["serve", "--config", pg], DATABASE_ERROR,
             ["cannot connect to PostgreSQL at postgres@127.0.0.1:", "NOTEWARDEN_DATABASE_URL, and that the server is up"],
             env=dead_pg),
        Case("db status with nothing answering", ["db", "status", "--config", pg], DATABASE_ERROR,
             ["cannot connect to PostgreSQL", "and that the server is up"], env=dead_pg),
        Case("init of a folder that does not exist", ["init", str(gone)], CONFIG_ERROR,
             [f"'{gone}' does not exist"], env=home),
        Case("init --config naming a folder", ["init", str(w.notes), "--config", str(r / "a-folder")],
             CONFIG_ERROR, [f"{r / 'a-folder'} is a folder", "fix: "], env=home),
        Case("init over an existing config", ["init", str(w.notes), "--config", ok], CONFIG_ERROR,
             ["already exists", "notewarden token add"], env=home),
        Case("token add without a config", ["token", "add", "me"], CONFIG_ERROR,
             ["does not exist", "notewarden init"], env=home),
        Case("token add to a config that is a folder", ["token", "add", "me", "--config", str(r / "a-folder")],
             CONFIG_ERROR, ["is a folder, not a file", "fix: "], env=home),
        Case("token add for nobody", ["token", "add", "nobody", "--config", ok], CONFIG_ERROR,
             ["nobody", "--grant"], env=home),
        Case("token revoke with no token given", ["token", "revoke", "me", "--config", ok], CONFIG_ERROR,
             ["no token given on stdin", "--all"], env=home),
        Case("audit without a config", ["audit"], CONFIG_ERROR, ["does not exist", "notewarden init"], env=home),
        Case("audit --since nonsense", ["audit", "--config", ok, "--since", "someday"], CONFIG_ERROR,
             ["--since", "7d"]),
        Case("import into the files store", ["import", str(w.notes), "--config", ok, "--workspace", ws],
             CONFIG_ERROR, ["[storage] notes", "sqlite or postgres"]),
        Case("import of a missing folder", ["import", str(gone), "--config", sqlite, "--workspace", ws],
             STOPPED, [str(gone), "does not exist"]),
        Case("export into a folder that exists", ["export", str(existing), "--config", sqlite, "--workspace", ws],
             STOPPED, [str(existing), "already exists", "name one that does not exist"]),
        Case("takeover of a folder that is no workspace", ["takeover", str(r / "a-folder"), "--config", ok],
             CONFIG_ERROR, ["is not a workspace folder of", "configured:"]),
        Case("takeover of a missing folder", ["takeover", str(gone)], CONFIG_ERROR,
             [f"'{gone}' does not exist"]),
        Case("client --stdio of an unknown command", ["client", "--stdio", "no-such-notewarden --flag"],
             CONFIG_ERROR, ["'no-such-notewarden' was not found on PATH", "fix: give the server's full path"]),
        Case("client --url that is no URL", ["client", "--url", "localhost:8765"], CONFIG_ERROR,
             ["--url", "http://127.0.0.1:8765/mcp"]),
        Case("client --token-env of an unset variable",
             ["client", "--url", "http://127.0.0.1:1/mcp", "--token-env", "NW_UNSET_TOKEN"], CONFIG_ERROR,
             ["$NW_UNSET_TOKEN is not set", "export"]),
        Case("lint-form of a missing file", ["lint-form", str(r / "nope.json")], CONFIG_ERROR, ["nope.json"]),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def outcomes(
    world: World, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Case, dict[str, Any]]]:
    make_files(world)
    cases = corpus(world)
    work = tmp_path_factory.mktemp("driver")
    given = [{"argv": c.argv, "env": c.env, "stdin": c.stdin, "cwd": str(world.root)} for c in cases]
    (work / "cases.json").write_text(json.dumps(given))
    subprocess.run(
        [sys.executable, "-m", "tests.wire.setup_driver", work / "cases.json", work / "results.json"],
        check=True,
        timeout=600,
        env={**os.environ, "NOTEWARDEN_SEALING_KEYS": "", "NOTEWARDEN_DATABASE_URL": ""},
        cwd=Path(__file__).resolve().parents[2],
    )
    results = json.loads((work / "results.json").read_text())
    return {c.id: (c, r) for c, r in zip(cases, results, strict=True)}


def test_the_corpus_holds_at_least_25_broken_set_ups() -> None:
    assert len(NAMES) >= 25 and len(set(NAMES)) == len(NAMES)


NAMES = [c.id for c in corpus(World(Path("/x"), Path("/x/notes"), Path("/x/ro"), 1, dry=True))]


@pytest.mark.parametrize("case_id", NAMES)
def test_a_set_up_mistake_is_one_line_with_the_fix_and_the_documented_status(
    outcomes: dict[str, tuple[Case, dict[str, Any]]], case_id: str
) -> None:
    case, result = outcomes[case_id]
    shown = result["stdout"] + result["stderr"]
    assert "Traceback" not in shown, shown
    assert result["status"] == case.status, (result["status"], shown)
    if case.doctor:
        report = result["stdout"]
        assert report.count("  FAIL  ") == 1, report
        text = report
    else:
        lines = [line for line in result["stderr"].splitlines() if line.strip()]
        assert len(lines) == 1, result["stderr"]
        text = lines[0]
    for needle in case.says:
        assert needle in text, f"{needle!r} not in {text!r}"


SAME_SET_UP = [(name.removeprefix("doctor: "), name) for name in NAMES if name.startswith("doctor: ")]


@pytest.mark.parametrize(("serve_case", "doctor_case"), SAME_SET_UP)
def test_serve_refuses_what_doctor_fails_in_the_same_words(
    outcomes: dict[str, tuple[Case, dict[str, Any]]], serve_case: str, doctor_case: str
) -> None:
    """`serve` and `doctor` judge one set-up by the same function (`setup_checks`): serve's one line
    is doctor's FAIL, its problem and its fix, word for word."""
    _, doctor = outcomes[doctor_case]
    _, serve = outcomes[serve_case]
    report = doctor["stdout"].splitlines()
    [at] = [i for i, line in enumerate(report) if line.startswith("  FAIL  ")]
    what = report[at][len("  FAIL  ") + 15 :]
    fix = report[at + 1].removeprefix("        fix: ")
    assert report[at + 1].startswith("        fix: ") and what and fix, report
    assert serve["stderr"].strip() == f"notewarden: configuration error: {what}; fix: {fix}"
