"""Tags, links, backlinks, recent changes and question search at 1k, 10k and 100k notes, and the
index build with links against the build without them (issue 14).

    .venv/bin/python -m bench.knowledge                 # 1000 10000 100000
    .venv/bin/python -m bench.knowledge 1000 10000      # a subset

Goals: p50 at 100k notes at most 2x p50 at 1k for notes_tags, notes_links (a note's links and its
backlinks), notes_recent and a question; the index of 100k notes with links built in at most 2x
the time of the same notes without links.

For each size, two real folders of the same notes (`bench.scale`'s generator): plain, and with
links: each note links three others (`[[name]]`, `[[folder/name#Heading|text]]`, a relative
Markdown link), has two tags (one nested), a heading and a block id; one note in a hundred also
links the hub note. Each folder gets a fresh state directory and the shipped tools, called in
process. Measured over REPEATS warm calls after one warm-up: the first call (the index build),
notes_tags, notes_links of an ordinary note and of the hub (backlinks: 1% of the notes, 50 shown),
notes_recent (20 newest), notes_search with a question whose words all appear in 8 notes
("how does the zeppelin fly": stop words dropped, "fly" stemmed), and with three common words
whose all-words hits are too few, so the ranked fallback ranks every note with any of them: that
one grows with the workspace by design (bm25 visits every match), shown for honesty.

Prints a table; writes bench/results/knowledge.json and bench/results/knowledge.md.
"""

from __future__ import annotations

import json
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
from notewarden.tools.registry import ToolRegistry

SIZES = (1000, 10_000, 100_000)
HUB = "d0000/n000000.md"


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


def build(folder: Path, state: Path) -> tuple[float, Any, ToolRegistry]:
    services = open_at(folder, state)
    registry = ToolRegistry(default_tools(services))
    ws = f"file://{folder}"
    seconds = timed(lambda: call(registry, "notes_tags", {"workspaceUri": ws})) / 1000
    return seconds, services, registry


def measure(count: int, base: Path) -> dict[str, Any]:
    plain, linked = base / f"plain-{count}", base / f"linked-{count}"
    write_workspace(plain, count)
    write_workspace(linked, count)
    add_links(linked, count)
    row: dict[str, Any] = {"notes": count}
    seconds, services, _ = build(plain, base / f"state-plain-{count}")
    row["build_plain_s"] = round(seconds, 2)
    services.close()
    seconds, services, registry = build(linked, base / f"state-linked-{count}")
    row["build_links_s"] = round(seconds, 2)
    time.sleep(2.1)  # let every row settle (index Rule 4) so warm calls measure the steady state
    ws = f"file://{linked}"
    words = vocabulary(random.Random(count))[:3]
    calls = {
        "tags": ("notes_tags", {"workspaceUri": ws}),
        "links": ("notes_links", {"workspaceUri": ws, "noteId": "d0005/n000512.md"}),
        "links_hub": ("notes_links", {"workspaceUri": ws, "noteId": HUB}),
        "recent": ("notes_recent", {"workspaceUri": ws}),
        "question": ("notes_search", {"workspaceUri": ws, "query": "how does the zeppelin fly"}),
        "fallback_common": ("notes_search", {"workspaceUri": ws, "query": " ".join(words)}),
    }
    for key, (name, arguments) in calls.items():
        result = call(registry, name, arguments)
        assert not result.is_error, result
        row[key] = latency(lambda name=name, arguments=arguments: call(registry, name, arguments))
    hub = call(registry, "notes_links", calls["links_hub"][1]).structured_content
    row["hub_backlinks"] = hub["backlinksTotal"]
    services.close()
    for folder in (plain, linked):
        shutil.rmtree(folder)
    return row


KEYS = ("tags", "links", "links_hub", "recent", "question", "fallback_common")


def table(rows: list[dict[str, Any]]) -> str:
    head = "| notes | build (s) | build with links (s) | " + " | ".join(f"{k} (ms)" for k in KEYS) + " |"
    lines = [head, "|" + "---|" * (3 + len(KEYS))]
    for r in rows:
        cells = [f"{r['notes']:,}", str(r["build_plain_s"]), str(r["build_links_s"])]
        cells += [f"{r[k]['median_ms']:.2f} (p95 {r[k]['p95_ms']:.2f})" for k in KEYS]
        lines.append("| " + " | ".join(cells) + " |")
    first, last = rows[0], rows[-1]
    for key in KEYS:
        ratio = last[key]["median_ms"] / first[key]["median_ms"]
        goal = "grows with the matches by design" if key == "fallback_common" else "goal <= 2x"
        lines.append(f"\n{key}: {last['notes']:,} notes / {first['notes']:,} notes = {ratio:.2f}x ({goal})")
    for r in rows:
        lines.append(
            f"\nbuild at {r['notes']:,}: with links / without = {r['build_links_s'] / r['build_plain_s']:.2f}x "
            "(goal <= 2x)"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or list(SIZES)
    rows = []
    with tempfile.TemporaryDirectory(prefix="nw-bench-") as tmp:
        for count in sizes:
            rows.append(measure(count, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    text = table(rows)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine()}
    (RESULTS / "knowledge.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    command = "`.venv/bin/python -m bench.knowledge " + " ".join(map(str, sizes)) + "`"
    (RESULTS / "knowledge.md").write_text(f"# bench/knowledge.py\n\n{command}\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
