"""The step every semantic strategy shares: sentences -> capped units -> embed each unit once -> chunks.

Why one module: the three semantic strategies (``semantic``, ``maxmin``, ``cohesion``) differ only in how
they decide where meaning changes. Everything around that decision must be right once for all of them:

1. **Units.** The text of each region is split into sentences; a sentence longer than the hard cap
   (``min(max_tokens, embedder.model_window)``) is split by the recursive rules *before* it is embedded, so no
   embedding ever silently truncates text and no chunk can exceed ``max_tokens``.
2. **Embed once.** Every unit of the whole document is embedded in one call, exactly once (identical unit
   texts only once). Windows, chunk vectors and similarities are all pooled from these vectors.
3. **Decide.** The strategy returns cut positions between units, plus the per-unit numbers that explain them
   (:class:`Decision`).
4. **Shape.** Segments over the cap are cut (at the largest distance inside them, or greedily), segments under
   ``min_tokens`` merge into the more similar neighbour where the cap allows, ``overlap`` repeats whole
   trailing units, and exact token counts are checked before :func:`build_chunks` makes the chunks.
5. **Keep the vectors.** Each chunk carries ``sentence_vectors`` and ``sentence_spans``; :func:`chunk_vectors`
   turns them into chunk vectors for indexing by pooling, or embeds the chunk text.
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Sequence

import numpy as np

from ..document import Chunk, Document
from ..embeddings.base import Embedder, l2_normalize
from ..errors import ConfigError
from ..segmentation.tokens import Tokenizer, resolve_tokenizer
from .base import Span, Strategy, build_chunks, max_chars_for, regions, trim_span

#: default embedder name of every semantic strategy
from ..embeddings import DEFAULT_EMBEDDER  # noqa: E402  (one definition of the default model)
#: ``min_tokens=None`` (the default of the semantic strategies) means this many tokens, but never more
#: than a quarter of ``max_tokens`` (measured: docs/semantic.md, "Junk and min_tokens")
DEFAULT_MIN_TOKENS = 24
#: default ``respect_sections`` of the semantic strategies: headings of level 1-2 are hard boundaries in
#: documents that have sections (Markdown, HTML, PDF outlines); 0 turns it off
DEFAULT_SECTION_LEVEL = 2
#: structure bonus (in distance units) used when an over-long segment is cut, for any ``structure_bonus``
CAP_SPLIT_BONUS = 0.1


@functools.lru_cache(maxsize=8)
def _named_embedder(name: str) -> Embedder:
    """Embedders by name are loaded once per process: loading the ONNX model costs about a second."""
    from ..embeddings import get_embedder

    return get_embedder(name)


def resolve_embedder(embedder: str | Embedder | None) -> Embedder:
    """An :class:`Embedder` from an instance, a name (``"minilm"``, ``"st:..."``) or ``None`` (the default)."""
    if embedder is None:
        embedder = DEFAULT_EMBEDDER
    if isinstance(embedder, str):
        return _named_embedder(embedder)
    if isinstance(embedder, Embedder) or (hasattr(embedder, "embed") and hasattr(embedder, "tokenizer")):
        return embedder
    raise ConfigError(f"embedder must be an Embedder or a name such as 'minilm', not {type(embedder).__name__}")


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
        for x, y in split_sentences(text[a:b]):
            x, y = trim_span(text, a + x, a + y)
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


def unit_spans(text: str, start: int, end: int, tokenizer: Tokenizer, cap: int,
               embed_tokenizer: Tokenizer | None = None, embed_cap: int | None = None,
               given: Sequence[Sequence[int]] | None = None) -> tuple[list[Span], list[int]]:
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
                spans2.extend([(a, b)] if n <= embed_cap else
                              split_long(text, a, b, embed_tokenizer, embed_cap)[0])
            out = spans2
            out_counts = tokenizer.count_batch([text[a:b] for a, b in out])
    return out, list(out_counts)


_HEADING_LINE = re.compile(r" {0,3}#{1,6}[ \t]")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]")


def structure_breaks(text: str, spans: Sequence[Span], heading_starts: set[int] | frozenset = frozenset()
                     ) -> np.ndarray:
    """How strongly the layout marks each gap between consecutive units as a boundary, in ``[0, 1]``.

    1.0 before a heading (a loader's section heading or a Markdown ``#`` line), at a paragraph break (a
    blank line) and at the end of a list; 0.5 at a single line break; 0 inside a paragraph. The semantic
    strategies add ``structure_bonus`` times this to what a cut there is worth, so a cut between
    paragraphs is cheaper than one inside a paragraph (the prior; the embeddings still decide).
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
        return int(self.tokens[i:j].sum() + self.gaps[i:j - 1].sum()) if j > i else 0

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
    lengths = fit_lengths(units.tokens[i:j], units.gaps[i:j - 1], max_tokens)
    gain = np.concatenate([[0.0], np.asarray(distances[i:j - 1], dtype=np.float64)])  # gain[s]: cut before s
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


