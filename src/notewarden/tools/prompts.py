"""Prompts: what people do with their notes and an assistant, as ready-made requests.

Rule 1: each prompt names the one right its workflow needs (`scope.rights`): reviewing and
summarizing only read; tidying tags and turning a meeting into tasks write. `prompts/list` shows a
caller the prompts whose right it holds somewhere (as its credential narrows it; `cacheScope:
"private"`), and `prompts/get` authorizes the prompt's `workspaceUri` for that right exactly as a
tool call does: a prompt never reaches a note its caller could not reach with the tools it names.
Rule 2: a prompt only asks. Its text names the tools to use and, for every change, asks the
assistant to show the change first (`dryRun`) and the person to agree; the one note it embeds (a
meeting note) is the caller's own, as an embedded resource with the note's `file:` URI.
Rule 3: arguments complete like a resource template's (`completion/complete`): `workspaceUri`
offers the caller's workspaces where the prompt's right holds, then the folders inside the one
typed so far; `noteId` offers note ids of the chosen workspace (`NoteStore.complete_ids`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from notewarden.display import visible_line
from notewarden.scope.fs_errors import FsError
from notewarden.scope.grants import AuthorizationError, ScopeError, WorkspaceScope
from notewarden.scope.rights import Caller, Right, RightMissing
from notewarden.services import Services
from notewarden.tools.results import COMPLETION_MAX, completion, note_uri

__all__ = ["PROMPTS", "NotePrompts", "PromptDef", "declare_prompt"]

Ctx = ServerRequestContext[Any, Any]
MARKDOWN = "text/markdown"

WORKSPACE = types.PromptArgument(
    name="workspaceUri",
    description="file: URI of one of your workspaces, or of a folder inside it (completion offers them)",
    required=True,
)
NOTE = types.PromptArgument(
    name="noteId",
    description="the note's id, its path in the workspace (completion offers them)",
    required=True,
)
SINCE = types.PromptArgument(
    name="since",
    description="how far back: today (the default), yesterday, or a date YYYY-MM-DD",
    required=False,
)


@dataclass(frozen=True, slots=True)
class PromptDef:
    prompt: types.Prompt
    right: Right
    text: Callable[[dict[str, str]], str]
    """The request, from the arguments (already checked)."""
    embeds_note: bool = False
    """Whether the note named by `noteId` goes with the request, as an embedded resource."""


def declare_prompt(
    name: str,
    title: str,
    description: str,
    arguments: list[types.PromptArgument],
    right: Right,
    text: Callable[[dict[str, str]], str],
    *,
    embeds_note: bool = False,
) -> PromptDef:
    """A prompt as `prompts/list` shows it, the one right its workflow needs (Rule 1) and its text."""
    prompt = types.Prompt(name=name, title=title, description=description, arguments=arguments)
    return PromptDef(prompt, right, text, embeds_note)


PROMPTS: tuple[PromptDef, ...] = (
    declare_prompt(
        "review_changes",
        "Review what changed",
        "What changed in a workspace or folder since a day, who changed it, and what looks "
        "unfinished. Changes nothing.",
        [WORKSPACE, SINCE],
        Right.READ,
        lambda a: (
            f"Review what changed in {a['workspaceUri']} since {a.get('since') or 'today'}.\n"
            "1. Call notes_recent with that workspaceUri (and since as a date) to list the changes.\n"
            "2. Read the changed notes with notes_read_many.\n"
            "3. Report, note by note: what changed, who changed it (notes_recent's `by`, when it is there), "
            "and anything that looks unfinished, contradictory or wrong.\n"
            "Do not change any note."
        ),
    ),
    declare_prompt(
        "summarize_folder",
        "Summarize a folder",
        "A summary of the notes of a folder, grouped by topic, with links to them. Changes nothing.",
        [WORKSPACE],
        Right.READ,
        lambda a: (
            f"Summarize the notes in {a['workspaceUri']}.\n"
            "1. List them with notes_list (follow nextCursor to the end) and their tags with notes_tags.\n"
            "2. Read the notes that matter with notes_read_many (an outline first for long ones: notes_read "
            "with outline).\n"
            "3. Write a summary grouped by topic; name each note you draw on as a [[link]] to its id.\n"
            "Do not change any note."
        ),
    ),
    declare_prompt(
        "tidy_tags",
        "Tidy up tags",
        "Find tags that are spelled several ways (case, plural, typos) and merge them, each "
        "merge shown first and agreed.",
        [WORKSPACE],
        Right.WRITE,
        lambda a: (
            f"Tidy up the tags of {a['workspaceUri']}.\n"
            "1. List the tags and their counts with notes_tags.\n"
            "2. Find tags that mean the same (different case, singular and plural, typos, a nested tag and "
            "its flat twin) and propose, for each group, the one spelling to keep.\n"
            "3. Ask me before changing anything. For each merge I agree to, find the notes with notes_search "
            "(tags filter), preview each edit with notes_edit and dryRun true, then apply it.\n"
            "Never delete a note."
        ),
    ),
    declare_prompt(
        "meeting_to_tasks",
        "Turn a meeting note into tasks",
        "The action items of a meeting note as a task list under a Tasks heading of the same "
        "note, shown first and agreed.",
        [WORKSPACE, NOTE],
        Right.WRITE,
        lambda a: (
            f"The meeting note {a['noteId']} of {a['workspaceUri']} is above.\n"
            "1. Extract its action items: what, who (when stated), by when (when stated).\n"
            "2. Show me the list as Markdown tasks: '- [ ] what (who, due)'.\n"
            "3. When I agree, add them to the note under a '## Tasks' heading with notes_edit (insert at the "
            "heading if it exists, else append), with dryRun true first, then for real.\n"
            "Change nothing else in the note."
        ),
        embeds_note=True,
    ),
)


class NotePrompts:
    def __init__(self, services: Services, caller_of: Callable[[Ctx], Caller]) -> None:
        """`caller_of`: the request's principal and what its credential narrows it to."""
        self.services = services
        self.caller_of = caller_of
        self._by_name = {p.prompt.name: p for p in PROMPTS}
        self._listings: dict[frozenset[Right], types.ListPromptsResult] = {}

    async def list_prompts(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        caller = self.caller_of(ctx)
        held = self.services.grants.rights_held(caller.principal, caller.credential_rights)
        listing = self._listings.get(held)
        if listing is None:
            shown = [p.prompt for p in PROMPTS if p.right in held]
            listing = self._listings.setdefault(
                held, types.ListPromptsResult(prompts=shown, ttl_ms=300_000, cache_scope="private")
            )
        return listing

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        found = self._by_name.get(params.name)
        if found is None:
            names = ", ".join(self._by_name)
            raise MCPError(code=INVALID_PARAMS, message=f"unknown prompt {params.name!r}; prompts: {names}")
        given = dict(params.arguments or {})
        missing = [a.name for a in found.prompt.arguments or () if a.required and not given.get(a.name)]
        if missing:
            raise MCPError(
                code=INVALID_PARAMS, message=f"prompt {found.prompt.name} needs {', '.join(missing)}"
            )
        scope = self._authorize(ctx, found.right, given["workspaceUri"])
        messages = []
        if found.embeds_note:
            messages.append(await self._embedded(scope, given["noteId"]))
        text = found.text({**given, "workspaceUri": str(scope.uri)})
        messages.append(types.PromptMessage(role="user", content=types.TextContent(type="text", text=text)))
        return types.GetPromptResult(description=found.prompt.description, messages=messages)

    def _authorize(self, ctx: Ctx, right: Right, workspace: str) -> WorkspaceScope:
        caller = self.caller_of(ctx)
        try:
            return self.services.grants.authorize_workspace(
                Caller(caller.principal, right, caller.credential_rights), workspace
            )
        except (ScopeError, AuthorizationError, RightMissing) as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc), data={"uri": workspace}) from None

    async def _embedded(self, scope: WorkspaceScope, note_id: str) -> types.PromptMessage:
        try:
            content = await anyio.to_thread.run_sync(self.services.store.read_note, scope, note_id)
        except (FsError, RightMissing) as exc:
            raise MCPError(
                code=INVALID_PARAMS, message=str(exc), data={"noteId": visible_line(note_id)}
            ) from None
        resource = types.TextResourceContents(
            uri=note_uri(scope, note_id), mime_type=MARKDOWN, text=content.data.decode("utf-8", "replace")
        )
        return types.PromptMessage(
            role="user", content=types.EmbeddedResource(type="resource", resource=resource)
        )

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Rule 3."""
        assert isinstance(params.ref, types.PromptReference)
        found = self._by_name.get(params.ref.name)
        name, value = params.argument.name, params.argument.value
        if found is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"unknown prompt {params.ref.name!r}; prompts: {', '.join(self._by_name)}",
            )
        if name not in {a.name for a in found.prompt.arguments or ()}:
            raise MCPError(
                code=INVALID_PARAMS, message=f"prompt {params.ref.name!r} has no argument {name!r}"
            )
        caller = self.caller_of(ctx)
        mine = Caller(caller.principal, found.right, caller.credential_rights)
        if name == "workspaceUri":
            return await self._complete_workspace(mine, value)
        if name != "noteId":
            return completion([], False)
        workspace = ((params.context.arguments if params.context else None) or {}).get("workspaceUri")
        if workspace is None:
            return completion([], False)  # the workspace is not chosen yet
        scope = self._authorize(ctx, found.right, workspace)
        ids, more = await anyio.to_thread.run_sync(
            functools.partial(self.services.store.complete_ids, scope, value, limit=COMPLETION_MAX)
        )
        return completion(list(ids), more)

    async def _complete_workspace(self, caller: Caller, value: str) -> types.CompleteResult:
        """The caller's workspaces starting with `value`; once `value` names one, its folders."""
        workspaces = [str(w) for w in self.services.grants.granted_workspaces(caller)]
        matching = [w for w in workspaces if w.startswith(value)]
        inside = next((w for w in workspaces if value.startswith(w + "/")), None)
        if inside is not None:
            try:
                scope = self.services.grants.authorize_workspace(caller, inside)
            except (AuthorizationError, RightMissing):
                return completion([], False)
            prefix = value[len(inside) + 1 :]
            ids, _ = await anyio.to_thread.run_sync(
                functools.partial(self.services.store.complete_ids, scope, prefix, limit=COMPLETION_MAX)
            )
            parts = (i.split("/")[:-1] for i in ids)
            folders = {f"{inside}/{'/'.join(p[: n + 1])}" for p in parts for n in range(len(p))}
            matching = sorted(f for f in folders if f.startswith(value))
        return completion(matching[:COMPLETION_MAX], len(matching) > COMPLETION_MAX)
