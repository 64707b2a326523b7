"""One fuzz run against a real `notewarden serve --transport http` process (test and bench share it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from notewarden.demo import write_sample_workspace
from tests.conftest import ALICE_TOKEN, BOB_TOKEN, NO_LIMITS, Deployment, free_port, start_http_server
from tests.fuzz.http_cases import FuzzReport, Seeds, jwt_minter, run
from tests.unit.fsroot_cases import snapshot
from tests.wire.rawhttp import RawMcp

ISSUER = "https://auth.fuzz.test"


@dataclass
class FuzzOutcome:
    report: FuzzReport
    workspace_unchanged: bool
    private_unchanged: bool
    server_alive: bool
    log: Path


def run_fuzz_lab(base: Path, *, cases: int, seed: int) -> FuzzOutcome:
    notes = write_sample_workspace(base / "notes")
    private = base / "private"
    private.mkdir()
    (private / "secret-tps.md").write_text("# TPS report (bob's secret)\n")
    state = base / "state"
    state.mkdir(mode=0o700)
    d = Deployment(base, notes, private, state, base / "notewarden.toml")
    key = ec.generate_private_key(ec.SECP256R1())
    jwks = base / "jwks.json"
    jwk = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    jwks.write_text(json.dumps({"keys": [{**jwk, "kid": "fuzz-1", "alg": "ES256", "use": "sig"}]}))
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    d.write_config(
        alice_subjects=["fuzz-subject"],
        extra=f'[oauth]\nresource = "{resource}"\nissuer = "{ISSUER}"\njwks_file = "{jwks}"\n' + NO_LIMITS,
    )
    server = start_http_server(d.config, base / "fuzz-server.log", port=port)
    try:
        client = RawMcp(server.url, ALICE_TOKEN)
        states = []
        for title in ("TPS report", "stand-up", "report"):
            args = {"workspaceUri": d.notes_uri, "title": title}
            states.append((args, client.call("notes_delete", args).result["requestState"]))
        client.close()
        seeds = Seeds(
            notes_uri=d.notes_uri,
            private_uri=d.private_uri,
            token=ALICE_TOKEN,
            other_token=BOB_TOKEN,
            states=states,
            mint=jwt_minter(key),
            jwt_claims={"iss": ISSUER, "aud": resource, "sub": "fuzz-subject", "scope": "notewarden:read"},
        )
        before_notes, before_private = snapshot(notes), snapshot(private)
        report = run(server.url, seeds, cases=cases, seed=seed, alive=lambda: server.process.poll() is None)
        alive = server.process.poll() is None
        return FuzzOutcome(
            report,
            workspace_unchanged=snapshot(notes) == before_notes,
            private_unchanged=snapshot(private) == before_private,
            server_alive=alive,
            log=server.log,
        )
    finally:
        server.stop()
