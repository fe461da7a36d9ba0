"""The steps of ingestion, one definition for every engine: skip -> (chunk) -> finish -> vectors -> write.

:meth:`chunkwise.retrieval.index.Index.add` runs them in one process; the Ray engine
(:mod:`chunkwise.retrieval.ray_engine`) runs the same functions in its tasks (skip, chunk, finish), its actors
(embedding, late chunking) and its driver (planning the vectors, writing). Because both engines call the
same steps with the same arguments, a mode the local engine has (``vectors="pool"``, late chunking,
``context=headings|neighbors|llm``) exists on Ray too, and the two build the same chunks and vectors.

The steps take plain arguments and return plain values (no report, no progress bar), so a remote worker can
run them; the callers count and show progress.

Chunking itself is :func:`chunkwise.strategies.many.chunk_documents` (one embedding stream for a group of
documents when the strategy embeds while chunking).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..document import Chunk, Document
from ..embeddings.base import Embedder
from ..embeddings.vectors import pooled_vector
from ..errors import InputError
from ..store.base import Marker, Store
from ..store.rows import MAX_VARCHAR
from ..video.document import VideoDocument

#: texts per call to the embedder (also the step of the embedding progress bar)
EMBED_BATCH = 64


def is_unchanged(doc: Document, markers: Mapping[str, Marker]) -> bool:
    """True when ``doc`` is indexed *completely* with its current content: nothing to chunk or embed
    (an incomplete document, e.g. one whose llm context failed, is redone)."""
    marker = markers.get(doc.id)
    return marker is not None and marker.content_hash == doc.content_hash and marker.complete


def check_sizes(doc: Document, chunks: Sequence[Chunk]) -> None:
    """Refuse a chunk Milvus cannot store, before anything of the document is embedded."""
    for c in chunks:
        n = len(c.text.encode("utf-8", "surrogatepass"))
        if n > MAX_VARCHAR:
            raise InputError(
                f"chunk {c.index} is {n} bytes of UTF-8; Milvus stores at most {MAX_VARCHAR} "
                "per text field: lower --max-tokens",
                source=doc.source,
            )


@dataclass
class Finished:
    """A document's final chunks; ``complete`` is False when a chunk did not get the context it asked for,
    ``warnings`` the one-line messages to report for it."""

    chunks: list[Chunk]
    complete: bool = True
    warnings: list[str] = field(default_factory=list)
    context_seconds: float = 0.0


def finish_chunks(
    doc: Document, chunks: list[Chunk] | Exception | None, context: str | None, context_options: Mapping[str, Any]
) -> Finished:
    """The chunking result of ``doc`` made final: a video's ready-made clips, the context filled in
    (:func:`chunkwise.context.contextualize`), the sizes checked. Raises the chunking error, or an
    :class:`InputError` for a chunk too big to store."""
    if isinstance(chunks, Exception):
        raise chunks
    if chunks is None:  # a video arrives as ready-made clip chunks (chunkwise.video)
        assert isinstance(doc, VideoDocument), doc
        chunks = list(doc.chunks or [])
    out = Finished(chunks)
    if context:
        from ..context import contextualize

        t = time.perf_counter()
        ctx = context_options.get("contextualizer")
        before = getattr(ctx, "failures", 0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out.chunks = contextualize(doc, chunks, context, **context_options)
        prefix = f"{doc.source}: "
        for w in caught:
            message = str(w.message)
            out.warnings.append(message[len(prefix) :] if message.startswith(prefix) else message)
        out.complete = getattr(ctx, "failures", 0) == before
        if not out.complete:
            out.warnings.append(
                "indexed without the missing llm context and marked incomplete: the next run retries it"
            )
        out.context_seconds = time.perf_counter() - t
    check_sizes(doc, out.chunks)
    return out


@dataclass
class VectorPlan:
    """Where each chunk vector of a batch comes from: ``vectors`` (one array per document, pooled vectors
    already in), ``texts`` to embed as ``(document, chunk, embed_text)`` in order, ``late`` the documents
    whose vectors come from late chunking, ``reused`` the number of pooled vectors."""

    vectors: list[np.ndarray]
    texts: list[tuple[int, int, str]]
    late: list[int]
    reused: int = 0

    def text_batches(self, size: int = EMBED_BATCH) -> list[list[tuple[int, int, str]]]:
        """The texts in embedding calls of ``size``: the same calls on every engine, so the same vectors."""
        return [self.texts[a : a + size] for a in range(0, len(self.texts), size)]

    def fill(self, part: Sequence[tuple[int, int, str]], vectors: np.ndarray) -> None:
        for (d, i, _), v in zip(part, vectors):
            self.vectors[d][i] = v


def plan_vectors(pending: Sequence[tuple[Any, list[Chunk]]], dim: int, reuse: bool, late: bool) -> VectorPlan:
    """Plan the vectors of a batch, each chunk text embedded at most once: with ``late`` every document is
    late-chunked; with ``reuse`` (``vectors="pool"``) a chunk without context takes the mean of the
    sentence vectors chunking computed; every other chunk's ``embed_text`` is embedded."""
    plan = VectorPlan([], [], [])
    for d, (_doc, chunks) in enumerate(pending):
        vecs = np.zeros((len(chunks), dim), dtype=np.float32)
        if late and chunks:
            plan.late.append(d)
        elif not late:
            for i, c in enumerate(chunks):
                pooled = pooled_vector(c, dim) if reuse and not c.context else None
                if pooled is not None:
                    vecs[i] = pooled
                    plan.reused += 1
                else:
                    plan.texts.append((d, i, c.embed_text))
        plan.vectors.append(vecs)
    return plan


