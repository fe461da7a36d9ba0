"""Segmentation quality against known boundaries: Pk (Beeferman et al., 1999) and WindowDiff (Pevzner &
Hearst, 2002), over *unit indices*.

Why unit indices: a chunking can only cut between units (sentences), so comparing cuts as positions in the
sequence of reference units is exact and independent of character lengths. A boundary ``b`` (``1 <= b <
n_units``) means "a new segment starts at unit ``b``"; ``0`` and ``n_units`` are implied and ignored.

Both measures slide a window of ``k`` units over the sequence and count the windows where the hypothesis
disagrees with the reference: Pk asks only "are the two window ends in the same segment?", WindowDiff
compares the *number* of boundaries inside the window (so it also penalises near-misses and extra cuts
that Pk forgives). Both are error rates in ``[0, 1]``: lower is better, 0 is perfect. ``k`` defaults to
half the mean reference segment length, rounded, at least 1 (the usual convention).

To map a chunking onto reference units, see :func:`boundaries_from_offsets`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..validation import Interval, validated


def _boundary_array(boundaries: Iterable[int], n_units: int) -> np.ndarray:
    """0/1 array ``a`` of length ``n_units`` with ``a[b] = 1`` for every boundary ``0 < b < n_units``."""
    a = np.zeros(max(n_units, 0), dtype=np.int64)
    for b in boundaries:
        b = int(b)
        if 0 < b < n_units:
            a[b] = 1
    return a


def default_k(ref_boundaries: Iterable[int], n_units: int) -> int:
    """Half the mean reference segment length (in units), rounded, at least 1."""
    n_segments = int(_boundary_array(ref_boundaries, n_units).sum()) + 1
    return max(1, int(round(n_units / n_segments / 2.0)))


#: the one declaration of Pk's and WindowDiff's sizes: units in the text, and the window (``None``: half the
#: mean reference segment)
_SIZES: dict[str, Any] = {"n_units": Interval(int, 1, None), "k": [Interval(int, 1, None), None]}


def _cumulative(
    ref_boundaries: Iterable[int], hyp_boundaries: Iterable[int], n_units: int, k: int | None
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The running boundary counts of reference and hypothesis and the window ``k`` (default: half the mean
    reference segment); ``None`` when the text is no longer than the window."""
    ref = list(ref_boundaries)
    k = default_k(ref, n_units) if k is None else k
    if n_units <= k:
        return None
    return np.cumsum(_boundary_array(ref, n_units)), np.cumsum(_boundary_array(hyp_boundaries, n_units)), k


@validated(**_SIZES)
def pk(ref_boundaries: Iterable[int], hyp_boundaries: Iterable[int], n_units: int, k: int | None = None) -> float:
    """Pk: the share of unit pairs ``(i, i + k)`` that the hypothesis puts in the same segment when the
    reference does not, or the other way round. Returns 0.0 when the text is shorter than the window."""
    counts = _cumulative(ref_boundaries, hyp_boundaries, n_units, k)
    if counts is None:
        return 0.0
    r, h, k = counts
    # unit i and unit i+k are in the same segment iff no boundary b with i < b <= i+k
    ref_same = (r[k:] - r[:-k]) == 0
    hyp_same = (h[k:] - h[:-k]) == 0
    return float(np.mean(ref_same != hyp_same))


@validated(**_SIZES)
def window_diff(
    ref_boundaries: Iterable[int], hyp_boundaries: Iterable[int], n_units: int, k: int | None = None
) -> float:
    """WindowDiff: the share of windows ``(i, i + k]`` whose boundary counts differ between reference and
    hypothesis. Returns 0.0 when the text is shorter than the window."""
    counts = _cumulative(ref_boundaries, hyp_boundaries, n_units, k)
    if counts is None:
        return 0.0
    r, h, k = counts
    return float(np.mean((r[k:] - r[:-k]) != (h[k:] - h[:-k])))


def boundaries_from_offsets(unit_starts: Sequence[int], cut_offsets: Iterable[int]) -> set[int]:
    """Map character offsets where chunks start onto reference unit indices.

    ``unit_starts`` are the sorted start offsets of the reference units. A cut at offset ``x`` becomes the
    index of the unit whose start is nearest to ``x`` (a chunk that starts mid-sentence counts as cutting
    at the closer sentence edge). Cuts that land on unit 0 are dropped.
    """
    starts = list(unit_starts)
    out: set[int] = set()
    for x in cut_offsets:
        i = bisect.bisect_right(starts, x) - 1
        if i < 0:
            continue
        if i + 1 < len(starts) and starts[i + 1] - x < x - starts[i]:
            i += 1
        if i > 0:
            out.add(i)
    return out


__all__ = ["pk", "window_diff", "default_k", "boundaries_from_offsets"]
