"""Tags, links, backlinks, recent changes and question search at 1k, 10k and 100k notes, and the
index build with links against the build without them (issue 14), on the files store and on the
PostgreSQL store.

    .venv/bin/python -m bench.knowledge                 # 1000 10000 100000, both stores
    .venv/bin/python -m bench.knowledge 1000 10000      # a subset
    .venv/bin/python -m bench.knowledge --store files 1000
    .venv/bin/python -m bench.knowledge --label under-load 100000   # results/knowledge-under-load.*

The PostgreSQL store uses its own database (`--database-url`, default `DATABASE_URL` below), which
it drops and creates again for each build: never point it at a database you keep. Its "build" is
`notewarden import` of the same folder (rows, derived columns, tags, links and their resolution).

Goals: p50 at 100k notes at most 2x p50 at 1k for notes_tags, notes_links (a note's links and its
backlinks), notes_recent and a question; the index of 100k notes with links built in at most 2x
the time of the same notes without links.

For each size, two real folders of the same notes (`bench.scale`'s generator): plain, and with
links: each note links three others (`[[name]]`, `[[folder/name#Heading|text]]`, a relative
Markdown link), has two tags (one nested), a heading and a block id; one note in a hundred also
links the hub note. Each folder gets a fresh state directory (or a fresh database) and the shipped
tools, called in process. Measured over REPEATS warm calls after one warm-up: the first call (the index build),
notes_tags, notes_links of an ordinary note, of the hub (backlinks: 1% of the notes, 50 shown) and
of a note with 20 anchored links (each `[[…#Details]]` of another note: goal <= 5 ms p50 at any size),
notes_recent (20 newest), notes_search with a question whose words all appear in 8 notes
("how does the zeppelin fly": stop words dropped, "fly" stemmed), and with three common words
whose all-words hits are too few, so the ranked fallback ranks every note with any of them: that
one grows with the workspace by design (bm25 visits every match), shown for honesty.

Prints a table per store; writes bench/results/knowledge[-LABEL].json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.scale import PER_DIR, RESULTS, call, latency, open_at, timed, vocabulary, write_workspace
from notewarden.app import default_tools
from notewarden.config import Config, parse_config
from notewarden.services import Services, open_services
from notewarden.storage import upgrade_schema
from notewarden.tools.registry import ToolRegistry
from notewarden.transfer import import_folder

SIZES = (1000, 10_000, 100_000)
STORES = ("files", "postgres")
HUB = "d0000/n000000.md"
ANCHORED_NOTE = "anchored.md"
ANCHORED = 20
"""A note with 20 anchored links, each to another note's `## Details` (issue 26: <= 5 ms p50)."""
DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/nw_knowledge_bench"
PG_WORKSPACE = "file:///bench-knowledge/notes"


def add_links(folder: Path, count: int) -> None:
    """The generated notes, each given links, tags, a heading and a block id (module docstring)."""
    rng = random.Random(count + 1)
    for i in range(count):
        path = folder / f"d{i // PER_DIR:04}" / f"n{i:06}.md"
        a, b, c = (rng.randrange(count) for _ in range(3))
        extra = (
            f"\nSee [[n{a:06}]], [[d{b // PER_DIR:04}/n{b:06}#Details|that one]] and "
            f"[the other](../d{c // PER_DIR:04}/n{c:06}.md). #topic{i % 50} #area/sub{i % 7}\n"
            + ("Also [[n000000]].\n" if i % 100 == 1 else "")
            + f"\n## Details\n\nA detail. ^d{i}\n"
        )
        with path.open("a") as note:
            note.write(extra)
    anchored = [f"- [[d{t // PER_DIR:04}/n{t:06}#Details]] ^a{t}" for t in rng.sample(range(count), ANCHORED)]
    (folder / ANCHORED_NOTE).write_text("# Anchored\n\n" + "\n".join(anchored) + "\n")


def build_files(folder: Path, state: Path) -> tuple[float, Services, str]:
    """The files store's index build: the first call on a fresh state directory."""
    services = open_at(folder, state)
    registry = ToolRegistry(default_tools(services))
    ws = f"file://{folder}"
    seconds = timed(lambda: call(registry, "notes_tags", {"workspaceUri": ws})) / 1000
    return seconds, services, ws


def postgres_config(state: Path, database_url: str) -> Config:
    return parse_config(
        {
            "state_dir": str(state),
            "workspace": [{"uri": PG_WORKSPACE}],
            "principal": [{"id": "bench", "workspaces": [PG_WORKSPACE]}],
            "stdio": {"principal": "bench"},
            "storage": {"notes": "postgres", "ledger": "postgres", "database_url": database_url},
        }
    )


def build_postgres(folder: Path, state: Path, database_url: str) -> tuple[float, Services, str]:
    """The PostgreSQL store's build: `notewarden import` of the folder into a fresh database."""
    from bench.run_all import reset_database

    reset_database(database_url)
    config = postgres_config(state, database_url)
    upgrade_schema(config)
    started = time.perf_counter()
    import_folder(config, PG_WORKSPACE, folder, state_dir=state)
    seconds = time.perf_counter() - started
    return seconds, open_services(config), PG_WORKSPACE


