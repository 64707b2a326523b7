"""Search never reaches the network (issue 25, `notewarden.embeddings` Rule 2): a fresh process builds
the index, loads the bundled model, embeds every note and answers searches by words and by meaning
with every network call refused and recorded (a `sys.addaudithook` guard on `socket.connect`,
`socket.getaddrinfo` and `socket.gethostbyname`, installed before notewarden is imported); the test
fails on any attempt, and checks that the guard does catch one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHILD = r"""
import json, sys
attempts = []
def guard(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
        attempts.append([event, repr(args)[:200]])
        raise OSError("network refused by the test")
sys.addaudithook(guard)
from pathlib import Path
folder, state = Path(sys.argv[1]), Path(sys.argv[2])
from notewarden.embeddings import SearchSettings, open_search_mode
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.files import FilesNoteStore
from notewarden.notes.hybrid_search import search_page
from notewarden.notes.model import search_terms
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import parse_file_uri
mode = open_search_mode(SearchSettings())
ledger = SqliteLedger(state / "ledger.sqlite3")
store = FilesNoteStore(state / "index.sqlite3", ledger=ledger)
root = WorkspaceRoot.open(str(folder))
scope = WorkspaceScope("alice", parse_file_uri(f"file://{folder}"), (), root)
found = {}
for question in ("how can I get my money back", "banana bread"):
    page = search_page(store, scope, search_terms(question), question, embedder=mode.embedder,
                       filters=None, limit=3, after=None)
    found[question] = [[s.hit.note.id, s.hit.found_by] for s in page.hits]
during = list(attempts)
try:
    import socket
    socket.create_connection(("127.0.0.1", 9), timeout=1)
except OSError:
    pass
print(json.dumps({"mode": mode.mode, "found": found, "during": during, "guard_caught": len(attempts)}))
"""


def test_indexing_and_search_by_meaning_make_no_network_call(tmp_path: Path) -> None:
    folder, state = tmp_path / "notes", tmp_path / "state"
    (folder / "Work").mkdir(parents=True)
    state.mkdir()
    (folder / "Work" / "Refund policy.md").write_text(
        "# Refund policy\n\nCancel within 30 days: all of it.\n"
    )
    (folder / "Recipes.md").write_text("# Recipes\n\n## Banana bread\n\nThree ripe bananas.\n")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(state)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["mode"] == "hybrid"
    assert report["found"]["how can I get my money back"][0] == ["Work/Refund policy.md", "meaning"]
    assert report["found"]["banana bread"][0][0] == "Recipes.md"
    assert report["during"] == [], report["during"]
    assert report["guard_caught"] >= 1  # the guard's own check: it does see a connection
