"""Retrieval metrics: Chroma's character-span metrics (exactly as published, and a corrected variant),
document-level ranking metrics, and the paired bootstrap.

**Chroma's span metrics** follow ``BaseEvaluation`` of brandonstarxel/chunking_evaluation
(``_scores_from_dataset_and_retrievals`` and ``_full_precision_score``), arithmetic included, so our
numbers can be set beside the published table:

- ``numerator`` = length of the union of the intersections of the first ``n`` retrieved chunks (of the
  query's corpus) with the references;
- recall = numerator / Σ reference lengths; precision = numerator / Σ lengths of the ``n`` retrieved chunks
  (chunks of other corpora and overlapping chunks included, each counted in full);
  IoU = numerator / (Σ retrieved lengths + Σ reference characters no retrieved chunk covered);
- precision_Ω: the same numerator over *all* chunks that touch a reference, divided by the union of those
  chunks plus the uncovered reference characters;
- ``n = "min"``: per query, the number of chunks that touch its references (capped at 20).

Their arithmetic has quirks, kept on purpose in the ``chroma`` functions and fixed in the ``set`` ones:

1. Two ranges that only *touch* (``chunk.end == ref.start``) count as intersecting (a zero-length
   intersection), so a chunk ending right where a reference begins is "highlighted": it raises the "min"
   count and adds its whole length to precision_Ω's denominator.
2. Precision and IoU denominators *add* the lengths of retrieved chunks instead of uniting them, so with
   overlapping chunks (TokenText 250/125) the same characters are counted two or three times while the
   numerator counts them once: IoU and precision are deflated for overlapping strategies.
3. The recall denominator adds reference lengths without uniting them (harmless on Chroma's data, whose
   references never overlap; wrong for datasets whose references do).
4. precision_Ω is called a precision but its denominator also contains the uncovered reference characters,
   so it is an IoU of the "ideal" retrieval.

The ``set`` variant is plain set arithmetic over characters per document: R = union of retrieved chunk
ranges, G = union of references; recall = |R∩G|/|G|, precision = |R∩G|/|R|, IoU = |R∩G|/|R∪G|; only
positive-length overlaps count; precision_Ω = |R*∩G|/|R*| with R* the union of all chunks overlapping G.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TypedDict

import numpy as np

Range = tuple[int, int]
#: a span of a document: (document id, start, end)
DocRange = tuple[str, int, int]

MIN_CAP = 20


# -- range arithmetic, as Chroma's evaluation_utils does it --------------------------------------------


def sum_of_ranges(ranges: Iterable[Range]) -> int:
    """Total length of ``ranges``, overlaps counted as many times as they occur."""
    return sum(e - s for s, e in ranges)


def union_ranges(ranges: Iterable[Range]) -> list[Range]:
    """Merge overlapping or touching ranges."""
    out: list[Range] = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def chroma_intersect(a: Range, b: Range) -> Range | None:
    """Chroma's intersection: ranges that merely touch give a zero-length intersection, not ``None``."""
    s, e = max(a[0], b[0]), min(a[1], b[1])
    return (s, e) if s <= e else None


def chroma_difference(ranges: Iterable[Range], target: Range) -> list[Range]:
    """``ranges`` minus ``target``, with Chroma's boundary handling."""
    ts, te = target
    out: list[Range] = []
    for s, e in ranges:
        if e < ts or s > te:
            out.append((s, e))
        elif s < ts and e > te:
            out.append((s, ts))
            out.append((te, e))
        elif s < ts:
            out.append((s, ts))
        elif e > te:
            out.append((te, e))
    return out


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


# -- Chroma's span metrics, exact ---------------------------------------------------------------------


