"""What notes mean, for the files index: section vectors computed, kept current and searched
(`index_refresh` Rule 10 says what the tables hold). Imported only when a model is configured.

Rule 1 (only what changed): before a search by meaning, the notes marked `embedded = 0` are cut into
pieces (`notes.sections`); a piece whose digest the note already has keeps its vector, the others
are embedded, and the note's rows are replaced in one write. A note written again meanwhile (its
identity changed) is left for the next pass. Embedding runs outside the index's lock, a batch of
`EMBED_BATCH` notes at a time, so other calls go on between batches; progress is told per batch.

Rule 2 (one model per workspace): `vector_models` names the model whose vectors a workspace holds;
another model (a new provider, another endpoint model) empties them and marks every note again.

Rule 3 (in memory): each (workspace, model) has a `vectors.VectorIndex`, loaded once and then
brought up to date before each use by the rows after the last `seq` it read. A note that leaves the
index leaves it at once (`IndexRefresh.vectors_gone`).

Rule 4 (nothing unchecked): a note found by meaning is offered only after the query that lists it
(scope, filters) and the on-disk check of `notes.index` Rule 1, like any other hit.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from notewarden.notes.index import NoteIndex, _filter_sql
from notewarden.notes.index_refresh import NOTE_COLUMNS, IndexedNote
from notewarden.notes.store import NoteFilter, ProgressSink, phased, within_regions
from notewarden.notes.vectors import Embedder, NearSection, VectorIndex, VectorRow, Vectors, embed_notes
from notewarden.scope.fsroot import WorkspaceRoot

__all__ = ["EMBED_BATCH", "IndexMeaning", "NearNote", "in_regions"]

EMBED_BATCH = 256
OVERSAMPLE = 4
"""Sections asked of the vector index per hit wanted, so that notes outside the filters can be dropped."""


@dataclass(frozen=True, slots=True)
class NearNote:
    note: IndexedNote
    section: str
    score: float


def in_regions(note_id: str, regions: Sequence[str]) -> bool:
    return "" in regions or any(note_id.startswith(r + "/") for r in regions)


class IndexMeaning:
    """Rules 1-4 over one `NoteIndex`."""

    def __init__(self, index: NoteIndex) -> None:
        self._index = index
        self._held: dict[tuple[str, str], VectorIndex] = {}
        self._held_lock = threading.Lock()
        index.vectors_gone = self._forget

    def _forget(self, workspace: str, note_id: str) -> None:
        for (held_workspace, _), vectors in list(self._held.items()):
            if held_workspace == workspace:
                vectors.forget(note_id)

    def embed_pending(
        self, workspace: str, root: WorkspaceRoot, embedder: Embedder, progress: ProgressSink | None = None
    ) -> int:
        """Rule 1: embed the notes written since their vectors were; how many notes were embedded."""
        index, db = self._index, self._index._db
        refreshing, progress = phased(progress)
        with index._lock:
            index.refresh(workspace, root, refreshing)
            self._use_model(workspace, embedder.name)
            (total,) = db.execute(
                "SELECT count(*) FROM notes WHERE workspace = ? AND embedded = 0", (workspace,)
            ).fetchone()
        done, after = 0, ""
        while done < total:
            with index._lock:
                batch = db.execute(
                    "SELECT n.id, n.rowid, n.ino, n.size, n.mtime_ns, t.body FROM notes n INDEXED BY notes_unembedded "
                    "JOIN notes_text t ON t.rowid = n.rowid WHERE n.workspace = ? AND n.embedded = 0 AND n.id > ? "
                    "ORDER BY n.id LIMIT ?",
                    (workspace, after, EMBED_BATCH),
                ).fetchall()
                if not batch:
                    break
                marks = ", ".join("?" * len(batch))
                kept: dict[tuple[str, str], bytes] = {
                    (note_id, digest): vector
                    for note_id, digest, vector in db.execute(
                        f"SELECT note_id, digest, vector FROM note_chunks WHERE workspace = ? AND note_id IN ({marks})",
                        (workspace, *(r[0] for r in batch)),
                    )
                }
            vectors = embed_notes(embedder, [(row[0], row[0], row[5] or "") for row in batch], kept)
            with index._lock, index._write():
                for note_id, rowid, ino, size, mtime_ns, _ in batch:
                    if not db.execute(
                        "UPDATE notes SET embedded = 1 WHERE rowid = ? AND id = ? AND ino = ? AND size = ? "
                        "AND mtime_ns = ? AND embedded = 0 RETURNING rowid",
                        (rowid, note_id, ino, size, mtime_ns),
                    ).fetchone():
                        continue  # written again meanwhile: the next pass takes it
                    db.execute(
                        "DELETE FROM note_chunks WHERE workspace = ? AND note_id = ?", (workspace, note_id)
                    )
                    db.executemany(
                        "INSERT INTO note_chunks (workspace, note_id, chunk, section, digest, vector) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        [(workspace, note_id, *row) for row in vectors[note_id]],
                    )
            done += len(batch)
            after = batch[-1][0]
            if progress is not None:
                progress(done, total, f"embedded {done} of {total} notes ({embedder.name})")
        return done

    def _use_model(self, workspace: str, model: str) -> None:
        """Rule 2 (under the index's lock)."""
        db = self._index._db
        row = db.execute("SELECT model FROM vector_models WHERE workspace = ?", (workspace,)).fetchone()
        if row is not None and row[0] == model:
            return
        with self._index._write():
            db.execute("DELETE FROM note_chunks WHERE workspace = ?", (workspace,))
            db.execute("UPDATE notes SET embedded = 0 WHERE workspace = ? AND embedded = 1", (workspace,))
            db.execute(
                "INSERT INTO vector_models (workspace, model) VALUES (?, ?) "
                "ON CONFLICT (workspace) DO UPDATE SET model = excluded.model",
                (workspace, model),
            )
        with self._held_lock:
            for key in [k for k in self._held if k[0] == workspace]:
                del self._held[key]

    def vectors(self, workspace: str, model: str, dimensions: int) -> VectorIndex:
        """Rule 3: the workspace's vectors in memory, current with the table."""
        with self._held_lock:
            held = self._held.setdefault((workspace, model), VectorIndex(dimensions))
        with self._index._lock, held.lock:
            rows = self._index._db.execute(
                "SELECT seq, note_id, section, vector FROM note_chunks WHERE workspace = ? AND seq > ? ORDER BY seq",
                (workspace, held.last_seq),
            )
            held.add(VectorRow(*r) for r in rows)
        return held

    def nearest(
        self,
        workspace: str,
        root: WorkspaceRoot,
        regions: Sequence[str],
        query: Vectors,
        embedder: Embedder,
        *,
        limit: int,
        filters: NoteFilter | None = None,
        exclude: frozenset[str] = frozenset(),
    ) -> list[NearNote]:
        """The notes whose best section is closest to `query`, in `regions` and passing `filters`,
        best first, each with that section (Rules 3 and 4)."""
        held = self.vectors(workspace, embedder.name, embedder.dimensions)
        allowed = self._allowed(workspace, filters)
        keep = lambda note: (  # noqa: E731
            note not in exclude and in_regions(note, regions) and (allowed is None or note in allowed)
        )
        with held.lock:
            near = held.nearest(query, limit * OVERSAMPLE, keep=keep)
        return self._listed(workspace, root, regions, near, filters, limit)

    def sections_of(self, workspace: str, note_id: str, embedder: Embedder) -> list[tuple[str, Vectors]]:
        held = self.vectors(workspace, embedder.name, embedder.dimensions)
        with held.lock:
            return held.vectors_of(note_id)

    def _allowed(self, workspace: str, filters: NoteFilter | None) -> set[str] | None:
        """The notes a selective tag filter keeps (`notes.index` Rule 3), or None (test each hit)."""
        index = self._index
        with index._lock:
            driver = index._selective_filter(workspace, filters)
            if driver is None:
                return None
            condition, params = driver
            return {
                r[0]
                for r in index._db.execute(f"SELECT g.note_id FROM note_tags g WHERE {condition}", params)
            }

    def _listed(
        self,
        workspace: str,
        root: WorkspaceRoot,
        regions: Sequence[str],
        near: Sequence[NearSection],
        filters: NoteFilter | None,
        limit: int,
    ) -> list[NearNote]:
        """The first `limit` of `near` that the store lists (scope, filters); only those are checked on
        disk (`notes.index` Rule 1), not every note asked of the vectors."""
        if not near:
            return []
        within, bounds = within_regions("n.id", regions)
        kept, kept_params = _filter_sql(filters)
        marks = ", ".join("?" * len(near))
        sql = f"SELECT {NOTE_COLUMNS} FROM notes n WHERE n.workspace = ? AND n.id IN ({marks}){within}{kept}"
        params: list[Any] = [workspace, *(n.note for n in near), *bounds, *kept_params]

        def run() -> list[IndexedNote]:
            found = {n.id: n for n in (IndexedNote.of(r) for r in self._index._db.execute(sql, params))}
            return [found[n.note] for n in near if n.note in found][:limit]

        listed = {n.id: n for n in self._index._checked(workspace, root, run, None)}
        return [NearNote(listed[n.note], n.section, n.score) for n in near if n.note in listed]
