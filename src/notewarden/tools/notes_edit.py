"""`notes_create`, `notes_update`, `notes_move`, `notes_edit`: one note at a time, never lost.

* A note's `version` is a digest of its bytes (`model.content_version`). `notes_update` writes
  only if the note is still at `expectedVersion`; otherwise it refuses with `version_conflict` and
  the current version in `structuredContent.error.currentVersion`, and nothing is written. The
  store checks again at the write (`NoteStore.rewrite_note`), so two racing updates of one version
  give one winner and one conflict. Writing what is already there succeeds: a retry is harmless.
* `notes_edit` applies small edits anchored on content (`notes.editing`), all or none. Without
  `expectedVersion` they apply to the note as it is now as long as every anchor still matches (an
  edit made elsewhere in the note since it was read is kept); with it, strictly, as `notes_update`.
  The answer is a receipt (`receipt_object`): versions and sizes before and after, the changed
  line ranges and a capped diff; `dryRun` computes it and writes nothing.
* Every write that replaces content keeps what it replaced in the note's history
  (`previousVersionId`; `notes_history`, `notes_revert`).
* `notes_create` never replaces a file (O_EXCL); `notes_move` never replaces one either
  (RENAME_NOREPLACE) and stays inside the workspace: both paths are note ids, contained by the
  same rules as every other path.
* `notes_move` rewrites every link the move would break, in every note of the workspace (`links`
  Rule 3), all or none (`NoteStore.move_note`); each rewritten note's previous content is in its
  history (`previousVersionId`). `dryRun` lists what would be rewritten and writes nothing.
  `updateLinks: false` moves the note alone. Links to attachments are not links to notes and stay
  as written, unless `updateAttachmentLinks: true` asks (`notes.attachments.WithAttachments`: the
  moved note's relative links to files that stay put). Undo: `notes_revert` each rewritten note to its
  `previousVersionId`, then move the note back with `updateLinks: false` (every byte as before).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import anyio.to_thread

from notewarden.display import visible
from notewarden.notes.editing import Edit, EditError, apply_edits, edit_summary, parse_edits
from notewarden.notes.model import compose_note, content_version
from notewarden.notes.receipt import CHANGES_MAX, DIFF_MAX_CHARS, receipt
from notewarden.notes.store import NoteContent, Rewrite, Rewritten, VersionConflict, replace_with
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.notes_knowledge import similar_notice
from notewarden.tools.notes_read import VERSIONED_NOTE, decode_text
from notewarden.tools.registry import ADDS, DESTRUCTIVE, REPLACES, ToolCall, ToolFailure, ToolResult, declare
from notewarden.tools.results import complete, note_object, note_uri, progress_sink, require_note_path
from notewarden.tools.schemas import NOTE_ID, NOTE_OBJECT, WORKSPACE_URI, args, returns

__all__ = [
    "NOTES_CREATE",
    "NOTES_EDIT",
    "NOTES_MOVE",
    "NOTES_UPDATE",
    "RECEIPT",
    "EditTools",
    "receipt_object",
]

MAX_BODY_CHARS = 1_000_000
MAX_EDITED_BYTES = 8 * 1024 * 1024
"""What a note may grow to by edits: as much as the stores read back."""
MAX_EDITS = 50
REWRITES_SHOWN = 20
"""A rewritten note lists at most this many of its rewritten links (all are counted)."""
BODY: dict[str, Any] = {"type": "string", "maxLength": MAX_BODY_CHARS}
EXPECTED_VERSION: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 128}
SIDE: dict[str, Any] = {
    "type": "object",
    "properties": {"version": {"type": "string"}, "size": {"type": "integer", "minimum": 0}},
    "required": ["version", "size"],
}
RECEIPT: dict[str, Any] = {
    "noteId": {"type": "string"},
    "dryRun": {"type": "boolean", "description": "True: nothing was written."},
    "before": SIDE,
    "after": SIDE,
    "changes": {
        "type": "array",
        "description": f"Changed line ranges, 1-based (at most {CHANGES_MAX}).",
        "items": {
            "type": "object",
            "properties": {
                "oldStart": {"type": "integer", "minimum": 0},
                "oldLines": {"type": "integer", "minimum": 0},
                "newStart": {"type": "integer", "minimum": 0},
                "newLines": {"type": "integer", "minimum": 0},
            },
            "required": ["oldStart", "oldLines", "newStart", "newLines"],
        },
    },
    "changesTruncated": {"type": "boolean"},
    "diff": {
        "type": "string",
        "description": f"Unified diff, hunks only, at most {DIFF_MAX_CHARS} characters.",
    },
    "diffTruncated": {"type": "boolean"},
    "previousVersionId": {
        "type": "string",
        "description": "Where the content before this write was saved: notes_revert with it undoes the write.",
    },
}


def receipt_object(
    scope: WorkspaceScope, note_id: str, before: NoteContent, after_data: bytes, rewritten: Rewritten | None
) -> dict[str, Any]:
    """What a write did (or, without `rewritten`, what a dry run would do): small whatever the size."""
    after_version = rewritten.after.version if rewritten is not None else content_version(after_data)
    changed = receipt(before.data, after_data)
    shown: dict[str, Any] = {
        "workspaceUri": str(scope.uri),
        "noteId": note_id,
        "dryRun": rewritten is None,
        "before": {"version": before.version, "size": len(before.data)},
        "after": {"version": after_version, "size": len(after_data)},
        "changes": [
            {
                "oldStart": c.old_start,
                "oldLines": c.old_lines,
                "newStart": c.new_start,
                "newLines": c.new_lines,
            }
            for c in changed.changes
        ],
        "diff": changed.diff,
        "diffTruncated": changed.diff_truncated,
    }
    if changed.changes_truncated:
        shown["changesTruncated"] = True
    if rewritten is not None and rewritten.saved is not None:
        shown["previousVersionId"] = rewritten.saved.version_id
    return shown


OP_FIELDS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    "append": (frozenset({"text"}), frozenset()),
    "prepend": (frozenset({"text"}), frozenset()),
    "replace": (frozenset({"oldText", "newText"}), frozenset({"expectedCount"})),
    "replace_section": (frozenset({"heading", "text"}), frozenset({"sectionVersion"})),
    "insert": (frozenset({"heading", "position", "text"}), frozenset({"sectionVersion"})),
    "set_frontmatter": (frozenset({"key", "value"}), frozenset()),
    "remove_frontmatter": (frozenset({"key"}), frozenset()),
}
"""Each op: the fields it requires and those it also takes (besides `op`)."""


def checked_edits(raw: Sequence[Mapping[str, Any]]) -> list[Edit]:
    """The edits, each with exactly the fields its op takes (the schema lists every field once)."""
    for index, item in enumerate(raw):
        required, optional = OP_FIELDS[item["op"]]
        given = set(item) - {"op"}
        missing, extra = sorted(required - given), sorted(given - required - optional)
        if missing or extra:
            takes = ", ".join(sorted(required)) + (
                f" (and optionally {', '.join(sorted(optional))})" if optional else ""
            )
            problem = f"missing {', '.join(missing)}" if missing else f"{', '.join(extra)} not allowed"
            raise ToolFailure(
                "invalid_arguments",
                f"edits[{index}] ({item['op']}): {problem}; {item['op']} takes {takes}",
                {"edit": index},
            )
    return parse_edits(raw)


def edited(note_id: str, edits: Sequence[Edit], expected_version: str | None) -> Rewrite:
    """The rewrite `notes_edit` asks of the store: the edits on the current content (Rule 2 of
    `notes.editing`), or a conflict when `expected_version` is no longer current."""

    def rewrite(current: NoteContent) -> bytes:
        if expected_version is not None and current.version != expected_version:
            raise VersionConflict(note_id, current.version)
        try:
            data = apply_edits(decode_text(current.data, note_id), edits).encode()
        except EditError as exc:
            raise ToolFailure(
                exc.code, str(exc), {**exc.details, "currentVersion": current.version}
            ) from None
        if len(data) > MAX_EDITED_BYTES:
            raise ToolFailure(
                "note_too_large",
                f"the edited note would be {len(data)} bytes; notes are read back up to {MAX_EDITED_BYTES}",
                {"currentVersion": current.version},
            )
        return data

    return rewrite


class EditTools:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def create(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        path = require_note_path(call.arguments["path"], "path")
        text = compose_note(call.arguments["title"], call.arguments["body"])
        if text is None:
            raise ToolFailure("invalid_arguments", "title cannot be written so that it reads back unchanged")
        similar = await anyio.to_thread.run_sync(
            self.services.store.similar_titles, scope, call.arguments["title"]
        )
        create = functools.partial(
            self.services.store.create_note, scope, path, text.encode(), change=call.change("created")
        )
        content = await anyio.to_thread.run_sync(create)
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "note": note_object(scope, content.note, content.version),
        }
        if similar:  # issue 14: a mention, not an error
            structured |= {
                "similar": [note_object(scope, n) for n in similar],
                "notice": similar_notice(similar),
            }
        return complete(structured)

    async def update(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        note_id, expected = call.arguments["noteId"], call.arguments["expectedVersion"]
        change = call.change("replaced the whole text")
        rewrite = replace_with(call.arguments["body"].encode(), expected)
        done = await anyio.to_thread.run_sync(
            lambda: self.services.store.rewrite_note(scope, note_id, rewrite, change=change)
        )
        shown = {
            "workspaceUri": str(scope.uri),
            "note": note_object(scope, done.after.note, done.after.version),
            "previousVersion": expected,
        }
        if done.saved is not None:
            shown["previousVersionId"] = done.saved.version_id
        return complete(shown)

    async def edit(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        note_id = call.arguments["noteId"]
        edits = checked_edits(call.arguments["edits"])
        rewrite = edited(note_id, edits, call.arguments.get("expectedVersion"))
        store = self.services.store

        def dry_run() -> dict[str, Any]:
            current = store.read_note(scope, note_id)
            return receipt_object(scope, note_id, current, rewrite(current), None)

        def write() -> dict[str, Any]:
            change = call.change(edit_summary(edits))
            done = store.rewrite_note(scope, note_id, rewrite, change=change)
            return receipt_object(scope, note_id, done.before, done.after.data, done)

        shown = await anyio.to_thread.run_sync(dry_run if call.arguments.get("dryRun") else write)
        return complete(shown)

    async def move(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        note_id = call.arguments["noteId"]
        new_path = require_note_path(call.arguments["newPath"], "newPath")
        dry_run = call.arguments.get("dryRun", False)
        relink, files = (
            call.arguments.get("updateLinks", True),
            call.arguments.get("updateAttachmentLinks", False),
        )
        if files and not relink:
            raise ToolFailure(
                "invalid_arguments",
                "updateAttachmentLinks rewrites links as updateLinks does: leave updateLinks true",
            )
        async with progress_sink(call.report_progress) as progress:
            move = functools.partial(
                self.services.store.move_note,
                scope,
                note_id,
                new_path,
                change=call.change(f"moved {note_id} to {new_path}"),
                relink=relink,
                dry_run=dry_run,
                progress=progress,
                relink_attachments=files,
            )
            moved = await anyio.to_thread.run_sync(move)
        rewritten = []
        for note in moved.relinked:
            shown: dict[str, Any] = {
                "id": note.note_id,
                "uri": note_uri(scope, note.note_id),
                "linksRewritten": len(note.rewrites),
                "links": [
                    {"line": r.line, "before": visible(r.old), "after": visible(r.new)}
                    for r in note.rewrites[:REWRITES_SHOWN]
                ],
            }
            if note.saved is not None:
                shown["previousVersionId"] = note.saved.version_id
            rewritten.append(shown)
        return complete(
            {
                "workspaceUri": str(scope.uri),
                "from": note_id,
                "to": new_path,
                "dryRun": dry_run,
                "note": note_object(scope, moved.note),
                "rewritten": rewritten,
            }
        )


REWRITTEN_NOTE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The note's id (after the move, for the moved note itself)."},
        "uri": {"type": "string"},
        "linksRewritten": {"type": "integer", "minimum": 1},
        "links": {
            "type": "array",
            "description": f"The rewritten links, at most {REWRITES_SHOWN}, as shown to a person.",
            "items": {
                "type": "object",
                "properties": {
                    "line": {"type": "integer", "minimum": 1},
                    "before": {"type": "string"},
                    "after": {"type": "string"},
                },
                "required": ["line", "before", "after"],
            },
        },
        "previousVersionId": RECEIPT["previousVersionId"],
    },
    "required": ["id", "uri", "linksRewritten", "links"],
}


EDIT_ITEM = args(
    {"op": {"enum": list(OP_FIELDS)}},
    {
        "text": {
            **BODY,
            "description": "append, prepend, replace_section, insert: the text, as whole lines.",
        },
        "oldText": {**BODY, "minLength": 1, "description": "replace: the exact text to find."},
        "newText": {**BODY, "description": "replace: what replaces it."},
        "expectedCount": {
            "type": "integer",
            "minimum": 1,
            "maximum": 10_000,
            "description": "replace: how many times oldText must occur (default 1).",
        },
        "heading": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1000,
            "description": "replace_section, insert: a heading's text, its path 'Parent > Heading', or '## Heading'.",
        },
        "position": {
            "enum": ["before", "after", "start", "end"],
            "description": "insert: before the heading, after its whole section, or at the start/end of its content.",
        },
        "sectionVersion": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "description": "From notes_read (section or outline): refuse if the section changed since.",
        },
        "key": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "A top-level front-matter key.",
        },
        "value": {"description": "set_frontmatter: any JSON value."},
    },
)
"""An edit: its op and the fields the op takes (a closed object, like a tool's arguments)."""


NOTES_CREATE = declare(
    "notes_create",
    "Create a note",
    "Create a new markdown note at path (relative to the workspace; missing folders are made) "
    "with title as its heading above body. Never replaces an existing file. The result lists "
    "existing notes with the same or a nearly identical title, if any (similar).",
    args(
        {
            "workspaceUri": WORKSPACE_URI,
            "path": {**NOTE_ID, "description": "Where to create it, ending in .md or .markdown."},
            "title": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"^\S(?:[^\r\n]*\S)?$"},
            "body": BODY,
        }
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "note": VERSIONED_NOTE,
            "similar": {
                "type": "array",
                "items": NOTE_OBJECT,
                "description": "Existing notes with the same or a nearly identical title.",
            },
            "notice": {"type": "string"},
        },
        ["workspaceUri", "note"],
    ),
    Right.WRITE,
    ADDS,
)
NOTES_UPDATE = declare(
    "notes_update",
    "Update a note",
    "Replace a note's whole text with body, only if it is still at expectedVersion (from notes_read). "
    "If someone changed it since, nothing is written and the error carries currentVersion: read it "
    "again, merge, retry.",
    args(
        {
            "workspaceUri": WORKSPACE_URI,
            "noteId": NOTE_ID,
            "body": {**BODY, "description": "The note's complete new markdown text."},
            "expectedVersion": EXPECTED_VERSION,
        }
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "note": VERSIONED_NOTE,
            "previousVersion": {"type": "string"},
            "previousVersionId": RECEIPT["previousVersionId"],
        },
        ["workspaceUri", "note", "previousVersion"],
    ),
    Right.WRITE,
    REPLACES,
)
NOTES_MOVE = declare(
    "notes_move",
    "Move a note",
    "Rename or move a note to newPath inside the same workspace (missing folders are made). "
    "Never replaces an existing file. Every [[wiki]] and Markdown link that would break is "
    "rewritten in every note of the workspace, keeping its form, heading, block and display text, "
    "all or none; each rewritten note's previous content is kept (previousVersionId: notes_revert "
    "undoes it). dryRun: true lists the notes and links it would rewrite and changes nothing; "
    "updateLinks: false moves the note alone.",
    args(
        {
            "workspaceUri": WORKSPACE_URI,
            "noteId": NOTE_ID,
            "newPath": {**NOTE_ID, "description": "The new id, ending in .md or .markdown."},
        },
        {
            "dryRun": {"type": "boolean", "description": "List what would change; change nothing."},
            "updateLinks": {
                "type": "boolean",
                "default": True,
                "description": "Rewrite the links to the note (default true).",
            },
            "updateAttachmentLinks": {
                "type": "boolean",
                "default": False,
                "description": "Also rewrite the moved note's links to attachments (images, pdf, ...) "
                "that would no longer open them from its new folder; attachments never move. Default "
                "false; needs updateLinks.",
            },
        },
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "note": NOTE_OBJECT,
            "dryRun": {"type": "boolean"},
            "rewritten": {"type": "array", "items": REWRITTEN_NOTE},
            "from": {"type": "string"},
            "to": {"type": "string"},
        },
        ["workspaceUri", "note", "dryRun", "rewritten", "from", "to"],
    ),
    Right.WRITE,
    DESTRUCTIVE,
)
NOTES_EDIT = declare(
    "notes_edit",
    "Edit a note",
    "Apply small edits to a note, all or none, each anchored on its content: append / prepend "
    "{text} (prepend goes after the front matter); replace {oldText, newText, expectedCount=1} "
    "(another count is an error listing the lines of every match); replace_section {heading, text} "
    "replaces what is under a heading (heading: 'Projects > Atlas', a unique text, or '## Atlas'); "
    "insert {heading, position: before|after|start|end, text}; set_frontmatter {key, value}; "
    "remove_frontmatter {key}. Without expectedVersion the edits apply to the note as it is now "
    "(someone's change elsewhere in it is kept) and fail if an anchor changed; with it, only if the "
    "note is still at that version. Returns a receipt: versions and sizes before and after, changed "
    "lines, a diff, and previousVersionId (notes_revert undoes the edit). dryRun: true previews "
    "and writes nothing.",
    args(
        {
            "workspaceUri": WORKSPACE_URI,
            "noteId": NOTE_ID,
            "edits": {"type": "array", "items": EDIT_ITEM, "minItems": 1, "maxItems": MAX_EDITS},
        },
        {
            "expectedVersion": EXPECTED_VERSION,
            "dryRun": {"type": "boolean", "description": "Compute the receipt, write nothing."},
        },
    ),
    returns(
        {"workspaceUri": {"type": "string"}, **RECEIPT},
        ["workspaceUri", "noteId", "dryRun", "before", "after", "changes", "diff", "diffTruncated"],
    ),
    Right.WRITE,
    DESTRUCTIVE,
)
