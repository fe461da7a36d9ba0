"""Hybrid search on Milvus Lite ranks its vector candidates in process, and answers as Milvus did.

On a Milvus Lite directory the 1,000 vector candidates of a hybrid search come from exact cosine over the
stored vectors held in process (``store/vectors.py``) instead of Milvus Lite's search, which turns each
candidate into a whole row. These tests hold it to the answers of the Milvus path (``client_vectors=False``)
on a small index, to its round trips, and to the same life as the bm25s copy (saved for the next process,
dropped by every write).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter

import numpy as np
import pytest
from conftest import FakeEmbedder
from index_data import count_calls, docs, lines

from chunkwise import Document
from chunkwise.embeddings.base import l2_normalize
from chunkwise.retrieval import Index
from chunkwise.store import MilvusStore
from chunkwise.store.milvus_search import VECTORS_FOLDER
from chunkwise.store.vectors import VectorCache

WORDS = (
    "river stone lamp harbour engine winter bread orchard signal copper lantern meadow glacier violin ledger "
    "compass thunder pepper marble canyon falcon ribbon quarry saddle timber velvet walnut anchor beacon cellar"
).split()
QUERIES = ["river stone lamp", "winter bread orchard", "copper lantern meadow glacier", "falcon ribbon", "anchor"]


class SmoothEmbedder(FakeEmbedder):
    """A Gaussian vector per word, summed: texts that share words are similar, and unlike the sign vectors
    of ``FakeEmbedder`` two different texts practically never tie. (Exact ties are ordered by chunk id in
    process and by insertion order in Milvus Lite; a tie-free embedder compares the rankings themselves.)"""

    model_id = "smooth-bow-64"

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float64)
        for w in re.findall(r"\w+", text.lower()):
            seed = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v += np.random.default_rng(seed).normal(size=self.dim)
        return v.astype(np.float32) if v.any() else np.eye(self.dim, dtype=np.float32)[0]

    def embed(self, texts):
        texts = list(texts)
        self.texts_embedded += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(np.stack([self._vec(t) for t in texts]))


def corpus(n_docs: int = 30, lines_per_doc: int = 4) -> list[Document]:
    rng = random.Random(3)
    out = []
    for d in range(n_docs):
        text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9))) for _ in range(lines_per_doc))
        out.append(Document(text, source=f"kb/{d}.txt"))
    return out


@pytest.fixture(scope="module", params=[SmoothEmbedder, FakeEmbedder], ids=["smooth", "ties"])
def built(tmp_path_factory, request):
    """A 120-chunk index, by an embedder without ties and by one with many (``FakeEmbedder``'s sign vectors)."""
    db = tmp_path_factory.mktemp("client-search") / "c.db"
    with Index(db, embedder=request.param()) as ix:
        ix.add(corpus(), strategy=lines())
    return db, request.param


def answers(built, client_vectors: bool, **options) -> list[list[tuple]]:
    db, embedder = built
    store = MilvusStore(db=db, client_vectors=client_vectors)
    with Index(store=store, embedder=embedder()) as ix:
        assert store.uses_client_vectors is client_vectors
        return [[(h.id, h.vector_rank, h.bm25_rank) for h in ix.search(q, k=5, **options)] for q in QUERIES]


@pytest.mark.parametrize(
    "options",
    [{}, {"fusion": "rrf"}, {"filter": 'source in ["kb/1.txt", "kb/2.txt", "kb/5.txt", "kb/8.txt"]'}],
    ids=["zscore", "rrf", "filter"],
)
def test_hybrid_answers_as_the_milvus_vector_path_on_a_small_index(built, options):
    """The same top 5 (ids and both ranks) as with Milvus's own vector search. (Z-score fusion's scores may
    differ a little: Milvus Lite's approximate HNSW search can leave out a far candidate the exact search
    returns, which moves the candidates' mean; here it returns 119 of the 120 chunks for 1,000 asked.)"""
    new = answers(built, True, **options)
    old = answers(built, False, **options)
    assert all(new) and new == old


def tie_groups(hits) -> list[tuple[float, list[str]]]:
    """Hits as ``(cosine, ids)`` groups of equal cosines (to 1e-5: Milvus sums in another order), best
    first, without the last group (a limit may cut it anywhere)."""
    groups: list[tuple[float, list[str]]] = []
    for h in hits:
        if groups and abs(groups[-1][0] - h.score) < 1e-5:
            groups[-1][1].append(h.id)
        else:
            groups.append((h.score, [h.id]))
    return [(round(score, 4), sorted(ids)) for score, ids in groups[:-1]]


def test_vector_candidates_are_milvus_candidates(built):
    """The 50 nearest chunks and their cosines, in process and from Milvus, for queries near and far; the
    order of chunks with the same cosine is what may differ (it is float noise between equal vectors)."""
    db, make = built
    embedder = make()
    with Index(store=MilvusStore(db=db), embedder=embedder) as ix:
        ix.search("warm up", k=1)
        for q in QUERIES:
            vector = embedder.embed([q])[0]
            ix.store.client_vectors = True
            mine = ix.store.search_vector(vector, 50, ids_only=True)
            ix.store.client_vectors = False
            theirs = ix.store.search_vector(vector, 50, ids_only=True)
            assert len(mine) == len(theirs) == 50
            assert np.allclose([h.score for h in mine], [h.score for h in theirs], atol=1e-5)
            assert tie_groups(mine) == tie_groups(theirs)
            if make is SmoothEmbedder:  # no ties: the very same list
                assert [h.id for h in mine] == [h.id for h in theirs]


def test_a_hybrid_search_is_one_round_trip_and_a_filtered_one_two(tmp_path):
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        ix.search("conductor tickets", k=3)  # the first reads the configuration and builds the copies
        calls = count_calls(ix)
        for _ in range(3):
            ix.search("conductor tickets", k=3)
        assert calls == Counter({"get": 3}), calls  # the fetch of the final chunks
        calls.clear()
        hits = ix.search("conductor tickets", k=3, filter='source == "kb/bees.txt"')
        assert hits and all(h.source == "kb/bees.txt" for h in hits)
        assert calls == Counter({"query": 1, "get": 1}), calls  # the admitted ids, asked for once
        calls.clear()
        ix.search("conductor tickets", k=3, hybrid=False)
        assert calls == Counter({"search": 1}), calls  # dense search still asks Milvus for rows


def test_the_vectors_are_saved_for_the_next_process_and_dropped_by_a_write(tmp_path):
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        ix.search("conductor tickets", k=3)
    assert (tmp_path / "t.db" / VECTORS_FOLDER / "vectors.npy").is_file()
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        calls = count_calls(ix)
        assert ix.search("conductor tickets", k=1)[0].text == "The conductor checks tickets twice."
        assert "query_iterator" not in calls and calls["query"] == 1, calls  # one count(*) for both copies
        ix.add([Document("Penguins huddle on the ice.", source="kb/penguins.txt")], strategy=lines())
        assert not (tmp_path / "t.db" / VECTORS_FOLDER).exists()
        hit = ix.search("penguins huddle on the ice", k=1)[0]
        assert hit.text == "Penguins huddle on the ice." and hit.vector_rank == 1
        ix.delete("kb/penguins.txt")
        assert all(h.source != "kb/penguins.txt" for h in ix.search("penguins huddle on the ice", k=3))


def test_a_read_only_or_server_store_keeps_milvus_vectors():
    assert MilvusStore(db="x.db").uses_client_vectors
    assert not MilvusStore(db="x.db", client_vectors=False).uses_client_vectors
    assert not MilvusStore(uri="http://localhost:19530").uses_client_vectors


# -- the vector cache on its own -----------------------------------------------------------------------------
def test_the_cache_ranks_by_exact_cosine_within_the_allowed_ids():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(40, 8)).astype(np.float32)
    cache = VectorCache((f"c{n}", v.tolist()) for n, v in enumerate(vectors))
    query = rng.normal(size=8).astype(np.float32)
    cosines = vectors @ query / np.linalg.norm(vectors, axis=1) / np.linalg.norm(query)
    best = [f"c{n}" for n in np.argsort(-cosines, kind="stable")]
    got = cache.search(query, 10)
    assert [i for i, _ in got] == best[:10]
    assert np.allclose([s for _, s in got], np.sort(cosines)[::-1][:10], atol=1e-6)
    assert [i for i, _ in cache.search(query, 100)] == best  # a limit beyond the size: every chunk
    allowed = {"c3", "c7", "c11", "missing"}
    assert [i for i, _ in cache.search(query, 10, allowed)] == [i for i in best if i in allowed]
    assert cache.search(query, 10, {"missing"}) == [] and cache.search(query, 0) == []
    assert VectorCache(()).search(query, 5) == []


