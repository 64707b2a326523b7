"""What notes mean, as vectors: the model's interface, how vectors are stored, and the in-memory
index that finds the sections closest to a question. Needs numpy (`notewarden[semantic]`): the
stores import this module only when a model is configured.

Rule 1 (stored portably): a vector is its unit-length float32 values stored as little-endian
float16 bytes (`to_bytes`), the same BLOB or `bytea` in every store, readable by any language; a row
also names the model's section (`notes.sections`) and the digest of the text it came from.

Rule 2 (held compactly): a process keeps each workspace's vectors in memory as int8 codes (each
vector scaled so that its largest component is 127) plus one sign bit per dimension. A question is
answered in two steps: the Hamming distance of the sign bits ranks every section (XOR and popcount:
32 bytes per section), and the `SHORTLIST` closest by it, with every section tied at the last
distance taken (at most twice as many), are scored exactly enough (int8 dot products, rescaled).
Below `EXACT_BELOW` sections every one is scored directly. A section costs 293 bytes of
arrays (256 codes, 32 sign bytes, a scale, a flag) plus its note's and section's names; the arrays
grow by a quarter when full. Figures: docs/performance.md, "Search by meaning".

Rule 3 (kept current): the index follows the store's rows by their `seq`, which only grows: a
refresh reads the rows after the last it saw, and a note's new rows replace its old ones. A note
that went is dropped when this process removes it, or left to the store's check of every hit (a
hit is only shown for a note the store still has, in the caller's reach and filters).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from notewarden.notes.sections import pieces_of

__all__ = [
    "ADD_BATCH",
    "EXACT_BELOW",
    "SHORTLIST",
    "Embedder",
    "NearSection",
    "VectorIndex",
    "VectorRow",
    "from_bytes",
    "to_bytes",
]

EXACT_BELOW = 8192
SHORTLIST = 2048
ADD_BATCH = 8192

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """A model that turns texts into unit-length vectors (`notewarden.embeddings` offers them)."""

    @property
    def name(self) -> str:
        """Names the model and its settings: vectors of another name are computed again."""

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 row per text."""


def to_bytes(vector: npt.NDArray[np.floating]) -> bytes:
    return np.asarray(vector, dtype="<f2").tobytes()


K = TypeVar("K", str, int)
PieceRow = tuple[int, str, str, bytes]
"""A section's stored vector: its chunk number, section name, text digest and `to_bytes` vector."""


def embed_notes(
    embedder: Embedder, notes: Sequence[tuple[K, str, str]], kept: Mapping[tuple[K, str], bytes]
) -> dict[K, list[PieceRow]]:
    """Each note `(key, name, text)` cut into its sections (`sections.pieces_of`) with a vector each:
    the vector `kept` for the same note and digest (the text did not change), or computed, all of a
    batch's new texts in one call to the model. Both stores' `embed_pending` write these rows."""
    planned = {
        key: [(piece, piece.digest(embedder.name)) for piece in pieces_of(name, text)]
        for key, name, text in notes
    }
    wanted = {
        digest: piece.text
        for key, pieces in planned.items()
        for piece, digest in pieces
        if (key, digest) not in kept
    }
    computed = dict(zip(wanted, embedder.embed(list(wanted.values())), strict=True)) if wanted else {}
    return {
        key: [
            (chunk, piece.section, digest, kept.get((key, digest)) or to_bytes(computed[digest]))
            for chunk, (piece, digest) in enumerate(pieces)
        ]
        for key, pieces in planned.items()
    }


def from_bytes(data: bytes) -> Vectors:
    return np.frombuffer(data, dtype="<f2").astype(np.float32)


@dataclass(frozen=True, slots=True)
class VectorRow:
    """One stored section vector, as a store reads it (Rule 1)."""

    seq: int
    note: str
    section: str
    vector: bytes


@dataclass(frozen=True, slots=True)
class NearSection:
    note: str
    section: str
    score: float
    """Cosine similarity of the question and the section, -1 to 1."""


def _signs(codes: npt.NDArray[np.int8]) -> npt.NDArray[np.uint64]:
    bits = np.packbits(codes > 0, axis=1)
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return bits.view(np.uint64)


