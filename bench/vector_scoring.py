"""Where vectors are scored (issue 25): in the database, or in the server process.

    .venv/bin/python -m bench.vector_scoring                    # 3,000 30,000 300,000 sections
    .venv/bin/python -m bench.vector_scoring --sections 30000

PostgreSQL here has no `pgvector` (`pg_available_extensions` does not list `vector`), so scoring in
the database is plain SQL: each section's vector as `real[]` (256 values, unit length) and the dot
product `sum(a * b)` over `unnest(vector, question)`, best 120 first (`limit 30 * OVERSAMPLE`, as
`NoteStore.nearest` asks). In the process it is `notes.vectors.VectorIndex.nearest` over the same
vectors (int8 codes; sign-bit shortlist above `EXACT_BELOW` sections). Random unit vectors, the same
question for both; p50 of 20 (the database: of 5 above 100,000 sections). Memory: what the
in-process index holds once loaded (`tracemalloc`: its arrays, and the note and section names, as
three sections a note with names like `Note 12 > Section 1`), and the peak while loading. Also says whether the
database could use `pgvector`: the check a store would make (`pg_available_extensions`, then
`pg_extension` for the installed version).

Prints a table; writes bench/results/vector_scoring.json with the machine's load per row.
"""

from __future__ import annotations

import argparse
import json
import os
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


def pgvector_status(db: psycopg.Connection[Any]) -> str:
    """What a store would check before using `pgvector`."""
    available = db.execute(
        "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if available is None:
        return "not available (pg_available_extensions has no 'vector')"
    installed = db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return f"installed {installed[0]}" if installed else f"available {available[0]}, not installed"


def measure(db: psycopg.Connection[Any], count: int) -> dict[str, Any]:
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
    db.execute("DROP TABLE bench_vectors")
    return {
        "sections": count,
        "database_p50_ms": in_db,
        "process_p50_ms": in_process,
        "process_top10_overlap": len(exact & found),
        "index_arrays_mb": round(index.nbytes / 2**20, 1),
        "index_held_mb": round(held / 2**20, 1),
        "index_load_peak_mb": round(peak / 2**20, 1),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default="3000,30000,300000")
    parser.add_argument("--database-url", default=DATABASE_URL.rsplit("/", 1)[0] + "/postgres")
    args = parser.parse_args()
    rows = []
    with psycopg.connect(args.database_url, autocommit=True) as db:
        status = pgvector_status(db)
        print(f"pgvector: {status}")
        for count in (int(s) for s in args.sections.split(",")):
            rows.append(measure(db, count))
            print(json.dumps(rows[-1]), flush=True)
    print_rows(rows)
    RESULTS.mkdir(exist_ok=True)
    report = {
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": f"python -m bench.vector_scoring --sections {args.sections}",
        "pgvector": status,
        "rows": rows,
    }
    (RESULTS / "vector_scoring.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
