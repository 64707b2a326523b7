"""The `NoteStore` protocol: what every note backend offers the tools.

A store never authorizes: it receives a `WorkspaceScope` that `grants` produced, and
operates only inside it. Every store uses the same note model (`notes.model`): a note
belongs to a workspace URI and its id is a relative path under `note_paths.split_relative`'s
rules, so a scope's subtree contains the same ids whatever the store. Mutations take the ledger's open transaction (`LedgerTxn`), so
that a store sharing the ledger's database writes its rows in the same transaction as
the claim, and a store that cannot (files) registers an undo step to run on rollback.

Every trash mutation (move to trash, restore, purge) runs inside that transaction; writes
that never touch the trash (create, rewrite, move) open their own. A note's version is
`model.content_version` of its bytes in every store, so clients see one meaning.

Every mutating method takes the `history.Change` it makes (who, with which client and tool, the
confirmation, a summary) and writes that change's one record (`notes.change_log`) through the same
transaction as the change, unless it changed nothing; `change_log` Rule 2 says what a crash can
leave where the store's files cannot join that transaction. `recent` says who made each change it
shows (`NoteChange.by`), from those records.
A store never decides which notes a scope reaches: one note's id goes through `scope.check`
(`fs_errors.PathRejected` outside the scope's folder, `rights.RightMissing` where its right does
not hold), and every query over many notes is confined to `scope.regions` (`within_regions`).

Every write that replaces content goes through `rewrite_note`, which keeps the replaced content
in the note's history (`notes.history`) and resolves a concurrent writer by calling the rewrite
again on the content that writer left (so an edit anchored on content merges, and one that
expects a version conflicts). A caller that rewrites notes (an edit, a revert, a move that fixes
links) passes a function from the current content to the new bytes and a `history.Change`.

What differs between stores is answered by the store, never by a caller testing its type: whether
its workspaces have attachments (`attachment_vault`) and whether it sees changes made outside
notewarden as they happen (`watch_changes`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Protocol

from notewarden.ledger import LedgerTxn, SqlSession
from notewarden.notes import links
from notewarden.notes.change_log import Author, ChangeLog, Seen
from notewarden.notes.health import HealthItem, HealthKey
from notewarden.notes.history import Change, HistoryEntry
from notewarden.notes.model import Note, NoteIdentity, content_version
from notewarden.notes.snippets import snippet
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right, RightMissing
from notewarden.scope.uri import FileUri

if TYPE_CHECKING:
    from notewarden.notes.attachments import AttachmentVault
    from notewarden.notes.live import ChangeFeed, Drain
    from notewarden.notes.vectors import Embedder, Vectors

__all__ = [
    "FILTER_FIRST_CAP",
    "MERGE_ATTEMPTS",
    "ContentRefused",
    "LinkView",
    "MeaningHit",
    "Moved",
    "NoteChange",
    "NoteContent",
    "NoteFilter",
    "NoteLinks",
    "NoteStore",
    "ProgressSink",
    "PropertyTest",
    "Relinked",
    "Rewrite",
    "Rewritten",
    "SearchHit",
    "SkippedEntry",
    "TagCount",
    "TrashedNote",
    "VersionConflict",
    "attributed",
    "refuse_unwritable_links",
    "relink_change",
    "replace_with",
    "within_regions",
]

MERGE_ATTEMPTS = 3
FILTER_FIRST_CAP = 1000
"""A filters-only search (newest first) counts, up to this many, the notes its most selective indexed
filter (a tag, a property, a folder) keeps: fewer, and it reads them all and sorts them; more, and it
walks the notes newest first through the time index, testing each, and stops at the page's end. Both
read O(page / share of notes kept) or O(this) rows, never every note."""
"""How often `rewrite_note` reads and rewrites again when another writer keeps changing the note."""

ProgressSink = Callable[[float, float | None, str], None]
"""(done, total, message): called from the worker thread while a long operation runs."""


def phased(sink: ProgressSink | None) -> tuple[ProgressSink | None, ProgressSink | None]:
    """Two phases of one call (indexing, then embedding) told as one count that only grows: the
    second goes on from the first's total (a client drops a count that goes back)."""
    if sink is None:
        return None, None
    ended = 0.0

    def first(done: float, total: float | None, message: str) -> None:
        nonlocal ended
        ended = max(ended, done if total is None else total)
        sink(done, total, message)

    def then(done: float, total: float | None, message: str) -> None:
        sink(ended + done, None if total is None else ended + total, message)

    return first, then


