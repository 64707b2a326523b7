"""Ready-to-paste entries for the MCP clients people use, printed by `notewarden init`.

Rules:
1. Every entry is exactly what its client reads (a JSON object, a command line, a module): a
   test parses each one, and runs the TypeScript one against a real server.
2. A token never goes into a file a client keeps: VS Code asks for it (`${input:…}`), Cursor
   reads it from the environment (`${env:NOTEWARDEN_TOKEN}`), the TypeScript module reads
   `process.env.NOTEWARDEN_TOKEN`. Claude Code's command is single-quoted, so the shell passes
   `${NOTEWARDEN_TOKEN}` on unexpanded: `claude mcp add --scope project` writes it so into the
   project's `.mcp.json`, where Claude Code expands `${VAR}` in headers each time it connects (its
   documented environment variable expansion), never the token itself.
3. The official TypeScript SDK (`@modelcontextprotocol/client` 2.x) speaks 2025-11-25 unless
   told otherwise: its entry sets `versionNegotiation: {mode: "auto"}`, which probes
   `server/discover` and takes the 2026-07-28 path (multi round-trip confirmations).
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TOKEN_ENV", "ClientEntry", "ServerLaunch", "client_entries", "notewarden_command"]

TOKEN_ENV = "NOTEWARDEN_TOKEN"
SERVER_KEY = "notes"


@dataclass(frozen=True, slots=True)
class ServerLaunch:
    """How clients reach this server: the stdio command, and the HTTP endpoint if there is one."""

    command: str
    args: tuple[str, ...]
    http_url: str | None = None


@dataclass(frozen=True, slots=True)
class ClientEntry:
    client: str
    where: str
    syntax: str  # "json" | "shell" | "javascript"
    text: str


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _stdio_entries(launch: ServerLaunch) -> list[ClientEntry]:
    stdio = {"command": launch.command, "args": list(launch.args)}
    return [
        ClientEntry(
            "Claude Desktop",
            "claude_desktop_config.json (Settings → Developer → Edit Config), merged into mcpServers",
            "json",
            _json({"mcpServers": {SERVER_KEY: stdio}}),
        ),
        ClientEntry(
            "VS Code",
            ".vscode/mcp.json in a project, or the user mcp.json (MCP: Open User Configuration)",
            "json",
            _json({"servers": {SERVER_KEY: {"type": "stdio", **stdio}}}),
        ),
        ClientEntry(
            "Cursor",
            "~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project)",
            "json",
            _json({"mcpServers": {SERVER_KEY: stdio}}),
        ),
        ClientEntry(
            "Claude Code",
            "a shell",
            "shell",
            shlex.join(["claude", "mcp", "add", SERVER_KEY, "--", launch.command, *launch.args]),
        ),
        ClientEntry(
            "TypeScript SDK (@modelcontextprotocol/client 2.x)",
            "an ES module (npm install @modelcontextprotocol/client)",
            "javascript",
            _typescript_stdio(launch.command, launch.args),
        ),
    ]


def _http_entries(url: str) -> list[ClientEntry]:
    bearer_env = f"Bearer ${{env:{TOKEN_ENV}}}"
    return [
        ClientEntry(
            "VS Code (HTTP)",
            ".vscode/mcp.json or the user mcp.json; VS Code asks for the token once and keeps it",
            "json",
            _json(
                {
                    "inputs": [
                        {
                            "type": "promptString",
                            "id": "notewarden-token",
                            "description": "notewarden access token",
                            "password": True,
                        }
                    ],
                    "servers": {
                        SERVER_KEY: {
                            "type": "http",
                            "url": url,
                            "headers": {"Authorization": "Bearer ${input:notewarden-token}"},
                        }
                    },
                }
            ),
        ),
        ClientEntry(
            "Cursor (HTTP)",
            f"~/.cursor/mcp.json; export {TOKEN_ENV} before starting Cursor",
            "json",
            _json({"mcpServers": {SERVER_KEY: {"url": url, "headers": {"Authorization": bearer_env}}}}),
        ),
        ClientEntry(
            "Claude Code (HTTP)",
            f"a shell in your project: it writes .mcp.json with the text ${{{TOKEN_ENV}}}, not the token; "
            f"Claude Code reads {TOKEN_ENV} from its environment when it connects",
            "shell",
            shlex.join(
                [
                    *("claude", "mcp", "add", "--scope", "project", "--transport", "http", SERVER_KEY, url),
                    *("--header", f"Authorization: Bearer ${{{TOKEN_ENV}}}"),
                ]
            ),
        ),
        ClientEntry(
            "TypeScript SDK (HTTP)",
            f"an ES module; run it with {TOKEN_ENV} set",
            "javascript",
            _typescript_http(url),
        ),
    ]


_TS_CLIENT = """const client = new Client(
  { name: "my-app", version: "1.0.0" },
  {
    capabilities: { elicitation: { form: {}, url: {} } },
    // 2.x negotiates 2025-11-25 unless asked: "auto" probes server/discover and takes 2026-07-28
    versionNegotiation: { mode: "auto" },
  },
);"""
_TS_USE = """await client.connect(transport);
console.log("protocol:", client.getNegotiatedProtocolVersion());
console.log("tools:", (await client.listTools()).tools.map((tool) => tool.name).join(" "));
await client.close();"""


def _typescript_stdio(command: str, args: Sequence[str]) -> str:
    return (
        'import { Client } from "@modelcontextprotocol/client";\n'
        'import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";\n\n'
        f"{_TS_CLIENT}\n"
        f"const transport = new StdioClientTransport({{ command: {json.dumps(command)}, "
        f"args: {json.dumps(list(args))} }});\n"
        f"{_TS_USE}"
    )


def _typescript_http(url: str) -> str:
    return (
        'import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";\n\n'
        f"{_TS_CLIENT}\n"
        f"const transport = new StreamableHTTPClientTransport(new URL({json.dumps(url)}), {{\n"
        f"  requestInit: {{ headers: {{ Authorization: `Bearer ${{process.env.{TOKEN_ENV}}}` }} }},\n"
        "});\n"
        f"{_TS_USE}"
    )


def client_entries(launch: ServerLaunch) -> list[ClientEntry]:
    """Rule 1: the stdio entries, then the HTTP ones when the config serves HTTP."""
    entries = _stdio_entries(launch)
    if launch.http_url is not None:
        entries += _http_entries(launch.http_url)
    return entries


def notewarden_command() -> str:
    """The absolute path of the `notewarden` script this process runs from (clients need one)."""
    beside = Path(sys.executable).parent / "notewarden"
    return str(beside) if beside.exists() else (shutil.which("notewarden") or str(beside))
