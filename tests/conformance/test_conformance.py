"""The official MCP conformance suite against notewarden's real HTTP application.

Runs `@modelcontextprotocol/conformance@0.2.0-alpha.12 server --requirements 2026-07-28`
(pinned with Node 22 in tests/conformance/node/package-lock.json) against
`tests/conformance/serve.py`: the shipped Streamable HTTP app plus the test-only fixtures,
as a real subprocess on a free loopback port. The expected-failures baseline is
tests/conformance/expected-failures.yaml and is meant to stay empty.

A second run (`test_official_scenarios_on_the_shipped_server`) serves the shipped app alone
(`serve.py --shipped`: no test tool, prompt, resource or completion) and runs the scenarios about
prompts, resources, caching and `subscriptions/listen` that a notes server can meet
(SHIPPED_SCENARIOS), one CLI invocation each (the CLI takes one `--scenario`), against the
baseline tests/conformance/expected-failures-shipped.yaml: only checks that call the suite's
diagnostic `test_*` tools. tests/conformance/README.md says why each other scenario needs fixtures.

Needs Node.js/npm on PATH (the pinned Node 22 runtime itself comes from the npm registry
as the `node` package). A missing npm/npx fails the test; it is never skipped.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from tests.conftest import IN_CI, free_port, sha256

from notewarden.demo import write_sample_workspace

HERE = Path(__file__).resolve().parent
NODE_DIR = HERE / "node"
SERVE = HERE / "serve.py"
EXPECTED_FAILURES = HERE / "expected-failures.yaml"
EXPECTED_FAILURES_SHIPPED = HERE / "expected-failures-shipped.yaml"
REVISION = "2026-07-28"
SUITE_PACKAGE = "@modelcontextprotocol/conformance"
SUITE_VERSION = "0.2.0-alpha.12"
NODE_MAJOR = "v22."
TOKEN_ENV = "NOTEWARDEN_CONFORMANCE_TOKEN"

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SCENARIO_LINE = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed$", re.MULTILINE)
TOTAL_LINE = re.compile(r"^Total: \d+ passed, \d+ failed$", re.MULTILINE)

SHIPPED_SCENARIOS = (
    "resources-list",
    "sep-2164-resource-not-found",
    "prompts-list",
    "caching",
    "input-required-result-unsupported-methods",
    "server-stateless",
)
"""Scored scenarios whose checks need no fixture name, URI or content (README.md, "The shipped server")."""
LISTEN_CHECKS = (
    "sep-2575-server-sends-subscription-ack",
    "sep-2575-server-tags-subscription-id",
    "sep-2575-server-honors-notification-filter",
)
"""server-stateless's checks of `subscriptions/listen` (tools.live), which must pass on the shipped server."""


def tool_on_path(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is not on PATH: the conformance test needs Node.js and npm "
            "(Debian: apt-get install nodejs npm)"
            + (" [CI=true: a missing toolchain is a failure]" if IN_CI else "")
        )
    return path


def node_env() -> dict[str, str]:
    return {
        **os.environ,
        "NO_COLOR": "1",
        "FORCE_COLOR": "0",
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
    }


def run(cmd: list[str], *, timeout: float, cwd: Path = NODE_DIR) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        cwd=cwd,
        env=node_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def installed_suite_version() -> str | None:
    manifest = NODE_DIR / "node_modules" / SUITE_PACKAGE / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def ensure_suite_installed(npm: str, npx: str) -> None:
    """`npm ci` the pinned suite and Node 22 unless exactly that is installed already."""
    node = NODE_DIR / "node_modules" / ".bin" / "node"
    if installed_suite_version() != SUITE_VERSION or not node.exists():
        done = run([npm, "ci", "--no-audit", "--no-fund"], timeout=900)
        assert done.returncode == 0, (
            f"npm ci in {NODE_DIR} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    assert installed_suite_version() == SUITE_VERSION
    version = run([npx, "--no-install", "node", "--version"], timeout=60)
    assert version.stdout.strip().startswith(NODE_MAJOR), (
        f"npx resolves node {version.stdout.strip()!r} {version.stderr.strip()}; the suite needs Node 22 "
        f"from {NODE_DIR}/node_modules/.bin"
    )


def required_server_scenarios(npx: str) -> list[str]:
    """The frozen server list of `conformance list --requirements 2026-07-28`."""
    listing = run([npx, "--no-install", "conformance", "list", "--requirements", REVISION], timeout=120)
    assert listing.returncode == 0, listing.stderr
    text = ANSI.sub("", listing.stdout)
    section = text.split("Server scenarios", 1)[1].split("\n\n", 1)[0]
    scenarios = re.findall(r"^\s+- (\S+)$", section, re.MULTILINE)
    assert scenarios, f"no server scenarios in:\n{text}"
    return scenarios


def write_config(tmp_path: Path, token: str, port: int) -> Path:
    notes = write_sample_workspace(tmp_path / "notes")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    config = tmp_path / "notewarden.toml"
    config.write_text(
        f'state_dir = "{state}"\n'
        f'[[workspace]]\nuri = "file://{notes}"\n'
        f'[[principal]]\nid = "conformance"\nworkspaces = ["file://{notes}"]\n'
        f'token_sha256 = ["{sha256(token)}"]\n'
        f'[http]\nhost = "127.0.0.1"\nport = {port}\n'
    )
    return config


def wait_until_serving(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "server/discover",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": REVISION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
            },
        }
    ).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": REVISION,
        "Mcp-Method": "server/discover",
    }
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"serve.py exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    pytest.fail(f"serve.py did not answer server/discover within 60 s:\n{log.read_text()[-3000:]}")


