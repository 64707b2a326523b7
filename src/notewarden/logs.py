"""Logs on stderr (stdout belongs to the stdio transport): plain text for a person, JSON lines otherwise.

Nothing logs credentials: tokens are hashed on arrival and never stored in a record, and
the sealed `requestState` is never logged (the SDK logs only its rejection reason).

Rules:
1. `--log-format auto` (the default) writes plain text when stderr is a terminal and one JSON
   object per line when it is not (a service manager, a file, a desktop client's log); `text` and
   `json` force one.
2. No ANSI escape reaches either: uvicorn's `color_message` extra is dropped, and escapes are
   removed from every message and string field.
3. One line per event: a message a library logs once per instance of something notewarden runs
   twice (the SDK's session manager: one per response mode) is written once (`_ONCE_LOGGERS`).
4. Start-up is held (`startup_held`): the records `serve` logs while it starts are kept until it
   is up, then written as they are (JSON, followed by one `started` record with the summary), or
   replaced by the start-up block (text; warnings and errors stay lines of their own). A start-up
   that fails writes none of them: its one line says what is wrong and the fix (`setup_checks`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

__all__ = ["LogFormat", "Startup", "configure_logging", "startup_held"]

LogFormat = Literal["auto", "text", "json"]
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}
_DROPPED = {"color_message"}
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_ONCE_LOGGERS = ("mcp.server.streamable_http_manager",)
_text = False


def _plain(value: str) -> str:
    return _ANSI.sub("", value)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": _plain(record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key in _STANDARD or key in _DROPPED or key.startswith("_"):
                continue
            if isinstance(value, str):
                entry[key] = _plain(value)
            else:
                entry[key] = value if isinstance(value, int | float | bool | None) else repr(value)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """`14:03:07 warning: message`: the time, the level when it is worth a look, the message."""

    def format(self, record: logging.LogRecord) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(record.created))
        level = f"{record.levelname.lower()}: " if record.levelno >= logging.WARNING else ""
        text = f"{when} {level}{_plain(record.getMessage())}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _Once(logging.Filter):
    """Rule 3."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[str, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(_ONCE_LOGGERS):
            return True
        key = (record.name, record.getMessage())
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


def configure_logging(level: str = "info", log_format: LogFormat = "auto") -> None:
    global _text
    _text = log_format == "text" or (log_format == "auto" and sys.stderr.isatty())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TextFormatter() if _text else JsonFormatter())
    handler.addFilter(_Once())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # each failed connection attempt: the error notewarden raises from them says it once, with the fix
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)


class _Held(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class Startup:
    """Rule 4: what `startup_held` yields; `announce` once the server is up."""

    def __init__(self, held: _Held, handlers: Sequence[logging.Handler]) -> None:
        self._held = held
        self._handlers = list(handlers)
        self.announced = False

    def announce(self, block: Sequence[str], fields: Mapping[str, Any]) -> None:
        """The held records, then the block (text) or one `started` record carrying `fields` (JSON)."""
        root = logging.getLogger()
        root.handlers[:] = self._handlers
        self.announced = True
        for record in self._held.records:
            if not _text or record.levelno >= logging.WARNING:
                root.handle(record)
        if _text:
            print("\n".join(block), file=sys.stderr, flush=True)
        else:
            logging.getLogger("notewarden.startup").info(block[0], extra={"event": "started", **fields})


@contextlib.contextmanager
def startup_held() -> Iterator[Startup]:
    """Rule 4: records logged inside are held; unless `announce` is called, they are dropped."""
    root = logging.getLogger()
    held = _Held()
    startup = Startup(held, root.handlers)
    root.handlers[:] = [held]
    try:
        yield startup
    finally:
        if not startup.announced:
            root.handlers[:] = startup._handlers
