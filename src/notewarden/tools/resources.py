"""Notes as resources: every note is the `file:` URI of its file inside its workspace.

* `resources/read` takes the URI through exactly the path of a tool's `workspaceUri`: the strict
  parser (`scope.uri`), the caller's grants (`scope.grants`), then the workspace's directory
  handle (`scope.fsroot`). The URI grants nothing; a URI outside every grant, malformed, naming a
  folder or a missing note is `-32602` (2026-07-28 has no "resource not found" code) with
  `data.uri`, and the message names only the caller's own grants.
* `resources/list` pages through the notes of every workspace granted to the caller, by
  workspace URI then note id; the cursor is the last (workspace, id) shown, so pages never repeat
  a note while notes come and go. `resources/templates/list` gives one template per workspace.
* `completion/complete` offers note ids for a template's `noteId` as a person types (ids that
  start with the value, then notes whose file name does), and the caller's granted workspaces for
  the `workspaceUri` of the template that spans them (`{+workspaceUri}/{+noteId}`). The workspace is
  authorized exactly as a read's; a reference that is not one of the caller's templates is
  `-32602`. (A `CompleteResult` carries no cache hints in 2026-07-28: it is not a cacheable result.)
* A URI whose path does not end in `.md`/`.markdown` is an attachment (`notes.attachments`): read
  through the same directory handle where the caller may read, at most `ATTACHMENT_MAX_BYTES`,
  answered as a blob typed by its content (or as text: SVG, csv, canvas), with
  `_meta[TYPE_MISMATCH_META]` when the content contradicts the name. Any other file, anything
  hidden, and every path of a workspace kept in a database are `-32602`. Attachments are not
  listed: the files index knows them now (`index_refresh` Rule 11), but a listing of notes and files
  in one keyset order would be a second stream merged into every page for what clients list
  resources for (notes to open); `notes_links`, `notes_read` and `notes_health` give their URIs.
* Every answer depends on who asks, so every cache hint is `private`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types import INVALID_PARAMS

from notewarden.display import visible_line
from notewarden.notes.attachments import read_attachment, served_type
from notewarden.notes.model import Note
from notewarden.scope.fs_errors import FsError
from notewarden.scope.grants import AuthorizationError, ScopeError, WorkspaceScope
from notewarden.scope.note_paths import NOTE_SUFFIXES
from notewarden.scope.rights import Caller, RightMissing
from notewarden.services import Services
from notewarden.tools.results import COMPLETION_MAX, completion, note_uri, progress_sink

__all__ = ["ANY_WORKSPACE_TEMPLATE", "LIST_TTL_MS", "PAGE_SIZE", "NoteResources"]

PAGE_SIZE = 100
LIST_TTL_MS = 10_000
READ_TTL_MS = 5_000
TEMPLATES_TTL_MS = 60_000
MARKDOWN = "text/markdown"
NOTE_TEMPLATE = "/{+noteId}"
ANY_WORKSPACE_TEMPLATE = "{+workspaceUri}" + NOTE_TEMPLATE
TYPE_MISMATCH_META = "notewarden/typeMismatch"
"""`_meta` of an attachment whose content contradicts its extension: what it was named like, what it is."""

Ctx = ServerRequestContext[Any, Any]


def _invalid(uri: str, message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message, data={"uri": uri})


class NoteResources:
    def __init__(self, services: Services, resolve_principal: Callable[[Ctx], str]) -> None:
        self.services = services
        self.resolve_principal = resolve_principal

    def _granted(self, principal: str) -> list[str]:
        """The workspaces where the principal may read somewhere."""
        return sorted(str(w) for w in self.services.grants.granted_workspaces(Caller(principal)))

    def _resource(self, scope: WorkspaceScope, note: Note) -> types.Resource:
        return types.Resource(
            uri=note_uri(scope, note.id),
            name=note.id,
            title=visible_line(note.title),
            mime_type=MARKDOWN,
            size=note.size,
        )

    async def list_resources(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        principal = self.resolve_principal(ctx)
        cursor = params.cursor if params is not None else None
        start_ws, after = _decode_cursor(cursor) if cursor else ("", None)
        found: list[tuple[WorkspaceScope, Note]] = []
        wants_progress = progress_token_from_params(ctx.params) is not None
        async with progress_sink(ctx.session.report_progress if wants_progress else None) as report:
            for workspace in self._granted(principal):
                if workspace < start_ws:
                    continue
                scope = self.services.grants.authorize_workspace(Caller(principal), workspace)
                notes = await anyio.to_thread.run_sync(
                    functools.partial(
                        self.services.store.list_page,
                        scope,
                        after=after if workspace == start_ws else None,
                        limit=PAGE_SIZE + 1 - len(found),
                        progress=report,
                    )
                )
                found += [(scope, n) for n in notes]
                if len(found) > PAGE_SIZE:
                    break
        page = found[:PAGE_SIZE]
        next_cursor = None
        if len(found) > PAGE_SIZE:
            last_scope, last = page[-1]
            next_cursor = _encode_cursor(str(last_scope.workspace), last.id)
        return types.ListResourcesResult(
            resources=[self._resource(s, n) for s, n in page],
            next_cursor=next_cursor,
            ttl_ms=LIST_TTL_MS,
            cache_scope="private",
        )

    async def list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        principal = self.resolve_principal(ctx)
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=workspace + "/{+noteId}",
                    name=f"note in {workspace}",
                    title="A note",
                    description="A markdown note of this workspace; noteId is its path inside the workspace, "
                    "as notes_list and notes_search return it.",
                    mime_type=MARKDOWN,
                )
                for workspace in self._granted(principal)
            ]
            + [
                types.ResourceTemplate(
                    uri_template=ANY_WORKSPACE_TEMPLATE,
                    name="note in any of your workspaces",
                    title="A note",
                    description="A markdown note: workspaceUri is one of your workspaces (completion offers "
                    "them), noteId its path inside it.",
                    mime_type=MARKDOWN,
                )
            ],
            ttl_ms=TEMPLATES_TTL_MS,
            cache_scope="private",
        )

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        principal = self.resolve_principal(ctx)
        ref, name, value = params.ref, params.argument.name, params.argument.value
        context = (params.context.arguments if params.context else None) or {}
        granted = self._granted(principal)
        if not isinstance(ref, types.ResourceTemplateReference):
            raise MCPError(
                code=INVALID_PARAMS, message="complete a resource template's or a prompt's argument"
            )
        if ref.uri == ANY_WORKSPACE_TEMPLATE and name == "workspaceUri":
            matching = [w for w in granted if w.startswith(value)]
            return completion(matching[:COMPLETION_MAX], len(matching) > COMPLETION_MAX)
        if ref.uri == ANY_WORKSPACE_TEMPLATE:
            workspace = context.get("workspaceUri")
        elif ref.uri.endswith(NOTE_TEMPLATE) and ref.uri[: -len(NOTE_TEMPLATE)] in granted:
            workspace = ref.uri[: -len(NOTE_TEMPLATE)]
        else:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"{ref.uri} is not one of your resource templates; resources/templates/list lists them",
            )
        if name != "noteId":
            raise MCPError(code=INVALID_PARAMS, message=f"{ref.uri} has no argument {name!r} to complete")
        if workspace is None:
            return completion([], False)  # the workspace is not chosen yet
        try:
            scope = self.services.grants.authorize_workspace(Caller(principal), workspace)
        except (ScopeError, AuthorizationError, RightMissing) as exc:
            raise _invalid(workspace, str(exc)) from None
        ids, more = await anyio.to_thread.run_sync(
            functools.partial(self.services.store.complete_ids, scope, value, limit=COMPLETION_MAX)
        )
        return completion(list(ids), more)

    async def read_resource(
        self, ctx: Ctx, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            scope = self.services.grants.authorize_workspace(Caller(self.resolve_principal(ctx)), uri)
        except (ScopeError, AuthorizationError, RightMissing) as exc:
            raise _invalid(uri, str(exc).replace("workspaceUri", "the resource URI")) from None
        if not scope.subtree:
            raise _invalid(uri, f"{uri} names a workspace, not a note; resources/list shows its notes")
        note_id = "/".join(scope.subtree)
        scope = scope.whole_workspace()  # the URI's path below the workspace is the note
        if not note_id.lower().endswith(NOTE_SUFFIXES):
            return await self._read_attachment(uri, scope, note_id)
        try:
            content = await anyio.to_thread.run_sync(self.services.store.read_note, scope, note_id)
        except (FsError, RightMissing) as exc:
            raise _invalid(uri, f"Resource not found: {exc}") from None
        shown = note_uri(scope, note_id)
        contents: types.TextResourceContents | types.BlobResourceContents
        try:
            contents = types.TextResourceContents(
                uri=shown, mime_type=MARKDOWN, text=content.data.decode("utf-8")
            )
        except UnicodeDecodeError:
            blob = base64.b64encode(content.data).decode()
            contents = types.BlobResourceContents(uri=shown, mime_type="application/octet-stream", blob=blob)
        return types.ReadResourceResult(contents=[contents], ttl_ms=READ_TTL_MS, cache_scope="private")

    async def _read_attachment(self, uri: str, scope: WorkspaceScope, path: str) -> types.ReadResourceResult:
        """An attachment (`notes.attachments`): typed by its content, size-limited, read through the
        directory handle where the caller may read; SVG as text, never as an image."""
        try:
            data = await anyio.to_thread.run_sync(read_attachment, scope, path)
        except (FsError, RightMissing) as exc:
            raise _invalid(uri, f"Attachment not readable: {exc}") from None
        served = served_type(path, data)
        shown = note_uri(scope, path)
        meta = {TYPE_MISMATCH_META: served.mismatch} if served.mismatch else None
        contents: types.TextResourceContents | types.BlobResourceContents
        if served.text is not None:
            contents = types.TextResourceContents(
                uri=shown, mime_type=served.mime_type, text=served.text, _meta=meta
            )
        else:
            blob = base64.b64encode(data).decode()
            contents = types.BlobResourceContents(
                uri=shown, mime_type=served.mime_type, blob=blob, _meta=meta
            )
        return types.ReadResourceResult(contents=[contents], ttl_ms=READ_TTL_MS, cache_scope="private")


def _encode_cursor(workspace: str, note_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([workspace, note_id]).encode()).decode()


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        workspace, note_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        if isinstance(workspace, str) and isinstance(note_id, str):
            return workspace, note_id
    except (ValueError, TypeError, binascii.Error):
        pass
    raise MCPError(
        code=INVALID_PARAMS, message="Invalid cursor: pass a nextCursor of resources/list unchanged"
    )