@contextmanager
def serving(tmp_path: Path, *extra: str) -> Iterator[str]:
    """serve.py (with `extra` arguments) on a free loopback port, ended on exit; yields its /mcp URL."""
    token = "conformance-" + secrets.token_hex(16)
    port = free_port()
    config = write_config(tmp_path, token, port)
    url = f"http://127.0.0.1:{port}/mcp"
    server_log = tmp_path / "serve.log"
    with server_log.open("wb") as sink:
        server = subprocess.Popen(
            [sys.executable, str(SERVE), "--config", str(config), "--port", str(port), *extra],
            stdout=sink,
            stderr=sink,
            stdin=subprocess.DEVNULL,
            env={**os.environ, TOKEN_ENV: token},
        )
    try:
        wait_until_serving(url, server, server_log)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_official_conformance_suite(tmp_path: Path) -> None:
    npm, npx = tool_on_path("npm"), tool_on_path("npx")
    ensure_suite_installed(npm, npx)
    required = required_server_scenarios(npx)

    server_log = tmp_path / "serve.log"
    with serving(tmp_path) as url:
        suite = run(
            [
                npx,
                "--no-install",
                "conformance",
                "server",
                "--url",
                url,
                "--requirements",
                REVISION,
                "--expected-failures",
                str(EXPECTED_FAILURES),
                "--output-dir",
                str(tmp_path / "results"),
            ],
            timeout=900,
        )

    output = ANSI.sub("", suite.stdout + suite.stderr)
    (tmp_path / "conformance.log").write_text(output)
    results = {name: (int(passed), int(failed)) for _, name, passed, failed in SCENARIO_LINE.findall(output)}
    total = TOTAL_LINE.search(output)
    scored_passed = sum(results.get(name, (0, 0))[0] for name in required)
    scored_failed = sum(results.get(name, (0, 0))[1] for name in required)
    not_scored = sorted(set(results) - set(required))
    clean = sum(1 for name in required if name in results and results[name][1] == 0)
    failing_not_scored = ", ".join(name for name in not_scored if results[name][1]) or "none"
    summary = (
        f"conformance {SUITE_VERSION} --requirements {REVISION}: {clean}/{len(required)} required server "
        f"scenarios clean ({scored_passed} checks passed, {scored_failed} failed); CLI "
        f"{total.group(0) if total else 'Total: missing'} including {len(not_scored)} not-scored scenarios "
        f"(failing: {failing_not_scored})"
    )
    print(summary)

    context = f"\n{output[-6000:]}\n--- serve.py log ---\n{server_log.read_text()[-3000:]}"
    missing = [name for name in required if name not in results]
    failing = {name: results[name] for name in required if name in results and results[name][1]}
    # With a baseline the CLI also counts WARNING checks; it lists every such scenario or check here.
    unexpected = (
        re.findall(r"^  ✗ (\S+)$", output.split("Unexpected failures", 1)[1], re.MULTILINE)
        if ("Unexpected failures" in output)
        else []
    )
    stale = (
        re.findall(r"^  ✓ (\S+)$", output.split("Stale baseline entries", 1)[1], re.MULTILINE)
        if ("Stale baseline entries" in output)
        else []
    )
    assert not missing, f"required scenarios that did not run: {missing}{context}"
    assert not failing, f"required scenarios with failed checks: {failing}{context}"
    assert not unexpected, f"failures or warnings not in {EXPECTED_FAILURES.name}: {unexpected}{context}"
    assert not stale, f"{EXPECTED_FAILURES.name} lists entries that now pass, remove them: {stale}{context}"
    assert "Baseline check passed" in output, f"the expected-failures baseline check did not pass{context}"
    assert suite.returncode == 0, f"conformance CLI exited {suite.returncode}{context}"