@dataclass
class VectorIndex:
    """Rule 2: one workspace's section vectors under one model, in memory."""

    dimensions: int
    last_seq: int = 0
    _codes: npt.NDArray[np.int8] = field(init=False)
    _scales: npt.NDArray[np.float32] = field(init=False)
    _signs: npt.NDArray[np.uint64] = field(init=False)
    _notes: list[str] = field(default_factory=list)
    _sections: list[str] = field(default_factory=list)
    _alive: npt.NDArray[np.bool_] = field(init=False)
    _rows_of: dict[str, list[int]] = field(default_factory=dict)
    _size: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._codes = np.zeros((0, self.dimensions), np.int8)
        self._scales = np.zeros(0, np.float32)
        self._signs = _signs(self._codes)
        self._alive = np.zeros(0, np.bool_)

    @property
    def sections(self) -> int:
        """Live sections held."""
        return int(self._alive[: self._size].sum())

    @property
    def nbytes(self) -> int:
        """What the arrays hold (the lists of ids add about 8 bytes a section)."""
        return int(self._codes.nbytes + self._scales.nbytes + self._signs.nbytes + self._alive.nbytes)

    def add(self, rows: Iterable[VectorRow]) -> None:
        """Rule 3: rows after `last_seq`, in `seq` order; a note's rows replace the ones it had before
        this call. Read `ADD_BATCH` rows at a time, so that loading 300,000 sections holds one batch
        of them as Python objects, not all."""
        fresh: set[str] = set()
        batch: list[VectorRow] = []
        for row in rows:
            self.last_seq = max(self.last_seq, row.seq)
            if row.note not in fresh:
                fresh.add(row.note)
                self.forget(row.note)
            batch.append(row)
            if len(batch) == ADD_BATCH:
                self._append(batch)
                batch = []
        if batch:
            self._append(batch)
        if len(self._alive) > self._size + self._size // 4 + 256:  # after a first load: no spare quarter
            self._resize(self._size + self._size // 8)

    def _append(self, new: Sequence[VectorRow]) -> None:
        matrix = np.frombuffer(b"".join(r.vector for r in new), dtype="<f2").reshape(len(new), -1)
        peak = np.maximum(np.abs(matrix).max(axis=1).astype(np.float32), 1e-12)
        codes = np.round(matrix * (127.0 / peak)[:, None]).astype(np.int8)
        self._grow(len(new))
        at = self._size
        self._codes[at : at + len(new)] = codes
        self._scales[at : at + len(new)] = peak / 127.0
        self._signs[at : at + len(new)] = _signs(codes)
        self._alive[at : at + len(new)] = True
        for i, row in enumerate(new):
            self._notes.append(row.note)
            self._sections.append(row.section)
            self._rows_of.setdefault(row.note, []).append(at + i)
        self._size += len(new)
        if self._size > 1024 and self.sections < self._size // 2:
            self._compact()

    def forget(self, note: str) -> None:
        for row in self._rows_of.pop(note, ()):
            self._alive[row] = False

    def notes(self) -> set[str]:
        return set(self._rows_of)

    def vectors_of(self, note: str) -> list[tuple[str, Vectors]]:
        """The note's sections and their vectors (as held: int8, rescaled)."""
        return [
            (self._sections[r], self._codes[r].astype(np.float32) * self._scales[r])
            for r in self._rows_of.get(note, ())
        ]

    def nearest(
        self,
        query: Vectors,
        limit: int,
        *,
        keep: Callable[[str], bool] | None = None,
    ) -> list[NearSection]:
        """The `limit` notes whose best section is closest to `query`, best first, each with that
        section (Rule 2); `keep` says which notes may be shown."""
        size = self._size
        if not size or limit <= 0:
            return []
        alive = self._alive[:size]
        if size <= EXACT_BELOW:
            shortlist = np.flatnonzero(alive)
        else:
            query_signs = _signs(np.where(query > 0, 1, -1).astype(np.int8)[None, :])[0]
            signs = self._signs[:size]
            distance = np.bitwise_count(signs[:, 0] ^ query_signs[0]).astype(np.int32)
            for word in range(1, signs.shape[1]):  # a column at a time (each one contiguous: `_resize`)
                distance += np.bitwise_count(signs[:, word] ^ query_signs[word])
            shortlist = _closest(distance, alive, SHORTLIST + 1, bits=64 * signs.shape[1])
        scores = (self._codes[shortlist].astype(np.float32) @ query) * self._scales[shortlist]
        best: dict[str, NearSection] = {}
        for i in np.argsort(-scores, kind="stable"):
            row = int(shortlist[i])
            note = self._notes[row]
            if note in best or (keep is not None and not keep(note)):
                continue
            best[note] = NearSection(note, self._sections[row], float(scores[i]))
            if len(best) == limit:
                break
        return list(best.values())

    def _grow(self, extra: int) -> None:
        need = self._size + extra
        if need <= len(self._alive):
            return
        self._resize(max(need, len(self._alive) + len(self._alive) // 4, 256))

    def _resize(self, capacity: int) -> None:
        for name in ("_codes", "_scales", "_signs", "_alive"):
            old = getattr(self, name)
            # the sign words column by column (Fortran order): `nearest` XORs one word of every row
            grown = np.zeros((capacity, *old.shape[1:]), old.dtype, order="F" if name == "_signs" else "C")
            grown[: self._size] = old[: self._size]
            setattr(self, name, grown)

    def _compact(self) -> None:
        keep = np.flatnonzero(self._alive[: self._size])
        self._codes = self._codes[keep].copy()
        self._scales = self._scales[keep].copy()
        self._signs = np.asfortranarray(self._signs[keep])
        self._alive = np.ones(len(keep), np.bool_)
        self._notes = [self._notes[i] for i in keep]
        self._sections = [self._sections[i] for i in keep]
        self._rows_of = {}
        for i, note in enumerate(self._notes):
            self._rows_of.setdefault(note, []).append(i)
        self._size = len(keep)


def _closest(
    distance: npt.NDArray[np.int32], alive: npt.NDArray[np.bool_], take: int, *, bits: int
) -> npt.NDArray[np.intp]:
    """Rule 2's shortlist: the live rows whose Hamming distance (0 to `bits`) is among the `take`
    smallest, every row tied at the last distance taken included, up to twice `take` (then the
    earlier rows of that tie). Distances are small integers: one count of each finds the last
    distance taken, one pass keeps the rows up to it, where `np.argpartition` of exactly `take` cost
    more and dropped an arbitrary part of the tie (docs/performance.md, "Search by meaning")."""
    distance[~alive] = bits + 1
    reached = np.cumsum(np.bincount(distance, minlength=bits + 2))
    last = min(int(np.searchsorted(reached, take)), bits)  # the smallest distance with `take` rows up to it
    within = np.flatnonzero(distance <= last)
    if len(within) > 2 * take:
        at_last = distance[within] == last
        kept = ~at_last
        before = int(reached[last - 1]) if last else 0
        kept[np.flatnonzero(at_last)[: 2 * take - before]] = True
        within = within[kept]
    return within
