"""The `NoteStore` protocol's contract (`notes/store.py`), run against every store as `notewarden
serve` builds it (`storage.open_store` from a configuration): files (a real folder, its SQLite
index and ledger), SQLite and PostgreSQL (the service on 127.0.0.1:5432). A new store passes this
module before anything else (docs/architecture.md, "Add a storage backend").

What every store must do alike: one note model (ids, titles, sizes), note ids under the relative path
rules, reads / listing pages / title and word search / snippets, optimistic concurrency (a stale
version writes nothing, writing what is there is a harmless retry), moves that stay inside and never
replace, the trash (scoped by the original path, identity-checked, restore that never replaces, purge
bound to what was listed), and a note another program changed is not trashed by its old identity.
What may differ is said per store: content the SQL stores cannot keep as rows (`ContentRefused`),
attachments (the files of a workspace folder) and changes seen as they happen (the folder's watch).
Store-specific behaviour stays in tests/unit/test_files_store.py and tests/storage/test_sql_store.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from notewarden import storage
from notewarden.config import Config, parse_config
from notewarden.ledger import Ledger
from notewarden.notes.attachments import AttachmentsUnavailable
from notewarden.notes.files import FilesNoteStore
from notewarden.notes.history import Change
from notewarden.notes.live import ChangeFeed, Liveness, NoteEvent
from notewarden.notes.model import content_version
from notewarden.notes.sql import SqlNoteStore
from notewarden.notes.store import ContentRefused, NoteContent, NoteStore, VersionConflict, replace_with
from notewarden.scope.fs_errors import IdentityMismatch, NoteExists, NoteMissing, PathRejected
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import FolderRights, Right
from notewarden.scope.uri import FileUri, parse_file_uri
from notewarden.tools.registry import known_failure
from tests.pg import PgDatabase
from tests.store_changes import EMPTYING, SETUP, deleting

STORES = ("files", "sqlite", "postgres")


@dataclass
class Kit:
    """A store opened from its configuration, its ledger, and the workspace's scope."""

    kind: str
    config: Config
    store: NoteStore
    ledger: Ledger
    workspace: FileUri
    root: WorkspaceRoot | None
    overwrite: Callable[[str, bytes], None]
    """Another program rewrites a note: the file on disk, or the row with plain SQL."""

    def scope(self, *subtree: str) -> WorkspaceScope:
        return WorkspaceScope("alice", self.workspace, tuple(subtree), self.root)


@pytest.fixture(scope="module")
def upgraded(pg: PgDatabase) -> str:
    """The session's PostgreSQL database with the SQL store's schema (`notewarden db upgrade`)."""
    raw = {"storage": {"notes": "postgres", "database_url": pg.url}, "state_dir": "/nonexistent"}
    storage.upgrade_schema(parse_config(raw))
    return pg.url


@pytest.fixture(params=STORES)
def kit(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kit]:
    kind: str = request.param
    folder = tmp_path / "notes"
    folder.mkdir()
    workspace = (
        FileUri.from_path(str(folder))
        if kind == "files"
        else parse_file_uri(f"file:///db/{time.time_ns()}/notes")  # rows of a database: no folder
    )
    settings: dict[str, str] = {"notes": kind}
    if kind == "postgres":
        settings["database_url"] = request.getfixturevalue("upgraded")
    raw = {"state_dir": str(tmp_path / "state"), "workspace": [{"uri": str(workspace)}], "storage": settings}
    config = parse_config(raw)
    config.state_dir.mkdir()
    ledger = storage.open_ledger(config)
    store = storage.open_store(config, ledger)
    root = WorkspaceRoot.open(str(folder)) if kind == "files" else None

    def overwrite(note_id: str, data: bytes) -> None:
        if kind == "files":
            (folder / note_id).write_bytes(data)
            return
        with ledger.critical_section() as txn:
            txn.execute(
                "UPDATE notes SET body = ? WHERE workspace = ? AND path = ?",
                (data.decode(), str(workspace), note_id),
            )

    yield Kit(kind, config, store, ledger, workspace, root, overwrite)
    store.close()
    ledger.close()
    if root is not None:
        root.close()


def update(kit: Kit, note_id: str, data: bytes, version: str | None) -> NoteContent:
    change = Change("alice", "notes_update", "replaced the whole text")
    return kit.store.rewrite_note(kit.scope(), note_id, replace_with(data, version), change=change).after


