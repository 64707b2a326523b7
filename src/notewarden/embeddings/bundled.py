"""The model that ships with `notewarden[semantic]`: WordLlama's `l2_supercat` static embeddings (256
dimensions, 16 MB of float16 in the `wordllama` wheel), read from the installed package's files.

Rule 1: nothing is downloaded, and nothing of `wordllama`'s code runs. Its loader looks for the
tokenizer in `wordllama/tokenizer/`, while the wheel ships it in `wordllama/tokenizers/`, and falls
back to downloading it; importing it also configures the root logger. So the package is only located
(`importlib.util.find_spec`, which imports nothing) and its two files read here: the tokenizer with
`tokenizers` (a local file), the weights by parsing the safetensors header (8 bytes of length, then
JSON naming each tensor's type, shape and offsets).

Rule 2: a text's vector is the mean of its tokens' rows, made unit length: WordLlama's own
inference (`embed(..., norm=True)`, average pooling), which tests/unit/test_embeddings.py compares
with its output. No special tokens, no truncation: a static model costs the same per token whatever
the length, and a piece is at most `sections.PIECE_CHARS`.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from notewarden.embeddings import BUNDLED_MODEL

__all__ = ["MODEL_NAME", "BundledModelMissing", "WordLlamaStatic", "wordllama_files"]

MODEL_NAME = BUNDLED_MODEL
_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
_WEIGHTS = "weights/l2_supercat_256.safetensors"
_DTYPES = {"F16": np.float16, "F32": np.float32}
_BATCH = 512


class BundledModelMissing(Exception):
    """The `wordllama` package, or one of its files, is not installed; the message says what to do."""


def wordllama_files() -> tuple[Path, Path]:
    """(tokenizer, weights) inside the installed `wordllama` package (Rule 1)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise BundledModelMissing(
            "the wordllama package is not installed: pip install 'notewarden[semantic]'"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    tokenizer, weights = root / _TOKENIZER, root / _WEIGHTS
    for needed in (tokenizer, weights):
        if not needed.is_file():
            raise BundledModelMissing(
                f"{needed} is missing from the installed wordllama package; reinstall it"
            )
    return tokenizer, weights


def _read_safetensors(path: Path) -> npt.NDArray[np.float32]:
    """The one tensor of a safetensors file, as float32."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    if len(tensors) != 1:
        raise BundledModelMissing(f"{path} holds {len(tensors)} tensors, expected one embedding table")
    (info,) = tensors.values()
    start, end = info["data_offsets"]
    data = np.frombuffer(
        raw,
        dtype=_DTYPES[info["dtype"]],
        count=(end - start) // np.dtype(_DTYPES[info["dtype"]]).itemsize,
        offset=8 + length + start,
    )
    return np.ascontiguousarray(data.reshape(info["shape"]).astype(np.float32))


class WordLlamaStatic:
    """Rule 2: token rows averaged, unit length."""

    def __init__(self) -> None:
        tokenizer, weights = wordllama_files()
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._table = _read_safetensors(weights)

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def dimensions(self) -> int:
        return int(self._table.shape[1])

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dimensions), np.float32)
        rows = self._table.shape[0]
        for start in range(0, len(texts), _BATCH):
            encoded = self._tokenizer.encode_batch(
                list(texts[start : start + _BATCH]), add_special_tokens=False
            )
            for i, enc in enumerate(encoded, start):
                ids = np.clip(np.asarray(enc.ids, dtype=np.int64), 0, rows - 1)
                if len(ids):
                    out[i] = self._table[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = out / np.maximum(norms, 1e-12)
        return unit
