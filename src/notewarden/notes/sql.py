"""The SQL note store: notes are rows in the ledger's database (SQLite or PostgreSQL).

Because the notes share the ledger's database, a delete is one transaction:

    BEGIN (SQLite: IMMEDIATE)
      claim the confirmation id                                   (ledger)
      move the row whose workspace, path, row id and version match into notes_trash
    COMMIT

A crash anywhere before COMMIT leaves the note in `notes` and the confirmation unused; after
it, both changes. There is nothing to recover. Every write's record (`notes.change_log`) is in the
same transaction, so it too is there exactly when the change is.

Rule 1 (the note model is the files store's): a note belongs to a workspace URI, its id is a
relative path under `note_paths.split_relative`'s rules (checked on write), and its title is found
in its body by the same rule (front matter, first heading, file stem). A row's identity
(`model.NoteIdentity`) is:

    key          (row id, version): the id is never reused (a note deleted and created again is
                 another note); a trigger bumps the version on every UPDATE, whoever the writer is
    modified_ns  when the row last changed (shown to the user; milliseconds on SQLite)
    size         the body's length in bytes

so a note edited or replaced since round 1 fails the move's match and nothing is deleted.

Rule 2 (the database does the work): listing, title matching, full-text search, ranking,
snippets and pagination are SQL over indexes (`notes.sql_schema`), never a read of every note:
a query costs O(rows it returns) plus the index lookups. Keyset pagination: a page starts after
the (rank, id) or id of the previous page's last row. Every statement is in `_SQL`, by dialect;
tests/storage/test_sql_plans.py runs EXPLAIN on each at 10,000 notes. PostgreSQL's rank weighs each
query term by how rare it is (log(1 + 1/share), its share of notes from the planner's statistics of
the `search` column: no query counts anything), as bm25 does in the other stores (issue 25: without
it, a note with a common word outranked the one with the rare word asked for, and the stores gave
other answers). Notes with some of the words are ranked within `ranking` Rule 4's budget: SQLite
counts each word's notes through the FTS index, up to one past the budget; PostgreSQL reads the same
statistics.

A content write (`rewrite_note`) saves the replaced body as a `note_history` row (`notes.history`)
in the transaction that updates the note, guarded by the row's version so that a writer outside
notewarden in between makes it run the rewrite again on that writer's body.

Rule 3 (rows other programs wrote, and large notes): titles and search words are derived when
notewarden writes a row (`notes.derived` Rule 1), except a content write whose body before or
after is `INDEX_LATER_BYTES` or more (issue 29): it writes only the body, as another program
would, so its transaction does not re-parse and re-tokenize the whole note. Before each query of
a workspace the store looks up that workspace's rows whose derived columns are behind their
version (a partial index holds only those, so the look-up costs nothing when there are none),
derives them in batches, and then queries. A row the query returns that fell behind meanwhile
sends the query round again. So a reader, in this process or another, never sees a large note's
old words, title, tags or links once its write has returned: its query derives the row first, and
a read of the row derives its title from the head of the body (`derived.derived_title`). A crash
leaves the row behind, and the next query derives it. On SQLite the full-text entry of such a row
waits too: `notes_indexed_later` keeps the title, path and body it was made from, which its
'delete' needs (`notes.sql_schema` step 5), and deriving the row deletes that entry and indexes
the row as it is. A row whose id breaks the path rules is derived with no title and is never
listed.

Rule 4 (what notes know, issue 14): with the derived columns the store writes the note's tags,
aliases, properties and links into their tables (`notes.sql_schema` step 3), in the same
transaction; a deleted row takes them along (a trigger, whoever deletes). A link is stored as
written and resolved as the files index resolves it (`links` Rule 1) to the target's row id. A note
can only be found through links whose name key is its name or one of its aliases, so a write that
changes a note's name, folder or aliases records those keys in `links_dirty` (a delete does, by
trigger), and a written note's own links are recorded there with its row; before a query that shows
links (`links`, a move's plan), the store derives stale rows and then resolves exactly the recorded
links again, in one transaction under the workspace's lock. Many keys at once (an import) read the
workspace's keys once instead of a query per key; on PostgreSQL the facts go in by COPY, the recorded
keys and each chunk's resolved targets in one statement over arrays.

Rule 5 (moves): `move_note` with `relink` rewrites every linking note, then renames the note, in
one transaction under the workspace's lock: all or nothing. Each rewrite is `_rewrite_row`, whose
UPDATE is guarded by the row's version, so a row another program changed meanwhile is read again
and rewritten on its new content (PostgreSQL's READ COMMITTED shows it to the next statement).

Rule 6 (filters only, issue 25): a search without words lists the notes passing its filters newest
first, ties by id, in the order of the index `notes_by_time (workspace, modified_ns DESC, path)`.
Each indexed filter (a tag, the tags of `any`, a property, a folder) is counted up to
`store.FILTER_FIRST_CAP`: the first that keeps fewer drives the query (its rows read through its
own index, the other filters tested on each, then sorted); when none does, the time index is walked
newest first, each note tested by index probes on its row, until the page is full. Either reads
O(page / share kept) or O(cap) rows, never every note and never a sort of every note that passes
(docs/performance.md, "Search by meaning": tag-only searches).
The rank of a filters-only hit is the negated `modified_ns`, an exact integer in the cursor.

Rule 7 (what notes mean, issue 25; `notes.sql_schema` step 4): with a model configured, a search by
meaning first embeds the rows whose `embedded_version` is behind their version (whoever wrote them:
the version trigger moves on every write), a batch at a time: read in a snapshot, embedded outside
any transaction, written under a guard on the row's version (a row written again meanwhile is left
for the next pass). A section whose text's digest the row already has keeps its vector. Vectors are
scored in the process, not in the database (docs/performance.md measures both): each process holds
a workspace's vectors in memory (`notes.vectors`) and reads only the rows after the last `seq` it
saw (the vector writes of a workspace hold its lock, so their seq values commit in order and none
is skipped by a reader); the notes found are then listed by SQL with the scope and the filters, so none outside the
caller's reach is ever shown. `vector_models` names the model; another one starts over. A pass that
embedded `SETTLE_AFTER_EMBEDDING` notes or more vacuums and analyzes what it rewrote (PostgreSQL;
within the statement timeout, else left to autovacuum), as after an import: each embedded row is a
new row version, and until autovacuum came the next searches read the dead ones
(docs/performance.md, "Search by meaning").
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from notewarden.faults import fault_point
from notewarden.ledger import Ledger, LedgerTxn, LedgerUnavailable, SqlSession, workspace_lock_key
from notewarden.notes import health, links
from notewarden.notes.attachments import AttachmentVault, no_attachments
from notewarden.notes.change_log import ChangeLog, NoteEffect, versions_purged
from notewarden.notes.derived import (
    Derived,
    derive,
    derived_title,
    gram_token,
    json_escaped,
    search_query,
    search_rank_queries,
    search_vector,
    stemmed_words,
    title_patterns,
)
from notewarden.notes.history import HISTORY_COLUMNS, Change, HistoryEntry, HistoryLog, Retention
from notewarden.notes.markdown import aliases_of, fold, parse_note, tag_key
from notewarden.notes.model import Note, NoteIdentity, nearly_same, note_stem, title_words
from notewarden.notes.ranking import budgeted
from notewarden.notes.snippets import SNIPPET_SCAN_CHARS
from notewarden.notes.sql_schema import NOW_NS, SQL_STORE_SCHEMA
from notewarden.notes.store import (
    FILTER_FIRST_CAP,
    MERGE_ATTEMPTS,
    ContentRefused,
    LinkView,
    MeaningHit,
    Moved,
    NoteChange,
    NoteContent,
    NoteFilter,
    NoteLinks,
    ProgressSink,
    PropertyTest,
    Relinked,
    Rewrite,
    Rewritten,
    SearchHit,
    SearchMatch,
    SkippedEntry,
    TagCount,
    TrashedNote,
    VersionConflict,
    attributed,
    refuse_unwritable_links,
    relink_change,
    within_regions,
)
from notewarden.notes.store_kit import (
    AnchorFacts,
    AnchorMemo,
    MemoLookup,
    fts_match,
    fts_phrase,
    new_trash_id,
    prefix_range,
    with_time_and_folder,
)
from notewarden.scope.fs_errors import FsError, IdentityMismatch, NoteExists, NoteMissing, PathRejected
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import split_relative
from notewarden.scope.rights import RightMissing
from notewarden.scope.uri import FileUri

if TYPE_CHECKING:
    from notewarden.notes.live import ChangeFeed
    from notewarden.notes.vectors import Embedder, VectorIndex, Vectors

__all__ = ["SQL_STORE_SCHEMA", "SqlNoteStore", "derived_values"]

logger = logging.getLogger(__name__)

DERIVE_BATCH = 500
"""Rows re-derived per transaction (Rule 3)."""
INDEX_LATER_BYTES = 64 * 1024
"""A content write whose body before or after is at least this large is derived and indexed by the
next query of the workspace, not by the write (Rule 3)."""
EMBED_BATCH = 256
"""Rows embedded per transaction (Rule 7)."""
SETTLE_AFTER_EMBEDDING = 1_000
"""Rule 7: a pass that embedded this many notes or more vacuums what it rewrote."""
_OVERSAMPLE = 4
"""Sections asked of the vector index per hit wanted, so that notes the filters drop can be replaced."""
_SIMILAR_SCAN = 500
"""The most notes sharing a title word that `similar_titles` compares (as the files index)."""
_ATTEMPTS = 3
_HEALTH_BATCH = 500
"""Link rows read at a time while a page of broken links is filled (attachments are skipped)."""

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
    "sqlite": (
        "title",
        "title_keys",
        "title_grams",
        "front_matter",
        "name_key",
        "path_key",
        "property_error",
    ),
    "postgres": (
        "title",
        "title_keys",
        "title_grams",
        "search",
        "front_matter",
        "name_key",
        "path_key",
        "property_error",
    ),
}
_UNEMBEDDED = {"sqlite": "n.embedded_version IS NOT n.version", "postgres": "n.unembedded"}
_CASTS = {"postgres": {"search": "?::tsvector", "front_matter": "?::jsonb"}, "sqlite": {}}
_PG_RANK_WEIGHTS = "ARRAY[0.0, 0.1, 0.2, 1.0]::float4[]"  # D, C body, B path, A title: 1 : 2 : 10 as in files


def _sql(dialect: str) -> dict[str, str]:
    columns, stale = _COLUMNS[dialect], _STALE[dialect]
    size = "length(CAST(body AS BLOB))" if dialect == "sqlite" else "octet_length(body)"
    derived = _DERIVED_COLUMNS[dialect]
    casts = _CASTS[dialect]
    values = ", ".join(casts.get(c, "?") for c in derived)
    assignments = ", ".join(f"{c} = {casts.get(c, '?')}" for c in derived)
    return {
        "stale_probe": f"SELECT n.id FROM notes n WHERE n.workspace = ? AND {stale} LIMIT 1",
        "stale_batch": f"SELECT n.id, n.version, n.path, n.body, n.name_key FROM notes n WHERE n.workspace = ? "
        f"AND {stale} ORDER BY n.id LIMIT ?",
        "derive": f"UPDATE notes AS n SET {assignments}, derived_version = version WHERE id = ? AND version = ? "
        f"AND {stale} RETURNING id",
        "page": f"SELECT {columns} FROM notes n WHERE n.workspace = ? AND n.title IS NOT NULL AND n.path > ?"
        "{within} ORDER BY n.path LIMIT ?",
        "read": f"SELECT n.body, {columns} FROM notes n WHERE n.workspace = ? AND n.path = ?",
        "reads": f"SELECT n.body, {columns} FROM notes n WHERE n.workspace = ? AND n.path IN ({{marks}})",
        "exists": "SELECT 1 FROM notes WHERE workspace = ? AND path = ?",
        "insert": f"INSERT INTO notes (workspace, path, body, modified_ns, {', '.join(derived)}, derived_version) "
        f"VALUES (?, ?, ?, ?, {values}, 1) ON CONFLICT (workspace, path) DO NOTHING "
        "RETURNING id, version, modified_ns",
        "write": f"UPDATE notes SET path = ?, body = ?, {assignments}, derived_version = version + 1 "
        "WHERE workspace = ? AND path = ? AND version = ? RETURNING id",
        "identity": "SELECT id, version, modified_ns FROM notes WHERE workspace = ? AND path = ?",
        # what notes know (Rule 4)
        "facts_drop_tags": "DELETE FROM note_tags WHERE note_row = ?",
        "facts_drop_aliases": "DELETE FROM note_aliases WHERE note_row = ? RETURNING alias_key",
        "facts_drop_links": "DELETE FROM note_links WHERE note_row = ?",
        "facts_drop_properties": "DELETE FROM note_properties WHERE note_row = ?",
        "facts_tag": "INSERT INTO note_tags (note_row, workspace, tag, name) VALUES (?, ?, ?, ?)",
        "facts_alias": "INSERT INTO note_aliases (note_row, workspace, alias_key) VALUES (?, ?, ?)",
        "facts_property": "INSERT INTO note_properties (note_row, workspace, name, value_text, value_num) "
        "VALUES (?, ?, ?, ?, ?)",
        "facts_link": "INSERT INTO note_links (note_row, seq, workspace, line, style, embed, path, anchor, "
        "written, context, name_key, target_row, via, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "dirty": "INSERT INTO links_dirty (workspace, name_key, note_row) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        "links_probe": f"SELECT EXISTS (SELECT 1 FROM notes n WHERE n.workspace = ? AND {stale}), "
        "EXISTS (SELECT 1 FROM links_dirty WHERE workspace = ?)",
        "dirty_take": "DELETE FROM links_dirty WHERE workspace = ? RETURNING name_key, note_row",
        "links_named": "SELECT l.note_row, l.seq, l.path, l.style, l.target_row, l.via, l.source, l.name_key "
        "FROM note_links l WHERE l.workspace = ? AND l.name_key IN ({marks}) AND l.path != ''",
        "links_of": "SELECT l.note_row, l.seq, l.path, l.style, l.target_row, l.via, l.source, l.name_key "
        "FROM note_links l WHERE l.note_row IN ({marks}) AND l.path != ''",
        "link_resolved": "UPDATE note_links SET target_row = ?, via = ? WHERE note_row = ? AND seq = ?",
        "by_path": "SELECT n.id, n.path FROM notes n WHERE n.workspace = ? AND n.name_key = ? AND n.path_key = ? "
        "AND n.title IS NOT NULL ORDER BY n.path LIMIT 1",
        "by_name": "SELECT n.id, n.path FROM notes n WHERE n.workspace = ? AND n.name_key = ? "
        "AND n.title IS NOT NULL",
        "by_alias": "SELECT n.id, n.path FROM note_aliases a JOIN notes n ON n.id = a.note_row "
        "WHERE a.workspace = ? AND a.alias_key = ? AND n.title IS NOT NULL",
        "keys_page": "SELECT n.id, n.path, n.path_key, n.name_key FROM notes n WHERE n.workspace = ? "
        "AND n.path > ? AND n.title IS NOT NULL ORDER BY n.path LIMIT ?",
        "aliases_all": "SELECT alias_key, note_row FROM note_aliases WHERE workspace = ?",
        "aliases_of": "SELECT alias_key FROM note_aliases WHERE note_row = ?",
        "linking": "SELECT l.source FROM note_links l WHERE l.target_row = ? "
        "UNION SELECT l.source FROM note_links l WHERE l.workspace = ? AND l.name_key IN ({marks})",
        "note_facts": f"SELECT {columns}, n.front_matter, n.property_error FROM notes n "
        "WHERE n.workspace = ? AND n.path = ?",
        "links_out": "SELECT l.line, l.written, l.context, l.embed, l.path, l.anchor, t.path, l.via, l.style "
        "FROM note_links l LEFT JOIN notes t ON t.id = l.target_row WHERE l.note_row = ? ORDER BY l.seq",
        "backlinks_count": "SELECT count(*) FROM note_links l WHERE l.target_row = ?{within}",
        "backlinks": "SELECT l.source, n.title, l.line, l.written, l.context, l.embed, l.path, l.anchor, l.style, "
        "l.seq FROM note_links l JOIN notes n ON n.id = l.note_row WHERE l.target_row = ?{within}{resume} "
        "ORDER BY l.source, l.seq LIMIT ?",
        "note_tag_names": "SELECT name FROM note_tags WHERE note_row = ? AND name IS NOT NULL ORDER BY tag",
        "tags_counted": "SELECT name, notes FROM tag_counts WHERE workspace = ? AND tag >= ? AND tag < ? "
        "ORDER BY tag LIMIT ?",
        "tags_within": "SELECT min(g.name), count(*) FROM note_tags g JOIN notes n ON n.id = g.note_row "
        "WHERE g.workspace = ? AND g.name IS NOT NULL AND g.tag >= ? AND g.tag < ?{within} GROUP BY g.tag "
        "ORDER BY g.tag LIMIT ?",
        "recent": f"SELECT {columns}, n.last_change, n.previous FROM notes n WHERE n.workspace = ? "
        "AND n.title IS NOT NULL AND n.modified_ns >= ?{within} ORDER BY n.modified_ns DESC, n.path LIMIT ?",
        "gone": "SELECT n.path, n.title, n.gone_ns FROM notes_gone n WHERE n.workspace = ? AND n.gone_ns >= ?"
        "{within} ORDER BY n.gone_ns DESC, n.path LIMIT ?",
        "complete_ids": f"SELECT {columns} FROM notes n WHERE n.workspace = ? AND n.title IS NOT NULL "
        "AND n.path >= ? AND n.path < ?{within} ORDER BY n.path LIMIT ?",
        "complete_names": f"SELECT {columns} FROM notes n WHERE n.workspace = ? AND n.title IS NOT NULL "
        "AND n.name_key >= ? AND n.name_key < ?{within} ORDER BY n.name_key, n.path LIMIT ?",
        # Rule 6: filters only, newest first, ties by id, from `notes_by_time`
        "filtered_walk": f"SELECT {columns}, -n.modified_ns AS score, '' AS body, NULL AS front_matter "
        "FROM notes n WHERE n.workspace = ? AND n.title IS NOT NULL{within} "
        "ORDER BY n.modified_ns DESC, n.path LIMIT ?",
        "filtered_few": f"SELECT {columns}, -n.modified_ns AS score, '' AS body, NULL AS front_matter "
        "FROM (SELECT DISTINCT {driver}) d JOIN notes n ON n.id = d.note_row "
        "WHERE n.workspace = ? AND n.title IS NOT NULL{within} ORDER BY n.modified_ns DESC, n.path LIMIT ?",
        "filter_count": "SELECT count(*) FROM (SELECT {driver} LIMIT ?) kept",
        # what notes mean (Rule 7)
        "unembedded_count": f"SELECT count(*) FROM notes n WHERE n.workspace = ? AND {_UNEMBEDDED[dialect]}",
        "unembedded": f"SELECT n.id, n.version, n.path, n.body FROM notes n WHERE n.workspace = ? "
        f"AND {_UNEMBEDDED[dialect]} AND n.id > ? ORDER BY n.id LIMIT ?",
        "vectors_of_rows": "SELECT note_row, digest, vector FROM note_vectors WHERE note_row IN ({marks})",
        "embedded": f"UPDATE notes AS n SET embedded_version = version WHERE id = ? AND version = ? "
        f"AND {_UNEMBEDDED[dialect]} RETURNING id",
        "vectors_drop": "DELETE FROM note_vectors WHERE note_row = ?",
        "vector_insert": "INSERT INTO note_vectors (note_row, workspace, chunk, section, digest, vector) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        "vector_model": "SELECT model FROM vector_models WHERE workspace = ?",
        "vector_model_set": "INSERT INTO vector_models (workspace, model) VALUES (?, ?) "
        "ON CONFLICT (workspace) DO UPDATE SET model = excluded.model",
        "vectors_reset": "DELETE FROM note_vectors WHERE workspace = ?",
        # only the rows with vectors: a first model's pass over an import rewrote every row for nothing
        "embedded_reset": "UPDATE notes SET embedded_version = NULL WHERE workspace = ? "
        "AND embedded_version IS NOT NULL",
        "vectors_after": "SELECT v.seq, n.path, v.section, v.vector FROM note_vectors v JOIN notes n "
        "ON n.id = v.note_row WHERE v.workspace = ? AND v.seq > ? ORDER BY v.seq LIMIT ?",
        "listed": f"SELECT {columns}, n.front_matter FROM notes n WHERE n.workspace = ? AND n.path IN ({{marks}}) "
        "AND n.title IS NOT NULL{within}",
        "kept_paths": "SELECT n.path FROM notes n WHERE n.id IN (SELECT {driver})",
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
    "similar": f"SELECT {_COLUMNS['sqlite']} FROM notes_title_fts t CROSS JOIN notes n ON n.id = t.rowid "
    "WHERE notes_title_fts MATCH ? AND n.workspace = ? AND n.title IS NOT NULL{within} ORDER BY n.path LIMIT ?",
    # CROSS JOIN: the full-text table drives the join (as in notes.index Rule 2)
    "search": f"SELECT hit.*, substr(n.body, 1, {SNIPPET_SCAN_CHARS}), n.front_matter FROM (SELECT * FROM (SELECT "
    f"{_COLUMNS['sqlite']}, bm25(notes_fts, 10.0, 2.0, 1.0) AS score "
    "FROM notes_fts CROSS JOIN notes n ON n.id = notes_fts.rowid "
    "WHERE notes_fts MATCH ? AND n.workspace = ? AND n.title IS NOT NULL{within}) ranked "
    "WHERE (ranked.score, ranked.path) > (?, ?) ORDER BY ranked.score, ranked.path LIMIT ?) hit "
    "JOIN notes n ON n.id = hit.id ORDER BY hit.score, hit.path",
    "trash_move": "INSERT INTO notes_trash (trash_id, workspace, path, title, body, note_row, version, "
    "modified_ns, principal, confirmation_id, deleted_at) SELECT ?, workspace, path, ?, body, id, version, "
    "modified_ns, ?, ?, ? FROM notes WHERE workspace = ? AND path = ? AND id = ? AND version = ? "
    "RETURNING modified_ns, length(CAST(body AS BLOB))",
    "trash_move_done": "DELETE FROM notes WHERE id = ?",
    # Rule 3: what `notes_fts` holds for a row whose indexing waits (`notes.sql_schema` step 5), kept
    # once before its first write; deleting it indexes the row as it is now (a trigger)
    "index_later": "INSERT INTO notes_indexed_later (note_row, title, path, body) SELECT n.id, n.title, n.path, "
    "n.body FROM notes n WHERE n.workspace = ? AND n.path = ? AND n.version = ? "
    "AND NOT EXISTS (SELECT 1 FROM notes_indexed_later l WHERE l.note_row = n.id)",
    "indexed_now": "DELETE FROM notes_indexed_later WHERE note_row = ?",
    # the row as the version trigger would leave it, so that it skips its second write of the row
    "write_later": f"UPDATE notes SET body = ?, version = version + 1, modified_ns = {NOW_NS['sqlite']}, "
    "last_change = 'modified', previous = NULL WHERE workspace = ? AND path = ? AND version = ? "
    "RETURNING id, version, modified_ns",
}

_POSTGRES_QUERIES = {
    "write_later": "UPDATE notes SET body = ? WHERE workspace = ? AND path = ? AND version = ? "
    "RETURNING id, version, modified_ns",
    # add_rows: a batch's tags counted once (the trigger skips them), not one update of a hot row per tag
    "tags_counted_later": "SELECT set_config('notewarden.tags_counted_later', ?, true)",
    "tags_count_added": "INSERT INTO tag_counts (workspace, tag, name, notes) SELECT workspace, tag, min(name), "
    "count(*) FROM note_tags WHERE note_row IN ({marks}) AND name IS NOT NULL GROUP BY workspace, tag "
    "ON CONFLICT (workspace, tag) DO UPDATE SET notes = tag_counts.notes + excluded.notes, "
    "name = least(tag_counts.name, excluded.name)",
    "similar": f"SELECT {_COLUMNS['postgres']} FROM notes n WHERE n.workspace = ? AND n.title IS NOT NULL{{within}} "
    "AND ({likes}) ORDER BY n.path LIMIT ?",
    "titled_trigram": f"SELECT {_COLUMNS['postgres']}, n.front_matter FROM notes n WHERE n.workspace = ? "
    "AND n.title IS NOT NULL{within}{likes} AND EXISTS (SELECT 1 FROM "
    "json_array_elements_text(n.title_keys::json) k WHERE k LIKE ALL (?::text[])) ORDER BY n.path",
    "titled_grams": f"SELECT {_COLUMNS['postgres']}, n.front_matter FROM notes n WHERE n.workspace = ? "
    "AND n.title IS NOT NULL{within} AND n.title_grams @> ?::text[] AND EXISTS (SELECT 1 FROM "
    "json_array_elements_text(n.title_keys::json) k WHERE k LIKE ALL (?::text[])) ORDER BY n.path",
    # {rank}: each term's ts_rank weighted by its rarity, `_pg_rank` (Rule 2), over `d.search`: the
    # row's tsvector read from TOAST once, not once per term (OFFSET 0 keeps it one value); the rank
    # computed once per row, not again in the page's condition (the second OFFSET 0)
    "search": f"SELECT {_PAGE_COLUMNS}, left(n.body, {SNIPPET_SCAN_CHARS}), n.front_matter FROM (SELECT * FROM "
    f"(SELECT {_COLUMNS['postgres']}, -({{rank}})::float8 AS score "
    "FROM notes n, (SELECT ?::tsquery AS query{weights}) q, "
    "LATERAL (SELECT n.search || ''::tsvector AS search OFFSET 0) d WHERE n.search @@ q.query "
    "AND n.workspace = ? AND n.title IS NOT NULL{within} OFFSET 0) hit WHERE (hit.score, hit.path) > (?, ?) "
    "ORDER BY hit.score, hit.path LIMIT ?) page JOIN notes n ON n.id = page.id ORDER BY page.score, page.path",
    "lexeme_stats": "SELECT most_common_elems::text::text[], most_common_elem_freqs, (SELECT reltuples "
    "FROM pg_class WHERE oid = 'notes'::regclass) FROM pg_stats "
    "WHERE schemaname = current_schema() AND tablename = 'notes' AND attname = 'search'",
    "dirty_many": "INSERT INTO links_dirty (workspace, name_key, note_row) "
    "SELECT * FROM unnest(?::text[], ?::text[], ?::bigint[]) ON CONFLICT DO NOTHING",
    "links_resolved": "UPDATE note_links l SET target_row = t.target_row, via = t.via "
    "FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::integer[]) AS t(target_row, via, note_row, seq) "
    "WHERE l.note_row = t.note_row AND l.seq = t.seq",
    # One statement, one round trip (`move_to_trash`): the workspace's lock (an InitPlan, so taken
    # before the row is deleted and its trigger runs), the move, and the note's saved versions
    # following it into the trash (`HistoryLog.to_trash`'s UPDATE).
    "trash_move": "WITH locked AS (SELECT pg_advisory_xact_lock(?)), moved AS (DELETE FROM notes "
    "WHERE workspace = ? AND path = ? AND id = ? AND version = ? AND EXISTS (SELECT FROM locked) "
    "RETURNING workspace, path, body, id, version, modified_ns), followed AS (UPDATE note_history SET "
    "trash_id = ? WHERE workspace = ? AND note_id = ? AND trash_id IS NULL AND EXISTS (SELECT FROM moved)) "
    "INSERT INTO notes_trash (trash_id, workspace, path, title, body, note_row, version, modified_ns, "
    "principal, confirmation_id, deleted_at) SELECT ?, workspace, path, ?, body, id, version, modified_ns, "
    "?, ?, ? FROM moved RETURNING modified_ns, octet_length(body)",
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
            )
        ),
        "ANALYZE note_tags",
        "ANALYZE note_links",  # again: now with the resolved targets
        "ANALYZE note_properties",
    ],
    "sqlite": [
        *(
            f"INSERT INTO {fts} ({fts}) VALUES ('optimize')"
            for fts in ("notes_fts", "notes_title_fts", "notes_gram_fts")
        ),
        "ANALYZE",
    ],
}
_BEFORE_RESOLVING = {
    # the resolution's page and key queries planned with the tables' new sizes, not an empty
    # database's (an import of 100,000 notes: its 200 pages of keys took 18 s before, 0.8 s after)
    "postgres": ["ANALYZE notes", "ANALYZE note_aliases", "ANALYZE note_links"],
    "sqlite": [],
}
_AFTER_EMBEDDING = {  # Rule 7, outside a transaction
    "postgres": ["VACUUM (ANALYZE) notes", "VACUUM (ANALYZE) note_vectors"],
    "sqlite": [],
}
_AFTER_RESOLVING = {
    # outside a transaction (VACUUM cannot run in one): the resolution deleted every `links_dirty`
    # row an import wrote, and each links call's probe of that table would walk their dead index
    # entries (4,297 pages, 10 ms, at 100,000 notes) until autovacuum came; the table holds no live
    # rows then, so this costs little
    "postgres": ["VACUUM links_dirty"],
    "sqlite": [],
}


def derived_values(dialect: str, path: str, body: str, facts: Derived | None = None) -> list[object]:
    """The derived columns of a row (`_DERIVED_COLUMNS` order), as the dialect stores them; a path
    that breaks the id rules gets no title and no link keys (Rule 3)."""
    facts = facts or derive(path, body)
    try:
        split_relative(path)
        title: str | None = facts.title
        name_key: str | None = facts.name_key
        path_key: str | None = facts.path_key
    except PathRejected:
        title = name_key = path_key = None
    error = facts.facts.property_error
    if dialect == "sqlite":
        return [title, facts.keys_json, facts.grams_text, facts.front_matter_json, name_key, path_key, error]
    return [
        title,
        facts.keys_json,
        facts.grams,
        search_vector(facts.title, path, body),
        facts.front_matter_json,
        name_key,
        path_key,
        error,
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class _Written:
    """A row notewarden just wrote, for `_store_facts`: what it had before (None: a new row)."""

    row_id: int
    path: str
    body: str
    facts: Derived
    old_path: str | None = None
    old_name_key: str | None = None


def _execute_many(txn: SqlSession, statement: str, rows: Sequence[Sequence[object]]) -> None:
    """One statement for many rows: SQLite's executemany, PostgreSQL's pipelined executemany."""
    if not rows:
        return
    if txn.dialect == "sqlite":
        txn.connection.executemany(statement, rows)  # type: ignore[attr-defined]
    else:
        txn.connection.cursor().executemany(statement.replace("?", "%s").encode(), rows)  # type: ignore[attr-defined]


def _insert_many(txn: SqlSession, statement: str, rows: Sequence[Sequence[object]]) -> None:
    """Rows for a plain `INSERT INTO table (columns) VALUES (...)`: on PostgreSQL one COPY (an import's
    hundreds of thousands of link rows cost a row each in the pipeline, several times COPY's time)."""
    if not rows or txn.dialect == "sqlite":
        _execute_many(txn, statement, rows)
        return
    target = statement.removeprefix("INSERT INTO ").split(" VALUES ", 1)[0]
    with txn.connection.cursor().copy(f"COPY {target} FROM STDIN".encode()) as copy:  # type: ignore[attr-defined]
        for row in rows:
            copy.write_row(row)


class _SqlLookup(MemoLookup):
    """`links.VaultLookup` over a workspace's rows, query by query, remembering row ids by path."""

    def __init__(self, db: SqlSession, workspace: str) -> None:
        super().__init__()
        self._db, self._workspace = db, workspace
        self._sql = _STATEMENTS[db.dialect]
        self.rows: dict[str, int] = {}

    def _remember(self, rows: Iterable[Sequence[Any]]) -> list[str]:
        found = []
        for row_id, path in rows:
            self.rows[path] = row_id
            found.append(path)
        return found

    def _path(self, key: str) -> str | None:
        rows = self._db.execute(self._sql["by_path"], (self._workspace, key.rsplit("/", 1)[-1], key))
        return next(iter(self._remember(rows)), None)

    def _names_of(self, key: str) -> list[str]:
        return self._remember(self._db.execute(self._sql["by_name"], (self._workspace, key)))

    def _aliased(self, key: str) -> list[str]:
        return self._remember(self._db.execute(self._sql["by_alias"], (self._workspace, key)))


class _Probed:
    """A PostgreSQL read session for `SqlNoteStore._query` that asks with each statement, in its round
    trip and its snapshot, whether the workspace has rows to derive (Rule 3): one round trip per read
    instead of two. A statement that returns no rows cannot say; `stale` then asks on its own."""

    dialect = "postgres"

    def __init__(self, db: SqlSession, workspace: str) -> None:
        self._db, self._workspace = db, workspace
        self._stale = False
        self._answered = True  # every statement so far returned the answer with its rows

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        rows = self._db.execute(_PROBED.format(statement=sql), (self._workspace, *params))
        if rows:
            self._stale = self._stale or bool(rows[0][-1])
        else:
            self._answered = False
        return [row[:-1] for row in rows]

    def stale(self) -> bool:
        if self._stale or self._answered:
            return self._stale
        return bool(self._db.execute(_STATEMENTS["postgres"]["stale_probe"], (self._workspace,)))


_PROBED = (
    "SELECT hit.*, EXISTS (SELECT FROM notes s WHERE s.workspace = ? AND s.stale) FROM ({statement}) hit"
)
"""A statement and the stale-row probe in one (the probe is an InitPlan over the partial index of
stale rows; the statement's ORDER BY keeps its rows' order: a sorted subquery is not flattened)."""


class _LoadedSqlLookup(links.MappedVault):
    """Every key of the workspace read once, a page at a time: for resolving many names (an import)."""

    def __init__(self, db: SqlSession, workspace: str) -> None:
        sql = _STATEMENTS[db.dialect]
        self.rows: dict[str, int] = {}

        def keys() -> Iterator[tuple[str, str, str]]:  # by path, a page at a time
            after = ""
            while True:
                page = db.execute(sql["keys_page"], (workspace, after, DERIVE_BATCH))
                for row_id, path, path_key, name in page:
                    self.rows[path] = row_id
                    yield path, path_key, name
                if len(page) < DERIVE_BATCH:
                    return
                after = page[-1][1]

        paths, names = links.id_keyed(keys())
        by_row = {row_id: path for path, row_id in self.rows.items()}
        aliases: dict[str, list[str]] = {}
        for key, row_id in db.execute(sql["aliases_all"], (workspace,)):
            if row_id in by_row:  # not a row whose id breaks the path rules
                aliases.setdefault(key, []).append(by_row[row_id])
        super().__init__(paths, names, aliases)


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), DERIVE_BATCH):
        yield items[start : start + DERIVE_BATCH]