@dataclass(frozen=True, slots=True)
class TrashedNote:
    trash_id: str
    note_id: str
    title: str
    deleted_at: float
    size: int = 0
    identity: NoteIdentity | None = None
    """What the trash entry was when listed: a purge confirmed for it refuses another file."""


@dataclass(frozen=True, slots=True)
class SkippedEntry:
    """Something in a workspace folder that a listing leaves out on purpose, and why."""

    id: str
    reason: str


@dataclass(frozen=True)
class NoteContent:
    note: Note
    data: bytes

    @cached_property
    def version(self) -> str:
        """Computed once: a digest of a large note is not free (0.6 ms per MiB)."""
        return content_version(self.data)


@dataclass(frozen=True)
class SearchHit:
    note: Note
    position: tuple[float, str]
    """(rank, id): where the next page starts. Opaque to callers; a lower rank is a better match.
    Without terms (filters only) the rank is the negated modification time in nanoseconds, an int."""
    aliases: tuple[str, ...] = ()
    """The note's front-matter aliases: a search ranks a note whose title or alias has the words first."""
    text: str = ""
    """The start of the note's text (`snippets.SNIPPET_SCAN_CHARS`), for its snippet."""
    terms: tuple[str, ...] = ()

    @cached_property
    def snippet(self) -> str:
        """Made when asked (`notes.snippets`): a search ranks many more hits than it shows."""
        return snippet(self.text, self.terms) if self.text else ""


@dataclass(frozen=True, slots=True)
class MeaningHit:
    """A note found by meaning (`notes.vectors`): the section closest to the question, and how close."""

    note: Note
    section: str
    """Its heading path (`notes.sections`), which `notes_read {section}` accepts; "" before any heading."""
    score: float
    aliases: tuple[str, ...] = ()


SearchMatch = Literal["all", "any", "rarer"]
"""`all`: every term (the strict match); `any`: some but not all terms (the ranked fallback);
`rarer`: as `any`, ranked within the work budget of `ranking` Rule 4 (what a search with meaning asks)."""


@dataclass(frozen=True, slots=True)
class PropertyTest:
    """One front-matter condition: the property `name` (a list matches when an item does) is
    `equals` value, `in` a list of values, `before` or `after` a value (ISO dates compare as text)."""

    name: str
    op: Literal["equals", "in", "before", "after"]
    value: Any


@dataclass(frozen=True, slots=True)
class NoteFilter:
    """What a search keeps besides its words. A tag matches itself and its nested tags (`area`
    matches `area/sub`); tags are compared folded (`markdown.tag_key`)."""

    tags_all: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    properties: tuple[PropertyTest, ...] = ()
    modified_after_ns: int | None = None
    modified_before_ns: int | None = None
    folder: str = ""
    """A folder relative to the workspace root ('' = anywhere in the scope)."""


@dataclass(frozen=True, slots=True)
class TagCount:
    tag: str
    """As written; of several spellings of one tag (`#Area/Sub`, `#area/sub`) the first in code-point order."""
    notes: int


