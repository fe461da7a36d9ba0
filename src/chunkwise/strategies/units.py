"""Sentence units and their shaping, shared by the semantic strategies (see :mod:`.embedding`).

1. **Units.** The text of each region is split into sentences; a sentence longer than the hard cap
   (``min(max_tokens, embedder.model_window)``) is split by the recursive rules *before* it is embedded, so no
   embedding ever silently truncates text and no chunk can exceed ``max_tokens``.
2. **Shape.** Segments over the cap are cut (at the largest distance inside them, or greedily), segments under
   ``min_tokens`` merge into the more similar neighbour where the cap allows (never across a decisive topic
   change, :func:`decisive_cuts`), ``overlap`` repeats whole
   trailing units, and exact token counts are checked (:func:`fit_units_exact`) before the chunks are made.

The names follow :mod:`.packing`, which does the same steps on character spans for the classic strategies:
``merge_small`` there folds a span into its predecessor in one greedy pass, :func:`merge_small_segments`
here folds a segment into its more *similar* neighbour and respects decisive cuts; ``fit_exact`` there cuts
at token boundaries, :func:`fit_units_exact` here moves whole units (a chunk must own whole embedded
units). They are different rules, not copies: one in place of the other would change the chunks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..formats.markdown_lines import ATX_HEADING_RE
from ..segmentation.tokenizers import Tokenizer
from .base import Span, max_chars_for, trim_span


# -- units ------------------------------------------------------------------------------------------------
def split_long(text: str, start: int, end: int, tokenizer: Tokenizer, cap: int) -> tuple[list[Span], list[int]]:
    """Split ``text[start:end]`` into spans of at most ``cap`` tokens by the recursive strategy's rules
    (paragraphs, lines, clauses, words, then characters as a last resort), with their exact counts."""
    from .recursive import recursive_split_counted

    return recursive_split_counted(text, start, end, tokenizer, cap)


def sentence_spans(text: str, start: int, end: int, given: Sequence[Sequence[int]] | None = None) -> list[Span]:
    """The sentences of ``text[start:end]``, trimmed, as absolute spans.

    ``given`` are sentence-like units a loader already knows (a transcript's cues, merged where a cue ends
    mid-sentence: ``Document.metadata["units"]``). They are used as they are; text between them that is not
    whitespace is split into sentences as usual, so every character is still covered.
    """
    from ..segmentation.sentences import split_sentences

    def split(a: int, b: int) -> list[Span]:
        out = []
        for sa, sb in split_sentences(text[a:b]):
            for pa, pb in _at_headings(text, a + sa, a + sb):
                x, y = trim_span(text, pa, pb)
                if y > x:
                    out.append((x, y))
        return out

    if not given:
        return split(start, end)
    spans: list[Span] = []
    pos = start
    for a, b in sorted((max(int(a), start), min(int(b), end)) for a, b in given):
        if b <= a or a < pos:
            continue
        spans.extend(split(pos, a))
        a, b = trim_span(text, a, b)
        if b > a:
            spans.append((a, b))
        pos = max(pos, b)
    spans.extend(split(pos, end))
    return spans


def _at_headings(text: str, a: int, b: int) -> list[Span]:
    """``[a, b)`` cut before every heading line inside it. The sentence splitter attaches a piece without a
    letter to its neighbour, and a document's first piece to the *next* one: "🚀" over "### Pumps" becomes
    one sentence, and then no cut can keep the heading with its body (the chunk rules only cut at unit
    starts). A heading always starts a unit; the bare piece before it is a unit of its own (junk, which the
    chunk rules merge where the cap allows)."""
    bounds = [a]
    p = text.find("\n", a, b - 1)
    while p >= 0:
        if _HEADING_LINE.match(text, p + 1, b):
            bounds.append(p + 1)
        p = text.find("\n", p + 1, b - 1)
    bounds.append(b)
    return list(zip(bounds, bounds[1:]))


def unit_spans(
    text: str,
    start: int,
    end: int,
    tokenizer: Tokenizer,
    cap: int,
    embed_tokenizer: Tokenizer | None = None,
    embed_cap: int | None = None,
    given: Sequence[Sequence[int]] | None = None,
) -> tuple[list[Span], list[int]]:
    """Sentence spans of ``text[start:end]`` (see :func:`sentence_spans`) with every span within ``cap``
    tokens of ``tokenizer`` (and within ``embed_cap`` tokens of ``embed_tokenizer`` when the embedder counts
    differently), and their token counts in ``tokenizer``."""
    spans = sentence_spans(text, start, end, given)
    counts = tokenizer.count_batch([text[a:b] for a, b in spans])
    out: list[Span] = []
    out_counts: list[int] = []
    max_chars = max_chars_for(cap)
    for (a, b), n in zip(spans, counts):
        if n <= cap and b - a <= max_chars:  # the character bound too: a spaceless run can be one token
            out.append((a, b))
            out_counts.append(n)
            continue
        pieces, piece_counts = split_long(text, a, b, tokenizer, cap)
        out.extend(pieces)
        out_counts.extend(piece_counts)
    if embed_tokenizer is not None and embed_cap is not None and embed_tokenizer is not tokenizer:
        # the embedder counts in another tokenizer: also keep every unit within what the model reads
        ecounts = embed_tokenizer.count_batch([text[a:b] for a, b in out])
        if any(n > embed_cap for n in ecounts):
            spans2: list[Span] = []
            for (a, b), n in zip(out, ecounts):
                spans2.extend([(a, b)] if n <= embed_cap else split_long(text, a, b, embed_tokenizer, embed_cap)[0])
            out = spans2
            out_counts = tokenizer.count_batch([text[a:b] for a, b in out])
    return out, list(out_counts)


_HEADING_LINE = ATX_HEADING_RE
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]")


def structure_breaks(
    text: str, spans: Sequence[Span], heading_starts: set[int] | frozenset = frozenset()
) -> np.ndarray:
    """How strongly the layout marks each gap between consecutive units as a boundary, in ``[0, 1]``.

    1.0 before a heading (a loader's section heading or a Markdown ``#`` line), at a paragraph break (a
    blank line) and at the end of a list; 0.5 at a single line break; 0 inside a paragraph. The semantic
    strategies add their structure parameter (``break_distance``, ``break_similarity``, ``break_reward``)
    times this to what a cut there is worth, so a cut between paragraphs is cheaper than one inside a
    paragraph (the prior; the embeddings still decide).
    """
    n = len(spans)
    out = np.zeros(max(0, n - 1), dtype=np.float64)
    for k in range(n - 1):
        (a, b), (c, d) = spans[k], spans[k + 1]
        gap = text[b:c]
        newlines = gap.count("\n")
        if c in heading_starts or (newlines and _HEADING_LINE.match(text, c, d)):
            out[k] = 1.0
        elif newlines >= 2:
            out[k] = 1.0
        elif newlines == 1:
            line = text.rfind("\n", 0, a) + 1
            ends_list = bool(_LIST_ITEM.match(text, line, b)) and not _LIST_ITEM.match(text, c, d)
            out[k] = 1.0 if ends_list else 0.5
    return out


@dataclass
class Units:
    """The units of one region: spans, token counts, gap counts and (unit-length) vectors."""

    spans: list[Span]
    tokens: np.ndarray  # int64 (n,)
    gaps: np.ndarray  # int64 (n-1,): tokens of the text between unit i and i+1 (usually 0)
    vectors: np.ndarray  # float32 (n, dim)
    region: Span = (0, 0)
    #: float64 (n-1,): how strongly the layout marks the gap after unit i as a boundary (see
    #: :func:`structure_breaks`); empty when not computed
    breaks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))

    def break_strength(self) -> np.ndarray:
        """:attr:`breaks`, or zeros when the units were built without layout information."""
        n = max(0, len(self) - 1)
        return self.breaks if len(self.breaks) == n else np.zeros(n, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.spans)

    def chars_of(self, i: int, j: int) -> int:
        """Characters from the start of unit ``i`` to the end of unit ``j - 1``."""
        return self.spans[j - 1][1] - self.spans[i][0] if j > i else 0

    def tokens_of(self, i: int, j: int) -> int:
        """Estimated tokens of units ``[i, j)`` joined with the text between them."""
        return int(self.tokens[i:j].sum() + self.gaps[i : j - 1].sum()) if j > i else 0

    def adjacent_distances(self) -> np.ndarray:
        """Cosine distance between each unit and the next (``n - 1`` values)."""
        if len(self) < 2:
            return np.zeros(0, dtype=np.float64)
        sims = np.einsum("ij,ij->i", self.vectors[:-1], self.vectors[1:]).astype(np.float64)
        return np.clip(1.0 - sims, 0.0, 2.0)


@dataclass
class Decision:
    """A strategy's answer for one region: where to cut and why.

    ``cuts`` are unit indices ``b`` (``0 < b < n``) where a new chunk starts. ``distance[i]`` and
    ``threshold[i]`` (``n - 1`` values, ``None`` where not applicable) are the numbers behind the decision
    to cut between unit ``i`` and ``i + 1``, as shown by ``chunkwise inspect``. ``cap_cuts`` are cuts the
    strategy already made because of ``max_tokens``.
    """

    cuts: list[int]
    distance: list[float | None]
    threshold: list[float | None]
    cap_cuts: set[int] = field(default_factory=set)
    extra: dict[str, Any] = field(default_factory=dict)


# -- shaping segments -------------------------------------------------------------------------------------
def fit_lengths(tokens: np.ndarray, gaps: np.ndarray, max_tokens: int) -> np.ndarray:
    """For each unit ``j``, the most units ``k`` such that units ``[j-k+1, j]`` (with the gaps between them)
    fit ``max_tokens``; at least 1 (a single unit always fits: units are capped)."""
    n = len(tokens)
    step = np.asarray(tokens, dtype=np.int64).copy()
    if n > 1:
        step[1:] += gaps
    pre = np.concatenate([[0], np.cumsum(step)])
    lead = np.concatenate([[0], np.asarray(gaps, dtype=np.int64)])  # gap before unit i (not in a span at i)
    out = np.ones(n, dtype=np.int64)
    i = 0
    for j in range(n):
        while i < j and pre[j + 1] - pre[i] - lead[i] > max_tokens:
            i += 1
        out[j] = j - i + 1
    return out


def split_over_cap(units: Units, i: int, j: int, max_tokens: int, distances: np.ndarray | None) -> list[int]:
    """Cut points inside ``[i, j)`` so every piece fits ``max_tokens``.

    With ``distances``: the fewest pieces that fit, with the cuts placed where the adjacent distances are
    largest (a small dynamic programme: fewest pieces first, then the largest sum of distances at the
    cuts). Without: greedy packing (cut when adding the next unit would exceed the cap).
    """
    if j - i < 2 or units.tokens_of(i, j) <= max_tokens:
        return []
    if distances is None:
        cuts, a = [], i
        for k in range(i + 1, j):
            if units.tokens_of(a, k + 1) > max_tokens:
                cuts.append(k)
                a = k
        return cuts
    m = j - i
    lengths = fit_lengths(units.tokens[i:j], units.gaps[i : j - 1], max_tokens)
    gain = np.concatenate([[0.0], np.asarray(distances[i : j - 1], dtype=np.float64)])  # gain[s]: cut before s
    big = 4.0 * m + 4.0  # one more piece always costs more than any sum of distances
    best = np.full(m + 1, np.inf)
    best[0] = 0.0
    prev = np.zeros(m + 1, dtype=np.int64)
    for e in range(1, m + 1):
        starts = e - np.arange(1, int(lengths[e - 1]) + 1)
        cost = best[starts] + big - gain[starts]
        k = int(np.argmin(cost))
        best[e] = cost[k]
        prev[e] = starts[k]
    cuts = []
    e = m
    while e > 0:
        e = int(prev[e])
        if e > 0:
            cuts.append(i + e)
    return sorted(cuts)


def split_over_chars(units: Units, bounds: list[int], max_chars: int) -> tuple[list[int], list[int]]:
    """``bounds`` with extra cuts so no segment spans more than ``max_chars`` characters (the bound that
    goes with the token cap, :func:`~chunkwise.strategies.base.max_chars_for`); every unit fits it, so
    greedy packing always succeeds. Returns the new bounds and the cuts added."""
    out, added = [bounds[0]], []
    for s in range(len(bounds) - 1):
        a, j = bounds[s], bounds[s + 1]
        for k in range(a + 1, j):
            if units.chars_of(a, k + 1) > max_chars:
                out.append(k)
                added.append(k)
                a = k
        out.append(j)
    return out, added


#: a cut whose adjacent cosine distance is at least this far above the median adjacent distance of its
#: region is *decisive*: ``min_tokens`` never merges across it (see :func:`decisive_cuts`)
DECISIVE_MARGIN = 0.3


def decisive_cuts(units: Units, cuts: Sequence[int], margin: float = DECISIVE_MARGIN) -> set[int]:
    """The cuts among ``cuts`` that a ``min_tokens`` merge must not undo.

    ``min_tokens`` exists to fold slivers (a stray clause, a one-line aside) into a neighbour; it must not
    erase the document's clearest topic change just because the topic after it is short (two cafeteria
    sentences after three about a pump: adjacent distances 0.52 0.61 1.04 0.62 with MiniLM, and the
    merge glued them back together). A cut is decisive when the cosine distance between the units on
    either side exceeds the region's *median* adjacent distance by ``margin`` (0.3, in cosine distance):
    the median is what "same topic" looks like in this document, whatever the model's scale, and with
    MiniLM within-topic neighbours lie 0.4-0.7 apart while topic changes lie 0.9-1.1 apart (so 0.3 above
    the median separates them with room on both sides). The plain adjacent distance is used for every
    strategy, so the rule means the same for ``semantic`` (windows), ``maxmin`` (chunk similarities) and
    ``cohesion`` (an objective without a threshold). With one or two gaps the median is too close to
    the cut itself for this to fire, which is what we want: there is no "typical" to stand out from.
    Only segments of two or more units are held apart by it (:func:`merge_small_segments`): one unit alone is
    not evidence of a topic.
    """
    n = len(units)
    if n < 3 or not cuts:
        return set()
    d = units.adjacent_distances()
    bar = float(np.median(d)) + float(margin)
    return {int(c) for c in cuts if 0 < c < n and float(d[c - 1]) >= bar}


def merge_small_segments(
    units: Units,
    bounds: list[int],
    min_tokens: int,
    max_tokens: int,
    max_chars: int | None = None,
    keep: set[int] | frozenset[int] = frozenset(),
) -> list[int]:
    """Merge segments under ``min_tokens`` into the more similar neighbour when the merged segment fits.

    ``bounds`` are segment starts plus ``n`` at the end. Similarity is between the pooled (summed, then
    normalised) unit vectors of the small segment and of each neighbour. A cut in ``keep`` (the decisive
    ones, :func:`decisive_cuts`) is never merged across by a segment of two or more units: such a segment
    is a short topic of its own, and it may only join the neighbour on its other side, or stay. A single
    unit is a sliver (a one-line aside, a stray clause) and folds into its more similar neighbour as
    before, even when it differs sharply from both. Passes left to right repeat until nothing changes,
    so the work is linear in the number of segments per pass.
    """
    if min_tokens <= 0 or len(bounds) <= 2:
        return list(bounds)
    segs = [[bounds[s], bounds[s + 1]] for s in range(len(bounds) - 1)]

    def pooled(seg: list[int]) -> np.ndarray:
        v = units.vectors[seg[0] : seg[1]].sum(axis=0)
        return v / max(float(np.linalg.norm(v)), 1e-12)

    changed = True
    while changed and len(segs) > 1:
        changed = False
        s = 0
        while s < len(segs):
            a, b = segs[s]
            if units.tokens_of(a, b) >= min_tokens:
                s += 1
                continue
            options = []
            for t in (s - 1, s + 1):
                if 0 <= t < len(segs) and (b - a < 2 or segs[max(s, t)][0] not in keep):
                    lo, hi = min(segs[s][0], segs[t][0]), max(segs[s][1], segs[t][1])
                    if units.tokens_of(lo, hi) <= max_tokens and (
                        max_chars is None or units.chars_of(lo, hi) <= max_chars
                    ):
                        options.append((float(pooled(segs[s]) @ pooled(segs[t])), -t, t))
            if not options:
                s += 1
                continue
            t = max(options)[2]
            lo, hi = min(s, t), max(s, t)
            segs[lo : hi + 1] = [[segs[lo][0], segs[hi][1]]]
            changed = True
            s = lo
    return [seg[0] for seg in segs] + [segs[-1][1]]


def add_overlap(
    units: Units, bounds: list[int], overlap: int, max_tokens: int, max_chars: int | None = None
) -> list[tuple[int, int]]:
    """Unit ranges ``[i, j)`` of the chunks, each extended backwards by whole units of the previous chunk
    worth at most ``overlap`` tokens (never the whole previous chunk, never past ``max_tokens`` or
    ``max_chars``)."""
    ranges = [(bounds[s], bounds[s + 1]) for s in range(len(bounds) - 1)]
    if overlap <= 0:
        return ranges
    out = [ranges[0]] if ranges else []
    for (pi, _pj), (i, j) in zip(ranges, ranges[1:]):
        a = i
        while (
            a - 1 > pi
            and units.tokens_of(a - 1, i) <= overlap
            and units.tokens_of(a - 1, j) <= max_tokens
            and (max_chars is None or units.chars_of(a - 1, j) <= max_chars)
        ):
            a -= 1
        out.append((a, j))
    return out


def fit_units_exact(
    text: str, units: Units, i: int, j: int, tokenizer: Tokenizer, max_tokens: int
) -> list[tuple[int, int]]:
    """Unit ranges covering ``[i, j)`` whose *exact* token counts fit ``max_tokens``.

    Unit counts plus gap counts estimate a span's count; tokenizers that merge across unit edges (BPE) can
    disagree by a token or two, so the span is counted exactly and, in the rare case it is over, units are
    moved to a new piece until each fits.
    """
    out: list[tuple[int, int]] = []
    a = i
    while a < j:
        b = j
        while b - a > 1 and tokenizer.count(text[units.spans[a][0] : units.spans[b - 1][1]]) > max_tokens:
            b -= 1
        out.append((a, b))
        a = b
    return out


#: other names of :func:`merge_small_segments` and :func:`fit_units_exact`, for code that imports them so
merge_small = merge_small_segments
exact_fit = fit_units_exact

__all__ = [
    "structure_breaks",
    "Units",
    "Decision",
    "unit_spans",
    "split_over_cap",
    "merge_small_segments",
    "fit_units_exact",
    "merge_small",
    "exact_fit",
    "add_overlap",
    "decisive_cuts",
    "DECISIVE_MARGIN",
]
