"""The SQL note store: notes are rows in the ledger's database (SQLite or PostgreSQL).

Because the notes share the ledger's database, a delete is one transaction:

    BEGIN (SQLite: IMMEDIATE)
      claim the confirmation id                                   (ledger)
      move the row whose workspace, path, row id and version match into notes_trash
    COMMIT

A crash anywhere before COMMIT leaves the note in `notes` and the confirmation unused; after
it, both changes. There is nothing to recover.

Rule 1 (the note model is the files store's): a note belongs to a workspace URI, its id is a
relative path under `fsroot.split_relative`'s rules (checked on write), and its title is found
in its body by the same rule (front matter, first heading, file stem). A row's identity fills
`FileIdentity`'s four integers:

    dev       the row's version: a trigger bumps it on every UPDATE, whoever the writer is
    ino       the row id, never reused: a note deleted and created again is another note
    mtime_ns  when the row last changed (shown to the user; milliseconds on SQLite)
    size      the body's length in bytes

so a note edited or replaced since round 1 fails the move's match and nothing is deleted.

Rule 2 (the database does the work): listing, title matching, full-text search, ranking,
snippets and pagination are SQL over indexes (`notes.sql_schema`), never a read of every note:
a query costs O(rows it returns) plus the index lookups. Keyset pagination: a page starts after
the (rank, id) or id of the previous page's last row. Every statement is in `_SQL`, by dialect;
tests/storage/test_sql_plans.py runs EXPLAIN on each at 10,000 notes.

A content write (`rewrite_note`) saves the replaced body as a `note_history` row (`notes.history`)
in the transaction that updates the note, guarded by the row's version so that a writer outside
notewarden in between makes it run the rewrite again on that writer's body.

Rule 3 (rows other programs wrote): titles and search words are derived when notewarden writes
a row (`notes.derived` Rule 1). Before each query of a workspace the store looks up that
workspace's rows whose derived columns are behind their version (a partial index holds only
those, so the look-up costs nothing when there are none), derives them in batches, and then
queries. A row the query returns that fell behind meanwhile sends the query round again. A
row whose id breaks the path rules is derived with no title and is never listed.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from notewarden.confirm.state import Candidate
from notewarden.ledger import Ledger, LedgerTxn, SqlSession
from notewarden.notes.derived import (
    Derived,
    derive,
    gram_token,
    json_escaped,
    search_query,
    search_vector,
    title_patterns,
)
from notewarden.notes.history import Change, HistoryEntry, HistoryLog, Retention
from notewarden.notes.markdown import aliases_of
from notewarden.notes.model import Note
from notewarden.notes.sql_schema import SQL_STORE_SCHEMA
from notewarden.notes.store import (
    MERGE_ATTEMPTS,
    NoteChange,
    NoteContent,
    NoteFilter,
    NoteLinks,
    NotSupportedOnStore,
    ProgressSink,
    Rewrite,
    Rewritten,
    SearchHit,
    SearchMatch,
    SkippedEntry,
    TagCount,
    TrashedNote,
    VersionConflict,
)
from notewarden.scope.fsroot import (
    FileIdentity,
    FsError,
    IdentityMismatch,
    NoteExists,
    NoteMissing,
    PathRejected,
    WorkspaceRoot,
    split_relative,
)
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import FileUri

__all__ = ["SQL_STORE_SCHEMA", "SqlNoteStore", "derived_values"]

logger = logging.getLogger(__name__)

DERIVE_BATCH = 500
"""Rows re-derived per transaction (Rule 3)."""
SNIPPET_SCAN_CHARS = 100_000
"""PostgreSQL builds a hit's snippet from the start of its body: a match further in is found, but
the snippet shows the beginning."""
_ATTEMPTS = 3

# The columns every listing returns, in `_note`'s order, and the statements, by dialect.
_COLUMNS = {
    "sqlite": "n.path AS path, n.title AS title, n.id AS id, n.version AS version, n.modified_ns AS modified_ns, "
    "length(CAST(n.body AS BLOB)) AS size, n.derived_version IS n.version AS fresh",
    "postgres": "n.path AS path, n.title AS title, n.id AS id, n.version AS version, "
    "n.modified_ns AS modified_ns, octet_length(n.body) AS size, NOT n.stale AS fresh",
}
_PAGE_COLUMNS = (
    "page.path, page.title, page.id, page.version, page.modified_ns, page.size, page.fresh, page.score"
)
_STALE = {
    "sqlite": "n.derived_version IS NOT n.version",
    "postgres": "n.stale",
}
_DERIVED_COLUMNS = {
    "sqlite": ("title", "title_keys", "title_grams", "front_matter", "tags"),
    "postgres": ("title", "title_keys", "title_grams", "search", "front_matter", "tags"),
}
_CASTS = {"postgres": {"search": "?::tsvector", "front_matter": "?::jsonb"}, "sqlite": {}}
_PG_RANK_WEIGHTS = "ARRAY[0.0, 0.1, 0.2, 1.0]::float4[]"  # D, C body, B path, A title: 1 : 2 : 10 as in files
_PG_HEADLINE = "'StartSel=**, StopSel=**, MaxWords=24, MinWords=10, ShortWord=0, MaxFragments=1'"


def _sql(dialect: str) -> dict[str, str]:
    columns, stale = _COLUMNS[dialect], _STALE[dialect]
    size = "length(CAST(body AS BLOB))" if dialect == "sqlite" else "octet_length(body)"
    derived = _DERIVED_COLUMNS[dialect]
    casts = _CASTS[dialect]
    values = ", ".join(casts.get(c, "?") for c in derived)
    assignments = ", ".join(f"{c} = {casts.get(c, '?')}" for c in derived)
    return {
        "stale_probe": f"SELECT n.id FROM notes n WHERE n.workspace = ? AND {stale} LIMIT 1",
        "stale_batch": f"SELECT n.id, n.version, n.path, n.body FROM notes n WHERE n.workspace = ? AND {stale} "
        "ORDER BY n.id LIMIT ?",
        "derive": f"UPDATE notes AS n SET {assignments}, derived_version = version WHERE id = ? AND version = ? "
        f"AND {stale}",
        "page": f"SELECT {columns} FROM notes n WHERE n.workspace = ? AND n.title IS NOT NULL AND n.path > ?"
        "{within} ORDER BY n.path LIMIT ?",
        "read": f"SELECT n.body, {columns} FROM notes n WHERE n.workspace = ? AND n.path = ?",
        "exists": "SELECT 1 FROM notes WHERE workspace = ? AND path = ?",
        "insert": f"INSERT INTO notes (workspace, path, body, modified_ns, {', '.join(derived)}, derived_version) "
        f"VALUES (?, ?, ?, ?, {values}, 1) ON CONFLICT (workspace, path) DO NOTHING "
        "RETURNING id, version, modified_ns",
        "update": f"UPDATE notes SET body = ?, {assignments}, derived_version = version + 1 "
        "WHERE workspace = ? AND path = ? AND version = ? RETURNING id",
        "move": f"UPDATE notes SET path = ?, {assignments}, derived_version = version + 1 "
        "WHERE workspace = ? AND path = ? AND version = ? RETURNING id",
        "list_trash": "SELECT trash_id, path, title, deleted_at, note_row, version, modified_ns, "
        f"{size} FROM notes_trash WHERE workspace = ? ORDER BY deleted_at DESC, trash_id",
        "trashed": "SELECT path, body FROM notes_trash WHERE trash_id = ? AND workspace = ?",
        "untrash": "DELETE FROM notes_trash WHERE trash_id = ? AND workspace = ?",
        **(_SQLITE_QUERIES if dialect == "sqlite" else _POSTGRES_QUERIES),
    }


_SQLITE_QUERIES = {
    "titled_trigram": f"SELECT {_COLUMNS['sqlite']}, n.front_matter FROM notes_title_fts t CROSS JOIN notes n "
    "ON n.id = t.rowid WHERE notes_title_fts MATCH ? AND n.workspace = ? AND n.title IS NOT NULL{within} "
    "AND EXISTS (SELECT 1 FROM json_each(n.title_keys) k WHERE {contains}) ORDER BY n.path",
    "titled_grams": f"SELECT {_COLUMNS['sqlite']}, n.front_matter FROM notes_gram_fts g CROSS JOIN notes n "
    "ON n.id = g.rowid WHERE notes_gram_fts MATCH ? AND n.workspace = ? AND n.title IS NOT NULL{within} "
    "AND EXISTS (SELECT 1 FROM json_each(n.title_keys) k WHERE {contains}) ORDER BY n.path",
    # CROSS JOIN: the full-text table drives the join (as in notes.index Rule 5)
    "search": "SELECT * FROM (SELECT "
    f"{_COLUMNS['sqlite']}, bm25(notes_fts, 10.0, 2.0, 1.0) AS score, "
    "snippet(notes_fts, 2, '**', '**', '…', 16) FROM notes_fts CROSS JOIN notes n ON n.id = notes_fts.rowid "
    "WHERE notes_fts MATCH ? AND n.workspace = ? AND n.title IS NOT NULL{within}) hit "
    "WHERE (hit.score, hit.path) > (?, ?) ORDER BY hit.score, hit.path LIMIT ?",
    "trash_move": "INSERT INTO notes_trash (trash_id, workspace, path, title, body, note_row, version, "
    "modified_ns, principal, confirmation_id, deleted_at) SELECT ?, workspace, path, ?, body, id, version, "
    "modified_ns, ?, ?, ? FROM notes WHERE workspace = ? AND path = ? AND id = ? AND version = ? "
    "RETURNING modified_ns, length(CAST(body AS BLOB))",
    "trash_move_done": "DELETE FROM notes WHERE id = ?",
}

_POSTGRES_QUERIES = {
    "titled_trigram": f"SELECT {_COLUMNS['postgres']}, n.front_matter FROM notes n WHERE n.workspace = ? "
    "AND n.title IS NOT NULL{within}{likes} AND EXISTS (SELECT 1 FROM "
    "json_array_elements_text(n.title_keys::json) k WHERE k LIKE ALL (?::text[])) ORDER BY n.path",
    "titled_grams": f"SELECT {_COLUMNS['postgres']}, n.front_matter FROM notes n WHERE n.workspace = ? "
    "AND n.title IS NOT NULL{within} AND n.title_grams @> ?::text[] AND EXISTS (SELECT 1 FROM "
    "json_array_elements_text(n.title_keys::json) k WHERE k LIKE ALL (?::text[])) ORDER BY n.path",
    "search": f"SELECT {_PAGE_COLUMNS}, ts_headline('simple', left(n.body, {SNIPPET_SCAN_CHARS}), page.query, "
    f"{_PG_HEADLINE}) FROM (SELECT * FROM (SELECT {_COLUMNS['postgres']}, "
    f"-ts_rank({_PG_RANK_WEIGHTS}, n.search, q.query)::float8 AS score, q.query FROM notes n, "
    "(SELECT ?::tsquery AS query) q WHERE n.search @@ q.query AND n.workspace = ? AND n.title IS NOT NULL"
    "{within}) hit WHERE (hit.score, hit.path) > (?, ?) ORDER BY hit.score, hit.path LIMIT ?) page "
    "JOIN notes n ON n.id = page.id ORDER BY page.score, page.path",
    "trash_move": "WITH moved AS (DELETE FROM notes WHERE workspace = ? AND path = ? AND id = ? AND version = ? "
    "RETURNING workspace, path, body, id, version, modified_ns) INSERT INTO notes_trash (trash_id, workspace, "
    "path, title, body, note_row, version, modified_ns, principal, confirmation_id, deleted_at) SELECT ?, "
    "workspace, path, ?, body, id, version, modified_ns, ?, ?, ? FROM moved "
    "RETURNING modified_ns, octet_length(body)",
}

_STATEMENTS = {dialect: _sql(dialect) for dialect in ("sqlite", "postgres")}
_SETTLE = {
    "postgres": [
        *(
            f"SELECT gin_clean_pending_list('{index}'::regclass)"
            for index in (
                "notes_search",
                "notes_title_trigrams",
                "notes_title_grams",
                "notes_by_tag",
                "notes_front_matter",
            )
        ),
        "ANALYZE notes",
    ],
    "sqlite": [
        *(
            f"INSERT INTO {fts} ({fts}) VALUES ('optimize')"
            for fts in ("notes_fts", "notes_title_fts", "notes_gram_fts")
        ),
        "ANALYZE notes",
    ],
}


def derived_values(dialect: str, path: str, body: str, facts: Derived | None = None) -> list[object]:
    """The derived columns of a row (`_DERIVED_COLUMNS` order), as the dialect stores them; a path
    that breaks the id rules gets no title (Rule 3)."""
    facts = facts or derive(path, body)
    try:
        split_relative(path)
        title: str | None = facts.title
    except PathRejected:
        title = None
    if dialect == "sqlite":
        return [title, facts.keys_json, facts.grams_text, facts.front_matter_json, facts.tags_json]
    return [
        title,
        facts.keys_json,
        facts.grams,
        search_vector(facts.title, path, body),
        facts.front_matter_json,
        list(facts.tags),
    ]


def _new_trash_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"


def _identity(row_id: int, version: int, modified_ns: int, size: int) -> FileIdentity:
    return FileIdentity(dev=version, ino=row_id, mtime_ns=modified_ns, size=size)


def _inside(scope: WorkspaceScope, note_id: str) -> str:
    """A valid note id inside the scope, or `PathRejected` saying why not."""
    split_relative(note_id)
    if not scope.contains(note_id):
        raise PathRejected(f"{note_id!r} is outside {scope.uri}; name a note inside it")
    return note_id


def _text(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FsError("a note kept in the database must be UTF-8 text") from None
    if "\x00" in text:
        raise FsError("a note kept in the database cannot contain NUL characters")
    return text


def _within(subtree: str) -> tuple[str, tuple[str, ...]]:
    """SQL restricting `n.path` to the folder `subtree` ("" is the whole workspace)."""
    if not subtree:
        return "", ()
    return " AND n.path >= ? AND n.path < ?", (subtree + "/", subtree + "0")  # '0' follows '/'


def _json_object(value: Any) -> dict[str, Any] | None:
    """A `front_matter` column as a mapping: JSON text on SQLite, decoded already on PostgreSQL."""
    decoded = json.loads(value) if isinstance(value, str) else value
    return decoded if isinstance(decoded, dict) else None


def _note(row: Sequence[Any]) -> Note:
    path, title, row_id, version, modified_ns, size = row[:6]
    return Note(id=path, title=title, identity=_identity(row_id, version, modified_ns, size))


class _Overtaken(Exception):
    """The row changed between this transaction's read and its update."""