@dataclass(frozen=True, slots=True)
class LinkView:
    """A link between notes as shown: from `source` (its id and title), as `written` on `line`."""

    source: str
    source_title: str
    line: int
    written: str
    context: str
    embed: bool
    path: str
    anchor: str
    target: str | None
    via: str | None
    """How it resolved (`links` Rule 1): self, path, relative, name, alias; None: unresolved."""
    anchor_found: bool | None = None
    """Whether the target has the anchor; None when there is no anchor or no target."""
    seq: int = 0
    """The link's place among its note's links: with `source`, a backlink's key for paging."""


@dataclass(frozen=True, slots=True)
class NoteLinks:
    """A note, what it says about itself (tags, front matter) and how it connects."""

    note: Note
    outgoing: Sequence[LinkView]
    backlinks: Sequence[LinkView]
    backlinks_total: int
    tags: Sequence[str] = ()
    properties: dict[str, Any] | None = None
    property_error: str | None = None
    """Why the front matter could not be read (the note is indexed all the same)."""


@dataclass(frozen=True, slots=True)
class NoteChange:
    """A note's latest change: created, modified, moved (from `previous`) or deleted, and when."""

    note_id: str
    title: str
    kind: Literal["created", "modified", "moved", "deleted"]
    at_ns: int
    previous: str | None = None
    identity: NoteIdentity | None = None
    """The note as it is now (None for one that went): what tells whose change it shows."""
    by: Author | None = None
    """Who made it through notewarden (`change_log` Rule 4); None for a change nobody recorded."""


def attributed(
    changes: Sequence[NoteChange], log: ChangeLog, db: SqlSession, workspace: str
) -> list[NoteChange]:
    """`changes` with who made each (`ChangeLog.authors`): read with the store's own reads."""
    seen = [
        Seen(c.note_id, c.at_ns / 1e9, None if c.identity is None else c.identity.fingerprint())
        for c in changes
    ]
    return [replace(c, by=a) for c, a in zip(changes, log.authors(db, workspace, seen), strict=True)]


def relink_change(change: Change, moved_from: str, moved_to: str) -> Change:
    """What a move's link rewrite keeps in each rewritten note's history: the move's change, saying
    why that note's text changed."""
    return replace(change, summary=f"links to {moved_from} now open it at {moved_to}")


@dataclass(frozen=True, slots=True)
class Relinked:
    """A note whose links a move rewrote (`links` Rule 3), or in a dry run would rewrite."""

    note_id: str
    """Its id after the move (the moved note's is the new one)."""
    rewrites: tuple[links.Rewrite, ...]
    saved: HistoryEntry | None = None
    """Where its content before the rewrite was saved (None in a dry run)."""


@dataclass(frozen=True, slots=True)
class Moved:
    note: Note
    """The note at its new id (in a dry run: as it is, not moved)."""
    relinked: tuple[Relinked, ...] = ()


class ContentRefused(ValueError):
    """Content this store cannot keep as given (the SQL store: bytes that are not UTF-8 text, or text
    with a NUL character, which a database text column cannot hold); nothing was written."""


class VersionConflict(Exception):
    """An update named a version that is no longer the note's; nothing was written."""

    def __init__(self, note_id: str, current_version: str) -> None:
        super().__init__(
            f"{note_id} is no longer at the version you read; its current version is {current_version}. "
            "Read it again, merge your change, and retry with that version."
        )
        self.note_id = note_id
        self.current_version = current_version


@dataclass(frozen=True, slots=True)
class Rewritten:
    before: NoteContent
    after: NoteContent
    saved: HistoryEntry | None
    """The history entry `before` was saved as; None when nothing was written (already `after`)."""


Rewrite = Callable[[NoteContent], bytes]
"""The current content -> the new bytes; raising refuses the write (nothing is written)."""


def replace_with(data: bytes, expected_version: str | None) -> Rewrite:
    """A whole-content write (`notes_update`, `notes_revert`): only over `expected_version` (None: over
    whatever is there), except that content already equal to `data` is no conflict (a retry)."""

    def rewrite(current: NoteContent) -> bytes:
        if expected_version is not None and current.data != data and current.version != expected_version:
            raise VersionConflict(current.note.id, current.version)
        return data

    return rewrite


