"""Kamradt's semantic chunking (as in LangChain's ``SemanticChunker``), with a hard token cap.

The method: embed a window around each sentence (the sentence and ``buffer_size`` neighbours on each side),
take the cosine distance between each window and the next, and cut where the distance is unusually high.
"Unusually high" is a threshold computed over the document's distances (``threshold_type``):

==================== ================================================================ ===========
``threshold_type``   breakpoint where                                                 default amount
==================== ================================================================ ===========
``percentile``       distance > the ``amount``-th percentile of the distances         95
``standard_deviation`` distance > mean + ``amount`` * standard deviation              3
``interquartile``    distance > Q3 + ``amount`` * IQR (Tukey's fence; see below)        1.5
``gradient``         gradient of the distances > its ``amount``-th percentile          95
``absolute``         distance > ``amount`` (0.25 = adjacent similarity below 0.75)     0.25
==================== ================================================================ ===========

Instead of a threshold, ``n_chunks`` asks for that many chunks (the ``n_chunks - 1`` largest distances are
the cuts: the exact answer LangChain's ``number_of_chunks`` interpolates), and ``avg_tokens`` asks for chunks
of that mean size: a binary search over the number of cuts, like Chroma's ``KamradtModifiedChunker``
binary-searches its threshold, counting the chunks as they come out *after* the cap is enforced.

Where chunkwise differs from LangChain, on purpose:

- **Windows are pooled, not re-embedded** (``buffer_vectors="pool"``, the default): each sentence is embedded
  once and a window vector is the normalised sum of its sentences' vectors. LangChain embeds every window as
  text, so each sentence is embedded ``2 * buffer_size + 1`` times. ``buffer_vectors="text"`` reproduces
  LangChain (the parameter was called ``window``; that name still works with a deprecation warning) (and
  costs those extra embeddings; the sentences are still embedded once more for the chunk vectors).
- **Interquartile** uses Tukey's fence ``Q3 + k * IQR``, the usual outlier rule; LangChain computes
  ``mean + k * IQR``, which for skewed distance distributions lies well below Q3 + k * IQR and cuts more.
- **Hard cap**: sentences longer than the cap are split before embedding, and a segment over ``max_tokens``
  is cut at its largest internal distance (recursively) instead of being returned whole.
- Sentences come from chunkwise's splitter (abbreviations, decimals, CJK) rather than a ``[.?!]\\s+`` regex,
  and chunks are exact slices of the text (LangChain re-joins sentences with single spaces).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..embeddings.base import Embedder
from ..embeddings.vectors import embed_all
from ..errors import ConfigError
from ..validation import Interval, Options
from .base import takes_old_names
from .embedding import EmbeddingStrategy
from .params import strategy_label
from .units import Decision, Units

#: added to the distance at a paragraph break or heading (times its strength) before the threshold
DEFAULT_BREAK_DISTANCE = 0.2
THRESHOLD_TYPES = ("percentile", "standard_deviation", "interquartile", "gradient", "absolute")
#: the range of ``threshold_amount`` per ``threshold_type`` (a percentile; a cosine distance)
THRESHOLD_RANGES = {"percentile": (0, 100), "gradient": (0, 100), "absolute": (0, 2)}
THRESHOLD_DEFAULTS = {
    "percentile": 95.0,
    "standard_deviation": 3.0,
    "interquartile": 1.5,
    "gradient": 95.0,
    "absolute": 0.25,
}


class SemanticChunker(EmbeddingStrategy):
    """Cut where the distance between neighbouring sentence windows is unusually high.

    Parameters (besides the shared ``max_tokens``, ``min_tokens``, ``overlap``, ``tokenizer``,
    ``respect_sections``, ``embedder``):

    - ``buffer_size``: sentences on each side of a sentence in its window (default 0 = the sentence alone,
      measured best; LangChain's default is 1).
    - ``threshold_type`` / ``threshold_amount``: the breakpoint rule (see the module docstring); the amount
      defaults per type (percentile 95, standard_deviation 3, interquartile 1.5, gradient 95, absolute 0.25).
    - ``n_chunks``: ask for this many chunks per region instead (before the cap adds cuts).
    - ``avg_tokens``: ask for this mean chunk size instead (measured after the cap).
    - ``buffer_vectors`` (formerly ``window``): ``"pool"`` (window vectors pooled from sentence vectors) or
      ``"text"`` (windows embedded as text, LangChain parity).
    - ``break_distance`` (formerly ``structure_bonus``): a distance added at a paragraph break, list end or
      heading (times the break's strength) before the threshold is applied (default 0.2; 0 = layout
      ignored).
    """

    name = "semantic"
    cap_split_by_distance = True
    structure_param = "break_distance"
    _parameter_constraints = {
        "break_distance": [Interval(float, 0, None)],
        "buffer_size": [Interval(int, 0, None)],
        "threshold_type": [Options(*THRESHOLD_TYPES)],
        "threshold_amount": [Interval(float, None, None), None],  # its range depends on threshold_type
        "n_chunks": [Interval(int, 1, None), None],
        "avg_tokens": [Interval(int, 1, None), None],
        "buffer_vectors": [Options("pool", "text")],
    }

    @takes_old_names
    def __init__(
        self,
        *,
        buffer_size: int = 0,
        threshold_type: str = "percentile",
        threshold_amount: float | None = None,
        n_chunks: int | None = None,
        avg_tokens: int | None = None,
        buffer_vectors: str = "pool",
        break_distance: float = DEFAULT_BREAK_DISTANCE,
        **shared: Any,
    ):
        super().__init__(**shared)
        self.break_distance = break_distance
        self.buffer_size = buffer_size
        self.threshold_type = threshold_type
        self.threshold_amount = threshold_amount
        self.n_chunks = n_chunks
        self.avg_tokens = avg_tokens
        self.buffer_vectors = buffer_vectors

    def validate(self) -> None:
        """The declared constraints, then what relates parameters: ``threshold_amount``'s range for its
        ``threshold_type``, and ``n_chunks`` and ``avg_tokens`` being alternatives."""
        super().validate()
        span = THRESHOLD_RANGES.get(self.threshold_type)
        amount = self.threshold_amount
        if amount is not None and span is not None and not span[0] <= amount <= span[1]:
            raise ConfigError(
                f"{strategy_label(self)}: threshold_amount must be a number in [{span[0]}, {span[1]}] for "
                f"threshold_type={self.threshold_type!r}, got {amount!r}"
            )
        if self.n_chunks is not None and self.avg_tokens is not None:
            raise ConfigError(f"{strategy_label(self)}: give n_chunks or avg_tokens, not both")

    def effective_min_tokens(self) -> int:
        """The default ``min_tokens`` gives way to what was asked: none with ``n_chunks`` (that many chunks),
        at most half of ``avg_tokens``."""
        if self.min_tokens is None and self.n_chunks is not None:
            return 0
        if self.min_tokens is None and self.avg_tokens is not None:
            return min(super().effective_min_tokens(), int(self.avg_tokens) // 2)
        return super().effective_min_tokens()

    # -- windows and distances ----------------------------------------------------------------------------
    def window_distances(self, units: Units, embedder: Embedder, text: str) -> np.ndarray:
        """Cosine distance between the window of each unit and the next (``n - 1`` values, float64)."""
        n = len(units)
        if n < 2:
            return np.zeros(0, dtype=np.float64)
        b = int(self.buffer_size)
        if b == 0:
            return units.adjacent_distances()
        if self.buffer_vectors == "text":
            windows = [text[units.spans[max(0, i - b)][0] : units.spans[min(n - 1, i + b)][1]] for i in range(n)]
            w = embed_all(embedder, windows)
        else:
            w = pooled_windows(units.vectors, b)
        sims = np.einsum("ij,ij->i", w[:-1], w[1:]).astype(np.float64)
        return np.clip(1.0 - sims, 0.0, 2.0)

    def amount(self) -> float:
        return float(
            THRESHOLD_DEFAULTS[self.threshold_type] if self.threshold_amount is None else self.threshold_amount
        )

    def threshold(self, distances: np.ndarray) -> tuple[float, np.ndarray]:
        """The threshold and the array it applies to (the distances, or their gradient)."""
        k = self.amount()
        t = self.threshold_type
        if t == "absolute":
            return k, distances
        if t == "percentile":
            return float(np.percentile(distances, k)), distances
        if t == "standard_deviation":
            return float(distances.mean() + k * distances.std()), distances
        if t == "interquartile":
            q1, q3 = np.percentile(distances, [25, 75])
            return float(q3 + k * (q3 - q1)), distances
        grad = np.gradient(distances) if len(distances) > 1 else np.zeros_like(distances)
        return float(np.percentile(grad, k)), grad

    def decide(self, units: Units, embedder: Embedder, text: str) -> Decision:
        n = len(units)
        d = self.window_distances(units, embedder, text)
        if n < 2:
            return Decision(cuts=[], distance=[], threshold=[])
        d = self.boosted(units, d, self.break_distance)
        extra = {}
        if self.n_chunks is not None:
            cuts, thr = top_cuts(d, self.n_chunks - 1)
        elif self.avg_tokens is not None:
            cuts, thr = self._cuts_for_avg(units, d)
        else:
            thr, score = self.threshold(d)
            cuts = [int(k) + 1 for k in np.flatnonzero(score > thr)]
            if self.threshold_type == "gradient":
                extra["gradient"] = score.tolist()
        return Decision(cuts=cuts, distance=d.tolist(), threshold=[thr] * (n - 1), extra=extra)

    def _cuts_for_avg(self, units: Units, d: np.ndarray) -> tuple[list[int], float]:
        """Binary search on the number of cuts (largest distances first) for the mean chunk size closest to
        ``avg_tokens``, counting chunks after the cap is enforced."""
        n = len(units)
        order = np.argsort(-d, kind="stable")
        lengths = {}

        def mean_tokens(m: int) -> float:
            if m not in lengths:
                cuts = sorted(int(k) + 1 for k in order[:m])
                bounds = [0, *cuts, n]
                pieces = 0
                for s in range(len(bounds) - 1):
                    pieces += 1 + len(self._cap_cuts(units, bounds[s], bounds[s + 1], d))
                lengths[m] = units.tokens_of(0, n) / pieces
            return lengths[m]

        lo, hi = 0, n - 1  # mean_tokens is non-increasing in m
        assert self.avg_tokens is not None  # only called when it is set
        target = float(self.avg_tokens)
        while lo < hi:
            mid = (lo + hi) // 2
            if mean_tokens(mid) > target:
                lo = mid + 1
            else:
                hi = mid
        best = min({max(0, lo - 1), lo}, key=lambda m: (abs(mean_tokens(m) - target), m))
        return top_cuts(d, best)

    def _cap_cuts(self, units: Units, i: int, j: int, d: np.ndarray) -> list[int]:
        from .units import split_over_cap

        return split_over_cap(units, i, j, self.max_tokens, d)


def pooled_windows(vectors: np.ndarray, b: int) -> np.ndarray:
    """Normalised sum of the vectors of units ``i - b .. i + b`` (clipped at the ends) for every ``i``,
    computed with a running sum (``O(n * dim)`` whatever ``b``), never more than ``n * dim`` floats."""
    n = len(vectors)
    c = np.zeros((n + 1, vectors.shape[1]), dtype=np.float64)
    np.cumsum(vectors, axis=0, dtype=np.float64, out=c[1:])
    idx = np.arange(n)
    w = c[np.minimum(n, idx + b + 1)] - c[np.maximum(0, idx - b)]
    norms = np.linalg.norm(w, axis=1, keepdims=True)
    return (w / np.maximum(norms, 1e-12)).astype(np.float32)


def top_cuts(d: np.ndarray, m: int) -> tuple[list[int], float]:
    """Cuts after the ``m`` largest distances, and a threshold that separates them from the rest."""
    m = max(0, min(int(m), len(d)))
    if len(d) == 0:
        return [], 0.0
    order = np.argsort(-d, kind="stable")
    cuts = sorted(int(k) + 1 for k in order[:m])
    if m == 0:
        thr = float(d.max())
    elif m == len(d):
        thr = float(d.min()) - 1e-9
    else:
        thr = float((d[order[m - 1]] + d[order[m]]) / 2.0)
    return cuts, thr


__all__ = ["SemanticChunker", "THRESHOLD_TYPES", "THRESHOLD_DEFAULTS", "pooled_windows", "top_cuts"]
