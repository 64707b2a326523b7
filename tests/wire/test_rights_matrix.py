"""Every tool × every bundle × a folder with the bundle and a folder with only `read`, over HTTP and
stdio: allowed, or refused naming the right with nothing on disk or in the databases changed.

Each principal holds `reader` on the whole workspace and its bundle on `granted/`; `other/` is
where it may only read. A second workspace, `ws2`, is read-only for everyone (the daily note of
the ungranted case). A seeding principal (`owner`) gives each folder a saved version and a trash
entry first, over HTTP. Every refusal is checked against a snapshot of every file of both
workspaces (hashes) and the row count of every table of every SQLite file in the state dir.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from notewarden.notes.model import content_version
from notewarden.scope.rights import BUNDLES, Right
from tests.conftest import NO_LIMITS, free_port, sha256, start_http_server
from tests.wire.publishing import RecordingTarget
from tests.wire.rawhttp import RawMcp, Reply
from tests.wire.rawstdio import StdioMcp

FOLDERS = ("granted", "other")
SEED = "seed-token-" + "s" * 20
FORM_AND_URL = {"elicitation": {"form": {}, "url": {}}}
TOOL_RIGHTS = {
    "notes_list": Right.READ,
    "notes_search": Right.READ,
    "notes_read": Right.READ,
    "notes_read_many": Right.READ,
    "notes_history": Right.READ,
    "notes_tags": Right.READ,
    "notes_links": Right.READ,
    "notes_recent": Right.READ,
    "notes_health": Right.READ,
    "notes_trash_list": Right.READ,
    "notes_similar": Right.READ,
    "notes_create": Right.WRITE,
    "notes_update": Right.WRITE,
    "notes_edit": Right.WRITE,
    "notes_revert": Right.WRITE,
    "notes_move": Right.WRITE,
    "notes_restore": Right.WRITE,
    "notes_daily": Right.WRITE,
    "notes_delete": Right.DELETE,
    "notes_publish": Right.PUBLISH,
    "notes_history_purge": Right.PURGE,
    "notes_trash_empty": Right.PURGE,
}
"""In the order the matrix calls them: reads first, so that each finds what it reads."""


def token_of(bundle: str) -> str:
    return f"{bundle}-token-" + "t" * 20


@dataclass
class Vault:
    root: Path
    target: RecordingTarget

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    @property
    def ws2(self) -> Path:
        return self.root / "ws2"

    @property
    def uri(self) -> str:
        return f"file://{self.ws}"

    def config(self, stdio_principal: str) -> Path:
        """The one configuration of the test, its `[stdio]` principal as given."""
        path = self.root / f"config-{stdio_principal}.toml"
        ws, ws2 = self.uri, f"file://{self.ws2}"
        text = (
            f'state_dir = "{self.root / "state"}"\n'
            f'[[workspace]]\nuri = "{ws}"\n[workspace.daily]\nfolder = "granted/daily"\n'
            f'[[workspace]]\nuri = "{ws2}"\n'
            f'[[principal]]\nid = "seed"\nworkspaces = ["{ws}", "{ws2}"]\nrights = ["owner"]\n'
            f'token_sha256 = ["{sha256(SEED)}"]\n'
        )
        for bundle in BUNDLES:
            text += (
                f'[[principal]]\nid = "{bundle}"\ntoken_sha256 = ["{sha256(token_of(bundle))}"]\n'
                f'[[principal.grant]]\nuri = "{ws}"\nrights = ["reader"]\n'
                f'[[principal.grant]]\nuri = "{ws}/granted"\nrights = ["{bundle}"]\n'
                f'[[principal.grant]]\nuri = "{ws2}"\nrights = ["reader"]\n'
            )
        text += (
            f'[stdio]\nprincipal = "{stdio_principal}"\n'
            f'[publish]\n[[publish.target]]\nid = "blog"\ntitle = "Team blog"\nurl = "{self.target.url}"\n'
            'auth = "bearer"\n' + NO_LIMITS
        )
        path.write_text(text)
        return path

    def snapshot(self) -> dict[str, Any]:
        files = {
            str(p.relative_to(self.root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in (self.ws, self.ws2)
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }
        rows: dict[str, int] = {}
        for db in sorted((self.root / "state").glob("*.sqlite3")):
            with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
                tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
                for table in tables:
                    (count,) = conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()
                    rows[f"{db.name}:{table}"] = count
        return {"files": files, "rows": rows}


def make_vault(root: Path, target: RecordingTarget) -> Vault:
    vault = Vault(root, target)
    for folder in FOLDERS:
        for name, title in (("a", "Alpha"), ("c", "Gamma report"), ("d", "Delta"), ("e", "Epsilon")):
            path = vault.ws / folder / f"{name}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {title} {folder}\n\nalpha words #topic/{folder}\n")
    vault.ws2.mkdir()
    (vault.ws2 / "x.md").write_text("# X\n")
    (root / "state").mkdir(mode=0o700)
    return vault


def seed(vault: Vault) -> None:
    """A saved version of each folder's a.md and a trash entry (e.md) in each folder, by `seed`."""
    server = start_http_server(vault.config("seed"), vault.root / "seed.log", port=free_port())
    client = RawMcp(server.url, SEED)
    try:
        for folder in FOLDERS:
            edit = {"op": "append", "text": "seeded"}
            args = {"workspaceUri": vault.uri, "noteId": f"{folder}/a.md", "edits": [edit]}
            assert not client.call("notes_edit", args).result.get("isError")
            delete = {"workspaceUri": vault.uri, "noteIds": [f"{folder}/e.md"]}
            first = client.call("notes_delete", delete).result
            answer = {"action": "accept", "content": {"note_ids": [f"{folder}/e.md"], "confirm": True}}
            done = client.call(
                "notes_delete",
                delete,
                inputResponses={"delete_choice": answer},
                requestState=first["requestState"],
            ).result
            assert done["structuredContent"]["outcome"] == "deleted", done
    finally:
        client.close()
        server.stop()


