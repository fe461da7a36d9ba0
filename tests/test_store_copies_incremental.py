"""The in-process search copies of a Milvus Lite index (BM25 postings, vectors, chunk places) are updated by
the writes of the process that holds the database and saved when it closes, so the next search starts from
them instead of a scan of every chunk. An updated copy must be what a rebuild from the stored rows gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_data import lines

from chunkwise import Document
from chunkwise.retrieval import Index
from chunkwise.store.bm25 import BM25Postings
from chunkwise.store.milvus_search import BM25_FOLDER, PLACES_FOLDER, VECTORS_FOLDER, load_client_indexes, load_places
from chunkwise.store.places import ChunkPlaces
from chunkwise.store.vectors import VectorCache

WORDS = ["lamp", "lens", "keeper", "tide", "harbour", "rope", "signal", "storm", "light", "night", "the", "a"]


def copies_of(store):
    return (store._bm25.canonical(), store._vectors.canonical(), sorted(store._places.rows()))


def rebuilt(db: Path):
    """The copies a fresh process builds from the stored rows (nothing saved to start from)."""
    for folder in (BM25_FOLDER, VECTORS_FOLDER, PLACES_FOLDER):
        shutil.rmtree(db / folder, ignore_errors=True)
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix._open_existing()
        load_client_indexes(ix.store)
        load_places(ix.store)
        return copies_of(ix.store)


def saved(db: Path):
    return (
        BM25Postings.load(db / BM25_FOLDER).canonical(),
        VectorCache.load(db / VECTORS_FOLDER).canonical(),
        sorted(ChunkPlaces.load(db / PLACES_FOLDER).rows()),
    )


text_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
doc_st = st.lists(text_st, min_size=1, max_size=4).map(lambda lines_: "\n".join(lines_))
step_st = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5), doc_st),
    st.tuples(st.just("delete"), st.integers(0, 5), st.just("")),
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(step_st, min_size=1, max_size=6))
def test_copies_updated_by_writes_equal_a_rebuild(tmp_path_factory, steps):
    db = tmp_path_factory.mktemp("inc") / "t.db"
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add([Document("the keeper trims the lamp\nstorm at night", source="kb/0.txt")], strategy=lines())
        ix.search("keeper lamp", k=2)  # the copies built, saved, then held by every later write
        load_places(ix.store)
    present = {0}
    for kind, n, text in steps:
        if kind == "delete" and n not in present:
            continue
        with Index(db, embedder=FakeEmbedder()) as ix:  # each step a process of its own, as the CLI runs
            if kind == "add":
                ix.add([Document(text, source=f"kb/{n}.txt")], strategy=lines())
                present.add(n)
            else:
                ix.delete(f"kb/{n}.txt")
                present.discard(n)
            held = copies_of(ix.store) if ix.store._bm25 is not None else None  # updated by the writes
        if held is not None:  # (an unchanged document writes nothing)
            assert saved(db) == held  # and saved when the writer closed
    assert saved(db) == rebuilt(db)


def test_a_search_after_adding_one_document_starts_from_the_saved_copies(tmp_path, monkeypatch):
    db = tmp_path / "t.db"
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add(
            [Document(f"line {i} of the lamp\nthe keeper {i}", source=f"kb/{i}.txt") for i in range(20)],
            strategy=lines(),
        )
        ix.search("keeper lamp", k=2)
    with Index(db, embedder=FakeEmbedder()) as ix:
        ix.add([Document("Penguins huddle on the ice.", source="kb/penguins.txt")], strategy=lines())
    import chunkwise.store.milvus_search as ms

    def no_scan(*args, **kwargs):
        raise AssertionError("the copies were rebuilt from a scan")

    monkeypatch.setattr(ms, "_build_client_indexes", no_scan)
    with Index(db, embedder=FakeEmbedder()) as ix:
        hit = ix.search("penguins huddle", k=1)[0]
        assert hit.text == "Penguins huddle on the ice." and hit.bm25_rank == 1
        assert ix.store._bm25 is not None and len(ix.store._bm25) == ix.count() == 41


def test_bm25_postings_rank_like_bm25s():
    from chunkwise.store.bm25 import BM25Fallback

    pairs = [
        (f"{i:02d}", t)
        for i, t in enumerate(
            [
                "the cat sat on the mat",
                "dogs chase cats daily",  # "cats" is "cat" (number folded): one word more, no tie with the first
                "a cat and a cat",
                "storm at sea",
                "the lamp keeper",
                "keeper of the lamp and the lens",
                "cat lamp",
            ]
        )
    ]
    for q in ("cat", "lamp keeper", "storm", "lens cat"):
        ours = BM25Postings(pairs).search(q, 5)
        theirs = BM25Fallback(pairs).search(q, 5)
        assert [i for i, _ in ours] == [i for i, _ in theirs]
        assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], rel=1e-5)


def test_bm25_postings_keep_one_string_per_term():
    """Documents that share a term share its string object (the per-document term lists otherwise held a
    copy of every term of every document: most of the copy's memory)."""
    from chunkwise.store.bm25 import BM25Postings

    texts = ["the keeper trims the lighthouse wick", "a lighthouse keeper logs the storm"]
    postings = BM25Postings((str(i), "".join(t)) for i, t in enumerate(texts))
    first, second = (dict((t, t) for t in terms) for terms in postings._doc_terms())
    shared = set(first) & set(second)
    assert {"keeper", "lighthouse"} <= shared
    assert all(first[t] is second[t] for t in shared)
    assert [h for h, _ in postings.search("lighthouse wick", 2)] == ["0", "1"]


def test_vector_copy_appends_into_rows_allocated_ahead():
    """Many small writes to a large copy: the matrix is copied a few times, not once per write, and the
    copy ranks as one built from the same vectors at once."""
    import numpy as np

    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(2300, 8)).astype(np.float32)
    cache = VectorCache((f"c{n}", v) for n, v in enumerate(vecs[:2000]))
    copies = 0
    for n in range(2000, 2300):
        before = cache.matrix
        cache.upsert([(f"c{n}", vecs[n])])
        copies += not np.shares_memory(before, cache.matrix)
    cache.upsert([("c5", vecs[5] * 2)])  # an id written again moves to the end
    cache.remove(["c7"])
    whole = VectorCache([(f"c{n}", vecs[n]) for n in range(2300) if n not in (5, 7)] + [("c5", vecs[5] * 2)])
    assert copies <= 2 and cache.ids == whole.ids
    np.testing.assert_allclose(cache.matrix, whole.matrix, atol=1e-6)
    q = rng.normal(size=8)
    assert cache.search(q, 10) == whole.search(q, 10)
