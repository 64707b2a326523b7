"""Search quality on natural questions: hit@1, hit@3 and MRR@10 by words, by meaning and fused, on
every store (issues 14 and 25).

    .venv/bin/python -m bench.search_quality                       # files, sqlite, postgres
    .venv/bin/python -m bench.search_quality --stores files        # one store
    .venv/bin/python -m bench.search_quality --before b1c5a59      # also the keyword set at a revision

The vault (`bench/relevance/vault`, 109 notes of a small team's and a person's life) and the two
question sets are ours, each question with the notes that answer it, judged by hand:

* `questions.yaml` (keyword): 58 questions as a person types them, mostly with the note's words;
* `paraphrased.yaml`: 82 questions phrased without the answer's words (no title word, no word that
  gives the note away), written before any ranking was tuned on them (issue 25).

Rankings: `words` is `notes_search` with no model (`[search] provider = "off"`); `fused` is
`notes_search` with the bundled model (words, names and meaning, `notes.ranking`); `meaning` is the
store's vector ranking alone (`NoteStore.nearest`, the best section of each note). Every question goes
through the shipped code in process (`limit` 10) on a copy of the vault: the files store as is, the
SQLite and PostgreSQL stores after `notewarden import` of it. "before" runs the keyword set through
the notewarden source of another revision (`git archive`), in a subprocess.

Prints a table; writes bench/results/search_quality.json (every question's ranking included).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from bench.scale import call, open_at

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VAULT = HERE / "relevance" / "vault"
SETS = {
    "keyword": HERE / "relevance" / "questions.yaml",
    "paraphrased": HERE / "relevance" / "paraphrased.yaml",
}
QUESTIONS = SETS["keyword"]
RESULTS = HERE / "results"
STORES = ("files", "sqlite", "postgres")
RANKINGS = ("words", "meaning", "fused")
DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/nw_search_quality_bench"
SQL_WORKSPACE = "file:///bench/relevance"


def questions(which: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load(SETS[which].read_text(encoding="utf-8")))


@contextmanager
def opened(
    store: str, tmp: Path, database_url: str, source: Path | None = None, search: dict[str, Any] | None = None
) -> Iterator[tuple[Any, str]]:
    """(Services, workspace URI) over a copy of `source` (the vault) in `store`; `search` is the
    `[search]` table (none: the default, the bundled model when installed)."""
    from notewarden.config import parse_config
    from notewarden.services import open_services
    from notewarden.transfer import import_folder

    folder = tmp / f"vault-{store}"
    shutil.copytree(VAULT if source is None else source, folder)
    if store == "files":
        services = open_at(folder, tmp / f"state-{store}", search=search)
        uri = f"file://{folder}"
    else:
        storage: dict[str, Any] = {"notes": store, "ledger": store}
        if store == "postgres":
            from bench.run_all import reset_database

            reset_database(database_url)
            storage["database_url"] = database_url
        config = parse_config(
            {
                "state_dir": str(tmp / f"state-{store}"),
                "workspace": [{"uri": SQL_WORKSPACE}],
                "principal": [{"id": "bench", "workspaces": [SQL_WORKSPACE]}],
                "stdio": {"principal": "bench"},
                "storage": storage,
                **({"search": search} if search is not None else {}),
            }
        )
        (tmp / f"state-{store}").mkdir(mode=0o700)
        if store == "postgres":
            from notewarden.storage import upgrade_schema

            upgrade_schema(config)
        import_folder(config, SQL_WORKSPACE, folder, state_dir=tmp / f"state-{store}")
        services = open_services(config)
        uri = SQL_WORKSPACE
    try:
        yield services, uri
    finally:
        services.close()


def rank_all(
    services: Any, uri: str, which: str, ranking: str, search: dict[str, Any] | None = None
) -> dict[str, list[str]]:
    """Every question of the set `which`, as `ranking` answers it: the ids, best first; `search` is
    the `[search]` table of the model to ask (none: the bundled model)."""
    from notewarden.app import default_tools
    from notewarden.config import parse_search
    from notewarden.embeddings import SearchMode, open_search_mode
    from notewarden.scope.rights import Caller
    from notewarden.tools.registry import ToolRegistry

    hybrid = open_search_mode(parse_search(search or {}))
    answers: dict[str, list[str]] = {}
    if ranking == "meaning":
        if hybrid.embedder is None:
            return {}
        scope = services.grants.authorize_workspace(Caller("bench"), uri)
        services.store.embed_pending(scope, hybrid.embedder)
        for item in questions(which):
            query = hybrid.embedder.embed([item["q"]])[0]
            answers[item["q"]] = [
                h.note.id for h in services.store.nearest(scope, hybrid.embedder, query, limit=10)
            ]
        return answers
    services.search = hybrid if ranking == "fused" else SearchMode("lexical", "bench: words only")
    if ranking == "fused" and hybrid.embedder is None:
        return {}
    registry = ToolRegistry(default_tools(services))
    for item in questions(which):
        result = call(registry, "notes_search", {"workspaceUri": uri, "query": item["q"], "limit": 10})
        found = result.structured_content if not result.is_error else {"results": []}
        answers[item["q"]] = [hit["id"] for hit in found["results"]]
    return answers


def score(answers: dict[str, list[str]], which: str) -> dict[str, Any]:
    hit1 = hit3 = mrr = 0.0
    per_question = []
    asked = questions(which)
    for item in asked:
        ids = answers.get(item["q"], [])
        good = set(item["a"])
        rank = next((i + 1 for i, note in enumerate(ids[:10]) if note in good), None)
        hit1 += rank == 1
        hit3 += rank is not None and rank <= 3
        mrr += 1 / rank if rank else 0
        per_question.append({"q": item["q"], "rank": rank, "top3": ids[:3]})
    n = len(asked)
    return {
        "questions": n,
        "hit@1": round(hit1 / n, 3),
        "hit@3": round(hit3 / n, 3),
        "mrr@10": round(mrr / n, 3),
        "hits@3": int(hit3),
        "per_question": per_question,
    }


def rankings() -> dict[str, Any]:
    """The keyword set through this tree's notes_search on the files store, for `--emit` (before/after)."""
    with tempfile.TemporaryDirectory() as tmp, opened("files", Path(tmp), "") as (services, uri):
        from notewarden.app import default_tools
        from notewarden.tools.registry import ToolRegistry

        registry = ToolRegistry(default_tools(services))
        answers = {}
        for item in questions("keyword"):
            result = call(registry, "notes_search", {"workspaceUri": uri, "query": item["q"], "limit": 10})
            found = result.structured_content if not result.is_error else {"results": []}
            answers[item["q"]] = [hit["id"] for hit in found["results"]]
        return answers


