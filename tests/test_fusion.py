"""One fusion module for search and evaluation: RRF and z-score fusion, and `search --fusion zscore`."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FakeEmbedder
from index_data import docs, lines

from chunkwise.errors import ConfigError
from chunkwise.retrieval import Index
from chunkwise.retrieval.fusion import fuse_candidates_zscore, fuse_zscore, reciprocal_rank_fusion
from chunkwise.store.milvus import as_scores as _as_scores


def test_candidate_zscore_matches_full_zscore_when_both_sides_return_everything():
    rng = np.random.default_rng(0)
    dense, sparse = rng.random(12), rng.random(12) * 9
    ids = [f"c{i}" for i in range(12)]
    full = fuse_zscore(dense[None], sparse[None], 0.7)[0]
    fused = fuse_candidates_zscore(dict(zip(ids, dense)), dict(zip(ids, sparse)), 0.7)
    assert [i for i, _ in fused] == [ids[j] for j in np.argsort(-full, kind="stable")]
    assert np.allclose([s for _, s in fused], np.sort(full)[::-1], atol=1e-6)


def test_candidate_zscore_gives_a_missing_side_its_lowest_score():
    # b is only a dense candidate; for BM25 it counts as the lowest returned BM25 score (that of c)
    fused = dict(fuse_candidates_zscore({"a": 0.9, "b": 0.8}, {"a": 5.0, "c": 1.0}, 0.5))
    manual = fuse_zscore(np.array([[0.9, 0.8, 0.8]]), np.array([[5.0, 1.0, 1.0]]), 0.5)[0]
    assert fused == pytest.approx(dict(zip("abc", manual.tolist())))
    assert fuse_candidates_zscore({}, {}) == []


def test_zscore_keeps_score_gaps_that_rrf_flattens():
    # vectors barely prefer y over x; BM25 strongly prefers x: RRF ties them, z-score follows the gap
    dense, sparse = {"y": 0.81, "x": 0.80, "z": 0.10}, {"x": 30.0, "y": 1.0, "z": 0.5}
    rrf = reciprocal_rank_fusion([list(dense), list(sparse)])
    assert rrf[0][1] == pytest.approx(rrf[1][1])
    assert fuse_candidates_zscore(dense, sparse, 0.5)[0][0] == "x"


def test_bm25_distances_are_turned_into_scores_whatever_their_sign():
    lite = [{"id": "a", "distance": -7.0}, {"id": "b", "distance": -1.0}]  # Milvus Lite: negative, best first
    server = [{"id": "a", "distance": 7.0}, {"id": "b", "distance": 1.0}]
    assert _as_scores(lite) == {"a": 7.0, "b": 1.0} == _as_scores(server)


def test_search_zscore_fuses_the_same_candidates_as_rrf(tmp_path):
    with Index(tmp_path / "z.db", embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        rrf = ix.search("lens keepers polish", k=4, hybrid=True)
        z = ix.search("lens keepers polish", k=4, hybrid=True, fusion="zscore", dense_weight=0.3)
        assert z[0].text == "Keepers polish the lens at dusk."  # BM25's clear winner at BM25-heavy weight
        assert {r.id for r in z} <= {r.id for r in ix.search("lens keepers polish", k=50, hybrid=True)}
        assert all(a.score >= b.score for a, b in zip(z, z[1:]))
        assert rrf and z
        with pytest.raises(ConfigError, match="fusion"):
            ix.search("lens", hybrid=True, fusion="max")
        with pytest.raises(ConfigError, match="dense_weight"):
            ix.search("lens", hybrid=True, fusion="zscore", dense_weight=1.5)


def test_candidate_matrix_is_search_scoring_row_by_row():
    from chunkwise.retrieval.fusion import candidate_zscore_matrix

    rng = np.random.default_rng(1)
    dense, sparse = rng.random((3, 30)), np.maximum(rng.normal(size=(3, 30)), 0)
    full = candidate_zscore_matrix(dense, sparse, depth=30, dense_weight=0.7)
    # with every item a candidate on the dense side, only zero-BM25 items differ from full z-scores
    for q in range(3):
        fused = fuse_candidates_zscore(dict(enumerate(dense[q])), {i: s for i, s in enumerate(sparse[q]) if s > 0}, 0.7)
        assert [i for i, _ in fused] == list(np.argsort(-full[q], kind="stable"))
    cut = candidate_zscore_matrix(dense, sparse, depth=5, dense_weight=0.7)
    assert all(5 <= np.isfinite(cut[q]).sum() <= 10 for q in range(3))
    assert np.isfinite(cut[0, np.argmax(dense[0])])


def test_a_lone_bm25_match_is_not_lost_when_every_match_came_back():
    """BM25 returned every chunk it matches (fewer than asked): the others score 0, so a single match is
    above them; with the lowest returned score as the floor it would tie with every chunk it does not match."""
    from chunkwise.retrieval.fusion import fuse_candidates_zscore

    dense = {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5}
    sparse = {"c": 3.2}
    assert fuse_candidates_zscore(dense, sparse, 0.8, sparse_floor=0.0)[0][0] == "c"
    tied = fuse_candidates_zscore(dense, sparse, 0.8)
    assert tied[0][0] == "a" and len({s for _, s in tied}) == 1  # the old floor: no spread, the match lost