def _fts_phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _like_contains(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class SqlNoteStore:
    """Notes as rows next to the ledger's tables, so a delete commits with its claim."""

    def __init__(self, ledger: Ledger, *, retention: Retention | None = None) -> None:
        self._ledger = ledger
        self.history = HistoryLog(retention or Retention())

    def close(self) -> None:
        """Nothing of its own: the ledger owns the connections."""

    # --- reading (Rules 2 and 3) -------------------------------------------------------------

    def _query(
        self,
        scope: WorkspaceScope,
        run: Callable[[SqlSession, dict[str, str]], list[tuple[Any, ...]]],
        progress: ProgressSink | None = None,
    ) -> list[tuple[Any, ...]]:
        """`run`'s rows once every row of the workspace is derived (Rule 3); a row returned stale
        (written meanwhile by another program) sends the query round again."""
        workspace = str(scope.workspace)
        for attempt in range(1, _ATTEMPTS + 1):
            final = attempt == _ATTEMPTS
            with self._ledger.snapshot() as db:
                sql = _STATEMENTS[db.dialect]
                if final or not db.execute(sql["stale_probe"], (workspace,)):
                    rows = run(db, sql)
                    if final or all(row[6] for row in rows):
                        return rows
            self._derive_stale(workspace, progress)
        raise AssertionError("unreachable: the final attempt returns")

    def _derive_stale(self, workspace: str, progress: ProgressSink | None) -> None:
        done = 0
        while True:
            with self._ledger.critical_section() as txn:
                sql = _STATEMENTS[txn.dialect]
                batch = txn.execute(sql["stale_batch"], (workspace, DERIVE_BATCH))
                for row_id, version, path, body in batch:
                    txn.execute(sql["derive"], (*derived_values(txn.dialect, path, body), row_id, version))
            done += len(batch)
            if done and progress is not None:
                progress(done, None, f"indexed {done} notes written by another program")
            if len(batch) < DERIVE_BATCH:
                if done:
                    logger.info(
                        "derived titles and words of rows written by another program", extra={"rows": done}
                    )
                return

    def list_notes(self, scope: WorkspaceScope) -> list[Note]:
        return self.list_page(scope, after=None, limit=None)

    def list_page(
        self,
        scope: WorkspaceScope,
        *,
        after: str | None,
        limit: int | None,
        progress: ProgressSink | None = None,
    ) -> list[Note]:
        within, bounds = _within("/".join(scope.subtree))

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            statement = sql["page"].format(within=within)
            if limit is None:
                statement = statement.removesuffix(" LIMIT ?")
            params = [str(scope.workspace), after or "", *bounds]
            return db.execute(statement, params if limit is None else [*params, limit])

        return [_note(row) for row in self._query(scope, run, progress)]

    def find_titled(
        self, scope: WorkspaceScope, words: Sequence[str], *, progress: ProgressSink | None = None
    ) -> list[Note]:
        """Notes one of whose title keys (title, file stem, aliases) contains every word
        (`notes.derived` Rules 2 and 3), by id."""
        within, bounds = _within("/".join(scope.subtree))
        folded = [w.casefold() for w in words]
        long, short = title_patterns(folded)

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            workspace = str(scope.workspace)
            if db.dialect == "sqlite":
                contains = " AND ".join("instr(k.value, ?) > 0" for _ in folded)
                if long:
                    match = " AND ".join(_fts_phrase(json_escaped(w)) for w in long)
                    statement = sql["titled_trigram"]
                else:
                    match = " AND ".join(_fts_phrase(gram_token(w)) for w in short)
                    statement = sql["titled_grams"]
                return db.execute(
                    statement.format(within=within, contains=contains), [match, workspace, *bounds, *folded]
                )
            patterns = [_like_contains(w) for w in folded]
            if long:
                likes = "".join(" AND n.title_keys LIKE ?" for _ in long)
                return db.execute(
                    sql["titled_trigram"].format(within=within, likes=likes),
                    [workspace, *bounds, *(_like_contains(json_escaped(w)) for w in long), patterns],
                )
            return db.execute(
                sql["titled_grams"].format(within=within), [workspace, *bounds, short, patterns]
            )

        return [
            replace(_note(row), aliases=tuple(aliases_of(_json_object(row[-1]))))
            for row in self._query(scope, run, progress)
        ]

    def skipped(self, scope: WorkspaceScope) -> list[SkippedEntry]:
        """Rows are not folders: nothing is ever skipped."""
        return []

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
    ) -> list[SearchHit]:
        """Every term must start a word of the title, path or body; best first (SQLite: bm25 with
        the title weighted 10 and the path 2, as the files index; PostgreSQL: `ts_rank` with the
        same weights), negated so that lower is better; ties by id."""
        if match != "all" or filters is not None or not terms:
            raise NotSupportedOnStore("searching with filters or by some of the words")
        within, bounds = _within("/".join(scope.subtree))
        start = after if after is not None else (float("-inf"), "")

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            if db.dialect == "sqlite":
                wanted = " AND ".join(_fts_phrase(t) + "*" for t in terms)
            else:
                query = search_query(terms)
                if query is None:
                    return []
                wanted = query
            return db.execute(
                sql["search"].format(within=within),
                [wanted, str(scope.workspace), *bounds, *start, limit],
            )

        return [
            SearchHit(_note(row), row[-1], (float(row[7]), row[0]))
            for row in self._query(scope, run, progress)
        ]

    def notes_by_id(self, scope: WorkspaceScope, note_ids: Sequence[str]) -> list[Note]:
        return [self.read_note(scope, note_id).note for note_id in note_ids]

    # Issue 14's knowledge tools: a temporary seam until this store indexes tags and links.

    def tags(self, scope: WorkspaceScope, *, prefix: str, after: str | None, limit: int) -> list[TagCount]:
        raise NotSupportedOnStore("notes_tags")

    def links(self, scope: WorkspaceScope, note_id: str, *, limit: int) -> NoteLinks:
        raise NotSupportedOnStore("notes_links")

    def recent(self, scope: WorkspaceScope, *, since_ns: int | None, limit: int) -> list[NoteChange]:
        raise NotSupportedOnStore("notes_recent")

    def similar_titles(self, scope: WorkspaceScope, title: str) -> list[Note]:
        raise NotSupportedOnStore("finding notes with a similar title")

    def complete_ids(self, scope: WorkspaceScope, prefix: str, *, limit: int) -> tuple[list[str], bool]:
        raise NotSupportedOnStore("completing note ids")

    def read_note(self, scope: WorkspaceScope, note_id: str) -> NoteContent:
        with self._ledger.snapshot() as db:
            return self._read(db, scope, note_id)

    def _read(self, db: SqlSession, scope: WorkspaceScope, note_id: str) -> NoteContent:
        rows = db.execute(_STATEMENTS[db.dialect]["read"], (str(scope.workspace), _inside(scope, note_id)))
        if not rows:
            raise NoteMissing(f"note {note_id!r} does not exist in {scope.uri}")
        body, *listed = rows[0]
        note = _note(listed)
        if not listed[6] or note.title is None:  # written by another program since (Rule 3)
            note = Note(note.id, derive(note_id, body).title, note.identity)
        return NoteContent(note, body.encode())

    # --- writing -----------------------------------------------------------------------------

    def create_note(self, scope: WorkspaceScope, note_id: str, data: bytes) -> NoteContent:
        body = _text(data)
        facts = derive(_inside(scope, note_id), body)
        with self._ledger.critical_section() as txn:
            created = txn.execute(
                _STATEMENTS[txn.dialect]["insert"],
                (
                    str(scope.workspace),
                    note_id,
                    body,
                    time.time_ns(),
                    *derived_values(txn.dialect, note_id, body, facts),
                ),
            )
        if not created:
            raise NoteExists(f"a note {note_id!r} already exists in {scope.uri}")
        ((row_id, version, modified_ns),) = created
        return NoteContent(
            Note(note_id, facts.title, _identity(row_id, version, modified_ns, len(data))), data
        )

    def rewrite_note(
        self, scope: WorkspaceScope, note_id: str, rewrite: Rewrite, *, change: Change
    ) -> Rewritten:
        workspace = str(scope.workspace)
        for _ in range(MERGE_ATTEMPTS):
            try:
                with self._ledger.critical_section() as txn:
                    txn.lock_workspace(workspace)
                    before = self._read(txn, scope, note_id)
                    data = rewrite(before)
                    if data == before.data:
                        return Rewritten(before, before, None)
                    saved = self.history.record(
                        txn,
                        workspace,
                        note_id,
                        version=before.version,
                        size=len(before.data),
                        change=change,
                        body=before.data.decode(),
                    )
                    body = _text(data)
                    facts = derive(note_id, body)
                    written = txn.execute(
                        _STATEMENTS[txn.dialect]["update"],
                        (
                            body,
                            *derived_values(txn.dialect, note_id, body, facts),
                            workspace,
                            note_id,
                            before.note.identity.dev,
                        ),
                    )
                    if not written:
                        raise _Overtaken  # a writer outside notewarden: roll back, read it again
                    self.history.prune(txn, workspace, note_id)
                    ((row_id, version, modified_ns),) = txn.execute(  # as the trigger left it (SQLite's
                        # RETURNING shows the row before its AFTER trigger); not the body
                        "SELECT id, version, modified_ns FROM notes WHERE workspace = ? AND path = ?",
                        (workspace, note_id),
                    )
                    after = Note(note_id, facts.title, _identity(row_id, version, modified_ns, len(data)))
                    return Rewritten(before, NoteContent(after, data), saved)
            except _Overtaken:
                continue
        raise VersionConflict(note_id, self.read_note(scope, note_id).version)

    def note_history(self, scope: WorkspaceScope, note_id: str) -> list[HistoryEntry]:
        with self._ledger.snapshot() as db:
            entries = self.history.entries(db, str(scope.workspace), _inside(scope, note_id))
            if not entries:
                self._read(db, scope, note_id)  # NoteMissing for a note that is not there either
        return entries

    def saved_version(
        self, scope: WorkspaceScope, note_id: str, version_id: str
    ) -> tuple[HistoryEntry, bytes]:
        with self._ledger.snapshot() as db:
            found = self.history.entry(db, str(scope.workspace), _inside(scope, note_id), version_id)
        if found is None or found[1] is None:
            raise NoteMissing(f"{note_id} has no saved version {version_id!r}; notes_history lists them")
        return found[0], found[1].encode()

    def select_history(
        self, txn: LedgerTxn, scope: WorkspaceScope, *, saved_before: float
    ) -> list[HistoryEntry]:
        return self.history.select(txn, str(scope.workspace), scope.contains, saved_before=saved_before)

    def purge_history(self, txn: LedgerTxn, scope: WorkspaceScope, entries: Sequence[HistoryEntry]) -> int:
        self.history.delete(txn, str(scope.workspace), [e.version_id for e in entries])
        return len(entries)

    def move_note(self, scope: WorkspaceScope, note_id: str, new_id: str) -> Note:
        with self._ledger.critical_section() as txn:
            sql = _STATEMENTS[txn.dialect]
            current = self._read(txn, scope, note_id)
            if txn.execute(sql["exists"], (str(scope.workspace), _inside(scope, new_id))):
                raise NoteExists(f"a note {new_id!r} already exists in {scope.uri}; nothing was moved")
            body = current.data.decode()
            moved = txn.execute(
                sql["move"],
                (
                    new_id,
                    *derived_values(txn.dialect, new_id, body),
                    str(scope.workspace),
                    note_id,
                    current.note.identity.dev,
                ),
            )
            if not moved:
                raise FsError(f"{note_id!r} changed while it was being moved; nothing was moved, try again")
            self.history.follow_move(txn, str(scope.workspace), note_id, new_id)
            return self._read(txn, scope, new_id).note

    # --- the trash: every change inside the ledger's transaction --------------------------------

    def move_to_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        candidate: Candidate,
        *,
        principal: str,
        confirmation_id: str,
    ) -> TrashedNote:
        note_id = _inside(scope, candidate.id)
        workspace = str(scope.workspace)
        sql = _STATEMENTS[txn.dialect]
        trash_id = _new_trash_id()
        deleted_at = time.time()
        match = (workspace, note_id, candidate.identity.ino, candidate.identity.dev)
        row = (trash_id, candidate.title, principal, confirmation_id, deleted_at)
        params = (*row, *match) if txn.dialect == "sqlite" else (*match, *row)
        moved = txn.execute(sql["trash_move"], params)
        if not moved:
            if txn.execute(sql["exists"], (workspace, note_id)):
                raise IdentityMismatch(f"note {note_id!r} was edited or replaced since it was shown")
            raise NoteMissing(f"note {note_id!r} no longer exists")
        if "trash_move_done" in sql:
            txn.execute(sql["trash_move_done"], (candidate.identity.ino,))
        ((modified_ns, size),) = moved
        self.history.to_trash(txn, workspace, note_id, trash_id)
        identity = _identity(candidate.identity.ino, candidate.identity.dev, modified_ns, size)
        return TrashedNote(trash_id, note_id, candidate.title, deleted_at, size, identity)

    def list_trash(self, txn: LedgerTxn, scope: WorkspaceScope) -> list[TrashedNote]:
        rows = txn.execute(_STATEMENTS[txn.dialect]["list_trash"], (str(scope.workspace),))
        return [
            TrashedNote(
                trash_id, path, title, deleted_at, size, _identity(row_id, version, modified_ns, size)
            )
            for trash_id, path, title, deleted_at, row_id, version, modified_ns, size in rows
            if scope.contains(path)
        ]

    def restore(
        self, txn: LedgerTxn, scope: WorkspaceScope, trash_id: str, *, new_id: str | None = None
    ) -> Note:
        sql = _STATEMENTS[txn.dialect]
        rows = txn.execute(sql["trashed"], (trash_id, str(scope.workspace)))
        if not rows or not scope.contains(rows[0][0]):
            raise NoteMissing(
                f"trash entry {trash_id!r} is not in the trash of {scope.uri}; notes_trash_list shows what is"
            )
        path, body = rows[0]
        target = _inside(scope, new_id or path)
        restored = txn.execute(
            sql["insert"],
            (str(scope.workspace), target, body, time.time_ns(), *derived_values(txn.dialect, target, body)),
        )
        if not restored:
            raise NoteExists(f"a note {target!r} already exists in {scope.uri}; restore it under another id")
        txn.execute(sql["untrash"], (trash_id, str(scope.workspace)))
        self.history.from_trash(txn, str(scope.workspace), trash_id, target)
        return self._read(txn, scope, target).note

    def purge_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        entries: Sequence[TrashedNote],
        *,
        progress: ProgressSink | None = None,
    ) -> int:
        present = {t.trash_id: t.identity for t in self.list_trash(txn, scope)}
        for entry in entries:
            if present.get(entry.trash_id) != entry.identity:
                raise IdentityMismatch(f"trash entry {entry.trash_id!r} is not the note that was listed")
        for done, entry in enumerate(entries, 1):
            txn.execute(_STATEMENTS[txn.dialect]["untrash"], (entry.trash_id, str(scope.workspace)))
            self.history.drop_trashed(txn, str(scope.workspace), entry.trash_id)
            if progress is not None and (done % 100 == 0 or done == len(entries)):
                progress(done, len(entries), f"permanently deleted {done} of {len(entries)} notes")
        return len(entries)

    # --- whole workspaces, for `notewarden import` and `export` (notewarden.transfer) -------------

    def add_rows(self, txn: LedgerTxn, workspace: str, rows: Sequence[tuple[str, str, int]]) -> list[bool]:
        """Insert notes as written elsewhere, (path, body, modified_ns) each, their times kept; for
        each, False when its path is taken. On PostgreSQL the statements are pipelined (one round
        trip for the batch, not one per note)."""
        statement = _STATEMENTS[txn.dialect]["insert"]
        params = [(workspace, p, b, m, *derived_values(txn.dialect, p, b)) for p, b, m in rows]
        if txn.dialect == "sqlite":
            return [bool(txn.execute(statement, values)) for values in params]
        cursor = txn.connection.cursor()
        cursor.executemany(statement.replace("?", "%s").encode(), params, returning=True)
        added = []
        while True:
            added.append(cursor.fetchone() is not None)
            if not cursor.nextset():
                return added

    def settle_after_bulk_write(self) -> None:
        """After many rows at once: merge the full-text indexes' pending entries and refresh the
        planner's statistics, so the next queries neither read a long pending list nor plan with
        the table's old size."""
        with self._ledger.critical_section() as txn:
            for statement in _SETTLE[txn.dialect]:
                txn.execute(statement)

    def row_body(self, txn: LedgerTxn, workspace: str, path: str) -> str | None:
        rows = txn.execute("SELECT body FROM notes WHERE workspace = ? AND path = ?", (workspace, path))
        return str(rows[0][0]) if rows else None

    def all_rows(self, workspace: str) -> Iterator[tuple[str, str, int]]:
        """Every note of the workspace as (path, body, modified_ns), by path, a page per snapshot."""
        after = ""
        while True:
            with self._ledger.snapshot() as db:
                rows = db.execute(
                    "SELECT path, body, modified_ns FROM notes WHERE workspace = ? AND path > ? "
                    "ORDER BY path LIMIT ?",
                    (workspace, after, DERIVE_BATCH),
                )
            yield from ((str(p), str(b), int(m)) for p, b, m in rows)
            if len(rows) < DERIVE_BATCH:
                return
            after = rows[-1][0]

    def trash_rows(self, workspace: str) -> list[tuple[str, str, str, str, int, str, str, float]]:
        """(trash id, path, title, body, modified_ns, principal, confirmation id, deleted_at) of each
        trash entry of the workspace."""
        with self._ledger.snapshot() as db:
            return [
                (str(t), str(p), str(title), str(b), int(m), str(who), str(c), float(d))
                for t, p, title, b, m, who, c, d in db.execute(
                    "SELECT trash_id, path, title, body, modified_ns, principal, confirmation_id, deleted_at "
                    "FROM notes_trash WHERE workspace = ? ORDER BY trash_id",
                    (workspace,),
                )
            ]

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot | None) -> int:
        """Nothing to recover: every trash change commits or rolls back with its transaction."""
        return 0