def _marks(items: Sequence[object]) -> str:
    return ", ".join("?" * len(items))


def _tag_key(tag: str) -> str:
    return tag_key(tag.lstrip("#")).rstrip("/")


def _property_clause(test: PropertyTest) -> tuple[str, list[Any]]:
    """Rule 4 of `notes.derived`: a value is text or a number; `None` is neither."""
    values = list(test.value) if test.op == "in" else [test.value]
    if test.op in ("before", "after"):
        column = "value_text" if isinstance(test.value, str) else "value_num"
        value = test.value if isinstance(test.value, str) else float(test.value)
        return f"{column} {'<' if test.op == 'before' else '>'} ?", [value]
    texts = [v for v in values if isinstance(v, str)]
    numbers = [float(v) for v in values if isinstance(v, bool | int | float)]
    parts: list[str] = []
    if texts:
        parts.append(f"value_text IN ({', '.join('?' * len(texts))})")
    if numbers:
        parts.append(f"value_num IN ({', '.join('?' * len(numbers))})")
    if any(v is None for v in values):
        parts.append("(value_text IS NULL AND value_num IS NULL)")
    return " OR ".join(parts) or "1 = 0", [*texts, *numbers]


def _filter_sql(filters: NoteFilter | None, workspace: str) -> tuple[str, list[Any]]:
    """SQL (` AND ...`) and parameters keeping the notes that pass `filters` (index lookups each)."""
    if filters is None:
        return "", []
    clauses: list[str] = []
    params: list[Any] = []
    for tag in filters.tags_all:
        clauses.append("n.id IN (SELECT note_row FROM note_tags WHERE workspace = ? AND tag = ?)")
        params += [workspace, _tag_key(tag)]
    if filters.tags_any:
        marks = ", ".join("?" * len(filters.tags_any))
        clauses.append(f"n.id IN (SELECT note_row FROM note_tags WHERE workspace = ? AND tag IN ({marks}))")
        params += [workspace, *(_tag_key(t) for t in filters.tags_any)]
    for test in filters.properties:
        condition, values = _property_clause(test)
        clauses.append(
            f"n.id IN (SELECT note_row FROM note_properties WHERE workspace = ? AND name = ? AND ({condition}))"
        )
        params += [workspace, test.name, *values]
    return with_time_and_folder(filters, clauses, params, modified="n.modified_ns", note_id="n.path")