def chroma_span_scores(references: Sequence[DocRange], retrieved: Sequence[DocRange]) -> tuple[float, float, float]:
    """``(iou, recall, precision)`` of one query, as Chroma's ``_scores_from_dataset_and_retrievals``.

    ``retrieved`` is already cut to the ``n`` chunks being scored. Chroma's references all lie in one
    corpus; references in several documents are handled per document with the same arithmetic.
    """
    numer: dict[str, list[Range]] = {}
    unused: dict[str, list[Range]] = {}
    for d, s, e in references:
        unused.setdefault(d, []).append((s, e))
    for d, cs, ce in retrieved:
        for rd, rs, re_ in references:
            if rd != d:
                continue
            inter = chroma_intersect((cs, ce), (rs, re_))
            if inter is not None:
                unused[d] = chroma_difference(unused[d], inter)
                numer[d] = union_ranges([inter, *numer.get(d, [])])
    numerator = sum(sum_of_ranges(r) for r in numer.values())
    recall_den = sum_of_ranges((s, e) for _, s, e in references)
    precision_den = sum_of_ranges((s, e) for _, s, e in retrieved)
    iou_den = precision_den + sum(sum_of_ranges(r) for r in unused.values())
    return _ratio(numerator, iou_den), _ratio(numerator, recall_den), _ratio(numerator, precision_den)


def chroma_precision_omega(
    references: Sequence[DocRange], chunks_by_doc: dict[str, tuple[np.ndarray, np.ndarray]]
) -> tuple[float, int]:
    """``(precision_Ω, highlighted chunk count)`` of one query, as Chroma's ``_full_precision_score``.

    ``chunks_by_doc[doc] = (starts, ends)`` of every chunk of the document.
    """
    numer: dict[str, list[Range]] = {}
    den_chunks: dict[str, list[Range]] = {}
    unused: dict[str, list[Range]] = {}
    for d, s, e in references:
        unused.setdefault(d, []).append((s, e))
    count = 0
    for d in unused:
        if d not in chunks_by_doc:
            continue
        starts, ends = chunks_by_doc[d]
        refs = [(s, e) for rd, s, e in references if rd == d]
        lo = min(s for s, _ in refs)
        hi = max(e for _, e in refs)
        # only chunks that can touch some reference matter (touching included, as in Chroma)
        cand = np.nonzero((starts <= hi) & (ends >= lo))[0]
        for i in cand.tolist():
            chunk = (int(starts[i]), int(ends[i]))
            hit = False
            for r in refs:
                inter = chroma_intersect(chunk, r)
                if inter is not None:
                    hit = True
                    unused[d] = chroma_difference(unused[d], inter)
                    numer[d] = union_ranges([inter, *numer.get(d, [])])
                    den_chunks[d] = union_ranges([chunk, *den_chunks.get(d, [])])
            count += hit
    numerator = sum(sum_of_ranges(r) for r in numer.values())
    if not numerator and not any(numer.values()):
        return 0.0, count
    den = sum(sum_of_ranges(union_ranges(den_chunks.get(d, []) + unused.get(d, []))) for d in unused)
    return _ratio(numerator, den), count


# -- the corrected, set-based variant -----------------------------------------------------------------


def _by_doc(ranges: Iterable[DocRange]) -> dict[str, list[Range]]:
    out: dict[str, list[Range]] = {}
    for d, s, e in ranges:
        if e > s:
            out.setdefault(d, []).append((s, e))
    return {d: union_ranges(r) for d, r in out.items()}


