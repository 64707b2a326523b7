"""The models search uses for meaning (`notewarden.embeddings`): the bundled one gives WordLlama's own
vectors from the installed package's files; the endpoint provider, tested against a stand-in server
on 127.0.0.1 that computes real embeddings with the bundled model, gives the same vectors, sends the
API key only in its header, and says what failed without the key; `[search]` is checked as every
table is."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from notewarden.config import parse_search
from notewarden.embeddings import SearchSettings, open_search_mode
from notewarden.embeddings.bundled import WordLlamaStatic, wordllama_files
from notewarden.embeddings.endpoint import EmbeddingFailed
from notewarden.ledger.sqlite import SqliteLedger
from notewarden.notes.files import FilesNoteStore
from notewarden.notes.hybrid_search import search_page
from notewarden.notes.model import Note, NoteIdentity, search_terms
from notewarden.notes.ranking import MEANING_WEIGHTS, Candidate, fuse
from notewarden.scope.fsroot import WorkspaceRoot
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.uri import parse_file_uri
from notewarden.toml_tables import ConfigError
from tests.embeddings_stand_in import StandIn, stand_in

__all__ = ["stand_in"]  # the fixture

KEY = "sk-test-never-logged-5c1e"
TEXTS = [
    "how do I get my money back",
    "Refund policy\nA customer who cancels within 30 days gets it all back.",
]


def test_the_bundled_model_gives_wordllamas_own_vectors_from_the_installed_files() -> None:
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    model = WordLlamaStatic()
    tokenizer, weights = wordllama_files()
    assert tokenizer.parent.name == "tokenizers" and weights.stat().st_size > 10_000_000
    reference = WordLlamaInference(model._table, Tokenizer.from_file(str(tokenizer))).embed(TEXTS, norm=True)
    assert model.dimensions == 256
    assert np.abs(model.embed(TEXTS) - reference).max() < 1e-6
    assert open_search_mode(SearchSettings()).mode == "hybrid"
    assert open_search_mode(SearchSettings(provider="off")).embedder is None


def test_the_bundled_model_is_read_by_the_first_vector_asked_not_at_start_up() -> None:
    """embeddings Rule 4: choosing the model imports neither numpy nor tokenizers; the first vector
    does, and gives the model's own output."""
    script = (
        "import sys\n"
        "from notewarden.embeddings import SearchSettings, open_search_mode\n"
        "mode = open_search_mode(SearchSettings())\n"
        "print(mode.mode, mode.model, 'numpy' in sys.modules, 'tokenizers' in sys.modules)\n"
        "print(mode.embedder.embed(['refund'])[0][:3].round(4).tolist(), 'numpy' in sys.modules)\n"
    )
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    first, second = shown.splitlines()
    assert first == "hybrid wordllama-l2_supercat-256 False False"
    assert second == f"{WordLlamaStatic().embed(['refund'])[0][:3].round(4).tolist()} True"


