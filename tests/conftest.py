"""Shared fixtures: real workspace folders, real config files, real server processes."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from notewarden.demo import write_sample_workspace
from tests.pg import pg  # noqa: F401  (the session's PostgreSQL database fixture)

ALICE_TOKEN = "alice-token-" + "a" * 20
BOB_TOKEN = "bob-token-" + "b" * 20
IN_CI = os.environ.get("CI", "").lower() == "true"
NO_LIMITS = (
    "[limits]\nwrite_per_minute = 100000\ndelete_per_minute = 100000\npurge_per_minute = 100000\n"
    "publish_per_minute = 100000\n"
)
"""A `[limits]` table that lets one principal's load through (races, fuzzing)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In scripts/test's fallback-resolver pass, a test parametrized over both transports runs over
    stdio only: the transport does not change how a file is resolved, so its http twin would prove
    nothing the first pass has not (tests/unit/test_fallback_selection.py)."""
    if os.environ.get("NOTEWARDEN_FORCE_FALLBACK") != "1":
        return
    twins = [
        i for i in items if getattr(i, "callspec", None) and i.callspec.params.get("transport") == "http"
    ]
    if twins:
        config.hook.pytest_deselected(items=twins)
        dropped = set(twins)
        items[:] = [i for i in items if i not in dropped]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Deployment:
    """A config on disk: alice owns `notes`, bob owns `private`, each with every right; stdio clients
    are alice."""

    root: Path
    notes: Path
    private: Path
    state: Path
    config: Path

    @property
    def notes_uri(self) -> str:
        return f"file://{self.notes}"

    @property
    def private_uri(self) -> str:
        return f"file://{self.private}"

    def write_config(
        self,
        *,
        alice_workspaces: list[str] | None = None,
        ttl: float = 600,
        alice_subjects: list[str] | None = None,
        alice_rights: list[str] | None = None,
        alice_extra: str = "",
        extra: str = "",
    ) -> None:
        """`alice_subjects`: her OAuth `sub` values; `alice_rights`: the rights of her workspaces
        (default: every right); `alice_extra`: tables of hers (`[[principal.grant]]`,
        `[[principal.token]]`); `extra`: TOML tables appended at the end."""
        alice_rights = ["owner"] if alice_rights is None else alice_rights
        grants = alice_workspaces if alice_workspaces is not None else [self.notes_uri]
        subjects = f"oauth_subjects = {json.dumps(alice_subjects)}\n" if alice_subjects else ""
        self.config.write_text(
            f'state_dir = "{self.state}"\n'
            f"confirmation_ttl_seconds = {ttl}\n"
            f'[[workspace]]\nuri = "{self.notes_uri}"\n'
            f'[[workspace]]\nuri = "{self.private_uri}"\n'
            f'[[principal]]\nid = "alice"\nworkspaces = {json.dumps(grants)}\nrights = {json.dumps(alice_rights)}\n'
            f'token_sha256 = ["{sha256(ALICE_TOKEN)}"]\n{subjects}{alice_extra}'
            f'[[principal]]\nid = "bob"\nworkspaces = ["{self.private_uri}"]\nrights = ["owner"]\n'
            f'token_sha256 = ["{sha256(BOB_TOKEN)}"]\n'
            f'[stdio]\nprincipal = "alice"\n{extra}'
        )
        # the file's mtime is how servers notice a reload; make successive writes distinct
        stamp = time.time() + getattr(self, "_bump", 0)
        self._bump = getattr(self, "_bump", 0) + 1
        os.utime(self.config, (stamp, stamp))


@pytest.fixture(autouse=True, scope="session")
def _private_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test (nor a server it starts) uses the real user's default state dir: a `serve --workspace`
    or an `export` without --state-dir would share one ledger across test runs and branches."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))
    yield
    patch.undo()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _cpu_affinity_kept() -> Iterator[None]:
    """A test that pins the pytest process (bench code run in process) must unpin it: the races of
    later tests need both CPUs."""
    before = os.sched_getaffinity(0)
    yield
    assert os.sched_getaffinity(0) == before, "the test left the pytest process pinned to other CPUs"


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    notes = write_sample_workspace(tmp_path / "notes")
    private = tmp_path / "private"
    private.mkdir()
    (private / "secret-tps.md").write_text("# TPS report (bob's secret)\n")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    d = Deployment(tmp_path, notes, private, state, tmp_path / "notewarden.toml")
    d.write_config()
    return d


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class HttpServer:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        stop_process(self.process)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 10 s: a server the test started, ended by its own handle."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def start_http_server(
    config: Path,
    log: Path,
    *,
    env: dict[str, str] | None = None,
    port: int | None = None,
    extra_args: list[str] | None = None,
    argv: list[str] | None = None,
) -> HttpServer:
    """`argv` replaces `python -m notewarden serve` (a launcher, a test-only entry point)."""
    port = port or free_port()
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [
                *(argv or [sys.executable, "-m", "notewarden", "serve"]),
                "--config",
                str(config),
                "--transport",
                "http",
                "--port",
                str(port),
                *(extra_args or []),
            ],
            stdout=sink,
            stderr=sink,
            env={**os.environ, **(env or {})},
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited ({process.returncode}): {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return HttpServer(f"http://127.0.0.1:{port}/mcp", port, process, log)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"server did not listen within 30 s: {log.read_text()[-2000:]}")


@pytest.fixture
def http_server(deployment: Deployment) -> Iterator[HttpServer]:
    server = start_http_server(deployment.config, deployment.root / "server-a.log")
    yield server
    server.stop()