def merge_small(units: Units, bounds: list[int], min_tokens: int, max_tokens: int,
                max_chars: int | None = None) -> list[int]:
    """Merge segments under ``min_tokens`` into the more similar neighbour when the merged segment fits.

    ``bounds`` are segment starts plus ``n`` at the end. Similarity is between the pooled (summed, then
    normalised) unit vectors of the small segment and of each neighbour. Passes left to right repeat until
    nothing changes, so the work is linear in the number of segments per pass.
    """
    if min_tokens <= 0 or len(bounds) <= 2:
        return list(bounds)
    segs = [[bounds[s], bounds[s + 1]] for s in range(len(bounds) - 1)]

    def pooled(seg: list[int]) -> np.ndarray:
        v = units.vectors[seg[0]:seg[1]].sum(axis=0)
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
                if 0 <= t < len(segs):
                    lo, hi = min(segs[s][0], segs[t][0]), max(segs[s][1], segs[t][1])
                    if units.tokens_of(lo, hi) <= max_tokens and (
                            max_chars is None or units.chars_of(lo, hi) <= max_chars):
                        options.append((float(pooled(segs[s]) @ pooled(segs[t])), -t, t))
            if not options:
                s += 1
                continue
            t = max(options)[2]
            lo, hi = min(s, t), max(s, t)
            segs[lo:hi + 1] = [[segs[lo][0], segs[hi][1]]]
            changed = True
            s = lo
    return [seg[0] for seg in segs] + [segs[-1][1]]


def add_overlap(units: Units, bounds: list[int], overlap: int, max_tokens: int,
                max_chars: int | None = None) -> list[tuple[int, int]]:
    """Unit ranges ``[i, j)`` of the chunks, each extended backwards by whole units of the previous chunk
    worth at most ``overlap`` tokens (never the whole previous chunk, never past ``max_tokens`` or
    ``max_chars``)."""
    ranges = [(bounds[s], bounds[s + 1]) for s in range(len(bounds) - 1)]
    if overlap <= 0:
        return ranges
    out = [ranges[0]] if ranges else []
    for (pi, _pj), (i, j) in zip(ranges, ranges[1:]):
        a = i
        while (a - 1 > pi and units.tokens_of(a - 1, i) <= overlap and units.tokens_of(a - 1, j) <= max_tokens
               and (max_chars is None or units.chars_of(a - 1, j) <= max_chars)):
            a -= 1
        out.append((a, j))
    return out