def shipped_baseline() -> dict[str, set[str]]:
    """expected-failures-shipped.yaml as scenario -> check ids (each entry names one check)."""
    expected: dict[str, set[str]] = {}
    for entry in yaml.safe_load(EXPECTED_FAILURES_SHIPPED.read_text())["server"]:
        scenario, _, check = entry.partition(":")
        assert check, f"{EXPECTED_FAILURES_SHIPPED.name}: {entry!r} must name one check, not a whole scenario"
        expected.setdefault(scenario, set()).add(check)
    return expected


def scenario_checks(results: Path, scenario: str) -> list[dict[str, str]]:
    """The checks.json the CLI wrote for one scenario run (`--output-dir`)."""
    found = sorted(results.glob(f"server-{scenario}-[0-9][0-9][0-9][0-9]-*/checks.json"))
    assert len(found) == 1, f"expected one checks.json of {scenario} in {results}, found {found}"
    checks: list[dict[str, str]] = json.loads(found[0].read_text())
    return checks


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_official_scenarios_on_the_shipped_server(tmp_path: Path) -> None:
    npm, npx = tool_on_path("npm"), tool_on_path("npx")
    ensure_suite_installed(npm, npx)
    required = required_server_scenarios(npx)
    assert set(SHIPPED_SCENARIOS) <= set(required), (
        f"not scored for {REVISION}: {set(SHIPPED_SCENARIOS) - set(required)}"
    )
    expected = shipped_baseline()
    assert set(expected) <= set(SHIPPED_SCENARIOS), f"baseline entries of scenarios not run: {set(expected)}"

    results = tmp_path / "results"
    runs: dict[str, subprocess.CompletedProcess[str]] = {}
    with serving(tmp_path, "--shipped") as url:
        for scenario in SHIPPED_SCENARIOS:  # the CLI runs one --scenario per invocation
            runs[scenario] = run(
                [
                    npx,
                    "--no-install",
                    "conformance",
                    "server",
                    "--url",
                    url,
                    "--scenario",
                    scenario,
                    "--spec-version",  # the 2026-07-28 wire, as --requirements runs it
                    REVISION,
                    "--expected-failures",
                    str(EXPECTED_FAILURES_SHIPPED),
                    "--output-dir",
                    str(results),
                ],
                timeout=300,
            )

    server_log = (tmp_path / "serve.log").read_text()[-3000:]
    summary = []
    for scenario, done in runs.items():
        output = ANSI.sub("", done.stdout + done.stderr)
        (tmp_path / f"{scenario}.log").write_text(output)
        context = f"\n{output[-4000:]}\n--- serve.py --shipped log ---\n{server_log}"
        checks = scenario_checks(results, scenario)
        status = {c["id"]: c["status"] for c in checks}
        not_passed = {c["id"] for c in checks if c["status"] not in ("SUCCESS", "INFO")}
        assert not_passed == expected.get(scenario, set()), (
            f"{scenario} on the shipped server: checks that did not pass {sorted(not_passed)}, "
            f"expected (fixture-only, {EXPECTED_FAILURES_SHIPPED.name}) {sorted(expected.get(scenario, ()))}"
            f"{context}"
        )
        assert "Baseline check passed" in output and done.returncode == 0, (
            f"conformance --scenario {scenario} exited {done.returncode}{context}"
        )
        if scenario == "server-stateless":
            assert {check: status.get(check) for check in LISTEN_CHECKS} == dict.fromkeys(
                LISTEN_CHECKS, "SUCCESS"
            ), context
        summary.append(f"{scenario} {len(checks) - len(not_passed)}/{len(checks)}")
    print(
        f"conformance {SUITE_VERSION} on the shipped server ({REVISION} wire): "
        + ", ".join(summary)
        + f" checks passed; the rest are {EXPECTED_FAILURES_SHIPPED.name} (fixture tools only)"
    )