def test_the_endpoint_gives_the_stand_ins_vectors_in_order_and_sends_the_key_only_in_its_header(
    stand_in: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setenv("NOTEWARDEN_TEST_EMBEDDINGS_KEY", KEY)
    settings = parse_search(
        {
            "provider": "endpoint",
            "endpoint_url": stand_in,
            "model": "stand-in",
            "api_key_env": "NOTEWARDEN_TEST_EMBEDDINGS_KEY",
            "batch_size": 2,
        }
    )
    caplog.set_level(logging.DEBUG)
    mode = open_search_mode(settings)
    assert mode.mode == "hybrid" and mode.embedder is not None
    endpoint = mode.embedder
    got = endpoint.embed([*TEXTS, "a third text in a second batch"])
    assert np.abs(got - WordLlamaStatic().embed([*TEXTS, "a third text in a second batch"])).max() < 1e-5
    assert [len(s["body"]["input"]) for s in StandIn.seen] == [2, 1]
    assert {s["authorization"] for s in StandIn.seen} == {f"Bearer {KEY}"}
    assert endpoint.name == f"endpoint:{stand_in.split('/')[2]}:stand-in" and endpoint.dimensions == 256

    notes = tmp_path / "notes"
    (notes / "Work").mkdir(parents=True)
    (notes / "Work" / "Refund policy.md").write_text("# Refund policy\n\nCancel within 30 days: all back.\n")
    (notes / "Recipes.md").write_text("# Recipes\n\nBanana bread and lentil soup.\n")
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3")
    store = FilesNoteStore(tmp_path / "index.sqlite3", ledger=ledger, watch=False)
    root = WorkspaceRoot.open(str(notes))
    scope = WorkspaceScope("alice", parse_file_uri(f"file://{notes}"), (), root)
    question = "how can I get my money back"
    page = search_page(
        store, scope, search_terms(question), question, embedder=endpoint, filters=None, limit=5, after=None
    )
    assert page.hits[0].hit.note.id == "Work/Refund policy.md" and page.hits[0].hit.found_by != "words"
    store.close()
    root.close()
    ledger.close()
    assert KEY not in caplog.text

    StandIn.fail = True
    with pytest.raises(EmbeddingFailed) as failed:
        endpoint.embed(["anything"])
    assert stand_in in str(failed.value) and "500" in str(failed.value) and KEY not in str(failed.value)


def test_the_search_table_is_checked_like_every_table() -> None:
    assert parse_search({}) == SearchSettings()
    with pytest.raises(ConfigError, match="needs endpoint_url and model"):
        parse_search({"provider": "endpoint"})
    with pytest.raises(ConfigError, match="is not a provider; use bundled, endpoint or off"):
        parse_search({"provider": "cloud"})
    with pytest.raises(ConfigError, match="unknown key"):
        parse_search({"provider": "off", "api_key": KEY})
    with pytest.raises(ConfigError) as named:
        parse_search(
            {
                "provider": "endpoint",
                "endpoint_url": "http://x/v1/embeddings",
                "model": "m",
                "api_key_env": KEY,
            }
        )
    assert KEY not in str(named.value)
    with pytest.raises(ConfigError, match="only apply to provider"):
        parse_search({"model": "m"})
    for wrong in (0, 101, "2", True):
        with pytest.raises(ConfigError, match=r"meaning_weight must be a number between 0\.1 and 100"):
            parse_search({"meaning_weight": wrong})
    with pytest.raises(ConfigError, match="dimensions must be an integer between 8 and 8192; got 4"):
        parse_search(
            {"provider": "endpoint", "endpoint_url": "http://x/v1/embeddings", "model": "m", "dimensions": 4}
        )


def test_meaning_weighs_what_the_provider_or_the_table_says() -> None:
    """`ranking` Rule 2: a static word model's ranking weighs 1.5, an endpoint's (a sentence model)
    5, unless `[search] meaning_weight` says; the weight decides between a note first by words and
    another first by meaning."""
    endpoint = {"provider": "endpoint", "endpoint_url": "http://127.0.0.1:9/v1/embeddings", "model": "m"}
    assert open_search_mode(parse_search({})).meaning_weight == MEANING_WEIGHTS["bundled"] == 1.5
    assert open_search_mode(parse_search(endpoint)).meaning_weight == MEANING_WEIGHTS["endpoint"] == 5.0
    assert open_search_mode(parse_search({**endpoint, "meaning_weight": 2})).meaning_weight == 2.0
    assert open_search_mode(parse_search({"meaning_weight": 0.5})).meaning_weight == 0.5

    def note(name: str) -> Candidate:
        return Candidate(Note(f"{name}.md", name, NoteIdentity((1, len(name)), 0, 1)))

    by_words, by_meaning = note("Ledger"), note("Receipts")
    words = [Candidate(by_words.note, all_words=True)]
    for weight, order in ((0.5, ["Ledger.md", "Receipts.md"]), (0.9, ["Ledger.md", "Receipts.md"])):
        assert [f.note.id for f in fuse(["refund"], words, [by_meaning], weight)] == order
    for weight in (1.1, 5.0):
        assert [f.note.id for f in fuse(["refund"], words, [by_meaning], weight)] == [
            "Receipts.md",
            "Ledger.md",
        ]


@pytest.mark.parametrize(
    ("table", "line"),
    [
        (
            "",
            "search         words and meaning: wordllama-l2_supercat-256, bundled (no network); "
            "meaning weighs 1.5 against words",
        ),
        (
            '[search]\nprovider = "endpoint"\nendpoint_url = "http://127.0.0.1:9/v1/embeddings"\n'
            'model = "m"\nmeaning_weight = 4\n',
            "search         words and meaning: endpoint:127.0.0.1:9:m at http://127.0.0.1:9/v1/embeddings; "
            "meaning weighs 4 against words",
        ),
        ('[search]\nprovider = "off"\n', 'search         by words only: [search] provider = "off"'),
    ],
)
def test_doctor_says_which_mode_search_answers_in(tmp_path: Path, table: str, line: str) -> None:
    import io

    from notewarden.firstrun.doctor import run_doctor

    (tmp_path / "notes").mkdir()
    (tmp_path / "state").mkdir(mode=0o700)
    uri = f"file://{tmp_path / 'notes'}"
    config = tmp_path / "notewarden.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n[[workspace]]\nuri = "{uri}"\n'
        f'[[principal]]\nid = "me"\nworkspaces = ["{uri}"]\n[stdio]\nprincipal = "me"\n{table}'
    )
    out = io.StringIO()
    run_doctor(str(config), out=out)
    assert f"  ok    {line}" in out.getvalue(), out.getvalue()


