"""Search quality on natural questions: hit@1, hit@3 and MRR@10, before and after (issue 14).

    .venv/bin/python -m bench.search_quality                  # this tree, and the tree of --before
    .venv/bin/python -m bench.search_quality --before main    # any git revision

The vault (`bench/relevance/vault`, 69 notes of a small team's and a person's life) and the
questions (`bench/relevance/questions.yaml`, each with the notes that answer it, judged by hand)
are ours. Every question goes, as written, through the shipped `notes_search` tool (in process,
`limit` 10) of a server opened on a copy of the vault. "before" runs this same script against the
notewarden source of the `--before` revision (`git archive`), in a subprocess; the default is the
commit this branch started from (strict all-words search, no stemming, no stop words).

Prints a table; writes bench/results/search_quality.json (every question's ranking included).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bench.scale import call, open_at

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VAULT = HERE / "relevance" / "vault"
QUESTIONS = HERE / "relevance" / "questions.yaml"
RESULTS = HERE / "results"
BEFORE = "b1c5a59"
"""The last commit of main this work started from."""


def rankings() -> dict[str, Any]:
    """Ask every question of the notewarden importable here; what each answered, in order."""
    questions = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "vault"
        shutil.copytree(VAULT, folder)
        services = open_at(folder, Path(tmp) / "state")
        try:
            from notewarden.app import default_tools
            from notewarden.tools.registry import ToolRegistry

            registry = ToolRegistry(default_tools(services))
            answers = {}
            for item in questions:
                result = call(
                    registry,
                    "notes_search",
                    {"workspaceUri": f"file://{folder}", "query": item["q"], "limit": 10},
                )
                found = result.structured_content if not result.is_error else {"results": []}
                answers[item["q"]] = {
                    "ids": [hit["id"] for hit in found["results"]],
                    "mode": found.get("mode", "all_words"),
                }
        finally:
            services.close()
    return answers


def score(answers: dict[str, Any]) -> dict[str, Any]:
    questions = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))
    hit1 = hit3 = mrr = empty = 0.0
    per_question = []
    for item in questions:
        ids = answers[item["q"]]["ids"]
        good = set(item["a"])
        rank = next((i + 1 for i, note in enumerate(ids[:10]) if note in good), None)
        hit1 += rank == 1
        hit3 += rank is not None and rank <= 3
        mrr += 1 / rank if rank else 0
        empty += not ids
        per_question.append(
            {"q": item["q"], "rank": rank, "top3": ids[:3], "mode": answers[item["q"]]["mode"]}
        )
    n = len(questions)
    return {
        "questions": n,
        "hit@1": round(hit1 / n, 3),
        "hit@3": round(hit3 / n, 3),
        "mrr@10": round(mrr / n, 3),
        "no_result": round(empty / n, 3),
        "per_question": per_question,
    }


def rankings_at(revision: str) -> dict[str, Any]:
    """`rankings()` with the notewarden of `revision` (this script and bench/ from this tree)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", revision, "src"], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": f"{tmp}/src{os.pathsep}{REPO}"}
        out = subprocess.run(
            [sys.executable, "-m", "bench.search_quality", "--emit"],
            check=True,
            capture_output=True,
            env=env,
            cwd=tmp,
            text=True,
        ).stdout
    return dict(json.loads(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help=f"git revision to compare with (default {BEFORE})")
    parser.add_argument("--emit", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.emit:
        print(json.dumps(rankings()))
        return
    after = score(rankings())
    before = score(rankings_at(args.before))
    print("| search | hit@1 | hit@3 | MRR@10 | questions with no result |")
    print("|---|---|---|---|---|")
    for name, row in ((f"before ({args.before})", before), ("after", after)):
        print(f"| {name} | {row['hit@1']} | {row['hit@3']} | {row['mrr@10']} | {row['no_result']} |")
    misses = [q for q in after["per_question"] if not q["rank"] or q["rank"] > 3]
    for miss in misses:
        print(f"  not in the top 3 after: {miss['q']!r} -> {miss['top3']}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "search_quality.json").write_text(
        json.dumps({"before_revision": args.before, "before": before, "after": after}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