def test_each_store_is_the_one_its_configuration_names(kit: Kit) -> None:
    """`storage.open_store` builds each store with what it needs (nothing patched in afterwards): the
    files store asks `ledger_for` a folder's ledger, the one it was given unless told another."""
    expected = FilesNoteStore if kit.kind == "files" else SqlNoteStore
    assert type(kit.store) is expected
    if isinstance(kit.store, FilesNoteStore):
        assert kit.store.ledger_for(str(kit.workspace)) is kit.ledger


def test_one_note_model(kit: Kit) -> None:
    store, everywhere = kit.store, kit.scope()
    store.create_note(everywhere, "reports/tps.md", b"---\ntitle: TPS report\n---\nbody\n", change=SETUP)
    store.create_note(everywhere, "b.md", b"# Heading title\n", change=SETUP)
    store.create_note(everywhere, "plain-stem.md", b"no title here\n", change=SETUP)
    notes = store.list_notes(everywhere)
    assert [(n.id, n.title) for n in notes] == [
        ("b.md", "Heading title"),
        ("plain-stem.md", "plain-stem"),
        ("reports/tps.md", "TPS report"),
    ]
    assert [n.id for n in store.list_notes(kit.scope("reports"))] == ["reports/tps.md"]
    assert notes[0].size == len(b"# Heading title\n") and abs(notes[0].modified - time.time()) < 60
    with pytest.raises(NoteExists):
        store.create_note(everywhere, "b.md", b"# again\n", change=SETUP)
    for bad in ("../x.md", "/abs.md", "a//b.md", ".notewarden-trash/x.md", "a\\b.md", "x\x00.md", ""):
        with pytest.raises(PathRejected):
            store.create_note(everywhere, bad, b"# x\n", change=SETUP)
    assert [n.id for n in store.list_notes(everywhere)] == ["b.md", "plain-stem.md", "reports/tps.md"]


def test_reads_writes_search_and_the_trash(kit: Kit) -> None:
    store, everywhere, ledger = kit.store, kit.scope(), kit.ledger
    for i in range(5):
        store.create_note(
            everywhere, f"p/n{i}.md", f"# Page {i}\n\nreport number {i}\n".encode(), change=SETUP
        )
    assert [n.id for n in store.list_page(everywhere, after="p/n1.md", limit=2)] == ["p/n2.md", "p/n3.md"]
    assert [n.id for n in store.find_titled(everywhere, ["page", "3"])] == ["p/n3.md"]
    hits = store.search(everywhere, ["rep", "3"], after=None, limit=10)
    assert [h.note.id for h in hits] == ["p/n3.md"]
    assert "**report** number **3**" in hits[0].snippet
    assert store.search(everywhere, ["port"], after=None, limit=10) == [], "terms match word starts"
    first = store.search(everywhere, ["page"], after=None, limit=2)
    rest = store.search(everywhere, ["page"], after=first[-1].position, limit=10)
    assert sorted(h.note.id for h in first + rest) == [f"p/n{i}.md" for i in range(5)]

    read = store.read_notes(everywhere, ["p/n1.md", "p/none.md", "p/n0.md"])
    assert {i: r.data for i, r in read.items()} == {
        "p/n1.md": b"# Page 1\n\nreport number 1\n",
        "p/n0.md": b"# Page 0\n\nreport number 0\n",
    }, "many notes in one read; a missing one left out"
    assert read["p/n1.md"].note == store.read_note(everywhere, "p/n1.md").note
    assert store.read_notes(kit.scope("q"), ["p/n0.md"]) == {}, "outside the reach: nothing read"
    with pytest.raises(NoteMissing):
        store.notes_by_id(everywhere, ["p/n0.md", "p/none.md"])
    current = store.read_note(everywhere, "p/n0.md")
    assert current.data == b"# Page 0\n\nreport number 0\n"
    assert current.version == content_version(current.data)
    updated = update(kit, "p/n0.md", b"# Page 0\n\nedited\n", current.version)
    assert updated.version == content_version(b"# Page 0\n\nedited\n")
    with pytest.raises(VersionConflict) as conflict:
        update(kit, "p/n0.md", b"# other\n", current.version)
    assert conflict.value.current_version == updated.version
    assert store.read_note(everywhere, "p/n0.md").data == b"# Page 0\n\nedited\n", (
        "a stale write wrote nothing"
    )
    assert update(kit, "p/n0.md", b"# Page 0\n\nedited\n", "stale").data == updated.data, (
        "writing what is there is a harmless retry"
    )

    with pytest.raises(NoteExists):
        store.move_note(everywhere, "p/n0.md", "p/n1.md", change=SETUP)
    for outside in ("../n0.md", "/etc/n0.md", ".notewarden-trash/x.md"):
        with pytest.raises(PathRejected):
            store.move_note(everywhere, "p/n0.md", outside, change=SETUP)
    assert store.move_note(everywhere, "p/n0.md", "q/moved.md", change=SETUP).note.id == "q/moved.md"
    assert "p/n0.md" not in {n.id for n in store.list_notes(everywhere)}

    (moved,) = store.notes_by_id(everywhere, ["q/moved.md"])
    with ledger.critical_section() as txn:
        trashed = store.move_to_trash(txn, everywhere, [moved], change=deleting("alice", "c"))[0]
        (listed,) = store.list_trash(txn, everywhere)
        assert (listed.trash_id, listed.note_id) == (trashed.trash_id, "q/moved.md")
        assert store.list_trash(txn, kit.scope("p")) == [], "the trash is scoped by original path too"
    assert store.find_titled(everywhere, ["page", "0"]) == []
    store.create_note(everywhere, "q/moved.md", b"# taken again\n", change=SETUP)
    with pytest.raises(NoteExists), ledger.critical_section() as txn:
        store.restore(txn, everywhere, trashed.trash_id, change=SETUP)
    with ledger.critical_section() as txn:
        back = store.restore(txn, everywhere, trashed.trash_id, new_id="q/back.md", change=SETUP)
    assert store.read_note(everywhere, back.id).data == b"# Page 0\n\nedited\n"
    assert store.read_note(everywhere, "q/moved.md").data == b"# taken again\n", "restore never replaces"
    with pytest.raises(NoteMissing), ledger.critical_section() as txn:
        store.restore(txn, everywhere, trashed.trash_id, change=SETUP)

    (two,) = store.notes_by_id(everywhere, ["p/n2.md"])
    with ledger.critical_section() as txn:
        store.move_to_trash(txn, everywhere, [two], change=deleting("alice", "c2"))
        entries = store.list_trash(txn, everywhere)
    stale = [
        type(entries[0])(**{**{f: getattr(entries[0], f) for f in entries[0].__slots__}, "identity": None})
    ]
    with pytest.raises(IdentityMismatch), ledger.critical_section() as txn:
        store.purge_trash(txn, everywhere, stale, change=EMPTYING)
    with ledger.critical_section() as txn:
        assert store.purge_trash(txn, everywhere, entries, change=EMPTYING) == 1
        assert store.list_trash(txn, everywhere) == []


