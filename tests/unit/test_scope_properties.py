"""Properties of the whole scope path: URI -> Grants.authorize_workspace -> a real workspace folder.

No accepted workspaceUri ever makes a tool see anything outside its workspace (not through `..`
spellings, sibling prefixes, symlinks or other principals' workspaces), and every rejection is a
tool error with a known code and a message, never an exception escaping the tool.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from notewarden.app import default_tools
from notewarden.config import parse_config
from notewarden.services import Services, open_services
from notewarden.tools.registry import ToolCall, ToolRegistry

pytestmark = pytest.mark.resolves_files

KNOWN_CODES = {"invalid_workspace_uri", "workspace_not_granted", "path_refused", "note_missing", "no_match"}
KNOWN_CODES |= {"not_a_note", "invalid_arguments", "too_many_matches"}
OUTSIDE_TITLE = "OUTSIDE SECRET"


@dataclass
class Lab:
    base: Path
    ws: Path
    services: Services
    registry: ToolRegistry

    @property
    def ws_uri(self) -> str:
        return f"file://{self.ws}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("scope")
    ws, evil, private, outside = base / "ws", base / "ws-evil", base / "private", base / "outside"
    for d in (ws / "sub" / "deep", evil, private, outside):
        d.mkdir(parents=True)
    (ws / "a.md").write_text("# Alpha note\n")
    (ws / "sub" / "b.md").write_text("# Beta note\n")
    (ws / "sub" / "deep" / "c.md").write_text("# Gamma note\n")
    for d in (evil, private, outside):
        (d / "secret.md").write_text(f"# {OUTSIDE_TITLE} in {d.name}\n")
    (ws / "esc").symlink_to(outside)
    (ws / "sub" / "up").symlink_to("..")
    (ws / "abs.md").symlink_to(outside / "secret.md")
    config = parse_config(
        {
            "state_dir": str(base / "state"),
            "workspace": [{"uri": f"file://{ws}"}, {"uri": f"file://{private}"}],
            "principal": [
                {"id": "alice", "workspaces": [f"file://{ws}"]},
                {"id": "bob", "workspaces": [f"file://{private}"]},
            ],
        }
    )
    services = open_services(config)
    yield Lab(base, ws, services, ToolRegistry(default_tools(services)))
    services.close()


PIECES = [
    "..", ".", "%2e%2e", "%2E.", ".%2e", "%2f", "%2F", "%5c", "\\", "%00", "%0a", "%252e%252e", "..%2f",
    "%c0%ae%c0%ae", "\u2025", "%EF%BC%8E%EF%BC%8E", "", "sub", "deep", "esc", "up", "a.md", "abs.md",
    "ws-evil", "private", "outside", "?x=1", "#f", "%3f", ";", "~", "%", "%%", "-evil", "sub%2f..",
]  # fmt: skip

suffixes = st.lists(st.tuples(st.sampled_from(["/", "", "//"]), st.sampled_from(PIECES)), max_size=6).map(
    lambda parts: "".join(sep + piece for sep, piece in parts)
)
tails = st.one_of(
    suffixes, st.text(max_size=40), st.builds(lambda a, b: a + b, suffixes, st.text(max_size=10))
)


def call(lab: Lab, tool: str, arguments: dict[str, Any], principal: str = "alice") -> Any:
    request = ToolCall(
        name=tool,
        principal=principal,
        arguments=arguments,
        capabilities=None,
        input_responses={},
        request_state=None,
    )
    return anyio.run(lab.registry.call, request)


def check_inside(lab: Lab, note_id: str) -> None:
    real_ws = os.path.realpath(lab.ws)
    target = os.path.join(real_ws, note_id)
    assert os.path.realpath(target) == target, f"{note_id} resolves through a link"
    assert os.path.commonpath([real_ws, target]) == real_ws
    assert os.path.isfile(target) and not os.path.islink(target)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(["ws", "parent", "file:", "raw"]), tail=tails)
def test_no_accepted_uri_lists_anything_outside_and_rejections_are_tool_errors(
    lab: Lab, base: str, tail: str
) -> None:
    prefix = {"ws": lab.ws_uri, "parent": f"file://{lab.base}", "file:": "file:", "raw": ""}[base]
    uri = prefix + tail
    result = call(lab, "notes_list", {"workspaceUri": uri})
    text = result.content[0].text
    assert "Traceback (most recent call last)" not in text  # (the words alone may be the URI's, echoed)
    if result.is_error:
        error = result.structured_content["error"]
        assert error["code"] in KNOWN_CODES, error
        assert error["message"] and error["message"] == text
        assert OUTSIDE_TITLE not in text
        if "private" not in uri:  # bob's workspace is never named to alice, except as her own input
            assert str(lab.base / "private") not in text
        return
    notes = result.structured_content["notes"]
    for note in notes:
        check_inside(lab, note["id"])
        assert OUTSIDE_TITLE not in note["title"]
    assert result.structured_content["workspaceUri"].startswith(lab.ws_uri)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tail=tails, principal=st.sampled_from(["alice", "bob", "mallory"]))
def test_other_principals_and_prefix_siblings_are_never_granted(lab: Lab, tail: str, principal: str) -> None:
    for uri in (lab.ws_uri + tail, f"file://{lab.base}/ws-evil{tail}"):
        result = call(lab, "notes_list", {"workspaceUri": uri}, principal=principal)
        if principal != "alice" or uri.startswith(f"file://{lab.base}/ws-evil"):
            assert result.is_error, uri
            assert result.structured_content["error"]["code"] in KNOWN_CODES
            assert OUTSIDE_TITLE not in result.content[0].text


def test_the_lab_has_teeth(lab: Lab) -> None:
    """The layout really offers ways out: plain paths through the symlinks reach the outside."""
    assert (lab.ws / "esc" / "secret.md").read_text().startswith(f"# {OUTSIDE_TITLE}")
    assert (lab.ws / "abs.md").read_text().startswith(f"# {OUTSIDE_TITLE}")
    listed = call(lab, "notes_list", {"workspaceUri": lab.ws_uri}).structured_content["notes"]
    assert sorted(n["id"] for n in listed) == ["a.md", "sub/b.md", "sub/deep/c.md"]
    through_link = call(lab, "notes_list", {"workspaceUri": lab.ws_uri + "/esc"})
    assert through_link.structured_content["notes"] == []  # symlinks are never followed or listed
