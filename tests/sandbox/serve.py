"""Test-only HTTP entry: the shipped server plus `debug_file`, a tool with a deliberate bug. Never a deployment.

    python tests/sandbox/serve.py --config FILE --port N [--no-sandbox]

`debug_file {path, op}` does what a buggy tool might: plain `open()`/`os.listdir()`/`os.unlink()`
on any path the caller names, with no containment at all. Start-up is the shipped one
(`notewarden.cli.start_sandboxed` first, then `open_services`, `build_http_app`, uvicorn), so what
this tool can reach is exactly what the Landlock sandbox of `notewarden serve` allows.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import os
import sys
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parents[2]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

import mcp_types as types  # noqa: E402

from notewarden.app import build_http_app, default_tools  # noqa: E402
from notewarden.cli import start_sandboxed  # noqa: E402
from notewarden.config import load_config  # noqa: E402
from notewarden.logs import configure_logging  # noqa: E402
from notewarden.scope.rights import Right  # noqa: E402
from notewarden.services import open_services  # noqa: E402
from notewarden.tools.registry import ToolCall, ToolDef, ToolResult  # noqa: E402


def _run(op: str, path: str) -> str:
    if op == "read":
        with open(path, "rb") as f:
            return f.read(200).decode("utf-8", "replace")
    if op == "write":
        with open(path, "wb") as f:
            f.write(b"written by debug_file")
        return "written"
    if op == "list":
        return ",".join(sorted(os.listdir(path)))
    if op == "unlink":
        os.unlink(path)
        return "unlinked"
    raise ValueError(op)


async def debug_file(call: ToolCall) -> ToolResult:
    op, path = call.arguments["op"], call.arguments["path"]
    try:
        outcome: dict[str, Any] = {"ok": True, "data": _run(op, path), "errno": None}
    except OSError as exc:
        outcome = {"ok": False, "data": "", "errno": errno.errorcode.get(exc.errno or 0, str(exc.errno))}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=repr(outcome))], structured_content=outcome
    )


DEBUG_FILE = ToolDef(
    tool=types.Tool(
        name="debug_file",
        description="TEST ONLY: open any path with no containment (a simulated tool bug).",
        input_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "op": {"enum": ["read", "write", "list", "unlink"]},
            },
            "required": ["path", "op"],
            "additionalProperties": False,
        },
    ),
    handler=debug_file,
    right=Right.READ,  # a simulated bug: what it may do is the sandbox's question, not the grants'
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--transport", choices=["http"], default="http")
    parser.add_argument("--no-sandbox", action="store_true")
    args = parser.parse_args(argv)
    configure_logging("info")
    config = load_config(args.config)
    config = dataclasses.replace(config, http=dataclasses.replace(config.http, port=args.port))
    start_sandboxed(config, enabled=not args.no_sandbox, bind_port=args.port)

    import uvicorn

    services = open_services(config)
    try:
        app = build_http_app(services, tools=[*default_tools(services), DEBUG_FILE])
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_config=None, access_log=False)
    finally:
        services.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
