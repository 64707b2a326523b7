"""Which note a link opens, and how to rewrite links when a note moves. Pure: no I/O.

Rule 1 (resolution, as Obsidian opens a link; `resolve`). Names compare case-insensitively
(`markdown.fold`), and a note's name is its id without `.md`/`.markdown`, so `[[Plan]]`,
`[[plan.md]]` and `[p](Plan.md)` all name `Plan.md`. A link's path is tried, in order:

1. empty (`[[#Heading]]`): the linking note itself;
2. `/a/b`: the path from the workspace root, and nothing else;
3. `./a`, `../a`: the path from the linking note's folder, and nothing else;
4. a wiki link: the path from the root, then from the linking note's folder; a Markdown link: the
   path from the linking note's folder first (what a Markdown link means everywhere else), then the root;
5. else by file name: every note whose path ends with the link's path, component by component
   (`[[Note]]` finds `x/Note.md`; `[[b/Note]]` finds `a/b/Note.md`). One: that note. Several: the
   tie-break, in order: the one in the linking note's own folder, then the one with the fewest
   folders above it (closest to the root), then the first by id (code-point order);
6. else, for a path without `/`, a note with that alias (front matter `aliases`), by the same
   tie-break. Obsidian itself only offers aliases while typing and would not open such a link;
   it is resolved here so that `[[Alias]]` counts as a link, and reported with `via: "alias"`.
7. else the link is unresolved and kept as such. Paths that climb above the root are unresolved.

Rule 2 (anchors; `anchor_found`): `#Heading` must be a heading of the target (compared after
folding and collapsing blanks; for Markdown links also as a GitHub-style slug), `#A#B` names B
under A, `#^id` must be a block id of the target.

Rule 3 (rewriting a move; `rewrite_for_move`): every link whose target the move would change is
rewritten so it opens the same note afterwards, and no other byte changes. That is every link
to the moved note, plus any link the moved note would otherwise capture (it now shadows a name),
plus, in the moved note itself, relative links whose base folder moved. A rewritten link keeps
its style (wiki or Markdown, embed or not), its anchor and display text, its form (name only,
path from the root, `/`-absolute, or relative, with or without `./`), whether it carried the
`.md` suffix, and its percent-encoding. A bare name is a name however it resolved (a note in the
linking note's own folder included) and stays a name while it opens the same note; a name that
no longer does (no longer unique, or shadowed) becomes the path from the root, as Obsidian writes it. An unresolved link is left as written (it opens the
moved note afterwards if it now names it).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol
from urllib.parse import quote

from notewarden.notes.markdown import Heading, Link, fold, parse_note
from notewarden.scope.note_paths import NOTE_SUFFIXES

__all__ = [
    "MappedVault",
    "MemoryVault",
    "MovedVault",
    "Resolution",
    "Rewrite",
    "VaultLookup",
    "anchor_found",
    "context_line",
    "id_keyed",
    "name_key",
    "note_key",
    "relink",
    "resolve",
    "rewrite_for_move",
]

Via = Literal["self", "path", "relative", "name", "alias"]


def _strip_suffix(path: str) -> str:
    lower = path[-len(".markdown") :].lower()  # only the end can be a suffix
    for suffix in NOTE_SUFFIXES:
        if lower.endswith(suffix) and len(path) > len(suffix):
            return path[: -len(suffix)]
    return path


def note_key(note_id: str) -> str:
    """How a note is looked up by path: its id without the note suffix, folded."""
    return fold(_strip_suffix(note_id))


def name_key(note_id: str) -> str:
    """How a note is looked up by name: its file name without the note suffix, folded."""
    return note_key(note_id.rsplit("/", 1)[-1])


def _folder(note_id: str) -> str:
    return note_id.rsplit("/", 1)[0] if "/" in note_id else ""


def _joined(folder: str, path: str) -> str | None:
    """`path` from `folder`, normalized; None when it climbs above the root."""
    if path and not path.startswith(("/", ".")) and "/." not in path and "//" not in path and path[-1] != "/":
        return f"{folder}/{path}" if folder else path  # nothing to normalize (the common case: quicker)
    joined = posixpath.normpath(posixpath.join(folder, path)) if path else folder
    if joined == ".":
        return ""
    return None if joined == ".." or joined.startswith("../") else joined


CONTEXT_CHARS = 240
"""A link's line of context is cut to this many characters."""


