"""Live changes (issue 27): `subscriptions/listen` on real server processes, with the official SDK
client over both transports (every message it receives checked against the schema).

One files-store HTTP server serves the module (alice owns `notes`; bob reads only `notes/team` and
owns `private`); the stdio, PostgreSQL and shutdown cases start their own processes. "Exactly" is
proved without sleeping: after the changes a listener must not hear, a change it must hear comes
last; a stream delivers in order, so once the last arrives nothing earlier is still on its way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import (
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    Subscription,
    ToolsListChanged,
)

from notewarden.tools.live import MAX_STREAMS_PER_PRINCIPAL, WINDOW_SECONDS
from tests.conftest import (
    ALICE_TOKEN,
    BOB_TOKEN,
    NO_LIMITS,
    HttpServer,
    sha256,
    start_http_server,
)
from tests.pg import SECRET_PASSWORD, PgDatabase, database_url
from tests.schema import check_server_message
from tests.wire.rawhttp import RawMcp, meta
from tests.wire.sdkclients import RecordingTransport
from tests.wire.test_stdio import check_recorded

pytestmark = pytest.mark.anyio

LISTED = ResourcesListChanged()


@dataclass
class Vault:
    root: Path
    config: Path

    @property
    def notes(self) -> Path:
        return self.root / "notes"

    def uri(self, note: str) -> str:
        return f"file://{self.notes}/{note}"

    @property
    def ws(self) -> str:
        return f"file://{self.notes}"

    @property
    def private(self) -> str:
        return f"file://{self.root / 'private'}"

    def write(self, note: str, text: str) -> None:
        """As an editor saves: the new file renamed over the old (one event, never half a file)."""
        spare = self.root / "editor.tmp"
        spare.write_text(text)
        os.replace(spare, self.notes / note)

    def configure(
        self,
        *,
        bob_team: bool = True,
        bob_private: str = "owner",
        bob_token: bool = True,
        state: str = "state",
        storage: str = "",
    ) -> Path:
        team = f'[[principal.grant]]\nuri = "{self.ws}/team"\nrights = ["reader"]\n' if bob_team else ""
        bob_hash = f'"{sha256(BOB_TOKEN)}"' if bob_token else ""  # no token: bob's is revoked
        text = (
            f'state_dir = "{self.root / state}"\n'
            f'[[workspace]]\nuri = "{self.ws}"\n[[workspace]]\nuri = "{self.private}"\n'
            f'[[principal]]\nid = "alice"\nworkspaces = ["{self.ws}"]\nrights = ["owner"]\n'
            f'token_sha256 = ["{sha256(ALICE_TOKEN)}"]\n'
            f'[[principal]]\nid = "bob"\nworkspaces = ["{self.private}"]\nrights = ["{bob_private}"]\n'
            f"token_sha256 = [{bob_hash}]\n{team}"
            f'[stdio]\nprincipal = "alice"\n{NO_LIMITS}{storage}'
        )
        path = self.root / f"{state}.toml"
        path.write_text(text)
        stamp = time.time() + getattr(self, "_bump", 0)  # successive writes get distinct mtimes
        self._bump = getattr(self, "_bump", 0) + 1
        os.utime(path, (stamp, stamp))
        return path


def make_vault(root: Path) -> Vault:
    for folder in ("notes/team", "notes/secret", "private"):
        (root / folder).mkdir(parents=True)
    (root / "notes/team/plan.md").write_text("# Plan\n")
    (root / "notes/secret/keys.md").write_text("# Keys\n")
    (root / "private/bob.md").write_text("# Bob\n")
    (root / "state").mkdir(mode=0o700)
    vault = Vault(root, root / "state.toml")
    vault.configure()
    return vault


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    return make_vault(tmp_path_factory.mktemp("live"))


@pytest.fixture(scope="module")
def server(vault: Vault) -> Iterator[HttpServer]:
    s = start_http_server(vault.config, vault.root / "server.log")
    yield s
    s.stop()


@dataclass
class Heard:
    events: list[ServerEvent] = field(default_factory=list)
    ended: str = ""

    def count(self, event: ServerEvent) -> int:
        return self.events.count(event)

    async def until(self, done: Callable[[Heard], bool], what: str) -> None:
        """Wait (at most 30 s: a liveness bound, not a measurement) until `done` holds."""
        with anyio.fail_after(30):
            while not done(self):
                await anyio.sleep(0.02)
        assert done(self), what

    async def hears(self, event: ServerEvent, times: int = 1) -> None:
        await self.until(lambda h: h.count(event) >= times, f"{event} x{times}; heard {self.events}")


@asynccontextmanager
async def listening(
    client: Client, uris: list[str], *, lists: bool = True, tools: bool = False
) -> AsyncIterator[Heard]:
    """A listen stream consumed in the background; `ended`: "graceful" or the error that ended it."""
    heard = Heard()
    ready = anyio.Event()

    async def run() -> None:
        try:
            async with client.listen(
                resources_list_changed=lists, resource_subscriptions=uris, tools_list_changed=tools
            ) as sub:
                assert isinstance(sub, Subscription)
                ready.set()
                async for event in sub:
                    heard.events.append(event)
            heard.ended = "graceful"
        except Exception as exc:  # SubscriptionLost, a refusal before the ack
            heard.ended = f"{type(exc).__name__}: {exc}"
            ready.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        with anyio.fail_after(30):
            await ready.wait()
        yield heard
        tasks.cancel_scope.cancel()


@asynccontextmanager
async def http_client(url: str, token: str) -> AsyncIterator[Client]:
    recorder = RecordingTransport()
    async with (
        httpx2.AsyncClient(
            transport=recorder, headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto", cache=None) as client,
    ):
        yield client
    for method, message in recorder.messages:
        check_server_message(method, message)


async def edit(client: Client, ws: str, note: str, text: str) -> None:
    result = await client.call_tool(
        "notes_edit", {"workspaceUri": ws, "noteId": note, "edits": [{"op": "append", "text": text}]}
    )
    assert not result.is_error, result


def updated(vault: Vault, note: str) -> ResourceUpdated:
    return ResourceUpdated(uri=vault.uri(note))


async def test_each_principal_hears_what_it_may_read_from_the_server_and_the_editor(
    vault: Vault, server: HttpServer
) -> None:
    raw = RawMcp(server.url, ALICE_TOKEN)
    capabilities = raw.request("server/discover").result["capabilities"]
    raw.close()
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}
    watched = [vault.uri("team/plan.md"), vault.uri("secret/keys.md")]
    plan, keys = updated(vault, "team/plan.md"), updated(vault, "secret/keys.md")
    async with (
        http_client(server.url, ALICE_TOKEN) as alice,
        http_client(server.url, BOB_TOKEN) as bob,
        listening(alice, watched) as heard_a,
        listening(bob, watched) as heard_b,
    ):
        assert heard_a.ended == heard_b.ended == ""
        await edit(alice, vault.ws, "team/plan.md", "through the server")
        await heard_a.hears(plan)
        await heard_b.hears(plan)
        await edit(alice, vault.ws, "secret/keys.md", "a secret, through the server")
        await heard_a.hears(keys)
        vault.write("secret/keys.md", "# Keys\nin an editor\n")
        await heard_a.hears(keys, 2)
        made = await alice.call_tool(
            "notes_create", {"workspaceUri": vault.ws, "path": "secret/new.md", "title": "New", "body": "x"}
        )
        assert not made.is_error, made
        await heard_a.hears(LISTED)
        vault.write("team/idea.md", "# Idea\n")  # a note appears in bob's folder, in an editor
        await heard_a.hears(LISTED, 2)
        await heard_b.hears(LISTED)
        vault.write("team/plan.md", "# Plan\nlast\n")
        await heard_a.hears(plan, 2)
        await heard_b.hears(plan, 2)
    assert heard_a.events == [plan, keys, keys, LISTED, LISTED, plan]
    assert heard_b.events == [plan, LISTED, plan], "bob hears nothing of the folder he may not read"


async def test_a_revoked_grant_ends_its_notifications(vault: Vault, server: HttpServer) -> None:
    plan, mine = updated(vault, "team/plan.md"), ResourceUpdated(uri=f"{vault.private}/bob.md")
    try:
        async with (
            http_client(server.url, ALICE_TOKEN) as alice,
            http_client(server.url, BOB_TOKEN) as bob,
            listening(alice, [vault.uri("team/plan.md")], lists=False) as heard_a,
            listening(bob, [vault.uri("team/plan.md"), mine.uri]) as heard_b,
            listening(bob, [], lists=False, tools=True) as bob_tools,
        ):
            await edit(alice, vault.ws, "team/plan.md", "before")
            await heard_b.hears(plan)
            vault.configure(bob_team=False)  # bob's grant of notes/team is revoked while he listens
            await edit(alice, vault.ws, "team/plan.md", "after the revocation")
            await heard_a.hears(plan, 2)
            await edit(bob, vault.private, "bob.md", "bob's own")
            await heard_b.hears(mine)
            assert bob_tools.events == [], "bob's rights are the same: owner of his own workspace"
            vault.configure(bob_team=False, bob_private="reader")  # fewer rights: fewer tools
            await bob_tools.hears(ToolsListChanged())
        assert heard_b.events == [plan, mine], "after the revocation bob hears nothing of notes/team"
    finally:
        vault.configure()


async def test_a_revoked_token_ends_its_stream(vault: Vault, server: HttpServer) -> None:
    """`tools.live` Rule 6: a listen stream outlives the request that authenticated it, so its token
    is verified again; once it is revoked the stream ends, and nothing more reaches it."""
    plan = updated(vault, "team/plan.md")
    try:
        async with (
            http_client(server.url, ALICE_TOKEN) as alice,
            http_client(server.url, BOB_TOKEN) as bob,
            listening(alice, [plan.uri], lists=False) as heard_a,
            listening(bob, [plan.uri], lists=False) as heard_b,
        ):
            await edit(alice, vault.ws, "team/plan.md", "before")
            await heard_b.hears(plan)
            vault.configure(bob_token=False)  # bob's token is revoked while he listens
            await heard_b.until(lambda h: h.ended != "", "bob's stream ends")
            assert heard_b.ended == "graceful", heard_b.ended
            await edit(alice, vault.ws, "team/plan.md", "after the revocation")
            await heard_a.hears(plan, 2)
        assert heard_b.events == [plan], "nothing reaches a stream whose token was revoked"
    finally:
        vault.configure()


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def live_threads(pid: int) -> list[str]:
    """The threads of `notes.live` (drain, relay) running in the server."""
    names = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            names.append(Path(f"/proc/{pid}/task/{task}/comm").read_text().strip())
        except OSError:
            continue  # it ended meanwhile
    return [n for n in names if n.startswith("nw-live")]


async def test_bursts_coalesce_and_slow_or_vanished_listeners_block_nothing(
    vault: Vault, server: HttpServer
) -> None:
    plan = updated(vault, "team/plan.md")
    raw = RawMcp(server.url, ALICE_TOKEN)
    try:
        raw.call("notes_list", {"workspaceUri": vault.ws})  # the index is open before counting
        pid = server.process.pid
        before = open_fds(pid)
        listen = {
            "jsonrpc": "2.0",
            "id": "stalled",
            "method": "subscriptions/listen",
            "params": {
                "notifications": {"resourcesListChanged": True, "resourceSubscriptions": [plan.uri]},
                "_meta": meta(),
            },
        }
        headers = {
            "Authorization": f"Bearer {ALICE_TOKEN}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "subscriptions/listen",
        }
        # one listener never reads its stream; another goes away without a word
        with (
            httpx2.Client(timeout=30) as slow,
            httpx2.Client(timeout=30) as gone,
            slow.stream("POST", server.url, json=listen, headers=headers) as stalled,
        ):
            assert stalled.status_code == 200
            with gone.stream("POST", server.url, json={**listen, "id": "gone"}, headers=headers) as left:
                assert left.status_code == 200
            async with (
                http_client(server.url, ALICE_TOKEN) as alice,
                listening(alice, [plan.uri], lists=False) as heard,
            ):
                assert live_threads(pid) == ["nw-live-drain"]

                def burst(first: int) -> None:
                    for n in range(first, first + 250):  # each through the server: each commit is an event
                        reply = raw.call(
                            "notes_edit",
                            {
                                "workspaceUri": vault.ws,
                                "noteId": "team/plan.md",
                                "edits": [{"op": "append", "text": f"line {n}"}],
                            },
                        )
                        assert not reply.result.get("isError"), reply.result

                started = time.monotonic()
                async with anyio.create_task_group() as writers:  # 1,000 writes, four at a time
                    for first in range(0, 1000, 250):
                        writers.start_soon(anyio.to_thread.run_sync, burst, first)
                await edit(alice, vault.ws, "team/plan.md", "the end")
                bursts = heard.count(plan)
                await heard.hears(plan, bursts + 1)
                elapsed = time.monotonic() - started
            # Rule 2 of tools.live: at most one notification per note per window
            assert heard.count(plan) <= elapsed / WINDOW_SECONDS + 2, (heard.count(plan), elapsed)
        with anyio.fail_after(30):  # every stream above has ended: nothing of theirs is left open
            while open_fds(pid) > before or live_threads(pid):
                await anyio.sleep(0.1)
    finally:
        raw.close()


async def test_listen_is_bounded_per_principal_and_ends_gracefully_on_shutdown(tmp_path: Path) -> None:
    vault = make_vault(tmp_path)
    own = start_http_server(vault.config, tmp_path / "own.log")
    try:
        async with http_client(own.url, ALICE_TOKEN) as alice:
            streams = [
                listening(alice, [vault.uri("team/plan.md")]) for _ in range(MAX_STREAMS_PER_PRINCIPAL + 1)
            ]
            heard = [await s.__aenter__() for s in streams]
            try:
                assert [h.ended for h in heard[:-1]] == [""] * MAX_STREAMS_PER_PRINCIPAL
                assert f"alice has {MAX_STREAMS_PER_PRINCIPAL} listen streams open" in heard[-1].ended
                own.process.send_signal(signal.SIGTERM)
                for h in heard[:-1]:
                    await h.until(lambda h: h.ended != "", "the stream ends")
                    assert h.ended == "graceful", h.ended
            finally:
                for s in reversed(streams):
                    await s.__aexit__(None, None, None)
        # it stops by itself (uvicorn ends by re-raising the SIGTERM it handled), not killed after 10 s
        assert own.process.wait(timeout=30) in (0, -signal.SIGTERM)
    finally:
        own.stop()


@asynccontextmanager
async def stdio_client(root: Path, config: Path, env: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """The SDK client on a stdio server (alice) whose pipes are recorded, then schema-checked."""
    sent, received = root / "stdin.jsonl", root / "stdout.jsonl"
    command = f"tee -a {sent} | {sys.executable} -m notewarden serve --config {config} | tee -a {received}"
    params = StdioServerParameters(command="/bin/sh", args=["-c", command], env={**os.environ, **(env or {})})
    async with Client(params, mode="auto", cache=None) as client:
        yield client
    check_recorded(sent, received)


async def test_stdio_hears_the_server_an_editor_and_another_instance(
    vault: Vault, server: HttpServer
) -> None:
    plan = updated(vault, "team/plan.md")
    (vault.root / "state-stdio").mkdir(mode=0o700, exist_ok=True)
    config = vault.configure(state="state-stdio")  # another instance, with its own index
    async with (
        stdio_client(vault.root, config) as local,
        http_client(server.url, ALICE_TOKEN) as other,
    ):
        await local.call_tool("notes_list", {"workspaceUri": vault.ws})
        async with listening(local, [plan.uri]) as heard:
            await edit(local, vault.ws, "team/plan.md", "through stdio")
            await heard.hears(plan)
            vault.write("team/plan.md", "# Plan\nan editor\n")
            await heard.hears(plan, 2)
            await edit(other, vault.ws, "team/plan.md", "through the HTTP instance")
            await heard.hears(plan, 3)
            vault.write("team/stdio-marker.md", "# M\n")
            await heard.hears(LISTED)
        assert heard.events == [plan, plan, plan, LISTED]


def upgrade(config: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "notewarden", "db", "upgrade", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr


async def test_an_instance_hears_changes_made_through_another_on_postgres(
    tmp_path: Path, pg: PgDatabase
) -> None:
    vault = make_vault(tmp_path)
    config = vault.configure(storage='[storage]\nnotes = "postgres"\n')
    env = {"NOTEWARDEN_DATABASE_URL": database_url(pg.create())}
    upgrade(config, env)
    first = start_http_server(config, tmp_path / "a.log", env=env)
    second = start_http_server(config, tmp_path / "b.log", env=env)
    plan = updated(vault, "team/plan.md")
    try:
        async with (
            http_client(first.url, ALICE_TOKEN) as alice_a,
            http_client(first.url, BOB_TOKEN) as bob_a,
            http_client(second.url, ALICE_TOKEN) as alice_b,
            stdio_client(tmp_path, config, env) as alice_stdio,  # a third instance, on stdio
        ):
            for note in ("team/plan.md", "secret/keys.md"):
                made = await alice_b.call_tool(
                    "notes_create", {"workspaceUri": vault.ws, "path": note, "title": note, "body": "x"}
                )
                assert not made.is_error, made
            watched = [plan.uri, vault.uri("secret/keys.md")]
            async with (
                listening(alice_a, watched) as heard_a,
                listening(bob_a, watched) as heard_b,
                listening(alice_stdio, watched) as heard_stdio,
            ):
                await edit(alice_b, vault.ws, "team/plan.md", "through the other instance")
                await heard_a.hears(plan)
                await heard_b.hears(plan)
                await edit(alice_b, vault.ws, "secret/keys.md", "secret")
                await heard_a.hears(updated(vault, "secret/keys.md"))
                made = await alice_b.call_tool(
                    "notes_create",
                    {"workspaceUri": vault.ws, "path": "secret/more.md", "title": "M", "body": "x"},
                )
                assert not made.is_error, made
                await heard_a.hears(LISTED)
                await edit(alice_b, vault.ws, "team/plan.md", "last")
                await heard_a.hears(plan, 2)
                await heard_b.hears(plan, 2)
                await heard_stdio.hears(plan, 2)
        assert heard_a.events == [plan, updated(vault, "secret/keys.md"), LISTED, plan]
        assert heard_stdio.events == heard_a.events
        assert heard_b.events == [plan, plan]
    finally:
        first.stop()
        second.stop()
    for log in ("a.log", "b.log"):
        assert SECRET_PASSWORD not in (tmp_path / log).read_text()
