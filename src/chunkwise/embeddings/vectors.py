"""Vectors from texts and chunks: embed in one call or in one length-sorted stream, pool a chunk's unit
vectors, and the embedder a name stands for.

Semantic strategies embed their units here; indexing and evaluation turn chunks into vectors here
(``pooled_vector`` reuses what chunking embedded, so a semantic chunking is never embedded twice).
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref
from collections.abc import Sequence

import numpy as np

from ..document import Chunk
from ..validation import EmbedderSpec, Options, check
from . import DEFAULT_EMBEDDER
from .base import Embedder, l2_normalize


@functools.lru_cache(maxsize=8)
def _named_embedder(name: str) -> Embedder:
    """Embedders by name are loaded once per process: loading the ONNX model costs about a second."""
    from ..embeddings import get_embedder

    return get_embedder(name)


def resolve_embedder(embedder: str | Embedder | None) -> Embedder:
    """An :class:`Embedder` from an instance, a name (``"minilm"``, ``"st:..."``) or ``None`` (the default)."""
    if embedder is None:
        embedder = DEFAULT_EMBEDDER
    check(embedder, EmbedderSpec(), "embedder")
    return _named_embedder(embedder) if isinstance(embedder, str) else embedder


#: the last few single queries' vectors per embedder object: a question is embedded by the search, the
#: relevance of its hits and the offline reader, each of which asks here
_QUERY_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_QUERY_MEMO_SIZE = 8
_QUERY_LOCK = threading.Lock()  # the web app searches from several threads


def query_vectors(embedder: Embedder, queries: Sequence[str]) -> np.ndarray:
    """Vectors of search queries: ``embed_queries`` (E5 reads ``query: TEXT``, documents ``passage: TEXT``),
    or ``embed`` for an embedder-like object written before queries were told apart. One query is embedded
    once per embedder while it stays among the last few asked."""
    embed_queries = getattr(embedder, "embed_queries", None)
    compute = embed_queries if embed_queries is not None else embedder.embed
    if len(queries) != 1:
        return compute(queries)
    try:
        with _QUERY_LOCK:
            memo = _QUERY_MEMO.setdefault(embedder, {})
            hit = memo.get(queries[0])
    except TypeError:  # not weakly referable
        return compute(queries)
    if hit is None:
        hit = np.asarray(compute(queries), dtype=np.float32)
        with _QUERY_LOCK:
            memo[queries[0]] = hit
            while len(memo) > _QUERY_MEMO_SIZE:
                memo.pop(next(iter(memo)))
    return hit.copy()


#: texts per call to the embedder in :func:`embed_stream_sorted` (the step of its progress bar); large
#: enough that every back-end fills its own batches, small enough that the bar moves
STREAM_SLICE = 1024


def embed_stream_sorted(embedder: Embedder, texts: Sequence[str], progress: bool = False) -> np.ndarray:
    """Vectors of ``texts`` (unit-normalised, float32, in the given order), embedded longest first in
    slices of :data:`STREAM_SLICE` so every batch the back-end forms holds texts of similar length.

    This is the "embedding floor" of ``benchmarks/bench_semantic_speed.py``: many documents cost what
    their sentences cost in large length-sorted batches.
    """
    dim = int(getattr(embedder, "dim", 0) or 0)
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda k: len(texts[k]), reverse=True)
    out: np.ndarray | None = None
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(texts), desc="embedding", unit="sentence", file=sys.stderr, leave=False, mininterval=0.5)
    try:
        for a in range(0, len(order), STREAM_SLICE):
            rows = order[a : a + STREAM_SLICE]
            vecs = embed_all(embedder, [texts[k] for k in rows])
            if out is None:
                out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
            out[rows] = vecs
            if bar is not None:
                bar.update(len(rows))
    finally:
        if bar is not None:
            bar.close()
    assert out is not None, "texts is not empty, so the loop above ran at least once"
    return out


def embed_all(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors of ``texts`` in one call (the back-end batches), unit-normalised, float32."""
    if not texts:
        dim = int(getattr(embedder, "dim", 0) or 0)
        return np.zeros((0, dim), dtype=np.float32)
    return l2_normalize(np.asarray(embedder.embed(list(texts)), dtype=np.float32))


def pooled_vector(chunk: Chunk, dim: int) -> np.ndarray | None:
    """A chunk vector from what chunking already embedded, or ``None`` when there is nothing to reuse.

    The chunk's own ``vector`` when it has one of width ``dim``, else the re-normalised mean of its
    ``sentence_vectors`` (kept by the semantic strategies). A chunk with a ``context`` has nothing to reuse:
    its vector is its ``embed_text`` (context and text) embedded, which no vector of its text alone stands
    for. Indexing, evaluation and :func:`chunk_vectors` use this one rule for ``vectors="pool"``, so a
    semantic chunking is never embedded a second time and every caller stores the same vectors.
    """
    if chunk.context:
        return None
    if chunk.vector is not None and np.shape(chunk.vector) == (dim,):
        return l2_normalize(np.asarray(chunk.vector, dtype=np.float32)[None])[0]
    sv = chunk.sentence_vectors
    if sv is not None and len(sv) and np.shape(sv)[-1] == dim:
        return l2_normalize(np.asarray(sv, dtype=np.float32).mean(axis=0)[None])[0]
    return None


def _pool_width(chunk: Chunk, embedder: Embedder | str | None) -> int:
    """The vector width pooling checks against: the embedder's (what the index checks) when it is an object
    that knows it, else the width of what the chunk kept (a name is not loaded just to ask)."""
    dim = 0 if isinstance(embedder, str) or embedder is None else int(getattr(embedder, "dim", 0) or 0)
    if dim:
        return dim
    for kept in (chunk.sentence_vectors, chunk.vector):
        if kept is not None and len(kept):
            return int(np.shape(kept)[-1])
    return 0


def chunk_vectors(chunks: Sequence[Chunk], mode: str = "embed", embedder: Embedder | str | None = None) -> np.ndarray:
    """One vector per chunk, stored on ``chunk.vector`` and returned as a float32 ``(n, dim)`` array.

    ``mode="embed"`` embeds each chunk's ``embed_text`` (its context plus text: the most faithful vector);
    ``mode="pool"`` reuses what chunking embedded (:func:`pooled_vector`; no model call for those) and
    embeds the other chunks' ``embed_text``: exactly what ``Index.add(vectors="pool")`` stores.
    """
    check(mode, Options("embed", "pool"), "mode", "chunk vectors")
    chunks = list(chunks)
    out: dict[int, np.ndarray] = {}  # chunk index -> vector: every chunk is pooled or in ``need``
    if mode == "pool":
        for k, c in enumerate(chunks):
            v = pooled_vector(c, _pool_width(c, embedder))
            if v is not None:
                out[k] = v
    need = [k for k in range(len(chunks)) if k not in out]
    if need:
        vecs = embed_all(resolve_embedder(embedder), [chunks[k].embed_text for k in need])
        for k, v in zip(need, vecs):
            out[k] = v
    if not chunks:
        return np.zeros((0, 0), dtype=np.float32)
    arr = np.stack([out[k] for k in range(len(chunks))]).astype(np.float32)
    for c, v in zip(chunks, arr):
        c.vector = v
    return arr


__all__ = ["resolve_embedder", "STREAM_SLICE", "embed_stream_sorted", "embed_all", "pooled_vector", "chunk_vectors"]