Peer = RawMcp | StdioMcp


@contextmanager
def peer(transport: str, vault: Vault, bundle: str) -> Iterator[Peer]:
    if transport == "http":
        server = start_http_server(vault.config(bundle), vault.root / f"{bundle}.log", port=free_port())
        client: Peer = RawMcp(server.url, token_of(bundle))
        try:
            yield client
        finally:
            client.close()
            server.stop()
    else:
        stdio = StdioMcp(vault.config(bundle))
        try:
            yield stdio
        finally:
            stdio.close()


def structured(reply: Reply) -> dict[str, Any]:
    result = reply.result
    return {**result.get("structuredContent", {}), "isError": bool(result.get("isError"))}


def arguments(client: Peer, vault: Vault, tool: str, folder: str) -> dict[str, Any]:
    """What `tool` is called with in `folder`; lookups needed first are made with read tools."""
    ws, here = vault.uri, f"{vault.uri}/{folder}"
    note = f"{folder}/a.md"
    if tool in (
        "notes_list",
        "notes_tags",
        "notes_recent",
        "notes_health",
        "notes_trash_list",
        "notes_history_purge",
    ):
        return {"workspaceUri": here}
    if tool == "notes_trash_empty":
        return {"workspaceUri": here}
    if tool == "notes_search":
        return {"workspaceUri": here, "query": "alpha"}
    if tool in ("notes_read", "notes_history", "notes_links", "notes_similar"):
        return {"workspaceUri": ws, "noteId": note}
    if tool == "notes_read_many":
        return {"workspaceUri": ws, "noteIds": [note]}
    if tool == "notes_create":
        return {"workspaceUri": ws, "path": f"{folder}/new.md", "title": "New", "body": "new"}
    if tool == "notes_update":
        version = content_version((vault.ws / note).read_bytes())
        return {
            "workspaceUri": ws,
            "noteId": note,
            "body": "# Alpha\n\nreplaced\n",
            "expectedVersion": version,
        }
    if tool == "notes_edit":
        return {"workspaceUri": ws, "noteId": note, "edits": [{"op": "append", "text": "edited"}]}
    if tool == "notes_revert":
        history = structured(client.call("notes_history", {"workspaceUri": ws, "noteId": note}))
        return {"workspaceUri": ws, "noteId": note, "versionId": history["versions"][-1]["versionId"]}
    if tool == "notes_move":
        return {"workspaceUri": ws, "noteId": f"{folder}/d.md", "newPath": f"{folder}/d2.md"}
    if tool == "notes_restore":
        trash = structured(client.call("notes_trash_list", {"workspaceUri": here}))
        (entry,) = [e for e in trash["entries"] if e["id"] == f"{folder}/e.md"]
        return {"workspaceUri": ws, "trashId": entry["trashId"]}
    if tool == "notes_daily":
        return {"workspaceUri": ws if folder == "granted" else f"file://{vault.ws2}", "date": "2026-12-04"}
    if tool == "notes_delete":
        return {"workspaceUri": here, "title": "gamma"}
    if tool == "notes_publish":
        return {"workspaceUri": ws, "noteId": note, "target": "blog"}
    raise AssertionError(f"no arguments for {tool}")


