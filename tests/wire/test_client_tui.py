"""`notewarden client` driven as a person would: keys typed into a pseudo-terminal (pexpect).

The host runs the real server over stdio (or HTTP with a bearer token from the
environment); assertions read what the terminal shows and what happened on disk.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator

import pexpect
import pytest

from tests.conftest import ALICE_TOKEN, Deployment, HttpServer, start_http_server
from tests.wire.publishing import RecordingTarget, add_publish_config

TPS_2019 = "reports/tps-2019.md"


def spawn(args: list[str], env: dict[str, str] | None = None) -> pexpect.spawn:
    command = shlex.join([sys.executable, "-m", "notewarden", "client", *args])
    child = pexpect.spawn(
        "/bin/sh",
        ["-c", command],
        env={**os.environ, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", **(env or {})},
        encoding="utf-8",
        timeout=30,
        dimensions=(60, 220),
    )
    child.expect("connected to notewarden")
    child.expect("mcp>")
    return child


@pytest.fixture
def host(deployment: Deployment) -> Iterator[pexpect.spawn]:
    server = shlex.join([sys.executable, "-m", "notewarden", "serve", "--config", str(deployment.config)])
    child = spawn(["--stdio", server])
    yield child
    child.close(force=True)


def call_delete(child: pexpect.spawn, deployment: Deployment) -> None:
    child.sendline(f'call notes_delete {{"workspaceUri": "{deployment.notes_uri}", "title": "TPS report"}}')
    child.expect("the server asks")
    child.expect("Note to delete")
    child.expect(r"\[a\]ccept and fill in / \[d\]ecline / \[c\]ancel")


def quit_host(child: pexpect.spawn) -> None:
    child.expect("mcp>")
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_list_call_pick_confirm_and_see_the_result(host: pexpect.spawn, deployment: Deployment) -> None:
    host.sendline("list")
    host.expect(r"notes_delete \[destructive\]")
    host.expect(r"arguments: workspaceUri, title, noteIds")
    host.expect(r"notes_list \[read-only\]")
    host.expect("mcp>")
    call_delete(host, deployment)
    host.sendline("a")
    host.expect(r"1\) TPS report — draft")
    host.expect(r"2\) TPS report 2019 \(old\) — reports/tps-2019.md")
    host.expect(r"note_id \[1-3\]")
    host.sendline("9")
    host.expect("enter a number from 1 to 3")  # refused before anything is sent
    host.send("\x15")  # Ctrl-U: clear the line, as a person would
    host.sendline("2")
    host.expect(r"confirm \[y/N\]")
    host.sendline("y")
    host.expect(r'You answer: \{"note_id": "reports/tps-2019.md", "confirm": true\}')
    host.sendline("a")
    host.expect("Moved “TPS report 2019 \\(old\\)”")
    host.expect('"outcome": "deleted"')
    quit_host(host)
    assert not (deployment.notes / TPS_2019).exists()
    assert (deployment.notes / "reports/tps-2026-q3.md").exists()


@pytest.mark.parametrize(
    ("key", "shown"), [("d", "Declined: nothing was deleted."), ("c", "Cancelled: nothing")]
)
def test_decline_and_cancel_delete_nothing(
    host: pexpect.spawn, deployment: Deployment, key: str, shown: str
) -> None:
    call_delete(host, deployment)
    host.sendline(key)
    host.expect(shown)
    quit_host(host)
    assert (deployment.notes / TPS_2019).exists()


def test_ctrl_c_while_filling_the_form_cancels(host: pexpect.spawn, deployment: Deployment) -> None:
    call_delete(host, deployment)
    host.sendline("a")
    host.expect(r"note_id \[1-3\]")
    host.sendcontrol("c")
    host.expect("→ cancel")
    host.expect("Cancelled: nothing")
    quit_host(host)
    assert (deployment.notes / TPS_2019).exists()


def test_arguments_are_asked_one_by_one(host: pexpect.spawn, deployment: Deployment) -> None:
    host.sendline("call notes_list")
    host.expect(r"workspaceUri\* \(string\)")
    host.sendline(deployment.notes_uri)
    host.expect(TPS_2019)
    quit_host(host)


def test_url_mode_shows_the_full_url_and_asks_before_opening(deployment: Deployment) -> None:
    target = RecordingTarget().start()
    add_publish_config(deployment, target)
    server: HttpServer = start_http_server(deployment.config, deployment.root / "server.log")
    try:
        child = spawn(
            ["--url", server.url, "--token-env", "NW_TEST_TOKEN"], env={"NW_TEST_TOKEN": ALICE_TOKEN}
        )
        child.sendline(
            f'call notes_publish {{"workspaceUri": "{deployment.notes_uri}", "noteId": "{TPS_2019}", '
            '"target": "blog"}'
        )
        child.expect(rf"URL: http://127\.0\.0\.1:{server.port}/connect/[A-Za-z0-9_-]{{24}}\r\n")
        child.expect(
            r"\[o\]pen it in a browser / \[a\]ccept, I will open it myself / \[d\]ecline / \[c\]ancel"
        )
        child.sendline("d")
        child.expect("Declined: nothing was published.")
        quit_host(child)
        assert target.received == []
    finally:
        server.stop()
        target.stop()
