"""Speed and memory of search by meaning (issue 25), and of tag-only searches, at several sizes.

    .venv/bin/python -m bench.meaning                                  # files, sqlite, postgres; 1k 10k 100k
    .venv/bin/python -m bench.meaning --stores files --sizes 1000,10000
    .venv/bin/python -m bench.meaning --tags-only --rounds 3        # tag p50 only, no model needed

Each workspace has notes of three sections each (a heading and a paragraph of words drawn from the
relevance vault's vocabulary, so that no two vectors are alike), 10% of them tagged `project/atlas`
and 40% `area`. Per store and size, in process (the shipped `notes_search` tool, `limit` 10):

* `first embedding`: `embed_pending` over every note (the bundled model), wall and CPU seconds;
* `query p50`: by words only (`QUESTIONS[0]`) and fused with meaning (`QUESTIONS[2]`: after
  `QUESTIONS[1]` loaded the vectors), median of 50; lexical_speed compares words-only questions;
* `tag p50`: filters-only searches for the 10% and the 40% tag (median of 50); with `--tags-only`,
  only these (no embedding), each size's store opened `--rounds` times in turn (sizes interleaved),
  with the spread over rounds;
* `vectors MB`: the in-memory vector index (`VectorIndex.nbytes`) and the process's resident memory
  added when it was loaded (VmRSS).

Prints a table; writes bench/results/meaning.json (`meaning-tags.json` with `--tags-only`; `--label
L` adds `-L`, so a run for a note does not overwrite the last) with the machine's load before and
after.
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
    at_rest = time.time() - 3600 - count  # note i written at_rest + i: every one an hour or more ago
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


def measure(
    store: str, count: int, tmp: Path, database_url: str, *, tags_only: bool = False
) -> dict[str, Any]:
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
        if tags_only:
            return tag_p50s(registry, uri, store, count)
        hybrid = open_search_mode(SearchSettings())
        assert hybrid.embedder is not None, "needs notewarden[semantic]"
        services.search = SearchMode("lexical", "bench")

        def ask(question: str) -> None:
            result = call(registry, "notes_search", {"workspaceUri": uri, "query": question, "limit": 10})
            assert not result.is_error, result

        ask(QUESTIONS[0])  # the files index's first build
        words_p50 = p50(lambda: ask(QUESTIONS[0]))
        tags = tag_p50s(registry, uri, store, count)
        tag10, tag40 = tags["tag10_p50_ms"], tags["tag40_p50_ms"]
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


def tag_p50s(registry: Any, uri: str, store: str, count: int) -> dict[str, Any]:
    """Filters-only searches (a page of 10) for the tag on 10% and the one on 40% of the notes."""

    def tagged(tag: str) -> None:
        result = call(registry, "notes_search", {"workspaceUri": uri, "tags": {"any": [tag]}, "limit": 10})
        assert not result.is_error and len(result.structured_content["results"]) == 10

    tagged("project/atlas")  # the files index's first build
    return {
        "store": store,
        "notes": count,
        "tag10_p50_ms": p50(lambda: tagged("project/atlas")),
        "tag40_p50_ms": p50(lambda: tagged("area")),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def tags_only(
    stores: list[str], sizes: list[int], rounds: int, tmp: Path, database_url: str
) -> list[dict[str, Any]]:
    """Each store at each size `rounds` times, sizes interleaved; per store and size the median
    of the rounds' p50s and their range, and each size's ratio to the smallest."""
    samples: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for _ in range(rounds):
        for store in stores:
            for size in sizes:
                sample = measure(store, size, tmp, database_url, tags_only=True)
                print(json.dumps(sample), flush=True)
                samples.setdefault((store, size), []).append(sample)
    rows = []
    for (store, size), got in samples.items():
        row: dict[str, Any] = {"store": store, "notes": size}
        for key in ("tag10_p50_ms", "tag40_p50_ms"):
            values = [r[key] for r in got]
            row[key] = statistics.median(values)
            row[key.replace("_p50_ms", "_range_ms")] = f"{min(values)}-{max(values)}"
        smallest = samples[(store, sizes[0])]
        for key in ("tag10_p50_ms", "tag40_p50_ms"):
            row[key.replace("_p50_ms", f"_vs_{sizes[0]}")] = round(
                row[key] / statistics.median(r[key] for r in smallest), 2
            )
        row["load_1min"] = f"{min(r['load_1min'] for r in got)}-{max(r['load_1min'] for r in got)}"
        rows.append(row)
    return rows


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
    parser.add_argument("--tags-only", action="store_true", help="only the filters-only searches")
    parser.add_argument("--rounds", type=int, default=1, help="with --tags-only: rounds, sizes interleaved")
    parser.add_argument(
        "--label", default="", help="results in meaning[-tags]-<label>.json, not over the last"
    )
    args = parser.parse_args()
    stores, sizes = args.stores.split(","), [int(s) for s in args.sizes.split(",")]
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.tags_only:
            rows = tags_only(stores, sizes, args.rounds, Path(tmp), args.database_url)
        else:
            for store in stores:
                for size in sizes:
                    rows.append(measure(store, size, Path(tmp), args.database_url))
                    print(json.dumps(rows[-1]), flush=True)
    print_rows(rows)
    RESULTS.mkdir(exist_ok=True)
    command = f"python -m bench.meaning --stores {args.stores} --sizes {args.sizes}"
    if args.tags_only:
        command += f" --tags-only --rounds {args.rounds}"
    if args.label:
        command += f" --label {args.label}"
    report = {
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "command": command,
        "rows": rows,
    }
    name = "-".join(["meaning", *(["tags"] if args.tags_only else []), *([args.label] if args.label else [])])
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
