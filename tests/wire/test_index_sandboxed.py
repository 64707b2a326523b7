"""The shipped server keeps its note index current with inotify, sandbox and all.

`notewarden serve` confines itself (Landlock) before it creates the index's inotify
watchers; the watchers must still work there, or every call falls back to directory
stamps, which miss an edit made in place until the next full verification (a minute).
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import ALICE_TOKEN, Deployment, HttpServer
from tests.wire.rawhttp import RawMcp

pytestmark = pytest.mark.resolves_files


def test_an_in_place_edit_is_seen_by_the_next_call(deployment: Deployment, http_server: HttpServer) -> None:
    note = deployment.notes / "meetings" / "standup.md"
    # long past: neither the file nor its folder is "racily clean" (index_refresh Rule 3)
    settled = 1_600_000_000
    os.utime(note, (settled, settled))
    os.utime(note.parent, (settled, settled))
    mcp = RawMcp(http_server.url, ALICE_TOKEN)
    try:
        first = mcp.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "stand-up"})
        assert first.result["resultType"] == "input_required"  # the index is built and watched

        before = os.stat(note.parent).st_mtime_ns
        fd = os.open(note, os.O_WRONLY | os.O_TRUNC)  # same inode, same directory entry
        try:
            os.write(fd, b"# Zeppelin fortnight ledger\n\nRewritten in place.\n")
        finally:
            os.close(fd)
        assert os.stat(note.parent).st_mtime_ns == before  # nothing for directory stamps to see

        asked = mcp.call(
            "notes_delete", {"workspaceUri": deployment.notes_uri, "title": "zeppelin fortnight"}
        )
    finally:
        mcp.close()
    assert asked.result["resultType"] == "input_required", asked.result
    assert "meetings/standup.md" in str(asked.result["inputRequests"])
    assert "inotify unavailable" not in http_server.log.read_text()


def test_a_large_workspace_is_indexed_inside_the_sandbox(
    deployment: Deployment, http_server: HttpServer
) -> None:
    # Big enough that SQLite spills to temporary files while building the index: inside the
    # sandbox there is no /tmp for them, so they must stay in memory.
    folder = deployment.notes / "bulk"
    folder.mkdir()
    for i in range(10_000):
        (folder / f"n{i:05d}.md").write_bytes(b"# Bulk note %05d\n\nMinutes of item %05d.\n" % (i, i))
    mcp = RawMcp(http_server.url, ALICE_TOKEN)
    try:
        asked = mcp.call("notes_delete", {"workspaceUri": deployment.notes_uri, "title": "bulk note 04242"})
    finally:
        mcp.close()
    assert asked.result["resultType"] == "input_required", asked.result
    assert "bulk/n04242.md" in str(asked.result["inputRequests"])
