"""The in-memory store (exact cosine + the shared BM25) and evaluation retrieving through it."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeEmbedder
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkwise.evaluation.runner as runner
from chunkwise.document import Document
from chunkwise.errors import ChunkwiseError, ConfigError
from chunkwise.evaluation import Evaluator, parse_run_spec
from chunkwise.retrieval import Index
from chunkwise.store import Store
from chunkwise.store.bm25 import BM25Fallback
from chunkwise.store.memory import MemoryStore
from chunkwise.strategies import get_strategy

TEXT = (
    "Bees make honey in the hive.\n\nThe queen lays eggs all summer.\n\nLamps need oil to burn.\n\n"
    "Oil lamps smoke in the hall.\n\nBees make honey in the hive."
)


def filled(emb=None):
    """A store holding TEXT's paragraph chunks (the first and last have the same text: a tie)."""
    emb = emb or FakeEmbedder()
    doc = Document(TEXT, source="kb.txt")
    chunks = get_strategy("recursive", max_tokens=8, tokenizer="words", separators=["\n\n"]).chunk(doc)
    store = MemoryStore()
    store.create({"x": 1}, emb.dim)
    store.upsert([(doc, chunks, emb.embed([c.text for c in chunks]) * 3.0)], emb.model_id)
    return store, chunks, emb


def test_vector_search_is_exact_cosine_with_ties_in_store_order():
    store, chunks, emb = filled()
    assert isinstance(store, Store) and store.count() == len(chunks) == 5
    q = emb.embed(["bees honey hive"])[0]
    hits = store.search_vector(q, 5)
    unit = emb.embed([c.text for c in chunks])  # stored vectors are normalised (they were written x3)
    expected = sorted(range(5), key=lambda i: (-float(unit[i] @ q), i))
    assert [h.id for h in hits] == [chunks[i].id for i in expected]
    assert hits[0].chunk is chunks[0] and hits[1].chunk is chunks[4]  # same text: the earlier one first
    assert hits[0].score == pytest.approx(float(unit[0] @ q), abs=1e-6) and hits[0].score == hits[1].score
    assert set(hits[0].metadata) == {"document", "title"}  # what a Milvus row carries
    assert [h.chunk for h in store.search_vector(q, 2, ids_only=True)] == [None, None]
    positions, scores = store.search_vectors(np.stack([q, q]), 3)
    assert positions.shape == (2, 3) and [store.ids[p] for p in positions[0]] == [h.id for h in hits[:3]]


def test_text_search_is_the_shared_bm25_and_filters_are_refused():
    store, chunks, _ = filled()
    reference = BM25Fallback((c.id, c.embed_text) for c in chunks)
    assert [(h.id, h.score) for h in store.search_text("oil lamps", 5)] == reference.search("oil lamps", 5)
    assert store.search_text("the", 5) == []  # only stop words
    with pytest.raises(ConfigError, match="filter"):
        store.search_vector(np.ones(64, dtype=np.float32), 3, filter="source == 'kb.txt'")
    with pytest.raises(ConfigError, match="filter"):
        store.search_text("oil", 3, filter="source == 'kb.txt'")


def test_writes_replace_in_place_delete_and_refuse_bad_vectors():
    store, chunks, emb = filled()
    order = store.ids
    doc = Document(TEXT, source="kb.txt")
    store.upsert([(doc, chunks[:1], emb.embed(["queen eggs"]))], emb.model_id)
    assert store.ids == order  # a rewritten chunk keeps its place
    assert store.search_vector(emb.embed(["queen eggs"])[0], 1)[0].id == chunks[0].id  # and its new vector
    assert store.fetch([chunks[1].id, "nope"])[0].chunk is chunks[1]
    with pytest.raises(ChunkwiseError, match="non-finite"):
        store.upsert([(doc, chunks[:1], np.full((1, emb.dim), np.nan, dtype=np.float32))], emb.model_id)
    assert store.delete_documents([doc.id]) == 5 and store.count() == 0
    assert store.search_vector(np.ones(emb.dim, dtype=np.float32), 3) == [] and store.search_text("oil", 3) == []


def test_an_index_runs_over_it(tmp_path):
    with Index(store=MemoryStore(), embedder=FakeEmbedder()) as ix:
        assert (
            ix.add(
                [Document(TEXT, source="kb.txt")], strategy="recursive", params={"max_tokens": 8, "tokenizer": "words"}
            ).chunks
            > 0
        )
        assert "honey" in ix.search("bees honey", k=1)[0].text
        assert any("Oil" in h.text for h in ix.search("oil lamps", k=2, hybrid=True))


def test_evaluation_retrieves_through_the_store(dataset, monkeypatch):  # noqa: F811
    calls = []
    original = MemoryStore.search_vectors

    def spy(self, vectors, limit):
        calls.append((len(vectors), limit, self.count()))
        return original(self, vectors, limit)

    monkeypatch.setattr(MemoryStore, "search_vectors", spy)
    ev = Evaluator(dataset, FakeEmbedder(), k=5)
    res = ev.run(parse_run_spec("fixed:max_tokens=6,overlap=0,tokenizer=words,hybrid=true,fusion=zscore"))
    n = res.stats["chunks"]
    # every chunk's similarity for every query at once (documents not among the candidates), then each
    # query ranked as Index.search ranks it: its vector candidates, ZSCORE_DEPTH deep
    from chunkwise.retrieval.fusion import ZSCORE_DEPTH

    assert calls == [(len(dataset.queries), n, n)] + [(1, ZSCORE_DEPTH, n)] * len(dataset.queries)


def test_store_imports_nothing_from_later_layers():
    root = Path(runner.__file__).resolve().parent.parent / "store"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(("retrieval", "evaluation", "chunkwise.retrieval")), path


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 80), st.integers(0, 90), st.integers(0, 2**32 - 1), st.integers(1, 5))
def test_top_k_is_the_head_of_a_stable_sort(queries, n, k, seed, levels):
    """top_k (partition, then sort the few) equals the first k of a stable descending sort, ties included:
    scores drawn from a handful of values make ties everywhere, at the k-th place too."""
    from chunkwise.store.memory import top_k

    scores = np.random.default_rng(seed).integers(0, levels, (queries, n)).astype(np.float32)
    expected = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(top_k(scores, k), expected)
