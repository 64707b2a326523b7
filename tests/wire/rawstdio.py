"""A raw stdio peer with `RawMcp`'s interface: one server process, one JSON-RPC line per request.

Every line the server writes is validated against the 2026-07-28 schema; notifications are read
and skipped until the answer to the request arrives.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2

from tests.schema import check_server_message
from tests.wire.rawhttp import Reply, meta

_ids = itertools.count(1)


class StdioMcp:
    """`serve --config CONFIG` over its stdin and stdout, with `request` and `call` as `RawMcp` has them."""

    def __init__(self, config: Path, *extra_args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "notewarden", "serve", "--config", str(config), *extra_args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, capabilities: dict[str, Any] | None = None
    ) -> Reply:
        params = dict(params or {})
        params.setdefault("_meta", meta(capabilities))
        request_id = next(_ids)
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        while True:
            raw = self.process.stdout.readline()
            assert raw, f"the server exited ({self.process.poll()}) before answering {method}"
            message = json.loads(raw)
            if message.get("id") == request_id:
                check_server_message(method, message)
                return Reply(200, httpx2.Headers(), [message], raw.decode())
            check_server_message(None, message)

    def call(self, tool: str, arguments: dict[str, Any], **kwargs: Any) -> Reply:
        extra = {k: kwargs.pop(k) for k in ("inputResponses", "requestState") if k in kwargs}
        return self.request("tools/call", {"name": tool, "arguments": arguments, **extra}, **kwargs)
