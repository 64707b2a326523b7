"""A seeded fuzzer for the whole Streamable HTTP endpoint (used by tests/wire and bench/).

`generate(rng, seeds)` yields requests of seven kinds: valid requests with mutated JSON trees,
random JSON values, raw bytes, mutated headers, mutated or replayed `requestState` values,
JWTs with mutated claims and headers, and JSON-RPC batches. `check(case, response)` states
what every response must be: a status below 500 from the allowed set, no traceback, and
when it carries JSON-RPC, messages that validate against the 2026-07-28 schema
(tests/schema.py). A legitimate confirmation (an untouched `requestState` answered with
accept + confirm + a listed note) is never generated, so no note may change.
"""

from __future__ import annotations

import base64
import copy
import json
import random
import string
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import jwt

from tests.schema import check_server_message
from tests.wire.rawhttp import PROTOCOL, meta

ALLOWED_STATUSES = {200, 202, 400, 401, 403, 404, 405, 406, 413, 415, 421, 422}
KINDS = ("mutated", "random_json", "raw_bytes", "headers", "request_state", "jwt", "batch")
INTERESTING_STRINGS = [
    "", " ", "\x00", "\n", "..", "../../etc/passwd", "file:///etc/passwd", "file://evil/x", "%2e%2e%2f",
    "\u202e", "\ud7ff", "💥", "a" * 3000, "null", "true", "{}", "[]", "-32602", "tools/call",
    "notes_delete", "notes_list", "server/discover", "2026-07-28", "1900-01-01", "Bearer", "<script>",
    "${jndi:ldap://x}", "'; DROP TABLE trash; --", "\\\\?\\C:\\", "v1.", "=" * 20,
]  # fmt: skip
INTERESTING_NUMBERS = [0, -1, 1, 2**31, 2**63, -(2**63), 2**64 + 1, 10**30, 1.5, -0.0, 1e308]


@dataclass
class Seeds:
    """Real values the fuzzer mutates: workspace URIs, titles, sealed states and their candidates."""

    notes_uri: str
    private_uri: str
    token: str
    other_token: str
    states: list[tuple[dict[str, Any], str]]  # (arguments, requestState) from real round-1 calls
    mint: Callable[[dict[str, Any], dict[str, Any]], str] | None = None  # (claims, headers) -> JWT
    jwt_claims: dict[str, Any] = field(default_factory=dict)


@dataclass
class Case:
    kind: str
    body: bytes
    headers: dict[str, str]
    method: str | None


# --- values -------------------------------------------------------------------------------------


def random_string(rng: random.Random) -> str:
    if rng.random() < 0.4:
        return rng.choice(INTERESTING_STRINGS)
    alphabet = string.printable + "éß中\u0301\U0001f600"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))


def random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.45:
        return rng.choice(
            [
                None,
                True,
                False,
                rng.choice(INTERESTING_NUMBERS),
                rng.randint(-1000, 1000),
                random_string(rng),
            ]
        )
    if roll < 0.75:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {random_string(rng)[:20]: random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}


# --- templates ----------------------------------------------------------------------------------


def request(method: str, params: dict[str, Any] | None = None, rid: Any = 1) -> dict[str, Any]:
    p = dict(params or {})
    p.setdefault("_meta", meta())
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}


def templates(rng: random.Random, seeds: Seeds) -> dict[str, Any]:
    args, state = rng.choice(seeds.states)
    choice = {"delete_choice": {"action": "accept", "content": {"note_id": "nope.md", "confirm": True}}}
    uri = rng.choice([seeds.notes_uri, seeds.notes_uri + "/reports", seeds.private_uri])
    return rng.choice(
        [
            request("server/discover"),
            request("tools/list"),
            request("tools/call", {"name": "notes_list", "arguments": {"workspaceUri": uri}}),
            request(
                "tools/call", {"name": "notes_delete", "arguments": {"workspaceUri": uri, "title": "TPS"}}
            ),
            request(
                "tools/call",
                {"name": "notes_delete", "arguments": args, "inputResponses": choice, "requestState": state},
            ),
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        ]
    )


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*prefix, i))


def mutate_tree(rng: random.Random, doc: Any) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        targets = list(paths(doc))
        path = rng.choice(targets)
        if not path:
            return random_json(rng)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        op = rng.random()
        if op < 0.35:
            parent[key] = random_json(rng)
        elif op < 0.55 and isinstance(parent, dict):
            del parent[key]
        elif op < 0.7 and isinstance(parent, dict):
            parent[random_string(rng)[:30]] = random_json(rng)
        elif op < 0.85:
            value = parent[key]
            parent[key] = str(value) if not isinstance(value, str) else rng.choice([[value], {"v": value}, 7])
        else:
            nested: Any = parent[key]
            for _ in range(rng.randint(1, 60)):
                nested = [nested]
            parent[key] = nested
    return doc


