"""`notewarden audit`: the record of every change made through notewarden, newest first.

    notewarden audit [--config FILE] [--workspace URI] [--principal P] [--since WHEN] [--limit N] [--json]

The operator's view (`notes.change_log` Rule 4): it reads the configuration and the database
directly (a SQLite file read-only, or PostgreSQL), so it shows every principal's records; no tool
reaches it. A client's name and version are what the client said, shown as unverified.

Rule 1: one line per record (when, principal, tool, workspace, client, confirmation, summary) and
under it one line per note it touched (what happened to it, its id, versions before and after
where known: the first 12 characters of `model.content_version`). `--json`: one JSON object per
record and line (`Record.as_json`), every field in full.
Rule 2: bad input is exit 2 with what to give instead: a workspace the configuration does not name,
a `--since` that is neither an ISO 8601 date or date-time (UTC without an offset) nor a relative
`<N>d`, `<N>h` or `<N>m` (days, hours, minutes ago). A database without the record table is exit 3,
as `notewarden db status` is for a schema behind.
"""

from __future__ import annotations

import datetime
import json
import re
import time
from collections.abc import Callable

from notewarden.config import Config, ConfigError
from notewarden.display import visible
from notewarden.notes.change_log import NoteEffect, Record
from notewarden.scope.uri import UriError, parse_file_uri

__all__ = ["SINCE_HELP", "parse_since", "run_audit"]

SINCE_FORMS = (
    "an ISO 8601 date or date-time (UTC unless it has an offset, e.g. 2026-12-01 or 2026-12-01T09:30), "
    "or how long ago: 7d, 24h, 30m"
)
SINCE_HELP = f"only records since WHEN: {SINCE_FORMS}"
_RELATIVE = re.compile(r"(\d{1,6})([dhm])")
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60}
_VERSION_SHOWN = 12


def parse_since(text: str, now: float) -> float:
    """`--since` as seconds since the epoch; `ConfigError` naming what is accepted."""
    relative = _RELATIVE.fullmatch(text.strip())
    if relative is not None:
        return now - int(relative.group(1)) * _UNIT_SECONDS[relative.group(2)]
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError(f"--since {text!r} is not a time; give {SINCE_FORMS}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def configured_workspace(config: Config, text: str) -> str:
    """`--workspace` as the records name it: one of the configuration's workspaces."""
    configured = ", ".join(map(str, config.workspaces)) or "none"
    try:
        uri = parse_file_uri(text)
    except UriError as exc:
        raise ConfigError(
            f"--workspace {text!r} is not a file: URI ({exc}); configured: {configured}"
        ) from None
    if uri not in config.workspaces:
        raise ConfigError(
            f"--workspace {uri} is not a workspace of this configuration; configured: {configured}"
        )
    return str(uri)


def run_audit(
    config: Config,
    *,
    workspace: str | None,
    principal: str | None,
    since: str | None,
    limit: int,
    as_json: bool,
    write: Callable[[str], None] = print,
) -> int:
    from notewarden.storage import recorded_changes  # the database drivers: only when reading

    if limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    try:
        records = recorded_changes(
            config,
            workspace=None if workspace is None else configured_workspace(config, workspace),
            principal=principal,
            since=None if since is None else parse_since(since, time.time()),
            limit=limit,
        )
    except FileNotFoundError as exc:
        write(f"database: {exc}")
        return 3
    for record in records:
        write(json.dumps(record.as_json(), ensure_ascii=False) if as_json else shown(record))
    return 0


def shown(record: Record) -> str:
    """Rule 1, for a terminal: every text a client or a note could have written goes through `visible`."""
    client = f"{record.client_name or '(no name)'} {record.client_version}".strip()
    head = [
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.at)),
        record.principal,
        record.tool,
        record.workspace,
        f"client {client} (unverified)",
    ]
    if record.confirmation_id is not None:
        head.append(f"confirmation {record.confirmation_id}")
    lines = ["  ".join(head) + f"  — {record.summary}"]
    lines += [f"    {note_line(note)}" for note in record.notes]
    return visible("\n".join(lines))


def note_line(note: NoteEffect) -> str:
    line = f"{note.effect:<16} {note.note_id}"
    if note.previous_id is not None:
        line += f" (from {note.previous_id})"
    if note.version_before or note.version_after:
        before = (note.version_before or "-")[:_VERSION_SHOWN]
        after = (note.version_after or "-")[:_VERSION_SHOWN]
        line += f"  {before} → {after}"
    return line