def refuse_unwritable_links(whole: WorkspaceScope, rewritten: Sequence[str], moved_from: str) -> None:
    """A move rewrites links only where its principal may write (`rights` Rule 4): when a note whose
    links it would rewrite is out of `whole`'s reach (the write right over the whole workspace),
    the move is refused before anything changes, naming the notes the principal may read and
    counting the others."""
    blocked = [n for n in rewritten if not whole.contains(n)]
    if not blocked:
        return
    named = [n for n in blocked if whole.may(Right.READ, n)]
    shown = ", ".join(named[:10]) + (f" and {len(named) - 10} more" if len(named) > 10 else "")
    hidden = len(blocked) - len(named)
    where = (
        (shown + (f"; and {hidden} note(s) you may not read" if hidden else ""))
        if named
        else (f"{hidden} note(s) you may not read")
    )
    raise RightMissing(
        f"nothing was moved: moving {moved_from} would rewrite the links to it in {len(blocked)} note(s) "
        f"where {whole.principal} may not write: {where}. Move it with updateLinks: false to leave "
        "those links as they are (they will no longer open it), or ask the server's operator for write there.",
        right=Right.WRITE,
        where=str(whole.workspace),
    )


def within_regions(column: str, regions: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """SQL (an `AND …` clause and its parameters) restricting `column`, a note id, to the folders
    `regions` (`WorkspaceScope.regions`; "" is the whole workspace, no folder is none)."""
    if isinstance(regions, str):
        raise TypeError("regions is a sequence of folders, not one string")
    if "" in regions:
        return "", ()
    if not regions:
        return " AND 1 = 0", ()
    ranges = [f"({column} >= ? AND {column} < ?)" for _ in regions]
    bounds = tuple(b for folder in regions for b in (folder + "/", folder + "0"))  # '0' follows '/'
    if len(ranges) == 1:
        return f" AND {ranges[0][1:-1]}", bounds
    return f" AND ({' OR '.join(ranges)})", bounds


class NoteStore(Protocol):
    def embed_pending(
        self, scope: WorkspaceScope, embedder: Embedder, *, progress: ProgressSink | None = None
    ) -> int:
        """Compute the vectors of the workspace's notes written since theirs were (only those, and of
        those only the sections that changed); how many notes were embedded (issue 25)."""
        ...

    def nearest(
        self,
        scope: WorkspaceScope,
        embedder: Embedder,
        query: Vectors,
        *,
        limit: int,
        filters: NoteFilter | None = None,
        exclude: frozenset[str] = frozenset(),
    ) -> Sequence[MeaningHit]:
        """The notes in the scope's reach, passing `filters` and not in `exclude`, whose best section
        is closest to `query`, best first (vectors computed by `embed_pending`)."""
        ...

    def note_sections(
        self, scope: WorkspaceScope, embedder: Embedder, note_id: str
    ) -> Sequence[tuple[str, Vectors]]:
        """A note's sections and their vectors (`NoteMissing` when it is not a note in the scope)."""
        ...

    def list_notes(self, scope: WorkspaceScope) -> Sequence[Note]:
        """Every note inside the scope's subtree, sorted by id."""
        ...

    def skipped(self, scope: WorkspaceScope) -> Sequence[SkippedEntry]:
        """What the last listing of the scope left out on purpose (a symlinked folder, another
        filesystem), by id; empty for stores whose workspaces are not folders."""
        ...

    def move_to_trash(
        self, txn: LedgerTxn, scope: WorkspaceScope, candidates: Sequence[Note], *, change: Change
    ) -> list[TrashedNote]:
        """Move the confirmed notes to the trash inside `txn`, after checking each is still that note
        (`candidate.identity` holds `NoteIdentity.as_file` of the note that was shown); one record.

        Raises `fs_errors.IdentityMismatch` when a note changed since it was shown, and
        `fs_errors.NoteMissing` when one is gone.
        """
        ...

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot | None) -> int:
        """Undo trash moves whose transaction never committed (a crash); returns how many.
        `root` is the workspace's directory, `None` for stores whose workspaces are not folders."""
        ...

    def find_titled(
        self, scope: WorkspaceScope, words: Sequence[str], *, progress: ProgressSink | None = None
    ) -> Sequence[Note]:
        """Every note in the scope one of whose names contains every word (`model.matched_name`:
        title, file stem, aliases), by id, with its aliases, each re-checked against its current
        identity (never a note that is gone)."""
        ...

    def notes_by_id(self, scope: WorkspaceScope, note_ids: Sequence[str]) -> Sequence[Note]:
        """These notes, in the given order, with their current identity; `fs_errors.NoteMissing` names
        the first that does not exist."""
        ...

    def list_page(
        self,
        scope: WorkspaceScope,
        *,
        after: str | None,
        limit: int,
        progress: ProgressSink | None = None,
    ) -> Sequence[Note]:
        """Up to `limit` notes with ids greater than `after`, by id (keyset pagination)."""
        ...

    def search(
        self,
        scope: WorkspaceScope,
        terms: Sequence[str],
        *,
        after: tuple[float, str] | None,
        limit: int,
        progress: ProgressSink | None = None,
        match: SearchMatch = "all",
        filters: NoteFilter | None = None,
    ) -> Sequence[SearchHit]:
        """Notes matching the terms (`model.search_terms`; every one, or with `match="any"` some but
        not all) in title, path or body and passing `filters`, best first, after the position of
        the previous page's last hit. Without terms, the notes passing `filters`, newest first."""
        ...

    def tags(
        self, scope: WorkspaceScope, *, prefix: str, after: str | None, limit: int
    ) -> Sequence[TagCount]:
        """Tags starting with `prefix` (folded) with how many notes carry each, by tag, after `after`."""
        ...

    def health(
        self, scope: WorkspaceScope, *, kinds: frozenset[str], after: HealthKey | None, limit: int
    ) -> Sequence[HealthItem]:
        """Up to `limit` items of the vault's health report (`notes.health`: its kinds, their order,
        judged from the index alone) of the notes in reach, after the item `after` (keyset paging)."""
        ...

    def links(
        self, scope: WorkspaceScope, note_id: str, *, limit: int, after: tuple[str, int] | None = None
    ) -> NoteLinks:
        """The note's outgoing links (resolved or not, embeds included) and up to `limit` backlinks
        from notes in reach, by (source, seq), after the backlink `after` (keyset paging)."""
        ...

    def attachment_vault(self, scope: WorkspaceScope) -> AttachmentVault:
        """The attachments `scope` reaches anywhere in its workspace (links resolve across it), as
        attachment links find them (`attachments` Rule 2); `attachments.AttachmentsUnavailable` from a
        store whose workspaces are not folders (Rule 6)."""
        ...

    def watch_changes(self, feed: ChangeFeed, root_of: Callable[[str], WorkspaceRoot]) -> Drain | None:
        """Have what the store sees change outside this server told to `feed` (`live` Rule 2), and the
        `Drain` that looks while someone listens (`root_of`: a workspace URI's folder); None from a
        store that sees no such change as it happens."""
        ...

    def recent(self, scope: WorkspaceScope, *, since_ns: int | None, limit: int) -> Sequence[NoteChange]:
        """The latest change of each note changed since `since_ns`, newest first."""
        ...

    def similar_titles(self, scope: WorkspaceScope, title: str) -> Sequence[Note]:
        """Notes whose title is the same as `title` or nearly (case, punctuation, a typo)."""
        ...

    def complete_ids(self, scope: WorkspaceScope, prefix: str, *, limit: int) -> tuple[Sequence[str], bool]:
        """Note ids that start with `prefix`, or whose file name does (case-insensitive), by id;
        and whether there are more."""
        ...

    def read_note(self, scope: WorkspaceScope, note_id: str) -> NoteContent: ...

    def read_notes(self, scope: WorkspaceScope, note_ids: Sequence[str]) -> dict[str, NoteContent]:
        """These notes by id, as `read_note` reads each, in one read where the store can (a search
        page's snippets, issue 25); a note that cannot be read (an `fs_errors.FsError`) is left out."""
        ...

    def create_note(self, scope: WorkspaceScope, note_id: str, data: bytes, *, change: Change) -> NoteContent:
        """Create exclusively (`fs_errors.NoteExists` if the id is taken); missing folders are made."""
        ...

    def rewrite_note(
        self, scope: WorkspaceScope, note_id: str, rewrite: Rewrite, *, change: Change
    ) -> Rewritten:
        """Replace the content with `rewrite(current)`, saving `current` in the note's history, in one
        step against every other writer: when the note changed between the read and the write,
        `rewrite` runs again on what is there now (at most `MERGE_ATTEMPTS` times, then
        `VersionConflict`). Bytes equal to the current content write nothing."""
        ...

    def note_history(self, scope: WorkspaceScope, note_id: str) -> Sequence[HistoryEntry]:
        """The note's saved versions, newest first (`fs_errors.NoteMissing` when it has neither a history
        nor a current content)."""
        ...

    def saved_version(
        self, scope: WorkspaceScope, note_id: str, version_id: str
    ) -> tuple[HistoryEntry, bytes]:
        """One saved version and its bytes; `fs_errors.NoteMissing` when the note has no such version."""
        ...

    def select_history(
        self, txn: LedgerTxn, scope: WorkspaceScope, *, saved_before: float
    ) -> Sequence[HistoryEntry]:
        """Every saved version of the scope's notes (not those in the trash) saved before the bound."""
        ...

    def purge_history(
        self, txn: LedgerTxn, scope: WorkspaceScope, entries: Sequence[HistoryEntry], *, change: Change
    ) -> int:
        """Delete these saved versions for good; returns how many."""
        ...

    def move_note(
        self,
        scope: WorkspaceScope,
        note_id: str,
        new_id: str,
        *,
        change: Change,
        relink: bool = False,
        dry_run: bool = False,
        progress: ProgressSink | None = None,
        relink_attachments: bool = False,
    ) -> Moved:
        """Rename inside the workspace, never replacing (`fs_errors.NoteExists`). With `relink`, every
        link whose target the move would change, in any note of the workspace, is rewritten to open
        the same note afterwards (`links.rewrite_for_move`), each rewritten note's content kept in its
        history under `relink_change(change, …)`: all of it or none of it. A linking note another writer changes during
        the move is read again and rewritten on its new content (at most `MERGE_ATTEMPTS` times, then
        `VersionConflict` and nothing is written). `dry_run`: what would be rewritten; nothing is.
        `relink_attachments` (with `relink`): links to attachments count too (`attachments.WithAttachments`),
        so the moved note's relative links to files that stay where they are still open them; a store
        without files (SQL) has none to rewrite."""
        ...

    def list_trash(self, txn: LedgerTxn, scope: WorkspaceScope) -> Sequence[TrashedNote]:
        """Trash entries whose original path is inside the scope, newest first, each still present."""
        ...

    def restore(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        trash_id: str,
        *,
        change: Change,
        new_id: str | None = None,
    ) -> Note:
        """Put a trashed note back at its original path (or `new_id`), never replacing anything."""
        ...

    def purge_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        entries: Sequence[TrashedNote],
        *,
        change: Change,
        progress: ProgressSink | None = None,
    ) -> int:
        """Delete these trash entries for good, after checking each is still the listed file
        (`fs_errors.IdentityMismatch` otherwise, before anything is deleted); returns how many."""
        ...

    def close(self) -> None: ...
