"""Evaluation runs with a second stage (``rerank=...``) and with several chunk sizes (``granularities=[...]``).

A reranker with no weight of its own (``maxsim:0``) must leave every metric exactly as the first stage
had it, which checks the whole path (candidates, new order, document ranking) against the run without it.
Several granularities are checked through the fusion itself (reciprocal rank fusion of each size's ranking,
chunk positions of part after part) and through a run: its chunks are those of every size together.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FakeEmbedder

from chunkwise.document import Chunk
from chunkwise.errors import ConfigError
from chunkwise.evaluation import Evaluator, parse_run_spec
from chunkwise.evaluation.ranking import fuse_granularities
from chunkwise.retrieval.fusion import reciprocal_rank_fusion

BASE = "fixed:max_tokens=6,overlap=0,tokenizer=words"


def test_a_reranker_without_weight_is_the_first_stage_exactly(dataset):
    ev = Evaluator(dataset, FakeEmbedder(), k=5)
    for retrieval in ("hybrid=false", "hybrid=true,fusion=zscore", "hybrid=true,fusion=rrf"):
        plain = ev.run(parse_run_spec(f"{BASE},{retrieval}"))
        same = ev.run(parse_run_spec(f"{BASE},{retrieval},rerank=maxsim:0"))
        for metric, values in plain.per_query.items():
            np.testing.assert_array_equal(same.per_query[metric], values, err_msg=f"{retrieval} {metric}")


def test_maxsim_rerank_changes_the_order_and_says_so_in_the_name(dataset):
    ev = Evaluator(dataset, FakeEmbedder(), k=5)
    plain = ev.run(parse_run_spec(BASE))
    reranked = ev.run(parse_run_spec(f"{BASE},rerank=maxsim,rerank_depth=8"))
    assert reranked.spec.name.endswith("rerank=maxsim@8")
    assert set(reranked.per_query) == set(plain.per_query)
    assert all(0.0 <= v <= 1.0 for v in reranked.per_query["ndcg@10"])


def span(source: str, start: int, end: int) -> Chunk:
    return Chunk(
        text="x" * (end - start),
        start=start,
        end=end,
        index=0,
        id=f"{source}:{start}:{end}",
        doc_id=source,
        source=source,
        token_count=1,
        strategy="fixed",
    )


def test_fused_granularities_are_rrf_over_the_positions_of_every_part():
    small = [span("a", 0, 4), span("a", 4, 8), span("b", 0, 4)]
    large = [span("a", 0, 8), span("b", 0, 9)]
    orders = [np.array([[2, 0, 1]]), np.array([[1, 0]])]
    chunks, deep, scores = fuse_granularities([(small, orders[0]), (large, orders[1])])
    assert chunks == small + large
    fused = reciprocal_rank_fusion([[2, 0, 1], [4, 3]])  # the large part's positions follow the small part's
    assert deep.tolist() == [[i for i, _ in fused][:3]]
    assert deep[0, 0] == 2  # tied first places: the first part (the smallest size) wins, as RRF's ties go
    np.testing.assert_allclose(scores[0, [i for i, _ in fused]], [s for _, s in fused], rtol=1e-6)


def test_a_span_cut_alike_at_two_sizes_is_one_candidate_with_its_best_vote():
    """A short document is one chunk at every size: it must not fill two of the top places, nor, with two
    votes, outrank the best chunk of a long document that only one size cut that way."""
    small = [span("short", 0, 5), span("long", 0, 4), span("long", 4, 8)]
    large = [span("short", 0, 5), span("long", 0, 8)]
    orders = [np.array([[0, 1, 2]]), np.array([[0, 1]])]
    chunks, deep, scores = fuse_granularities([(small, orders[0]), (large, orders[1])])
    assert deep[0].tolist() == [0, 1, 4]  # the short document once (its first copy), then the rest
    assert scores[0, 0] == pytest.approx(1 / 61) and scores[0, 3] == 0.0  # its best vote; the copy none
    assert scores[0, 1] == pytest.approx(scores[0, 4])  # second places of either size stay level


def test_a_run_at_several_sizes_pools_their_chunks(dataset):
    ev = Evaluator(dataset, FakeEmbedder(), k=5)
    sizes = [ev.run(parse_run_spec(f"fixed:max_tokens={n},overlap=0,tokenizer=words")) for n in (4, 12)]
    fused = ev.run(parse_run_spec("fixed:overlap=0,tokenizer=words,granularities=[12,4]"))
    assert fused.spec.granularities == [4, 12] and "granularities=4+12" in fused.spec.name
    assert fused.stats["chunks"] == sum(r.stats["chunks"] for r in sizes)
    assert "pk" not in fused.scores  # boundaries compare one chunking's starts with the gold ones
    assert all(0.0 <= v <= 1.0 for v in fused.per_query["recall@5"])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (f"{BASE},granularities=[4,12],expand=neighbors:1", "granularities and expand do not combine"),
        (f"{BASE},granularities=[4]", "two or more chunk sizes"),
        (f"{BASE},rerank=bm25", "rerank must be one of"),
        (f"{BASE},rerank=maxsim,rerank_depth=0", r"rerank_depth must be an int in \[1, 1000\]"),
    ],
)
def test_contradictions_are_one_config_error(dataset, spec, message):
    with pytest.raises(ConfigError, match=message):
        Evaluator(dataset, FakeEmbedder(), k=5).run(parse_run_spec(spec))
