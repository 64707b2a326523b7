"""Search gives the same answers on every store (issue 25): the files index, the SQLite store and the
PostgreSQL store, each opened as `notewarden serve` opens it (the SQL stores after `notewarden import`).

* Both relevance sets of bench/relevance (keyword and paraphrased questions), by words alone and fused
  with the bundled model: no store falls behind another by more than one question in the top 3 (by
  words alone on the paraphrased questions, which words barely answer, three), and the keyword
  questions meet the issue's goal (hit@3 >= 0.96).
* The lexical faults the issue found, on each store: a title match outranks notes with the words in
  their text; a snippet never shows front matter; "css snippets" puts the note titled "CSS snippets"
  first although `cssclasses` is in its text; words are stemmed ("sharing" finds "shared").
* Vectors follow the notes: only a changed note is embedded again, and of it only the section that
  changed; a deleted note is never found by meaning.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from bench.search_quality import SETS, opened, rank_all, score

from notewarden.embeddings import SearchSettings, open_search_mode
from notewarden.notes.history import Change
from notewarden.notes.hybrid_search import search_page
from notewarden.notes.model import search_terms
from notewarden.notes.store import NoteFilter, replace_with
from notewarden.scope.rights import Caller
from tests.pg import PgDatabase
from tests.store_changes import deleting

STORES = ("files", "sqlite", "postgres")
WRITE = Change("bench", "notes_update", "written by the test")
FAULTS = {
    "Reference/Properties.md": "# Properties\n\nKeys at the top of a note that describe it.\n",
    "Guides/Writing notes.md": "# Writing notes\n\nFrontmatter properties hold a note's status. Frontmatter "
    "properties are YAML.\n",
    "Guides/Publishing.md": "# Publishing\n\nThe frontmatter of a page sets its properties for the site.\n",
    "Guides/Templates.md": "# Templates\n\nA template fills the frontmatter properties of a new note.\n",
    "Sync your notes across devices.md": "# Sync your notes across devices\n\nTurn it on in the settings.\n",
    "Guides/Mobile.md": "---\nmobile: true\npermalink: sync\n---\n# Mobile\n\nHow to sync between devices: "
    "the phone app keeps a copy and devices sync between each other.\n",
    "Guides/Desktop.md": "# Desktop\n\nSync between devices runs every minute on the desktop devices.\n",
    "Appearance/CSS snippets.md": "---\ncssclasses: [wide]\n---\n# CSS snippets\n\nPut files in the snippets "
    "folder. A note picks one with cssclasses: wide, cssclasses: narrow, cssclasses: dark.\n",
    "Appearance/Themes.md": "# Themes\n\nA theme is CSS; snippets of CSS change one thing. CSS CSS CSS.\n",
    "Team/Handbook.md": "# Handbook\n\nWe shared the handbook with everyone.\n",
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, pg: PgDatabase) -> Iterator[dict[str, tuple[Any, str]]]:
    """Each store over a copy of the relevance vault (with the fault notes added), opened once."""
    from contextlib import ExitStack

    import bench.search_quality as quality

    tmp = tmp_path_factory.mktemp("everywhere")
    vault = tmp / "vault"
    import shutil

    shutil.copytree(quality.VAULT, vault)
    for note_id, text in FAULTS.items():
        (vault / note_id).parent.mkdir(parents=True, exist_ok=True)
        (vault / note_id).write_text(text, encoding="utf-8")
    url = pg.url.rsplit("/", 1)[0] + "/" + pg.create()
    original = quality.VAULT
    quality.VAULT = vault
    try:
        with ExitStack() as stack:
            yield {store: stack.enter_context(opened(store, tmp, url)) for store in STORES}
    finally:
        quality.VAULT = original


def scope_of(opened_store: tuple[Any, str]) -> Any:
    services, uri = opened_store
    return services.grants.authorize_workspace(Caller("bench"), uri)


def words_page(opened_store: tuple[Any, str], query: str, embedder: Any = None) -> list[Any]:
    services, _ = opened_store
    page = search_page(
        services.store,
        scope_of(opened_store),
        search_terms(query),
        query,
        embedder=embedder,
        filters=None,
        limit=10,
        after=None,
    )
    return [shown.hit for shown in page.hits]


@pytest.mark.parametrize("which", sorted(SETS))
def test_both_relevance_sets_rank_alike_on_every_store(
    stores: dict[str, tuple[Any, str]], which: str
) -> None:
    for ranking in ("words", "fused"):
        counts = {}
        for store, (services, uri) in stores.items():
            result = score(rank_all(services, uri, which, ranking), which)
            counts[store] = result["hits@3"]
            if which == "keyword":
                assert result["hit@3"] >= 0.96, (store, ranking, result["hit@3"])
        # Words alone answer 13-16 of the 82 paraphrased questions on any store: one matching common
        # word, ranked by bm25 or ts_rank, decides them, so the stores may differ there by up to 3
        # (docs/performance.md); everywhere else, by at most one question.
        allowed = 3 if (which, ranking) == ("paraphrased", "words") else 1
        assert max(counts.values()) - min(counts.values()) <= allowed, (which, ranking, counts)


@pytest.mark.parametrize("store", STORES)
def test_the_issues_lexical_faults_are_fixed_on_every_store(
    stores: dict[str, tuple[Any, str]], store: str
) -> None:
    opened_store = stores[store]
    first = [h.note.id for h in words_page(opened_store, "frontmatter properties")]
    assert first[0] == "Reference/Properties.md", first  # the title beats both words in the text
    sync = words_page(opened_store, "how do I sync between devices")
    order = [h.note.id for h in sync]
    titled = order.index("Sync your notes across devices.md")  # after "Syncing notes between devices"
    assert titled < order.index("Guides/Mobile.md") and titled < order.index("Guides/Desktop.md"), order
    mobile = next(h for h in sync if h.note.id == "Guides/Mobile.md")
    assert "permalink" not in mobile.snippet and "mobile: true" not in mobile.snippet, mobile.snippet
    assert "**sync**" in mobile.snippet
    css = [h.note.id for h in words_page(opened_store, "css snippets")]
    assert css[0] == "Appearance/CSS snippets.md", css
    shared = [h.note.id for h in words_page(opened_store, "sharing handbook")]
    assert shared[0] == "Team/Handbook.md", shared  # "sharing" finds "shared": stemmed on every store


Sections = Sequence[tuple[str, Any]]


class Counting:
    """The bundled model, counting the texts it is asked to embed (what was embedded again)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return str(self.model.name)

    @property
    def dimensions(self) -> int:
        return int(self.model.dimensions)

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts += texts
        return self.model.embed(texts)


