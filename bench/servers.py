"""Start the servers under test as real processes: notewarden (`notewarden serve --transport
http`, the shipped entry point) and the two baselines, each on its own port.

Every server runs under the same uvicorn (h11, asyncio loop, no access log). With `cpus`
a process is pinned to those CPUs, so that on a 2-core machine the server under test has
one core and the load client the other.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.data import BenchNote, write_workspace
from bench.load import Target

__all__ = [
    "BENCH_TOKEN",
    "REPO",
    "Running",
    "StartFailed",
    "start_baseline",
    "start_notewarden",
    "workspace_of",
]

REPO = Path(__file__).resolve().parents[1]
BENCH_TOKEN = "bench-token-" + "b" * 24
BASELINES = {"mcpserver": "bench.baselines.mcpserver_notes", "fastmcp": "bench.baselines.fastmcp_notes"}
# started by name like the others, but not part of run_all's comparison: bench/latency.py (issue 29)
MINIMAL = {"minimal": "bench.baselines.minimal_notes"}


class StartFailed(RuntimeError):
    """The server process exited or did not listen; the message has the end of its log."""


@dataclass
class Running:
    target: Target
    processes: list[subprocess.Popen[bytes]]
    logs: list[Path] = field(default_factory=list)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(
    argv: Sequence[str], log: Path, *, cpus: set[int] | None, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    def pin() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)

    with log.open("ab") as sink:
        return subprocess.Popen(
            list(argv),
            stdout=sink,
            stderr=sink,
            cwd=REPO,
            env={**os.environ, **(env or {})},
            preexec_fn=pin,
        )


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StartFailed(_tail(log))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise StartFailed(f"did not listen within {timeout:.0f} s: {_tail(log)}")


def _tail(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-600:] or "(no output)"


def notewarden_config(workspace: Path, state: Path, storage: dict[str, str] | None) -> str:
    token_hash = hashlib.sha256(BENCH_TOKEN.encode()).hexdigest()
    text = (
        f'state_dir = "{state}"\n'
        f'[[workspace]]\nuri = "file://{workspace}"\n'
        f'[[principal]]\nid = "bench"\nworkspaces = ["file://{workspace}"]\nrights = ["owner"]\n'
        f'token_sha256 = ["{token_hash}"]\n'
        # the load is one principal: lift the per-principal limits to their maximum
        "[limits]\nwrite_per_minute = 100000\ndelete_per_minute = 100000\npurge_per_minute = 100000\n"
    )
    if storage:
        text += "[storage]\n" + "".join(f'{key} = "{value}"\n' for key, value in storage.items())
    return text


def prepare_notewarden(
    work: Path, notes: Iterator[BenchNote], *, tag: str, storage: dict[str, str] | None = None
) -> Path:
    """A fresh workspace folder with `notes`, a state dir and a config file; returns the config."""
    workspace = work / f"workspace-{tag}"
    state = work / f"state-{tag}"
    workspace.mkdir(parents=True)
    state.mkdir(mode=0o700)
    if storage is None or storage.get("notes", "files") == "files":
        write_workspace(workspace, notes)
    config = work / f"notewarden-{tag}.toml"
    config.write_text(notewarden_config(workspace, state, storage))
    return config


def start_notewarden(
    config: Path,
    *,
    name: str = "notewarden",
    instances: int = 1,
    cpus: set[int] | None = None,
    log_level: str = "info",
    launcher: Sequence[str] = (),
) -> Running:
    """`instances` processes of `notewarden serve` on one config (shared state dir and key)."""
    workspace_uri = workspace_of(config)
    processes, logs, urls = [], [], []
    try:
        for i in range(instances):
            port = free_port()
            log = config.with_name(f"{config.stem}-{i}.log")
            argv = [
                *launcher,
                sys.executable,
                "-m",
                "notewarden",
                "--log-level",
                log_level,
                "serve",
                "--config",
                str(config),
                "--transport",
                "http",
                "--port",
                str(port),
            ]
            process = _spawn(argv, log, cpus=cpus)
            processes.append(process)
            logs.append(log)
            _wait_listening(process, port, log)
            urls.append(f"http://127.0.0.1:{port}/mcp")
    except BaseException:
        Running(Target(name, (), ""), processes).stop()
        raise
    return Running(Target(name, tuple(urls), workspace_uri, BENCH_TOKEN), processes, logs)


def start_baseline(
    kind: str,
    work: Path,
    *,
    first: int,
    count: int,
    cpus: set[int] | None = None,
    json_response: bool = False,
) -> Running:
    """A baseline server holding bench notes `first`..`first + count - 1` in memory."""
    port = free_port()
    workspace_uri = f"file://{work}/workspace-{kind}"
    log = work / f"{kind}-{port}.log"
    argv = [
        sys.executable,
        "-m",
        {**BASELINES, **MINIMAL}[kind],
        "--port",
        str(port),
        "--workspace-uri",
        workspace_uri,
        "--first",
        str(first),
        "--notes",
        str(count),
    ]
    if json_response:
        argv.append("--json-response")
    process = _spawn(argv, log, cpus=cpus)
    try:
        _wait_listening(process, port, log)
    except BaseException:
        Running(Target(kind, (), ""), [process]).stop()
        raise
    return Running(Target(kind, (f"http://127.0.0.1:{port}/mcp",), workspace_uri), [process], [log])


def workspace_of(config: Path) -> str:
    for line in config.read_text().splitlines():
        if line.startswith("uri = "):
            return line.split('"')[1]
    raise ValueError(f"{config} names no workspace")