def rankings_at(revision: str) -> dict[str, Any]:
    """The keyword set with the notewarden of `revision` (this script and bench/ from this tree)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", revision, "src"], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": f"{tmp}/src{os.pathsep}{REPO}"}
        out = subprocess.run(
            [sys.executable, "-c", _OLD_EMIT],
            check=True,
            capture_output=True,
            env=env,
            cwd=tmp,
            text=True,
        ).stdout
    found = json.loads(out)
    return {q: v["ids"] if isinstance(v, dict) else v for q, v in found.items()}


_OLD_EMIT = """
import json, shutil, tempfile
from pathlib import Path
import yaml
from bench.scale import call, open_at
from bench.search_quality import VAULT, SETS
from notewarden.app import default_tools
from notewarden.tools.registry import ToolRegistry
with tempfile.TemporaryDirectory() as tmp:
    folder = Path(tmp) / "vault"
    shutil.copytree(VAULT, folder)
    services = open_at(folder, Path(tmp) / "state")
    registry = ToolRegistry(default_tools(services))
    out = {}
    for item in yaml.safe_load(SETS["keyword"].read_text()):
        r = call(registry, "notes_search", {"workspaceUri": f"file://{folder}", "query": item["q"], "limit": 10})
        out[item["q"]] = [h["id"] for h in (r.structured_content or {"results": []})["results"]] if not r.is_error else []
    services.close()
print(json.dumps(out))
"""


def measure(
    stores: tuple[str, ...], database_url: str, search: dict[str, Any] | None = None
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for store in stores:
            with opened(store, Path(tmp), database_url, search=search) as (services, uri):
                for which in SETS:
                    for ranking in RANKINGS:
                        started = time.perf_counter()
                        answers = rank_all(services, uri, which, ranking, search)
                        if answers:
                            row = score(answers, which)
                            row["seconds"] = round(time.perf_counter() - started, 2)
                            results.setdefault(store, {}).setdefault(which, {})[ranking] = row
    return results


def table(results: dict[str, Any], each: Callable[[dict[str, Any]], str]) -> str:
    lines = ["| store | set | ranking | hit@1 | hit@3 | MRR@10 |", "|---|---|---|---:|---:|---:|"]
    for store, sets in results.items():
        for which, rows in sets.items():
            for ranking, row in rows.items():
                lines.append(f"| {store} | {which} | {ranking} | {each(row)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated: files, sqlite, postgres")
    parser.add_argument("--database-url", default=DATABASE_URL, help="created and dropped (PostgreSQL store)")
    parser.add_argument("--before", default=None, help="also run the keyword set through this git revision")
    parser.add_argument(
        "--search",
        default=None,
        help='the [search] table as JSON, e.g. \'{"provider": "endpoint", "endpoint_url": "…", "model": "…"}\'',
    )
    parser.add_argument("--label", default=None, help="writes bench/results/search_quality-<label>.json")
    parser.add_argument("--emit", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.emit:
        print(json.dumps(rankings()))
        return
    stores = tuple(s for s in args.stores.split(",") if s)
    search = json.loads(args.search) if args.search else None
    results = measure(stores, args.database_url, search)
    print(table(results, lambda r: f"{r['hit@1']} | {r['hit@3']} | {r['mrr@10']}"))
    report: dict[str, Any] = {
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "search": search or {"provider": "bundled"},
        "results": results,
    }
    if args.before:
        before = score(rankings_at(args.before), "keyword")
        report["before"] = {"revision": args.before, "keyword_words_files": before}
        print(
            f"| before ({args.before}) | keyword | words | {before['hit@1']} | {before['hit@3']} | {before['mrr@10']} |"
        )
    for store, sets in results.items():
        for which, rows in sets.items():
            for ranking, row in rows.items():
                for miss in (q for q in row["per_question"] if not q["rank"] or q["rank"] > 3):
                    if ranking == "fused" and store == stores[0]:
                        print(f"  {store} {which} fused, not in the top 3: {miss['q']!r} -> {miss['top3']}")
    RESULTS.mkdir(exist_ok=True)
    name = f"search_quality-{args.label}.json" if args.label else "search_quality.json"
    (RESULTS / name).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
