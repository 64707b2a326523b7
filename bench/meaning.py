"""Speed and memory of search by meaning (issue 25), and of tag-only searches, at several sizes.

    .venv/bin/python -m bench.meaning                                  # files, sqlite, postgres; 1k 10k 100k
    .venv/bin/python -m bench.meaning --stores files --sizes 1000,10000

Each workspace has notes of three sections each (a heading and a paragraph of words drawn from the
relevance vault's vocabulary, so that no two vectors are alike), 10% of them tagged `project/atlas`
and 40% `area`. Per store and size, in process (the shipped `notes_search` tool, `limit` 10):

* `first embedding`: `embed_pending` over every note (the bundled model), wall and CPU seconds;
* `query p50`: by words only (`QUESTIONS[0]`) and fused with meaning (`QUESTIONS[2]`: after
  `QUESTIONS[1]` loaded the vectors), median of 50; lexical_speed compares words-only questions;
* `tag p50`: filters-only searches for the 10% and the 40% tag (median of 50);
* `vectors MB`: the in-memory vector index (`VectorIndex.nbytes`) and the process's resident memory
  added when it was loaded (VmRSS).

Prints a table; writes bench/results/meaning.json with the machine's load before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.scale import call
from bench.search_quality import DATABASE_URL, VAULT

RESULTS = Path(__file__).resolve().parent / "results"
QUESTIONS = [
    "how do we roll back a failed billing release",
    "where is the spare key kept",
    "budget for the team offsite in summer",
    "fix a flat tyre on the bike",
    "what to pack for a rainy trip",
]


def vocabulary() -> list[str]:
    words = set()
    for path in VAULT.rglob("*.md"):
        words |= set(re.findall(r"[a-z]{3,}", path.read_text(encoding="utf-8").lower()))
    return sorted(words)


def write_notes(folder: Path, count: int, seed: int = 25) -> None:
    rng = random.Random(seed)
    words = vocabulary()
    at_rest = time.time() - 3600
    for i in range(count):
        tags = (["project/atlas"] if i % 10 == 0 else []) + (["area"] if i % 5 < 2 else [])
        head = f"---\ntags: [{', '.join(tags)}]\n---\n" if tags else ""
        sections = "".join(
            f"\n## {' '.join(rng.sample(words, 2)).capitalize()}\n\n{' '.join(rng.choices(words, k=40))}.\n"
            for _ in range(3)
        )
        path = folder / f"f{i % 100:02d}" / f"note {i:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"{head}# Note {i:06d} {' '.join(rng.sample(words, 3))}\n{sections}", encoding="utf-8"
        )
        os.utime(path, (at_rest + i, at_rest + i))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def p50(fn: Any, repeats: int = 50) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 2)


def measure(store: str, count: int, tmp: Path, database_url: str) -> dict[str, Any]:
    from contextlib import ExitStack

    from bench.search_quality import opened
    from notewarden.app import default_tools
    from notewarden.embeddings import SearchMode, SearchSettings, open_search_mode
    from notewarden.scope.rights import Caller
    from notewarden.tools.registry import ToolRegistry

    source = tmp / f"notes-{count}"
    if not source.exists():
        write_notes(source, count)
    where = tmp / f"{store}-{count}"
    where.mkdir()
    stack = ExitStack()
    services, uri = stack.enter_context(opened(store, where, database_url, source))
    try:
        registry = ToolRegistry(default_tools(services))
        hybrid = open_search_mode(SearchSettings())
        assert hybrid.embedder is not None, "needs notewarden[semantic]"
        services.search = SearchMode("lexical", "bench")

        def ask(question: str) -> None:
            result = call(registry, "notes_search", {"workspaceUri": uri, "query": question, "limit": 10})
            assert not result.is_error, result

        def tagged(tag: str) -> None:
            result = call(
                registry, "notes_search", {"workspaceUri": uri, "tags": {"any": [tag]}, "limit": 10}
            )
            assert not result.is_error and len(result.structured_content["results"]) == 10

        ask(QUESTIONS[0])  # the files index's first build
        words_p50 = p50(lambda: ask(QUESTIONS[0]))
        tag10, tag40 = p50(lambda: tagged("project/atlas")), p50(lambda: tagged("area"))
        scope = services.grants.authorize_workspace(Caller("bench"), uri)
        rss_before = rss_mb()
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        services.store.embed_pending(scope, hybrid.embedder)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        services.search = hybrid
        ask(QUESTIONS[1])  # loads the vectors into memory
        rss_after = rss_mb()
        held = services.store._meaning()._held if store == "files" else services.store._held
        vectors = next(iter(held.values()))
        fused_p50 = p50(lambda: ask(QUESTIONS[2]))
        return {
            "store": store,
            "notes": count,
            "first_embedding_s": round(wall, 1),
            "first_embedding_cpu_s": round(after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime, 1),
            "sections": vectors.sections,
            "words_p50_ms": words_p50,
            "fused_p50_ms": fused_p50,
            "tag10_p50_ms": tag10,
            "tag40_p50_ms": tag40,
            "vectors_mb": round(vectors.nbytes / 2**20, 1),
            "rss_added_mb": round(rss_after - rss_before, 1),
            "load_1min": round(os.getloadavg()[0], 2),
        }
    finally:
        stack.close()
        shutil.rmtree(where, ignore_errors=True)


def print_rows(rows: list[dict[str, Any]]) -> None:
    """The rows as a Markdown table, keys as columns."""
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="files,sqlite,postgres")
    parser.add_argument("--database-url", default=DATABASE_URL, help="created and dropped (PostgreSQL store)")
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for store in args.stores.split(","):
            for size in (int(s) for s in args.sizes.split(",")):
                rows.append(measure(store, size, Path(tmp), args.database_url))
                print(json.dumps(rows[-1]), flush=True)
    print_rows(rows)
    RESULTS.mkdir(exist_ok=True)
    report = {
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "command": "python -m bench.meaning --stores " + args.stores + " --sizes " + args.sizes,
        "rows": rows,
    }
    (RESULTS / "meaning.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