@pytest.mark.parametrize("store", STORES)
def test_only_what_changed_is_embedded_again_and_a_deleted_note_is_not_found(
    stores: dict[str, tuple[Any, str]], store: str
) -> None:
    services, _ = stores[store]
    scope = scope_of(stores[store])
    model = open_search_mode(SearchSettings()).embedder
    assert model is not None, "the dev set installs notewarden[semantic]"
    counting = Counting(model)
    services.store.embed_pending(scope, counting)
    counting.texts.clear()
    assert services.store.embed_pending(scope, counting) == 0 and counting.texts == []
    manual = "Home/House manual.md"
    current = services.store.read_note(scope, manual)
    text = current.data.decode().replace("Recycling goes out on Tuesday", "Recycling goes out on Wednesday")
    services.store.rewrite_note(scope, manual, replace_with(text.encode(), current.version), change=WRITE)
    if store == "files":
        time.sleep(0.05)  # the index sees the rename at its next refresh (inotify)
    assert services.store.embed_pending(scope, counting) == 1
    assert len(counting.texts) == 1 and "Wednesday" in counting.texts[0]  # one section of one note
    question = model.embed(["on which weekday is the recycling collected"])[0]
    near = services.store.nearest(scope, model, question, limit=3)
    assert near[0].note.id == manual and near[0].section == "House manual > Rubbish", near
    sections = dict(services.store.note_sections(scope, model, manual))
    assert set(sections) >= {"House manual > Water", "House manual > Rubbish"}
    assert abs(float(np.dot(sections["House manual > Rubbish"], question)) - near[0].score) < 0.05
    gone = "Recipes/Guacamole.md"
    (found,) = services.store.notes_by_id(scope, [gone])
    with services.trash_ledger(scope.workspace).critical_section() as txn:
        services.store.move_to_trash(txn, scope, [found], change=deleting("bench", f"gone-{store}"))
    dip = model.embed(["a green dip for tortilla chips"])[0]
    assert gone not in {h.note.id for h in services.store.nearest(scope, model, dip, limit=10)}


@pytest.mark.parametrize("store", STORES)
def test_filters_narrow_what_meaning_finds_on_every_store(
    stores: dict[str, tuple[Any, str]], store: str
) -> None:
    """A question that meaning answers from `Home/` (the fuse box of the house manual), asked with a
    tag or a folder filter that leaves that note out, finds only notes that pass the filter, by
    words, meaning or both (`notes_search`), and by meaning alone (`nearest`, which has no floor)."""
    services, _ = stores[store]
    scope = scope_of(stores[store])
    model = open_search_mode(SearchSettings()).embedder
    assert model is not None
    question = "the power went out in the flat, where is the fuse box"
    assert words_page(stores[store], question, model)[0].note.id == "Home/House manual.md"
    vault = SETS["keyword"].parent / "vault"
    health = {
        p.relative_to(vault).as_posix()
        for p in vault.rglob("*.md")
        if re.search(r"^tags:.*\bhealth\b", p.read_text(encoding="utf-8"), re.MULTILINE)
    }
    assert len(health) >= 5
    for filters, passes in (
        (NoteFilter(tags_any=("health",)), lambda hit: hit.note.id in health),
        (NoteFilter(folder="Howto"), lambda hit: hit.note.id.startswith("Howto/")),
    ):
        page = search_page(
            services.store,
            scope,
            search_terms(question),
            question,
            embedder=model,
            filters=filters,
            limit=10,
            after=None,
        )
        found = [shown.hit for shown in page.hits]
        assert all(passes(hit) for hit in found), (filters, [h.note.id for h in found])
        assert found or filters.folder, "the health notes have words or meaning near enough"
        near = services.store.nearest(scope, model, model.embed([question])[0], limit=5, filters=filters)
        assert near and all(passes(hit) for hit in near), (filters, [h.note.id for h in near])