def mutate_state(rng: random.Random, state: str) -> str:
    for _ in range(10):
        op = rng.randrange(8)
        if op == 0 and state:
            i = rng.randrange(len(state))
            out = state[:i] + rng.choice(string.ascii_letters + "-_=.") + state[i + 1 :]
        elif op == 1:
            out = state[: rng.randrange(len(state) + 1)]
        elif op == 2:
            out = state + random_string(rng)
        elif op == 3:
            out = base64.urlsafe_b64encode(rng.randbytes(rng.randint(0, 300))).decode()
        elif op == 4:
            out = "v1." + base64.urlsafe_b64encode(rng.randbytes(rng.randint(0, 300))).decode().rstrip("=")
        elif op == 5:
            out = state.swapcase()
        elif op == 6:
            out = random_string(rng)
        else:
            half = len(state) // 2
            out = state[half:] + state[:half]
        if out != state:
            return out
    return state + "x"


def headers_for(body: Any, token: str) -> dict[str, str]:
    h = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Authorization": f"Bearer {token}",
    }
    if isinstance(body, dict) and isinstance(body.get("method"), str):
        h["Mcp-Method"] = body["method"]
        params = body.get("params")
        if (
            isinstance(params, dict)
            and body["method"] == "tools/call"
            and isinstance(params.get("name"), str)
        ):
            h["Mcp-Name"] = params["name"]
    return h


def printable(value: str) -> str:
    """What an HTTP/1.1 client can send at all: visible ASCII, no edge spaces (h11's rule)."""
    return "".join(c for c in value if 32 <= ord(c) < 127)[:300].strip()


def header_value(rng: random.Random) -> str:
    return printable(random_string(rng))


def mutate_headers(rng: random.Random, headers: dict[str, str]) -> dict[str, str]:
    h = dict(headers)
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(
            [
                *(
                    "Content-Type",
                    "Accept",
                    "MCP-Protocol-Version",
                    "Mcp-Method",
                    "Mcp-Name",
                    "Authorization",
                ),
                *("Origin", "Mcp-Session-Id", "Last-Event-ID", "X-Forwarded-For", "Content-Encoding"),
            ]
        )
        roll = rng.random()
        if roll < 0.3:
            h.pop(name, None)
        elif name == "Authorization" and roll < 0.6:
            h[name] = rng.choice(["Bearer", "Bearer  x", "Basic dXNlcjpwYXNz", "bearer x", "Bearer a.b.c"])
        elif name == "Origin" and roll < 0.6:
            h[name] = rng.choice(["https://evil.example", "null", "http://localhost:1", "http://127.0.0.1"])
        else:
            h[name] = header_value(rng)
    return h


def mutate_jwt(rng: random.Random, seeds: Seeds) -> str:
    assert seeds.mint is not None
    now = int(time.time())
    claims = dict(seeds.jwt_claims, iat=now, exp=now + 300)
    header: dict[str, Any] = {"kid": "fuzz-1"}
    for _ in range(rng.randint(1, 3)):
        target = rng.choice([claims, header])
        key = rng.choice(
            [*target.keys(), "scope", "scp", "nbf", "aud", "iss", "sub", "exp", "kid", "typ", "jku"]
        )
        if rng.random() < 0.3:
            target.pop(key, None)
        else:
            target[key] = random_json(rng)
    return seeds.mint(claims, header)


def is_legit_confirmation(doc: Any, seeds: Seeds) -> bool:
    """Would this request confirm a real delete? (Never sent: the workspace must not change.)"""
    if not isinstance(doc, dict):
        return False
    params = doc.get("params")
    if not isinstance(params, dict) or params.get("requestState") not in [s for _, s in seeds.states]:
        return False
    answer = json.dumps(params.get("inputResponses"))
    return "accept" in answer and ".md" in answer and "nope.md" not in answer