def test_the_cache_saves_and_loads_and_refuses_a_damaged_copy(tmp_path):
    cache = VectorCache([("a", [1.0, 0.0]), ("b", [0.6, 0.8]), ("z", [0.0, 0.0])])
    cache.save(tmp_path / "v")
    loaded = VectorCache.load(tmp_path / "v")
    assert loaded.ids == ["a", "b", "z"] and np.array_equal(loaded.matrix, cache.matrix)
    assert loaded.search(np.array([0.0, 1.0]), 2) == cache.search(np.array([0.0, 1.0]), 2)
    (tmp_path / "v" / "ids.json").write_text('["a"]')
    with pytest.raises(ValueError):
        VectorCache.load(tmp_path / "v")
    with pytest.raises(OSError):
        VectorCache.load(tmp_path / "none")


def test_an_index_too_large_to_copy_is_searched_by_milvus(tmp_path, monkeypatch):
    import chunkwise.store.milvus_search as milvus_search

    monkeypatch.setattr(milvus_search, "VECTORS_MAX_BYTES", 100)  # nine chunks of 64 float32s are more
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        # the build stopped spooling vectors once past the bound: nothing of them left on disk
        assert ix.store._vectors is None and not list((tmp_path / "t.db").glob(VECTORS_FOLDER + ".*"))
        first = [h.id for h in ix.search("conductor tickets", k=3)]
        assert ix.store._vectors is None and not ix.store.uses_client_vectors
        calls = count_calls(ix)
        assert [h.id for h in ix.search("conductor tickets", k=3)] == first
        assert calls == Counter({"search": 1, "get": 1}), calls
    assert not (tmp_path / "t.db" / VECTORS_FOLDER).exists()
