"""Max–Min semantic chunking (Kiss, Nagy & Szilágyi, 2025), with a hard token cap.

Reference: Csaba Kiss, Marcell Nagy, Péter Szilágyi, "Max–Min semantic chunking of documents for RAG
application", *Discover Computing* 28 (2025), doi:10.1007/s10791-025-09638-7; the authors' code is
``process_sentences`` in github.com/hsdslab/MaxMinChunking (``maxmin_chunker.py``).

The rule, as in the authors' code: embed every sentence first, then walk them in order with a current
chunk ``C``. For the next sentence ``s``:

- if ``C`` has one sentence ``c``: ``s`` joins when ``init_constant * sim(s, c) > fixed_threshold``;
- otherwise: ``s`` joins when ``max_{c in C} sim(s, c) > max(fixed_threshold,
  c * sigmoid(|C| - 1) * min_sim(C))``, where ``min_sim(C)`` is the smallest pairwise similarity inside
  ``C``: a sentence must be at least as close to *some* sentence of the chunk as the chunk's loosest pair is
  (scaled down by ``c * sigmoid(|C|-1)``, which tolerates more spread in larger chunks);
- otherwise ``s`` starts a new chunk.

The authors' defaults are ``fixed_threshold=0.6, c=0.9, init_constant=1.5``, used with BGE embeddings
(bge-base-en-v1.5, whose similarities run much higher). With all-MiniLM-L6-v2 those settings cut after
almost every sentence (38 chunks per 8-segment document on the boundary benchmark, Pk 0.52), so chunkwise's
defaults, ``fixed_threshold=0.15, c=0.3, init_constant=2.0``, are the best setting measured on that
benchmark's development set (Pk 0.277 / WindowDiff 0.345; see docs/semantic.md). Pass
``fixed_threshold=0.6, c=0.9, init_constant=1.5`` for the paper's setting.

chunkwise keeps ``min_sim(C)`` as a running minimum: when ``s`` joins, the new pairs are exactly
``sim(s, c)`` for ``c`` in ``C``, which were just computed for the max, so a step costs ``O(|C| * dim)``, not
``O(|C|^2)``. A sentence that would push the chunk over ``max_tokens`` starts a new chunk instead (the
cause is reported as ``max_tokens``).
"""

from __future__ import annotations

import math
from typing import Any

from ..embeddings.base import Embedder
from ..validation import Interval
from .base import takes_old_names
from .embedding import EmbeddingStrategy
from .units import Decision, Units

#: the paper's (authors' code) defaults, for reference
#: similarity a sentence needs on top of the rule to join across a paragraph break or heading
DEFAULT_BREAK_SIMILARITY = 0.1
PAPER_DEFAULTS = {"fixed_threshold": 0.6, "c": 0.9, "init_constant": 1.5}


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class MaxMinChunker(EmbeddingStrategy):
    """Grow a chunk while each new sentence is as close to the chunk as the chunk's loosest pair.

    Parameters (besides the shared ``max_tokens``, ``min_tokens``, ``overlap``, ``tokenizer``,
    ``respect_sections``, ``embedder``):

    - ``fixed_threshold``: the similarity floor every join must beat (default 0.15; paper: 0.6 with BGE).
    - ``c``: scale of the size-adjusted minimum (default 0.3; paper: 0.9).
    - ``init_constant``: multiplier of the first pair's similarity (default 2.0; paper: 1.5), so a second
      sentence joins when its similarity exceeds ``fixed_threshold / init_constant``.
    - ``break_similarity`` (formerly ``structure_bonus``): extra similarity a sentence needs to join across
      a paragraph break, list end or heading (times the break's strength; default 0.1; 0 = layout ignored).
    """

    name = "maxmin"
    cap_split_by_distance = False
    structure_param = "break_similarity"
    _parameter_constraints = {
        "break_similarity": [Interval(float, 0, None)],
        "fixed_threshold": [Interval(float, -1, 1)],  # a cosine similarity
        "c": [Interval(float, 0, None)],
        "init_constant": [Interval(float, 0, None, closed="right")],  # it divides fixed_threshold
    }

    @takes_old_names
    def __init__(
        self,
        *,
        fixed_threshold: float = 0.15,
        c: float = 0.3,
        init_constant: float = 2.0,
        break_similarity: float = DEFAULT_BREAK_SIMILARITY,
        **shared: Any,
    ):
        super().__init__(**shared)
        self.break_similarity = break_similarity
        self.fixed_threshold = fixed_threshold
        self.c = c
        self.init_constant = init_constant

    def decide(self, units: Units, embedder: Embedder, text: str) -> Decision:
        n = len(units)
        v = units.vectors
        cuts: list[int] = []
        cap_cuts: set[int] = set()
        distance: list[float | None] = []
        threshold: list[float | None] = []
        start = 0  # first unit of the current chunk
        tokens = int(units.tokens[0]) if n else 0
        pair_min = math.inf
        brk = self.break_similarity * units.break_strength()
        for i in range(1, n):
            size = i - start
            sims = v[start:i] @ v[i]  # O(|C| * dim)
            best = float(sims.max())
            if size == 1:
                need = self.fixed_threshold / self.init_constant  # init_constant * sim > fixed_threshold
            else:
                need = max(self.fixed_threshold, pair_min * self.c * _sigmoid(size - 1))
            need += float(brk[i - 1])
            distance.append(1.0 - best)
            threshold.append(1.0 - need)
            joined = tokens + int(units.gaps[i - 1]) + int(units.tokens[i])
            if best > need and joined <= self.max_tokens:
                pair_min = min(pair_min, float(sims.min()))
                tokens = joined
                continue
            cuts.append(i)
            if best > need:
                cap_cuts.add(i)
            start, tokens, pair_min = i, int(units.tokens[i]), math.inf
        return Decision(cuts=cuts, distance=distance, threshold=threshold, cap_cuts=cap_cuts)


__all__ = ["MaxMinChunker", "PAPER_DEFAULTS"]
