"""`notes_health` at 1k, 10k and 100k notes (issue 27: "fast enough to run on 100,000 notes from the
index alone"), on the files store and the SQL stores.

    .venv/bin/python -m bench.health                       # 1000 10000 100000, files and postgres
    .venv/bin/python -m bench.health 1000 10000            # a subset
    .venv/bin/python -m bench.health --store files --store sqlite 1000

The vault is `bench.knowledge`'s (each note links three others, tags, a heading, a block id; one in a
hundred links the hub), with known defects added at fixed rates: a broken link in one note in 100,
a broken embed in one in 200, front matter that does not parse in one in 250, an empty note in one
in 500, a note with another's title in one in 300 (and one with it in other case and punctuation in
one in 600), and an orphan note in one in 400. Attachments (judged by the files store only: the SQL
stores have no files): one note in ten embeds a picture of its folder by name, one in fifty links a
csv of its folder by a relative path (`../dNNNN/tN.csv`: resolved one by one, `notes.index` Rule 4);
one in 300 embeds a picture that does not exist, one in 700 links a csv that does not exist, and one
file in 450 notes is a PDF nothing links to. The PostgreSQL and SQLite stores get the folder by
`notewarden import` (a fresh database each time: never point `--database-url` at one you keep).

Measured, warm (after one call), p50 and p95 over `bench.scale.REPEATS` calls through the shipped
tool in process: the first page (all kinds, 100 items), the next page (its cursor), and the first
page of each kind alone (the costliest kinds read every note's row: duplicates group every title in
reach, orphans probe each note's links); then the whole report, page after page, once, checked
against the defects written (every one found, nothing else: the tests' rule, at scale).

Prints a table; writes bench/results/health[-LABEL].json and .md with the machine's load
(`uptime`) before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.knowledge import DATABASE_URL, add_links
from bench.scale import PER_DIR, RESULTS, call, latency, open_at, timed, write_workspace
from notewarden.app import default_tools
from notewarden.config import parse_config
from notewarden.notes.health import ATTACHMENT_KINDS, KINDS
from notewarden.services import Services, open_services
from notewarden.storage import upgrade_schema
from notewarden.tools.registry import ToolRegistry
from notewarden.transfer import import_folder

SIZES = (1000, 10_000, 100_000)
STORES = ("files", "sqlite", "postgres")
SQL_WORKSPACE = "file:///bench-health/notes"
PAGE = 100


def note_id(i: int) -> str:
    return f"d{i // PER_DIR:04}/n{i:06}.md"


def attachments(folder: Path, i: int, expected: set[tuple[str, str]]) -> str:
    """The attachments of note `i` (module docstring), written beside it; the text that links them."""
    here = note_id(i).rsplit("/", 1)[0]
    text = ""
    if i % 10 == 1:
        (folder / here / f"p{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        text += f"\n![[p{i}.png]]\n"
    if i % 50 == 4:
        (folder / here / f"t{i}.csv").write_text("a,b\n")
        text += f"\n[data](../{here}/t{i}.csv)\n"
    if i % 300 == 13:
        text += f"\n![[lost{i}.png]]\n"
        expected.add(("missing_attachment_embed", note_id(i)))
    if i % 700 == 17:
        text += f"\n[sheet](../nowhere/s{i}.csv)\n"
        expected.add(("missing_attachment_link", note_id(i)))
    if i % 450 == 19:
        (folder / here / f"u{i}.pdf").write_bytes(b"%PDF-1.4\n")
        expected.add(("unlinked_attachment", f"{here}/u{i}.pdf"))
    return text


def add_defects(folder: Path, count: int) -> set[tuple[str, str]]:
    """The known defects (module docstring), written into the vault; the (kind, note id) each gives."""
    expected: set[tuple[str, str]] = set()
    for i in range(2, count):
        path = folder / note_id(i)
        if i % 500 == 7:
            path.write_text("")
            expected.add(("empty", note_id(i)))
            continue
        text = path.read_text()
        if i % 250 == 3:
            text = "---\ntitle: [never closed\n---\n" + text
            expected.add(("front_matter", note_id(i)))
        if i % 100 == 5:
            text += f"\nSee [[Missing note {i}]].\n"
            expected.add(("broken_link", note_id(i)))
        if i % 200 == 9:
            text += f"\n![[Missing picture {i}]]\n"
            expected.add(("broken_embed", note_id(i)))
        text += attachments(folder, i, expected)
        path.write_text(text)
        title = text.split("\n", 1)[0].removeprefix("# ") if text.startswith("# ") else None
        if title is not None and i % 300 == 11:
            twin = f"twins/t{i:06}.md"
            (folder / "twins").mkdir(exist_ok=True)
            (folder / twin).write_text(f"# {title}\n\nThe same title as [[n{i:06}]].\n")
            expected |= {("duplicate_title", twin), ("duplicate_title", note_id(i))}
            if i % 600 == 11:
                near = f"twins/near{i:06}.md"
                (folder / near).write_text(f"# {title.upper()}!\n\nNearly: [[n{i:06}]].\n")
                expected |= {("near_duplicate_title", near), ("near_duplicate_title", twin)}
                expected.add(("near_duplicate_title", note_id(i)))
    opens = re.compile(r"\[\[(?:d\d{4}/)?n(\d{6})|\]\(\.\./d\d{4}/n(\d{6})\.md\)")
    linked = {  # the notes some link opens: an emptied note that none opens is an orphan too
        int(wiki or markdown)
        for path in folder.rglob("*.md")
        for wiki, markdown in opens.findall(path.read_text())
    }
    expected |= {("orphan", note_id(i)) for i in range(2, count) if i % 500 == 7 and i not in linked}
    for extra in folder.glob("d*/*.md"):  # `bench.scale`'s few notes that a search must find: no links
        if not extra.name.startswith("n"):
            expected.add(("orphan", extra.relative_to(folder).as_posix()))
    for i in range(0, count, 400):
        (folder / "orphans").mkdir(exist_ok=True)
        (folder / "orphans" / f"o{i:06}.md").write_text(
            f"# Orphan {i}\n\nNothing links here, and it links nowhere.\n"
        )
        expected.add(("orphan", f"orphans/o{i:06}.md"))
    return expected


def opened(store: str, folder: Path, state: Path, database_url: str) -> tuple[float, Services, str]:
    """The store built over `folder` (files: the first call's index build; SQL: `notewarden import`)."""
    if store == "files":
        services = open_at(folder, state, search={"provider": "off"})
        ws = f"file://{folder}"
        registry = ToolRegistry(default_tools(services))
        return timed(lambda: call(registry, "notes_tags", {"workspaceUri": ws})) / 1000, services, ws
    storage: dict[str, Any] = {"notes": store, "ledger": store}
    if store == "postgres":
        from bench.run_all import reset_database

        reset_database(database_url)
        storage["database_url"] = database_url
    config = parse_config(
        {
            "state_dir": str(state),
            "workspace": [{"uri": SQL_WORKSPACE}],
            "principal": [{"id": "bench", "workspaces": [SQL_WORKSPACE]}],
            "stdio": {"principal": "bench"},
            "storage": storage,
            "search": {"provider": "off"},
        }
    )
    if store == "postgres":
        upgrade_schema(config)
    started = time.perf_counter()
    import_folder(config, SQL_WORKSPACE, folder, state_dir=state)
    return time.perf_counter() - started, open_services(config), SQL_WORKSPACE


def whole_report(registry: ToolRegistry, ws: str) -> tuple[list[dict[str, Any]], int]:
    items, cursor, pages = [], None, 0
    while True:
        arguments = {"workspaceUri": ws, "limit": PAGE, **({"cursor": cursor} if cursor else {})}
        result = call(registry, "notes_health", arguments)
        assert not result.is_error, result
        pages += 1
        items += result.structured_content["items"]
        cursor = result.structured_content.get("nextCursor")
        if cursor is None:
            return items, pages


def measure(count: int, base: Path, store: str, database_url: str) -> dict[str, Any]:
    folder = base / f"vault-{count}"
    expected_file = base / f"expected-{count}.json"
    if not folder.exists():
        write_workspace(folder, count)
        add_links(folder, count)
        expected_file.write_text(json.dumps(sorted(add_defects(folder, count))))
    expected = {
        tuple(e)
        for e in json.loads(expected_file.read_text())
        if store == "files" or e[0] not in ATTACHMENT_KINDS  # the SQL stores have no files
    }
    state = base / f"state-{store}-{count}"
    state.mkdir(parents=True)
    build_s, services, ws = opened(store, folder, state, database_url)
    registry = ToolRegistry(default_tools(services))
    time.sleep(2.1)  # every row settled (index_refresh Rule 3): warm calls measure the steady state
    row: dict[str, Any] = {"store": store, "notes": count, "build_s": round(build_s, 2)}
    first = {"workspaceUri": ws, "limit": PAGE}
    cursor = call(registry, "notes_health", first).structured_content.get("nextCursor")
    calls: dict[str, dict[str, Any]] = {"first_page": first}
    if cursor is not None:  # fewer than a page of defects (1k notes): no next page
        calls["next_page"] = {**first, "cursor": cursor}
    calls |= {kind: {**first, "kinds": [kind]} for kind in KINDS}
    for key, arguments in calls.items():
        assert not call(registry, "notes_health", arguments).is_error
        row[key] = latency(lambda arguments=arguments: call(registry, "notes_health", arguments))
    started = time.perf_counter()
    items, pages = whole_report(registry, ws)
    row["whole_report_s"] = round(time.perf_counter() - started, 2)
    row["pages"], row["items"] = pages, len(items)
    found = {(i["kind"], i["id"]) for i in items}
    row["missed"] = sorted(expected - found)[:10]
    row["extra"] = sorted(found - expected)[:10]
    services.close()
    return row


KEYS = ("first_page", "next_page", *KINDS)


def table(rows: list[dict[str, Any]]) -> str:
    head = "| store | notes | build (s) | " + " | ".join(f"{k} p50 ms" for k in KEYS) + " | whole report |"
    lines = [head, "|" + "---|" * (4 + len(KEYS))]
    for r in rows:
        cells = [r["store"], f"{r['notes']:,}", str(r["build_s"])]
        cells += [f"{r[k]['median_ms']:.1f}" if k in r else "-" for k in KEYS]
        ok = (
            "all found, nothing else"
            if not r["missed"] and not r["extra"]
            else f"MISSED {r['missed']} EXTRA {r['extra']}"
        )
        cells.append(f"{r['items']} items, {r['pages']} pages, {r['whole_report_s']} s; {ok}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.health")
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--store", choices=STORES, action="append", help="default: files and postgres")
    parser.add_argument("--database-url", default=DATABASE_URL, help="a database of its own (dropped)")
    parser.add_argument("--label", default="", help="results go to health-LABEL.json/.md")
    args = parser.parse_args(argv)
    stores = args.store or ["files", "postgres"]
    rows: list[dict[str, Any]] = []
    load_before = uptime()
    with tempfile.TemporaryDirectory(prefix="nw-bench-health-") as tmp:
        for count in args.sizes:
            for store in stores:
                rows.append(measure(count, Path(tmp), store, args.database_url))
                print(json.dumps(rows[-1]), flush=True)
            shutil.rmtree(Path(tmp) / f"vault-{count}")
    if "postgres" in stores:
        from bench.run_all import drop_database

        drop_database(args.database_url)
    text = table(rows)
    print(text)
    load_after = uptime()
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "label": args.label,
        "uptime_before": load_before,
        "uptime_after": load_after,
        "command": ".venv/bin/python -m bench.health " + " ".join(argv),
    }
    RESULTS.mkdir(exist_ok=True)
    name = "health" + (f"-{args.label}" if args.label else "")
    (RESULTS / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(
        f"# bench/health.py\n\n`{meta['command']}`\n\n{os.cpu_count()} CPUs; uptime before: {load_before}; "
        f"after: {load_after}\n\n{text}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
