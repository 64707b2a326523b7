"""`notes_tags`, `notes_links`, `notes_recent`: what the notes know, read from the store's index.

* `notes_tags`: every tag (front matter and inline, nested ones as written) with how many notes
  carry it, by tag; `prefix` narrows (case-insensitive); paged like every listing (`cursor`).
* `notes_links`: a note with its tags and front matter (or why the front matter could not be read),
  its outgoing links as written, each resolved as Obsidian resolves it (`notes.links` Rule 1) or
  unresolved, with whether its anchor exists; its embeds apart; and the notes linking to it
  (backlinks), each with the line that links, a page at a time (`limit`, `nextCursor`: `tools.paging`).
  Each link has a `kind`: a link whose path ends in an attachment's extension, and which the index
  did not resolve to a note, is an attachment link, resolved among the files the caller may read
  (`notes.attachments` Rule 2; from the files index's attachments, a few look-ups per link), and
  `missingAttachments` names those that open nothing. On a workspace kept in a database none
  resolves, and `attachmentsUnavailable` says why (they are not reported missing).
* `notes_recent`: the latest change of each note (created, modified, moved, deleted), newest
  first, since an optional instant. Created, moved and deleted are known from when the index
  saw them (notes changed while no server ran are seen at the next start); modified is the
  file's mtime. A change made through notewarden says who made it (`by`, from its record:
  `notes.change_log` Rule 4): only for the notes the caller may read, and only who, with which
  client and tool, and when.

Lines of note text shown to a person (a backlink's context) go through `display.visible`.
Read-only, like every read they are authorized and contained by the `workspaceUri` path.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import anyio.to_thread

from notewarden.display import visible, visible_line
from notewarden.notes.attachments import (
    AttachmentsUnavailable,
    is_attachment,
    link_style,
)
from notewarden.notes.links import UNRESOLVED, Resolution
from notewarden.notes.markdown import tag_key
from notewarden.notes.model import Note
from notewarden.notes.store import LinkView, NoteLinks, NoteStore
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.notes_search import instant_ns
from notewarden.tools.paging import cursor_key, limit_argument, listing_print, make_cursor
from notewarden.tools.registry import ToolCall, ToolResult, declare
from notewarden.tools.results import complete, iso8601, note_object, note_uri
from notewarden.tools.schemas import NOTE_ID, NOTE_OBJECT, WORKSPACE_URI, args, returns

__all__ = ["NOTES_LINKS", "NOTES_RECENT", "NOTES_TAGS", "KnowledgeTools", "similar_notice"]

TAGS_DEFAULT, TAGS_MAX = 100, 500
BACKLINKS_DEFAULT, BACKLINKS_MAX = 50, 200
RECENT_DEFAULT, RECENT_MAX = 20, 100


LINK_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "written": {"type": "string", "description": "The link exactly as written in the note."},
        "line": {"type": "integer", "minimum": 1},
        "kind": {
            "enum": ["note", "attachment"],
            "description": "attachment: its path ends in an attachment's extension (an image, audio, video, "
            "pdf, csv, canvas); its target is a file, readable with resources/read at targetUri.",
        },
        "target": {
            "type": ["string", "null"],
            "description": "The note (its id) or attachment (its path) it opens, or null: unresolved.",
        },
        "targetUri": {"type": "string"},
        "resolvedBy": {
            "enum": ["self", "path", "relative", "name", "alias", None],
            "description": "How it resolved: this note, a path from the root, a path from this note's folder, "
            "a unique or tie-broken file name, an alias.",
        },
        "anchor": {"type": "string", "description": "Heading(s) or ^block-id after #."},
        "anchorFound": {"type": "boolean", "description": "Whether the target has that heading or block."},
    },
    "required": ["written", "line", "kind", "target", "resolvedBy"],
}
MISSING_ATTACHMENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "written": {"type": "string"},
        "line": {"type": "integer", "minimum": 1},
        "path": {"type": "string", "description": "The attachment's path as the link gives it."},
        "embed": {"type": "boolean"},
    },
    "required": ["written", "line", "path", "embed"],
}
BACKLINK_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "uri": {"type": "string"},
        "line": {"type": "integer", "minimum": 1},
        "context": {"type": "string", "description": "The line that links, as shown to a person."},
        "written": {"type": "string"},
        "embed": {"type": "boolean"},
    },
    "required": ["id", "title", "uri", "line", "context", "written", "embed"],
}
CHANGE_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {"enum": ["created", "modified", "moved", "deleted"]},
        "id": {"type": "string", "description": "The note's id (for deleted: the id it had)."},
        "title": {"type": "string"},
        "at": {"type": "string", "format": "date-time"},
        "from": {"type": "string", "description": "moved: the id it had before."},
        "uri": {
            "type": "string",
            "description": "Not for deleted notes (notes_trash_list lists those it keeps).",
        },
        "by": {
            "type": "object",
            "description": "Who made this change through notewarden, from its record; absent for a change "
            "nobody recorded (made in an editor). The client's name and version are what the client said "
            "(unverified).",
            "properties": {
                "principal": {"type": "string"},
                "tool": {"type": "string"},
                "client": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "version": {"type": "string"},
                        "verified": {"const": False},
                    },
                    "required": ["name", "version", "verified"],
                },
                "at": {"type": "string", "format": "date-time"},
            },
            "required": ["principal", "tool", "client", "at"],
        },
    },
    "required": ["kind", "id", "title", "at"],
}


class KnowledgeTools:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def tags(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        prefix = call.arguments.get("prefix", "").lstrip("#")
        limit = call.arguments.get("limit", TAGS_DEFAULT)
        print_ = listing_print("notes_tags", scope.uri, tag_key(prefix))
        after = (
            cursor_key(call.arguments["cursor"], print_, made_by="notes_tags", shape=(str,))[0]
            if "cursor" in call.arguments
            else None
        )
        found = await anyio.to_thread.run_sync(
            functools.partial(self.services.store.tags, scope, prefix=prefix, after=after, limit=limit + 1)
        )
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "tags": [{"tag": t.tag, "notes": t.notes} for t in found[:limit]],
        }
        if len(found) > limit:
            structured["nextCursor"] = make_cursor([tag_key(found[limit - 1].tag)], print_)
        return complete(structured)

    async def links(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        limit = call.arguments.get("limit", BACKLINKS_DEFAULT)
        note_id = call.arguments["noteId"]
        print_ = listing_print("notes_links", scope.uri, note_id)
        after: tuple[str, int] | None = None
        if "cursor" in call.arguments:
            source, seq = cursor_key(
                call.arguments["cursor"], print_, made_by="notes_links", shape=(str, int)
            )
            after = (source, seq)

        def read() -> tuple[NoteLinks, dict[int, Resolution], str | None]:
            found = self.services.store.links(scope, note_id, limit=limit + 1, after=after)
            files, unavailable = attachment_targets(self.services.store, scope, found.note.id, found.outgoing)
            return found, files, unavailable

        found, files, unavailable = await anyio.to_thread.run_sync(read)
        more = len(found.backlinks) > limit
        shown = [_link(scope, link, files.get(i)) for i, link in enumerate(found.outgoing)]
        outgoing = [view for view, link in zip(shown, found.outgoing, strict=True) if not link.embed]
        embeds = [view for view, link in zip(shown, found.outgoing, strict=True) if link.embed]
        missing = [
            {"written": link.written, "line": link.line, "path": link.path, "embed": link.embed}
            for i, link in enumerate(found.outgoing)
            if unavailable is None and i in files and files[i].target is None
        ]
        backlinks = [
            {
                "id": link.source,
                "title": link.source_title,
                "uri": note_uri(scope, link.source),
                "line": link.line,
                "context": visible(link.context),
                "written": link.written,
                "embed": link.embed,
            }
            for link in found.backlinks[:limit]
        ]
        note: dict[str, Any] = {**note_object(scope, found.note), "tags": list(found.tags)}
        if found.properties is not None:
            note["properties"] = found.properties
        if found.property_error is not None:
            note["propertyError"] = visible(found.property_error)
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "note": note,
            "links": outgoing,
            "embeds": embeds,
            "backlinks": backlinks,
            "backlinksTotal": found.backlinks_total,
            "backlinksTruncated": more,
            "missingAttachments": missing,
        }
        if unavailable is not None:
            structured["attachmentsUnavailable"] = unavailable
        if more:
            last = found.backlinks[limit - 1]
            structured["nextCursor"] = make_cursor([last.source, last.seq], print_)
        return complete(structured)

    async def recent(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        since = instant_ns(call.arguments["since"], "since") if "since" in call.arguments else None
        limit = call.arguments.get("limit", RECENT_DEFAULT)
        changes = await anyio.to_thread.run_sync(
            functools.partial(self.services.store.recent, scope, since_ns=since, limit=limit)
        )
        shown = []
        for change in changes:
            item: dict[str, Any] = {
                "kind": change.kind,
                "id": change.note_id,
                "title": change.title,
                "at": iso8601(change.at_ns / 1e9),
            }
            if change.previous is not None:
                item["from"] = change.previous
            if change.kind != "deleted":
                item["uri"] = note_uri(scope, change.note_id)
            if change.by is not None:
                item["by"] = {
                    "principal": change.by.principal,
                    "tool": change.by.tool,
                    "client": {
                        "name": change.by.client_name,
                        "version": change.by.client_version,
                        "verified": False,
                    },
                    "at": iso8601(change.by.at),
                }
            shown.append(item)
        return complete({"workspaceUri": str(scope.uri), "changes": shown})


def similar_notice(notes: Sequence[Note]) -> str:
    """What `notes_create` tells a person about existing notes with (nearly) the same title."""
    shown = "; ".join(f"{visible_line(n.title)} ({visible_line(n.id)})" for n in notes[:5])
    more = f" and {len(notes) - 5} more" if len(notes) > 5 else ""
    return (
        f"Created. {len(notes)} existing note{'s' if len(notes) != 1 else ''} already "
        f"{'have' if len(notes) != 1 else 'has'} the same or a nearly identical title: {shown}{more}. "
        "If one of them was meant, update it instead (notes_read, notes_update)."
    )


def attachment_targets(
    store: NoteStore, scope: WorkspaceScope, source_id: str, links: Sequence[LinkView]
) -> tuple[dict[int, Resolution], str | None]:
    """The attachment each attachment link opens (`notes.attachments` Rule 2: from the store's index of
    attachments, a few look-ups per link), by the link's place; a link the index resolved to a note
    stays a note link. With no workspace folder (a SQL store): none resolved, and why (Rule 6)."""
    wanted = {i: link for i, link in enumerate(links) if link.target is None and is_attachment(link.path)}
    if not wanted:
        return {}, None
    try:
        vault = store.attachment_vault(scope)
    except AttachmentsUnavailable as exc:
        return {i: UNRESOLVED for i in wanted}, str(exc)
    return {
        i: vault.resolve(link.path, link_style(link.written), source_id) for i, link in wanted.items()
    }, None


def _link(scope: WorkspaceScope, link: LinkView, attachment: Resolution | None = None) -> dict[str, Any]:
    target, via = (link.target, link.via) if attachment is None else (attachment.target, attachment.via)
    shown: dict[str, Any] = {
        "written": link.written,
        "line": link.line,
        "kind": "note" if attachment is None else "attachment",
        "target": target,
        "resolvedBy": via,
    }
    if target is not None:
        shown["targetUri"] = note_uri(scope, target)
    if link.anchor:
        shown["anchor"] = link.anchor
    if link.anchor_found is not None and attachment is None:
        shown["anchorFound"] = link.anchor_found
    return shown


NOTES_TAGS = declare(
    "notes_tags",
    "List tags",
    "The tags of a workspace (or of a folder inside it), from front matter and #inline tags, nested "
    "ones as written (area/sub), each with how many notes carry it; prefix narrows. Pass nextCursor "
    "back as cursor for more. Filter notes by tag with notes_search's tags. Read-only.",
    args(
        {"workspaceUri": WORKSPACE_URI},
        {
            "prefix": {"type": "string", "maxLength": 200, "description": "Only tags starting with this."},
            "cursor": {"type": "string", "maxLength": 2000},
            "limit": limit_argument(TAGS_DEFAULT, TAGS_MAX),
        },
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "tags": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"tag": {"type": "string"}, "notes": {"type": "integer", "minimum": 1}},
                    "required": ["tag", "notes"],
                },
            },
            "nextCursor": {"type": "string"},
        },
        ["workspaceUri", "tags"],
    ),
    Right.READ,
)
NOTES_LINKS = declare(
    "notes_links",
    "Links of a note",
    "A note's tags and front-matter properties, its outgoing links ([[wiki]] and Markdown), each "
    "with the note it opens or null when unresolved and whether its #heading or #^block exists; its "
    "embeds (![[...]]); links to attachments (images, pdf, audio, video, csv) apart from note links "
    "(kind), with the file each opens and missingAttachments; and the notes that link to it (backlinks) with the line that links, "
    f"{BACKLINKS_DEFAULT} a page by default (limit up to {BACKLINKS_MAX}; pass nextCursor back as "
    "cursor for more). Read-only.",
    args(
        {"workspaceUri": WORKSPACE_URI, "noteId": NOTE_ID},
        {
            "limit": {
                **limit_argument(BACKLINKS_DEFAULT, BACKLINKS_MAX),
                "description": "Most backlinks on this page.",
            },
            "cursor": {
                "type": "string",
                "maxLength": 8192,
                "description": "nextCursor of the previous page: the backlinks that follow.",
            },
        },
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "note": {
                **NOTE_OBJECT,
                "properties": {
                    **NOTE_OBJECT["properties"],
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "properties": {"type": "object", "description": "The front matter, as JSON."},
                    "propertyError": {
                        "type": "string",
                        "description": "Why the front matter could not be read (the note is indexed all "
                        "the same, without its properties).",
                    },
                },
                "required": [*NOTE_OBJECT["required"], "tags"],
            },
            "links": {"type": "array", "items": LINK_OBJECT},
            "embeds": {"type": "array", "items": LINK_OBJECT},
            "backlinks": {"type": "array", "items": BACKLINK_OBJECT},
            "backlinksTotal": {"type": "integer", "minimum": 0},
            "backlinksTruncated": {
                "type": "boolean",
                "description": "More backlinks follow this page (then nextCursor is set).",
            },
            "nextCursor": {
                "type": "string",
                "description": "Present when more backlinks follow: pass it as cursor.",
            },
            "missingAttachments": {
                "type": "array",
                "items": MISSING_ATTACHMENT,
                "description": "Attachment links and embeds that open no file you may read.",
            },
            "attachmentsUnavailable": {
                "type": "string",
                "description": "Why no attachment link could be resolved: the workspace is kept in a "
                "database, which holds notes only.",
            },
        },
        [
            "workspaceUri",
            "note",
            "links",
            "embeds",
            "backlinks",
            "backlinksTotal",
            "backlinksTruncated",
            "missingAttachments",
        ],
    ),
    Right.READ,
)
NOTES_RECENT = declare(
    "notes_recent",
    "Recent changes",
    "What changed in a workspace (or a folder inside it): notes created, modified, moved (with the "
    "id they had) and deleted, newest first, each with when and, for a change made through notewarden, "
    "who made it (by: principal, tool, and the client's own name and version, unverified); since "
    "narrows to changes after an instant. Read-only.",
    args(
        {"workspaceUri": WORKSPACE_URI},
        {
            "since": {
                "type": "string",
                "minLength": 10,
                "maxLength": 40,
                "description": "ISO 8601 date or date-time (UTC without an offset), e.g. 2026-01-31.",
            },
            "limit": limit_argument(RECENT_DEFAULT, RECENT_MAX),
        },
    ),
    returns(
        {"workspaceUri": {"type": "string"}, "changes": {"type": "array", "items": CHANGE_OBJECT}},
        ["workspaceUri", "changes"],
    ),
    Right.READ,
)