# -- the shared strategy ----------------------------------------------------------------------------------
class EmbeddingStrategy(Strategy):
    """Base of the semantic strategies: units, one embedding pass, shaping, vectors on chunks, ``explain``.

    Subclasses implement :meth:`decide` (where to cut inside one region) and may set
    :attr:`cap_split_by_distance` (cut over-long segments at their largest distance, not greedily).
    """

    cap_split_by_distance = True
    min_tokens_default = True
    #: the ``cause`` that ``explain`` reports for the strategy's own cuts
    cut_cause = "threshold"

    def __init__(self, max_tokens: int = 256, min_tokens: int | None = None, overlap: int = 0,
                 tokenizer: str | Tokenizer | None = None, respect_sections: int | None = DEFAULT_SECTION_LEVEL,
                 embedder: str | Embedder | None = DEFAULT_EMBEDDER, structure_bonus: float = 0.0):
        super().__init__(max_tokens=max_tokens, min_tokens=min_tokens, overlap=overlap,
                         tokenizer=tokenizer, respect_sections=respect_sections)
        self.embedder = embedder
        self.structure_bonus = structure_bonus

    def validate(self) -> None:
        super().validate()
        check_number("structure_bonus", self.structure_bonus, 0)

    def effective_min_tokens(self) -> int:
        """``min_tokens``, or for ``None`` the default: :data:`DEFAULT_MIN_TOKENS` capped at ``max_tokens // 4``."""
        if self.min_tokens is None:
            return min(DEFAULT_MIN_TOKENS, self.max_tokens // 4)
        return int(self.min_tokens)

    def boosted(self, units: Units, distances: np.ndarray, bonus: float | None = None) -> np.ndarray:
        """``distances`` plus the structure prior: ``bonus`` (default ``structure_bonus``) times the
        layout's break strength after each unit, so paragraph breaks and headings win close calls."""
        bonus = self.structure_bonus if bonus is None else bonus
        if not bonus or len(distances) != len(units) - 1:
            return distances
        return np.asarray(distances, dtype=np.float64) + float(bonus) * units.break_strength()

    # -- what subclasses provide ----------------------------------------------------------------------
    def decide(self, units: Units, embedder: Embedder, text: str) -> Decision:
        raise NotImplementedError

    # -- pipeline ---------------------------------------------------------------------------------------
    def _resolve(self) -> tuple[Embedder, Tokenizer]:
        self.validate()
        embedder = resolve_embedder(self.embedder)
        tokenizer = embedder.tokenizer if self.tokenizer is None else resolve_tokenizer(self.tokenizer)
        return embedder, tokenizer

    def prepare(self, doc: Document, embedder: Embedder, tokenizer: Tokenizer,
                bounds: list[Span] | None = None) -> list[Units]:
        """Units of every region, embedded in one pass (each distinct unit text exactly once)."""
        plan = self.plan(doc, embedder, tokenizer, bounds)
        return self.finish(doc, plan, embed_all(embedder, plan.texts), tokenizer)

    def plan(self, doc: Document, embedder: Embedder, tokenizer: Tokenizer,
             bounds: list[Span] | None = None) -> UnitPlan:
        """Everything :meth:`prepare` does before the model runs: the units of every region and the distinct
        unit texts to embed. Split out so :meth:`chunk_many` can embed the units of many documents in one
        stream (see :class:`UnitPlan`)."""
        text = doc.text
        emb_max = int(getattr(embedder, "model_window", 0) or 0)
        etok = embedder.tokenizer
        same = etok is tokenizer or getattr(etok, "name", None) == getattr(tokenizer, "name", "")
        cap = min(self.max_tokens, emb_max) if (emb_max and same) else self.max_tokens
        per_region = []
        for a, b in (regions(doc, self.respect_sections) if bounds is None else bounds):
            spans, counts = unit_spans(text, a, b, tokenizer, cap,
                                       None if same else etok, None if same or not emb_max else emb_max,
                                       given=doc.metadata.get("units"))
            per_region.append(((a, b), spans, counts))
        texts: list[str] = []
        index: dict[str, int] = {}
        slots: list[list[int]] = []
        for _, spans, _ in per_region:
            row = []
            for a, b in spans:
                t = text[a:b]
                if t not in index:
                    index[t] = len(texts)
                    texts.append(t)
                row.append(index[t])
            slots.append(row)
        return UnitPlan(per_region, slots, texts)

    def finish(self, doc: Document, plan: UnitPlan, vectors: np.ndarray, tokenizer: Tokenizer) -> list[Units]:
        """The :class:`Units` of every region from a plan and the vectors of its ``texts`` (same order)."""
        text = doc.text
        heads = {sec.heading_start for sec in doc.sections if sec.heading_start >= 0}
        out = []
        for ((ra, rb), spans, counts), row in zip(plan.per_region, plan.slots):
            gap_texts = [text[spans[k][1]:spans[k + 1][0]] for k in range(len(spans) - 1)]
            distinct = sorted(set(gap_texts))
            gap_count = dict(zip(distinct, tokenizer.count_batch(distinct))) if distinct else {}
            gaps = [gap_count[g] for g in gap_texts]
            out.append(Units(spans=spans, tokens=np.asarray(counts, dtype=np.int64),
                             gaps=np.asarray(gaps, dtype=np.int64),
                             vectors=vectors[row] if row else np.zeros((0, vectors.shape[1]), np.float32),
                             region=(ra, rb), breaks=structure_breaks(text, spans, heads)))
        return out

    def shape(self, units: Units, decision: Decision) -> tuple[list[tuple[int, int]], dict[int, str]]:
        """Final unit ranges of one region and the cause of every cut (``threshold``, ``max_tokens``...)."""
        n = len(units)
        if n == 0:
            return [], {}
        causes: dict[int, str] = {}
        cuts = sorted({c for c in decision.cuts if 0 < c < n})
        for c in cuts:
            causes[c] = "max_tokens" if c in decision.cap_cuts else self.cut_cause
        bounds = [0, *cuts, n]
        distances = None
        if self.cap_split_by_distance:
            # the strategy's own distances (window to window for semantic) where it has them
            own = decision.distance
            distances = (np.asarray(own, dtype=np.float64) if len(own) == n - 1 and None not in own
                         else units.adjacent_distances())
            if self.structure_bonus:  # over-long segments are cut at paragraph breaks when they are close calls
                distances = self.boosted(units, distances, CAP_SPLIT_BONUS)
        fitted = [0]
        for s in range(len(bounds) - 1):
            for c in split_over_cap(units, bounds[s], bounds[s + 1], self.max_tokens, distances):
                fitted.append(c)
                causes[c] = "max_tokens"
            fitted.append(bounds[s + 1])
        max_chars = max_chars_for(self.max_tokens)
        fitted, added = split_over_chars(units, fitted, max_chars)
        causes.update(dict.fromkeys(added, "max_tokens"))
        fitted = merge_small(units, fitted, self.effective_min_tokens(), self.max_tokens, max_chars)
        causes = {c: causes.get(c, self.cut_cause) for c in fitted[1:-1]}
        return add_overlap(units, fitted, self.overlap, self.max_tokens, max_chars), causes

    def _run(self, doc: Document, all_units: list[Units] | None = None,
             resolved: tuple[Embedder, Tokenizer] | None = None
             ) -> tuple[list[Units], list[Decision], list[list[tuple[int, int]]], list[dict], Tokenizer]:
        embedder, tokenizer = resolved or self._resolve()
        if all_units is None:
            all_units = self.prepare(doc, embedder, tokenizer)
        decisions, ranges, causes = [], [], []
        for units in all_units:
            d = self.decide(units, embedder, doc.text)
            r, c = self.shape(units, d)
            decisions.append(d)
            ranges.append(r)
            causes.append(c)
        return all_units, decisions, ranges, causes, tokenizer

    def _final(self, doc: Document, all_units: list[Units], ranges: list[list[tuple[int, int]]],
               tokenizer: Tokenizer) -> tuple[list[Span], list[tuple[Units, int, int]], list[int]]:
        """Character spans, their unit ranges and exact token counts (over-cap spans re-cut, see exact_fit)."""
        spans: list[Span] = []
        owners: list[tuple[Units, int, int]] = []
        for units, rs in zip(all_units, ranges):
            for i, j in rs:
                spans.append((units.spans[i][0], units.spans[j - 1][1]))
                owners.append((units, i, j))
        counts = tokenizer.count_batch([doc.text[a:b] for a, b in spans])
        if any(n > self.max_tokens for n in counts):
            s2, o2 = [], []
            for _span, (units, i, j), n in zip(spans, owners, counts):
                pieces = [(i, j)] if n <= self.max_tokens else exact_fit(doc.text, units, i, j, tokenizer,
                                                                          self.max_tokens)
                for x, y in pieces:
                    s2.append((units.spans[x][0], units.spans[y - 1][1]))
                    o2.append((units, x, y))
            spans, owners = s2, o2
            counts = tokenizer.count_batch([doc.text[a:b] for a, b in spans])
        order = sorted(range(len(spans)), key=lambda k: spans[k])
        return [spans[k] for k in order], [owners[k] for k in order], [counts[k] for k in order]

    def chunk(self, doc: Document | str) -> list[Chunk]:
        """Chunks of ``doc``, each with the vectors and spans of its units attached."""
        if isinstance(doc, str):
            doc = Document(doc)
        return self._chunks(doc, *self._run(doc))

    def _chunks(self, doc: Document, all_units: list[Units], _decisions, ranges, _causes,
                tokenizer: Tokenizer) -> list[Chunk]:
        """The chunks of one decided document, each with the vectors and spans of its units attached."""
        spans, owners, counts = self._final(doc, all_units, ranges, tokenizer)
        spans, owners, counts = self._tidy(doc, all_units, spans, counts, tokenizer)
        chunks = build_chunks(doc, spans, tokenizer, self, counts)
        for c, (units, a, b) in zip(chunks, owners):
            c.sentence_vectors = units.vectors[a:b]
            c.sentence_spans = list(units.spans[a:b])
        return chunks

    def _tidy(self, doc: Document, all_units: list[Units], spans: list[Span], counts: list[int],
              tokenizer: Tokenizer) -> tuple[list[Span], list[tuple[Units, int, int]], list[int]]:
        """The rules every strategy keeps (:mod:`chunkwise.strategies.tidy`), cutting only at unit starts,
        then each chunk's units found again (chunks stay unions of whole units)."""
        from .base import tidy

        flat = [(a, b, units, k) for units in all_units for k, (a, b) in enumerate(units.spans)]
        flat.sort(key=lambda x: x[0])
        starts = [x[0] for x in flat]
        bounds = [u.region for u in all_units if u.region[1] > u.region[0]] or regions(doc, self.respect_sections)
        spans, counts = tidy(doc, spans, counts, tokenizer, self.max_tokens, bounds, cuts=starts)
        owners = []
        for a, b in spans:
            lo = bisect.bisect_left(starts, a)
            hi = lo
            while hi < len(flat) and flat[hi][1] <= b:
                hi += 1
            units = flat[lo][2] if lo < len(flat) else all_units[0]
            owners.append((units, flat[lo][3] if lo < len(flat) else 0, flat[hi - 1][3] + 1 if hi > lo else 0))
        return spans, owners, counts
    def chunk_many(self, docs: Sequence[Document | str], *, progress: bool = False,
                   return_exceptions: bool = False) -> list[list[Chunk] | Exception]:
        """Chunks of many documents, the same as ``[self.chunk(d) for d in docs]``, with one embedding stream.

        Why: a corpus of short documents embedded per document pays for many tiny, padded batches (the
        issue measured 40 minutes for 50k sentences). Here the units of every document are planned first,
        the distinct unit texts of *all* documents are embedded once, longest-sorted into full batches
        (:func:`embed_stream_sorted`), and then each document is decided and shaped on its own.
        ``progress``: tqdm bars (to stderr) for the three phases. ``return_exceptions``: a document that
        fails (a :class:`~chunkwise.errors.ChunkwiseError`) gets its exception in its slot instead of
        stopping the others.
        """
        from ..errors import ChunkwiseError

        embedder, tokenizer = self._resolve()
        documents = [Document(d) if isinstance(d, str) else d for d in docs]
        plans: list[UnitPlan | Exception] = []
        index: dict[str, int] = {}
        texts: list[str] = []
        for doc in _bar(documents, progress, "units", "doc"):
            try:
                plan = self.plan(doc, embedder, tokenizer)
            except ChunkwiseError as exc:
                if not return_exceptions:
                    raise
                plans.append(exc)
                continue
            for t in plan.texts:
                if t not in index:
                    index[t] = len(texts)
                    texts.append(t)
            plans.append(plan)
        vectors = embed_stream_sorted(embedder, texts, progress=progress)
        out: list[list[Chunk] | Exception] = []
        for doc, plan in zip(documents, _bar(plans, progress, "chunking", "doc")):
            if isinstance(plan, Exception):
                out.append(plan)
                continue
            try:
                rows = [index[t] for t in plan.texts]
                mine = vectors[rows] if rows else np.zeros((0, vectors.shape[1]), np.float32)
                units = self.finish(doc, plan, mine, tokenizer)
                out.append(self._chunks(doc, *self._run(doc, units, (embedder, tokenizer))))
            except ChunkwiseError as exc:
                if not return_exceptions:
                    raise
                out.append(exc)
        return out

    def split(self, doc: Document, start: int, end: int, tokenizer: Tokenizer) -> list[Span]:
        """Spans of one region (the base-class contract); :meth:`chunk` does all regions in one pass."""
        self.validate()
        embedder = resolve_embedder(self.embedder)
        units = self.prepare(doc, embedder, tokenizer, bounds=[(start, end)])[0]
        ranges, _ = self.shape(units, self.decide(units, embedder, doc.text))
        return self._final(doc, [units], [ranges], tokenizer)[0]

    def explain(self, doc: Document | str) -> list[dict[str, Any]]:
        """One row per unit: ``sentence, start, end, distance_to_next, threshold, breakpoint, cause``.

        ``breakpoint`` is true when a chunk ends after this unit; ``cause`` says why (``threshold`` for the
        strategy's own decision (``objective`` for ``cohesion``), ``max_tokens`` for the cap, ``section`` at a
        region edge, ``end`` at the end of the document).
        """
        if isinstance(doc, str):
            doc = Document(doc)
        all_units, decisions, ranges, causes, _ = self._run(doc)
        rows: list[dict[str, Any]] = []
        for r, (units, d, rs, cs) in enumerate(zip(all_units, decisions, ranges, causes)):
            ends = {j for _, j in rs}
            n = len(units)
            for k, (a, b) in enumerate(units.spans):
                last = k == n - 1
                dist = None if last else d.distance[k]
                thr = None if last else d.threshold[k]
                row = {
                    "sentence": doc.text[a:b], "start": a, "end": b,
                    "distance_to_next": None if dist is None else round(float(dist), 6),
                    "threshold": None if thr is None else round(float(thr), 6),
                    "breakpoint": (k + 1) in ends,
                    "cause": (cs.get(k + 1) if not last else ("end" if r == len(all_units) - 1 else "section")),
                    "tokens": int(units.tokens[k]),
                }
                for key, values in d.extra.items():
                    if not last and values is not None:
                        v = values[k]
                        row[key] = None if v is None else round(float(v), 6)
                if not row["breakpoint"]:
                    row["cause"] = None
                rows.append(row)
        return rows


def exact_fit(text: str, units: Units, i: int, j: int, tokenizer: Tokenizer, max_tokens: int) -> list[tuple[int, int]]:
    """Unit ranges covering ``[i, j)`` whose *exact* token counts fit ``max_tokens``.

    Unit counts plus gap counts estimate a span's count; tokenizers that merge across unit edges (BPE) can
    disagree by a token or two, so the span is counted exactly and, in the rare case it is over, units are
    moved to a new piece until each fits.
    """
    out: list[tuple[int, int]] = []
    a = i
    while a < j:
        b = j
        while b - a > 1 and tokenizer.count(text[units.spans[a][0]:units.spans[b - 1][1]]) > max_tokens:
            b -= 1
        out.append((a, b))
        a = b
    return out


@dataclass
class UnitPlan:
    """The units of one document before embedding: per region ``((start, end), spans, token counts)``,
    per region the row of each unit in ``texts``, and the distinct unit texts in first-seen order."""

    per_region: list[tuple[Span, list[Span], list[int]]]
    slots: list[list[int]]
    texts: list[str]


def _bar(items, progress: bool, desc: str, unit: str):
    """``items`` wrapped in a tqdm bar on stderr (totals, rate, ETA) when ``progress``, else as they are."""
    if not progress:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit=unit, file=sys.stderr, leave=False, mininterval=0.5)