def late_vectors(doc: Document, chunks: list[Chunk], embedder: Embedder, late_options: Mapping[str, Any]) -> np.ndarray:
    """Late-chunked vectors of ``doc``'s chunks (:func:`chunkwise.context.late_chunk_vectors`); needs the
    document's whole text, so it runs where the document is."""
    from ..context import late_chunk_vectors

    return np.asarray(late_chunk_vectors(doc, chunks, embedder, **late_options), dtype=np.float32)


def embed_documents(
    pending: Sequence[tuple[Document, list[Chunk]]],
    embedder: Embedder,
    reuse: bool,
    late: bool,
    late_options: Mapping[str, Any],
    on_embedded=None,
) -> tuple[list[np.ndarray], int, int]:
    """The local engine's vectors step: one array per document of ``pending``, and the counts embedded
    and reused. ``on_embedded(n, tokens)`` is called after each embedding call with its chunks and their
    token counts (progress: an embedding call costs by its tokens more than by its number of texts)."""
    plan = plan_vectors(pending, embedder.dim, reuse, late)
    embedded = 0
    for d in plan.late:
        doc, chunks = pending[d]
        plan.vectors[d][:] = late_vectors(doc, chunks, embedder, late_options)
        embedded += len(chunks)
    for part in plan.text_batches():
        plan.fill(part, embedder.embed([t for _, _, t in part]))
        embedded += len(part)
        if on_embedded is not None:
            on_embedded(len(part), sum(pending[d][1][i].token_count or 0 for d, i, _ in part))
    return plan.vectors, embedded, plan.reused


@dataclass
class Written:
    """What :func:`write_documents` did: chunk ids written, stale chunks removed."""

    written: list[str]
    removed: int


def write_documents(
    store: Store,
    pending: Sequence[tuple[Any, list[Chunk]]],
    vectors: Sequence[np.ndarray],
    markers: dict[str, Marker],
    model_id: str,
    incomplete: AbstractSet[str] = frozenset(),
) -> Written:
    """Write embedded documents with the crash-safe protocol: unmark -> upsert -> delete stale -> mark
    (a run killed anywhere and run again ends with a clean run's chunks). ``markers`` is updated."""
    doc_ids = [doc.id for doc, _ in pending]
    store.unmark([d for d in doc_ids if d in markers])
    for d in doc_ids:
        markers.pop(d, None)
    written = store.upsert([(doc, chunks, vecs) for (doc, chunks), vecs in zip(pending, vectors)], model_id)
    keep = set(written)
    stored = store.chunk_ids(doc_ids)
    stale = sorted(set().union(*stored.values()) - keep) if stored else []
    removed = store.delete_chunks(stale)
    new_markers = [
        Marker(doc.id, doc.source, doc.content_hash, len(chunks), doc.id not in incomplete) for doc, chunks in pending
    ]
    store.mark(new_markers)
    markers.update({m.doc_id: m for m in new_markers})
    return Written(list(written), removed)


__all__ = [
    "EMBED_BATCH",
    "Finished",
    "VectorPlan",
    "Written",
    "check_sizes",
    "embed_documents",
    "finish_chunks",
    "is_unchanged",
    "late_vectors",
    "plan_vectors",
    "write_documents",
]
