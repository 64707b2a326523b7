"""Where vectors are scored (issue 25): in the database, or in the server process.

    .venv/bin/python -m bench.vector_scoring                    # 3,000 30,000 300,000 sections
    .venv/bin/python -m bench.vector_scoring --sections 30000
    .venv/bin/python -m bench.vector_scoring --database-url 'postgresql://postgres@/postgres?host=DIR' \
        --label pgvector --real-notes 10000                     # a server with pgvector (below)

Without `pgvector` scoring in the database is plain SQL: each section's vector as `real[]` (256
values, unit length) and the dot product `sum(a * b)` over `unnest(vector, question)`, best 120
first (`limit 30 * OVERSAMPLE`, as `NoteStore.nearest` asks). In the process it is
`notes.vectors.VectorIndex.nearest` over the same vectors (int8 codes; sign-bit shortlist above
`EXACT_BELOW` sections). Random unit vectors, the same question for both; p50 of 20 (the database:
of 5 above 100,000 sections). Memory: what the in-process index holds once loaded (`tracemalloc`:
its arrays, and the note and section names, as three sections a note with names like `Note 12 >
Section 1`), and the peak while loading. Also says whether the database could use `pgvector`: the
check a store would make (`pg_available_extensions`, then `pg_extension` for the installed version).

When the database has `pgvector` installed, the same ranking is also measured with it
(`pgvector_scoring`): cosine distance over a `vector(256)` column, scanned exactly, then through an
HNSW index. Random vectors have no neighbourhoods, the worst case for any shortlist or graph, so
`--real-notes N` also compares both on real vectors: `bench.meaning`'s N generated notes embedded
by the bundled model (SQLite store), each question of both relevance sets ranked exactly (float32),
in process and by the HNSW index, and how many of the exact top 10 notes each keeps. This machine's
PostgreSQL has no `pgvector`; `pgserver` (PyPI: PostgreSQL 16 with `pgvector` 0.6.2 in its wheel)
gives one: `pgserver.get_server(DIR, cleanup_mode=None)`, then `CREATE EXTENSION vector`.

Prints a table; writes bench/results/vector_scoring[-LABEL].json with the machine's load per row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from bench.meaning import p50, print_rows
from bench.search_quality import DATABASE_URL
from notewarden.notes.vectors import VectorIndex, VectorRow, to_bytes

RESULTS = Path(__file__).resolve().parent / "results"
WANTED = 120
SECTIONS_ASKED = 3 * WANTED


def pgvector_status(db: psycopg.Connection[Any]) -> str:
    """What a store would check before using `pgvector`."""
    available = db.execute(
        "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if available is None:
        return "not available (pg_available_extensions has no 'vector')"
    installed = db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return f"installed {installed[0]}" if installed else f"available {available[0]}, not installed"


def measure(db: psycopg.Connection[Any], count: int, *, with_pgvector: bool) -> dict[str, Any]:
    rng = np.random.default_rng(25)
    vectors = rng.standard_normal((count, 256)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    question = vectors[7] + 0.5 * rng.standard_normal(256).astype(np.float32)
    question /= np.linalg.norm(question)
    db.execute("DROP TABLE IF EXISTS bench_vectors")
    db.execute("CREATE TABLE bench_vectors (id int PRIMARY KEY, note text NOT NULL, vector real[] NOT NULL)")
    with db.cursor().copy("COPY bench_vectors (id, note, vector) FROM STDIN") as copy:
        for i, row in enumerate(vectors):
            copy.write_row((i, f"n{i // 3}.md", row.tolist()))
    db.execute("ANALYZE bench_vectors")
    sql = (
        "SELECT note, max(score) AS best FROM (SELECT note, (SELECT sum(a * b) FROM unnest(vector, %s::real[]) "
        "AS t(a, b)) AS score FROM bench_vectors) s GROUP BY note ORDER BY best DESC LIMIT %s"
    )
    asked = question.tolist()
    in_db = p50(lambda: db.execute(sql, (asked, WANTED)).fetchall(), 20 if count <= 100_000 else 5)
    rows = [
        VectorRow(i + 1, f"n{i // 3}.md", f"Note {i // 3} > Section {i % 3}", to_bytes(v))
        for i, v in enumerate(vectors)
    ]
    tracemalloc.start()
    index = VectorIndex(256)
    index.add(rows)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del rows
    in_process = p50(lambda: index.nearest(question, WANTED), 20)
    exact = {r[0] for r in db.execute(sql, (asked, 10)).fetchall()}
    found = {n.note for n in index.nearest(question, 10)}
    row: dict[str, Any] = {
        "sections": count,
        "database_p50_ms": in_db,
        "process_p50_ms": in_process,
        "process_top10_overlap": len(exact & found),
    }
    if with_pgvector:
        row |= pgvector_scoring(db, question, exact, repeats=20 if count <= 100_000 else 5)
    db.execute("DROP TABLE bench_vectors")
    return row | {
        "index_arrays_mb": round(index.nbytes / 2**20, 1),
        "index_held_mb": round(held / 2**20, 1),
        "index_load_peak_mb": round(peak / 2**20, 1),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def pgvector_scoring(
    db: psycopg.Connection[Any], question: Any, exact: set[str], *, repeats: int
) -> dict[str, Any]:
    """The same ranking with `pgvector`: a `vector(256)` column, cosine distance, scanned exactly,
    then through an HNSW index (default build settings; `ef_search` raised to the sections asked,
    or the index returns at most its default 40). Sections first, then their notes, as the index
    cannot group: the best `SECTIONS_ASKED` sections, each note scored by its best."""
    db.execute("ALTER TABLE bench_vectors ADD COLUMN v vector(256)")
    db.execute("UPDATE bench_vectors SET v = vector::vector(256)")
    db.execute("VACUUM ANALYZE bench_vectors")
    asked = _pgvector_text(question)

    def ranked(limit: int) -> list[str]:
        return _pgvector_notes(db, "bench_vectors", asked, limit)

    scan_p50 = p50(lambda: ranked(WANTED), repeats)
    scan_top10 = set(ranked(10))
    built = _build_hnsw(db, "bench_vectors")
    sql, params = _pgvector_query("bench_vectors", asked, WANTED)
    plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql, params))
    assert "bench_vectors_hnsw" in plan, plan
    hnsw_p50 = p50(lambda: ranked(WANTED), repeats)
    ((size,),) = db.execute("SELECT pg_relation_size('bench_vectors_hnsw')").fetchall()
    return {
        "pgvector_scan_p50_ms": scan_p50,
        "pgvector_scan_top10_overlap": len(exact & scan_top10),
        "pgvector_hnsw_build_s": round(built, 1),
        "pgvector_hnsw_p50_ms": hnsw_p50,
        "pgvector_hnsw_top10_overlap": len(exact & set(ranked(10))),
        "pgvector_hnsw_mb": round(size / 2**20, 1),
    }


def real_agreement(db: psycopg.Connection[Any], count: int) -> dict[str, Any]:
    """Top-10 agreement with exact scoring on real vectors, in process and through `pgvector`'s HNSW
    index (see the module)."""
    from bench.meaning import write_notes
    from bench.search_quality import opened, questions
    from notewarden.embeddings import SearchSettings, open_search_mode
    from notewarden.notes.vectors import from_bytes
    from notewarden.scope.rights import Caller

    embedder = open_search_mode(SearchSettings()).embedder
    assert embedder is not None, "needs notewarden[semantic]"
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "notes"
        write_notes(source, count)
        with opened("sqlite", Path(tmp), "", source) as (services, uri):
            scope = services.grants.authorize_workspace(Caller("bench"), uri)
            services.store.embed_pending(scope, embedder)
            held = services.store._vectors(str(scope.workspace), embedder)
            with services.store._ledger.snapshot() as snap:
                rows = snap.execute(
                    "SELECT n.path, v.vector FROM note_vectors v JOIN notes n ON n.id = v.note_row"
                )
    notes = [str(r[0]) for r in rows]
    matrix = np.stack([from_bytes(bytes(r[1])).astype(np.float32).reshape(-1) for r in rows])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    asked = [q["q"] for which in ("keyword", "paraphrased") for q in questions(which)]
    queries = np.asarray(embedder.embed(asked), dtype=np.float32)

    def best_notes(order: Any, k: int = 10) -> set[str]:
        best: list[str] = []
        for i in order:
            if notes[i] not in best:
                best.append(notes[i])
                if len(best) == k:
                    break
        return set(best)

    truth = [best_notes(np.argsort(-(matrix @ q))) for q in queries]
    in_process = [len(t & {n.note for n in held.nearest(q, 10)}) for t, q in zip(truth, queries, strict=True)]
    db.execute("DROP TABLE IF EXISTS bench_real")
    db.execute("CREATE TABLE bench_real (id serial PRIMARY KEY, note text NOT NULL, v vector(256) NOT NULL)")
    with db.cursor().copy("COPY bench_real (note, v) FROM STDIN") as copy:
        for note, vector in zip(notes, matrix, strict=True):
            copy.write_row((note, _pgvector_text(vector)))
    built = _build_hnsw(db, "bench_real")
    hnsw, took = [], []
    for t, q in zip(truth, queries, strict=True):
        text = _pgvector_text(q)
        started = time.perf_counter()
        found = set(_pgvector_notes(db, "bench_real", text, 10))
        took.append((time.perf_counter() - started) * 1000)
        hnsw.append(len(t & found))
    db.execute("DROP TABLE bench_real")
    return {
        "notes": count,
        "sections": len(notes),
        "questions": len(asked),
        "process_top10_mean": round(statistics.mean(in_process), 2),
        "process_all10": sum(n == 10 for n in in_process),
        "pgvector_hnsw_top10_mean": round(statistics.mean(hnsw), 2),
        "pgvector_hnsw_all10": sum(n == 10 for n in hnsw),
        "pgvector_hnsw_p50_ms": round(statistics.median(took), 2),
        "pgvector_hnsw_build_s": round(built, 1),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def _pgvector_text(vector: Any) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _pgvector_query(table: str, vector: str, limit: int) -> tuple[str, tuple[object, ...]]:
    """The `limit` notes of `table` closest to `vector` by `pgvector`'s cosine distance: the best
    `SECTIONS_ASKED` sections (what an index can order), then each note by its best section."""
    sql = (
        f"SELECT note, max(1 - d) AS best FROM (SELECT note, v <=> %s::vector AS d FROM {table} "
        "ORDER BY v <=> %s::vector LIMIT %s) s GROUP BY note ORDER BY best DESC LIMIT %s"
    )
    return sql, (vector, vector, SECTIONS_ASKED, limit)


def _pgvector_notes(db: psycopg.Connection[Any], table: str, vector: str, limit: int) -> list[str]:
    return [r[0] for r in db.execute(*_pgvector_query(table, vector, limit)).fetchall()]


def _build_hnsw(db: psycopg.Connection[Any], table: str) -> float:
    """Seconds to build `table`'s HNSW index `<table>_hnsw` (default `m` and `ef_construction`),
    then `ef_search` raised to the sections asked (its default, 40, would cap every answer at 40)."""
    db.execute("SET maintenance_work_mem = '1GB'")
    started = time.perf_counter()
    db.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (v vector_cosine_ops)")
    built = time.perf_counter() - started
    db.execute(f"SET hnsw.ef_search = {SECTIONS_ASKED}")
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default="3000,30000,300000")
    parser.add_argument("--database-url", default=DATABASE_URL.rsplit("/", 1)[0] + "/postgres")
    parser.add_argument("--label", default="", help="results in vector_scoring-<label>.json")
    parser.add_argument("--real-notes", type=int, default=0, help="with pgvector: agreement on real vectors")
    args = parser.parse_args()
    rows = []
    with psycopg.connect(args.database_url, autocommit=True) as db:
        status = pgvector_status(db)
        print(f"pgvector: {status}")
        for count in (int(s) for s in args.sections.split(",")):
            rows.append(measure(db, count, with_pgvector=status.startswith("installed")))
            print(json.dumps(rows[-1]), flush=True)
        real = (
            real_agreement(db, args.real_notes)
            if args.real_notes and status.startswith("installed")
            else None
        )
    print_rows(rows)
    if real is not None:
        print_rows([real])
    RESULTS.mkdir(exist_ok=True)
    report = {
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["python -m bench.vector_scoring", *sys.argv[1:]]),
        "pgvector": status,
        "rows": rows,
        **({"real_vectors": real} if real is not None else {}),
    }
    (RESULTS / f"vector_scoring{'-' + args.label if args.label else ''}.json").write_text(
        json.dumps(report, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
