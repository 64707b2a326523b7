"""Issue 26, the console: one start-up block a person can read on a terminal (address, workspaces,
authentication, storage, sandbox), JSON lines otherwise, no ANSI escape in either, no line twice."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import urllib.request

import pexpect

from tests.conftest import ALICE_TOKEN, Deployment, free_port, start_http_server


def test_on_a_terminal_serve_shows_one_plain_start_up_block(deployment: Deployment) -> None:
    port = free_port()
    command = [sys.executable, "-m", "notewarden", "serve", "--config", str(deployment.config)]
    child = pexpect.spawn(
        shlex.join([*command, "--transport", "http", "--port", str(port)]),
        env={**os.environ, "TERM": "xterm", "COLUMNS": "200"},
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 200),
    )
    try:
        child.expect("Stop it with Ctrl-C.")
        block = str(child.before).replace("\r\n", "\n")
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/mcp", headers={"Authorization": f"Bearer {ALICE_TOKEN}"}
        )
        with contextlib.suppress(OSError):  # a GET without a session: any answer does, the server logs
            urllib.request.urlopen(request, timeout=10)
        child.sendintr()
        child.expect(pexpect.EOF)
        after = str(child.before)
    finally:
        child.close(force=True)
    assert f"is serving over HTTP at http://127.0.0.1:{port}/mcp" in block
    assert f"workspaces      {deployment.notes_uri} (trash marked now for this server's ledger)" in block
    assert f"                {deployment.private_uri} (trash" in block
    assert "authentication  bearer tokens of alice (1), bob (1); Host and Origin checked" in block
    assert (
        f"storage         notes in the workspace folders; confirmations in the SQLite ledger of state dir {deployment.state}"
        in block
    )
    assert "sandbox         " in block
    everything = block + after
    assert "\x1b[" not in everything, "no ANSI escape"
    assert '{"ts"' not in everything, "plain text on a terminal, not JSON"
    assert everything.count("session manager started") <= 1


def test_elsewhere_serve_writes_json_lines_without_escapes_or_duplicates(deployment: Deployment) -> None:
    log = deployment.root / "server.log"
    server = start_http_server(deployment.config, log)
    try:
        request = urllib.request.Request(server.url, headers={"Authorization": f"Bearer {ALICE_TOKEN}"})
        with contextlib.suppress(OSError):
            urllib.request.urlopen(request, timeout=10)
    finally:
        server.stop()
    text = log.read_text()
    records = [json.loads(line) for line in text.splitlines()]
    assert "\x1b" not in text and not any("color_message" in r for r in records)
    [started] = [r for r in records if r.get("event") == "started"]
    assert started["url"] == server.url and started["transport"] == "http"
    for fact in ("workspaces", "authentication", "storage", "sandbox"):
        assert started[fact], fact
    messages = [r["msg"] for r in records]
    assert messages.count("StreamableHTTP session manager started") == 1, messages
    assert len(messages) == len(set(messages)), f"a line written twice: {messages}"


def test_serve_says_what_doctor_says_of_a_folder_another_state_dir_owns(deployment: Deployment) -> None:
    """A throw-away `serve` marks the vault for its state dir: said in its start-up block; a server
    with another state dir then warns in doctor's words, with the fix."""

    def serve(*args: str) -> list[dict[str, object]]:
        done = subprocess.run(
            [sys.executable, "-m", "notewarden", "serve", *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return [json.loads(line) for line in done.stderr.splitlines()]

    other = deployment.root / "throw-away-state"
    first = serve("--workspace", str(deployment.notes), "--state-dir", str(other))
    [started] = [r for r in first if r.get("event") == "started"]
    assert "(trash marked now for this server's ledger)" in str(started["workspaces"])
    again = serve("--config", str(deployment.config))
    [shared] = [r for r in again if r.get("event") == "trash_owner" and r["rule"] == "shared"]
    assert shared["level"] == "warning"
    assert f"is owned by the SQLite ledger of state dir {other}" in str(shared["msg"])
    assert f'fix: serve the folder from one config: state_dir = "{other}"' in str(shared["msg"])