def context_line(text: str, offset: int) -> str:
    """The line of `text` around `offset`, stripped and cut to `CONTEXT_CHARS` (a backlink's context)."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    line = text[start : end if end >= 0 else len(text)].strip()
    return line if len(line) <= CONTEXT_CHARS else line[: CONTEXT_CHARS - 1] + "…"


@dataclass(frozen=True, slots=True)
class _Keys:
    """The lookup keys a link's path can resolve through (Rule 1). Every one ends with `name`, so
    a note can only be found through links whose name is the note's name (or, for aliases, the
    alias): what lets the index find the links a note appearing or going may affect."""

    path: str | None
    relative: str | None
    name: str


def _keys(path: str, source_id: str) -> _Keys:
    body = path.lstrip("/") if path.startswith("/") else path
    absolute = _joined("", body)
    relative = None if path.startswith("/") else _joined(_folder(source_id), path)
    return _Keys(
        path=None if absolute is None or path.startswith(("./", "../")) else note_key(absolute),
        relative=None if relative is None else note_key(relative),
        name=name_key(body.rstrip("/")),
    )


class VaultLookup(Protocol):
    """The three lookups resolution needs; the index answers them from its tables."""

    def by_path(self, key: str) -> str | None:
        """The note whose `note_key` is `key`."""
        ...

    def by_name(self, key: str) -> Sequence[str]:
        """Every note whose `name_key` is `key`."""
        ...

    def by_alias(self, key: str) -> Sequence[str]:
        """Every note with an alias whose fold is `key`."""
        ...


@dataclass(frozen=True, slots=True)
class Resolution:
    target: str | None
    via: Via | None


UNRESOLVED = Resolution(None, None)


def _tie_break(candidates: Iterable[str], source_id: str) -> str:
    folder = _folder(source_id)
    return min(candidates, key=lambda c: (_folder(c) != folder, c.count("/"), c))


def resolve(link: Link, source_id: str, vault: VaultLookup) -> Resolution:
    """Rule 1: the note `link`, written in `source_id`, opens."""
    return resolve_path(link.path, link.style, source_id, vault)


def resolve_path(path: str, style: str, source_id: str, vault: VaultLookup) -> Resolution:
    if not path:
        return Resolution(source_id, "self")
    keys = _keys(path, source_id)
    if path.startswith("/"):
        found = vault.by_path(keys.path) if keys.path is not None else None
        return Resolution(found, "path") if found else UNRESOLVED
    if path.startswith(("./", "../")):
        found = vault.by_path(keys.relative) if keys.relative is not None else None
        return Resolution(found, "relative") if found else UNRESOLVED
    order: tuple[tuple[str | None, Via], ...] = ((keys.path, "path"), (keys.relative, "relative"))
    if style == "markdown":
        order = order[::-1]
    for key, via in order:
        if key is not None and (found := vault.by_path(key)) is not None:
            return Resolution(found, via)
    named = vault.by_name(keys.name)
    if "/" in path.strip("/"):  # a partial path: the notes whose path ends with it
        wanted = note_key(path.strip("/"))
        named = [c for c in named if note_key(c) == wanted or note_key(c).endswith("/" + wanted)]
    if named:
        return Resolution(_tie_break(named, source_id), "name")
    if "/" not in path and (aliased := vault.by_alias(fold(path))):
        return Resolution(_tie_break(aliased, source_id), "alias")
    return UNRESOLVED


_BLANKS = re.compile(r"\s+")
_SLUG_DROP = re.compile(r"[^\w\- ]")


def _heading_key(text: str) -> str:
    return _BLANKS.sub(" ", fold(text)).strip()


def _slug(text: str) -> str:
    return _SLUG_DROP.sub("", fold(text).strip()).replace(" ", "-")


def anchor_found(anchor: str, style: str, headings: Sequence[Heading], block_ids: Iterable[str]) -> bool:
    """Rule 2: whether the target has what the anchor names."""
    if anchor.startswith("^"):
        return anchor[1:].casefold() in {b.casefold() for b in block_ids}
    chain = [_heading_key(part) for part in anchor.split("#") if part.strip()]
    if not chain:
        return True
    for heading in headings:
        path = [_heading_key(p) for p in heading.path]
        if path[-1] == chain[-1] and _in_order(chain[:-1], path[:-1]):
            return True
        if style == "markdown" and len(chain) == 1 and _slug(heading.text) == chain[0]:
            return True
    return False


def _in_order(wanted: list[str], path: list[str]) -> bool:
    rest = iter(path)
    return all(any(p == w for p in rest) for w in wanted)


def id_keyed(notes: Iterable[tuple[str, str, str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(note id, path key, name key) in id order -> the path map and the name map of a
    `MappedVault`: a path key two notes share opens the first by id, as the index's `min(id)` does."""
    paths: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    for note_id, path_key, key in notes:
        paths.setdefault(path_key, note_id)
        names.setdefault(key, []).append(note_id)
    return paths, names