#: texts per call to the embedder in :func:`embed_stream_sorted` (the step of its progress bar); large
#: enough that every back-end fills its own batches, small enough that the bar moves
STREAM_SLICE = 1024


def embed_stream_sorted(embedder: Embedder, texts: Sequence[str], progress: bool = False) -> np.ndarray:
    """Vectors of ``texts`` (unit-normalised, float32, in the given order), embedded longest first in
    slices of :data:`STREAM_SLICE` so every batch the back-end forms holds texts of similar length.

    This is the "embedding floor" of ``benchmarks/bench_semantic_speed.py``: many documents cost what
    their sentences cost in large length-sorted batches.
    """
    dim = int(getattr(embedder, "dim", 0) or 0)
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda k: len(texts[k]), reverse=True)
    out: np.ndarray | None = None
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(texts), desc="embedding", unit="sentence", file=sys.stderr, leave=False,
                   mininterval=0.5)
    try:
        for a in range(0, len(order), STREAM_SLICE):
            rows = order[a:a + STREAM_SLICE]
            vecs = embed_all(embedder, [texts[k] for k in rows])
            if out is None:
                out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
            out[rows] = vecs
            if bar is not None:
                bar.update(len(rows))
    finally:
        if bar is not None:
            bar.close()
    assert out is not None, "texts is not empty, so the loop above ran at least once"
    return out


