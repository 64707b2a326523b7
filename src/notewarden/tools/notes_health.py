"""`notes_health`: what is wrong with a vault, from the store's index alone (issue 27), read-only.

The report (`notes.health` Rule 1 says what each kind means and what is not judged): notes whose
front matter does not parse, empty notes, duplicate and near-duplicate titles, orphans (no link in
or out), broken links and embeds with their line, and, on the files store (its index knows the
attachment files), links and embeds to missing attachments with their line and attachments nothing
links to (the item is the file: its path is the `id`). Items come note by note in id order, so a
report reads folder by folder (`folder` narrows it to one); each item names its folder and says how
to fix it with the existing tools. It pages like every listing (`tools.paging`): the cursor holds
the last item's (note id, kind, link place). Every item is a note (or attachment) in the caller's
read reach (`WorkspaceScope.regions`); `folder` narrows that reach, never widens it.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import anyio.to_thread

from notewarden.display import visible
from notewarden.notes.health import KINDS, HealthItem, HealthKey
from notewarden.scope.fs_errors import PathRejected
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import split_relative
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.paging import cursor_key, listing_print, make_cursor, page_properties
from notewarden.tools.registry import ToolCall, ToolFailure, ToolResult, declare
from notewarden.tools.results import complete, note_uri
from notewarden.tools.schemas import WORKSPACE_URI, args, returns

__all__ = ["NOTES_HEALTH", "HealthTool"]

DEFAULT_LIMIT, MAX_LIMIT = 100, 500

ITEM_OBJECT = returns(
    {
        "kind": {"enum": list(KINDS)},
        "id": {
            "type": "string",
            "description": "The note's id (unlinked_attachment: the attachment's path).",
        },
        "title": {"type": "string", "description": "unlinked_attachment: the file's name."},
        "folder": {
            "type": "string",
            "description": "The note's (or attachment's) folder ('' for the workspace root).",
        },
        "uri": {"type": "string"},
        "line": {
            "type": "integer",
            "minimum": 1,
            "description": "broken_*, missing_attachment_*: the link's line.",
        },
        "written": {"type": "string", "description": "broken_*, missing_attachment_*: the link as written."},
        "target": {"type": "string", "description": "broken_*, missing_attachment_*: the path it names."},
        "others": {
            "type": "array",
            "items": {"type": "string"},
            "description": "duplicate_title, near_duplicate_title: the other notes with that title, by id.",
        },
        "problem": {"type": "string"},
        "fix": {"type": "string", "description": "How to fix it with the existing tools."},
    },
    ["kind", "id", "title", "folder", "uri", "problem", "fix"],
)


def _said(item: HealthItem) -> tuple[str, str]:
    """What is wrong, and how to fix it with the existing tools."""
    if item.kind == "front_matter":
        return (
            "its front matter does not parse, so its properties, tags and aliases are ignored",
            "notes_read it (outline: true shows the front matter's lines) and repair the block with "
            "notes_edit replace (or notes_update); set_frontmatter refuses a block that does not parse",
        )
    if item.kind == "empty":
        return (
            "it is empty (nothing but a title heading, or blank)",
            "write it with notes_edit append, or notes_delete it",
        )
    if item.kind in ("duplicate_title", "near_duplicate_title"):
        same = "the same title" if item.kind == "duplicate_title" else "nearly the same title"
        return (
            f"{len(item.others)} other note(s) have {same}: {', '.join(item.others[:5])}"
            + (" …" if len(item.others) > 5 else ""),
            "notes_read them; if they are one note, merge with notes_edit and notes_delete the other; "
            "else tell them apart with notes_edit set_frontmatter title (or notes_move to rename)",
        )
    if item.kind == "orphan":
        return (
            "no note links to it and it links to none",
            "link it from a related note with notes_edit (notes_search finds one), notes_move it to an "
            "archive folder, or notes_delete it",
        )
    if item.kind == "unlinked_attachment":
        return (
            "no note links to or embeds this attachment",
            f"embed it where it belongs with notes_edit (![[{item.title}]]), or, if nothing needs it, "
            "delete the file in your file manager (notewarden's tools change notes, not attachments)",
        )
    what = "embed" if item.kind.endswith("_embed") else "link"
    if item.kind.startswith("missing_attachment"):
        return (
            f"line {item.line}: the {what} {item.written} opens no attachment file",
            f"notes_edit replace to correct the path or remove the {what} on line {item.line} "
            "(notes_health kinds: [unlinked_attachment] lists the files nothing links to), or put the "
            f"file {item.target} in the vault",
        )
    return (
        f"line {item.line}: the {what} {item.written} opens no note",
        f"notes_edit replace to correct or remove the {what} on line {item.line}, or notes_create the "
        f"missing note {item.target}",
    )


def _shown(scope: WorkspaceScope, item: HealthItem) -> dict[str, Any]:
    problem, fix = _said(item)
    shown: dict[str, Any] = {
        "kind": item.kind,
        "id": item.note_id,
        "title": item.title,
        "folder": item.note_id.rsplit("/", 1)[0] if "/" in item.note_id else "",
        "uri": note_uri(scope, item.note_id),
        "problem": visible(problem),
        "fix": visible(fix),
    }
    if item.line is not None:
        shown["line"] = item.line
    if item.written is not None:
        shown["written"] = item.written
    if item.target is not None:
        shown["target"] = item.target
    if item.others:
        shown["others"] = list(item.others)
    return shown


def _narrowed(scope: WorkspaceScope, folder: str) -> WorkspaceScope:
    """The scope's reach inside `folder` (relative to the workspace root): never wider."""
    try:
        parts = split_relative(folder)
    except PathRejected as exc:
        raise ToolFailure("invalid_arguments", f"folder {folder!r} is not a folder path: {exc}") from None
    if tuple(parts[: len(scope.subtree)]) != scope.subtree:
        raise ToolFailure(
            "path_refused", f"folder {folder!r} is outside {scope.uri}; name a folder inside it"
        )
    reach: list[tuple[str, ...]] = []
    for region in scope.regions:
        held = tuple(region.split("/")) if region else ()
        if tuple(parts[: len(held)]) == held:
            reach.append(tuple(parts))
        elif held[: len(parts)] == tuple(parts):
            reach.append(held)
    if not reach:
        raise scope.missing_at(folder + "/x")
    return dataclasses.replace(scope, subtree=tuple(parts), reach=tuple(reach))


class HealthTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        args = call.arguments
        scope = self.services.grants.authorize_workspace(call.caller, args["workspaceUri"])
        folder = args.get("folder", "").strip("/")
        reach = _narrowed(scope, folder) if folder else scope
        kinds = frozenset(args.get("kinds") or KINDS)
        limit = args.get("limit", DEFAULT_LIMIT)
        print_ = listing_print("notes_health", scope.uri, folder, ",".join(sorted(kinds)))
        after: HealthKey | None = None
        if "cursor" in args:
            note_id, rank, seq = cursor_key(
                args["cursor"], print_, made_by="notes_health", shape=(str, int, int)
            )
            after = HealthKey(note_id, rank, seq)
        found = await anyio.to_thread.run_sync(
            functools.partial(self.services.store.health, reach, kinds=kinds, after=after, limit=limit + 1)
        )
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "items": [_shown(scope, item) for item in found[:limit]],
        }
        if folder:
            structured["folder"] = folder
        if len(found) > limit:
            last = found[limit - 1].key
            structured["nextCursor"] = make_cursor([last.note_id, last.rank, last.seq], print_)
        return complete(structured)


NOTES_HEALTH = declare(
    "notes_health",
    "Vault health",
    "What needs tidying in a workspace (or one folder), note by note in id order, each item with "
    "how to fix it with the other tools: broken links and embeds (with the line), orphan notes (no "
    "link in or out), front matter that does not parse, duplicate and near-duplicate titles (same "
    "title ignoring case and punctuation), empty notes; in a workspace folder also links and embeds "
    "to missing attachments and attachments nothing links to. kinds narrows. #heading anchors "
    f"and similar texts are not judged. {DEFAULT_LIMIT} items a page by default (limit up to "
    f"{MAX_LIMIT}; pass nextCursor back as cursor for more). Read-only.",
    args(
        {"workspaceUri": WORKSPACE_URI},
        {
            "folder": {
                "type": "string",
                "maxLength": 4096,
                "description": "Only notes below this folder (relative to the workspace root).",
            },
            "kinds": {
                "type": "array",
                "items": {"enum": list(KINDS)},
                "minItems": 1,
                "uniqueItems": True,
                "description": "Only these kinds (default: all).",
            },
            **page_properties(DEFAULT_LIMIT, MAX_LIMIT, "items", cursor_chars=8192),
        },
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "folder": {"type": "string"},
            "items": {"type": "array", "items": ITEM_OBJECT},
            "nextCursor": {"type": "string"},
        },
        ["workspaceUri", "items"],
    ),
    Right.READ,
)