def measure(count: int, base: Path, store: str, database_url: str) -> dict[str, Any]:
    plain, linked = base / f"plain-{count}", base / f"linked-{count}"
    if not linked.exists():
        write_workspace(plain, count)
        write_workspace(linked, count)
        add_links(linked, count)
    row: dict[str, Any] = {"store": store, "notes": count}

    def build(folder: Path, tag: str) -> tuple[float, Services, str]:
        state = base / f"state-{store}-{tag}-{count}"
        state.mkdir(parents=True)
        if store == "files":
            return build_files(folder, state)
        return build_postgres(folder, state, database_url)

    seconds, services, _ = build(plain, "plain")
    row["build_plain_s"] = round(seconds, 2)
    services.close()
    seconds, services, ws = build(linked, "linked")
    registry = ToolRegistry(default_tools(services))
    row["build_links_s"] = round(seconds, 2)
    time.sleep(2.1)  # let every row settle (index_refresh Rule 3) so warm calls measure the steady state
    words = vocabulary(random.Random(count))[:3]
    calls = {
        "tags": ("notes_tags", {"workspaceUri": ws}),
        "links": ("notes_links", {"workspaceUri": ws, "noteId": "d0005/n000512.md"}),
        "links_hub": ("notes_links", {"workspaceUri": ws, "noteId": HUB}),
        "links_anchored": ("notes_links", {"workspaceUri": ws, "noteId": ANCHORED_NOTE}),
        "recent": ("notes_recent", {"workspaceUri": ws}),
        "question": ("notes_search", {"workspaceUri": ws, "query": "how does the zeppelin fly"}),
        "fallback_common": ("notes_search", {"workspaceUri": ws, "query": " ".join(words)}),
    }
    for key, (name, arguments) in calls.items():
        result = call(registry, name, arguments)
        assert not result.is_error, result
        row[key] = latency(lambda name=name, arguments=arguments: call(registry, name, arguments))
    hub = call(registry, "notes_links", calls["links_hub"][1]).structured_content
    anchored = call(registry, "notes_links", calls["links_anchored"][1]).structured_content["links"]
    assert len(anchored) == ANCHORED and all(link.get("anchorFound") for link in anchored), anchored[:2]
    row["hub_backlinks"] = hub["backlinksTotal"]
    services.close()
    return row


KEYS = ("tags", "links", "links_hub", "links_anchored", "recent", "question", "fallback_common")


def table(rows: list[dict[str, Any]]) -> str:
    store = rows[0]["store"]
    head = "| notes | build (s) | build with links (s) | " + " | ".join(f"{k} (ms)" for k in KEYS) + " |"
    lines = [f"### {store} store\n", head, "|" + "---|" * (3 + len(KEYS))]
    for r in rows:
        cells = [f"{r['notes']:,}", str(r["build_plain_s"]), str(r["build_links_s"])]
        cells += [f"{r[k]['median_ms']:.2f} (p95 {r[k]['p95_ms']:.2f})" for k in KEYS]
        lines.append("| " + " | ".join(cells) + " |")
    first, last = rows[0], rows[-1]
    for key in KEYS:
        ratio = last[key]["median_ms"] / first[key]["median_ms"]
        goal = "grows with the matches by design" if key == "fallback_common" else "goal <= 2x"
        lines.append(
            f"\n{store} {key}: {last['notes']:,} notes / {first['notes']:,} notes = {ratio:.2f}x ({goal})"
        )
    for r in rows:
        lines.append(
            f"\n{store} build at {r['notes']:,}: with links / without = "
            f"{r['build_links_s'] / r['build_plain_s']:.2f}x "
            "(goal <= 2x)"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.knowledge")
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--store", choices=STORES, action="append", help="default: both")
    parser.add_argument("--database-url", default=DATABASE_URL, help="a database of its own (dropped)")
    parser.add_argument("--label", default="", help="results go to knowledge-LABEL.json/.md")
    args = parser.parse_args(argv)
    stores = args.store or list(STORES)
    rows: dict[str, list[dict[str, Any]]] = {store: [] for store in stores}
    load_before = os.getloadavg()  # the machine's load (1, 5, 15 min): p50s on a busy machine run high
    with tempfile.TemporaryDirectory(prefix="nw-bench-") as tmp:
        for count in args.sizes:
            for store in stores:
                rows[store].append(measure(count, Path(tmp), store, args.database_url))
                print(json.dumps(rows[store][-1]), flush=True)
            for kind in ("plain", "linked"):
                shutil.rmtree(Path(tmp) / f"{kind}-{count}")
    if "postgres" in stores:
        from bench.run_all import drop_database

        drop_database(args.database_url)
    text = "\n\n".join(table(found) for found in rows.values())
    print(text)
    RESULTS.mkdir(exist_ok=True)
    name = "knowledge" + (f"-{args.label}" if args.label else "")
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "label": args.label,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    (RESULTS / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    command = "`.venv/bin/python -m bench.knowledge " + " ".join(argv) + "`"
    load = "load average before {0[0]:.2f}, {0[1]:.2f}, {0[2]:.2f}; after {1[0]:.2f}, {1[1]:.2f}, {1[2]:.2f}".format(
        meta["load_before"], meta["load_after"]
    )
    (RESULTS / f"{name}.md").write_text(
        f"# bench/knowledge.py\n\n{command}\n\n{os.cpu_count()} CPUs; {load}\n\n{text}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
