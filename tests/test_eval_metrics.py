"""Span metrics (Chroma's arithmetic and the corrected set variant), ranking metrics, bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.evaluation import metrics as M


def by_doc(chunks):
    out = {}
    for d, s, e in chunks:
        out.setdefault(d, []).append((s, e))
    return {d: (np.array([a for a, _ in v]), np.array([b for _, b in v])) for d, v in out.items()}


def test_chroma_counts_overlapping_chunks_twice_set_does_not():
    refs = [("d", 10, 20)]
    retrieved = [("d", 0, 15), ("d", 12, 30)]
    iou, recall, precision = M.chroma_span_scores(refs, retrieved)
    assert recall == 1.0
    assert precision == pytest.approx(10 / 33)  # 15 + 18 retrieved characters, the overlap counted twice
    assert iou == pytest.approx(10 / 33)
    iou_s, recall_s, precision_s = M.set_span_scores(refs, retrieved)
    assert (recall_s, precision_s, iou_s) == (1.0, pytest.approx(10 / 30), pytest.approx(10 / 30))


def test_chroma_partial_recall_and_iou_denominator():
    refs = [("d", 0, 100), ("d", 200, 300)]
    retrieved = [("d", 50, 150), ("other", 0, 400)]
    iou, recall, precision = M.chroma_span_scores(refs, retrieved)
    assert recall == pytest.approx(50 / 200)
    assert precision == pytest.approx(50 / 500)  # a chunk of another corpus still costs its length
    assert iou == pytest.approx(50 / (500 + 150))  # + the 150 reference characters nobody retrieved
    iou_s, recall_s, precision_s = M.set_span_scores(refs, retrieved)
    assert (recall_s, precision_s) == (pytest.approx(0.25), pytest.approx(0.1))
    assert iou_s == pytest.approx(50 / (500 + 200 - 50))


def test_chroma_recall_denominator_adds_overlapping_references():
    refs = [("d", 0, 10), ("d", 5, 15)]
    _, recall, _ = M.chroma_span_scores(refs, [("d", 0, 15)])
    assert recall == pytest.approx(15 / 20)  # quirk 3: never reaches 1
    assert M.set_span_scores(refs, [("d", 0, 15)])[1] == 1.0


def test_touching_chunks_count_for_chroma_min_and_omega_only():
    refs = [("d", 10, 20)]
    chunks = by_doc([("d", 0, 10), ("d", 10, 20), ("d", 20, 30), ("d", 31, 40)])
    omega, count = M.chroma_precision_omega(refs, chunks)
    assert count == 3  # (0,10) and (20,30) only touch the reference
    assert omega == pytest.approx(10 / 30)  # union of the three "highlighted" chunks
    omega_s, count_s = M.set_precision_omega(refs, chunks)
    assert (omega_s, count_s) == (1.0, 1)
    # no chunk at all near the reference
    assert M.chroma_precision_omega([("d", 45, 50)], chunks) == (0.0, 0)


def test_omega_adds_uncovered_reference_characters():
    refs = [("d", 5, 25)]
    chunks = by_doc([("d", 0, 10), ("d", 30, 40)])  # 10..25 of the reference lies in no chunk
    omega, count = M.chroma_precision_omega(refs, chunks)
    assert count == 1
    assert omega == pytest.approx(5 / 25)  # 5 / |(0,10) ∪ (10,25)|


def test_ranges_helpers():
    assert M.union_ranges([(5, 8), (0, 3), (3, 4), (7, 10)]) == [(0, 4), (5, 10)]
    assert M.chroma_intersect((0, 5), (5, 9)) == (5, 5)
    assert M.chroma_intersect((0, 5), (6, 9)) is None
    assert M.chroma_difference([(0, 10)], (3, 5)) == [(0, 3), (5, 10)]
    assert M.chroma_difference([(0, 10)], (0, 10)) == []


ranges = st.lists(st.tuples(st.integers(0, 300), st.integers(1, 60)), min_size=1, max_size=8)


def disjoint(pairs, gap=1):
    """Non-overlapping ranges with at least ``gap`` characters between them."""
    out, pos = [], 0
    for skip, length in pairs:
        start = pos + skip % 40 + gap
        out.append(("d", start, start + length))
        pos = start + length
    return out


@settings(max_examples=150, deadline=None)
@given(ranges, ranges)
def test_chroma_equals_set_without_overlaps(ref_pairs, chunk_pairs):
    """Quirks 2 and 3 only bite with overlapping chunks or references: otherwise both agree."""
    refs, chunks = disjoint(ref_pairs), disjoint(chunk_pairs, gap=0)
    a, b = M.chroma_span_scores(refs, chunks), M.set_span_scores(refs, chunks)
    assert a == pytest.approx(b)


@settings(max_examples=150, deadline=None)
@given(ranges, st.lists(st.tuples(st.integers(0, 400), st.integers(1, 80)), min_size=0, max_size=10))
def test_scores_are_fractions_and_set_iou_bounds(ref_pairs, raw_chunks):
    refs = disjoint(ref_pairs)
    chunks = [("d", s, s + n) for s, n in raw_chunks]
    for iou, recall, precision in (M.chroma_span_scores(refs, chunks), M.set_span_scores(refs, chunks)):
        assert 0 <= iou <= 1 and 0 <= recall <= 1 and 0 <= precision <= 1
    iou, recall, precision = M.set_span_scores(refs, chunks)
    assert iou <= min(recall, precision) + 1e-12


def test_document_metrics():
    ranked = ["b", "a", "c", "d"]
    assert M.doc_recall_at_k(ranked, ["a", "d"], 2) == 0.5
    assert M.reciprocal_rank(ranked, ["a", "d"]) == 0.5
    assert M.reciprocal_rank(ranked, ["z"]) == 0.0
    assert M.ndcg_at_k(ranked, ["b"], 10) == 1.0
    assert M.ndcg_at_k(ranked, ["a"], 10) == pytest.approx(1 / np.log2(3))
    assert M.ndcg_at_k(ranked, ["a", "d"], 10) == pytest.approx(
        (1 / np.log2(3) + 1 / np.log2(5)) / (1 + 1 / np.log2(3))
    )


def test_paired_bootstrap():
    rng = np.random.default_rng(1)
    a = rng.random(200)
    same = M.paired_bootstrap(a, a)
    assert same["diff"] == 0 and not same["significant"]
    better = M.paired_bootstrap(a + 0.05, a)
    assert better["significant"] and better["lo"] > 0 and better["diff"] == pytest.approx(0.05)
    b = rng.random(200)
    noisy = M.paired_bootstrap(a, b, seed=3)
    assert noisy["lo"] <= noisy["diff"] <= noisy["hi"]
    assert noisy == M.paired_bootstrap(a, b, seed=3)  # seeded: the same interval every run
    assert M.paired_bootstrap(a, a[::-1], seed=7) == M.paired_bootstrap(a, a[::-1], seed=7)
    with pytest.raises(ValueError):
        M.paired_bootstrap(a, a[:5])
