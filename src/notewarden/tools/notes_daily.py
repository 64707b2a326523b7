"""`notes_daily`: a day's note, created from the workspace's template when it does not exist yet.

* Which note: `[workspace.daily]` in the config (`notes.daily`: folder, Moment.js file-name format,
  template note), Obsidian's defaults otherwise (the root, `YYYY-MM-DD`). `date` is an ISO date or
  today / yesterday / tomorrow on the server's clock; the default is today.
* Creating never replaces a file: a note created by someone else in between is read instead, so
  two calls for one day give one note (`idempotentHint`). The template is read from the workspace
  root, through the same containment as every read; a configured template that is missing or not
  UTF-8 is an error that names it (nothing is created).
"""

from __future__ import annotations

import datetime

import anyio.to_thread

from notewarden.notes.daily import DailyNotes, render_template
from notewarden.notes.history import Change
from notewarden.notes.model import note_stem
from notewarden.notes.store import NoteContent
from notewarden.scope.fs_errors import FsError, NoteExists, NoteMissing
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.notes_read import VERSIONED_NOTE, decode_text
from notewarden.tools.registry import ADDS_ONCE, ToolCall, ToolFailure, ToolResult, declare
from notewarden.tools.results import complete, note_object
from notewarden.tools.schemas import WORKSPACE_URI, args, returns

__all__ = ["NOTES_DAILY", "DailyTool"]

_RELATIVE_DAYS = {"today": 0, "yesterday": -1, "tomorrow": 1}


def _day(text: str | None) -> datetime.date:
    today = datetime.date.today()
    if text is None or text in _RELATIVE_DAYS:
        return today + datetime.timedelta(days=_RELATIVE_DAYS.get(text or "today", 0))
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise ToolFailure(
            "invalid_arguments", f"date {text!r} is not a date: use YYYY-MM-DD, today, yesterday or tomorrow"
        ) from None


class DailyTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        settings = self.services.grants.config.daily_notes.get(scope.workspace, DailyNotes())
        day = _day(call.arguments.get("date"))
        change = call.change(f"created the daily note of {day.isoformat()}")
        content, created = await anyio.to_thread.run_sync(self._open_or_create, scope, settings, day, change)
        return complete(
            {
                "workspaceUri": str(scope.uri),
                "date": day.isoformat(),
                "created": created,
                "note": note_object(scope, content.note, content.version),
                "body": decode_text(content.data, content.note.id),
            }
        )

    def _open_or_create(
        self, scope: WorkspaceScope, settings: DailyNotes, day: datetime.date, change: Change
    ) -> tuple[NoteContent, bool]:
        store = self.services.store
        note_id = settings.note_id(day)
        try:
            return store.read_note(scope, note_id), False
        except NoteMissing:
            pass
        title = note_stem(note_id)
        text = f"# {title}\n"
        if settings.template is not None:
            try:  # the server's own read of a note its configuration names
                template = decode_text(
                    store.read_note(scope.as_server(), settings.template).data, settings.template
                )
            except (FsError, ToolFailure) as exc:
                raise ToolFailure(
                    "template_unusable",
                    f"the daily-note template {settings.template} configured for {scope.workspace} cannot be "
                    f"used ({exc}); fix [workspace.daily] template in the server's config. Nothing was created.",
                ) from None
            now = datetime.datetime.combine(day, datetime.datetime.now().time())
            text = render_template(template, title, now)
        try:
            return store.create_note(scope, note_id, text.encode(), change=change), True
        except NoteExists:  # created in between, by another call or an editor
            return store.read_note(scope, note_id), False


NOTES_DAILY = declare(
    "notes_daily",
    "Daily note",
    "Open a day's note (default today), creating it first from the workspace's daily-note "
    "folder, file-name format and template when it does not exist. Returns its text and version "
    "(for notes_update); created says whether it was made now. Never replaces a file.",
    args(
        {"workspaceUri": WORKSPACE_URI},
        {
            "date": {
                "type": "string",
                "minLength": 5,
                "maxLength": 10,
                "description": "YYYY-MM-DD, or today, yesterday, tomorrow (the server's clock).",
            },
        },
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "date": {"type": "string", "format": "date"},
            "created": {"type": "boolean"},
            "note": VERSIONED_NOTE,
            "body": {"type": "string"},
        },
        ["workspaceUri", "date", "created", "note", "body"],
    ),
    Right.WRITE,
    ADDS_ONCE,
)