def _overlap(a: list[Range], b: list[Range]) -> int:
    """Length of the intersection of two unions of disjoint sorted ranges."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if e > s:
            total += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def set_span_scores(references: Sequence[DocRange], retrieved: Sequence[DocRange]) -> tuple[float, float, float]:
    """``(iou, recall, precision)`` with set semantics (each character counted once)."""
    g = _by_doc(references)
    r = _by_doc(retrieved)
    inter = sum(_overlap(r[d], g[d]) for d in g if d in r)
    g_len = sum(sum_of_ranges(v) for v in g.values())
    r_len = sum(sum_of_ranges(v) for v in r.values())
    return _ratio(inter, r_len + g_len - inter), _ratio(inter, g_len), _ratio(inter, r_len)


#: the token budgets of span recall at a budget, ``span_recall@1k`` ...: how much context a reader is handed
BUDGETS = (1000, 2000, 4000)


def budget_name(tokens: int) -> str:
    """``span_recall@1k`` for 1000 tokens, ``span_recall@1500`` for 1500."""
    return f"span_recall@{tokens // 1000}k" if tokens % 1000 == 0 else f"span_recall@{tokens}"


def span_recall(references: Sequence[DocRange], context: Sequence[DocRange]) -> float:
    """Span recall at a token budget: the share of the gold characters (references united) that the context
    handed to the reader holds, ``context`` being the exact document spans of its passages (chunks, or
    expanded windows, within the budget). Unlike recall@k it does not care how many pieces the context is
    cut into, so small chunks, big chunks and expanded ones compare at the same reader cost."""
    return set_span_scores(references, context)[1]


def set_precision_omega(
    references: Sequence[DocRange], chunks_by_doc: dict[str, tuple[np.ndarray, np.ndarray]]
) -> tuple[float, int]:
    """``(precision_Ω, count)``: precision of retrieving exactly the chunks that overlap the references
    (positive-length overlaps only), and how many chunks that is."""
    g = _by_doc(references)
    touching: list[DocRange] = []
    for d, refs in g.items():
        if d not in chunks_by_doc:
            continue
        starts, ends = chunks_by_doc[d]
        mask = np.zeros(len(starts), dtype=bool)
        for s, e in refs:
            mask |= (starts < e) & (ends > s)
        touching.extend((d, int(a), int(b)) for a, b in zip(starts[mask], ends[mask]))
    if not touching:
        return 0.0, 0
    _, _, precision = set_span_scores(references, touching)
    return precision, len(touching)


# -- document-level ranking metrics -------------------------------------------------------------------


def doc_recall_at_k(ranked_docs: Sequence[str], relevant: Iterable[str], k: int) -> float:
    rel = set(relevant)
    return _ratio(len(rel & set(ranked_docs[:k])), len(rel))


def ndcg_at_k(ranked_docs: Sequence[str], relevant: Iterable[str], k: int = 10) -> float:
    """Binary-relevance nDCG@k."""
    rel = set(relevant)
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked_docs[:k]) if d in rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(rel))))
    return _ratio(dcg, ideal)


def reciprocal_rank(ranked_docs: Sequence[str], relevant: Iterable[str]) -> float:
    rel = set(relevant)
    for i, d in enumerate(ranked_docs):
        if d in rel:
            return 1.0 / (i + 1)
    return 0.0


# -- paired bootstrap ---------------------------------------------------------------------------------


class Bootstrap(TypedDict):
    """What :func:`paired_bootstrap` returns (a plain dict, so it goes to JSON as it is)."""

    diff: float
    lo: float
    hi: float
    significant: bool


def paired_bootstrap(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> Bootstrap:
    """Mean of ``a - b`` over the same queries and its percentile bootstrap confidence interval.

    Queries are resampled with replacement (the same resample for both strategies: the pairing removes
    the variance that comes from some queries being harder than others). ``significant`` is true when the
    interval excludes zero.
    """
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape:
        raise ValueError("paired bootstrap needs scores for the same queries")
    diff = xa - xb
    n = len(diff)
    if n == 0:
        return {"diff": 0.0, "lo": 0.0, "hi": 0.0, "significant": False}
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    step = max(1, 2_000_000 // max(n, 1))  # bound the memory of one block of resamples
    for i in range(0, n_boot, step):
        m = min(step, n_boot - i)
        means[i : i + m] = diff[rng.integers(0, n, size=(m, n))].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return {"diff": float(diff.mean()), "lo": float(lo), "hi": float(hi), "significant": bool(lo > 0 or hi < 0)}
