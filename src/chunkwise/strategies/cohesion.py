"""Global cohesion segmentation: choose all boundaries at once by dynamic programming.

The idea is Chroma's ``ClusterSemanticChunker`` (Smith & Troynikov, "Evaluating Chunking Strategies for
Retrieval", Chroma research 2024; code: brandonstarxel/chunking_evaluation,
``chunking/cluster_semantic_chunker.py``): score a segmentation by how similar the sentences inside each
chunk are, relative to the document's average similarity, and find the best segmentation exactly.

For a region with unit vectors ``v_1..v_n`` and mean off-diagonal similarity ``mu``, a chunk ``[a, b]``
scores ``sum_{a <= i < j <= b} (v_i . v_j - mu) - penalty`` and the segmentation maximises the sum of its
chunks' scores subject to every chunk fitting ``max_tokens``. Pairs more similar than average pull sentences
together, pairs less similar push them apart, and ``penalty`` (per chunk) sets how much evidence a cut
needs: a higher penalty gives fewer, longer chunks.

Differences from Chroma's code, and why:

- Chroma sums the full sub-matrix (each pair twice) and has no penalty, so its only brake on chunk length is
  a maximum number of ~50-token pieces; here the cap is ``max_tokens`` itself, counted exactly, and the
  per-chunk penalty is a tunable prior (default measured best on the boundary benchmark).
- ``mu`` is computed from the sum of the vectors (``(|sum v|^2 - sum |v|^2) / (n (n-1))``), and pair sums
  from a *band* of adjacent similarities of width ``L`` (the most units that fit ``max_tokens``), so the
  work is ``O(n * L * dim)`` and the memory ``O(n * L)``: no ``n x n`` matrix, so 50,000-sentence
  documents are fine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..embeddings.base import Embedder
from ..validation import Interval
from .base import takes_old_names
from .embedding import EmbeddingStrategy
from .units import Decision, Units, fit_lengths

DEFAULT_PENALTY = 0.5
#: reward of a chunk that starts at a paragraph break or heading, in the units of the objective
DEFAULT_BREAK_REWARD = 0.25


class CohesionChunker(EmbeddingStrategy):
    """Maximise within-chunk similarity over the whole region, subject to ``max_tokens``.

    Parameters (besides the shared ``max_tokens``, ``min_tokens``, ``overlap``, ``tokenizer``,
    ``respect_sections``, ``embedder``):

    - ``penalty``: cost of each chunk, in units of "similarity above the mean" summed over pairs; higher
      means fewer, longer chunks.
    - ``break_reward`` (formerly ``structure_bonus``): reward of a chunk that starts at a paragraph break, list end or heading, in the
      same units (default 0.25, measured on the paragraph-layout boundary set; 0 = layout ignored).
    """

    name = "cohesion"
    cap_split_by_distance = True
    cut_cause = "objective"
    structure_param = "break_reward"
    _parameter_constraints = {"penalty": [Interval(float, 0, None)], "break_reward": [Interval(float, 0, None)]}

    @takes_old_names
    def __init__(
        self,
        *,
        penalty: float = DEFAULT_PENALTY,
        break_reward: float = DEFAULT_BREAK_REWARD,
        **shared: Any,
    ):
        super().__init__(**shared)
        self.break_reward = break_reward
        self.penalty = penalty

    def decide(self, units: Units, embedder: Embedder, text: str) -> Decision:
        n = len(units)
        if n < 2:
            return Decision(cuts=[], distance=[], threshold=[])
        d = units.adjacent_distances()
        cuts = optimal_cuts(units, self.max_tokens, float(self.penalty), float(self.break_reward))
        return Decision(cuts=cuts, distance=d.tolist(), threshold=[None] * (n - 1))


def optimal_cuts(units: Units, max_tokens: int, penalty: float, bonus: float = 0.0) -> list[int]:
    """Cut positions of the best segmentation (see the module docstring); a chunk that starts after a
    structural break (paragraph, list end, heading) earns ``bonus`` times the break's strength."""
    v = units.vectors.astype(np.float32, copy=False)
    n = len(v)
    total = v.sum(axis=0, dtype=np.float64)
    self_sim = float(np.einsum("ij,ij->", v, v, dtype=np.float64))
    mu = (float(total @ total) - self_sim) / (n * (n - 1))
    lengths = fit_lengths(units.tokens, units.gaps, max_tokens)
    width = int(lengths.max())
    # band[j, m] = v_j . v_{j-m} - mu for m = 1..width-1 (0 where j - m < 0)
    band = np.zeros((n, width), dtype=np.float64)
    for m in range(1, width):
        band[m:, m] = np.einsum("ij,ij->i", v[m:], v[:-m], dtype=np.float64) - mu
    # gain[j, k] = sum over pairs inside the chunk of length k ending at j
    #           = gain[j-1, k-1] + sum_{m=1}^{k-1} band[j, m]
    row = np.cumsum(band, axis=1, out=band)  # in place; row[j, k-1] = sum_{m=1}^{k-1} band[j, m] (band[:, 0] = 0)
    gain = np.zeros((n, width + 1), dtype=np.float64)
    for k in range(2, width + 1):
        gain[1:, k] = gain[:-1, k - 1] + row[1:, k - 1]
    best = np.full(n + 1, -np.inf)
    best[0] = 0.0
    choice = np.zeros(n + 1, dtype=np.int64)
    # start_bonus[s]: reward of a chunk starting at unit s (none at s = 0: the region edge is given)
    start_bonus = np.zeros(n + 1, dtype=np.float64)
    if bonus:
        start_bonus[1:n] = bonus * units.break_strength()
    for j in range(n):
        ks = np.arange(1, int(lengths[j]) + 1)
        scores = best[j + 1 - ks] + gain[j, ks] - penalty + start_bonus[j + 1 - ks]
        k = int(np.argmax(scores))
        best[j + 1] = scores[k]
        choice[j + 1] = ks[k]
    cuts = []
    j = n
    while j > 0:
        j -= int(choice[j])
        if j > 0:
            cuts.append(j)
    return sorted(cuts)


__all__ = ["CohesionChunker", "optimal_cuts", "DEFAULT_PENALTY", "DEFAULT_BREAK_REWARD"]
