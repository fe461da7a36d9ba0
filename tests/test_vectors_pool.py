"""``chunk_vectors(mode="pool")`` stores what ``Index.add(vectors="pool")`` stores, chunk for chunk.

Both go through :func:`chunkwise.embeddings.vectors.pooled_vector`: a chunk without context takes the mean
of the sentence vectors chunking kept, a chunk with context is embedded with it (its ``embed_text``).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FakeEmbedder

from chunkwise import Document, Section
from chunkwise.context import contextualize
from chunkwise.embeddings.vectors import chunk_vectors, pooled_vector
from chunkwise.retrieval import Index
from chunkwise.store.memory import MemoryStore
from chunkwise.strategies import get_strategy

TEXT = (
    "# Pumps\nThe pump moves water uphill. A pump needs a seal. Pumps hum when they run.\n"
    "# Bread\nBread needs flour and yeast. The dough rises overnight. Bakers knead the dough by hand.\n"
)
SPLIT = TEXT.index("# Bread")


def document() -> Document:
    sections = [Section(0, SPLIT, ("Pumps",), 1), Section(SPLIT, len(TEXT), ("Bread",), 1)]
    return Document(TEXT, source="<pool>", sections=sections, title="Notes")


def stored_and_pooled(context: str | None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list]:
    """The vectors the index stored by chunk id, and chunk_vectors' for the same chunks made alike."""
    emb = FakeEmbedder()
    strategy = get_strategy("semantic", embedder=emb, max_tokens=24, tokenizer="words")
    store = MemoryStore()
    with Index(store=store, embedder=emb) as index:
        index.add([document()], strategy=strategy, vectors="pool", context=context)
        stored = {cid: row.vector for cid, row in store.rows.items()}
    doc = document()
    chunks = strategy.chunk(doc)
    if context is not None:
        contextualize(doc, chunks, context)
    pooled = chunk_vectors(chunks, mode="pool", embedder=emb)
    return stored, {c.id: v for c, v in zip(chunks, pooled)}, chunks


@pytest.mark.parametrize("context", [None, "headings"])
def test_chunk_vectors_pool_is_what_the_index_stores(context):
    stored, pooled, chunks = stored_and_pooled(context)
    assert len(chunks) >= 2 and set(stored) == set(pooled)
    for cid, vector in stored.items():
        np.testing.assert_allclose(pooled[cid], vector, atol=1e-6)
    with_context = [c for c in chunks if c.context]
    assert bool(with_context) == (context is not None)


def test_a_chunk_with_context_is_embedded_not_pooled():
    _, pooled, chunks = stored_and_pooled("headings")
    emb = FakeEmbedder()
    for c in chunks:
        assert c.context and c.sentence_vectors is not None and len(c.sentence_vectors)
        np.testing.assert_allclose(pooled[c.id], emb.embed([c.embed_text])[0], atol=1e-6)
        assert pooled_vector(c, emb.dim) is None


def test_pool_without_context_calls_no_model_and_reuses_a_kept_vector():
    emb = FakeEmbedder()
    chunks = get_strategy("semantic", embedder=emb, max_tokens=24, tokenizer="words").chunk(document())
    calls = len(emb.calls)
    first = chunk_vectors(chunks, mode="pool", embedder=emb)
    assert len(emb.calls) == calls
    mean = np.asarray(chunks[0].sentence_vectors).mean(axis=0)
    np.testing.assert_allclose(first[0], mean / np.linalg.norm(mean), atol=1e-6)
    chunks[0].vector = emb.embed(["something else entirely"])[0]  # a vector the chunk already has wins
    again = chunk_vectors(chunks, mode="pool", embedder=emb)
    np.testing.assert_allclose(again[0], emb.embed(["something else entirely"])[0], atol=1e-6)
    np.testing.assert_allclose(again[1:], first[1:], atol=1e-6)