_NOTES_FOR_IDF = 100
"""bm25's IDF, ln(1 + (N - n + 0.5) / (n + 0.5)), with shares for counts: N notes taken as this many."""
LEXEME_STATS_SECONDS = 300.0
"""How long PostgreSQL's word frequencies are kept before they are read again (Rule 2)."""


def _pg_share(shares: dict[str, float], stem: str) -> float:
    """A stem's share of notes as a prefix: the sum of the shares of the common stems it starts (0:
    none); `shares` by stem (`_lexeme_shares`), so those are one run."""
    lexemes = list(shares)
    at, total = bisect.bisect_left(lexemes, stem), 0.0
    while at < len(lexemes) and lexemes[at].startswith(stem):
        total += shares[lexemes[at]]
        at += 1
    return min(1.0, total)


def _pg_rank(weights: dict[str, float], floor: float, terms: Sequence[str]) -> tuple[str, str, list[Any]]:
    """Rule 2 on PostgreSQL: the rank expression (each term's `ts_rank`, weighted by how rare the term
    is, as bm25's IDF weighs it in the other stores), the columns of `q` it reads and their parameters. A term's share of notes is
    the planner's own statistics of `notes.search` (`pg_stats.most_common_elems`, kept by ANALYZE):
    the sum of the shares of the common stems it is a prefix of, else half the least common share."""
    pairs = search_rank_queries(terms)
    if len(pairs) == 1:  # one term: its weight changes no order
        return f"ts_rank({_PG_RANK_WEIGHTS}, d.search, q.r0)", ", ?::tsquery AS r0", [pairs[0][1]]
    parts, columns, params = [], [], []
    for i, (finds, ranks) in enumerate(pairs):
        stem = finds.split(":", 1)[0].split("<->")[-1].strip().strip("'")
        share = _pg_share(weights, stem) or floor / 2
        parts.append(f"q.w{i} * ts_rank({_PG_RANK_WEIGHTS}, d.search, q.r{i})")
        columns.append(f", ?::float8 AS w{i}, ?::tsquery AS r{i}")
        params += [math.log(1 + (1 - share + 0.5 / _NOTES_FOR_IDF) / (share + 0.5 / _NOTES_FOR_IDF)), ranks]
    return " + ".join(parts), "".join(columns), params


