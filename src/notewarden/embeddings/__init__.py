"""Which model, if any, gives search its sense of meaning (issue 25): chosen once, at start-up, from
the `[search]` table of the configuration.

Rule 1: search works without a model. `provider = "bundled"` (the default) uses the model that ships
in the `notewarden[semantic]` extra (`bundled`); without the extra, or with `provider = "off"`,
search is lexical, and `doctor` and every `notes_search` result say so and why (`SearchMode`).
`provider = "endpoint"` asks an OpenAI-compatible `/v1/embeddings` server (`endpoint`).

Rule 2: nothing here reaches the network unless `provider = "endpoint"` names a server: the bundled
model is read from the installed package's files (tests/unit/test_no_network.py runs indexing and
search with every connection refused).

Rule 3: a model that fails (an endpoint that does not answer, a bundled model that does not load:
`EmbeddingFailed`) never fails a search: `notes_search` answers by words and its `ranking` says why;
`notes_similar`, which has no words to fall back on, answers `meaning_unavailable` with the reason.

Rule 4: start-up stays as fast as a lexical server's: choosing the bundled model only locates its
package; its files are read (about 0.25 s and 60 MB, with numpy and tokenizers imported) by the
first search that needs a vector (`LoadedOnFirstUse`), which happens anyway before a search by
meaning can answer (the notes are embedded then, `index_meaning` Rule 1). A server that is never
asked a question in words never pays it. `doctor` loads it, to say whether it works.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from notewarden.notes.ranking import MEANING_WEIGHTS

if TYPE_CHECKING:
    from notewarden.notes.vectors import Embedder, Vectors

__all__ = [
    "BUNDLED_MODEL",
    "EmbeddingFailed",
    "LoadedOnFirstUse",
    "SearchMode",
    "SearchSettings",
    "open_search_mode",
]

logger = logging.getLogger(__name__)

Provider = Literal["bundled", "endpoint", "off"]

BUNDLED_MODEL = "wordllama-l2_supercat-256"
"""The bundled model's name (`bundled`), known without importing it (Rule 4)."""


class EmbeddingFailed(Exception):
    """The model did not give the vectors (an endpoint down or answering nonsense); the message says
    which endpoint and why, never the key (Rule 3)."""


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """The `[search]` table, as plain values (the configuration's business stays in `config`)."""

    provider: Provider = "bundled"
    endpoint_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    dimensions: int | None = None
    timeout_seconds: float = 30.0
    batch_size: int = 64
    meaning_weight: float | None = None
    """None: the provider's (`notes.ranking.MEANING_WEIGHTS`)."""


@dataclass(frozen=True, slots=True)
class SearchMode:
    """How searches are answered: `hybrid` (words and meaning) with `embedder`, or `lexical`, and why."""

    mode: Literal["hybrid", "lexical"]
    reason: str
    embedder: Embedder | None = None
    meaning_weight: float = MEANING_WEIGHTS["bundled"]

    @property
    def model(self) -> str | None:
        return None if self.embedder is None else self.embedder.name


def open_search_mode(settings: SearchSettings) -> SearchMode:
    """Rule 1: the model the settings ask for, or lexical search and why."""
    if settings.provider == "off":
        return SearchMode("lexical", '[search] provider = "off": words only')
    needed = ("numpy",) if settings.provider == "endpoint" else ("numpy", "tokenizers", "wordllama")
    if any(importlib.util.find_spec(name) is None for name in needed):
        return SearchMode(
            "lexical", "the semantic extra is not installed: pip install 'notewarden[semantic]'"
        )
    if settings.provider == "endpoint":
        from notewarden.embeddings.endpoint import EndpointEmbedder

        embedder: Embedder = EndpointEmbedder(settings)
        reason = f"words and meaning: {embedder.name} at {settings.endpoint_url}"
    else:
        embedder = LoadedOnFirstUse(BUNDLED_MODEL)
        reason = f"words and meaning: {embedder.name}, bundled (no network)"
    weight = settings.meaning_weight
    return SearchMode(
        "hybrid", reason, embedder, MEANING_WEIGHTS[settings.provider] if weight is None else weight
    )


class LoadedOnFirstUse:
    """Rule 4: the bundled model, read from its package by the first call that needs a vector."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._model: Embedder | None = None

    @property
    def name(self) -> str:
        return self._name

    def load(self) -> Embedder:
        """The model; `EmbeddingFailed` (Rule 3) when its package or files are missing or broken."""
        with self._lock:
            if self._model is None:
                from notewarden.embeddings.bundled import WordLlamaStatic

                try:
                    self._model = WordLlamaStatic()
                except Exception as exc:  # a broken install: searches go on by words (Rule 3)
                    logger.warning("bundled embedding model unavailable", extra={"reason": str(exc)})
                    raise EmbeddingFailed(f"the bundled model could not be loaded: {exc}") from exc
            return self._model

    @property
    def dimensions(self) -> int:
        return self.load().dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.load().embed(texts)