def embed_all(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors of ``texts`` in one call (the back-end batches), unit-normalised, float32."""
    if not texts:
        dim = int(getattr(embedder, "dim", 0) or 0)
        return np.zeros((0, dim), dtype=np.float32)
    return l2_normalize(np.asarray(embedder.embed(list(texts)), dtype=np.float32))


def pooled_vector(chunk: Chunk, dim: int) -> np.ndarray | None:
    """A chunk vector from what chunking already embedded, or ``None`` when there is nothing to reuse.

    The chunk's own ``vector`` when it has one of width ``dim``, else the re-normalised mean of its
    ``sentence_vectors`` (kept by the semantic strategies). Indexing and evaluation use it for
    ``vectors="pool"``, so a semantic chunking is never embedded a second time.
    """
    if chunk.vector is not None and np.shape(chunk.vector) == (dim,):
        return l2_normalize(np.asarray(chunk.vector, dtype=np.float32)[None])[0]
    sv = chunk.sentence_vectors
    if sv is not None and len(sv) and np.shape(sv)[-1] == dim:
        return l2_normalize(np.asarray(sv, dtype=np.float32).mean(axis=0)[None])[0]
    return None


def chunk_vectors(chunks: Sequence[Chunk], mode: str = "embed", embedder: Embedder | str | None = None) -> np.ndarray:
    """One vector per chunk, stored on ``chunk.vector`` and returned as a float32 ``(n, dim)`` array.

    ``mode="embed"`` embeds each chunk's ``embed_text`` (its context plus text: the most faithful vector);
    ``mode="pool"`` averages the unit vectors kept by a semantic strategy (no model call at all; chunks
    without ``sentence_vectors`` are embedded instead).
    """
    if mode not in ("embed", "pool"):
        raise ConfigError(f"chunk vector mode must be 'embed' or 'pool', got {mode!r}")
    chunks = list(chunks)
    need = [k for k, c in enumerate(chunks)
            if mode == "embed" or c.sentence_vectors is None or len(c.sentence_vectors) == 0]
    out: dict[int, np.ndarray] = {}  # chunk index -> vector: every chunk is pooled or in ``need``
    if mode == "pool":
        embedded = set(need)
        for k, c in enumerate(chunks):
            if k not in embedded:
                v = np.asarray(c.sentence_vectors, dtype=np.float32).sum(axis=0)
                out[k] = v / max(float(np.linalg.norm(v)), 1e-12)
    if need:
        emb = resolve_embedder(embedder)
        vecs = embed_all(emb, [chunks[k].embed_text for k in need])
        for k, v in zip(need, vecs):
            out[k] = v
    if not chunks:
        return np.zeros((0, 0), dtype=np.float32)
    arr = np.stack([out[k] for k in range(len(chunks))]).astype(np.float32)
    for c, v in zip(chunks, arr):
        c.vector = v
    return arr


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> None:
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")


def check_number(name: str, value: Any, low: float | None = None, high: float | None = None,
                 integer: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if integer:
        ok = ok and isinstance(value, int)
    if ok and value != value:  # NaN
        ok = False
    if ok and low is not None and value < low:
        ok = False
    if ok and high is not None and value > high:
        ok = False
    if not ok:
        rng = f" in [{low}, {high}]" if low is not None and high is not None else (f" >= {low}" if low is not None else "")
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{name} must be {kind}{rng}, got {value!r}")


__all__ = ["structure_breaks", "DEFAULT_MIN_TOKENS", "DEFAULT_SECTION_LEVEL", "Units", "Decision", "UnitPlan", "EmbeddingStrategy", "embed_stream_sorted", "chunk_vectors", "pooled_vector", "resolve_embedder", "unit_spans",
           "split_over_cap", "merge_small", "add_overlap", "DEFAULT_EMBEDDER"]
