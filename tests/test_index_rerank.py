"""The second stage hook of ``Index.search``: with ``rerank`` the first stage retrieves ``max(k, rerank_depth)``
candidates and ``rerank_results`` picks and orders the ``k``; without it nothing changes. The reranker here is
a fake (the real ones are tested beside ``chunkwise.retrieval.rerank``)."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import FakeEmbedder
from index_data import docs, lines

from chunkwise.retrieval import Index

rerank = pytest.importorskip("chunkwise.retrieval.rerank", reason="the rerank module is not in this tree")


class FakeRerank:
    """Records each call and returns the candidates reversed, the first ``k``, ranked 1..k."""

    def __init__(self):
        self.calls: list[dict] = []

    def __call__(self, query, results, spec, embedder=None, k=5):
        self.calls.append({"query": query, "n": len(results), "spec": spec, "embedder": embedder, "k": k})
        return [dataclasses.replace(r, rank=i) for i, r in enumerate(reversed(results[-k:]), start=1)]


@pytest.fixture
def index(tmp_path, monkeypatch):
    fake = FakeRerank()
    monkeypatch.setattr(rerank, "rerank_results", fake)
    ix = Index(tmp_path / "t.db", embedder=FakeEmbedder())
    ix.add(docs(), strategy=lines())  # nine one-line chunks
    ix.fake = fake
    yield ix
    ix.close()


@pytest.mark.parametrize("hybrid", [False, True])
def test_rerank_gets_the_deeper_first_stage_and_returns_its_order(index, hybrid):
    first = index.search("the queen lays eggs", k=9, hybrid=hybrid)
    hits = index.search("the queen lays eggs", k=2, hybrid=hybrid, rerank="cross:fake-model", rerank_depth=4)
    call = index.fake.calls[-1]
    assert (call["query"], call["n"], call["spec"], call["k"]) == ("the queen lays eggs", 4, "cross:fake-model", 2)
    assert call["embedder"] is index.embedder()
    assert [h.id for h in hits] == [first[3].id, first[2].id] and [h.rank for h in hits] == [1, 2]


def test_depth_below_k_retrieves_k_and_no_rerank_is_the_first_stage(index):
    index.search("night train", k=3, rerank="cross:fake-model", rerank_depth=1)
    assert index.fake.calls[-1]["n"] == 3
    calls = len(index.fake.calls)
    for spec in (None, "", "none", " None "):
        hits = index.search("night train", k=3, rerank=spec)
        assert [h.id for h in hits] == [h.id for h in index.search("night train", k=3)]
    assert len(index.fake.calls) == calls


def test_ask_passes_rerank_through(index):
    index.ask("who lays eggs?", k=2, rerank="cross:fake-model", rerank_depth=5)
    assert (index.fake.calls[-1]["spec"], index.fake.calls[-1]["n"], index.fake.calls[-1]["k"]) == (
        "cross:fake-model",
        5,
        2,
    )


def test_a_bad_depth_is_one_config_error(index):
    from chunkwise.errors import ConfigError

    with pytest.raises(ConfigError, match=r"rerank_depth must be an int in \[1, 1000\], got 0"):
        index.search("bees", rerank="cross:fake-model", rerank_depth=0)
