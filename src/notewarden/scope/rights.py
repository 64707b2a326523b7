"""Rights: what a principal may do where it may act.

Rule 1: there are five rights, and every tool needs exactly one (`tools.catalog` declares it,
docs/permissions.md gives the table and why):

| right     | allows                                                                 |
|-----------|------------------------------------------------------------------------|
| `read`    | list, search, read notes, their history, links, tags and the trash     |
| `write`   | create, update, edit, move, restore from the trash, revert, daily notes |
| `delete`  | move notes to the trash (confirmed in a form; restorable)              |
| `purge`   | the permanent ones: empty the trash, purge saved versions (confirmed)  |
| `publish` | send a note's text to a configured outside service                     |

Every right includes `read` (the hierarchy, MCP authorization's "scope hierarchies"): each of
those tools shows the notes it acts on (a form lists titles, an edit returns its diff), so a
right to change what one may not see would leak it anyway. Nothing else includes anything.

Rule 2: a grant gives rights on a folder: a whole workspace, or a folder inside one, and every
note below it. Grants only add (there is no "deny"): at a note, a principal holds the union of
the rights of every grant whose folder contains it. A grant written without rights gives
`DEFAULT_RIGHTS` (read, write, delete: what a configuration meant before rights existed, minus
the permanent operations and publishing, which need an explicit grant).

Rule 3: what a request may do is the principal's grants, narrowed by its credential (a token
made with fewer rights, an OAuth token's scopes, `serve --rights`), never widened by it.

Rule 4: a `WorkspaceScope` of a right reaches only the notes where that right holds (its
`reach`); a store asks the scope (`contains`, `check`, `regions`) and never decides itself.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ALL_RIGHTS",
    "BUNDLES",
    "DEFAULT_RIGHTS",
    "Caller",
    "FolderRights",
    "Right",
    "RightMissing",
    "describe_rights",
    "implied",
    "parse_rights",
    "reach_of",
    "rights_at",
]


class Right(enum.StrEnum):
    READ = "read"
    WRITE = "write"
    DELETE = "delete"
    PURGE = "purge"
    PUBLISH = "publish"


ALL_RIGHTS: frozenset[Right] = frozenset(Right)
DEFAULT_RIGHTS: frozenset[Right] = frozenset({Right.READ, Right.WRITE, Right.DELETE})
"""What a grant written without `rights` gives (Rule 2)."""

BUNDLES: dict[str, frozenset[Right]] = {
    "reader": frozenset({Right.READ}),
    "editor": frozenset({Right.READ, Right.WRITE}),
    "maintainer": DEFAULT_RIGHTS,
    "owner": ALL_RIGHTS,
}
"""Names for the common sets: look but don't touch; edit but never delete; everyday work with a
trash (the default); everything, the permanent operations and publishing included."""


def implied(rights: Iterable[Right]) -> frozenset[Right]:
    """Rule 1's hierarchy: every right brings `read`."""
    held = frozenset(rights)
    return held | {Right.READ} if held else held


def parse_rights(names: Iterable[str]) -> frozenset[Right]:
    """Right and bundle names as written in a config, a command line or a token's rights; a
    `ValueError` names the unknown one and what is allowed."""
    held: set[Right] = set()
    for name in names:
        if name in BUNDLES:
            held |= BUNDLES[name]
        elif name in Right.__members__.values():
            held.add(Right(name))
        else:
            raise ValueError(
                f"{name!r} is not a right; use {', '.join(Right)} or a bundle: "
                + ", ".join(f"{b} ({describe_rights(r)})" for b, r in BUNDLES.items())
            )
    return implied(held)


def describe_rights(rights: Iterable[Right]) -> str:
    """`read, write` in the order of Rule 1's table; `none` for no right."""
    return ", ".join(r for r in Right if r in set(rights)) or "none"


@dataclass(frozen=True, slots=True)
class FolderRights:
    """One grant inside one workspace: a folder (components below the workspace root; () is all of
    it) and the rights it gives there and below."""

    folder: tuple[str, ...]
    rights: frozenset[Right]

    def covers(self, parts: tuple[str, ...]) -> bool:
        """Whether the folder is `parts` or one of its parents."""
        return parts[: len(self.folder)] == self.folder


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks, to do what: the authenticated principal, the right the call needs, and what the
    credential narrows the principal's rights to (None: it does not narrow them)."""

    principal: str
    right: Right = Right.READ
    credential_rights: frozenset[Right] | None = None


class RightMissing(Exception):
    """The principal may use the workspace, but not with this right here. The message names the
    right, the place, what this principal holds, and who can grant it: never anyone else's rights."""

    def __init__(self, message: str, *, right: Right, where: str) -> None:
        super().__init__(message)
        self.right = right
        self.where = where


def rights_at(grants: Iterable[FolderRights], parts: tuple[str, ...]) -> frozenset[Right]:
    """Rule 2: the union of the rights of every grant whose folder contains `parts`."""
    held: set[Right] = set()
    for grant in grants:
        if grant.covers(parts):
            held |= grant.rights
    return frozenset(held)


def reach_of(
    grants: Iterable[FolderRights], subtree: tuple[str, ...], right: Right
) -> tuple[tuple[str, ...], ...]:
    """Where inside `subtree` the right holds, as the fewest folders: `(subtree,)` when a grant of it
    covers all of `subtree`, else the outermost granted folders below it (sorted), else ()."""
    folders = [g.folder for g in grants if right in g.rights]
    if any(subtree[: len(f)] == f for f in folders):
        return (subtree,)
    inner = sorted({f for f in folders if f[: len(subtree)] == subtree})
    return tuple(f for f in inner if not any(o != f and f[: len(o)] == o for o in inner))