def _pg_budgeted(shares: dict[str, float], floor: float, notes: float, terms: Sequence[str]) -> list[str]:
    """`ranking` Rule 4 on PostgreSQL: each term's number of notes from the planner's statistics (its
    last word's share, a stem not listed taken as common as the least listed one)."""
    counts = [
        notes * (_pg_share(shares, words[-1]) or floor) if words else 0.0
        for words in map(stemmed_words, terms)
    ]
    return budgeted(terms, counts)


def _filter_exists(filters: NoteFilter | None) -> tuple[str, list[Any]]:
    """Rule 6: SQL (` AND ...`) testing one note `n` against `filters`, each an index probe by its row."""
    if filters is None:
        return "", []
    clauses: list[str] = []
    params: list[Any] = []
    for tag in filters.tags_all:
        clauses.append("EXISTS (SELECT 1 FROM note_tags g WHERE g.note_row = n.id AND g.tag = ?)")
        params.append(_tag_key(tag))
    if filters.tags_any:
        marks = ", ".join("?" * len(filters.tags_any))
        clauses.append(f"EXISTS (SELECT 1 FROM note_tags g WHERE g.note_row = n.id AND g.tag IN ({marks}))")
        params += [_tag_key(t) for t in filters.tags_any]
    for test in filters.properties:
        condition, values = _property_clause(test)
        clauses.append(
            f"EXISTS (SELECT 1 FROM note_properties p WHERE p.note_row = n.id AND p.name = ? AND ({condition}))"
        )
        params += [test.name, *values]
    return with_time_and_folder(filters, clauses, params, modified="n.modified_ns", note_id="n.path")


def _drivers(filters: NoteFilter | None, workspace: str) -> list[tuple[str, list[Any]]]:
    """Rule 6: the indexed filters that can drive a filters-only search, each as `note_row FROM ...`
    selecting the rows it keeps, with its parameters."""
    if filters is None:
        return []
    found: list[tuple[str, list[Any]]] = [
        ("note_row FROM note_tags WHERE workspace = ? AND tag = ?", [workspace, _tag_key(t)])
        for t in filters.tags_all
    ]
    if filters.tags_any:
        marks = ", ".join("?" * len(filters.tags_any))
        found.append(
            (
                f"note_row FROM note_tags WHERE workspace = ? AND tag IN ({marks})",
                [workspace, *(_tag_key(t) for t in filters.tags_any)],
            )
        )
    for test in filters.properties:
        condition, values = _property_clause(test)
        found.append(
            (
                f"note_row FROM note_properties WHERE workspace = ? AND name = ? AND ({condition})",
                [workspace, test.name, *values],
            )
        )
    folder = filters.folder.strip("/")
    if folder:
        within, bounds = prefix_range("path", folder)
        found.append((f"id AS note_row FROM notes WHERE workspace = ?{within}", [workspace, *bounds]))
    return found


class _Relinking:
    """The `Rewrite` of one linking note for a move (`links.relink` on its current content); `found`
    holds the links the last call rewrote."""

    def __init__(self, vault: links.VaultLookup, note_id: str, moved_from: str, moved_to: str) -> None:
        self._vault, self._note_id, self._from, self._to = vault, note_id, moved_from, moved_to
        self.found: list[links.Rewrite] = []

    def __call__(self, current: NoteContent) -> bytes:
        after_id = self._to if self._note_id == self._from else self._note_id
        text, self.found = links.relink(
            current.data.decode(), self._note_id, after_id, self._from, self._to, self._vault
        )
        return text.encode() if self.found else current.data


def _moved_ids(relinked: Sequence[Relinked], moved_from: str, moved_to: str) -> tuple[Relinked, ...]:
    """The relinked notes by their ids after the move."""
    return tuple(
        dataclasses.replace(r, note_id=moved_to) if r.note_id == moved_from else r
        for r in sorted(relinked, key=lambda r: r.note_id)
    )


def _state(note: Note) -> str:
    """A note's state as its record keeps it (`change_log` Rule 1): the row's identity."""
    return note.identity.fingerprint()


def _effect(note_id: str, effect: str, done: Rewritten) -> NoteEffect:
    """What a row's rewrite (and move) did, for the record."""
    return NoteEffect(note_id, effect, None, done.before.version, done.after.version, _state(done.after.note))


def _identity(row_id: int, version: int, modified_ns: int, size: int) -> NoteIdentity:
    return NoteIdentity((row_id, version), modified_ns, size)


def _inside(scope: WorkspaceScope, note_id: str) -> str:
    """A valid note id in the scope's reach, or `PathRejected` / `RightMissing` saying why not."""
    split_relative(note_id)
    return scope.check(note_id)