def test_vectors_load_in_batches_and_a_notes_new_rows_replace_all_its_old_ones() -> None:
    from notewarden.notes.vectors import ADD_BATCH, VectorIndex, VectorRow, to_bytes

    rng = np.random.default_rng(25)
    unit = rng.standard_normal((ADD_BATCH + 3, 8)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    index = VectorIndex(8)
    # "long.md" has sections on both sides of the first batch's end: all of them are kept
    notes = [f"n{i}.md" for i in range(ADD_BATCH - 2)] + ["long.md"] * 5
    index.add(
        VectorRow(i + 1, note, f"s{i}", to_bytes(v))
        for i, (note, v) in enumerate(zip(notes, unit, strict=True))
    )
    assert index.sections == ADD_BATCH + 3 and len(index.vectors_of("long.md")) == 5
    near = index.nearest(unit[-1], 1)
    assert (near[0].note, near[0].section) == ("long.md", f"s{ADD_BATCH + 2}") and near[0].score > 0.99
    index.add([VectorRow(ADD_BATCH + 10, "long.md", "only", to_bytes(unit[0]))])  # written again: one section
    assert [s for s, _ in index.vectors_of("long.md")] == ["only"] and index.last_seq == ADD_BATCH + 10


def test_the_shortlist_keeps_every_row_up_to_the_last_distance_taken_within_a_bound() -> None:
    from notewarden.notes.vectors import _closest

    rng = np.random.default_rng(7)
    distance = rng.integers(0, 65, 50_000).astype(np.int32)
    alive = rng.random(50_000) > 0.1
    live = np.flatnonzero(alive)
    last = np.sort(distance[live])[2047]  # the 2,048th smallest live distance
    expected = live[distance[live] <= last]  # every live row up to it, the whole tie included
    assert 2048 < len(expected) <= 4096
    assert np.array_equal(_closest(distance.copy(), alive, 2048, bits=64), expected)
    # a tie wider than twice `take`: every closer row, then the earliest rows of the tie
    tied = np.full(50_000, 30, np.int32)
    tied[:100] = 5
    assert np.array_equal(_closest(tied, np.ones(50_000, np.bool_), 2048, bits=64), np.arange(4096))
    # fewer live rows than `take`: all of them, never a dead one
    few = np.zeros(50_000, np.bool_)
    few[[3, 999, 40_000]] = True
    assert np.array_equal(_closest(distance.copy(), few, 2048, bits=64), [3, 999, 40_000])
