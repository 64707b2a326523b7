"""The files store's index against a real folder and a real SQLite file, changed behind its back.

Each test runs twice: with inotify (the default) and with directory stamps only (the fallback).
What both must guarantee: a note created, renamed or moved out of band is found under its new id,
and a deleted or moved note is never returned, whatever the change detection saw.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from notewarden.notes.index import NoteIndex
from notewarden.notes.index_refresh import BATCH, INDEX_MIGRATIONS, STALE_BATCH
from notewarden.notes.model import match_words, search_terms
from notewarden.schema import apply_migrations
from notewarden.scope.fsroot import SKIPPED_SYMLINK, WorkspaceRoot

pytestmark = pytest.mark.resolves_files

WS = "file:///ws"


@pytest.fixture(params=["inotify", "stamps"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    (notes / "reports").mkdir(parents=True)
    (notes / "reports" / "tps-2019.md").write_text("# TPS report 2019\n\nCover sheet missing.\n")
    (notes / "reports" / "budget.md").write_text("# Budget\n\nNumbers.\n")
    (notes / "todo.md").write_text("- buy a stapler\n")
    return notes


@pytest.fixture
def root(folder: Path) -> Iterator[WorkspaceRoot]:
    with WorkspaceRoot.open(str(folder)) as r:
        yield r


@pytest.fixture
def index(tmp_path: Path, mode: str) -> Iterator[NoteIndex]:
    idx = NoteIndex(tmp_path / "index.sqlite3", watch=mode == "inotify", verify_interval=3600)
    yield idx
    idx.close()


def search(index: NoteIndex, root: WorkspaceRoot, query: str, subtree: str = "") -> list[str]:
    """The ids found, sorted by id (ranking has its own test)."""
    return sorted(
        n.id for n in index.search(WS, root, (subtree,), search_terms(query), after=None, limit=100)
    )


def titled(index: NoteIndex, root: WorkspaceRoot, query: str) -> list[str]:
    return [n.id for n in index.titled(WS, root, ("",), match_words(query))]


def listed(index: NoteIndex, root: WorkspaceRoot) -> list[str]:
    return [n.id for n in index.page(WS, root, ("",), after=None, limit=None)]


def test_first_call_indexes_titles_paths_and_bodies(index: NoteIndex, root: WorkspaceRoot) -> None:
    assert listed(index, root) == ["reports/budget.md", "reports/tps-2019.md", "todo.md"]
    assert search(index, root, "cover") == ["reports/tps-2019.md"]
    assert search(index, root, "stapl") == ["todo.md"]  # word prefix
    assert search(index, root, "reports") == ["reports/budget.md", "reports/tps-2019.md"]  # the path
    assert titled(index, root, "tps rep") == ["reports/tps-2019.md"]  # title substrings
    assert titled(index, root, "to") == ["todo.md"]  # short words: the scan path
    assert search(index, root, "cover", subtree="reports") == ["reports/tps-2019.md"]
    assert search(index, root, "stapler", subtree="reports") == []


def test_title_matches_rank_above_body_matches(index: NoteIndex, root: WorkspaceRoot, folder: Path) -> None:
    (folder / "z-budget-talk.md").write_text("# Budget review\n")
    (folder / "a-mentions.md").write_text("# Other\n\nThe budget was discussed. budget budget.\n")
    found = [n.id for n in index.search(WS, root, ("",), ["budget"], after=None, limit=10)]
    assert set(found[:2]) == {"reports/budget.md", "z-budget-talk.md"}
    assert found[-1] == "a-mentions.md"


def test_out_of_band_create_delete_rename(index: NoteIndex, root: WorkspaceRoot, folder: Path) -> None:
    assert search(index, root, "cover") == ["reports/tps-2019.md"]
    (folder / "new" / "deep").mkdir(parents=True)
    (folder / "new" / "deep" / "idea.md").write_text("# Fresh idea\n\ncover letters\n")
    assert search(index, root, "cover") == ["new/deep/idea.md", "reports/tps-2019.md"]
    (folder / "reports" / "tps-2019.md").rename(folder / "reports" / "tps-old.md")
    assert search(index, root, "cover") == ["new/deep/idea.md", "reports/tps-old.md"]
    (folder / "reports" / "tps-old.md").rename(folder / "archive.md")
    assert titled(index, root, "tps") == ["archive.md"]
    (folder / "new").rename(folder / "renamed")
    assert search(index, root, "cover") == ["archive.md", "renamed/deep/idea.md"]
    (folder / "renamed" / "deep" / "idea.md").unlink()
    (folder / "archive.md").unlink()
    assert search(index, root, "cover") == []
    assert listed(index, root) == ["reports/budget.md", "todo.md"]


def test_a_name_removed_and_written_again_between_calls_shows_the_new_note(
    index: NoteIndex, root: WorkspaceRoot, folder: Path
) -> None:
    """A removal and a creation of one name seen in one read: the name is looked at on disk."""
    assert titled(index, root, "report") == ["reports/tps-2019.md"]
    (folder / "reports" / "tps-2019.md").unlink()
    (folder / "reports" / "tps-2019.md").write_text("# Quarterly plan\n")
    assert titled(index, root, "report") == []
    assert titled(index, root, "quarterly") == ["reports/tps-2019.md"]
    (folder / "todo.md").rename(folder / "later.md")
    (folder / "reports" / "budget.md").rename(folder / "todo.md")  # onto the name just moved away
    assert listed(index, root) == ["later.md", "reports/tps-2019.md", "todo.md"]
    assert titled(index, root, "budget") == ["todo.md"]
    # a name the index has never had: created, removed and created again
    (folder / "fresh.md").write_text("# Fresh start\n")
    (folder / "fresh.md").unlink()
    (folder / "fresh.md").write_text("# Fresh start\n")
    assert titled(index, root, "fresh") == ["fresh.md"]


def test_a_note_a_tool_moved_away_is_dropped_and_a_new_file_there_is_seen(
    index: NoteIndex, root: WorkspaceRoot, folder: Path
) -> None:
    """`note_trashed` (a trash move's write-through) drops the row at once; the name's later life is
    the watcher's or the directory stamps' to see."""
    assert titled(index, root, "report") == ["reports/tps-2019.md"]
    (folder / "reports" / "tps-2019.md").rename(folder / "moved-away.txt")
    index.note_trashed(WS, "reports/tps-2019.md")
    assert titled(index, root, "report") == []
    assert listed(index, root) == ["reports/budget.md", "todo.md"]
    (folder / "reports" / "tps-2019.md").write_text("# TPS report, second draft\n")
    assert titled(index, root, "draft") == ["reports/tps-2019.md"]


def test_hidden_foreign_and_symlinked_files_are_not_notes(
    index: NoteIndex, root: WorkspaceRoot, folder: Path, tmp_path: Path
) -> None:
    listed(index, root)
    (tmp_path / "outside.md").write_text("# Secret cover\n")
    (folder / "link.md").symlink_to(tmp_path / "outside.md")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "h.md").write_text("# cover\n")
    (folder / "notes.txt").write_text("cover\n")
    assert search(index, root, "cover") == ["reports/tps-2019.md"]


def test_edit_in_place_is_seen(index: NoteIndex, root: WorkspaceRoot, folder: Path, mode: str) -> None:
    assert titled(index, root, "numbers") == []
    (folder / "reports" / "q3.md").write_text("# Numbers of Q3\n")
    assert titled(index, root, "numbers") == ["reports/q3.md"]
    with (folder / "reports" / "q3.md").open("r+") as f:  # same inode, same directory mtime
        f.write("# Forecast  \n")
    # A candidate is re-checked on disk: the old title is never offered for the new content.
    assert titled(index, root, "numbers") == []
    assert titled(index, root, "forecast") == ["reports/q3.md"]
    with (folder / "todo.md").open("a") as f:
        f.write("- call the printer people\n")
    if mode == "stamps":  # no event: found at the next full verification
        index._verify_interval = 0
    assert search(index, root, "printer") == ["todo.md"]


def test_a_change_nothing_detected_still_never_yields_a_gone_note(
    index: NoteIndex, root: WorkspaceRoot, folder: Path
) -> None:
    """Defeat the directory stamp (restore the mtime) and, with inotify, drain nothing: the row
    still exists, yet the query re-checks it and drops it (Rule 2)."""
    assert search(index, root, "cover") == ["reports/tps-2019.md"]
    reports = folder / "reports"
    before = reports.stat()
    (reports / "tps-2019.md").unlink()
    os.utime(reports, ns=(before.st_atime_ns, before.st_mtime_ns))
    live = index._live[WS]
    if live.watcher is not None:
        live.watcher.inotify.read(timeout=0)  # the events are lost
    assert search(index, root, "cover") == []
    assert titled(index, root, "tps") == []


def test_pages_are_stable_and_complete(index: NoteIndex, root: WorkspaceRoot, folder: Path) -> None:
    for i in range(45):
        (folder / f"alpha-{i:02}.md").write_text(f"# Alpha {i}\n\n" + "alpha " * (i % 7 + 1))
    everything = [(n.id, n.score) for n in index.search(WS, root, ("",), ["alpha"], after=None, limit=100)]
    assert len(everything) == 45
    assert [s for _, s in everything] == sorted(s for _, s in everything)
    pages: list[tuple[str, float]] = []
    after = None
    while True:
        page = index.search(WS, root, ("",), ["alpha"], after=after, limit=10)
        pages += [(n.id, n.score) for n in page]
        if len(page) < 10:
            break
        after = (page[-1].score, page[-1].id)
    assert pages == everything

    ids: list[str] = []
    cursor = None
    while True:
        page_ids = [n.id for n in index.page(WS, root, ("",), after=cursor, limit=7)]
        if not page_ids:
            break
        ids += page_ids
        cursor = page_ids[-1]
        (folder / "aaa-added-before-the-cursor.md").write_text("# late\n")  # behind us: not repeated
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)


def test_index_survives_restarts_and_sees_what_changed_meanwhile(
    tmp_path: Path, root: WorkspaceRoot, folder: Path, mode: str
) -> None:
    first = NoteIndex(tmp_path / "index.sqlite3", watch=mode == "inotify")
    assert search(first, root, "numbers") == ["reports/budget.md"]
    first.close()
    time.sleep(0.01)
    (folder / "reports" / "budget.md").write_text("# Budget\n\nFigures.\n")  # same size, edited while down
    (folder / "todo.md").unlink()
    second = NoteIndex(tmp_path / "index.sqlite3", watch=mode == "inotify")
    try:
        assert search(second, root, "numbers") == []
        assert search(second, root, "figures") == ["reports/budget.md"]
        assert listed(second, root) == ["reports/budget.md", "reports/tps-2019.md"]
    finally:
        second.close()


def test_a_replaced_workspace_folder_is_reindexed(tmp_path: Path, index: NoteIndex, folder: Path) -> None:
    with WorkspaceRoot.open(str(folder)) as root:
        assert listed(index, root) == ["reports/budget.md", "reports/tps-2019.md", "todo.md"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "only.md").write_text("# Only\n")
    with WorkspaceRoot.open(str(other)) as root:
        assert listed(index, root) == ["only.md"]


def full_text_rows(index: NoteIndex) -> tuple[int, int, int]:
    """(notes, rows of notes_text, rows of notes_titles) in the index database."""
    db = index._db
    return tuple(
        db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("notes", "notes_text", "notes_titles")
    )  # type: ignore[return-value]


def full_text_segments(index: NoteIndex) -> list[tuple[object, ...]]:
    """FTS5's own records (segments, structure): any full-text write changes them."""
    db = index._db
    return [r for t in ("notes_text_data", "notes_titles_data") for r in db.execute(f"SELECT * FROM {t}")]


def segment_counts(index: NoteIndex) -> tuple[int, int]:
    """How many segments each full-text table (notes_text, notes_titles) is made of."""
    return tuple(
        index._db.execute(f"SELECT count(DISTINCT segid) FROM {t}_idx").fetchone()[0]
        for t in ("notes_text", "notes_titles")
    )  # type: ignore[return-value]


def test_a_pass_that_reads_many_notes_leaves_each_full_text_table_one_segment(
    index: NoteIndex, root: WorkspaceRoot, folder: Path
) -> None:
    """Rule 9: a lookup probes every segment for every term; a pass of `BATCH` notes or more ends
    merged, and a small write after it adds a segment of its own."""
    (folder / "many").mkdir()
    for i in range(BATCH):
        words = " ".join(f"w{(i * 7 + k) % 997:03}x{k}" for k in range(40))
        (folder / f"many/m{i:04}.md").write_text(f"# Many {i:04} {words[:60]}\n\n{words}\n")
    assert titled(index, root, "many 0042") == ["many/m0042.md"]
    assert segment_counts(index) == (1, 1)
    (folder / "one-more.md").write_text("# One more\n\nnarwhal\n")
    assert search(index, root, "narwhal") == ["one-more.md"]
    assert segment_counts(index) == (2, 2)


def test_removed_notes_leave_the_full_text_in_batches(
    index: NoteIndex, root: WorkspaceRoot, folder: Path
) -> None:
    """Rule 7: a removed note is never found again at once; its full-text rows go in batches."""
    extra = STALE_BATCH + 5
    for i in range(extra):
        (folder / f"gone-{i:03}.md").write_text(f"# Gone {i}\n\nephemeral\n")
    assert len(search(index, root, "ephemeral")) == extra
    assert full_text_rows(index) == (3 + extra, 3 + extra, 3 + extra)
    for i in range(STALE_BATCH - 1):
        (folder / f"gone-{i:03}.md").unlink()
    assert len(search(index, root, "ephemeral")) == 6
    assert titled(index, root, "gone") == [f"gone-{i:03}.md" for i in range(STALE_BATCH - 1, extra)]
    assert full_text_rows(index) == (9, 3 + extra, 3 + extra)  # not purged yet
    (folder / f"gone-{STALE_BATCH - 1:03}.md").unlink()
    assert len(search(index, root, "ephemeral")) == 5
    assert full_text_rows(index) == (8, 8, 8)  # the batch went in one transaction


def test_a_rowid_handed_out_again_carries_only_the_new_note(
    index: NoteIndex, root: WorkspaceRoot, folder: Path
) -> None:
    """SQLite gives a new row the highest rowid + 1, so removing the last row frees its rowid."""
    assert listed(index, root) == ["reports/budget.md", "reports/tps-2019.md", "todo.md"]
    rowid, last, title = index._db.execute(
        "SELECT rowid, id, title FROM notes ORDER BY rowid DESC LIMIT 1"
    ).fetchone()
    (folder / last).unlink()
    assert titled(index, root, title) == []
    (folder / "zz-next.md").write_text("# Next\n\nnarwhal\n")
    assert search(index, root, "narwhal") == ["zz-next.md"]
    assert index._db.execute("SELECT rowid FROM notes WHERE id = 'zz-next.md'").fetchone() == (rowid,)
    assert titled(index, root, title) == []  # the old rows under that rowid were replaced
    assert titled(index, root, "next") == ["zz-next.md"]
    index._stale = STALE_BATCH  # purge with the next removal: the live rowid must keep its rows
    (folder / ("todo.md" if last != "todo.md" else "reports/tps-2019.md")).unlink()
    assert search(index, root, "narwhal") == ["zz-next.md"]
    assert titled(index, root, "next") == ["zz-next.md"]
    assert full_text_rows(index) == (2, 2, 2)


def test_an_unchanged_note_read_again_only_settles(
    index: NoteIndex, root: WorkspaceRoot, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule 4's second look at a racily clean note rewrites nothing when the note is unchanged."""
    monkeypatch.setattr("notewarden.notes.index_refresh.RACY_WINDOW_NS", 10**15)  # everything is racy
    assert titled(index, root, "budget") == ["reports/budget.md"]
    assert index._db.execute("SELECT count(*) FROM notes WHERE settled = 0").fetchone() == (3,)
    monkeypatch.setattr("notewarden.notes.index_refresh.RACY_WINDOW_NS", 0)
    segments = full_text_segments(index)
    assert titled(index, root, "budget") == ["reports/budget.md"]
    assert index._db.execute("SELECT settled FROM notes WHERE id = 'reports/budget.md'").fetchone() == (1,)
    assert full_text_segments(index) == segments  # settled in place: no full-text rewrite
    (folder / "reports" / "budget.md").write_text("# Budget plan\n\nFigures.\n")  # changed: read in full
    assert titled(index, root, "budget") == ["reports/budget.md"]  # re-checked on disk (Rule 2)
    assert titled(index, root, "plan") == ["reports/budget.md"]
    assert search(index, root, "figures") == ["reports/budget.md"]
    assert search(index, root, "numbers") == []


def test_racy_notes_settle_together_once_their_window_has_passed(
    index: NoteIndex, root: WorkspaceRoot, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule 4: the next call after the window re-reads every unsettled note in one pass."""
    window = 0.3
    monkeypatch.setattr("notewarden.notes.index_refresh.RACY_WINDOW_NS", int(window * 1e9))
    for i in range(20):
        (folder / f"fresh-{i:02}.md").write_text(f"# Fresh {i}\n\nimported\n")
    assert len(search(index, root, "imported")) == 20
    unsettled = "SELECT count(*) FROM notes WHERE settled = 0"
    assert index._db.execute(unsettled).fetchone()[0] >= 20
    (folder / "fresh-07.md").write_text("# Fresh 7\n\nchanged\n")  # changed while racy
    assert titled(index, root, "budget") == ["reports/budget.md"]
    segments = full_text_segments(index)
    time.sleep(window + 0.05)
    assert titled(index, root, "budget") == ["reports/budget.md"]  # any call: one note returned
    assert index._db.execute(unsettled).fetchone() == (0,)
    assert search(index, root, "changed") == ["fresh-07.md"]
    assert len(search(index, root, "imported")) == 19
    assert full_text_segments(index) == segments  # settling rewrote no full text


def test_an_index_of_schema_2_is_rebuilt_with_names_and_skipped_entries(
    tmp_path: Path, root: WorkspaceRoot, folder: Path, mode: str
) -> None:
    """Version 3 stores aliases and skipped entries; an older index (a cache) is emptied and rebuilt."""
    path = tmp_path / "old-index.sqlite3"
    with closing(sqlite3.connect(path, isolation_level=None)) as old:
        assert apply_migrations(old, "notes_index", INDEX_MIGRATIONS[:2]) == 2
        old.execute(
            "INSERT INTO notes (workspace, id, dir, title, dev, ino, size, mtime_ns, settled) "
            "VALUES (?, 'gone.md', '', 'Gone', 0, 0, 0, 0, 1)",
            (WS,),
        )
    (folder / "pets.md").write_text("---\naliases: [Canine friend]\n---\n# Pets\n")
    (folder / "elsewhere").symlink_to(tmp_path)
    index = NoteIndex(path, watch=mode == "inotify")
    try:
        assert listed(index, root) == ["pets.md", "reports/budget.md", "reports/tps-2019.md", "todo.md"]
        assert [(n.id, n.aliases) for n in index.titled(WS, root, ("",), match_words("canine"))] == [
            ("pets.md", ("Canine friend",))
        ]
        assert titled(index, root, "tps-2019") == ["reports/tps-2019.md"]  # by its file name
        assert index.skipped(WS, ("",)) == [("elsewhere", SKIPPED_SYMLINK)]
    finally:
        index.close()


def test_filters_that_keep_many_notes_walk_the_time_index_and_sort_nothing(tmp_path: Path) -> None:
    """Rule 3 of `notes.index`, on the files index as `test_sql_plans` checks it on the SQL stores: a
    filters-only search whose filters keep more than `FILTER_FIRST_CAP` notes reads them newest first
    from `notes_by_mtime` (no sort of the notes that pass), on the first page and the next; a tag
    on few notes is read through the tag index and never walks every note."""
    from notewarden.notes.store import FILTER_FIRST_CAP, NoteFilter, PropertyTest

    notes = tmp_path / "many"
    notes.mkdir()
    count = FILTER_FIRST_CAP + 100
    for i in range(count):
        tags = "[area, project/atlas]" if i % 10 == 0 else "[area]"
        (notes / f"n{i:04}.md").write_text(f"---\ntags: {tags}\nstatus: done\n---\n# N {i}\n")
        os.utime(notes / f"n{i:04}.md", (1_700_000_000 + i, 1_700_000_000 + i))
    index = NoteIndex(tmp_path / "many.sqlite3", watch=False, verify_interval=3600)
    seen: list[str] = []
    with WorkspaceRoot.open(str(notes)) as root, closing(index):
        index._db.set_trace_callback(seen.append)
        dense = (
            NoteFilter(tags_any=("area",)),
            NoteFilter(tags_all=("area",)),
            NoteFilter(properties=(PropertyTest("status", "equals", "done"),)),
            NoteFilter(modified_after_ns=0),
        )
        for filters in (*dense, NoteFilter(tags_any=("project/atlas",))):
            seen.clear()
            first = index.search(WS, root, ("",), [], after=None, limit=10, filters=filters)
            step = 1 if filters in dense else 10  # newest first: every note, or every tenth
            newest = [f"n{i:04}.md" for i in range(count - 1, -1, -1) if i % step == 0][:20]
            assert [n.id for n in first] == newest[:10], filters
            later = index.search(
                WS, root, ("",), [], after=(first[-1].score, first[-1].id), limit=10, filters=filters
            )
            assert [n.id for n in later] == newest[10:], filters
            walked = [sql for sql in seen if "ORDER BY n.mtime_ns DESC" in sql]
            assert len(walked) == 2, seen
            for sql in walked:
                plan = " | ".join(str(row[3]) for row in index._db.execute("EXPLAIN QUERY PLAN " + sql))
                assert "TEMP B-TREE" not in plan or filters not in dense, plan
                if filters in dense:
                    assert "notes_by_mtime" in plan, plan
                else:  # 110 notes: through the tag index, then sorted
                    assert "SCAN n " not in plan + " " and "note_tags" in plan, plan
            counted = [sql for sql in seen if "SELECT count(*) FROM (SELECT 1 FROM note_tags g" in sql]
            assert len(counted) == (2 if filters.tags_any or filters.tags_all else 0), seen
            for sql in counted:
                # a tag's notes are a range of the tag index, whatever other tags the workspace has
                # (as `tag = ? OR (tag >= ? AND tag < ?)` it read every tag row: all the 'area' rows)
                plan = " | ".join(str(row[3]) for row in index._db.execute("EXPLAIN QUERY PLAN " + sql))
                assert "note_tags_by_tag (workspace=? AND tag>? AND tag<?)" in plan, plan


def attachment_rows(index: NoteIndex, root: WorkspaceRoot) -> dict[str, int]:
    """The attachments the index holds after a call (`index_refresh` Rule 11), with their sizes."""
    index.attachment_files(WS, root, ("",))
    rows = index._db.execute("SELECT path, size FROM attachments WHERE workspace = ? ORDER BY path", (WS,))
    return dict(rows.fetchall())


def test_attachments_appear_change_move_and_go_with_the_files(
    index: NoteIndex, root: WorkspaceRoot, folder: Path, tmp_path: Path, mode: str
) -> None:
    (folder / "reports" / "chart.png").write_bytes(b"12345")
    (folder / "reports" / "data.CSV").write_bytes(b"a,b\n")
    (folder / ".obsidian").mkdir()
    (folder / ".obsidian" / "icon.png").write_bytes(b"hidden")
    (folder / "notes.txt").write_text("not an attachment\n")
    (tmp_path / "outside.png").write_bytes(b"outside")
    (folder / "link.png").symlink_to(tmp_path / "outside.png")
    assert attachment_rows(index, root) == {"reports/chart.png": 5, "reports/data.CSV": 4}
    files = index.attachment_files(WS, root, ("",))
    assert files.by_name("chart.png") == ["reports/chart.png"] and files.by_path("reports/data.csv")
    assert index.attachment_files(WS, root, ("other",)).by_name("chart.png") == []  # out of reach
    assert ("link.png", SKIPPED_SYMLINK) in index.skipped(WS, ("",))
    with (folder / "reports" / "chart.png").open("ab") as f:  # same inode, same directory mtime
        f.write(b"67890")
    if mode == "stamps":  # no event: found at the next full verification
        index._verify_interval = 0
    assert attachment_rows(index, root)["reports/chart.png"] == 10
    (folder / "archive" / "2019").mkdir(parents=True)
    (folder / "reports" / "chart.png").rename(folder / "archive" / "2019" / "Chart old.png")
    assert attachment_rows(index, root) == {"archive/2019/Chart old.png": 10, "reports/data.CSV": 4}
    assert index.attachment_files(WS, root, ("",)).by_name("chart old.png") == ["archive/2019/Chart old.png"]
    (folder / "archive").rename(folder / "kept")
    assert attachment_rows(index, root) == {"kept/2019/Chart old.png": 10, "reports/data.CSV": 4}
    (folder / "reports" / "data.CSV").unlink()
    for gone in (folder / "kept" / "2019").iterdir():
        gone.unlink()
    (folder / "kept" / "2019").rmdir()
    assert attachment_rows(index, root) == {}


def test_a_process_first_call_fills_the_attachments_of_an_index_built_before_them(
    tmp_path: Path, root: WorkspaceRoot, folder: Path, mode: str
) -> None:
    """Schema step 6 empties nothing (Rule 11): an index whose table is empty (as one built before
    the step) is filled by the next process's first call, which lists every directory."""
    (folder / "reports" / "chart.png").write_bytes(b"12345")
    first = NoteIndex(tmp_path / "index.sqlite3", watch=mode == "inotify")
    assert attachment_rows(first, root) == {"reports/chart.png": 5}
    first._db.execute("DELETE FROM attachments")
    first.close()
    second = NoteIndex(tmp_path / "index.sqlite3", watch=mode == "inotify")
    try:
        assert attachment_rows(second, root) == {"reports/chart.png": 5}
    finally:
        second.close()
