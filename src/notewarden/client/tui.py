"""`notewarden client`: a terminal host for a person to try any 2026-07-28 MCP server.

    notewarden client --stdio "notewarden serve --workspace ~/notes"
    notewarden client --url http://127.0.0.1:8765/mcp --token-env NOTEWARDEN_TOKEN

Built on the official SDK `Client` (it probes `server/discover` and falls back to the
2025-11-25 handshake, so older servers work too) and prompt_toolkit for input.

Rules for what the person sees and types:
1. Nothing is answered for them. A form is shown whole (every field, every choice) before
   the explicit [a]ccept / [d]ecline / [c]ancel; Ctrl-C while filling it cancels.
2. A form is rendered from its requestedSchema: single-select enums as a numbered list,
   multi-select as comma-separated numbers, booleans as y/n, numbers and strings with
   their constraints checked before anything is sent; a blank optional field takes its
   default or is left out. The answer is summed up with the choices' titles, not their ids.
3. URL mode shows the full URL and asks before opening it; then waits until the person says
   they are done with the page (Enter), so the server is answered once the page is finished.
4. Every text that comes from the server goes through `display.visible` (format and control
   characters escaped) and is wrapped at word boundaries to the terminal's width. A result is
   printed once, rendered for reading (`client.render`: a search as a ranked list, a note as
   Markdown, a diff coloured, lists of records as tables); `--json` prints the raw result.
5. `call NAME` asks for the required arguments only; optional ones are offered by name and
   skipped unless asked. A `workspaceUri` defaults to the only workspace the server grants
   (its one `file:` resource template), with `call NAME {JSON}` too. A field is named by its
   title; a list is asked with an example; a note id completes with Tab (the server's
   completions), as do commands and tool names. A bad entry is said, and asked again afresh.
6. The client drives the multi round-trip rounds itself, so a cancelled confirmation that the
   server says may be answered again (`retriableUntil`) can be: `again`.
7. A failure names its cause ("401: token not accepted by …", "cannot reach …", "server
   exited: <its last stderr line>"), never an exception group; a token refused in the middle of
   a session says so and what to do. Nothing is written to disk: a stdio server's stderr goes to
   an unnamed temporary file, read back only to explain an exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import textwrap
import webbrowser
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from notewarden.client.render import Style, render_result, style_for
from notewarden.display import visible, visible_line

__all__ = ["FieldQuestion", "describe_failure", "field_question", "run_client"]

HELP = """commands (Tab completes commands, tool names and note ids):
  list                      list the server's tools
  call NAME [JSON]          call a tool; without JSON you are asked for its required arguments
  again                     answer the last cancelled confirmation again
  help                      this text
  quit                      leave (also Ctrl-D)"""
COMMANDS = ("list", "call", "again", "help", "quit")
NOTE_ID_ARGUMENTS = frozenset({"noteId"})
ANSWER_KEYS = {"a": "accept", "d": "decline", "c": "cancel"}
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})")


def _mirrors(text: str, structured: Mapping[str, Any] | None) -> bool:
    """A text block that is the structured content again, as JSON (tools send both)."""
    if structured is None or not text.lstrip().startswith("{"):
        return False
    try:
        return bool(json.loads(text) == structured)
    except ValueError:
        return False


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
    """(value sent, label shown) for each choice; labels made visible (rule 4)."""
    if "oneOf" in schema:
        return [(str(o["const"]), visible_line(str(o.get("title", o["const"])))) for o in schema["oneOf"]]
    raw_items = schema.get("items")
    items: Mapping[str, Any] = raw_items if isinstance(raw_items, Mapping) else {}
    if "anyOf" in items:
        return [(str(o["const"]), visible_line(str(o.get("title", o["const"])))) for o in items["anyOf"]]
    values = schema.get("enum") or items.get("enum") or []
    names = schema.get("enumNames") or values
    return [(str(v), visible_line(str(n))) for v, n in zip(values, names, strict=False)]


def answer_summary(name: str, schema: Mapping[str, Any], value: Any) -> str:
    """One line of the answer as the person chose it: titles of choices, yes/no, the text."""
    title = visible(str(schema.get("title") or name))
    labels = dict(_options(schema))
    if isinstance(value, bool):
        shown = "yes" if value else "no"
    elif isinstance(value, list):
        shown = "; ".join(labels.get(str(v), visible(str(v))) for v in value) or "(none)"
    else:
        shown = labels.get(str(value), visible(str(value)))
    return f"  {title}: {shown}"


def field_question(name: str, schema: Mapping[str, Any], required: bool) -> FieldQuestion:
    """Rule 2: the question for one field of a 2026-07-28 form."""
    title = visible(str(schema.get("title") or name))
    lines = [f"{title}{' (required)' if required else ' (optional)'}"]
    if schema.get("description"):
        lines.append(f"  {visible(str(schema['description']))}")
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
        return FieldQuestion(lines, f"{title} [{hint}{shown}]: ", pick)

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
        return FieldQuestion(lines, f"{title} [{shown}]: ", yes_no)

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
        return FieldQuestion(lines, f"{title} [{kind}{bounds}]: ", number)

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
    return FieldQuestion(lines, f"{title} [{extra or 'text'}]: ", string)


_SAMPLES = {"string": "text", "integer": 1, "number": 1.5, "boolean": True}


def example_of(schema: Mapping[str, Any]) -> Any:
    """A value a person can copy and change: its required members, each with a sample (Rule 5)."""
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return example_of(schema[key][0])
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items") or {}
        if items.get("type") == "string" and not items.get("enum"):
            return ["first", "second"]
        return [example_of(items)]
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        wanted = schema.get("required") or list(props)[:2]
        return {name: example_of(props.get(name) or {}) for name in wanted}
    return _SAMPLES.get(str(kind), "value")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class HostCompleter(Completer):
    """Tab: commands and tool names at the prompt, note ids (the server's completions) when asked
    for one (Rule 5)."""

    def __init__(self, host: TerminalHost) -> None:
        self.host = host

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        return iter(())

    async def get_completions_async(
        self, document: Document, complete_event: CompleteEvent
    ) -> AsyncGenerator[Completion, None]:
        before = document.text_before_cursor
        if self.host.completing_note is not None:
            for note_id in await self.host.note_ids(self.host.completing_note, before):
                yield Completion(note_id, start_position=-len(before))
            return
        words = before.split(" ")
        if len(words) == 1:
            options: list[str] = [c for c in COMMANDS if c.startswith(words[0])]
        elif len(words) == 2 and words[0] == "call":
            options = [t for t in self.host.tool_names if t.startswith(words[1])]
        else:
            options = []
        for option in options:  # a command or a tool name is followed by what comes next
            yield Completion(option + " ", start_position=-len(words[-1]), display=option)


@dataclass
class PendingAnswer:
    """A tool call waiting on the person's answers: what to send again with the sealed state (rule 6)."""

    name: str
    arguments: dict[str, Any]
    request_state: str | None
    input_requests: Mapping[str, Any]


@dataclass
class TerminalHost:
    out: TextIO = sys.stdout
    session: PromptSession[str] | None = None
    retriable: PendingAnswer | None = None
    raw_json: bool = False
    """`--json`: results printed as the server sent them (Rule 4)."""
    style: Style = field(default_factory=lambda: style_for(sys.stdout))
    client: Client | None = None
    tool_names: list[str] = field(default_factory=list)
    completing_note: str | None = None
    """The workspace whose note ids Tab completes, while a note id is asked for."""
    token_env: str | None = None
    trace: HttpTrace | None = None

    def __post_init__(self) -> None:
        if self.session is None:
            self.session = PromptSession(completer=HostCompleter(self), complete_while_typing=False)

    async def note_ids(self, workspace: str, prefix: str) -> list[str]:
        """The server's completions of a note id in `workspace` (a resource template's `noteId`)."""
        client = self.client
        if (
            client is None
            or client.server_capabilities is None
            or client.server_capabilities.completions is None
        ):
            return []
        try:
            listing = await client.list_resource_templates()
            templates = [t.uri_template for t in listing.resource_templates if "{+noteId}" in t.uri_template]
            mine = [t for t in templates if t.startswith(workspace + "/")]
            candidates = mine or [t for t in templates if t.startswith("{+workspaceUri}")]
            if not candidates:
                return []
            template = candidates[0]
            found = await client.complete(
                types.ResourceTemplateReference(type="ref/resource", uri=template),
                {"name": "noteId", "value": prefix},
                {"workspaceUri": workspace},
            )
        except MCPError:
            return []
        return list(found.completion.values)

    def say(self, text: str = "") -> None:
        """Rule 4: wrapped at word boundaries to the terminal width, keeping each line's indent."""
        width = max(40, shutil.get_terminal_size().columns - 1)
        for line in text.splitlines() or [""]:
            indent = line[: len(line) - len(line.lstrip())]
            wrapped = textwrap.fill(
                line,
                width=width,
                subsequent_indent=indent + "  " if line.lstrip().startswith(("•", "-")) else indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
            print(wrapped or line, file=self.out, flush=True)

    def show(self, text: str) -> None:
        """Text from the server (rule 4)."""
        self.say(visible(text))

    async def ask(self, prompt: str, parse: Callable[[str], Any] | None = None) -> str:
        """Rule 5: a refused entry is said under it, and the question asked again on an empty line."""
        assert self.session is not None
        while True:
            try:
                text = await self.session.prompt_async(prompt)
            except (KeyboardInterrupt, EOFError):
                raise Cancelled from None
            try:
                (parse or str)(text)
            except ValueError as exc:
                self.say(f"  ↳ {exc}")
                continue
            return text

    async def choose_action(self, prompt: str, keys: Mapping[str, str]) -> str:
        def parse(text: str) -> str:
            key = text.strip().lower()[:1]
            if key not in keys:
                raise ValueError("press one of: " + ", ".join(k or "Enter" for k in keys))
            return keys[key]

        try:
            return parse(await self.ask(prompt, parse))
        except Cancelled:
            return "cancel"

    # --- elicitation -----------------------------------------------------------------------

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.say("\n── the server asks ─────────────────────────────")
        self.show(params.message)
        if isinstance(params, types.ElicitRequestURLParams):
            return await self.elicit_url(params)
        return await self.elicit_form(params)

    async def elicit_url(self, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        self.say("It asks you to open this page (check the address before you go):")
        print(f"  URL: {visible(params.url)}", file=self.out, flush=True)  # never wrapped: copied whole
        action = await self.choose_action(
            "[o]pen it in a browser / [a]ccept, I will open it myself / [d]ecline / [c]ancel: ",
            {"o": "open", **ANSWER_KEYS},
        )
        if action in ("open", "accept"):
            opened = action == "open" and webbrowser.open(params.url)
            if action == "open":
                self.say(
                    "Opened in your browser."
                    if opened
                    else "No browser could be started: open the URL yourself."
                )
            self.say(
                "Finish on that page, then come back: press Enter when you are done there (c to cancel). "
                "The server is told only then."
            )
            done = await self.choose_action(
                "done? [Enter] / [c]ancel: ", {"": "accept", "c": "cancel", "d": "decline"}
            )
            action = done
        self.say(f"→ {action}")
        return types.ElicitResult(action=action)  # type: ignore[arg-type]

    async def elicit_form(self, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        schema = params.requested_schema
        required = set(schema.get("required", []))
        fields = schema.get("properties", {})
        questions = {name: field_question(name, spec, name in required) for name, spec in fields.items()}
        for question in questions.values():  # rule 1: the whole form before the choice
            self.say("  • " + "\n    ".join(question.lines))
        action = await self.choose_action("[a]ccept and fill in / [d]ecline / [c]ancel: ", ANSWER_KEYS)
        if action != "accept":
            self.say(f"→ {action}")
            return types.ElicitResult(action=action)  # type: ignore[arg-type]
        content: dict[str, Any] = {}
        try:
            for name, question in questions.items():
                value = question.parse(await self.ask(question.prompt, question.parse))
                if value is not None:
                    content[name] = value
        except Cancelled:
            self.say("→ cancel")
            return types.ElicitResult(action="cancel")
        self.say("You answer:")
        for name, value in content.items():
            self.say(answer_summary(name, fields[name], value))
        final = await self.choose_action("send it? [a]ccept / [d]ecline / [c]ancel: ", ANSWER_KEYS)
        self.say(f"→ {final}")
        if final != "accept":
            return types.ElicitResult(action=final)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content=content)

    async def answer(self, requests: Mapping[str, Any]) -> dict[str, types.ElicitResult]:
        """The person's answer to each elicitation of one `input_required` round."""
        answers = {}
        for key, request in requests.items():
            if not isinstance(request, types.ElicitRequest):
                raise Cancelled(
                    f"the server asks for {getattr(request, 'method', key)!r}, which this client does not answer"
                )
            answers[key] = await self.elicit(None, request.params)
        return answers

    # --- commands --------------------------------------------------------------------------

    async def list_tools(self, client: Client) -> None:
        listing = await client.list_tools()
        self.tool_names = [t.name for t in listing.tools]
        for tool in listing.tools:
            notes = []
            if tool.annotations is not None and tool.annotations.destructive_hint:
                notes.append("destructive")
            if tool.annotations is not None and tool.annotations.read_only_hint:
                notes.append("read-only")
            self.show(f"  {tool.name}{' [' + ', '.join(notes) + ']' if notes else ''}")
            if tool.description:
                self.show(f"      {tool.description.splitlines()[0]}")
            props = tool.input_schema.get("properties", {})
            required = set(tool.input_schema.get("required", []))
            self.say(
                "      arguments: "
                + (", ".join(f"{p}{'*' if p in required else ''}" for p in props) or "none")
            )

    async def only_workspace(self, client: Client) -> str | None:
        """Rule 5: the workspace of the server's one `file:` resource template, if it has exactly one."""
        capabilities = client.server_capabilities
        if capabilities is None or capabilities.resources is None:
            return None
        listing = await client.list_resource_templates()
        roots = [t.uri_template.split("/{", 1)[0] for t in listing.resource_templates]
        workspaces = [r for r in roots if r.startswith("file://")]
        return workspaces[0] if len(workspaces) == 1 else None

    async def ask_one(
        self, name: str, schema: Mapping[str, Any], required: bool, workspace: str | None = None
    ) -> Any:
        """Rule 5: one argument, named by its title; a list or an object with an example to copy."""
        kind = schema.get("type")
        title = visible_line(str(schema.get("title") or name))
        description = f" — {visible(str(schema['description']))}" if schema.get("description") else ""
        kinds = {"array": "a list", "object": "an object", "string": "text", "integer": "a whole number"}
        self.say(f"{title}{'*' if required else ''} ({kinds.get(str(kind), kind or 'JSON')}){description}")
        example = example_of(schema) if kind in ("array", "object") else None
        plain_list = kind == "array" and all(isinstance(v, str) for v in example or [])
        if example is not None:
            shown = ", ".join(example) + " (comma-separated) or " if plain_list else ""
            self.say(f"  e.g. {shown}{_compact(example)}")
        if name in NOTE_ID_ARGUMENTS and workspace is not None:
            self.say("  (Tab completes note ids)")

        def parse(text: str) -> Any:
            if not text.strip():
                if required:
                    raise ValueError("this argument is required")
                return None
            if kind == "string":
                return text
            if plain_list and not text.lstrip().startswith("["):
                return [part.strip() for part in text.split(",") if part.strip()]
            try:
                return json.loads(text)
            except ValueError:
                wanted = (
                    f"JSON like {_compact(example)}"
                    if example is not None
                    else f"JSON for {kinds.get(str(kind), 'a value')}"
                )
                raise ValueError(f"enter {wanted}") from None

        self.completing_note = workspace if name in NOTE_ID_ARGUMENTS else None
        try:
            return parse(await self.ask(f"{title}{'*' if required else ''}: ", parse))
        finally:
            self.completing_note = None

    async def ask_arguments(self, client: Client, tool: types.Tool) -> dict[str, Any]:
        """Rule 5: required arguments one by one, then optional ones only by name."""
        arguments: dict[str, Any] = {}
        properties: Mapping[str, Any] = tool.input_schema.get("properties", {})
        required = [n for n in tool.input_schema.get("required", []) if n in properties]
        if "workspaceUri" in properties:
            workspace = await self.only_workspace(client)
            if workspace is not None:
                arguments["workspaceUri"] = workspace
                self.say(f"workspaceUri = {visible(workspace)} (the only workspace granted to you)")
        for name in required:
            if name not in arguments:
                arguments[name] = await self.ask_one(
                    name, properties[name], True, workspace=arguments.get("workspaceUri")
                )
        while optional := [n for n in properties if n not in arguments and n not in required]:

            def pick(text: str, names: list[str] = optional) -> str:
                if text.strip() and text.strip() not in names:
                    raise ValueError("type one of: " + ", ".join(names))
                return text.strip()

            name = pick(
                await self.ask(f"optional {', '.join(optional)} (name to set, Enter to call): ", pick)
            )
            if not name:
                break
            value = await self.ask_one(name, properties[name], False, workspace=arguments.get("workspaceUri"))
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
            if not isinstance(arguments, dict):
                self.say('arguments must be a JSON object, e.g. {"noteId": "todo.md"}')
                return
            if "workspaceUri" in tool.input_schema.get("properties", {}) and "workspaceUri" not in arguments:
                workspace = await self.only_workspace(client)
                if workspace is None:
                    self.say("give workspaceUri in the JSON: this server grants you several workspaces")
                    return
                arguments["workspaceUri"] = workspace
                self.say(f"workspaceUri = {visible(workspace)} (the only workspace granted to you)")
        else:
            arguments = await self.ask_arguments(client, tool)
        await self.run_rounds(client, PendingAnswer(name, arguments, None, {}))

    async def run_rounds(self, client: Client, pending: PendingAnswer) -> None:
        """Rule 6: each `input_required` round answered here, then the result shown once."""
        self.retriable = None
        answers: dict[str, types.ElicitResult] | None = None
        if pending.input_requests:
            answers = await self.answer(pending.input_requests)
        for _ in range(client.input_required_max_rounds):
            result = await client.session.call_tool(
                pending.name,
                pending.arguments,
                input_responses=dict(answers) if answers is not None else None,
                request_state=pending.request_state,
                allow_input_required=True,
            )
            if isinstance(result, types.InputRequiredResult):
                pending = PendingAnswer(
                    pending.name, pending.arguments, result.request_state, result.input_requests or {}
                )
                answers = await self.answer(pending.input_requests)
                continue
            assert isinstance(result, types.CallToolResult)
            self.show_result(result)
            if answers and any(a.action == "cancel" for a in answers.values()):
                until = (result.structured_content or {}).get("retriableUntil")
                if until and pending.request_state is not None:
                    self.retriable = pending
                    self.say(f"Type 'again' to answer it again (until {visible(str(until))}).")
            return
        self.say(f"the server asked more than {client.input_required_max_rounds} rounds; stopped")

    def show_result(self, result: types.CallToolResult) -> None:
        """Rule 4: printed once: rendered for reading (a text that only mirrors the structured
        content as JSON is not printed again), or raw with `--json`."""
        self.say("── result ──────────────────────────────────────")
        structured = result.structured_content
        if self.raw_json:
            raw = structured if structured is not None else result.model_dump(mode="json", by_alias=True)
            self.show(json.dumps(raw, indent=2, ensure_ascii=False))
            return
        if result.is_error:
            error = (structured or {}).get("error", {})
            self.say(f"ERROR{' [' + visible(str(error['code'])) + ']' if 'code' in error else ''}")
        texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
        for block in result.content:
            if not isinstance(block, types.TextContent):
                self.say(f"<{block.type} content>")
        prose = [t for t in texts if not _mirrors(t, structured)]
        for text in prose:
            self.show(text)
        if not prose and structured and not result.is_error:
            for line in render_result(structured, self.style):
                self.say(line)

    async def repl(self, client: Client) -> None:
        self.client = client
        with contextlib.suppress(MCPError):
            self.tool_names = [t.name for t in (await client.list_tools()).tools]
        info = client.server_info
        self.say(
            f"connected{' to ' + visible(info.name) if info is not None else ''}. Type 'help' for commands."
        )
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
                elif command == "again":
                    if self.retriable is None:
                        self.say("nothing to answer again: 'again' follows a cancelled confirmation")
                    else:
                        await self.run_rounds(client, self.retriable)
                elif command in ("help", "?") or command:
                    self.say(HELP)
            except Cancelled as exc:
                self.say(f"(cancelled{': ' + str(exc) if exc.args else ''})")
            except MCPError as exc:
                if self.trace is not None and self.trace.status in (401, 403):
                    self.say(self.refused_token(self.trace.status))
                    continue
                self.show(f"the server refused: {exc.error.message} (JSON-RPC {exc.error.code})")
                if exc.error.data:
                    self.show(f"  data: {json.dumps(exc.error.data)}")

    def refused_token(self, status: int) -> str:
        """Rule 7: the token stopped working in the middle of the session."""
        where = f"${self.token_env}" if self.token_env else "your token"
        if status == 403:
            return (
                f"403: the server accepted {where} but it may not do that (its principal's rights or scopes)."
            )
        return (
            f"401: the server no longer accepts the token in {where} (revoked, or expired). Nothing was "
            f"done. Get a new one (notewarden token add NAME), export it as {self.token_env or 'VAR'}, and "
            "start notewarden client again; quit with Ctrl-D."
        )


# --- connecting, and saying why it failed (rule 7) ---------------------------------------------


@dataclass
class HttpTrace:
    """The last HTTP response the transport saw: the status that explains a failed connection."""

    status: int | None = None

    async def on_response(self, response: httpx2.Response) -> None:
        self.status = response.status_code


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


_HTTP_STATUS = {
    401: "{status}: token not accepted by {url}{hint}",
    403: "{status}: the token was accepted but may not use {url} (its principal or scopes)",
    404: "{status}: no MCP endpoint at {url} (is the path /mcp?)",
}


def describe_failure(
    exc: BaseException, *, url: str | None, status: int | None, token_sent: bool, server_stderr: str
) -> str:
    """Rule 7: one line that names the cause of a failed connection or session."""
    leaves = list(_leaves(exc))
    if url is not None:
        if any(isinstance(e, httpx2.ConnectError) for e in leaves):
            return f"cannot reach {url}: nothing answers there (is the server running on that port?)"
        if status is not None and status >= 400:
            hint = "" if token_sent else " (none was sent: pass --token-env VAR with the token in $VAR)"
            template = _HTTP_STATUS.get(status, "HTTP {status} from {url}")
            return template.format(status=status, url=url, hint=hint)
        if any(isinstance(e, httpx2.TimeoutException) for e in leaves):
            return f"{url} did not answer in time"
    else:
        said = [line.strip() for line in server_stderr.splitlines() if line.strip()]
        if any(isinstance(e, MCPError) and e.error.message == "Connection closed" for e in leaves) or said:
            last = visible(said[-1]) if said else "it printed nothing"
            return f"server exited: {last}"
    first = leaves[0]
    return f"{type(first).__name__}: {first}"


def _transport(
    stdio: str | None, url: str | None, token: str | None, errlog: TextIO, trace: HttpTrace
) -> Any:
    if stdio is not None:
        argv = shlex.split(stdio)
        return stdio_client(
            StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ)), errlog
        )
    assert url is not None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=120, event_hooks={"response": [trace.on_response]})
    return streamable_http_client(url, http_client=http)


