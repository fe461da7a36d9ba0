"""EmbeddingStrategy, the base every semantic strategy shares: sentences -> capped units -> embed each unit
once -> decide -> shape -> chunks.

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
   ``min_tokens`` merge into the more similar neighbour where the cap allows, but never across a decisive
   topic change (:func:`~.units.decisive_cuts`), ``overlap`` repeats whole trailing units, and exact token
   counts are checked before :func:`build_chunks` makes the chunks.
5. **Keep the vectors.** Each chunk carries ``sentence_vectors`` and ``sentence_spans``; :func:`chunk_vectors`
   turns them into chunk vectors for indexing by pooling, or embeds the chunk text.

The units and their shaping live in :mod:`.units`; embedding texts and pooling chunk vectors in
:mod:`chunkwise.embeddings.vectors`.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..document import Chunk, Document
from ..embeddings import DEFAULT_EMBEDDER  # the default embedder name of every semantic strategy
from ..embeddings.base import Embedder
from ..embeddings.vectors import embed_all, embed_stream_sorted, resolve_embedder
from ..segmentation.tokenizers import Tokenizer, resolve_tokenizer
from ..validation import Interval
from .base import Span, Strategy, build_chunks, max_chars_for, regions
from .params import EmbedderSpec
from .units import (
    Decision,
    Units,
    add_overlap,
    decisive_cuts,
    fit_units_exact,
    merge_small_segments,
    split_over_cap,
    split_over_chars,
    structure_breaks,
    unit_spans,
)

#: ``min_tokens=None`` (the default of the semantic strategies) means this many tokens, but never more
#: than a quarter of ``max_tokens`` (measured: docs/semantic.md, "Junk and min_tokens")
DEFAULT_MIN_TOKENS = 24
#: default ``respect_sections`` of the semantic strategies: headings of level 1-2 are hard boundaries in
#: documents that have sections (Markdown, HTML, PDF outlines); 0 turns it off
DEFAULT_SECTION_LEVEL = 2
#: the structure prior (in distance units) used when an over-long segment is cut, whatever the strategy's
#: own structure parameter, as long as it is not 0
CAP_SPLIT_BONUS = 0.1


# -- the shared strategy ----------------------------------------------------------------------------------
class EmbeddingStrategy(Strategy):
    """Base of the semantic strategies: units, one embedding pass, shaping, vectors on chunks, ``explain``.

    Subclasses implement :meth:`decide` (where to cut inside one region) and may set
    :attr:`cap_split_by_distance` (cut over-long segments at their largest distance, not greedily).
    """

    cap_split_by_distance = True
    #: the parameter that weighs layout breaks (paragraph, list end, heading) in this strategy's own units:
    #: a distance for ``semantic``, a similarity for ``maxmin``, a reward for ``cohesion`` (``""``: none)
    structure_param: ClassVar[str] = ""
    _parameter_constraints = {
        "min_tokens": [Interval(int, 0, None), None],  # None: a default of the strategy's own
        "embedder": [EmbedderSpec(), None],
    }
    #: the ``cause`` that ``explain`` reports for the strategy's own cuts
    cut_cause = "threshold"

    def __init__(
        self,
        max_tokens: int = 256,
        min_tokens: int | None = None,
        overlap: int = 0,
        tokenizer: str | Tokenizer | None = None,
        respect_sections: int | None = DEFAULT_SECTION_LEVEL,
        embedder: str | Embedder | None = DEFAULT_EMBEDDER,
    ):
        super().__init__(
            max_tokens=max_tokens,
            min_tokens=min_tokens,
            overlap=overlap,
            tokenizer=tokenizer,
            respect_sections=respect_sections,
        )
        self.embedder = embedder

    def effective_min_tokens(self) -> int:
        """``min_tokens``, or for ``None`` the default: :data:`DEFAULT_MIN_TOKENS` capped at ``max_tokens // 4``."""
        if self.min_tokens is None:
            return min(DEFAULT_MIN_TOKENS, self.max_tokens // 4)
        return int(self.min_tokens)

    def structure_weight(self) -> float:
        """The value of :attr:`structure_param` (0.0 for a strategy without one)."""
        return float(getattr(self, self.structure_param)) if self.structure_param else 0.0

    def boosted(self, units: Units, distances: np.ndarray, bonus: float) -> np.ndarray:
        """``distances`` plus the structure prior: ``bonus`` (in distance units) times the layout's break
        strength after each unit, so paragraph breaks and headings win close calls."""
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

    def prepare(
        self, doc: Document, embedder: Embedder, tokenizer: Tokenizer, bounds: list[Span] | None = None
    ) -> list[Units]:
        """Units of every region, embedded in one pass (each distinct unit text exactly once)."""
        plan = self.plan(doc, embedder, tokenizer, bounds)
        return self.finish(doc, plan, embed_all(embedder, plan.texts), tokenizer)

    def plan(
        self, doc: Document, embedder: Embedder, tokenizer: Tokenizer, bounds: list[Span] | None = None
    ) -> UnitPlan:
        """Everything :meth:`prepare` does before the model runs: the units of every region and the distinct
        unit texts to embed. Split out so :meth:`chunk_many` can embed the units of many documents in one
        stream (see :class:`UnitPlan`)."""
        text = doc.text
        emb_max = int(getattr(embedder, "model_window", 0) or 0)
        etok = embedder.tokenizer
        same = etok is tokenizer or getattr(etok, "name", None) == getattr(tokenizer, "name", "")
        cap = min(self.max_tokens, emb_max) if (emb_max and same) else self.max_tokens
        per_region = []
        for a, b in regions(doc, self.respect_sections) if bounds is None else bounds:
            spans, counts = unit_spans(
                text,
                a,
                b,
                tokenizer,
                cap,
                None if same else etok,
                None if same or not emb_max else emb_max,
                given=doc.metadata.get("units"),
            )
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
            gap_texts = [text[spans[k][1] : spans[k + 1][0]] for k in range(len(spans) - 1)]
            distinct = sorted(set(gap_texts))
            gap_count = dict(zip(distinct, tokenizer.count_batch(distinct))) if distinct else {}
            gaps = [gap_count[g] for g in gap_texts]
            out.append(
                Units(
                    spans=spans,
                    tokens=np.asarray(counts, dtype=np.int64),
                    gaps=np.asarray(gaps, dtype=np.int64),
                    vectors=vectors[row] if row else np.zeros((0, vectors.shape[1]), np.float32),
                    region=(ra, rb),
                    breaks=structure_breaks(text, spans, heads),
                )
            )
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
            distances = (
                np.asarray(own, dtype=np.float64)
                if len(own) == n - 1 and None not in own
                else units.adjacent_distances()
            )
            if self.structure_weight():  # over-long segments are cut at paragraph breaks when they are close calls
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
        # the strategy's own cuts at a clear topic change survive min_tokens (a short genuine topic stays)
        keep = decisive_cuts(units, [c for c in cuts if c not in decision.cap_cuts])
        fitted = merge_small_segments(units, fitted, self.effective_min_tokens(), self.max_tokens, max_chars, keep)
        causes = {c: causes.get(c, self.cut_cause) for c in fitted[1:-1]}
        return add_overlap(units, fitted, self.overlap, self.max_tokens, max_chars), causes

    def _run(
        self, doc: Document, all_units: list[Units] | None = None, resolved: tuple[Embedder, Tokenizer] | None = None
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

    def _final(
        self, doc: Document, all_units: list[Units], ranges: list[list[tuple[int, int]]], tokenizer: Tokenizer
    ) -> tuple[list[Span], list[tuple[Units, int, int]], list[int]]:
        """Character spans, their unit ranges and exact token counts (over-cap spans re-cut, see fit_units_exact)."""
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
                pieces = (
                    [(i, j)]
                    if n <= self.max_tokens
                    else fit_units_exact(doc.text, units, i, j, tokenizer, self.max_tokens)
                )
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

    def _chunks(
        self, doc: Document, all_units: list[Units], _decisions, ranges, _causes, tokenizer: Tokenizer
    ) -> list[Chunk]:
        """The chunks of one decided document, each with the vectors and spans of its units attached."""
        spans, owners, counts = self._final(doc, all_units, ranges, tokenizer)
        spans, owners, counts = self._tidy(doc, all_units, spans, counts, tokenizer)
        chunks = build_chunks(doc, spans, tokenizer, self, counts)
        for c, (units, a, b) in zip(chunks, owners):
            c.sentence_vectors = units.vectors[a:b]
            c.sentence_spans = list(units.spans[a:b])
        return chunks

    def _tidy(
        self, doc: Document, all_units: list[Units], spans: list[Span], counts: list[int], tokenizer: Tokenizer
    ) -> tuple[list[Span], list[tuple[Units, int, int]], list[int]]:
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

    def chunk_many(
        self, docs: Sequence[Document | str], *, progress: bool = False, return_exceptions: bool = False
    ) -> list[list[Chunk] | Exception]:
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
                    "sentence": doc.text[a:b],
                    "start": a,
                    "end": b,
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


__all__ = [
    "DEFAULT_MIN_TOKENS",
    "DEFAULT_SECTION_LEVEL",
    "UnitPlan",
    "EmbeddingStrategy",
    "resolve_embedder",
    "DEFAULT_EMBEDDER",
]
