"""`notewarden client` driven as a person would: keys typed into a pseudo-terminal (pexpect).

The host runs the real server over stdio (or HTTP with a bearer token from the
environment); assertions read what the terminal shows and what happened on disk.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.conftest import ALICE_TOKEN, Deployment, HttpServer, free_port, sha256, start_http_server
from tests.wire.publishing import RecordingTarget, add_publish_config

TPS_2019 = "reports/tps-2019.md"


def spawn(
    args: list[str], env: dict[str, str] | None = None, *, columns: int = 220, connected: bool = True
) -> pexpect.spawn:
    command = shlex.join([sys.executable, "-m", "notewarden", "client", *args])
    child = pexpect.spawn(
        "/bin/sh",
        ["-c", command],
        env={
            **os.environ,
            "TERM": "xterm",
            "PROMPT_TOOLKIT_NO_CPR": "1",
            "COLUMNS": str(columns),
            **(env or {}),
        },
        encoding="utf-8",
        timeout=30,
        dimensions=(60, columns),
    )
    if connected:
        child.expect("connected to notewarden")
        child.expect("mcp>")
    return child


def stdio_server(deployment: Deployment) -> str:
    return shlex.join([sys.executable, "-m", "notewarden", "serve", "--config", str(deployment.config)])


@pytest.fixture
def host(deployment: Deployment) -> Iterator[pexpect.spawn]:
    child = spawn(["--stdio", stdio_server(deployment)])
    yield child
    child.close(force=True)


def call_delete(child: pexpect.spawn, deployment: Deployment) -> str:
    """Call notes_delete with a title; returns what was shown up to the accept/decline/cancel choice."""
    child.sendline(f'call notes_delete {{"workspaceUri": "{deployment.notes_uri}", "title": "TPS report"}}')
    child.expect("the server asks")
    child.expect(r"\[a\]ccept and fill in / \[d\]ecline / \[c\]ancel")
    return str(child.before)


def quit_host(child: pexpect.spawn) -> str:
    """Leave; returns everything shown since the last expectation."""
    child.expect("mcp>")
    child.sendline("quit")
    child.expect(pexpect.EOF)
    rest = str(child.before)
    child.close()
    assert child.exitstatus == 0
    return rest


def test_list_call_pick_confirm_and_see_the_result(host: pexpect.spawn, deployment: Deployment) -> None:
    host.sendline("list")
    host.expect(r"notes_delete \[destructive\]")
    host.expect(r"arguments: workspaceUri, title, noteIds")
    host.expect(r"notes_list \[read-only\]")
    host.expect("mcp>")
    form = call_delete(host, deployment)
    # the whole form, every choice, before the person is asked to accept, decline or cancel
    assert "Note to delete (required)" in form
    assert "1) TPS report — draft" in form and "2) TPS report 2019 (old) — reports/tps-2019.md" in form
    assert "Yes, move the selected note to the trash" in form
    host.sendline("a")
    host.expect(r"Note to delete \[1-3\]")
    host.sendline("9")
    host.expect("enter a number from 1 to 3")  # refused before anything is sent
    host.expect(r"Note to delete \[1-3\]:")  # asked again, on an empty line
    host.sendline("2")
    host.expect(r"Yes, move the selected note to the trash \[y/N\]")
    host.sendline("y")
    host.expect("You answer:")
    host.expect("send it?")
    summary = str(host.before)
    assert "Note to delete: TPS report 2019 (old) — reports/tps-2019.md" in summary, "titles, not ids"
    assert "Yes, move the selected note to the trash: yes" in summary
    host.sendline("a")
    host.expect("── result")
    host.expect("mcp>")
    rest = str(host.before)
    host.sendline("")
    quit_host(host)
    assert rest.count("TPS report 2019 (old)") == 1, f"the result is printed once:\n{rest}"
    assert '"outcome"' not in rest
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


def test_a_cancelled_confirmation_is_answered_again(host: pexpect.spawn, deployment: Deployment) -> None:
    call_delete(host, deployment)
    host.sendline("c")
    host.expect("Cancelled: nothing")
    host.expect(r"Type 'again' to answer it again \(until \d{4}-\d\d-\d\dT")
    host.expect("mcp>")
    host.sendline("again")
    host.expect("Note to delete")
    host.expect(r"\[a\]ccept and fill in")
    host.sendline("a")
    host.expect(r"Note to delete \[1-3\]")
    host.sendline("2")
    host.expect(r"Yes, move the selected note to the trash \[y/N\]")
    host.sendline("y")
    host.expect("send it?")
    host.sendline("a")
    host.expect("Moved “TPS report 2019")
    host.expect("mcp>")
    host.sendline("again")
    host.expect("nothing to answer again")
    quit_host(host)
    assert not (deployment.notes / TPS_2019).exists()


def test_ctrl_c_while_filling_the_form_cancels(host: pexpect.spawn, deployment: Deployment) -> None:
    call_delete(host, deployment)
    host.sendline("a")
    host.expect(r"Note to delete \[1-3\]")
    host.sendcontrol("c")
    host.expect("→ cancel")
    host.expect("Cancelled: nothing")
    quit_host(host)
    assert (deployment.notes / TPS_2019).exists()


def test_only_required_arguments_are_asked_and_the_only_workspace_is_the_default(
    host: pexpect.spawn, deployment: Deployment
) -> None:
    host.sendline("call notes_list")
    host.expect(rf"workspaceUri = {deployment.notes_uri} \(the only workspace granted to you\)")
    host.expect(r"optional cursor, limit \(name to set, Enter to call\)")
    host.sendline("")
    host.expect(TPS_2019)
    host.expect("mcp>")
    host.sendline("call notes_delete")
    host.expect(r"optional title, noteIds \(name to set, Enter to call\)")
    host.sendline("nope")
    host.expect("type one of: title, noteIds")
    host.sendline("title")
    host.expect("title:")
    host.sendline("stand-up")
    host.expect(r"optional noteIds \(name to set, Enter to call\)")
    host.sendline("")
    host.expect("Stand-up notes")
    host.sendline("d")
    host.expect("Declined")
    quit_host(host)


def test_text_is_wrapped_at_word_boundaries(deployment: Deployment) -> None:
    child = spawn(["--stdio", stdio_server(deployment)], columns=50)
    form = call_delete(child, deployment)
    lines = [line.rstrip() for line in form.replace("\r", "").splitlines()]
    long = [line for line in lines if len(line) > 50 and " " in line.strip()]  # one long URI may overflow
    assert not long, long
    words = " ".join(form.split())
    for phrase in ("Yes, move the selected note to the trash", "TPS report — draft"):
        assert phrase in words, "a phrase broken mid-word"
    child.sendline("c")
    quit_host(child)


def test_form_text_from_the_server_is_shown_escaped(deployment: Deployment, host: pexpect.spawn) -> None:
    (deployment.notes / "evil.md").write_text("# TPS report \u202egpj.exe\n")
    form = call_delete(host, deployment)
    assert "TPS report \\u202egpj.exe" in form and "\u202e" not in form
    host.sendline("d")
    quit_host(host)


def test_failures_name_their_cause_and_leave_no_files(deployment: Deployment, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    server = start_http_server(deployment.config, deployment.root / "server.log")
    try:
        cases = [
            (
                ["--url", server.url, "--token-env", "NW_T"],
                {"NW_T": "wrong-token"},
                f"401: token not accepted by {server.url}",
            ),
            (["--url", server.url], {}, "(none was sent: pass --token-env VAR"),
            (["--url", f"http://127.0.0.1:{free_port()}/mcp"], {}, "cannot reach http://127.0.0.1:"),
            (
                ["--stdio", f"{sys.executable} -m notewarden serve --workspace {tmp_path}/gone"],
                {},
                f"server exited: notewarden: configuration error: workspace directory '{tmp_path}/gone' does not exist",
            ),
        ]
        for args, env, reason in cases:
            child = spawn(args, {**env, "TMPDIR": str(tmp)}, connected=False)
            child.expect(pexpect.EOF)
            shown = str(child.before)
            child.close()
            assert child.exitstatus == 1, shown
            assert reason in shown.replace("\r\n", "\n"), shown
            assert "ExceptionGroup" not in shown and "Traceback" not in shown
    finally:
        server.stop()
    host = spawn(["--stdio", stdio_server(deployment)], {"TMPDIR": str(tmp)})
    host.sendline("list")
    quit_host(host)
    assert list(tmp.iterdir()) == [], "the client left files behind"


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


# --- issue 26: results for reading, Tab, titles, examples, the only workspace, URL mode, a 401 --------

ANSI_BOLD_YELLOW = "\x1b[1;33m"


def leave(child: pexpect.spawn) -> None:
    """Quit at the prompt `result_of` has just seen."""
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def result_of(child: pexpect.spawn) -> str:
    """What the last call showed, from its result line to the next prompt."""
    child.expect("── result")
    child.expect("mcp>")
    return str(child.before).replace("\r\n", "\n")


def test_results_are_rendered_for_reading_and_json_on_request(
    host: pexpect.spawn, deployment: Deployment
) -> None:
    (deployment.notes / "reports/tps-2019.md").write_text(
        "---\ntitle: TPS report 2019 (old)\naliases:\n  - old tps\n---\n# Cover\n\nCover sheet **missing**.\n\n- one\n- two\n"
    )
    host.sendline('call notes_search {"query": "TPS report"}')  # the only workspace filled in, JSON too
    host.expect(rf"workspaceUri = {deployment.notes_uri} \(the only workspace granted to you\)")
    search = result_of(host)
    assert " 1. " in search and " 2. " in search, "a ranked list"
    assert "reports/tps-2019.md" in search and "TPS report 2019 (old)" in search
    assert f"{ANSI_BOLD_YELLOW}TPS\x1b[0m" in search, "the matched words highlighted"
    assert '"results"' not in search and '{"' not in search, "not JSON"

    host.sendline('call notes_read {"noteId": "reports/tps-2019.md"}')
    note = result_of(host)
    assert "│ aliases: old tps" in note, "front matter as key: value"
    assert "\x1b[1m# Cover\x1b[0m" in note and "\x1b[1mmissing\x1b[0m" in note, "headings and emphasis drawn"
    assert "• one" in note and "• two" in note and "**" not in note and "---" not in note

    edit = {"noteId": "todo.md", "edits": [{"op": "append", "text": "- more staples"}]}
    host.sendline(f"call notes_edit {json.dumps(edit)}")
    diff = result_of(host)
    assert "\x1b[32m+- more staples\x1b[0m" in diff and "\x1b[36m@@ " in diff, "the diff coloured"

    host.sendline('call notes_history {"noteId": "todo.md"}')
    history = result_of(host)
    assert re.search(r"versionId\s+savedAt\s+principal\s+tool\s+summary", history), "a table"
    assert re.search(r"\d{8}T\d{6}-\w+\s+\d{4}-\d\d-\d\dT[\d:]+Z\s+alice\s+notes_edit\s+append", history)
    leave(host)

    raw = spawn(["--stdio", stdio_server(deployment), "--json"])
    raw.sendline("call notes_list {}")
    shown = result_of(raw)
    assert '"notes": [' in shown and '"id": "todo.md"' in shown, "--json: the raw result"
    leave(raw)


def test_tab_completes_commands_tool_names_and_note_ids(host: pexpect.spawn) -> None:
    host.send("ca\t")  # call
    host.send("notes_lis\t")  # notes_list
    host.send("\r")
    host.expect(r"optional cursor, limit \(name to set, Enter to call\)")
    host.send("\r")
    assert "drafts/tps-report-draft.md" in result_of(host)
    host.sendline("call notes_read")
    host.expect(r"Tab completes note ids")
    host.send("meet\t")  # meetings/standup.md, the server's completion
    host.send("\r")
    host.expect(r"optional .* \(name to set, Enter to call\)")
    host.send("\r")
    result = result_of(host)
    assert "Stand-up notes" in result and "Nothing about TPS." in result
    leave(host)


def test_a_list_is_asked_with_an_example_and_taken_comma_separated(host: pexpect.spawn) -> None:
    host.sendline("call notes_read_many")
    host.expect(r"e\.g\. first, second \(comma-separated\) or \[\"first\", \"second\"\]")
    host.sendline("todo.md, meetings/standup.md")
    host.expect(r"optional maxChars \(name to set, Enter to call\)")
    host.sendline("")
    result = result_of(host)
    assert "buy a stapler" in result and "Stand-up notes" in result
    assert "Nothing about TPS." in result and "noteId" not in result, "each note drawn whole, not a table"
    leave(host)


def test_url_mode_waits_until_the_page_is_done(deployment: Deployment) -> None:
    target = RecordingTarget().start()
    add_publish_config(deployment, target)
    server = start_http_server(deployment.config, deployment.root / "server.log")
    try:
        browser = {"BROWSER": "echo"}  # webbrowser runs $BROWSER URL: the "browser" shows what it was given
        child = spawn(["--url", server.url, "--token-env", "NW_T"], env={"NW_T": ALICE_TOKEN, **browser})
        child.sendline(f'call notes_publish {{"noteId": "{TPS_2019}", "target": "blog"}}')
        child.expect(r"\[o\]pen it in a browser / \[a\]ccept, I will open it myself")
        child.sendline("o")
        child.expect(rf"http://127\.0\.0\.1:{server.port}/connect/[A-Za-z0-9_-]{{24}}\r?\n")  # from echo
        child.expect("Opened in your browser.")
        child.expect("press Enter when you are done there")
        child.expect(r"done\? \[Enter\] / \[c\]ancel")
        child.sendline("c")
        child.expect("→ cancel")
        quit_host(child)
        assert target.received == []
    finally:
        server.stop()
        target.stop()


def test_a_token_revoked_mid_session_is_said_with_what_to_do(deployment: Deployment) -> None:
    server = start_http_server(deployment.config, deployment.root / "server.log")
    try:
        child = spawn(["--url", server.url, "--token-env", "NW_T"], env={"NW_T": ALICE_TOKEN})
        child.sendline("list")
        child.expect("notes_list")
        child.expect("mcp>")
        text = deployment.config.read_text().replace(sha256(ALICE_TOKEN), sha256("another token"))
        deployment.config.write_text(text)
        stamp = time.time() + 5
        os.utime(deployment.config, (stamp, stamp))
        child.sendline("call notes_list {}")
        child.expect(r"401: the server no longer accepts the token in \$NW_T \(revoked, or expired\)")
        child.expect("notewarden token add NAME")
        shown = str(child.before)
        assert "JSON-RPC" not in shown and "-32603" not in shown
        quit_host(child)
    finally:
        server.stop()