def _text(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ContentRefused(
            "nothing was written: a note kept in the database must be UTF-8 text; write it as text"
        ) from None
    if "\x00" in text:
        raise ContentRefused(
            "nothing was written: a note kept in the database cannot contain NUL characters (U+0000); "
            "remove them and write it again"
        )
    return text


def _json(value: object) -> dict[str, Any] | None:
    """A JSON column as read: PostgreSQL decodes jsonb, SQLite returns the text."""
    return json.loads(value) if isinstance(value, str) else value  # type: ignore[return-value]


def _json_object(value: Any) -> dict[str, Any] | None:
    """A `front_matter` column as a mapping: JSON text on SQLite, decoded already on PostgreSQL."""
    decoded = json.loads(value) if isinstance(value, str) else value
    return decoded if isinstance(decoded, dict) else None


def _note(row: Sequence[Any]) -> Note:
    path, title, row_id, version, modified_ns, size = row[:6]
    return Note(id=path, title=title, identity=_identity(row_id, version, modified_ns, size))


def _content(row: Sequence[Any]) -> NoteContent:
    """A `read` row: the body, then the listed columns."""
    body, *listed = row
    note = _note(listed)
    if not listed[6] or note.title is None:  # written since by another program, or large (Rule 3)
        note = Note(note.id, derived_title(note.id, body), note.identity)
    return NoteContent(note, body.encode())


def _like_contains(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class _Anchors(AnchorMemo):
    """The headings and block ids of link targets, parsed when a link's anchor is shown."""

    def __init__(self, store: SqlNoteStore, db: SqlSession, scope: WorkspaceScope) -> None:
        super().__init__()
        self._store, self._db = store, db
        self._scope = scope.whole_workspace()

    def _facts(self, target: str, identity: tuple[int, int, int, int] | None) -> AnchorFacts | None:
        try:
            body = self._store._read(self._db, self._scope, target).data.decode()
        except (FsError, RightMissing):  # gone, or where the principal may not read
            return None
        facts = parse_note(body, note_stem(target))
        return tuple(facts.headings), tuple(b.id for b in facts.block_ids)


class SqlNoteStore:
    """Notes as rows next to the ledger's tables, so a delete commits with its claim."""

    def __init__(
        self, ledger: Ledger, *, retention: Retention | None = None, changes: ChangeLog | None = None
    ) -> None:
        self._ledger = ledger
        self.history = HistoryLog(retention or Retention())
        self.changes = changes or ChangeLog()
        """Where each change's record goes (`change_log`): the ledger's database, the change's transaction."""
        self._held: dict[tuple[str, str], VectorIndex] = {}
        """Rule 7: each (workspace, model)'s vectors in memory."""
        self._held_lock = threading.Lock()
        self._lexemes: tuple[float, dict[str, float], float, float] | None = None
        self._duplicates = health.DuplicateCache()
        """`notes.health` Rule 4: the duplicate titles of each reach, kept until the workspace's rows change."""
        """Rule 2 (PostgreSQL): when they were read, each common stem's share of notes, the least share."""

    def close(self) -> None:
        """Nothing of its own: the ledger owns the connections."""

    def attachment_vault(self, scope: WorkspaceScope) -> AttachmentVault:
        raise no_attachments(scope)

    def watch_changes(self, feed: ChangeFeed, root_of: Callable[[str], WorkspaceRoot]) -> None:
        """Rows change by statements, which nothing watches: another instance's changes come through
        the PostgreSQL ledger's relay (`live` Rule 2)."""
        return None

    # --- reading (Rules 2 and 3) -------------------------------------------------------------

    def _query(
        self,
        scope: WorkspaceScope,
        run: Callable[[SqlSession, dict[str, str]], list[tuple[Any, ...]]],
        progress: ProgressSink | None = None,
        *,
        notes: bool = True,
    ) -> list[tuple[Any, ...]]:
        """`run`'s rows once every row of the workspace is derived (Rule 3); a row returned stale
        (written meanwhile by another program) sends the query round again. `notes`: the rows are
        listed notes (`_COLUMNS`), whose freshness can be checked."""
        workspace = str(scope.workspace)
        for attempt in range(1, _ATTEMPTS + 1):
            final = attempt == _ATTEMPTS
            with self._ledger.snapshot() as db:
                sql = _STATEMENTS[db.dialect]
                if db.dialect == "postgres" and not final:  # the probe rides with the query
                    probed = _Probed(db, workspace)
                    rows = run(probed, sql)
                    if not probed.stale() and (not notes or all(row[6] for row in rows)):
                        return rows
                elif final or not db.execute(sql["stale_probe"], (workspace,)):
                    rows = run(db, sql)
                    if final or not notes or all(row[6] for row in rows):
                        return rows
            self._derive_stale(workspace, progress)
        raise AssertionError("unreachable: the final attempt returns")

    def _derive_stale(self, workspace: str, progress: ProgressSink | None) -> None:
        done = 0
        while True:
            with self._ledger.critical_section() as txn:
                txn.lock_workspace(workspace)
                sql = _STATEMENTS[txn.dialect]
                batch = txn.execute(sql["stale_batch"], (workspace, DERIVE_BATCH))
                written = []
                for row_id, version, path, body, old_name_key in batch:
                    facts = derive(path, body)
                    if txn.execute(
                        sql["derive"], (*derived_values(txn.dialect, path, body, facts), row_id, version)
                    ):
                        if txn.dialect == "sqlite":
                            txn.execute(sql["indexed_now"], (row_id,))
                        written.append(_Written(row_id, path, body, facts, path, old_name_key or ""))
                self._store_facts(txn, workspace, written)
            done += len(batch)
            if done and progress is not None:
                progress(done, None, f"indexed {done} notes written by another program or left for later")
            if len(batch) < DERIVE_BATCH:
                if done:
                    logger.info(
                        "derived titles and words of rows written by another program or left for later",
                        extra={"rows": done},
                    )
                return

    def _current_links(self, workspace: str, progress: ProgressSink | None = None) -> None:
        """Rule 4: derive what other programs wrote, then resolve the recorded links again."""
        with self._ledger.snapshot() as db:  # one round trip for both probes
            ((stale, dirty),) = db.execute(_STATEMENTS[db.dialect]["links_probe"], (workspace, workspace))
            dirty = stale or dirty
        if stale:
            self._derive_stale(workspace, progress)
        if dirty:
            with self._ledger.critical_section() as txn:
                txn.lock_workspace(workspace)
                self._resolve_dirty(txn, workspace)

    def _resolve_dirty(self, txn: LedgerTxn, workspace: str) -> None:
        """Rule 4: resolve again the links recorded in `links_dirty`, a chunk of keys at a time (each
        chunk read, resolved and written before the next: no long pause inside the transaction, which
        PostgreSQL's `idle_in_transaction_session_timeout` would end)."""
        sql = _STATEMENTS[txn.dialect]
        taken = txn.execute(sql["dirty_take"], (workspace,))
        named = {key for key, row in taken if not row}
        every = sorted(named)
        own: dict[int, set[str]] = {}
        for key, row in taken:
            if row and key not in named:
                own.setdefault(int(row), set()).add(key)
        lookup = (
            _SqlLookup(txn, workspace)
            if len(every) + len(own) <= DERIVE_BATCH
            else _LoadedSqlLookup(txn, workspace)
        )

        def resolve(found: Sequence[Sequence[Any]]) -> None:
            updates = []
            for note_row, seq, path, style, target_row, via, source, _ in found:
                resolved = links.resolve_path(path, style, source, lookup)
                row = None if resolved.target is None else lookup.rows.get(resolved.target)
                if (row, resolved.via) != (target_row, via):
                    updates.append((row, resolved.via, note_row, seq))
            if txn.dialect == "sqlite" or len(updates) < 2:
                _execute_many(txn, sql["link_resolved"], updates)
            elif updates:  # one statement for the chunk's changes, not one per link
                txn.execute(sql["links_resolved"], [list(column) for column in zip(*updates, strict=True)])

        for chunk in _chunks(every):
            resolve(txn.execute(sql["links_named"].format(marks=_marks(chunk)), (workspace, *chunk)))
        for chunk in _chunks(sorted(own)):
            rows = txn.execute(sql["links_of"].format(marks=_marks(chunk)), chunk)
            resolve([r for r in rows if r[7] in own[r[0]]])

    def _store_facts(self, txn: LedgerTxn | SqlSession, workspace: str, written: Sequence[_Written]) -> None:
        """Rule 4: the rows' tags, aliases, properties and links, replacing what they had, and the
        name keys whose links must be resolved again."""
        sql = _STATEMENTS[txn.dialect]
        tags: list[tuple[object, ...]] = []
        aliases: list[tuple[object, ...]] = []
        properties: list[tuple[object, ...]] = []
        link_rows: list[tuple[object, ...]] = []
        dirty: set[tuple[str, str, int]] = set()
        for note in written:
            had: set[str] = set()
            if note.old_path is not None:
                for statement in ("facts_drop_tags", "facts_drop_links", "facts_drop_properties"):
                    txn.execute(sql[statement], (note.row_id,))
                had = {key for (key,) in txn.execute(sql["facts_drop_aliases"], (note.row_id,))}
            try:
                split_relative(note.path)
            except PathRejected:
                continue  # never listed, never linked to (Rule 3)
            facts = note.facts
            has = facts.aliases
            # a new, moved or renamed note: its names and aliases may find other links
            renamed = note.old_path != note.path or note.old_name_key not in (None, facts.name_key)
            changed = had | has | {facts.name_key, note.old_name_key or ""} if renamed else had ^ has
            dirty |= {(workspace, key, 0) for key in changed if key}
            tags += [(note.row_id, workspace, key, name) for key, name in facts.tags.items()]
            aliases += [(note.row_id, workspace, key) for key in has]
            properties += [(note.row_id, workspace, *values) for values in facts.properties]
            for seq, link in enumerate(facts.facts.links):
                key = links.name_key(link.path.rstrip("/")) if link.path else ""
                if link.path:
                    dirty.add((workspace, key, note.row_id))
                link_rows.append(
                    (
                        note.row_id,
                        seq,
                        workspace,
                        link.line,
                        link.style,
                        link.embed if txn.dialect == "postgres" else int(link.embed),
                        link.path,
                        link.anchor,
                        note.body[link.span[0] : link.span[1]],
                        links.context_line(note.body, link.span[0]),
                        key,
                        None if link.path else note.row_id,
                        None if link.path else "self",
                        note.path,
                    )
                )
        _insert_many(txn, sql["facts_tag"], tags)
        _insert_many(txn, sql["facts_alias"], aliases)
        _insert_many(txn, sql["facts_property"], properties)
        _insert_many(txn, sql["facts_link"], link_rows)
        if txn.dialect == "postgres" and len(dirty) > 1:  # one statement, not one per key
            txn.execute(sql["dirty_many"], [list(column) for column in zip(*sorted(dirty), strict=True)])
        else:
            _execute_many(txn, sql["dirty"], sorted(dirty))

    # --- what notes mean (Rule 7) ---------------------------------------------------------------

    def embed_pending(
        self, scope: WorkspaceScope, embedder: Embedder, *, progress: ProgressSink | None = None
    ) -> int:
        """Rule 7: the vectors of the rows written since theirs were, a batch at a time: read in a
        snapshot, embedded outside any transaction, written in one guarded by each row's version."""
        from notewarden.notes.vectors import embed_notes

        workspace = str(scope.workspace)
        self._use_model(workspace, embedder.name)
        with self._ledger.snapshot() as db:
            ((total,),) = db.execute(_STATEMENTS[db.dialect]["unembedded_count"], (workspace,))
        done, after = 0, 0
        while done < total:
            with self._ledger.snapshot() as db:
                sql = _STATEMENTS[db.dialect]
                batch = db.execute(sql["unembedded"], (workspace, after, EMBED_BATCH))
                if not batch:
                    break
                kept: dict[tuple[int, str], bytes] = {
                    (int(row), str(digest)): bytes(vector)
                    for row, digest, vector in db.execute(
                        sql["vectors_of_rows"].format(marks=_marks(batch)), [r[0] for r in batch]
                    )
                }
            vectors = embed_notes(embedder, [(row_id, path, body) for row_id, _, path, body in batch], kept)
            with self._ledger.critical_section() as txn:
                # Rule 7: one vector writer per workspace at a time, so that its rows' seq values
                # commit in order and `_vectors`' read of the rows after the last seq misses none
                # (PostgreSQL allocates a seq at INSERT, not at COMMIT; SQLite has one writer anyway)
                txn.lock_workspace(workspace)
                sql = _STATEMENTS[txn.dialect]
                rows: list[tuple[object, ...]] = []
                for row_id, version, _, _ in batch:
                    if not txn.execute(sql["embedded"], (row_id, version)):
                        continue  # written again meanwhile: the next pass takes it
                    txn.execute(sql["vectors_drop"], (row_id,))
                    rows += [(row_id, workspace, *row) for row in vectors[row_id]]
                _insert_many(txn, sql["vector_insert"], rows)
            done += len(batch)
            after = int(batch[-1][0])
            if progress is not None:
                progress(done, total, f"embedded {done} of {total} notes ({embedder.name})")
        if done >= SETTLE_AFTER_EMBEDDING:
            try:
                with self._ledger.snapshot() as db:  # autocommit
                    for statement in _AFTER_EMBEDDING[db.dialect]:
                        db.execute(statement)
            except LedgerUnavailable:  # past the statement timeout: autovacuum will come
                pass
        return done

    def _use_model(self, workspace: str, model: str) -> None:
        """Rule 7: a workspace's vectors are one model's; another model's are dropped and computed again."""
        with self._ledger.snapshot() as db:
            if db.execute(_STATEMENTS[db.dialect]["vector_model"], (workspace,)) == [(model,)]:
                return
        with self._ledger.critical_section() as txn:
            txn.lock_workspace(workspace)
            sql = _STATEMENTS[txn.dialect]
            if txn.execute(sql["vector_model"], (workspace,)) != [(model,)]:
                txn.execute(sql["vectors_reset"], (workspace,))
                txn.execute(sql["embedded_reset"], (workspace,))
                txn.execute(sql["vector_model_set"], (workspace, model))
        with self._held_lock:
            for key in [k for k in self._held if k[0] == workspace]:
                del self._held[key]

    def _vectors(self, workspace: str, embedder: Embedder) -> VectorIndex:
        """Rule 7: the workspace's vectors in memory, brought up to date by the rows after the last seen."""
        from notewarden.notes.vectors import ADD_BATCH, VectorIndex, VectorRow

        with self._held_lock:
            held = self._held.setdefault((workspace, embedder.name), VectorIndex(embedder.dimensions))

        def read_after(db: SqlSession, seq: int) -> Iterator[VectorRow]:
            """The rows after `seq`, a page of `ADD_BATCH` at a time (PostgreSQL's driver reads a
            statement's rows all at once)."""
            while True:
                rows = db.execute(_STATEMENTS[db.dialect]["vectors_after"], (workspace, seq, ADD_BATCH))
                for row_seq, path, section, vector in rows:
                    yield VectorRow(int(row_seq), str(path), str(section), bytes(vector))
                if len(rows) < ADD_BATCH:
                    return
                seq = int(rows[-1][0])

        with held.lock, self._ledger.snapshot() as db:
            held.add(read_after(db, held.last_seq))
        return held

    def nearest(
        self,
        scope: WorkspaceScope,
        embedder: Embedder,
        query: Vectors,
        *,
        limit: int,
        filters: NoteFilter | None = None,
        exclude: frozenset[str] = frozenset(),
    ) -> list[MeaningHit]:
        """Rule 7: the closest sections in memory, then their notes listed by SQL (scope, filters)."""
        workspace = str(scope.workspace)
        held = self._vectors(workspace, embedder)
        allowed = self._kept_by_filters(workspace, filters)
        regions = scope.regions

        def keep(note: str) -> bool:
            in_reach = "" in regions or any(note.startswith(r + "/") for r in regions)
            return note not in exclude and in_reach and (allowed is None or note in allowed)

        with held.lock:
            near = held.nearest(query, limit * _OVERSAMPLE, keep=keep)
        if not near:
            return []
        within, bounds = within_regions("n.path", regions)
        kept, kept_params = _filter_sql(filters, workspace)

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            statement = sql["listed"].format(marks=_marks(near), within=within + kept)
            return db.execute(statement, [workspace, *(n.note for n in near), *bounds, *kept_params])

        listed = {row[0]: row for row in self._query(scope, run)}
        shown = [n for n in near if n.note in listed][:limit]
        return [
            MeaningHit(
                _note(listed[n.note]), n.section, n.score, tuple(aliases_of(_json_object(listed[n.note][7])))
            )
            for n in shown
        ]

    def _kept_by_filters(self, workspace: str, filters: NoteFilter | None) -> set[str] | None:
        """The notes a selective filter keeps (Rule 6's drivers), or None: then each hit is tested."""
        drivers = _drivers(filters, workspace)
        if not drivers:
            return None
        with self._ledger.snapshot() as db:
            sql = _STATEMENTS[db.dialect]
            for driver, params in drivers:
                ((count,),) = db.execute(
                    sql["filter_count"].format(driver=driver), [*params, FILTER_FIRST_CAP]
                )
                if count < FILTER_FIRST_CAP:
                    return {str(p) for (p,) in db.execute(sql["kept_paths"].format(driver=driver), params)}
        return None

    def note_sections(
        self, scope: WorkspaceScope, embedder: Embedder, note_id: str
    ) -> list[tuple[str, Vectors]]:
        self.read_note(scope, note_id)  # NoteMissing, PathRejected, RightMissing: as a read
        held = self._vectors(str(scope.workspace), embedder)
        with held.lock:
            return held.vectors_of(note_id)

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
        within, bounds = within_regions("n.path", scope.regions)

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
        within, bounds = within_regions("n.path", scope.regions)
        folded = [w.casefold() for w in words]
        long, short = title_patterns(folded)

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            workspace = str(scope.workspace)
            if db.dialect == "sqlite":
                contains = " AND ".join("instr(k.value, ?) > 0" for _ in folded)
                if long:
                    match = " AND ".join(fts_phrase(json_escaped(w)) for w in long)
                    statement = sql["titled_trigram"]
                else:
                    match = " AND ".join(fts_phrase(gram_token(w)) for w in short)
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
        """Every term (or with `match="any"` some but not all) must start a word of the title, path or
        body, stemmed; best first (SQLite: bm25 with the title weighted 10 and the path 2, as the files
        index; PostgreSQL: `ts_rank` with the same weights, `derived` Rule 4), negated so that lower is
        better; ties by id; each with its snippet (`notes.snippets`) and aliases. Without terms: the
        notes passing `filters`, newest first (Rule 6)."""
        if not terms:
            return self._filtered(scope, after=after, limit=limit, filters=filters, progress=progress)
        workspace = str(scope.workspace)
        within, bounds = within_regions("n.path", scope.regions)
        kept, kept_params = _filter_sql(filters, workspace)
        start = after if after is not None else (float("-inf"), "")

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            if db.dialect == "sqlite":
                found = fts_match(db.execute, "notes_fts", terms, match)
                if found is None:
                    return []
                return db.execute(
                    sql["search"].format(within=within + kept),
                    [found, workspace, *bounds, *kept_params, *start, limit],
                )
            shares, floor, notes = self._lexeme_shares(db)
            query = search_query(
                terms, match, _pg_budgeted(shares, floor, notes, terms) if match == "rarer" else None
            )
            if query is None:
                return []
            rank, weights, rank_params = _pg_rank(shares, floor, terms)
            return db.execute(
                sql["search"].format(within=within + kept, rank=rank, weights=weights),
                [query, *rank_params, workspace, *bounds, *kept_params, *start, limit],
            )

        return [
            SearchHit(
                _note(row),
                (float(row[7]), row[0]),
                tuple(aliases_of(_json_object(row[9]))),
                row[8] or "",
                tuple(terms),
            )
            for row in self._query(scope, run, progress)
        ]

    def _lexeme_shares(self, db: SqlSession) -> tuple[dict[str, float], float, float]:
        """Rule 2: PostgreSQL's share of notes for each common stem, the least share listed and the
        table's number of rows (0 before the first ANALYZE); read again after `LEXEME_STATS_SECONDS`."""
        now = time.monotonic()
        if self._lexemes is None or now - self._lexemes[0] > LEXEME_STATS_SECONDS:
            rows = db.execute(_STATEMENTS["postgres"]["lexeme_stats"])
            shares: dict[str, float] = {}
            floor, notes = 1.0, 0.0
            if rows and rows[0][0]:
                lexemes, freqs = rows[0][0], rows[0][1]
                shares = dict(sorted((str(w), float(f)) for w, f in zip(lexemes, freqs, strict=False)))
                floor = float(freqs[len(lexemes)]) if len(freqs) > len(lexemes) else min(shares.values())
                notes = max(0.0, float(rows[0][2] or 0))
            self._lexemes = (now, shares, floor, notes)
        return self._lexemes[1], self._lexemes[2], self._lexemes[3]

    def _filtered(
        self,
        scope: WorkspaceScope,
        *,
        after: tuple[float, str] | None,
        limit: int,
        filters: NoteFilter | None,
        progress: ProgressSink | None,
    ) -> list[SearchHit]:
        """Rule 6: the notes passing `filters`, newest first, ties by id; the rank is -modified_ns."""
        workspace = str(scope.workspace)
        within, bounds = within_regions("n.path", scope.regions)
        tests, test_params = _filter_exists(filters)
        page, page_params = "", []
        if after is not None:
            newest = -int(after[0])
            page, page_params = (
                " AND n.modified_ns <= ? AND (n.modified_ns < ? OR n.path > ?)",
                [newest, newest, after[1]],
            )
        clause, params = within + tests + page, [*bounds, *test_params, *page_params]

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            for driver, driver_params in _drivers(filters, workspace):
                ((kept,),) = db.execute(
                    sql["filter_count"].format(driver=driver), [*driver_params, FILTER_FIRST_CAP]
                )
                if kept < FILTER_FIRST_CAP:  # few: read them all through their own index, then sort
                    return db.execute(
                        sql["filtered_few"].format(driver=driver, within=clause),
                        [*driver_params, workspace, *params, limit],
                    )
            # many pass (or only times): walk the time index, test each, stop at the page's end
            return db.execute(sql["filtered_walk"].format(within=clause), [workspace, *params, limit])

        return [SearchHit(_note(row), (row[7], row[0])) for row in self._query(scope, run, progress)]

    def notes_by_id(self, scope: WorkspaceScope, note_ids: Sequence[str]) -> list[Note]:
        return [self.read_note(scope, note_id).note for note_id in note_ids]

    # --- what notes know (Rule 4) -------------------------------------------------------------

    def tags(self, scope: WorkspaceScope, *, prefix: str, after: str | None, limit: int) -> list[TagCount]:
        """By folded tag: the running counts for a whole workspace, counted over a folder's notes."""
        low = max(tag_key(prefix), after + "\x01" if after is not None else "")  # text holds no NUL
        high = tag_key(prefix) + "\U0010ffff"
        within, bounds = within_regions("n.path", scope.regions)

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            if not within:
                return db.execute(sql["tags_counted"], (str(scope.workspace), low, high, limit))
            return db.execute(
                sql["tags_within"].format(within=within), (str(scope.workspace), low, high, *bounds, limit)
            )

        return [TagCount(str(name), int(count)) for name, count in self._query(scope, run, notes=False)]

    def health(
        self, scope: WorkspaceScope, *, kinds: frozenset[str], after: health.HealthKey | None, limit: int
    ) -> list[health.HealthItem]:
        """`notes.health`'s report from the derived columns and link rows (Rule 4), a page of it."""
        workspace = str(scope.workspace)
        self._current_links(workspace)
        within, bounds = within_regions("n.path", scope.regions)
        link_within, link_bounds = within_regions("l.source", scope.regions)
        page: list[health.HealthItem] = []

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            size = "length(CAST(n.body AS BLOB))" if db.dialect == "sqlite" else "octet_length(n.body)"
            title_size = (
                "length(CAST(n.title AS BLOB))" if db.dialect == "sqlite" else "octet_length(n.title)"
            )
            streams: list[list[health.HealthItem]] = []

            def notes_after(
                kind: str,
                condition: str,
                extra: str = "",
                start: tuple[str, int] | None = None,
                count: int = limit,
            ) -> list[tuple[Any, ...]]:
                last, seq = start or health.bound(kind, after)
                return db.execute(
                    f"SELECT n.path, n.title{extra} FROM notes n WHERE n.workspace = ? AND n.title IS NOT NULL "
                    f"AND {condition} AND n.path >= ? AND (n.path > ? OR 0 > ?) AND n.path <= ?{within} "
                    "ORDER BY n.path LIMIT ?",
                    (workspace, last, last, seq, health.ceiling(streams, limit), *bounds, count),
                )

            if kinds & {"broken_link", "broken_embed"}:
                last, seq = health.bound("broken_link", after)
                broken: list[health.HealthItem] = []
                while len(broken) < limit:
                    rows = db.execute(
                        "SELECT l.source, n.title, l.seq, l.line, l.written, l.embed, l.path FROM note_links l "
                        "JOIN notes n ON n.id = l.note_row WHERE l.workspace = ? AND l.target_row IS NULL "
                        f"AND l.path != '' AND l.source >= ? AND (l.source > ? OR l.seq > ?){link_within} "
                        "ORDER BY l.source, l.seq LIMIT ?",
                        (workspace, last, last, seq, *link_bounds, _HEALTH_BATCH),
                    )
                    for source, title, seq_, line, written, embed, path in rows:
                        kind = "broken_embed" if embed else "broken_link"
                        if kind in kinds and not health.is_attachment(path):
                            broken.append(health.HealthItem(kind, source, title, seq_, line, written, path))
                    if len(rows) < _HEALTH_BATCH:
                        break
                    last, seq = rows[-1][0], rows[-1][2]
                streams.append(broken[:limit])
            if "front_matter" in kinds:
                rows = notes_after("front_matter", "n.property_error IS NOT NULL")
                streams.append([health.HealthItem("front_matter", p, t) for p, t in rows])
            if "empty" in kinds:
                empty: list[health.HealthItem] = []
                start = health.bound("empty", after)
                while len(empty) < limit:  # the size test keeps candidates; `is_empty` decides
                    rows = notes_after(
                        "empty",
                        f"{size} <= {health.EMPTY_MAX_BYTES} AND {size} <= {title_size} + {health.EMPTY_SLACK}",
                        ", n.body",
                        start,
                        _HEALTH_BATCH,
                    )
                    empty += [
                        health.HealthItem("empty", p, t) for p, t, body in rows if health.is_empty(body)
                    ]
                    if len(rows) < _HEALTH_BATCH:
                        break
                    start = (rows[-1][0], 0)
                streams.append(empty[:limit])
            if "orphan" in kinds:
                rows = notes_after(
                    "orphan",
                    "NOT EXISTS (SELECT 1 FROM note_links o WHERE o.note_row = n.id AND o.path != '' "
                    "AND (o.target_row IS NULL OR o.target_row != n.id)) "
                    "AND NOT EXISTS (SELECT 1 FROM note_links i WHERE i.target_row = n.id AND i.note_row != n.id)",
                )
                streams.append([health.HealthItem("orphan", p, t) for p, t in rows])
            if kinds & {"duplicate_title", "near_duplicate_title"}:
                stamp = db.execute(  # three index look-ups (Rule 4 of `notes.health`)
                    "SELECT (SELECT max(n.modified_ns) FROM notes n WHERE n.workspace = ?), "
                    "(SELECT max(n.id) FROM notes n), "
                    "(SELECT max(g.gone_ns) FROM notes_gone g WHERE g.workspace = ?)",
                    (workspace, workspace),
                )
                streams.append(
                    self._duplicates.page(
                        (workspace, tuple(scope.regions)),
                        tuple(stamp[0]) if stamp else None,
                        lambda: db.execute(
                            "SELECT n.path, n.title FROM notes n WHERE n.workspace = ? AND n.title IS NOT NULL"
                            f"{within}",
                            (workspace, *bounds),
                        ),
                        after=after,
                        limit=limit,
                        kinds=kinds,
                    )
                )
            page[:] = health.merge(streams, limit)
            return []

        self._query(scope, run, notes=False)
        return page

    def links(
        self, scope: WorkspaceScope, note_id: str, *, limit: int, after: tuple[str, int] | None = None
    ) -> NoteLinks:
        workspace = str(scope.workspace)
        resume, resume_at = ("", ()) if after is None else (" AND (l.source, l.seq) > (?, ?)", after)
        _inside(scope, note_id)
        self._current_links(workspace)
        within, bounds = within_regions("l.source", scope.regions)
        with self._ledger.snapshot() as db:
            sql = _STATEMENTS[db.dialect]
            rows = db.execute(sql["note_facts"], (workspace, note_id))
            if not rows or rows[0][1] is None:
                raise NoteMissing(f"{note_id} is not a note of {scope.uri}")
            note, row_id = _note(rows[0]), rows[0][2]
            outgoing = db.execute(sql["links_out"], (row_id,))
            ((total,),) = db.execute(sql["backlinks_count"].format(within=within), (row_id, *bounds))
            back = db.execute(
                sql["backlinks"].format(within=within, resume=resume), (row_id, *bounds, *resume_at, limit)
            )
            tags = [str(name) for (name,) in db.execute(sql["note_tag_names"], (row_id,))]
            anchors = _Anchors(self, db, scope)
            views = [
                LinkView(
                    note.id,
                    note.title,
                    line,
                    written,
                    context,
                    bool(embed),
                    path,
                    anchor,
                    target,
                    via,
                    anchors.found(target, anchor, style) if anchor and target is not None else None,
                )
                for line, written, context, embed, path, anchor, target, via, style in outgoing
            ]
            backlinks = [
                LinkView(
                    source, title, line, written, context, bool(embed), path, anchor, note.id, None, seq=seq
                )
                for source, title, line, written, context, embed, path, anchor, _, seq in back
            ]
        return NoteLinks(
            note,
            views,
            backlinks,
            int(total),
            tags=tags,
            properties=_json(rows[0][7]),
            property_error=rows[0][8],
        )

    def recent(self, scope: WorkspaceScope, *, since_ns: int | None, limit: int) -> list[NoteChange]:
        """The latest change of each note (the version trigger keeps it), and the notes that went."""
        within, bounds = within_regions("n.path", scope.regions)
        workspace, since = str(scope.workspace), since_ns or 0

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            return db.execute(sql["recent"].format(within=within), (workspace, since, *bounds, limit))

        changes = [
            NoteChange(
                row[0],
                row[1],
                row[7] or "modified",
                int(row[4]),
                row[8] if row[7] == "moved" else None,
                identity=_note(row).identity,
            )
            for row in self._query(scope, run)
        ]
        with self._ledger.snapshot() as db:
            gone = db.execute(
                _STATEMENTS[db.dialect]["gone"].format(within=within), (workspace, since, *bounds, limit)
            )
            changes += [NoteChange(str(path), str(title), "deleted", int(at)) for path, title, at in gone]
            changes.sort(key=lambda c: (-c.at_ns, c.note_id))
            return attributed(changes[:limit], self.changes, db, workspace)

    def similar_titles(self, scope: WorkspaceScope, title: str) -> list[Note]:
        """As the files index: the same title words, or a difflib ratio of at least 0.9."""
        wanted = title_words(title)
        words = [w for w in wanted.split() if len(w) >= 3]
        if not words:
            return [n for n in self.find_titled(scope, wanted.split()) if title_words(n.title) == wanted]
        within, bounds = within_regions("n.path", scope.regions)

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            if db.dialect == "sqlite":
                match = " OR ".join(fts_phrase(json_escaped(w)) for w in words)
                return db.execute(
                    sql["similar"].format(within=within),
                    (match, str(scope.workspace), *bounds, _SIMILAR_SCAN),
                )
            likes = " OR ".join("n.title_keys LIKE ?" for _ in words)
            return db.execute(
                sql["similar"].format(within=within, likes=likes),
                (
                    str(scope.workspace),
                    *bounds,
                    *(_like_contains(json_escaped(w)) for w in words),
                    _SIMILAR_SCAN,
                ),
            )

        found = (_note(row) for row in self._query(scope, run))
        return [n for n in found if nearly_same(title_words(n.title), wanted)]

    def complete_ids(self, scope: WorkspaceScope, prefix: str, *, limit: int) -> tuple[list[str], bool]:
        """Ids starting with `prefix`, then ids whose file name does (folded): two index ranges."""
        within, bounds = within_regions("n.path", scope.regions)
        key = fold(prefix)

        def run(db: SqlSession, sql: dict[str, str]) -> list[tuple[Any, ...]]:
            workspace = str(scope.workspace)
            by_id = db.execute(
                sql["complete_ids"].format(within=within),
                (workspace, prefix, prefix + "\U0010ffff", *bounds, limit + 1),
            )
            by_name = db.execute(
                sql["complete_names"].format(within=within),
                (workspace, key, key + "\U0010ffff", *bounds, limit + 1),
            )
            return by_id + by_name

        ids = list(dict.fromkeys(row[0] for row in self._query(scope, run)))
        return ids[:limit], len(ids) > limit

    def read_note(self, scope: WorkspaceScope, note_id: str) -> NoteContent:
        with self._ledger.snapshot() as db:
            return self._read(db, scope, note_id)

    def read_notes(self, scope: WorkspaceScope, note_ids: Sequence[str]) -> dict[str, NoteContent]:
        """As `read_note` for each, in one statement (Rule 2)."""
        paths = []
        for note_id in note_ids:
            try:
                paths.append(_inside(scope, note_id))
            except FsError:
                continue
        found: dict[str, NoteContent] = {}
        with self._ledger.snapshot() as db:
            for chunk in _chunks(paths):
                statement = _STATEMENTS[db.dialect]["reads"].format(marks=_marks(chunk))
                rows = db.execute(statement, (str(scope.workspace), *chunk))
                found.update((row[1], _content(row)) for row in rows)
        return found

    def _read(self, db: SqlSession, scope: WorkspaceScope, note_id: str) -> NoteContent:
        rows = db.execute(_STATEMENTS[db.dialect]["read"], (str(scope.workspace), _inside(scope, note_id)))
        if not rows:
            raise NoteMissing(f"note {note_id!r} does not exist in {scope.uri}")
        return _content(rows[0])

    # --- writing -----------------------------------------------------------------------------

    def create_note(self, scope: WorkspaceScope, note_id: str, data: bytes, *, change: Change) -> NoteContent:
        body = _text(data)
        workspace = str(scope.workspace)
        facts = derive(_inside(scope, note_id), body)
        with self._ledger.critical_section() as txn:
            txn.lock_workspace(workspace)
            created = self._insert(txn, workspace, note_id, body, time.time_ns(), facts)
            if created is None:
                raise NoteExists(f"a note {note_id!r} already exists in {scope.uri}")
            row_id, version, modified_ns = created
            note = Note(note_id, facts.title, _identity(row_id, version, modified_ns, len(data)))
            content = NoteContent(note, data)
            effect = NoteEffect(note_id, "created", version_after=content.version, state=_state(note))
            self.changes.record(txn, workspace, change, [effect])
            fault_point("write_uncommitted")
        return content

    def _insert(
        self, txn: LedgerTxn, workspace: str, path: str, body: str, modified_ns: int, facts: Derived
    ) -> tuple[int, int, int] | None:
        """A new row with its facts (Rule 4); None when the path is taken."""
        created = txn.execute(
            _STATEMENTS[txn.dialect]["insert"],
            (workspace, path, body, modified_ns, *derived_values(txn.dialect, path, body, facts)),
        )
        if not created:
            return None
        ((row_id, version, stamp),) = created
        self._store_facts(txn, workspace, [_Written(row_id, path, body, facts)])
        return int(row_id), int(version), int(stamp)

    def rewrite_note(
        self, scope: WorkspaceScope, note_id: str, rewrite: Rewrite, *, change: Change
    ) -> Rewritten:
        workspace = str(scope.workspace)
        with self._ledger.critical_section() as txn:
            txn.lock_workspace(workspace)
            done = self._rewrite_row(txn, scope, note_id, rewrite, change)
            if done.saved is not None:  # bytes equal to the current ones change nothing: no record
                effect = NoteEffect(
                    note_id,
                    "rewritten",
                    None,
                    done.before.version,
                    done.after.version,
                    _state(done.after.note),
                )
                self.changes.record(txn, workspace, change, [effect])
                fault_point("write_uncommitted")
            return done

    def _rewrite_row(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        note_id: str,
        rewrite: Rewrite,
        change: Change,
        *,
        new_id: str | None = None,
    ) -> Rewritten:
        """Write `rewrite(current)` (and move it to `new_id`), saving the replaced content in history.
        The UPDATE is guarded by the row's version: another program's write in between makes it read
        the row again and rewrite that (at most `MERGE_ATTEMPTS` times, then `VersionConflict`). A
        large body that stays where it is is written alone, derived by the next query (Rule 3)."""
        workspace, target = str(scope.workspace), new_id or note_id
        sql = _STATEMENTS[txn.dialect]
        for _ in range(MERGE_ATTEMPTS):
            before = self._read(txn, scope, note_id)
            data = rewrite(before)
            if data == before.data and target == note_id:
                return Rewritten(before, before, None)
            body = _text(data)
            _, version = before.note.identity.key
            if target == note_id and max(len(before.data), len(data)) >= INDEX_LATER_BYTES:
                # Rule 3: derived and indexed by the next query of the workspace, not in this transaction
                title = derived_title(target, body)
                if txn.dialect == "sqlite":
                    txn.execute(sql["index_later"], (workspace, note_id, version))
                written = txn.execute(sql["write_later"], (body, workspace, note_id, version))
                if not written:
                    continue  # a writer outside notewarden: read it again
                identity = written[0]  # final: it sets what the version trigger would (sql_schema step 5)
            else:
                facts = derive(target, body)
                title = facts.title
                written = txn.execute(
                    sql["write"],
                    (
                        target,
                        body,
                        *derived_values(txn.dialect, target, body, facts),
                        workspace,
                        note_id,
                        version,
                    ),
                )
                if not written:
                    continue  # a writer outside notewarden: read it again
                row_id = int(written[0][0])
                if txn.dialect == "sqlite":
                    txn.execute(sql["indexed_now"], (row_id,))
                name = links.name_key(note_id)
                self._store_facts(txn, workspace, [_Written(row_id, target, body, facts, note_id, name)])
                # as the trigger left it (SQLite's RETURNING shows the row before its AFTER trigger)
                (identity,) = txn.execute(sql["identity"], (workspace, target))
            saved = None
            if data != before.data:
                saved = self.history.record(
                    txn,
                    workspace,
                    note_id,
                    version=before.version,
                    size=len(before.data),
                    change=change,
                    body=before.data.decode(),
                )
                self.history.prune(txn, workspace, note_id)
            row_id, version, modified_ns = identity
            after = Note(target, title, _identity(row_id, version, modified_ns, len(data)))
            return Rewritten(before, NoteContent(after, data), saved)
        raise VersionConflict(note_id, self._read(txn, scope, note_id).version)

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

    def purge_history(
        self, txn: LedgerTxn, scope: WorkspaceScope, entries: Sequence[HistoryEntry], *, change: Change
    ) -> int:
        self.history.delete(txn, str(scope.workspace), [e.version_id for e in entries])
        self.changes.record(txn, str(scope.workspace), change, versions_purged(entries))
        return len(entries)

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
        relink_attachments: bool = False,  # no files here, so no attachment links to rewrite
    ) -> Moved:
        """Rule 5: one transaction rewrites the linking notes and moves the note."""
        workspace = str(scope.workspace)
        whole = scope.whole_workspace()  # written only where the principal may write
        _inside(scope, note_id), _inside(scope, new_id)
        if relink:
            self._current_links(workspace, progress)
        if dry_run:
            with self._ledger.snapshot() as db:
                current = self._before_move(db, scope, note_id, new_id)
                vault = _SqlLookup(db, workspace)
                linking = self._linking_notes(db, workspace, current.note, new_id) if relink else []
                relinked = []
                for linking_id in linking:
                    after_id = new_id if linking_id == note_id else linking_id
                    text = self._read(db, scope.as_server(), linking_id).data.decode()
                    _, found = links.relink(text, linking_id, after_id, note_id, new_id, vault)
                    if found:
                        relinked.append(Relinked(linking_id, tuple(found)))
                refuse_unwritable_links(whole, [r.note_id for r in relinked], note_id)
                return Moved(current.note, _moved_ids(relinked, note_id, new_id))
        with self._ledger.critical_section() as txn:
            txn.lock_workspace(workspace)
            current = self._before_move(txn, scope, note_id, new_id)
            vault = _SqlLookup(txn, workspace)
            linking = self._linking_notes(txn, workspace, current.note, new_id) if relink else []
            self._refuse_unwritable(txn, whole, vault, linking, note_id, new_id)
            relinked, effects = [], []
            why = relink_change(change, note_id, new_id)
            for done, linking_id in enumerate(linking, 1):
                rewrite = _Relinking(vault, linking_id, note_id, new_id)
                if linking_id == note_id:
                    continue  # rewritten with its move, below
                rewritten = self._rewrite_row(txn, whole, linking_id, rewrite, why)
                if rewrite.found:
                    relinked.append(Relinked(linking_id, tuple(rewrite.found), rewritten.saved))
                if rewritten.saved is not None:
                    effects.append(_effect(linking_id, "relinked", rewritten))
                if done == len(linking) // 2:
                    fault_point("move_rewriting")
                if progress is not None and len(linking) > 1:
                    progress(done, len(linking), f"rewrote the links of {done} of {len(linking)} notes")
            own = _Relinking(vault, note_id, note_id, new_id) if relink else None
            moved = self._rewrite_row(txn, scope, note_id, own or (lambda now: now.data), why, new_id=new_id)
            self.history.follow_move(txn, workspace, note_id, new_id)
            if own is not None and own.found:
                relinked.append(Relinked(note_id, tuple(own.found), moved.saved))
            moved_effect = replace(_effect(new_id, "moved", moved), previous_id=note_id)
            self.changes.record(txn, workspace, change, [moved_effect, *effects])
            fault_point("write_uncommitted")
            return Moved(moved.after.note, _moved_ids(relinked, note_id, new_id))

    def _refuse_unwritable(
        self,
        db: SqlSession,
        whole: WorkspaceScope,
        vault: _SqlLookup,
        linking: Sequence[str],
        note_id: str,
        new_id: str,
    ) -> None:
        """`store.refuse_unwritable_links` for the linking notes out of the scope's reach whose links
        the move would in fact rewrite (read to find out; none in the common case)."""
        rewritten = []
        for linking_id in linking:
            if linking_id != note_id and not whole.contains(linking_id):
                text = self._read(db, whole.as_server(), linking_id).data.decode()
                if links.relink(text, linking_id, linking_id, note_id, new_id, vault)[1]:
                    rewritten.append(linking_id)
        refuse_unwritable_links(whole, rewritten, note_id)

    def _before_move(self, db: SqlSession, scope: WorkspaceScope, note_id: str, new_id: str) -> NoteContent:
        current = self._read(db, scope, note_id)
        if db.execute(_STATEMENTS[db.dialect]["exists"], (str(scope.workspace), new_id)):
            raise NoteExists(f"a note {new_id!r} already exists in {scope.uri}; nothing was moved")
        return current

    def _linking_notes(self, db: SqlSession, workspace: str, moved: Note, moved_to: str) -> list[str]:
        """The notes with a link whose target the move can change (as `NoteIndex.linking_notes`)."""
        sql = _STATEMENTS[db.dialect]
        row_id, _ = moved.identity.key
        keys = [links.name_key(moved_to), *(k for (k,) in db.execute(sql["aliases_of"], (row_id,)))]
        rows = db.execute(sql["linking"].format(marks=", ".join("?" * len(keys))), (row_id, workspace, *keys))
        return sorted({moved.id, *(str(r[0]) for r in rows)})

    # --- the trash: every change inside the ledger's transaction --------------------------------

    def move_to_trash(
        self, txn: LedgerTxn, scope: WorkspaceScope, candidates: Sequence[Note], *, change: Change
    ) -> list[TrashedNote]:
        who = (change.principal, change.confirmation_id)
        trashed = [self._trash(txn, scope, candidate, *who) for candidate in candidates]
        self.changes.record(
            txn, str(scope.workspace), change, [NoteEffect(t.note_id, "trashed") for t in trashed]
        )
        return trashed

    def _trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        candidate: Note,
        principal: str,
        confirmation_id: str | None,
    ) -> TrashedNote:
        note_id = _inside(scope, candidate.id)
        workspace = str(scope.workspace)
        sql = _STATEMENTS[txn.dialect]
        trash_id = new_trash_id()
        deleted_at = time.time()
        row_id, version = candidate.identity.key
        match = (workspace, note_id, row_id, version)
        row = (trash_id, candidate.title, principal, confirmation_id, deleted_at)
        if txn.dialect == "sqlite":
            txn.lock_workspace(workspace)  # the delete trigger updates the workspace's tag counts
            moved = txn.execute(sql["trash_move"], (*row, *match))
        else:  # the lock and the history's UPDATE are in the one statement
            moved = txn.execute(
                sql["trash_move"], (workspace_lock_key(workspace), *match, trash_id, workspace, note_id, *row)
            )
        if not moved:
            if txn.execute(sql["exists"], (workspace, note_id)):
                raise IdentityMismatch(f"note {note_id!r} was edited or replaced since it was shown")
            raise NoteMissing(f"note {note_id!r} no longer exists")
        if txn.dialect == "sqlite":
            txn.execute(sql["trash_move_done"], (row_id,))
            self.history.to_trash(txn, workspace, note_id, trash_id)
        ((modified_ns, size),) = moved
        identity = _identity(row_id, version, modified_ns, size)
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
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        trash_id: str,
        *,
        change: Change,
        new_id: str | None = None,
    ) -> Note:
        sql = _STATEMENTS[txn.dialect]
        rows = txn.execute(sql["trashed"], (trash_id, str(scope.workspace)))
        missing = NoteMissing(
            f"trash entry {trash_id!r} is not in the trash of {scope.uri}; notes_trash_list shows what is"
        )
        if not rows:
            raise missing
        try:
            scope.check(rows[0][0])  # where it was: the right to write there too (RightMissing)
        except PathRejected:
            raise missing from None
        path, body = rows[0]
        target = _inside(scope, new_id or path)
        txn.lock_workspace(str(scope.workspace))
        restored = self._insert(txn, str(scope.workspace), target, body, time.time_ns(), derive(target, body))
        if restored is None:
            raise NoteExists(f"a note {target!r} already exists in {scope.uri}; restore it under another id")
        txn.execute(sql["untrash"], (trash_id, str(scope.workspace)))
        self.history.from_trash(txn, str(scope.workspace), trash_id, target)
        restored_content = self._read(txn, scope, target)
        effect = NoteEffect(
            target,
            "restored",
            None if target == path else path,
            version_after=restored_content.version,
            state=_state(restored_content.note),
        )
        self.changes.record(txn, str(scope.workspace), change, [effect])
        fault_point("write_uncommitted")
        return restored_content.note

    def purge_trash(
        self,
        txn: LedgerTxn,
        scope: WorkspaceScope,
        entries: Sequence[TrashedNote],
        *,
        change: Change,
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
        self.changes.record(
            txn, str(scope.workspace), change, [NoteEffect(e.note_id, "purged") for e in entries]
        )
        return len(entries)

    # --- whole workspaces, for `notewarden import` and `export` (notewarden.transfer) -------------

    def add_rows(self, txn: LedgerTxn, workspace: str, rows: Sequence[tuple[str, str, int]]) -> list[bool]:
        """Insert notes as written elsewhere, (path, body, modified_ns) each, their times kept, with
        their facts (Rule 4); for each, False when its path is taken. On PostgreSQL the statements are
        pipelined (one round trip for the batch, not one per note)."""
        statement = _STATEMENTS[txn.dialect]["insert"]
        derived = [derive(p, b) for p, b, _ in rows]
        params = [
            (workspace, p, b, m, *derived_values(txn.dialect, p, b, d))
            for (p, b, m), d in zip(rows, derived, strict=True)
        ]
        if txn.dialect == "sqlite":
            ids = [txn.execute(statement, values) for values in params]
        else:  # the batch's tags counted once below, not by a trigger per row (a hot row updated per tag)
            txn.execute(_STATEMENTS["postgres"]["tags_counted_later"], ("on",))
            cursor = txn.connection.cursor()
            cursor.executemany(statement.replace("?", "%s").encode(), params, returning=True)
            ids = []
            while True:
                row = cursor.fetchone()
                ids.append([row] if row is not None else [])
                if not cursor.nextset():
                    break
        written = [
            _Written(int(found[0][0]), p, b, d)
            for found, (p, b, _), d in zip(ids, rows, derived, strict=True)
            if found
        ]
        self._store_facts(txn, workspace, written)
        if txn.dialect == "postgres":
            txn.execute(_STATEMENTS["postgres"]["tags_counted_later"], ("off",))
            for chunk in _chunks([w.row_id for w in written]):
                txn.execute(_STATEMENTS["postgres"]["tags_count_added"].format(marks=_marks(chunk)), chunk)
        return [bool(found) for found in ids]

    def settle_after_bulk_write(self, workspace: str) -> None:
        """After many rows at once: refresh the planner's statistics, resolve the rows' links (one read
        of the workspace's keys), merge the full-text indexes' pending entries, refresh the statistics
        again and vacuum `links_dirty`, so the next queries neither read a long pending list or dead
        entries nor plan with the tables' old sizes."""
        with self._ledger.critical_section() as txn:
            for statement in _BEFORE_RESOLVING[txn.dialect]:
                txn.execute(statement)
        with self._ledger.critical_section() as txn:
            txn.lock_workspace(workspace)
            self._resolve_dirty(txn, workspace)
        with self._ledger.critical_section() as txn:
            for statement in _SETTLE[txn.dialect]:
                txn.execute(statement)
        with self._ledger.snapshot() as db:  # autocommit
            for statement in _AFTER_RESOLVING[db.dialect]:
                db.execute(statement)

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

    def history_rows(self, workspace: str) -> list[tuple[tuple[Any, ...], str]]:
        """Every saved version of the workspace (`history.HISTORY_COLUMNS`, and the body), a page per
        snapshot."""
        found: list[tuple[tuple[Any, ...], str]] = []
        after = ""
        while True:
            with self._ledger.snapshot() as db:
                rows = db.execute(
                    f"SELECT {HISTORY_COLUMNS}, body FROM note_history WHERE workspace = ? AND version_id > ? "
                    "ORDER BY version_id LIMIT ?",
                    (workspace, after, DERIVE_BATCH),
                )
            found += [(tuple(row[:-1]), str(row[-1])) for row in rows]
            if len(rows) < DERIVE_BATCH:
                return found
            after = rows[-1][0]

    def recover(self, txn: LedgerTxn, workspace: FileUri, root: WorkspaceRoot | None) -> int:
        """Nothing to recover: every trash change commits or rolls back with its transaction."""
        return 0