def target_problem(stdio: str | None, url: str | None) -> str | None:
    """Rule 7, before anything starts: a `--stdio` command that is not there, a `--url` that is no
    HTTP URL; one line with the fix."""
    if stdio is not None:
        try:
            argv = shlex.split(stdio)
        except ValueError as exc:
            return f"--stdio {stdio!r} is not a command line ({exc}); fix: check its quotes"
        if not argv:
            return '--stdio needs a command; fix: --stdio "notewarden serve --workspace ~/notes"'
        if shutil.which(argv[0]) is None:
            where = "is not an executable file" if "/" in argv[0] else "was not found on PATH"
            return f"the --stdio command {argv[0]!r} {where}; fix: give the server's full path, e.g. {sys.executable} -m notewarden serve …"
    if url is not None:
        parsed = urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            return f"--url {url!r} is not an http(s) URL; fix: the server's endpoint, e.g. --url http://127.0.0.1:8765/mcp"
    return None


def run_client(*, stdio: str | None, url: str | None, token_env: str | None, raw_json: bool = False) -> int:
    if token_env is not None and url is None:
        print("notewarden client: --token-env goes with --url", file=sys.stderr)
        return 2
    problem = target_problem(stdio, url)
    if problem is not None:
        print(f"notewarden client: {problem}", file=sys.stderr)
        return 2
    token = os.environ.get(token_env) if token_env is not None else None
    if token_env is not None and not token:
        print(f"notewarden client: ${token_env} is not set; export the bearer token there", file=sys.stderr)
        return 2
    trace = HttpTrace()
    host = TerminalHost(raw_json=raw_json, token_env=token_env, trace=trace)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:  # no name on disk

        async def main() -> None:
            async with Client(
                _transport(stdio, url, token, errlog, trace), elicitation_callback=host.elicit
            ) as client:
                await host.repl(client)

        try:
            anyio.run(main)
        except Exception as exc:
            errlog.seek(0)
            reason = describe_failure(
                exc, url=url, status=trace.status, token_sent=token is not None, server_stderr=errlog.read()
            )
            print(f"notewarden client: {reason}", file=sys.stderr)
            return 1
    return 0
