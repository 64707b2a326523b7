"""The lexical-only path keeps its speed (issue 25): `notes_search` by words and by a tag, with no
model, through this working tree and through the source of another revision, on the same notes.

    .venv/bin/python -m bench.lexical_speed                       # against dfad8f6, 10,000 notes
    .venv/bin/python -m bench.lexical_speed --before dfad8f6 --sizes 1000,10000 --stores files,sqlite

The notes are bench.meaning's (three sections each, 10% tagged `project/atlas`). Each tree runs in
its own process (`git archive` of the revision, its `src` and `bench` first on the path), one after
the other, alternating per store, with this tree's `[search] provider = "off"` (words only: what a
server without the `semantic` extra does). Per store and size: p50 of 50 searches (`limit` 10) for
each of bench.meaning's questions and for the tag, after one untimed search (the files index's
first build).

Prints a table; writes bench/results/lexical_speed.json with the machine's load per row.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.meaning import QUESTIONS, print_rows, write_notes

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"

CHILD = r"""
import json, shutil, statistics, sys, time
from pathlib import Path
tree, store, source, work = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
questions = json.loads(sys.argv[5])
sys.path[:0] = [tree + "/src", tree]
from bench.scale import call, open_at
from notewarden.app import default_tools
from notewarden.config import parse_config
from notewarden.services import open_services
from notewarden.tools.registry import ToolRegistry
import notewarden.config as config_module
words_only = {"search": {"provider": "off"}} if hasattr(config_module, "parse_search") else {}
folder = work / "notes"
shutil.copytree(source, folder)
if store == "files":
    config = parse_config({"state_dir": str(work / "state"), "workspace": [{"uri": f"file://{folder}"}],
        "principal": [{"id": "bench", "workspaces": [f"file://{folder}"]}], "stdio": {"principal": "bench"},
        **words_only})
    uri = f"file://{folder}"
else:
    from notewarden.transfer import import_folder
    uri = "file:///bench/lexical"
    (work / "state").mkdir(mode=0o700)
    config = parse_config({"state_dir": str(work / "state"), "workspace": [{"uri": uri}],
        "principal": [{"id": "bench", "workspaces": [uri]}], "stdio": {"principal": "bench"},
        "storage": {"notes": "sqlite", "ledger": "sqlite"}, **words_only})
    import_folder(config, uri, folder, state_dir=work / "state")
services = open_services(config)
registry = ToolRegistry(default_tools(services))
def p50(arguments):
    call(registry, "notes_search", arguments)
    samples = []
    for _ in range(50):
        started = time.perf_counter()
        result = call(registry, "notes_search", arguments)
        samples.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result
    return round(statistics.median(samples), 2)
out = {f"q{i}_p50_ms": p50({"workspaceUri": uri, "query": q, "limit": 10}) for i, q in enumerate(questions)}
out["tag10_p50_ms"] = p50({"workspaceUri": uri, "tags": {"any": ["project/atlas"]}, "limit": 10})
services.close()
print(json.dumps(out))
"""


def unpack(revision: str, into: Path) -> Path:
    """The source of `revision` (`git archive`: nothing in the working tree is touched)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", revision, "src", "bench"],
        capture_output=True,
        check=True,
    ).stdout
    tree = into / f"tree-{revision}"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    return tree


def run(tree: Path, store: str, source: Path, work: Path) -> dict[str, Any]:
    work.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree), store, str(source), str(work), json.dumps(QUESTIONS[:3])],
        capture_output=True,
        text=True,
        check=True,
        cwd=work,
    )
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="dfad8f6", help="the revision to compare with")
    parser.add_argument("--stores", default="files,sqlite")
    parser.add_argument("--sizes", default="10000")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": unpack(args.before, Path(tmp)), "now": REPO}
        for size in (int(s) for s in args.sizes.split(",")):
            source = Path(tmp) / f"notes-{size}"
            write_notes(source, size)
            for store in args.stores.split(","):
                for name, tree in trees.items():
                    figures = run(tree, store, source, Path(tmp) / f"{name}-{store}-{size}")
                    row = {"tree": name, "store": store, "notes": size, **figures}
                    rows.append(row | {"load_1min": round(os.getloadavg()[0], 2)})
                    print(json.dumps(rows[-1]), flush=True)
    print_rows(rows)
    RESULTS.mkdir(exist_ok=True)
    report = {
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": f"python -m bench.lexical_speed --before {args.before} --stores {args.stores} "
        f"--sizes {args.sizes}",
        "questions": QUESTIONS[:3],
        "rows": rows,
    }
    (RESULTS / "lexical_speed.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
