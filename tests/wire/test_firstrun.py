"""`notewarden init`, `token add|revoke` and `doctor`, run as commands a person types.

Every client entry `init` prints is parsed as its client would read it; the TypeScript ones are
run with node against a real server, with the pinned `@modelcontextprotocol/client` of
tests/interop, and must negotiate 2026-07-28.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from notewarden.config import load_config
from notewarden.firstrun.commands import ENTRY_HEADING
from notewarden.scope.rights import FolderRights, parse_rights
from tests.conftest import HttpServer, free_port, sha256, start_http_server
from tests.wire.rawhttp import RawMcp

INTEROP = Path(__file__).resolve().parents[1] / "interop"
NOTEWARDEN = str(Path(sys.executable).parent / "notewarden")


def notewarden(
    *args: str | Path, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "notewarden", *map(str, args)],
        capture_output=True,
        text=True,
        input=stdin,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )


@dataclass
class Home:
    """A fresh user: HOME, XDG dirs and a notes folder under tmp."""

    root: Path
    notes: Path

    @property
    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.root),
            "XDG_CONFIG_HOME": str(self.root / ".config"),
            "XDG_STATE_HOME": str(self.root / ".local/state"),
        }

    @property
    def config(self) -> Path:
        return self.root / ".config/notewarden/notewarden.toml"


@pytest.fixture
def home(tmp_path: Path) -> Home:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "hello.md").write_text("# Hello\n\nfirst note\n")
    return Home(tmp_path, notes)


def entries_of(output: str) -> dict[str, str]:
    """The printed entries by client name: the text between one heading line and the next blank line."""
    out: dict[str, str] = {}
    for block in output.split("\n" + ENTRY_HEADING)[1:]:
        heading, _, body = block.partition("\n")
        out[heading.split(" ── ")[0]] = body.strip()
    return out


def token_of(output: str) -> str:
    line = next(line for line in output.splitlines() if line.startswith("  export NOTEWARDEN_TOKEN="))
    return line.split("=", 1)[1]


@pytest.fixture
def initialized(home: Home) -> Iterator[tuple[Home, dict[str, str], str, HttpServer]]:
    """`init --http`, then the HTTP server that config describes."""
    port = free_port()
    done = notewarden("init", home.notes, "--http", "--principal", "me", "--port", str(port), env=home.env)
    assert done.returncode == 0, done.stderr
    server = start_http_server(home.config, home.root / "server.log", env=home.env, port=port)
    yield home, entries_of(done.stdout), token_of(done.stdout), server
    server.stop()


def run_node(script: str, tmp_path: Path, env: dict[str, str]) -> str:
    """Run an ES module the way a user would, resolving the pinned SDK of tests/interop."""
    folder = tmp_path / "node-app"
    folder.mkdir(exist_ok=True)
    (folder / "node_modules").unlink(missing_ok=True)
    (folder / "node_modules").symlink_to(INTEROP / "node_modules")
    (folder / "app.mjs").write_text(script)
    done = subprocess.run(
        ["node", "app.mjs"], cwd=folder, capture_output=True, text=True, timeout=60, env={**os.environ, **env}
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_init_writes_a_config_and_every_entry_parses(
    initialized: tuple[Home, dict[str, str], str, HttpServer], tmp_path: Path
) -> None:
    home, entries, token, server = initialized
    config = load_config(home.config)
    assert [u.path for u in config.workspaces] == [str(home.notes)]
    assert config.principal_for_token(token) == "me" and config.stdio_principal == "me"
    assert token not in home.config.read_text(), "only the hash is stored"
    assert home.config.stat().st_mode & 0o777 == 0o600
    stdio_args = ["serve", "--config", str(home.config)]

    for client, key, shape in (("Claude Desktop", "mcpServers", {}), ("Cursor", "mcpServers", {})):
        assert json.loads(entries[client])[key]["notes"] == {
            "command": NOTEWARDEN,
            "args": stdio_args,
            **shape,
        }
    assert json.loads(entries["VS Code"])["servers"]["notes"] == {
        "type": "stdio",
        "command": NOTEWARDEN,
        "args": stdio_args,
    }
    assert shlex.split(entries["Claude Code"]) == [
        "claude",
        "mcp",
        "add",
        "notes",
        "--",
        NOTEWARDEN,
        *stdio_args,
    ]

    url = server.url
    vscode = json.loads(entries["VS Code (HTTP)"])
    assert vscode["servers"]["notes"] == {
        "type": "http",
        "url": url,
        "headers": {"Authorization": "Bearer ${input:notewarden-token}"},
    }
    assert vscode["inputs"][0]["id"] == "notewarden-token" and vscode["inputs"][0]["password"] is True
    cursor = json.loads(entries["Cursor (HTTP)"])["mcpServers"]["notes"]
    assert cursor == {"url": url, "headers": {"Authorization": "Bearer ${env:NOTEWARDEN_TOKEN}"}}
    assert shlex.split(entries["Claude Code (HTTP)"]) == [
        "claude", "mcp", "add", "--scope", "project", "--transport", "http", "notes", url,
        "--header", "Authorization: Bearer ${NOTEWARDEN_TOKEN}",
    ]  # fmt: skip
    # run as printed, in a shell where the token is set: `claude` is given the reference, not the token
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "claude").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$0.argv"\n')
    (fake / "claude").chmod(0o755)
    subprocess.run(
        ["sh", "-c", entries["Claude Code (HTTP)"]],
        env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "NOTEWARDEN_TOKEN": token},
        check=True,
    )
    given = (fake / "claude.argv").read_text()
    assert token not in given and "Authorization: Bearer ${NOTEWARDEN_TOKEN}" in given

    for name, env in (
        ("TypeScript SDK (@modelcontextprotocol/client 2.x)", home.env),
        ("TypeScript SDK (HTTP)", {"NOTEWARDEN_TOKEN": token}),
    ):
        assert 'versionNegotiation: { mode: "auto" }' in entries[name]
        printed = run_node(entries[name], tmp_path, env)
        assert "protocol: 2026-07-28" in printed, (name, printed)
        assert "notes_delete" in printed


def test_init_never_replaces_a_config(home: Home) -> None:
    assert notewarden("init", home.notes, env=home.env).returncode == 0
    before = home.config.read_text()
    again = notewarden("init", home.notes, "--http", env=home.env)
    assert again.returncode == 2
    assert "already exists" in again.stderr and "notewarden token add" in again.stderr
    assert home.config.read_text() == before
    missing = notewarden("init", home.root / "nope", "--config", home.root / "other.toml", env=home.env)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_token_add_and_revoke(home: Home) -> None:
    assert notewarden("init", home.notes, "--principal", "me", env=home.env).returncode == 0
    home.config.write_text(home.config.read_text() + "# my own note, kept\n")
    added = notewarden("token", "add", "me", env=home.env)
    assert added.returncode == 0, added.stderr
    first = token_of(added.stdout)
    second = token_of(notewarden("token", "add", "me", env=home.env).stdout)
    config = load_config(home.config)
    assert config.principal_for_token(first) == config.principal_for_token(second) == "me"
    assert "# my own note, kept" in home.config.read_text()

    unknown = notewarden("token", "add", "bob", env=home.env)
    assert unknown.returncode == 2 and "--grant" in unknown.stderr
    bob = notewarden("token", "add", "bob", "--grant", f"file://{home.notes}", env=home.env)
    assert load_config(home.config).principal_for_token(token_of(bob.stdout)) == "bob"

    wrong = notewarden("token", "revoke", "me", env=home.env, stdin="nw_not-one-of-mine\n")
    assert wrong.returncode == 2 and "nothing was changed" in wrong.stderr
    revoked = notewarden("token", "revoke", "me", env=home.env, stdin=first + "\n")
    assert revoked.returncode == 0, revoked.stderr
    config = load_config(home.config)
    assert config.principal_for_token(first) is None and config.principal_for_token(second) == "me"
    assert first not in revoked.stdout + revoked.stderr
    assert notewarden("token", "revoke", "me", "--all", env=home.env).returncode == 0
    assert load_config(home.config).principal_for_token(second) is None


def doctor(home: Home, *args: str) -> tuple[int, str]:
    done = notewarden("doctor", *args, env=home.env)
    return done.returncode, done.stdout


def test_doctor_passes_a_fresh_config_and_names_each_fix(home: Home) -> None:
    status, _ = doctor(home)
    assert status == 2, "no config yet"
    assert notewarden("init", home.notes, env=home.env).returncode == 0
    status, report = doctor(home)
    assert status == 0, report
    for topic in ("config", "workspace", "state dir", "trash owner", "sandbox", "inotify", "sealing keys"):
        assert f"  {topic}" in report

    home.notes.rename(home.root / "moved")
    status, report = doctor(home)
    assert status == 1
    assert f"FAIL  workspace      {home.config}: [[workspace]] #1" in report
    assert f"the folder {home.notes} does not exist" in report
    assert report.count("  FAIL  ") == 1, "no second failure for the same folder"
    assert f"fix: mkdir -p {home.notes}" in report
    (home.root / "moved").rename(home.notes)

    state = home.root / ".local/state/notewarden"
    state.mkdir(parents=True)
    state.chmod(0o777)
    status, report = doctor(home)
    assert status == 1 and f"fix: chmod 700 {state}" in report
    state.chmod(0o700)
    bad_keys = notewarden("doctor", env={**home.env, "NOTEWARDEN_SEALING_KEYS": "abc"})
    assert bad_keys.returncode == 1 and "FAIL  sealing keys" in bad_keys.stdout


@pytest.mark.anyio
async def test_doctor_finds_one_folder_served_from_two_state_dirs(home: Home) -> None:
    """`serve --workspace DIR` (default state dir) beside a config with its own state_dir."""
    own_state = home.root / "server-state"
    assert notewarden("init", home.notes, "--state-dir", own_state, env=home.env).returncode == 0
    assert doctor(home)[0] == 0
    desktop = StdioServerParameters(
        command=sys.executable,
        args=["-m", "notewarden", "serve", "--workspace", str(home.notes)],
        env={**os.environ, **home.env},
    )
    async with Client(desktop, mode="2026-07-28") as client:
        found: Any = await client.call_tool(
            "notes_search", {"workspaceUri": f"file://{home.notes}", "query": "first"}
        )
        assert found.structured_content["results"], found
    status, report = doctor(home)
    assert status == 0, report  # the desktop server marked the folder first; this config shares its ledger
    desktop_ledger = home.root / ".local/state/notewarden/notewarden.sqlite3"
    assert (
        f"WARN  trash owner    {home.notes} is owned by the SQLite ledger of state dir {desktop_ledger.parent}"
        in report
    ), report
    assert f'serve the folder from one config: state_dir = "{desktop_ledger.parent}"' in report


# --- rights: init writes them, tokens carry them, doctor shows them ----------------------------------

READ_TOOLS = {
    "notes_list", "notes_search", "notes_read", "notes_read_many", "notes_history", "notes_tags",
    "notes_links", "notes_recent", "notes_trash_list", "notes_similar", "notes_health",
}  # fmt: skip


def edit_hello(client: RawMcp, home: Home) -> dict[str, Any]:
    args = {"workspaceUri": f"file://{home.notes}", "noteId": "hello.md"}
    reply = client.call("notes_edit", {**args, "edits": [{"op": "append", "text": "edited"}]})
    assert reply.status == 200, reply.text
    return reply.result


def test_init_writes_the_rights_explicitly_with_the_bundles_and_a_grant_example(home: Home) -> None:
    done = notewarden("init", home.notes, "--principal", "me", env=home.env)
    assert done.returncode == 0, done.stderr
    text = home.config.read_text()
    assert '\nrights = ["maintainer"]\n' in text
    for bundle, rights in (
        ("reader", "read"),
        ("editor", "read, write"),
        ("maintainer", "read, write, delete"),
        ("owner", "read, write, delete, purge, publish"),
    ):
        assert re.search(rf"^#   {bundle} += {rights} ", text, re.MULTILINE), bundle
    assert '"maintainer" leaves out purge' in text and 'add them with rights = ["owner"]' in text
    config = load_config(home.config)
    assert list(config.principals["me"].grants.values()) == [
        (FolderRights((), parse_rights(["maintainer"])),)
    ]
    # the commented example, uncommented, is a working grant
    example = re.search(r"^# (\[\[principal\.grant\]\]\n)# (uri = .*\n)# (rights = .*)$", text, re.MULTILINE)
    assert example is not None, text
    home.config.write_text(text.replace(example.group(0), "".join(example.groups())))
    grants = next(iter(load_config(home.config).principals["me"].grants.values()))
    assert FolderRights(("Archive",), parse_rights(["purge"])) in grants

    printed = done.stdout
    assert "with the rights read, write, delete (maintainer)." in printed
    assert 'Left out: purge, publish; add them with rights = ["owner"]' in printed
    assert f"notewarden serve --config {home.config} --read-only" in printed
    assert "notewarden token add me --rights reader" in printed


def test_init_rights_option(home: Home) -> None:
    other = home.root / "reader.toml"
    typo = notewarden("init", home.notes, "--rights", "reader,wrte", "--config", other, env=home.env)
    assert typo.returncode == 2 and not other.exists()
    assert "--rights: 'wrte' is not a right; use read, write, delete, purge, publish" in typo.stderr
    done = notewarden("init", home.notes, "--rights", "editor, publish", "--config", other, env=home.env)
    assert done.returncode == 0, done.stderr
    assert '\nrights = ["editor", "publish"]\n' in other.read_text()
    assert "with the rights read, write, publish (editor, publish)." in done.stdout
    assert "Left out: delete, purge;" in done.stdout


def test_a_token_made_with_rights_carries_only_them_over_http(
    initialized: tuple[Home, dict[str, str], str, HttpServer],
) -> None:
    home, _, full_token, server = initialized
    home.config.write_text(home.config.read_text() + "# my own note, kept\n")
    before = home.config.read_bytes()
    typo = notewarden("token", "add", "me", "--rights", "reed", env=home.env)
    assert typo.returncode == 2
    assert (
        "--rights: 'reed' is not a right; use read, write, delete, purge, publish or a bundle" in typo.stderr
    )
    assert home.config.read_bytes() == before, "nothing is written"

    added = notewarden("token", "add", "me", "--rights", "read", env=home.env)
    assert added.returncode == 0, added.stderr
    assert "It carries only read (read)." in added.stdout
    reader = token_of(added.stdout)
    document = tomllib.loads(home.config.read_text())
    assert document["principal"][0]["token"] == [{"sha256": sha256(reader), "rights": ["read"]}]
    assert "# my own note, kept" in home.config.read_text()
    assert load_config(home.config).credential_for_token(reader) == ("me", parse_rights(["read"]))

    client = RawMcp(server.url, reader)  # the server reads the edited file on this request
    assert {t["name"] for t in client.request("tools/list").result["tools"]} == READ_TOOLS
    listed = client.call("notes_list", {"workspaceUri": f"file://{home.notes}"})
    assert [n["id"] for n in listed.result["structuredContent"]["notes"]] == ["hello.md"]
    refused = edit_hello(client, home)
    error = refused["structuredContent"]["error"]
    assert refused["isError"] and error["code"] == "right_missing" and error["right"] == "write"
    assert "your credential carries only read: use one with write" in error["message"], error
    client.close()
    assert (home.notes / "hello.md").read_text() == "# Hello\n\nfirst note\n"
    full = RawMcp(server.url, full_token)
    assert not edit_hello(full, home).get("isError"), "the principal itself may write"
    full.close()

    wider = notewarden("token", "add", "me", "--rights", "owner", env=home.env)
    assert wider.returncode == 0, wider.stderr
    assert "It carries only read, write, delete (owner)." in wider.stdout
    assert "'me' is not granted purge, publish, so neither is the token" in wider.stdout


def test_revoke_finds_a_token_in_either_form(home: Home) -> None:
    assert notewarden("init", home.notes, "--principal", "me", env=home.env).returncode == 0
    made = {
        rights: token_of(notewarden("token", "add", "me", *rights, env=home.env).stdout)
        for rights in ((), ("--rights", "reader"), ("--rights", "editor"))
    }
    config = load_config(home.config)
    assert {config.credential_for_token(t) for t in made.values()} == {
        ("me", None),
        ("me", parse_rights(["reader"])),
        ("me", parse_rights(["editor"])),
    }
    narrowed = made[("--rights", "reader")]
    revoked = notewarden("token", "revoke", "me", env=home.env, stdin=narrowed + "\n")
    assert revoked.returncode == 0, revoked.stderr
    assert "Revoked 1 token(s)" in revoked.stdout and narrowed not in revoked.stdout + revoked.stderr
    config = load_config(home.config)
    assert config.principal_for_token(narrowed) is None
    assert (
        config.principal_for_token(made[()])
        == config.principal_for_token(made[("--rights", "editor")])
        == "me"
    )
    again = notewarden("token", "revoke", "me", env=home.env, stdin=narrowed + "\n")
    assert again.returncode == 2 and "nothing was changed" in again.stderr

    everything = notewarden("token", "revoke", "me", "--all", env=home.env)
    assert everything.returncode == 0 and "Revoked 2 token(s)" in everything.stdout
    document = tomllib.loads(home.config.read_text())
    assert "token" not in document["principal"][0] and "token_sha256" not in document["principal"][0]
    assert all(load_config(home.config).principal_for_token(t) is None for t in made.values())
    none_left = notewarden("token", "revoke", "me", "--all", env=home.env)
    assert none_left.returncode == 2 and "has no tokens" in none_left.stderr


def test_doctor_shows_rights_per_grant_and_warns_when_nobody_may_publish(home: Home) -> None:
    assert notewarden("init", home.notes, "--principal", "me", env=home.env).returncode == 0
    status, report = doctor(home)
    assert status == 0, report
    assert f"  ok    rights         me: file://{home.notes} read, write, delete (maintainer)\n" in report
    text = home.config.read_text()
    home.config.write_text(
        text.replace(
            "\n[stdio]",
            f'\n[[principal.grant]]\nuri = "file://{home.notes}/Drafts"\nrights = ["publish"]\n\n[stdio]',
        )
        .replace('rights = ["maintainer"]', 'rights = ["editor"]')
        .replace("\n[stdio]", '\n[[principal]]\nid = "nobody"\n\n[stdio]')
    )
    status, report = doctor(home)
    assert status == 0, report
    assert (
        f"  ok    rights         me: file://{home.notes} read, write (editor); "
        f"file://{home.notes}/Drafts read, publish\n" in report
    ), report
    assert "  WARN  rights         nobody holds no rights anywhere" in report

    home.config.write_text(
        text
        + '\n[publish]\n[[publish.target]]\nid = "blog"\ntitle = "Team blog"\n'
        + 'url = "https://blog.example.com/api/notes"\nauth = "bearer"\n'
    )
    status, report = doctor(home)
    assert status == 0, report
    assert (
        "  WARN  rights         1 [publish] target(s) configured, but no principal holds the right publish"
        in report
    )
    assert (
        'fix: add publish to the rights of who may publish, e.g. rights = ["maintainer", "publish"]' in report
    )
    home.config.write_text(home.config.read_text().replace('rights = ["maintainer"]', 'rights = ["owner"]'))
    status, report = doctor(home)
    assert "[publish] target(s)" not in report
    assert f"me: file://{home.notes} read, write, delete, purge, publish (owner)" in report