def test_a_note_another_program_changed_is_not_trashed_by_its_old_identity(kit: Kit) -> None:
    store, everywhere = kit.store, kit.scope()
    store.create_note(everywhere, "keep/n.md", b"# N\n", change=SETUP)
    (shown,) = store.list_notes(everywhere)
    kit.overwrite("keep/n.md", b"# N\nchanged by another program")
    with pytest.raises(IdentityMismatch), kit.ledger.critical_section() as txn:
        store.move_to_trash(txn, everywhere, [shown], change=deleting("alice", "c1"))
    with pytest.raises(PathRejected), kit.ledger.critical_section() as txn:
        store.move_to_trash(txn, kit.scope("other"), [shown], change=deleting("alice", "c1"))
    (current,) = store.notes_by_id(everywhere, ["keep/n.md"])  # with its current identity
    assert current.identity != shown.identity
    with pytest.raises(PathRejected), kit.ledger.critical_section() as txn:  # out of reach, however current
        store.move_to_trash(txn, kit.scope("other"), [current], change=deleting("alice", "c1"))
    with kit.ledger.critical_section() as txn:
        store.move_to_trash(txn, everywhere, [current], change=deleting("alice", "c2"))
    assert store.list_notes(everywhere) == []
    with pytest.raises(NoteMissing), kit.ledger.critical_section() as txn:
        store.move_to_trash(txn, everywhere, [current], change=deleting("alice", "c3"))


