"""`notewarden client`: a terminal host for a person to try any 2026-07-28 MCP server.

    notewarden client --stdio "notewarden serve --workspace ~/notes"
    notewarden client --url http://127.0.0.1:8765/mcp --token-env NOTEWARDEN_TOKEN

Built on the official SDK `Client` (it probes `server/discover` and falls back to the
2025-11-25 handshake, so older servers work too) and prompt_toolkit for input.

Rules for what the person sees and types:
1. Nothing is answered for them. Every elicitation ends with an explicit key:
   [a]ccept, [d]ecline or [c]ancel; Ctrl-C while filling a form cancels it.
2. A form is rendered from its requestedSchema: single-select enums as a numbered list,
   multi-select as comma-separated numbers, booleans as y/n, numbers and strings with
   their constraints checked before anything is sent; a blank optional field takes its
   default or is left out.
3. URL mode shows the full URL and asks before opening it; accepting only tells the
   server the person agreed to go there.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tempfile
import webbrowser
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from prompt_toolkit import PromptSession
from prompt_toolkit.validation import ValidationError, Validator

__all__ = ["FieldQuestion", "field_question", "run_client"]

HELP = """commands:
  list                      list the server's tools
  call NAME [JSON]          call a tool; without JSON you are asked for each argument
  help                      this text
  quit                      leave (also Ctrl-D)"""
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})")


class Cancelled(Exception):
    """The person pressed Ctrl-C or Ctrl-D while answering."""


@dataclass(frozen=True)
class FieldQuestion:
    """How one form field is asked: the lines shown, the prompt, and the parser of the answer.

    `parse` returns the value to send, `None` to leave the field out, or raises ValueError
    with a message saying what is allowed.
    """

    lines: list[str]
    prompt: str
    parse: Callable[[str], Any]


def _options(schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    if "oneOf" in schema:
        return [(str(o["const"]), str(o.get("title", o["const"]))) for o in schema["oneOf"]]
    raw_items = schema.get("items")
    items: Mapping[str, Any] = raw_items if isinstance(raw_items, Mapping) else {}
    if "anyOf" in items:
        return [(str(o["const"]), str(o.get("title", o["const"]))) for o in items["anyOf"]]
    values = schema.get("enum") or items.get("enum") or []
    names = schema.get("enumNames") or values
    return [(str(v), str(n)) for v, n in zip(values, names, strict=False)]


def field_question(name: str, schema: Mapping[str, Any], required: bool) -> FieldQuestion:
    """Rule 2: the question for one field of a 2026-07-28 form."""
    title = str(schema.get("title") or name)
    lines = [f"{title}{' (required)' if required else ' (optional)'}"]
    if schema.get("description"):
        lines.append(f"  {schema['description']}")
    default = schema.get("default")
    kind = schema.get("type")

    def blank() -> Any:
        if default is not None:
            return default
        if required:
            raise ValueError("this field is required")
        return None

    if kind == "array" or (kind == "string" and _options(schema)):
        options = _options(schema)
        lines += [f"  {i}) {label}" for i, (_, label) in enumerate(options, 1)]
        multi = kind == "array"
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")

        def pick(text: str) -> Any:
            if not text.strip():
                return blank()
            numbers = [p.strip() for p in text.split(",")] if multi else [text.strip()]
            chosen = []
            for n in numbers:
                if not n.isdigit() or not 1 <= int(n) <= len(options):
                    raise ValueError(f"enter {'numbers' if multi else 'a number'} from 1 to {len(options)}")
                chosen.append(options[int(n) - 1][0])
            if not multi:
                return chosen[0]
            if len(chosen) < low or (high is not None and len(chosen) > int(high)):
                raise ValueError(
                    f"choose between {low} and {high if high is not None else len(options)} options"
                )
            return chosen

        hint = "numbers, comma-separated" if multi else f"1-{len(options)}"
        shown = f", default {default}" if default is not None else ""
        return FieldQuestion(lines, f"{name} [{hint}{shown}]: ", pick)

    if kind == "boolean":

        def yes_no(text: str) -> Any:
            answer = text.strip().lower()
            if not answer:
                return blank()
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no"):
                return False
            raise ValueError("answer y or n")

        shown = "Y/n" if default is True else "y/N" if default is False else "y/n"
        return FieldQuestion(lines, f"{name} [{shown}]: ", yes_no)

    if kind in ("number", "integer"):
        minimum, maximum = schema.get("minimum"), schema.get("maximum")

        def number(text: str) -> Any:
            if not text.strip():
                return blank()
            try:
                value: int | float = int(text) if kind == "integer" else float(text)
            except ValueError:
                raise ValueError(f"enter {'a whole number' if kind == 'integer' else 'a number'}") from None
            if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
                raise ValueError(
                    f"enter a value between {minimum if minimum is not None else '-∞'} and "
                    f"{maximum if maximum is not None else '∞'}"
                )
            return value

        bounds = (
            f" {minimum if minimum is not None else ''}..{maximum if maximum is not None else ''}"
            if (minimum is not None or maximum is not None)
            else ""
        )
        return FieldQuestion(lines, f"{name} [{kind}{bounds}]: ", number)

    fmt = schema.get("format")
    low_len, high_len = schema.get("minLength"), schema.get("maxLength")

    def string(text: str) -> Any:
        if not text:
            return blank()
        if low_len is not None and len(text) < low_len:
            raise ValueError(f"at least {low_len} characters")
        if high_len is not None and len(text) > high_len:
            raise ValueError(f"at most {high_len} characters")
        checks = {"email": _EMAIL, "date": _DATE, "date-time": _DATE_TIME}
        if fmt in checks and not checks[fmt].fullmatch(text):
            raise ValueError(f"enter a valid {fmt}")
        if fmt == "uri" and ":" not in text:
            raise ValueError("enter a URI such as https://example.com")
        return text

    extra = ", ".join(x for x in (fmt, f"{low_len}-{high_len} chars" if low_len or high_len else "") if x)
    return FieldQuestion(lines, f"{name} [{extra or 'text'}]: ", string)


class _ParseValidator(Validator):
    def __init__(self, parse: Callable[[str], Any]) -> None:
        self._parse = parse

    def validate(self, document: Any) -> None:
        try:
            self._parse(document.text)
        except ValueError as exc:
            raise ValidationError(cursor_position=len(document.text), message=str(exc)) from None


class TerminalHost:
    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.session: PromptSession[str] = PromptSession()
        self.out = out

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    async def ask(self, prompt: str, parse: Callable[[str], Any] | None = None) -> str:
        try:
            # always pass a validator: prompt_toolkit keeps the last one given to the session
            validator = _ParseValidator(parse or str)
            return await self.session.prompt_async(prompt, validator=validator, validate_while_typing=False)
        except (KeyboardInterrupt, EOFError):
            raise Cancelled from None

    async def choose_action(self, prompt: str, keys: Mapping[str, str]) -> str:
        def parse(text: str) -> str:
            key = text.strip().lower()[:1]
            if key not in keys:
                raise ValueError("press one of: " + ", ".join(keys))
            return keys[key]

        try:
            return parse(await self.ask(prompt, parse))
        except Cancelled:
            return "cancel"

    # --- elicitation -----------------------------------------------------------------------

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.say("\n── the server asks ─────────────────────────────")
        self.say(params.message)
        if isinstance(params, types.ElicitRequestURLParams):
            return await self.elicit_url(params)
        return await self.elicit_form(params)

    async def elicit_url(self, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        self.say("It asks you to open this page (check the address before you go):")
        self.say(f"  URL: {params.url}")
        action = await self.choose_action(
            "[o]pen it in a browser / [a]ccept, I will open it myself / [d]ecline / [c]ancel: ",
            {"o": "open", "a": "accept", "d": "decline", "c": "cancel"},
        )
        if action == "open":
            opened = webbrowser.open(params.url)
            self.say(
                "Opened in your browser." if opened else "No browser could be started; open the URL yourself."
            )
            action = "accept"
        self.say(f"→ {action}")
        return types.ElicitResult(action=action)  # type: ignore[arg-type]

    async def elicit_form(self, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        schema = params.requested_schema
        required = set(schema.get("required", []))
        questions = {
            name: field_question(name, field, name in required)
            for name, field in schema.get("properties", {}).items()
        }
        for question in questions.values():
            self.say("  • " + question.lines[0])
        action = await self.choose_action(
            "[a]ccept and fill in / [d]ecline / [c]ancel: ", {"a": "accept", "d": "decline", "c": "cancel"}
        )
        if action != "accept":
            self.say(f"→ {action}")
            return types.ElicitResult(action=action)  # type: ignore[arg-type]
        content: dict[str, Any] = {}
        try:
            for name, question in questions.items():
                self.say("\n".join(question.lines))
                value = question.parse(await self.ask(question.prompt, question.parse))
                if value is not None:
                    content[name] = value
        except Cancelled:
            self.say("→ cancel")
            return types.ElicitResult(action="cancel")
        self.say("You answer: " + json.dumps(content, ensure_ascii=False))
        final = await self.choose_action(
            "send it? [a]ccept / [d]ecline / [c]ancel: ", {"a": "accept", "d": "decline", "c": "cancel"}
        )
        self.say(f"→ {final}")
        if final != "accept":
            return types.ElicitResult(action=final)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content=content)

    # --- commands --------------------------------------------------------------------------

    async def list_tools(self, client: Client) -> None:
        listing = await client.list_tools()
        for tool in listing.tools:
            notes = []
            if tool.annotations is not None and tool.annotations.destructive_hint:
                notes.append("destructive")
            if tool.annotations is not None and tool.annotations.read_only_hint:
                notes.append("read-only")
            self.say(f"  {tool.name}{' [' + ', '.join(notes) + ']' if notes else ''}")
            if tool.description:
                self.say(f"      {tool.description.splitlines()[0]}")
            props = tool.input_schema.get("properties", {})
            required = set(tool.input_schema.get("required", []))
            self.say(
                "      arguments: "
                + (", ".join(f"{p}{'*' if p in required else ''}" for p in props) or "none")
            )

    async def ask_arguments(self, tool: types.Tool) -> dict[str, Any]:
        arguments: dict[str, Any] = {}
        required = set(tool.input_schema.get("required", []))
        for name, schema in tool.input_schema.get("properties", {}).items():
            kind = schema.get("type")
            mark = "*" if name in required else ""
            description = f" — {schema['description']}" if schema.get("description") else ""
            self.say(f"{name}{mark} ({kind or 'json'}){description}")

            def parse(text: str, kind: Any = kind, name: str = name) -> Any:
                if not text.strip():
                    if name in required:
                        raise ValueError("this argument is required")
                    return None
                if kind == "string":
                    return text
                try:
                    return json.loads(text)
                except ValueError:
                    raise ValueError(f"enter JSON for a {kind or 'value'}") from None

            value = parse(await self.ask(f"{name}{mark}: ", parse))
            if value is not None:
                arguments[name] = value
        return arguments

    async def call_tool(self, client: Client, line: str) -> None:
        name, _, raw = line.partition(" ")
        listing = await client.list_tools()
        tool = next((t for t in listing.tools if t.name == name), None)
        if tool is None:
            self.say(f"no tool {name!r}; tools: {', '.join(t.name for t in listing.tools)}")
            return
        if raw.strip():
            try:
                arguments = json.loads(raw)
            except ValueError as exc:
                self.say(f"arguments must be a JSON object: {exc}")
                return
        else:
            arguments = await self.ask_arguments(tool)
        result = await client.call_tool(name, arguments)
        self.show_result(result)

    def show_result(self, result: types.CallToolResult) -> None:
        self.say("── result ──────────────────────────────────────")
        if result.is_error:
            error = (result.structured_content or {}).get("error", {})
            self.say(f"ERROR{' [' + error['code'] + ']' if 'code' in error else ''}")
        for block in result.content:
            self.say(block.text if isinstance(block, types.TextContent) else f"<{block.type} content>")
        if result.structured_content and not result.is_error:
            self.say(json.dumps(result.structured_content, indent=2, ensure_ascii=False))

    async def repl(self, client: Client) -> None:
        info = client.server_info
        self.say(f"connected{' to ' + info.name if info is not None else ''}. Type 'help' for commands.")
        while True:
            try:
                line = (await self.ask("mcp> ")).strip()
            except Cancelled:
                return
            command, _, rest = line.partition(" ")
            try:
                if command in ("quit", "exit"):
                    return
                if command in ("list", "tools"):
                    await self.list_tools(client)
                elif command == "call" and rest.strip():
                    await self.call_tool(client, rest.strip())
                elif command in ("help", "?") or command:
                    self.say(HELP)
            except Cancelled:
                self.say("(cancelled)")
            except MCPError as exc:
                self.say(f"the server refused: {exc.error.message} (JSON-RPC {exc.error.code})")
                if exc.error.data:
                    self.say(f"  data: {json.dumps(exc.error.data)}")


def _transport(stdio: str | None, url: str | None, token_env: str | None, errlog: TextIO) -> Any:
    if stdio is not None:
        argv = shlex.split(stdio)
        if not argv:
            raise SystemExit("notewarden client: --stdio needs a command")
        return stdio_client(
            StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ)), errlog
        )
    assert url is not None
    headers = {}
    if token_env is not None:
        token = os.environ.get(token_env)
        if not token:
            raise SystemExit(f"notewarden client: ${token_env} is not set; export the bearer token there")
        headers["Authorization"] = f"Bearer {token}"
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=120))


def run_client(*, stdio: str | None, url: str | None, token_env: str | None) -> int:
    if token_env is not None and url is None:
        print("notewarden client: --token-env goes with --url", file=sys.stderr)
        return 2
    host = TerminalHost()
    fd, log_path = tempfile.mkstemp(prefix="notewarden-client-", suffix=".log")
    with os.fdopen(fd, "w") as errlog:
        if stdio is not None:
            print(f"(server messages on stderr go to {log_path})", flush=True)

        async def main() -> None:
            transport = _transport(stdio, url, token_env, errlog)
            async with Client(transport, elicitation_callback=host.elicit) as client:
                await host.repl(client)

        try:
            anyio.run(main)
        except Exception as exc:  # a failed connection: say what and where, no traceback
            print(f"notewarden client: {exc.__class__.__name__}: {exc}", file=sys.stderr)
            return 1
    return 0
