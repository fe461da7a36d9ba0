"""A store in process memory: exact cosine search and BM25, nothing written anywhere.

:class:`MemoryStore` implements the :class:`~chunkwise.store.base.Store` protocol, so an
:class:`~chunkwise.retrieval.index.Index` runs over it as over Milvus (``Index(store=MemoryStore(), ...)``:
throw-away indexes, tests). Evaluation retrieves through it, so what ``chunkwise eval`` measures is a store's
answer by construction: exact search (every chunk scored, no approximate index), ties broken by the order
the chunks were written, so two strategies differ only by their chunks.

Chunk vectors are L2-normalised when written; a search scores by dot product with them, i.e. by cosine
similarity (a query vector is expected unit length, as every embedder returns it; the ranking does not
depend on its length). Text search is the shared BM25 set-up (:mod:`.bm25`) over each chunk's
``embed_text`` (context + text, what Milvus indexes as ``indexed_text``). Filters (Milvus expressions) are
not understood here and are refused rather than ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..document import Chunk, Document
from ..embeddings.base import l2_normalize
from ..errors import ChunkwiseError, ConfigError
from .base import Hit, Marker
from .bm25 import BM25Fallback
from .rows import jsonable, video_meta


@dataclass
class Row:
    """One stored chunk: the chunk, its unit vector and the row metadata a Milvus row would carry."""

    chunk: Chunk
    vector: np.ndarray
    metadata: dict[str, Any]


class MemoryStore:
    """Chunks, vectors and markers in dictionaries (``rows`` by chunk id, ``marks`` by document id)."""

    location = "<memory>"
    hybrid_note = None

    def __init__(self, collection: str = "memory"):
        self.collection = collection
        self.config: dict[str, Any] | None = None
        self.dim: int | None = None
        self.rows: dict[str, Row] = {}
        self.marks: dict[str, Marker] = {}
        self._matrix: np.ndarray | None = None  # the vectors of ``rows`` in order, built on the first search
        self._bm25: BM25Fallback | None = None  # built on the first text search

    # -- configuration and lifecycle
    @property
    def missing(self) -> bool:
        return self.config is None

    def read_config(self) -> dict[str, Any] | None:
        return self.config

    def create(self, config: dict[str, Any], dim: int, replace: bool = False) -> None:
        self.config, self.dim = dict(config), int(dim)
        if replace:
            self.rows.clear()
            self.marks.clear()
            self._changed()

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    # -- document markers
    def markers(self) -> dict[str, Marker]:
        return dict(self.marks)

    def mark(self, markers: Iterable[Marker]) -> None:
        self.marks.update({m.doc_id: m for m in markers})

    def unmark(self, doc_ids: Iterable[str]) -> None:
        for d in doc_ids:
            self.marks.pop(d, None)

    # -- chunks
    def upsert(self, items: list[tuple[Document, list[Chunk], np.ndarray]], embedder_id: str) -> list[str]:
        """Write every document's chunks with their vectors (normalised here); a chunk id already stored keeps
        its place in the order and gets the new chunk and vector."""
        written: list[str] = []
        for doc, chunks, vectors in items:
            vectors = l2_normalize(vectors)
            if len(vectors) != len(chunks):
                raise ChunkwiseError(f"{len(chunks)} chunks but {len(vectors)} vectors", source=doc.source)
            if self.dim is not None and len(chunks) and vectors.shape[1] != self.dim:
                raise ChunkwiseError(
                    f"vectors of dimension {vectors.shape[1]}, the store holds {self.dim}", source=doc.source
                )
            meta = jsonable({"document": doc.metadata, "title": doc.title})
            for c, v in zip(chunks, vectors):
                if not np.all(np.isfinite(v)):
                    raise ChunkwiseError(
                        f"embedder returned a non-finite vector for chunk {c.index}", source=doc.source
                    )
                self.rows[c.id] = Row(c, v, meta if c.track_ids is None else video_meta(meta, c))
                written.append(c.id)
        self._changed()
        return written

    def chunk_ids(self, doc_ids: Iterable[str]) -> dict[str, set[str]]:
        wanted = set(doc_ids)
        out: dict[str, set[str]] = {d: set() for d in wanted}
        for i, row in self.rows.items():
            if row.chunk.doc_id in wanted:
                out[row.chunk.doc_id].add(i)
        return out

    def chunk_documents(self) -> dict[str, str]:
        return {row.chunk.doc_id: row.chunk.source for row in self.rows.values()}

    def delete_chunks(self, ids: Iterable[str]) -> int:
        gone = [i for i in ids if self.rows.pop(i, None) is not None]
        if gone:
            self._changed()
        return len(gone)

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        doc_ids = list(doc_ids)
        self.unmark(doc_ids)
        return self.delete_chunks([i for ids in self.chunk_ids(doc_ids).values() for i in ids])

    def flush(self) -> None:
        pass

    def count(self) -> int:
        return len(self.rows)

    @property
    def ids(self) -> list[str]:
        """The stored chunk ids in store order (the order of :meth:`search_vectors`' positions)."""
        return list(self.rows)

    # -- reading
    def fetch(self, ids: list[str]) -> list[Hit]:
        return [self._hit(i, 0.0) for i in ids if i in self.rows]

    def chunks_at(self, wanted: dict[str, Iterable[int]]) -> list[Hit]:
        """The stored chunks of the given documents with the given chunk indexes (those that exist)."""
        sets = {d: set(map(int, idx)) for d, idx in wanted.items()}
        return [self._hit(i, 0.0) for i, row in self.rows.items() if row.chunk.index in sets.get(row.chunk.doc_id, ())]

    def search_vector(
        self, vector: np.ndarray, limit: int, filter: str | None = None, ids_only: bool = False
    ) -> list[Hit]:
        """The ``limit`` nearest chunks by cosine similarity, best first (ties: store order)."""
        self._no_filter(filter)
        positions, scores = self.search_vectors(np.asarray(vector, dtype=np.float32)[None, :], limit)
        ids = self.ids
        return [
            Hit(ids[p], s) if ids_only else self._hit(ids[p], s)
            for p, s in zip(positions[0].tolist(), scores[0].tolist())
        ]

    def search_vectors(self, vectors: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`search_vector` for many query rows at once, as arrays (what evaluation needs for thousands
        of queries): per row the positions in :attr:`ids` of the ``limit`` best chunks and their scores."""
        if not self.rows:
            empty = np.zeros((len(vectors), 0))
            return empty.astype(np.int64), empty.astype(np.float32)
        matrix = self._vectors()
        sims = np.asarray(vectors, dtype=np.float32) @ matrix.T  # (queries, chunks)
        order = top_k(sims, limit)
        return order, np.take_along_axis(sims, order, axis=1)

    def search_text(self, query: str, limit: int, filter: str | None = None) -> list[Hit]:
        """Chunks by BM25 over their ``embed_text``, best first, ids and scores only (positive scores)."""
        self._no_filter(filter)
        if self._bm25 is None:
            self._bm25 = BM25Fallback((i, row.chunk.embed_text) for i, row in self.rows.items())
        return [Hit(i, s) for i, s in self._bm25.search(query, limit)]

    # -- helpers
    def _hit(self, chunk_id: str, score: float) -> Hit:
        row = self.rows[chunk_id]
        return Hit(chunk_id, float(score), row.chunk, dict(row.metadata))

    def _vectors(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = np.stack([row.vector for row in self.rows.values()])
        return self._matrix

    def _changed(self) -> None:
        """Forget what searches built from the rows (the vector matrix and the BM25 index)."""
        self._matrix = None
        self._bm25 = None

    @staticmethod
    def _no_filter(filter: str | None) -> None:
        if filter:
            raise ConfigError(f"the in-memory store cannot apply filters ({filter!r}); use a Milvus index")


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Per row, the positions of the ``k`` highest scores, best first, ties in position order: exactly the
    first ``k`` of a stable descending sort, without sorting every row. ``np.partition`` finds each row's
    k-th score; only the positions scoring at least that much (k, or a few more on ties) are sorted."""
    n = scores.shape[1]
    k = max(0, min(k, n))
    if k == 0:
        return np.zeros((len(scores), 0), dtype=np.int64)
    neg = -scores
    if 4 * k >= n:  # most of the row anyway: sort it
        return np.argsort(neg, axis=1, kind="stable")[:, :k]
    kth = np.partition(neg, k - 1, axis=1)[:, k - 1]
    out = np.empty((len(scores), k), dtype=np.int64)
    for r in range(len(scores)):
        cand = np.flatnonzero(neg[r] <= kth[r])  # ascending positions, so a stable sort keeps ties in order
        out[r] = cand[np.argsort(neg[r, cand], kind="stable")[:k]]
    return out


__all__ = ["MemoryStore", "Row"]
