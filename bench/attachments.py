"""Resolving attachment links (issue 27) at 1k, 10k and 100k notes, each folder holding notes and one
attachment in ten notes: through the files index's `attachments` table (`index_refresh` Rule 11,
what `notes_links` and `notes_read {includeAttachments}` do now) and, for comparison, through the
walk they did before the index knew attachments (`walk`, what `attachments.list_attachments` was).

    .venv/bin/python -m bench.attachments              # 1000 10000 100000
    .venv/bin/python -m bench.attachments 1000 10000   # a subset

Measured warm (the folder in the page cache, the index built and settled), median and p95 of
`REPEATS` calls: `index`: one call's refresh (O(changes): nothing changed) and the resolution of
`LINKS` attachment links of one note (`attachments.AttachmentVault` over `NoteIndex.attachment_files`);
`walk`: one listing of the workspace's attachments (what each such call cost before). Also the first
build of the index (which now lists attachments too). Prints a table; writes
bench/results/attachments.json with the machine's load before and after.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from notewarden.notes.attachments import ATTACHMENT_SUFFIXES, AttachmentVault
from notewarden.notes.index import NoteIndex
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import FileUri

REPEATS = 9
NOTES_PER_FOLDER = 50
LINKS = 5
PNG = b"\x89PNG\r\n\x1a\n"
WS = "file:///bench-attachments"


def build(folder: Path, notes: int) -> int:
    folders = max(1, notes // NOTES_PER_FOLDER)
    for i in range(folders):
        (folder / f"f{i}").mkdir()
    for i in range(notes):
        (folder / f"f{i % folders}" / f"n{i}.md").write_text(f"# Note {i}\n\n![[a{i // 10}.png]]\n")
    for i in range(notes // 10):
        (folder / f"f{i % folders}" / f"a{i}.png").write_bytes(PNG)
    return folders


def walk(scope: WorkspaceScope) -> list[str]:
    """The workspace's attachments in the scope's reach, listed by a walk of every folder."""
    reach = scope.whole_workspace()
    return [e.path for e in scope.root.list_notes(ATTACHMENT_SUFFIXES) if reach.contains(e.path)]


def percentiles(run: Callable[[], object]) -> tuple[float, float]:
    run()  # warm
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return round(statistics.median(times), 3), round(times[int(0.95 * (len(times) - 1))], 3)


def measure(notes: int) -> dict[str, float | int]:
    folder = Path(tempfile.mkdtemp(prefix="nw-attachments-"))
    try:
        folders = build(folder, notes)
        links = [(f"a{i}.png", "wiki") for i in range(LINKS - 1)] + [(f"f{1 % folders}/a1.png", "markdown")]
        with WorkspaceRoot.open(str(folder)) as root:
            scope = WorkspaceScope("bench", FileUri.from_path(str(folder)), (), root)
            index = NoteIndex(folder.parent / f"{folder.name}.sqlite3")
            try:
                start = time.perf_counter()
                index.refresh(WS, root)
                build_s = time.perf_counter() - start
                time.sleep(2.1)  # every row settled (index_refresh Rule 3)
                index.refresh(WS, root)
                (found,) = index._db.execute("SELECT count(*) FROM attachments").fetchone()

                def resolve() -> list[str | None]:
                    vault = AttachmentVault(index.attachment_files(WS, root, ("",)))
                    return [vault.resolve(path, style, "f0/n0.md").target for path, style in links]

                assert None not in resolve()
                index_p50, index_p95 = percentiles(resolve)
            finally:
                index.close()
            walk_p50, walk_p95 = percentiles(lambda: walk(scope))
        return {
            "notes": notes,
            "folders": folders,
            "attachments": found,
            "build_s": round(build_s, 2),
            "links": LINKS,
            "index_p50_ms": index_p50,
            "index_p95_ms": index_p95,
            "walk_p50_ms": walk_p50,
            "walk_p95_ms": walk_p95,
        }
    finally:
        shutil.rmtree(folder)
        for leftover in folder.parent.glob(f"{folder.name}.sqlite3*"):
            leftover.unlink()


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10_000, 100_000]
    before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = [measure(n) for n in sizes]
    after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        f"| notes | folders | attachments | index build s | {LINKS} links via the index p50 / p95 ms "
        "| walk (before) p50 / p95 ms |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['notes']} | {r['folders']} | {r['attachments']} | {r['build_s']} | "
            f"{r['index_p50_ms']} / {r['index_p95_ms']} | {r['walk_p50_ms']} / {r['walk_p95_ms']} |"
        )
    print(f"load before: {before}\nload after: {after}")
    out = Path(__file__).parent / "results" / "attachments.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {"rows": rows, "uptime_before": before, "uptime_after": after, "cpus": os.cpu_count()}, indent=2
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