def test_content_a_store_cannot_keep_is_refused_with_what_is_allowed(kit: Kit) -> None:
    """Files keep any bytes; a database text column keeps UTF-8 text without NUL, and the SQL stores
    refuse anything else with `ContentRefused` (the tool error `content_refused`), writing nothing."""
    store, everywhere = kit.store, kit.scope()
    store.create_note(everywhere, "n.md", b"# N\n", change=SETUP)
    for data, why in ((b"# caf\xe9\n", "must be UTF-8 text"), (b"# N\x00\n", "cannot contain NUL")):
        if kit.kind == "files":
            assert update(kit, "n.md", data, None).data == data
            continue
        with pytest.raises(ContentRefused, match=why) as refused:
            update(kit, "n.md", data, None)
        with pytest.raises(ContentRefused, match=why):
            store.create_note(everywhere, "other.md", data, change=SETUP)
        failure = known_failure(refused.value)
        assert failure is not None and failure.code == "content_refused"
        assert str(refused.value).startswith("nothing was written: a note kept in the database")
        assert store.read_note(everywhere, "n.md").data == b"# N\n"
        assert [n.id for n in store.list_notes(everywhere)] == ["n.md"]


def test_attachments_are_the_files_of_a_workspace_folder(kit: Kit) -> None:
    """`NoteStore.attachment_vault` (`attachments` Rules 2 and 6): the files store opens an attachment
    link to a file of the folder in the caller's reach, across the whole workspace, and to none where
    the caller may not read; a workspace kept in a database has no attachments, and says why."""
    if kit.root is None:
        with pytest.raises(AttachmentsUnavailable, match="kept in the database"):
            kit.store.attachment_vault(kit.scope())
        return
    folder = Path(kit.workspace.path)
    for path in ("img/a.png", "private/b.png"):
        (folder / path).parent.mkdir()
        (folder / path).write_bytes(b"\x89PNG\r\n\x1a\n")
    vault = kit.store.attachment_vault(kit.scope("notes"))  # the whole workspace: links resolve across it
    assert [vault.resolve(name, "wiki", "notes/n.md").target for name in ("a.png", "b.png", "c.png")] == [
        "img/a.png",
        "private/b.png",
        None,
    ]
    held = (FolderRights(("img",), frozenset({Right.READ})),)
    reach = WorkspaceScope("bob", kit.workspace, (), kit.root, Right.READ, (("img",),), held)
    assert kit.store.attachment_vault(reach).resolve("b.png", "wiki", "img/n.md").target is None


def test_a_store_tells_the_feed_what_it_sees_change_outside_notewarden(kit: Kit) -> None:
    """`NoteStore.watch_changes` (`live` Rule 2): the files store's index watch tells the feed of a
    person's edit, through the drain that runs while someone listens; a store of rows sees no such
    change as it happens (another instance's reach it through the PostgreSQL relay)."""
    feed = ChangeFeed()
    drain = kit.store.watch_changes(feed, lambda _workspace: kit.scope().root)
    if kit.root is None:
        assert drain is None
        return
    edit = NoteEvent(str(kit.workspace), "by-hand.md", True)
    heard: list[NoteEvent] = []
    told = threading.Event()

    def listener(events: Sequence[NoteEvent]) -> None:
        heard.extend(events)
        if edit in events:
            told.set()

    feed.subscribe(listener)
    release = Liveness(drain, None).hold([str(kit.workspace)], wait=30)  # drained once: watching
    try:
        kit.overwrite("by-hand.md", b"# Written by an editor\n")
        assert told.wait(30), f"the drain tells the feed of the edit; heard {heard}"
    finally:
        release()


def test_the_files_store_keeps_history_in_the_ledger_it_was_built_with(tmp_path: Path) -> None:
    """The files store's per-folder ledger (`open_store(trash_ledger=)`, `Services.trash_ledger`): a
    content write's saved version lands in the ledger that owns the folder, not in the server's own."""
    folder = tmp_path / "notes"
    folder.mkdir()
    config = parse_config({"state_dir": str(tmp_path / "state"), "workspace": [{"uri": folder.as_uri()}]})
    config.state_dir.mkdir()
    own, owner = storage.open_ledger(config), storage.open_ledger(parse_config({"state_dir": str(tmp_path)}))
    store = storage.open_store(config, own, trash_ledger=lambda _workspace: owner)
    try:
        with WorkspaceRoot.open(str(folder)) as root:
            scope = WorkspaceScope("alice", FileUri.from_path(str(folder)), (), root)
            store.create_note(scope, "h.md", b"# H\n\nv1\n", change=SETUP)
            change = Change("alice", "notes_update", "replaced the whole text")
            store.rewrite_note(scope, "h.md", replace_with(b"# H\n\nv2\n", None), change=change)
        for ledger, kept in ((owner, 1), (own, 0)):
            with ledger.snapshot() as db:
                assert db.execute("SELECT count(*) FROM note_history") == [(kept,)]
    finally:
        store.close()
        own.close()
        owner.close()
