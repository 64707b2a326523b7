"""`notewarden demo`: a sample workspace, a real server process, the official SDK client.

A walkthrough for a person, each step told as it happens in plain words (what was asked, what
the server answered, its own messages quoted): discovery, the tools, the delete that asks first
(the form and its sealed state), the refusals (no form support, a URI outside the workspace,
changed arguments, a second use), the confirmed delete into the trash, cancel and decline; then
a small edit with its diff and its revert; last, a read-only assistant, shown only the read tools
and refused a delete. It ends with a short summary of what it showed. No protocol field names and
no Python values are printed: the protocol is the tests' business (tests/wire/test_demo.py).
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


def step(number: int, title: str, *lines: str) -> None:
    """One step of the walkthrough: a numbered heading, then what happened, in plain words."""
    print(f"\n{number}. {title}", flush=True)
    for line in lines:
        print(textwrap.indent(line, "   "), flush=True)


SUMMARY = """What you saw:
  * A delete asks the person first: a form lists every note that matches, and only the one they
    pick is deleted, once. A client that cannot show forms is refused.
  * The workspace URI is checked before anything is touched: no way out with /../, no neighbour.
  * An answer is sealed to its own question: changed arguments or a second use are refused.
  * Deleted notes wait in the workspace trash (notes_restore brings them back).
  * Every edit keeps the version before it; notes_revert brings it back byte for byte.
  * A read-only assistant is shown only the tools that read, and its delete is refused."""


async def walkthrough(transport: str, root: Path) -> None:
    workspace = write_sample_workspace(root / "notes")
    state = root / "state"
    state.mkdir(exist_ok=True)
    uri = f"file://{workspace}"
    print(f"notewarden demo: a walkthrough of a confirmed delete, over {transport}")
    print(
        f"A sample workspace of {len(SAMPLE_NOTES)} notes in {workspace}; three are titled like “TPS report”."
    )

    async with (
        running_server(transport, workspace, state) as connect,
        connect(elicitation_callback=pick_oldest_tps) as client,
    ):
        discovered = client.session.discover_result
        assert discovered is not None, "mode='auto' probes server/discover first"
        offers = ", ".join(discovered.capabilities.model_dump(exclude_none=True))
        step(
            1,
            "The client finds the server",
            f"It asks server/discover: protocol {', '.join(discovered.supported_versions)}; the server offers "
            f"{offers}.",
        )

        listing = await client.list_tools()
        reading = [t.name for t in listing.tools if t.annotations and t.annotations.read_only_hint]
        asking = [t.name for t in listing.tools if t.annotations and t.annotations.destructive_hint]
        adding = [t.name for t in listing.tools if t.name not in reading + asking]
        step(
            2,
            f"It is shown {len(listing.tools)} tools",
            f"{len(reading)} only read: {', '.join(reading)}.",
            f"{len(asking)} may overwrite or remove what is there: {', '.join(asking)}.",
            f"{len(adding)} add without removing anything: {', '.join(adding)}.",
        )

        notes = await client.call_tool("notes_list", {"workspaceUri": uri})
        rows = notes.structured_content["notes"]
        titles = {n["id"]: n["title"] for n in rows}
        step(3, "The notes, as notes_list shows them", *(f"{n['id']:<28} {n['title']}" for n in rows))

        args = {"workspaceUri": uri, "title": "TPS report"}
        first = await client.session.call_tool("notes_delete", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult) and first.input_requests and first.request_state
        form = first.input_requests["delete_choice"].params
        assert isinstance(form, types.ElicitRequestFormParams)
        choices = form.requested_schema["properties"]["note_id"]["oneOf"]
        step(
            4,
            "“Delete the TPS report”: the server asks which one before it deletes anything",
            "notes_delete answers with a form for the person, not with a deletion:",
            f"  {form.message}",
            *(f"  ( ) {c['title']}" for c in choices),
            f"  [ ] {form.requested_schema['properties']['confirm']['title']}",
            f"With it comes a sealed state ({len(first.request_state)} bytes, encrypted): the client sends it "
            "back with the answer, and cannot read or change it.",
        )

        async with connect() as plain:
            try:
                await plain.call_tool("notes_delete", args)
            except MCPError as exc:
                step(
                    5,
                    "A client that cannot show forms is refused",
                    f"A client that did not say it can show forms asks the same: refused, nothing deleted "
                    f"(error {exc.code}).",
                    f"“{exc.message}”",
                )

        hostile = await client.call_tool(
            "notes_delete", {"workspaceUri": uri + "/%2e%2e/etc", "title": "passwd"}
        )
        outside = await client.call_tool("notes_delete", {"workspaceUri": uri + "-evil", "title": "x"})
        step(
            6,
            "Nothing outside the workspace can be named",
            f"…/notes/%2e%2e/etc (a way up): {'refused' if hostile.is_error else 'ALLOWED'}. “{text_of(hostile)}”",
            f"…/notes-evil (a neighbour): {'refused' if outside.is_error else 'ALLOWED'}. “{text_of(outside)}”",
        )

        picked = next(c for c in choices if "2019" in c["title"])
        accept: types.InputResponses = {
            "delete_choice": types.ElicitResult(
                action="accept", content={"note_id": picked["const"], "confirm": True}
            )
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
            step(
                7,
                "An answer counts only for its own question",
                f"The sealed state sent back with another title: refused (error {exc.code}, “{exc.message}”).",
            )

        done = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=accept,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(done, types.CallToolResult)
        trash = sorted(
            p.name for p in (workspace / ".notewarden-trash").iterdir() if not p.name.startswith("~")
        )
        step(
            8,
            f"The person picks “{titles[picked['const']]}” and confirms",
            text_of(done),
            f"It waits in the workspace trash, {workspace.name}/.notewarden-trash/{', '.join(trash)}, until "
            "the trash is emptied (notes_restore brings it back).",
        )

        replay = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=accept,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(replay, types.CallToolResult)
        step(
            9,
            "A confirmation is used once",
            f"The same answer sent again: {'refused' if replay.is_error else 'ACCEPTED'}. “{text_of(replay)}”",
        )

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
        decline: types.InputResponses = {"delete_choice": types.ElicitResult(action="decline")}
        declined = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=decline,
            request_state=again.request_state,
            allow_input_required=True,
        )
        assert isinstance(declined, types.CallToolResult)
        after = await client.session.call_tool(
            "notes_delete",
            args,
            input_responses=accept,
            request_state=again.request_state,
            allow_input_required=True,
        )
        assert isinstance(after, types.CallToolResult)
        step(
            10,
            "Cancel, then decline, then a late accept",
            f"Cancelled: “{text_of(cancelled)}”",
            f"The same question answered again, declined: “{text_of(declined)}”",
            f"An accept after the decline: {'refused' if after.is_error else 'ACCEPTED'}. “{text_of(after)}”",
        )

        whole = await client.call_tool("notes_delete", {"workspaceUri": uri, "title": "TPS draft"})
        step(
            11,
            "A client can leave both rounds to the SDK",
            "Client.call_tool with a callback that shows the form (here it picks the draft at once):",
            text_of(whole),
        )
        await edit_and_revert(client, uri, workspace)
        async with connect(read_only=True, elicitation_callback=pick_oldest_tps) as reading_client:
            await read_only(reading_client, uri, transport)

    remaining = sorted(
        str(p.relative_to(workspace)) for p in workspace.rglob("*.md") if ".notewarden" not in str(p)
    )
    print(f"\n{SUMMARY}")
    print(f"Notes left in the workspace: {', '.join(remaining)}.")


async def edit_and_revert(client: Client, uri: str, workspace: Path) -> None:
    """A small anchored edit, its diff, and the revert that undoes it."""
    note = "meetings/standup.md"
    original = (workspace / note).read_bytes()
    edits = [
        {"op": "replace", "oldText": "Nothing about TPS.", "newText": "Still nothing about TPS."},
        {"op": "append", "text": "- Atlas shipped"},
    ]
    edited = await client.call_tool("notes_edit", {"workspaceUri": uri, "noteId": note, "edits": edits})
    receipt = edited.structured_content or {}
    step(
        12,
        f"A small edit of {note}, and its diff",
        f"notes_edit replaces one line and appends another ({receipt['before']['size']} → "
        f"{receipt['after']['size']} bytes); the answer shows what changed:",
        receipt["diff"].rstrip("\n"),
    )
    back = {"workspaceUri": uri, "noteId": note, "versionId": receipt["previousVersionId"]}
    await client.call_tool("notes_revert", back)
    same = (workspace / note).read_bytes() == original
    step(
        13,
        "Undone with notes_revert",
        "The version before the edit was kept; notes_revert brings it back: "
        + ("the note is back byte for byte." if same else "the note DIFFERS from before."),
    )


async def read_only(client: Client, uri: str, transport: str) -> None:
    """A read-only assistant: the tools it is shown, and a delete it asks for anyway."""
    how = "serve --read-only" if transport == "stdio" else "a token made with --rights reader"
    listing = await client.list_tools()
    refused = await client.call_tool("notes_delete", {"workspaceUri": uri, "title": "TPS"})
    error = (refused.structured_content or {}).get("error", {})
    step(
        14,
        f"A read-only assistant ({how})",
        f"It is shown {len(listing.tools)} tools, each of which only reads: "
        + ", ".join(t.name for t in listing.tools)
        + ".",
        f"It asks for a delete anyway: {'refused' if refused.is_error else 'ACCEPTED'} ({error.get('code')}). "
        f"“{text_of(refused)}”",
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
