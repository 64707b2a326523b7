"""Issue 12 §4, on real server processes: every edge speaks clearly.

A missing workspace folder at start-up, size limits, 401 wording and a config that stops parsing
while running, names starting with a dot, and a symlinked folder inside a workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from notewarden.scope.fsroot import SKIPPED_SYMLINK
from notewarden.tools.notes_edit import MAX_BODY_CHARS
from tests.conftest import Deployment, HttpServer, start_http_server
from tests.wire.rawhttp import RawMcp, meta

MAX_BODY_BYTES = 4096


@pytest.fixture
def http_server(deployment: Deployment) -> Iterator[HttpServer]:
    deployment.write_config(extra=f"[http]\nmax_body_bytes = {MAX_BODY_BYTES}\n")
    s = start_http_server(deployment.config, deployment.root / "server.log")
    yield s
    s.stop()


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "notewarden", "serve", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )


@pytest.mark.resolves_files
def test_a_missing_workspace_folder_is_one_line_naming_it_and_its_entry(deployment: Deployment) -> None:
    gone = deployment.root / "renamed-by-mistake"
    text = deployment.config.read_text().replace(str(deployment.private), str(gone))
    deployment.config.write_text(text)
    done = serve("--config", str(deployment.config))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f'{deployment.config}: [[workspace]] #2 uri = "file://{gone}"' in done.stderr
    assert f"the folder {gone} does not exist" in done.stderr


def test_a_2_mb_body_is_refused_with_the_limit_and_the_size_never_echoed(deployment: Deployment) -> None:
    body = "x" * (2 * 1024 * 1024)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "notes_create",
            "arguments": {
                "workspaceUri": deployment.notes_uri,
                "path": "big.md",
                "title": "Big",
                "body": body,
            },
            "_meta": meta(),
        },
    }
    proc = subprocess.run(
        [sys.executable, "-m", "notewarden", "serve", "--config", str(deployment.config)],
        input=json.dumps(call) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    [line] = proc.stdout.splitlines()
    assert len(line) < 2000, f"the answer is {len(line)} characters: the input came back"
    result = json.loads(line)["result"]
    assert result["structuredContent"]["error"]["code"] == "invalid_arguments"
    message = result["structuredContent"]["error"]["message"]
    assert f"body: is {len(body)} characters long; at most {MAX_BODY_CHARS} allowed" in message
    assert not (deployment.notes / "big.md").exists()


def test_an_http_body_over_the_cap_names_the_limit_and_the_size(
    alice: RawMcp, deployment: Deployment
) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "notes_list",
            "arguments": {"workspaceUri": "file:///" + "a" * 8000},
            "_meta": meta(),
        },
    }
    reply = alice.post(body, method="tools/call", name="notes_list")
    size = len(json.dumps(body))
    assert reply.status == 413
    refusal = json.loads(reply.text)
    assert refusal["error"] == "request_too_large"
    assert f"{size} bytes received; at most {MAX_BODY_BYTES} bytes" in refusal["error_description"]
    assert "[http] max_body_bytes" in refusal["error_description"]
    assert "aaaa" not in reply.text and len(reply.text) < 500


def test_401_wording_fits_static_tokens(alice: RawMcp) -> None:
    for token, wording in [
        (None, "needs a bearer token"),
        ("not-a-token", "not one configured on this server"),
    ]:
        reply = alice.request("tools/list", token=token)
        assert reply.status == 401
        header = reply.headers["www-authenticate"]
        described = json.loads(reply.text)["error_description"]
        assert wording in described
        assert "OAuth" not in header + described and "resource_metadata" not in header


def test_a_config_that_stops_parsing_is_a_503_with_a_reason_not_invalid_token(
    alice: RawMcp, deployment: Deployment
) -> None:
    assert alice.request("tools/list").status == 200
    good = deployment.config.read_text()
    deployment.config.write_text(good + "\n[[principal]\nbroken = \n")
    reply = alice.request("tools/list")
    assert reply.status == 503
    assert reply.headers["retry-after"] == "30"
    refusal = json.loads(reply.text)
    assert refusal["error"] == "temporarily_unavailable"
    assert "configuration file no longer parses" in refusal["error_description"]
    assert "broken" not in reply.text and str(deployment.config) not in reply.text, (
        "nothing of the file is shown"
    )
    assert "invalid_token" not in reply.headers.get("www-authenticate", "")
    deployment.config.write_text(good)
    os.utime(deployment.config)
    assert alice.request("tools/list").status == 200, "fixed: served again without a restart"


@pytest.mark.resolves_files
@pytest.mark.parametrize("path", [".hidden.md", "notes/.drafts/idea.md"])
def test_names_starting_with_a_dot_are_refused_with_why(
    alice: RawMcp, deployment: Deployment, path: str
) -> None:
    created = alice.call(
        "notes_create", {"workspaceUri": deployment.notes_uri, "path": path, "title": "Hidden", "body": "b"}
    ).result
    error = created["structuredContent"]["error"]
    assert error["code"] == "path_refused"
    assert "starts with a dot" in error["message"] and "never show" in error["message"]
    moved = alice.call(
        "notes_move", {"workspaceUri": deployment.notes_uri, "noteId": "todo.md", "newPath": path}
    ).result
    assert moved["structuredContent"]["error"]["code"] == "path_refused"
    assert (deployment.notes / "todo.md").exists() and not (deployment.notes / path).exists()


@pytest.mark.resolves_files
def test_a_symlinked_folder_is_listed_as_skipped_with_why(alice: RawMcp, deployment: Deployment) -> None:
    vault = deployment.root / "real-vault"
    vault.mkdir()
    (vault / "inside.md").write_text("# Behind the link\n")
    (deployment.notes / "linked").symlink_to(vault)
    (deployment.notes / "meetings" / "shortcut.md").symlink_to(deployment.notes / "todo.md")
    listed = alice.call("notes_list", {"workspaceUri": deployment.notes_uri}).result
    assert listed["structuredContent"]["skipped"] == [
        {"id": "linked", "reason": SKIPPED_SYMLINK},
        {"id": "meetings/shortcut.md", "reason": SKIPPED_SYMLINK},
    ]
    assert "linked" in listed["content"][0]["text"] and "symbolic link" in listed["content"][0]["text"]
    assert all(not n["id"].startswith("linked") for n in listed["structuredContent"]["notes"])
    narrowed = alice.call("notes_list", {"workspaceUri": deployment.notes_uri + "/meetings"}).result
    assert narrowed["structuredContent"]["skipped"] == [
        {"id": "meetings/shortcut.md", "reason": SKIPPED_SYMLINK}
    ]
    through = alice.call("notes_list", {"workspaceUri": deployment.notes_uri + "/linked"}).result
    assert through["structuredContent"] == {
        "workspaceUri": deployment.notes_uri + "/linked",
        "notes": [],
        "skipped": [{"id": "linked", "reason": SKIPPED_SYMLINK}],
    }, "not an empty answer"
    (deployment.notes / "linked").unlink()
    again = alice.call("notes_list", {"workspaceUri": deployment.notes_uri}).result
    assert [e["id"] for e in again["structuredContent"]["skipped"]] == ["meetings/shortcut.md"]