class MappedVault:
    """A `VaultLookup` answered from mappings built beforehand (key -> note ids)."""

    def __init__(
        self,
        paths: Mapping[str, str],
        names: Mapping[str, Sequence[str]],
        aliases: Mapping[str, Sequence[str]],
    ) -> None:
        self._paths, self._names, self._aliased = paths, names, aliases

    def by_path(self, key: str) -> str | None:
        return self._paths.get(key)

    def by_name(self, key: str) -> Sequence[str]:
        return self._names.get(key, ())

    def by_alias(self, key: str) -> Sequence[str]:
        return self._aliased.get(key, ())


class MemoryVault(MappedVault):
    """A `VaultLookup` over a set of note ids and their aliases: tests, and the before/after
    views of one move (`rewrite_for_move`)."""

    def __init__(self, note_ids: Iterable[str], aliases: Mapping[str, Iterable[str]] | None = None) -> None:
        self.ids = sorted(note_ids)
        self.aliases = {k: list(v) for k, v in (aliases or {}).items()}
        aliased: dict[str, list[str]] = {}
        for note_id, found in self.aliases.items():
            for alias in found:
                aliased.setdefault(fold(alias), []).append(note_id)
        super().__init__(*id_keyed((i, note_key(i), name_key(i)) for i in self.ids), aliased)

    def moved(self, old_id: str, new_id: str) -> MovedVault:
        """The vault after `old_id` is renamed to `new_id` (its aliases go with it)."""
        return MovedVault(self, old_id, new_id)


