"""Pk and WindowDiff (chunkwise.evaluation.boundaries): known values, and agreement with NLTK's versions."""

from __future__ import annotations

import random

import pytest

from chunkwise.errors import ConfigError
from chunkwise.evaluation.boundaries import boundaries_from_offsets, default_k, pk, window_diff


def test_perfect_and_degenerate():
    ref = {3, 7}
    assert pk(ref, ref, 10) == 0.0 and window_diff(ref, ref, 10) == 0.0
    assert default_k(ref, 10) == 2  # 10 units / 3 segments / 2, rounded
    assert pk(ref, set(), 10) > 0 and window_diff(ref, set(range(1, 10)), 10) > 0
    assert pk(set(), set(), 1) == 0.0  # shorter than the window
    assert pk({5}, {5}, 3) == 0.0  # boundaries outside 1..n-1 are ignored
    with pytest.raises(ConfigError, match=r"^pk: n_units must be an int in \[1, inf\), got 0$"):
        pk(ref, ref, 0)
    with pytest.raises(ConfigError, match=r"^window_diff: k must be an int in \[1, inf\) or None, got 0$"):
        window_diff(ref, ref, 10, k=0)


def test_hand_computed_values():
    # 6 units, reference segments [0,3) [3,6); hypothesis cuts one unit late; k = 2 (explicit)
    # windows (i, i+2] for i = 0..3: ref boundary counts 0,1,1,0; hyp (cut at 4) 0,0,1,1
    assert pk({3}, {4}, 6, k=2) == pytest.approx(2 / 4)
    assert window_diff({3}, {4}, 6, k=2) == pytest.approx(2 / 4)
    # an extra cut inside a window that already has one: Pk forgives it, WindowDiff does not
    assert pk({3}, {3, 4}, 6, k=2) == pytest.approx(1 / 4)
    assert window_diff({3}, {3, 4}, 6, k=2) == pytest.approx(2 / 4)


def test_agrees_with_nltk():
    seg = pytest.importorskip("nltk.metrics.segmentation")
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(2, 40)
        ref = {b for b in range(1, n) if rng.random() < 0.2}
        hyp = {b for b in range(1, n) if rng.random() < 0.3}
        k = rng.randint(1, max(1, n - 1))
        # NLTK's strings mark the n-1 gaps between units
        r = "".join("1" if b in ref else "0" for b in range(1, n))
        h = "".join("1" if b in hyp else "0" for b in range(1, n))
        if n - 1 >= k:
            assert pk(ref, hyp, n, k=k) == pytest.approx(seg.pk(r, h, k=k))
            assert window_diff(ref, hyp, n, k=k) == pytest.approx(seg.windowdiff(r, h, k))


def test_boundaries_from_offsets():
    starts = [0, 10, 25, 40]
    assert boundaries_from_offsets(starts, [0, 10, 40]) == {1, 3}
    assert boundaries_from_offsets(starts, [12, 36]) == {1, 3}  # nearest sentence start
    assert boundaries_from_offsets(starts, [3]) == set()  # nearest is unit 0: no boundary
