"""`notewarden demo`: a sample workspace, a real server process, the official SDK client.

Each checkpoint of the confirmed-delete flow is printed as it happens: discovery, the
tool list, round 1 (`input_required` with the form and a sealed state), the checks that
refuse (missing capability, hostile URI, changed arguments), round 2 (accept → trash),
a replay, decline and cancel; then a small edit with its diff receipt, and its revert; last, a
read-only assistant: shown only the read tools, and refused a delete naming the right it lacks.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from notewarden.firstrun.config_file import new_token, token_hash

__all__ = ["SAMPLE_NOTES", "run_demo", "write_sample_workspace"]

SAMPLE_NOTES = {
    "reports/tps-2019.md": "---\ntitle: TPS report 2019 (old)\n---\nCover sheet missing.\n",
    "reports/tps-2026-q3.md": "# TPS report Q3 2026\n\nNumbers for the third quarter.\n",
    "drafts/tps-report-draft.md": "# TPS report — draft\n\nNew cover sheets, per the memo.\n",
    "meetings/standup.md": "# Stand-up notes\n\nNothing about TPS.\n",
    "todo.md": "- buy a stapler\n",
}


def write_sample_workspace(directory: Path) -> Path:
    for name, text in SAMPLE_NOTES.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    old = time.time() - 7 * 365 * 86400
    import os

    os.utime(directory / "reports/tps-2019.md", (old, old))
    return directory


def text_of(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


def say(step: str, text: str) -> None:
    head = f"[{step}]"
    print(head, textwrap.indent(text, " " * (len(head) + 1)).lstrip(), flush=True)


async def pick_oldest_tps(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    assert isinstance(params, types.ElicitRequestFormParams)
    choices = params.requested_schema["properties"]["note_id"]["oneOf"]
    chosen = next((c for c in choices if "2019" in c["title"]), choices[0])
    return types.ElicitResult(action="accept", content={"note_id": chosen["const"], "confirm": True})


Connect = Callable[..., AbstractAsyncContextManager[Client]]


@asynccontextmanager
async def running_server(transport: str, workspace: Path, state: Path) -> AsyncIterator[Connect]:
    """Start what the clients talk to and yield a way to connect SDK clients to it; a client
    connected with `read_only=True` may only read.

    Over stdio each client launches its own server process on the same state directory (as a
    desktop client would; a read-only one `serve --read-only`); over HTTP one server process
    serves every client, with one token of every right and one made with `--rights reader`.
    """
    if transport == "stdio":

        @asynccontextmanager
        async def stdio_client(*, read_only: bool = False, **client_kwargs: Any) -> AsyncIterator[Client]:
            args = ["-m", "notewarden", "--log-level", "error", "serve", "--workspace", str(workspace)]
            args += ["--state-dir", str(state), *(["--read-only"] if read_only else [])]
            params = StdioServerParameters(command=sys.executable, args=args)
            async with Client(params, mode="auto", **client_kwargs) as client:
                yield client

        yield stdio_client
        return
    token, reader = new_token(), new_token()
    port = _free_port()
    config = state / "notewarden.toml"
    config.write_text(
        f'state_dir = "{state}"\n[[workspace]]\nuri = "file://{workspace}"\n'
        f'[[principal]]\nid = "demo"\nworkspaces = ["file://{workspace}"]\nrights = ["maintainer"]\n'
        f'token_sha256 = ["{token_hash(token)}"]\n'
        f'[[principal.token]]\nsha256 = "{token_hash(reader)}"\nrights = ["reader"]\n'
        f"[http]\nport = {port}\n"
    )
    print(f"HTTP server: http://127.0.0.1:{port}/mcp, config {config}")
    print(f"bearer token (principal demo; the config holds only its SHA-256): {token}\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "notewarden",
            "--log-level",
            "error",
            "serve",
            "--config",
            str(config),
            "--transport",
            "http",
        ]
    )

    @asynccontextmanager
    async def http_client(*, read_only: bool = False, **client_kwargs: Any) -> AsyncIterator[Client]:
        bearer = reader if read_only else token
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer}"}, timeout=30) as http,
            Client(
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
                mode="auto",
                **client_kwargs,
            ) as client,
        ):
            yield client

    try:
        _wait_for_port(port, proc)
        yield http_client
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def walkthrough(transport: str, root: Path) -> None:
    workspace = write_sample_workspace(root / "notes")
    state = root / "state"
    state.mkdir(exist_ok=True)
    uri = f"file://{workspace}"
    print(f"notewarden demo: a confirmed delete, end to end ({transport})")
    print(f"workspace {uri}: {len(SAMPLE_NOTES)} notes, three titled like “TPS report”\n")

    async with (
        running_server(transport, workspace, state) as connect,
        connect(elicitation_callback=pick_oldest_tps) as client,
    ):
        discovered = client.session.discover_result
        assert discovered is not None, "mode='auto' probes server/discover first"
        caps = ", ".join(discovered.capabilities.model_dump(exclude_none=True))
        say(
            "1 discover",
            f"server/discover → supportedVersions={discovered.supported_versions}, capabilities: {caps}\n"
            f"cache: ttlMs={discovered.ttl_ms} cacheScope={discovered.cache_scope}",
        )

        listing = await client.list_tools()
        lines = [
            f"{t.name}: readOnlyHint={t.annotations.read_only_hint} destructiveHint={t.annotations.destructive_hint}"
            for t in listing.tools
            if t.annotations
        ]
        say(
            "2 tools/list",
            "\n".join(lines) + f"\ncache: ttlMs={listing.ttl_ms} cacheScope={listing.cache_scope}",
        )

        notes = await client.call_tool("notes_list", {"workspaceUri": uri})
        rows = notes.structured_content["notes"]
        say("3 notes_list", "\n".join(f"{n['id']:<28} {n['title']}" for n in rows))

        args = {"workspaceUri": uri, "title": "TPS report"}
        first = await client.session.call_tool("notes_delete", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult) and first.input_requests and first.request_state
        form = first.input_requests["delete_choice"].params
        assert isinstance(form, types.ElicitRequestFormParams)
        choices = form.requested_schema["properties"]["note_id"]["oneOf"]
        say(
            "4 round 1",
            f"resultType=input_required, inputRequests.delete_choice = form elicitation\n"
            f"message: {form.message}\n"
            + "\n".join(f"  ( ) {c['title']}" for c in choices)
            + f"\n  [ ] {form.requested_schema['properties']['confirm']['title']}"
            + f"\nrequestState: {len(first.request_state)} bytes, AES-GCM sealed, opaque to the client",
        )

        async with connect() as plain:
            try:
                await plain.call_tool("notes_delete", args)
            except MCPError as exc:
                say(
                    "5 capability",
                    f"a request without elicitation.form → error {exc.code}: {exc.message}\ndata: {exc.data}",
                )

        hostile = await client.call_tool(
            "notes_delete", {"workspaceUri": uri + "/%2e%2e/etc", "title": "passwd"}
        )
        say("6 scope", f"workspaceUri …/%2e%2e/etc → isError={hostile.is_error}: {text_of(hostile)}")
        outside = await client.call_tool("notes_delete", {"workspaceUri": uri + "-evil", "title": "x"})
        say("6 scope", f"workspaceUri …notes-evil → isError={outside.is_error}: {text_of(outside)}")

        picked = next(c["const"] for c in choices if "2019" in c["title"])
        accept: types.InputResponses = {
            "delete_choice": types.ElicitResult(action="accept", content={"note_id": picked, "confirm": True})
        }
        try:
            await client.session.call_tool(
                "notes_delete",
                {**args, "title": "TPS"},
                input_responses=accept,
                request_state=first.request_state,
                allow_input_required=True,
            )
        except MCPError as exc:
            say("7 binding", f"same state, changed title → error {exc.code}: {exc.message}")

        done = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=accept,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult)
        say(
            "8 round 2",
            f"accept {picked} + confirm → resultType=complete: {text_of(done)}\n"
            f"structuredContent: {done.structured_content}",
        )
        trash = sorted(p.name for p in (workspace / ".notewarden-trash").iterdir())
        say("8 trash", f"{workspace.name}/.notewarden-trash: {', '.join(trash)}")

        replay = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=accept,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(replay, types.CallToolResult)
        say("9 replay", f"the same accepted state again → isError={replay.is_error}: {text_of(replay)}")

        again = await client.session.call_tool("notes_delete", args, allow_input_required=True)
        assert isinstance(again, types.InputRequiredResult)
        cancel: types.InputResponses = {"delete_choice": types.ElicitResult(action="cancel")}
        cancelled = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=cancel,
            request_state=again.request_state,
            allow_input_required=True,
        )
        assert isinstance(cancelled, types.CallToolResult)
        say("10 cancel", text_of(cancelled))
        decline: types.InputResponses = {"delete_choice": types.ElicitResult(action="decline")}
        declined = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=decline,
            request_state=again.request_state,
            allow_input_required=True,
        )
        assert isinstance(declined, types.CallToolResult)
        say("10 decline", f"the cancelled state answered again with decline → {text_of(declined)}")
        after = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=accept,
            request_state=again.request_state,
            allow_input_required=True,
        )
        assert isinstance(after, types.CallToolResult)
        say("10 terminal", f"accept after decline → isError={after.is_error}: {text_of(after)}")

        whole = await client.call_tool("notes_delete", {"workspaceUri": uri, "title": "TPS draft"})
        say(
            "11 SDK driver",
            f"Client.call_tool with an elicitation callback drives both rounds: {text_of(whole)}",
        )
        await edit_and_revert(client, uri, workspace)
        async with connect(read_only=True, elicitation_callback=pick_oldest_tps) as reading:
            await read_only(reading, uri, transport)

    remaining = sorted(
        str(p.relative_to(workspace)) for p in workspace.rglob("*.md") if ".notewarden" not in str(p)
    )
    print(f"\nnotes left in the workspace: {', '.join(remaining)}")


async def edit_and_revert(client: Client, uri: str, workspace: Path) -> None:
    """A small anchored edit, its receipt (diff included), and the revert that undoes it."""
    note = "meetings/standup.md"
    original = (workspace / note).read_bytes()
    edits = [
        {"op": "replace", "oldText": "Nothing about TPS.", "newText": "Still nothing about TPS."},
        {"op": "append", "text": "- Atlas shipped"},
    ]
    edited = await client.call_tool("notes_edit", {"workspaceUri": uri, "noteId": note, "edits": edits})
    receipt = edited.structured_content or {}
    say(
        "12 edit",
        f"notes_edit {note}: replace + append → {receipt['before']['size']} → {receipt['after']['size']} bytes, "
        f"changed lines {[(c['newStart'], c['newLines']) for c in receipt['changes']]}\n{receipt['diff']}"
        f"previousVersionId: {receipt['previousVersionId']}",
    )
    back = {"workspaceUri": uri, "noteId": note, "versionId": receipt["previousVersionId"]}
    reverted = await client.call_tool("notes_revert", back)
    same = (workspace / note).read_bytes() == original
    say(
        "13 revert",
        f"notes_revert to {back['versionId']} → the note is back byte for byte: {same}\n"
        + (reverted.structured_content or {}).get("diff", "").rstrip("\n"),
    )


async def read_only(client: Client, uri: str, transport: str) -> None:
    """A read-only assistant: the tools it is shown, and a delete it asks for anyway."""
    how = "serve --read-only" if transport == "stdio" else "a token made with --rights reader"
    listing = await client.list_tools()
    say(
        "14 read-only",
        f"{how}: tools/list shows {len(listing.tools)} tools, each needing only read: "
        + ", ".join(t.name for t in listing.tools),
    )
    refused = await client.call_tool("notes_delete", {"workspaceUri": uri, "title": "TPS"})
    error = (refused.structured_content or {}).get("error", {})
    say(
        "14 read-only",
        f"notes_delete anyway → isError={refused.is_error} {error.get('code')}: {text_of(refused)}",
    )


def run_demo(directory: str | None, *, transport: str = "stdio") -> int:
    if directory:
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        anyio.run(walkthrough, transport, root)
    else:
        with tempfile.TemporaryDirectory(prefix="notewarden-demo-") as tmp:
            anyio.run(walkthrough, transport, Path(tmp))
    return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the server did not listen on port {port} within {timeout} s")
