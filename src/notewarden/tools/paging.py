"""Cursors of the listing tools (`notes_list`, `notes_tags`, `notes_history`, `notes_trash_list`, the
backlinks of `notes_links`; `notes_search` keeps its own, which also carries a rank): an opaque
`nextCursor` that resumes after the last item shown.

Rules:
1. Keyset pagination: a cursor holds the key of the last item shown (a note id; a tag; a linking
   note's id and the link's place in it; a version or trash id), never an offset, so notes added or
   removed between two pages shift nothing: no item is shown twice, and none that stayed is skipped.
   (History and trash resume after their id, and refuse a cursor whose item has gone.)
2. A cursor carries a print of what it was made for (the tool, the workspaceUri, the arguments that
   choose the items); a cursor of another listing is refused with `invalid_cursor`, never applied to
   the wrong one. It is not a secret and grants nothing: every page is authorized and kept inside
   the caller's reach (`WorkspaceScope.regions`) like the first.
3. Each listing documents its default and its largest `limit` in its input schema.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from notewarden.tools.registry import ToolFailure

__all__ = ["cursor_key", "limit_argument", "listing_print", "make_cursor", "page_after", "page_properties"]

T = TypeVar("T")


def listing_print(tool: str, *parts: object) -> str:
    """Rule 2: what a cursor was made for, in 16 hex digits."""
    return hashlib.sha256("\0".join(map(str, (tool, *parts))).encode()).hexdigest()[:16]


def make_cursor(key: list[Any], print_: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([key, print_]).encode()).decode().rstrip("=")


def cursor_key(cursor: str, print_: str, *, made_by: str, shape: tuple[type, ...]) -> list[Any]:
    """The key a cursor holds (its parts of the types `shape` names); `invalid_cursor` for one of
    another listing, or no cursor at all."""
    try:
        key, seen = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        fits = isinstance(key, list) and len(key) == len(shape)
        if seen == print_ and fits and all(isinstance(k, t) for k, t in zip(key, shape, strict=True)):
            return list(key)
    except (ValueError, TypeError, binascii.Error):
        pass
    raise ToolFailure(
        "invalid_cursor",
        f"cursor is not a nextCursor that {made_by} returned for these arguments; omit it to start over",
    )


def limit_argument(default: int, largest: int) -> dict[str, Any]:
    """Rule 3: a listing's `limit` argument."""
    return {"type": "integer", "minimum": 1, "maximum": largest, "default": default}


def page_properties(default: int, largest: int, items: str, *, cursor_chars: int = 400) -> dict[str, Any]:
    """Rule 3: the `cursor` and `limit` arguments of a listing."""
    return {
        "cursor": {
            "type": "string",
            "maxLength": cursor_chars,
            "description": "nextCursor of the previous page.",
        },
        "limit": {**limit_argument(default, largest), "description": f"Most {items} on this page."},
    }


def page_after(
    items: Sequence[T],
    key: Callable[[T], str],
    arguments: Mapping[str, Any],
    print_: str,
    *,
    made_by: str,
    default: int,
    gone: str,
) -> tuple[Sequence[T], str | None]:
    """Rule 1 for a listing read whole (a note's history, the trash): the page after the item whose
    `key` the cursor holds, and the cursor of the next page (None on the last). A cursor whose item
    has gone is refused with `invalid_cursor`, saying so (`gone`)."""
    start = 0
    if "cursor" in arguments:
        keys = [key(item) for item in items]
        (after,) = cursor_key(arguments["cursor"], print_, made_by=made_by, shape=(str,))
        if after not in keys:
            raise ToolFailure("invalid_cursor", f"{gone}; omit it to start over")
        start = keys.index(after) + 1
    limit = arguments.get("limit", default)
    page = items[start : start + limit]
    return page, make_cursor([key(page[-1])], print_) if start + limit < len(items) else None
