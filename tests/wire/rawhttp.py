"""A raw Streamable HTTP peer for exact wire shapes: status codes, headers, error data.

Every JSON-RPC message it receives is validated against the 2026-07-28 schema.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx2

from tests.schema import check_server_message

PROTOCOL = "2026-07-28"
FORM = {"elicitation": {"form": {}}}
_ids = itertools.count(1)


@dataclass
class Reply:
    status: int
    headers: httpx2.Headers
    messages: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""

    @property
    def message(self) -> dict[str, Any]:
        assert self.messages, f"no JSON-RPC message in a {self.status} reply: {self.text[:300]!r}"
        return self.messages[-1]

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.message, self.message
        return self.message["result"]

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.message, self.message
        return self.message["error"]


def meta(capabilities: dict[str, Any] | None = None, version: Any = PROTOCOL, **extra: Any) -> dict[str, Any]:
    m = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": FORM if capabilities is None else capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
    }
    m.update(extra)
    return m


class RawMcp:
    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        self.token = token
        self.http = httpx2.Client(timeout=30)

    def close(self) -> None:
        self.http.close()

    def post(
        self,
        body: Any,
        *,
        method: str | None = None,
        name: str | None = None,
        version: str | None = PROTOCOL,
        headers: dict[str, str] | None = None,
        token: str | bool | None = True,
    ) -> Reply:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if version is not None:
            h["MCP-Protocol-Version"] = version
        if method is not None:
            h["Mcp-Method"] = method
        if name is not None:
            h["Mcp-Name"] = name
        bearer = self.token if token is True else token
        if bearer:
            h["Authorization"] = f"Bearer {bearer}"
        h.update(headers or {})
        response = self.http.post(
            self.url, content=body if isinstance(body, bytes) else json.dumps(body), headers=h
        )
        reply = Reply(response.status_code, response.headers, text=response.text)
        ctype = response.headers.get("content-type", "")
        if response.status_code in (401, 403, 413, 421, 503):
            return reply  # HTTP-layer refusals (auth, origin, size, host, config) carry no JSON-RPC message
        if ctype.startswith("application/json") and response.text:
            reply.messages = [response.json()]
        elif ctype.startswith("text/event-stream"):
            for event in response.text.replace("\r\n", "\n").split("\n\n"):
                data = [line[5:].strip() for line in event.splitlines() if line.startswith("data:")]
                if data:
                    reply.messages.append(json.loads("\n".join(data)))
        request_method = body.get("method") if isinstance(body, dict) else None
        for message in reply.messages:
            check_server_message(request_method, message)
        return reply

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        token: str | bool | None = True,
        request_id: int | str | None = None,
    ) -> Reply:
        params = dict(params or {})
        params.setdefault("_meta", meta(capabilities))
        body = {
            "jsonrpc": "2.0",
            "id": next(_ids) if request_id is None else request_id,
            "method": method,
            "params": params,
        }
        name = params.get("name") if method in ("tools/call", "prompts/get") else params.get("uri")
        return self.post(body, method=method, name=name, headers=headers, token=token)

    def call(self, tool: str, arguments: dict[str, Any], **kwargs: Any) -> Reply:
        extra = {k: kwargs.pop(k) for k in ("inputResponses", "requestState") if k in kwargs}
        return self.request("tools/call", {"name": tool, "arguments": arguments, **extra}, **kwargs)
