"""A second provider: an OpenAI-compatible `/v1/embeddings` endpoint (what Ollama, LM Studio, vLLM or
a team's own server offer), named in `[search]`.

Rule 1: one POST per batch of `batch_size` texts, `{"model": ..., "input": [...]}` (and `dimensions`
when configured), answered by `{"data": [{"index": i, "embedding": [...]}, ...]}`; rows are put back
in `index` order and made unit length. Any other answer, a status other than 200, or no answer within
`timeout_seconds` is `EmbeddingFailed`, whose message names the URL and the status, never the key.

Rule 2: the API key is read from the environment variable `api_key_env` when a request is made, sent
only as `Authorization: Bearer …`, and never logged or put in a message (tests check the logs).

Rule 3: the model's name for the vectors (`name`) includes the URL's host and the model, so vectors
of another endpoint or model are never mixed with these (`notes.index_meaning` Rule 2).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from urllib.parse import urlsplit

import httpx2 as httpx
import numpy as np
import numpy.typing as npt

from notewarden.embeddings import EmbeddingFailed, SearchSettings

__all__ = ["EmbeddingFailed", "EndpointEmbedder"]


class EndpointEmbedder:
    def __init__(self, settings: SearchSettings) -> None:
        if settings.endpoint_url is None or settings.model is None:
            raise ValueError("an endpoint provider needs endpoint_url and model")
        self._url = settings.endpoint_url
        self._model = settings.model
        self._key_env = settings.api_key_env
        self._dimensions = settings.dimensions
        self._timeout = settings.timeout_seconds
        self._batch = settings.batch_size
        self._known_dimensions: int | None = settings.dimensions

    @property
    def name(self) -> str:
        where = urlsplit(self._url).netloc
        suffix = f"-{self._dimensions}" if self._dimensions else ""
        return f"endpoint:{where}:{self._model}{suffix}"

    @property
    def dimensions(self) -> int:
        if self._known_dimensions is None:
            self.embed(["dimensions"])
        assert self._known_dimensions is not None
        return self._known_dimensions

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows: list[npt.NDArray[np.float32]] = []
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self._key_env) if self._key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        with httpx.Client(timeout=self._timeout) as client:
            for start in range(0, len(texts), self._batch):
                rows.append(self._post(client, headers, list(texts[start : start + self._batch])))
        if not rows:
            return np.zeros((0, self._known_dimensions or 0), np.float32)
        matrix = np.concatenate(rows)
        self._known_dimensions = int(matrix.shape[1])
        unit: npt.NDArray[np.float32] = matrix / np.maximum(
            np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12
        )
        return unit

    def _post(
        self, client: httpx.Client, headers: dict[str, str], batch: list[str]
    ) -> npt.NDArray[np.float32]:
        body: dict[str, object] = {"model": self._model, "input": batch}
        if self._dimensions:
            body["dimensions"] = self._dimensions
        try:
            answer = client.post(self._url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise EmbeddingFailed(
                f"the embeddings endpoint {self._url} did not answer: {type(exc).__name__}"
            ) from None
        if answer.status_code != 200:
            raise EmbeddingFailed(f"the embeddings endpoint {self._url} answered HTTP {answer.status_code}")
        try:
            data = sorted(answer.json()["data"], key=lambda item: item["index"])
            matrix = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError):
            raise EmbeddingFailed(
                f"the embeddings endpoint {self._url} gave no embeddings in its answer"
            ) from None
        if matrix.ndim != 2 or len(matrix) != len(batch):
            raise EmbeddingFailed(
                f"the embeddings endpoint {self._url} gave {len(matrix)} embeddings for {len(batch)} texts"
            )
        return matrix
