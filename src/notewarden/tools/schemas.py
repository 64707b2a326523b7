"""The schemas the note tools declare (`registry.declare`): built one way, and the pieces several share.

Rule 1: a tool's `inputSchema` is `args(required, optional)`: a closed object (an argument it does
not name is refused before the handler runs), its required arguments first. Its `outputSchema` is
`returns(members, always)`: the members it may answer, of which those named `always` are in every
answer. An object inside either is built the same way.

Rule 2: an argument several tools take is one constant here (the workspace, a note's id, an id
notewarden issued), so it is checked alike wherever it is taken.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ISSUED_ID", "NOTE_ID", "NOTE_OBJECT", "WORKSPACE_URI", "args", "returns"]

WORKSPACE_URI: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "file: URI of a workspace granted to you, or of a folder inside it "
    "(e.g. file:///srv/notes/team-a). The URI alone grants nothing.",
}
NOTE_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4095,
    "description": "The note's id: its path relative to the workspace root, as notes_list and "
    "notes_search return it (e.g. reports/tps-2019.md).",
}
ISSUED_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "pattern": "^[A-Za-z0-9._-]+$",
}
"""An id notewarden issued (a saved version's, a trash entry's), as an argument."""
NOTE_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "Path relative to the workspace root."},
        "title": {"type": "string"},
        "uri": {"type": "string", "description": "The note as a resource (resources/read)."},
        "size": {"type": "integer", "minimum": 0},
        "modified": {"type": "string", "format": "date-time"},
        "version": {"type": "string", "description": "Pass as expectedVersion to notes_update."},
    },
    "required": ["id", "title", "uri", "size", "modified"],
}


def args(required: Mapping[str, Any], optional: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A tool's `inputSchema` (or an object argument's): a closed object (no member but these), the
    `required` ones first."""
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
        "additionalProperties": False,
    }


def returns(members: Mapping[str, Any], always: Iterable[str]) -> dict[str, Any]:
    """A tool's `outputSchema` (or an object in it): `members`, of which those named `always` are
    always present."""
    present = list(always)
    if not set(present) <= members.keys():
        raise ValueError(f"always-present {present} names a member not in {list(members)}")
    return {"type": "object", "properties": dict(members), "required": present}