CONFIRMED: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "notes_delete": lambda first: {
        "delete_choice": {
            "action": "accept",
            "content": {
                "note_id": first["inputRequests"]["delete_choice"]["params"]["requestedSchema"]["properties"][
                    "note_id"
                ]["oneOf"][0]["const"],
                "confirm": True,
            },
        }
    },
    "notes_trash_empty": lambda first: {"empty_trash": {"action": "accept", "content": {"confirm": True}}},
    "notes_history_purge": lambda first: {
        "purge_history": {"action": "accept", "content": {"confirm": True}}
    },
}


def run_allowed(client: Peer, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    reply = client.call(tool, args, capabilities=FORM_AND_URL)
    result = reply.result
    if tool == "notes_publish":  # the first publish to a target asks a person to connect it (URL mode)
        assert result.get("resultType") == "input_required", result
        assert "publish_connect" in result["inputRequests"]
        return result
    if tool in CONFIRMED:
        assert result.get("resultType") == "input_required", result
        reply = client.call(
            tool,
            args,
            capabilities=FORM_AND_URL,
            inputResponses=CONFIRMED[tool](result),
            requestState=result["requestState"],
        )
    shown = structured(reply)
    assert not shown["isError"], (tool, shown)
    return shown


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("bundle", list(BUNDLES))
def test_every_tool_is_allowed_exactly_where_its_right_is_granted(
    tmp_path: Path, transport: str, bundle: str
) -> None:
    target = RecordingTarget().start()
    try:
        vault = make_vault(tmp_path, target)
        seed(vault)
        held = BUNDLES[bundle] | {Right.READ}
        with peer(transport, vault, bundle) as client:
            listed = {t["name"] for t in client.request("tools/list").result["tools"]}
            assert listed == {tool for tool, right in TOOL_RIGHTS.items() if right in held}
            for folder in FOLDERS:
                rights_here = held if folder == "granted" else {Right.READ}
                for tool, right in TOOL_RIGHTS.items():
                    args = arguments(client, vault, tool, folder)
                    if right in rights_here:
                        run_allowed(client, tool, args)
                        continue
                    before = vault.snapshot()
                    refused = structured(client.call(tool, args, capabilities=FORM_AND_URL))
                    assert refused["isError"], (tool, folder, refused)
                    assert refused["error"]["code"] == "right_missing", (tool, folder, refused)
                    assert refused["error"]["right"] == right
                    assert f"right {right}" in refused["error"]["message"] or (
                        f"{right} is not granted" in refused["error"]["message"]
                    ), refused["error"]["message"]
                    assert vault.snapshot() == before, (tool, folder)
        assert target.received == [], "nothing was published: no person connected the target"
    finally:
        target.stop()
