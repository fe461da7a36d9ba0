"""What one search costs in calls to Milvus: the store client's methods are wrapped and counted.

Each call is a round trip to a server (over gRPC), and an engine call in process on Milvus Lite. The
configuration and collection facts are read once per opened index, and on Milvus Lite the BM25 side is
ranked by bm25s in process and the vector candidates by exact cosine over the stored vectors held in process,
so a hybrid search is one fetch of the final chunks.
"""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import FakeEmbedder
from index_data import count_calls, docs, lines

from chunkwise import Document
from chunkwise.retrieval import Index
from chunkwise.store import MilvusStore


@pytest.fixture
def index(tmp_path):
    ix = Index(tmp_path / "t.db", embedder=FakeEmbedder())
    ix.add(docs(), strategy=lines())
    yield ix
    ix.close()


def test_a_search_reads_configuration_and_collection_once(index):
    calls = count_calls(index)
    index.search("conductor tickets", k=3)  # the first: configuration, collection, the BM25 index
    first = sum(calls.values())
    calls.clear()
    for _ in range(3):
        index.search("conductor tickets", k=3)
    assert calls == Counter({"get": 3}), calls  # one fetch of the final chunks each
    calls.clear()
    for _ in range(3):
        index.search("conductor tickets", k=3, hybrid=False)
    assert calls == Counter({"search": 3}), calls
    assert first > 2  # what every search paid before: has_collection, get config, describe, ...


def test_filtered_hybrid_search_asks_for_the_admitted_ids_once(index):
    index.search("conductor tickets", k=3)
    calls = count_calls(index)
    hits = index.search("conductor tickets", k=3, filter='source == "kb/bees.txt"')
    assert hits and all(h.source == "kb/bees.txt" for h in hits)
    assert calls == Counter({"query": 1, "get": 1}), calls


def test_writes_of_the_same_index_reach_the_cached_bm25(index):
    assert index.search("conductor tickets", k=1)[0].text == "The conductor checks tickets twice."
    index.add([Document("Penguins huddle on the ice.", source="kb/penguins.txt")], strategy=lines())
    hit = index.search("penguins huddle", k=1)[0]
    assert hit.text == "Penguins huddle on the ice." and hit.bm25_rank == 1
    index.delete("kb/penguins.txt")
    assert all(h.source != "kb/penguins.txt" for h in index.search("penguins huddle", k=3))


def test_recreating_reads_the_new_configuration(tmp_path):
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        assert ix.config["strategy"]["params"].get("max_tokens") != 40
        ix.add(docs(), strategy=lines(max_tokens=40), recreate=True)
        assert ix.config["strategy"]["params"]["max_tokens"] == 40
        assert len(ix.search("conductor tickets", k=3)) == 3


@pytest.mark.parametrize("query", ["conductor tickets", "queen eggs summer", "lens fog winter", "night train"])
def test_bm25s_ranks_as_milvus_bm25_on_a_small_index(tmp_path, query):
    """The same hybrid results with Milvus Lite's own BM25 (``client_bm25=False``: the collection is made
    with the engine's BM25 function, which a default Lite index leaves out)."""
    with Index(store=MilvusStore(db=tmp_path / "t.db", client_bm25=False), embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        old = [(h.id, h.bm25_rank) for h in ix.search(query, k=3)]
        assert ix.store.bm25_builtin and not ix.store.uses_client_bm25
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        new = [(h.id, h.bm25_rank) for h in ix.search(query, k=3)]
        assert ix.store.uses_client_bm25
    assert new == old


def test_the_bm25_index_is_saved_for_the_next_process_and_dropped_by_a_write(tmp_path):
    """A later process loads the saved BM25 index instead of reading every text back (a scan); a write
    removes it before anything is written, so no process trusts an index that misses a chunk, and the
    writer, which updated it with every write, saves it again when it closes."""
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        ix.search("conductor tickets", k=3)
    assert (tmp_path / "t.db" / "chunkwise-bm25" / "postings.json").is_file()
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        calls = count_calls(ix)
        assert ix.search("conductor tickets", k=1)[0].text == "The conductor checks tickets twice."
        assert "query_iterator" not in calls and calls["query"] == 1, calls  # the count(*) check, no scan
        ix.add([Document("Penguins huddle on the ice.", source="kb/penguins.txt")], strategy=lines())
        assert not (tmp_path / "t.db" / "chunkwise-bm25").exists()
        calls.clear()
        assert ix.search("penguins huddle", k=1)[0].bm25_rank == 1  # the held copy, updated by the write
        assert "query_iterator" not in calls and "query" not in calls, calls  # no scan
        # an edit with the same number of chunks: the count alone could not tell
        ix.add([Document("Walruses rest on the ice.", source="kb/penguins.txt")], strategy=lines())
        assert not (tmp_path / "t.db" / "chunkwise-bm25").exists()
    assert (tmp_path / "t.db" / "chunkwise-bm25" / "postings.json").is_file()  # saved by the writer's close
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        hit = ix.search("walruses rest", k=1)[0]
        assert hit.text == "Walruses rest on the ice." and hit.bm25_rank == 1


def test_a_saved_index_that_misses_chunks_is_not_used(tmp_path):
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        ix.search("conductor tickets", k=3)
    saved = tmp_path / "t.db" / "chunkwise-bm25"
    keep = tmp_path / "kept"
    saved.rename(keep)
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:  # a write the saved index does not know
        ix.add([Document("Penguins huddle on the ice.", source="kb/penguins.txt")], strategy=lines())
    keep.rename(saved)
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        assert ix.search("penguins huddle", k=1)[0].bm25_rank == 1