def generate(rng: random.Random, seeds: Seeds) -> Case:
    kind = rng.choice(KINDS if seeds.mint is not None else [k for k in KINDS if k != "jwt"])
    doc: Any = templates(rng, seeds)
    token = seeds.token if rng.random() < 0.9 else seeds.other_token
    body: bytes | None = None
    if kind == "mutated":
        doc = mutate_tree(rng, doc)
    elif kind == "random_json":
        doc = random_json(rng)
    elif kind == "raw_bytes":
        encoded = json.dumps(doc).encode()
        body = rng.choice(
            [
                rng.randbytes(rng.randint(0, 200)),
                encoded[: rng.randrange(len(encoded) + 1)],
                encoded.replace(b'"', b"'"),
                b"[" * 5000 + b"]" * 5000,
                b'{"a":' * 3000 + b"1" + b"}" * 3000,
                encoded[:-1] + b',"id":2}',
                b"\xff\xfe" + encoded,
                encoded + b"\x00",
                b'{"jsonrpc":"2.0","id":1e999999,"method":"tools/list"}',
                b'{"jsonrpc":"2.0","id":NaN,"method":"tools/list"}',
            ]
        )
    elif kind == "request_state":
        args, state = rng.choice(seeds.states)
        responses = rng.choice(
            [
                {"delete_choice": {"action": "accept", "content": {"note_id": "nope.md", "confirm": True}}},
                {
                    "delete_choice": {
                        "action": rng.choice(["decline", "cancel", "accept", random_string(rng)])
                    }
                },
                {"delete_choice": random_json(rng)},
                random_json(rng),
            ]
        )
        mutated = mutate_state(rng, state) if rng.random() < 0.8 else state
        params: dict[str, Any] = {"name": "notes_delete", "arguments": args, "requestState": mutated}
        if rng.random() < 0.9:
            params["inputResponses"] = responses
        doc = request("tools/call", params, rid=rng.randint(1, 10**6))
    elif kind == "jwt":
        token = mutate_jwt(rng, seeds)
    elif kind == "batch":
        doc = [templates(rng, seeds) for _ in range(rng.randint(0, 3))]
    if is_legit_confirmation(doc, seeds):
        doc["params"]["inputResponses"] = {"delete_choice": {"action": "cancel"}}
    headers = headers_for(doc, token)
    if kind == "headers":
        headers = mutate_headers(rng, headers)
    headers = {k: printable(v) for k, v in headers.items()}
    if body is None:
        body = json.dumps(doc).encode()
    method = doc.get("method") if isinstance(doc, dict) and isinstance(doc.get("method"), str) else None
    return Case(kind, body, headers, method)


# --- checking -----------------------------------------------------------------------------------


def check(case: Case, response: httpx2.Response) -> list[str]:
    """Problems with one response (empty when it is well-formed)."""
    status, text = response.status_code, response.text
    problems = []
    if status >= 500 or status not in ALLOWED_STATUSES:
        problems.append(f"status {status}")
    if "Traceback" in text or 'File "/' in text:
        problems.append("traceback in the body")
    ctype = response.headers.get("content-type", "")
    messages: list[Any] = []
    if status == 202:
        if text:
            problems.append("202 with a body")
        return problems
    if ctype.startswith("text/event-stream"):
        for event in text.split("\n\n"):
            data = [line[5:].strip() for line in event.splitlines() if line.startswith("data:")]
            if data:
                messages.append(json.loads("\n".join(data)))
    elif ctype.startswith("application/json") and text:
        decoded = response.json()
        if status in (401, 403) and isinstance(decoded, dict) and "jsonrpc" not in decoded:
            if "error" not in decoded:
                problems.append(f"{status} JSON without an error member")
            return problems  # an OAuth error body (RFC 6750), not JSON-RPC
        messages = decoded if isinstance(decoded, list) else [decoded]
    if status == 200 and not messages:
        problems.append("200 without a JSON-RPC message")
    for message in messages:
        try:
            check_server_message(case.method, message)
        except AssertionError as exc:
            problems.append(f"invalid message: {str(exc)[:300]}")
    return problems


@dataclass
class FuzzReport:
    cases: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    health_checks: int = 0


def run(
    url: str,
    seeds: Seeds,
    *,
    cases: int,
    seed: int,
    alive: Callable[[], bool],
    health_every: int = 250,
) -> FuzzReport:
    rng = random.Random(seed)
    report = FuzzReport()
    with httpx2.Client(timeout=30) as client:
        for i in range(cases):
            case = generate(rng, seeds)
            response = client.post(url, content=case.body, headers=case.headers)
            report.cases += 1
            report.by_kind[case.kind] += 1
            report.statuses[response.status_code] += 1
            for problem in check(case, response):
                if len(report.problems) < 50:
                    report.problems.append(f"case {i} ({case.kind}): {problem}; body={case.body[:200]!r}")
            if (i + 1) % health_every == 0 or i + 1 == cases:
                report.health_checks += 1
                probe = request("tools/list")
                ok = client.post(url, content=json.dumps(probe), headers=headers_for(probe, seeds.token))
                if not alive() or ok.status_code != 200:
                    report.problems.append(f"server stopped serving after case {i}: {ok.status_code}")
                    break
    return report


def jwt_minter(private_key: Any) -> Callable[[dict[str, Any], dict[str, Any]], str]:
    def mint(claims: dict[str, Any], header: dict[str, Any]) -> str:
        alg = header.get("alg") if isinstance(header.get("alg"), str) else "ES256"
        try:
            return jwt.encode(claims, private_key, algorithm="ES256", headers=header)
        except (TypeError, ValueError, jwt.PyJWTError):
            return f"eyJ{alg}.junk.sig"

    return mint
