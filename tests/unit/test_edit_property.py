"""The property behind notes_edit and history, through the shipped tools (in process, real folder and
real SQLite): for random notes and random edit lists, a dry run writes nothing and previews exactly
what the edit then does, a refused edit writes nothing, and reverting to the version an edit saved
gives back the original bytes."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notewarden.app import default_tools
from notewarden.config import parse_config
from notewarden.notes.markdown import headings
from notewarden.scope.rights import Caller, Right
from notewarden.services import Services, open_services
from notewarden.tools.registry import ToolCall, ToolRegistry
from tests.store_changes import SETUP

pytestmark = pytest.mark.resolves_files

WORDS = st.sampled_from(
    ["alpha", "Beta", "café", "naïve", "☕", "x", "Projects", "Atlas", "—", "“q”", "#", ">"]
)
PHRASE = st.lists(WORDS, min_size=1, max_size=4).map(" ".join)
BLOCKS = st.one_of(
    st.tuples(st.integers(1, 4), PHRASE).map(lambda t: "#" * t[0] + " " + t[1]),
    st.tuples(PHRASE, st.sampled_from(["===", "---"])).map(lambda t: f"{t[0]}\n{t[1]}"),
    PHRASE.map(lambda p: f"```\n# {p}\n```"),
    PHRASE,
    PHRASE.map(lambda p: f"- {p}"),
    st.just(""),
)
FRONT = st.sampled_from(["", "---\ntitle: A note\ntags: [a, b]   # kept\n---\n", "---\n---\n"])
JSON = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), PHRASE, st.lists(PHRASE, max_size=3))


@st.composite
def notes(draw: st.DrawFn) -> str:
    body = "\n".join(draw(st.lists(BLOCKS, max_size=12)))
    text = draw(FRONT) + body + ("\n" if draw(st.booleans()) and body else "")
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text


@st.composite
def edits_for(draw: st.DrawFn, text: str) -> list[dict[str, Any]]:
    found = [h.text for h in headings(text)] + [" > ".join(h.path) for h in headings(text)]
    heading = st.sampled_from(found) if found else PHRASE
    pieces = [line for line in text.split("\n") if line.strip()]
    old = st.sampled_from(pieces) if pieces else PHRASE
    lines = st.lists(PHRASE, min_size=1, max_size=3).map("\n".join)
    op = st.one_of(
        lines.map(lambda t: {"op": "append", "text": t}),
        lines.map(lambda t: {"op": "prepend", "text": t}),
        st.tuples(old, PHRASE, st.integers(1, 3)).map(
            lambda t: {"op": "replace", "oldText": t[0], "newText": t[1], "expectedCount": t[2]}
        ),
        st.tuples(st.one_of(heading, PHRASE), lines).map(
            lambda t: {"op": "replace_section", "heading": t[0], "text": t[1]}
        ),
        st.tuples(heading, st.sampled_from(["before", "after", "start", "end"]), lines).map(
            lambda t: {"op": "insert", "heading": t[0], "position": t[1], "text": t[2]}
        ),
        st.tuples(st.sampled_from(["title", "tags", "status"]), JSON).map(
            lambda t: {"op": "set_frontmatter", "key": t[0], "value": t[1]}
        ),
        st.sampled_from(["title", "tags"]).map(lambda k: {"op": "remove_frontmatter", "key": k}),
    )
    return draw(st.lists(op, min_size=1, max_size=4))


class Tools:
    def __init__(self, services: Services, folder: Path) -> None:
        self.services = services
        self.registry = ToolRegistry(default_tools(services))
        self.folder = folder
        self.uri = f"file://{folder}"
        self.ids = itertools.count()

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        call = ToolCall(
            name, "alice", {"workspaceUri": self.uri, **arguments}, types.ClientCapabilities(), {}, None
        )
        result = anyio.run(self.registry.call, call)
        assert isinstance(result, types.CallToolResult) and result.structured_content is not None
        return {**result.structured_content, "isError": bool(result.is_error)}

    def put(self, text: str) -> str:
        note_id = f"n{next(self.ids)}.md"
        scope = self.services.grants.authorize_workspace(Caller("alice", Right.WRITE), self.uri)
        self.services.store.create_note(scope, note_id, text.encode(), change=SETUP)
        return note_id

    def bytes_of(self, note_id: str) -> bytes:
        scope = self.services.grants.authorize_workspace(Caller("alice", Right.WRITE), self.uri)
        return self.services.store.read_note(scope, note_id).data


@pytest.fixture(params=["files", "sqlite"], scope="module")
def tools(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tools]:
    root = tmp_path_factory.mktemp(f"property-{request.param}")
    folder = root / "notes"
    folder.mkdir()
    config = parse_config(
        {
            "state_dir": str(root / "state"),
            "workspace": [{"uri": f"file://{folder}"}],
            "principal": [{"id": "alice", "workspaces": [f"file://{folder}"]}],
            "storage": {"notes": request.param},
        }
    )
    services = open_services(config)
    yield Tools(services, folder)
    services.close()


def test_dry_run_previews_exactly_and_revert_gives_back_the_original_bytes(tools: Tools) -> None:
    outcomes: list[str] = []

    @settings(max_examples=100, deadline=None)
    @given(data=st.data())
    def edit_then_revert(data: st.DataObject) -> None:
        text = data.draw(notes(), label="note")
        edits = data.draw(edits_for(text), label="edits")
        note_id = tools.put(text)
        original = tools.bytes_of(note_id)
        assert original == text.encode()

        preview = tools.call("notes_edit", noteId=note_id, edits=edits, dryRun=True)
        assert tools.bytes_of(note_id) == original, "a dry run never writes"
        assert tools.call("notes_history", noteId=note_id)["count"] == 0

        done = tools.call("notes_edit", noteId=note_id, edits=edits)
        if done["isError"]:
            assert preview["isError"] and preview["error"]["code"] == done["error"]["code"]
            assert tools.bytes_of(note_id) == original, "a refused edit writes nothing"
            outcomes.append(done["error"]["code"])
            return
        assert (
            not preview["isError"] and preview["after"] == done["after"] and preview["diff"] == done["diff"]
        )
        if done["before"] == done["after"]:
            assert "previousVersionId" not in done
            return
        assert tools.bytes_of(note_id) != original
        undone = tools.call("notes_revert", noteId=note_id, versionId=done["previousVersionId"])
        assert not undone["isError"], undone
        assert tools.bytes_of(note_id) == original
        assert undone["after"]["version"] == done["before"]["version"]
        outcomes.append("reverted")

    edit_then_revert()
    # a generator whose edits always fail (or never do) would prove nothing
    assert outcomes.count("reverted") >= 30, outcomes
    assert len(set(outcomes) - {"reverted"}) >= 2, outcomes