class MovedVault:
    """Any `VaultLookup` as it will answer once `moved_from` is renamed `moved_to` (its aliases go
    with it): the "after" view of a move, without copying the vault."""

    def __init__(self, before: VaultLookup, moved_from: str, moved_to: str) -> None:
        self._before, self._from, self._to = before, moved_from, moved_to

    def _renamed(self, found: Iterable[str]) -> list[str]:
        return [self._to if i == self._from else i for i in found]

    def by_path(self, key: str) -> str | None:
        if key == note_key(self._to):
            return self._to
        found = self._before.by_path(key)
        return None if found == self._from else found

    def by_name(self, key: str) -> Sequence[str]:
        found = [i for i in self._before.by_name(key) if i != self._from]
        return [*found, self._to] if name_key(self._to) == key else found

    def by_alias(self, key: str) -> Sequence[str]:
        return self._renamed(self._before.by_alias(key))


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One rewritten link: where it was in the old text, what it said and says now."""

    line: int
    old: str
    new: str


def rewrite_for_move(
    text: str,
    links: Sequence[Link],
    *,
    note_before: str,
    note_after: str,
    moved_from: str,
    moved_to: str,
    before: VaultLookup,
    after: VaultLookup,
) -> tuple[str, list[Rewrite]]:
    """Rule 3: `text` (whose links `markdown.parse_note` found) with every link whose target the
    move of `moved_from` to `moved_to` would change rewritten to open the same note as before.
    `note_before`/`note_after` are this note's own id before and after (they differ when it is
    the moved note). Returns the new text and what was rewritten; the text is unchanged when
    nothing needs to be."""
    pieces: list[str] = []
    done: list[Rewrite] = []
    last = 0
    for link in links:
        was = resolve(link, note_before, before)
        if was.target is None or was.via == "self":
            continue
        wanted = moved_to if was.target == moved_from else was.target
        if resolve(link, note_after, after).target == wanted:
            continue
        written = text[link.path_span[0] : link.path_span[1]]
        start, end = link.path_span
        angled = link.style == "markdown" and text[start - 1 : start] == "<"
        new_path = _new_path(link, written, angled, was.via, note_after, wanted, after)
        pieces += [text[last:start], new_path]
        last = end
        old_link = text[link.span[0] : link.span[1]]
        new_link = old_link[: start - link.span[0]] + new_path + old_link[end - link.span[0] :]
        done.append(Rewrite(link.line, old_link, new_link))
    if not done:
        return text, []
    pieces.append(text[last:])
    return "".join(pieces), done


def relink(
    text: str, note_before: str, note_after: str, moved_from: str, moved_to: str, before: VaultLookup
) -> tuple[str, list[Rewrite]]:
    """`rewrite_for_move` on a note's text as it is (parsed here), against `before` and its moved view."""
    stem = note_before.rsplit("/", 1)[-1]
    links = parse_note(text, _strip_suffix(stem), with_headings=False).links
    if not links:
        return text, []
    return rewrite_for_move(
        text,
        links,
        note_before=note_before,
        note_after=note_after,
        moved_from=moved_from,
        moved_to=moved_to,
        before=before,
        after=MovedVault(before, moved_from, moved_to),
    )


def _new_path(
    link: Link, written: str, angled: bool, via: Via | None, source: str, target: str, after: VaultLookup
) -> str:
    """The path part that makes `link` open `target` from `source` in the `after` vault, in the
    form the link was written in (Rule 3)."""
    keep_suffix = link.path.lower().endswith(NOTE_SUFFIXES)
    plain = target if keep_suffix else _strip_suffix(target)
    relative = posixpath.relpath(plain, _folder(source) or ".")
    if link.path.startswith("./") and not relative.startswith("../"):
        relative = "./" + relative
    forms: list[str] = []
    if link.path.startswith("/"):
        forms.append("/" + plain)
    elif link.path.startswith(("./", "../")) or (via == "relative" and "/" in link.path):
        forms.append(relative)
    elif "/" not in link.path:  # a bare name, however it resolved (by name, alias, or in its folder)
        forms.append(plain.rsplit("/", 1)[-1])
    forms += [plain, "/" + plain]
    for form in forms:
        if resolve_path(form, link.style, source, after).target == target:
            return _encoded(form, written, angled) if link.style == "markdown" else form
    raise ValueError(f"no link form opens {target} from {source}")  # "/path" always does


_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")


def _encoded(path: str, written: str, angled: bool) -> str:
    """A Markdown link's new path, percent-encoded as the old one was: everything when it encoded
    a non-ASCII character, else blanks and URL specials (always, outside `<...>`), else nothing."""
    escapes = _ENCODED.findall(written)
    if any(int(e[1:], 16) >= 0x80 for e in escapes):
        return quote(path, safe="/")
    if escapes or (" " in path and not angled):
        return "".join(c if ord(c) >= 0x80 else quote(c, safe="/") for c in path)
    return path
