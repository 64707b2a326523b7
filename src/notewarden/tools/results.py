"""What the note tools have in common at run time: the note object, results, progress (what they
declare is `tools.schemas`).

Every result of these tools carries `structuredContent` and, in one text block, exactly the same
object serialized as JSON (spec: TOOLS-5), so a client that reads only text loses nothing. That text
is shown to people: format characters in it are JSON-escaped (`display.visible_json`).

What confirmed tools share (the workspace binding, the re-authorization, the bounded purge) is
their kit, `tools.confirmed`; their receipts and the one answer to a confirmation already used
are the confirmation path's (`confirm.flow`: `receipt`, `already_used`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.from_thread
import mcp_types as types

from notewarden.confirm.flow import Done, answer, iso8601
from notewarden.notes.model import Note
from notewarden.notes.store import ProgressSink
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import NOTE_SUFFIXES
from notewarden.tools.registry import ToolFailure

ProgressReporter = Callable[[float, float | None, str | None], Awaitable[None]]

__all__ = [
    "COMPLETION_MAX",
    "complete",
    "completion",
    "iso8601",
    "note_object",
    "note_uri",
    "progress_sink",
    "require_note_path",
]

COMPLETION_MAX = 100
"""Values one `completion/complete` answer offers (the spec's cap)."""


def completion(values: list[str], more: bool) -> types.CompleteResult:
    return types.CompleteResult(completion=types.Completion(values=values, has_more=more))


def note_uri(scope: WorkspaceScope, note_id: str) -> str:
    return str(scope.workspace.joinpath(tuple(note_id.split("/"))))


def note_object(scope: WorkspaceScope, note: Note, version: str | None = None) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": note.id,
        "title": note.title,
        "uri": note_uri(scope, note.id),
        "size": note.size,
        "modified": iso8601(note.modified),
    }
    if version is not None:
        shown["version"] = version
    return shown


def complete(structured: Mapping[str, Any]) -> types.CallToolResult:
    return answer(Done(structured))


def require_note_path(path: str, argument: str) -> str:
    """A new note's path must end like a note and name nothing hidden, or it would vanish from every
    listing, search and delete."""
    if not path.lower().endswith(NOTE_SUFFIXES):
        raise ToolFailure(
            "path_refused",
            f"{argument} {path!r} does not end in {' or '.join(NOTE_SUFFIXES)}; notes are markdown files",
        )
    hidden = next((part for part in path.split("/") if part.startswith(".")), None)
    if hidden is not None:
        raise ToolFailure(
            "path_refused",
            f"{argument} {path!r}: {hidden!r} starts with a dot, and names starting with a dot are hidden "
            "(notes_list, notes_search and notes_delete never show them); choose a name without the "
            "leading dot",
        )
    return path


@contextlib.asynccontextmanager
async def progress_sink(report: ProgressReporter | None) -> AsyncIterator[ProgressSink | None]:
    """A sink for a worker thread's progress that never waits on the client: the thread leaves the
    latest (done, total, message) for a relay task on the event loop, which sends it as the
    request's `notifications/progress`, keeping `progress` strictly increasing. So a slow client
    never holds a thread, nor the ledger's lock a purge runs under. The last value left is sent
    before the block ends (before the result). `report` is None when the request asked for none.
    An exception of the block leaves it as it is, not wrapped in an `ExceptionGroup`, so the
    registry maps it like any other (a tool error, -32602 for a bad `requestState`)."""
    if report is None:
        yield None
        return
    relay = _ProgressRelay(report)
    failed: Exception | None = None
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(relay.run)
        try:
            yield relay.post
        except Exception as exc:  # raised as it is, not in the task group's ExceptionGroup
            failed = exc
        finally:
            tasks.cancel_scope.cancel()
    if failed is not None:
        raise failed
    await relay.flush()


class _ProgressRelay:
    def __init__(self, report: ProgressReporter) -> None:
        self.report = report
        self.last = 0.0  # read and written by the posting thread only
        self.pending: tuple[float, float | None, str] | None = None  # the event loop's
        self.arrived = anyio.Event()

    def post(self, done: float, total: float | None, message: str) -> None:
        """From the worker thread: hand the value to the event loop (a moment), send nothing here."""
        if done > self.last:
            self.last = done
            anyio.from_thread.run_sync(self._arrive, (done, total, message))

    def _arrive(self, value: tuple[float, float | None, str]) -> None:
        self.pending = value
        self.arrived.set()

    async def run(self) -> None:
        while True:
            await self.arrived.wait()
            self.arrived = anyio.Event()
            await self.flush()

    async def flush(self) -> None:
        value, self.pending = self.pending, None
        if value is not None:
            await self.report(*value)
