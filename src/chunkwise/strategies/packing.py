"""The packing engine of the sentence, recursive and Markdown strategies: candidate pieces in, capped spans
with exact counts out.

These strategies only know *where they may cut* (sentences, separator levels, Markdown blocks). Turning those
candidates into chunks is the same problem every time, and it lives here once. Two packers live elsewhere, on
purpose: ``fixed`` walks token windows over a numpy array of token offsets (its candidates are every token,
so a loop over pieces would cost a Python object per token; it shares :func:`fit_first` and :func:`merge_small`), and
the semantic strategies pack sentence units by their embedding decisions (``units.py``: cuts, cap splits at
the largest distance, whole-sentence overlap). The steps here:

1. **fill** (:func:`fill`): greedy, in order, consecutive pieces while the span is *estimated* to fit
   ``max_tokens`` and ``max_chars``. Estimates come from one tokenisation of the region
   (:class:`~chunkwise.segmentation.tokens.TokenMap`), so planning never calls the tokenizer per piece.
2. **min_tokens** (:func:`merge_small`): a span under ``min_tokens`` merges into a neighbour where the cap
   allows; a part that is only a heading joins the part after it (:func:`keep_headings_with_bodies`).
3. **overlap**, in one of two granularities: whole trailing pieces (``fill(overlap=...)``: the sentence
   strategy repeats whole sentences) or words (:func:`word_overlap`: a chunk starts up to ``overlap``
   tokens early, at a word start).
4. **verify and repair**: every span is counted exactly once; an estimate a token or two short (a cut inside
   a word, a word that one tokenisation makes ``[UNK]`` and another does not) is repaired, either by packing
   the pieces again with exact counts (:func:`repack_exact`) or by the strategy's own re-split of the span
   (:func:`repair`). :func:`fit_exact` is the last resort of every path: cuts on the span's own token
   boundaries, each piece counted exactly.

:func:`pack` runs the whole sequence; strategies whose order of steps is part of their (golden-tested)
output use the steps directly. Every function returns spans sorted and non-overlapping except for the
overlap asked for, and every count it returns is the exact count of ``text[a:b]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import ConfigError
from ..registry import lazy_regex
from ..segmentation.token_map import TokenMap
from ..segmentation.tokenizers import Tokenizer
from .base import Span, max_chars_for, trim_span

#: ``estimate(a, b)``: an estimated token count of ``text[a:b]`` (a TokenMap's ``estimate``, or exact)
Estimate = Callable[[int, int], int]
#: a strategy's split of one piece too big to fit alone (the recursive strategy's next level)
Oversize = Callable[[int, int], list[Span]]

_WORD_START = lazy_regex(r"\s+(?=\S)")


def pack(
    text: str,
    units: list[Span],
    tokenizer: Tokenizer,
    max_tokens: int,
    *,
    token_map: TokenMap,
    min_tokens: int = 0,
    overlap: int = 0,
    overlap_by: str = "units",
    counted: tuple[list[int], list[int]] | None = None,
    packed: bool = False,
    split_unit: Callable[[int, int], list[Span]] | None = None,
    resplit: Callable[[int, int, int], tuple[list[Span], list[int]]] | None = None,
) -> tuple[list[Span], list[int]]:
    """Pack ``units`` (sorted candidate pieces of ``text``) into spans within ``max_tokens``, with counts.

    ``overlap_by="units"`` repeats whole trailing units, ``"words"`` starts a chunk up to ``overlap`` tokens
    early at a word. ``packed=True``: the units are already filled (the recursive strategy fills level by
    level); only ``min_tokens``, overlap and verification run. Repair of a span over the cap: with
    ``resplit(a, b, n)`` the span (without its word overlap) is re-split by the strategy; otherwise its units
    are packed again with exact counts, units over the cap cut by ``split_unit(a, b)``.
    """
    tm = token_map
    max_chars = max_chars_for(max_tokens)
    unit_overlap = overlap if overlap_by == "units" else 0
    spans = units if packed else fill(units, tm.estimate, max_tokens, max_chars, unit_overlap, counted)
    spans = merge_small(spans, tm.estimate, min_tokens, max_tokens, max_chars)
    plain = spans
    if overlap and overlap_by == "words" and len(spans) > 1:
        spans = word_overlap(text, spans, tm, overlap, max_tokens, max_chars)
    counts = tm.counts(text, spans)
    if all(n <= max_tokens and b - a <= max_chars for (a, b), n in zip(spans, counts)):
        return spans, counts
    if resplit is None:
        return repack_exact(text, units, spans, counts, tokenizer, max_tokens, unit_overlap, split_unit)

    def fix(k: int, n: int) -> tuple[list[Span], list[int]]:
        (a, b), (pa, pb) = spans[k], plain[k]
        if (a, b) != (pa, pb):  # drop the overlap first
            n = tokenizer.count(text[pa:pb])
            if n <= max_tokens and pb - pa <= max_chars:
                return [(pa, pb)], [n]
        return resplit(pa, pb, n)

    spans, counts = repair(spans, counts, max_tokens, fix, max_chars)
    if any(a > c for (a, _), (c, _) in zip(spans, spans[1:])):
        # the pieces of a re-split span can reach past the start of the next span's word overlap
        order = sorted(range(len(spans)), key=lambda k: spans[k][0])
        spans, counts = [spans[k] for k in order], [counts[k] for k in order]
    return spans, counts


def fill(
    units: Sequence[Span],
    estimate: Estimate,
    max_tokens: int,
    max_chars: int,
    overlap: int = 0,
    counted: tuple[list[int], list[int]] | None = None,
    oversize: Oversize | None = None,
) -> list[Span]:
    """Greedy packing of consecutive units while the span is estimated to fit.

    ``counted``: ``(upper, lower)`` from :meth:`TokenMap.bound_counts` at the units' ends and starts, so
    that ``estimate(units[i][0], units[j][1]) == max(0, upper[j] - lower[i])``: no search per step.
    ``overlap``: the next span starts with the largest number of trailing units (never all of them) whose
    tokens fit in ``overlap``. ``oversize``: a unit too big alone ends the current span and is replaced by
    ``oversize(a, b)``'s spans as they are (without it, such a unit is a span by itself).
    """
    starts = [a for a, _ in units]
    ends = [b for _, b in units]
    est = _span_estimate(starts, ends, estimate, counted)
    if counted is None:

        def fits(i: int, j: int) -> bool:  # units i..j inclusive
            a, b = starts[i], ends[j]
            return b - a <= max_chars and estimate(a, b) <= max_tokens
    else:
        upper, lower = counted

        def fits(i: int, j: int) -> bool:
            a, b = starts[i], ends[j]
            return b - a <= max_chars and (b <= a or upper[j] - lower[i] <= max_tokens)

    spans: list[Span] = []
    i, n = 0, len(units)
    while i < n:
        if oversize is not None and not fits(i, i):
            spans.extend(oversize(starts[i], ends[i]))
            i += 1
            continue
        j = i
        if counted is not None:  # the hot loop, inlined
            low, a = lower[i], starts[i]
            while j + 1 < n:
                b = ends[j + 1]
                if b - a > max_chars or (b > a and upper[j + 1] - low > max_tokens):
                    break
                if oversize is not None:  # the unit alone must fit too
                    c = starts[j + 1]
                    if b - c > max_chars or (b > c and upper[j + 1] - lower[j + 1] > max_tokens):
                        break
                j += 1
        else:
            while j + 1 < n and (oversize is None or fits(j + 1, j + 1)) and fits(i, j + 1):
                j += 1
        spans.append((starts[i], ends[j]))
        if j + 1 >= n:
            break
        i = _overlap_start(i, j, est, fits, overlap) if overlap else j + 1
    return spans


def _span_estimate(
    starts: list[int], ends: list[int], estimate: Estimate, counted: tuple[list[int], list[int]] | None
) -> Callable[[int, int], int]:
    """The estimate of units ``i..j`` (inclusive): integer arithmetic when bound counts are given."""
    if counted is None:
        return lambda i, j: estimate(starts[i], ends[j])
    upper, lower = counted
    return lambda i, j: upper[j] - lower[i] if ends[j] > starts[i] else 0


def _overlap_start(
    i: int, j: int, est: Callable[[int, int], int], fits: Callable[[int, int], bool], overlap: int
) -> int:
    """The first unit of the span after units ``i..j``: trailing units worth at most ``overlap`` tokens
    (never all of them, so every span brings a new unit), as long as the next span still takes unit ``j+1``."""
    k = j + 1
    while k - 1 > i and est(k - 1, j) <= overlap:
        k -= 1
    while k <= j and not fits(k, j + 1):
        k += 1
    return k


def keep_headings_with_bodies(
    parts: Sequence[Span],
    heading_only: Callable[[int, int], bool],
    may_join: Callable[[Span, Span], bool] | None = None,
) -> list[Span]:
    """``parts`` (consecutive spans) with each part that is only a heading joined to the part after it,
    so a heading is never a chunk (or a region) of its own, away from the text it introduces.

    ``heading_only(a, b)`` says whether part ``[a, b)`` (which may already hold parts joined before it) is
    only a heading; ``may_join(part, next)`` whether the join is allowed (the cap; ``None``: always). The
    one rule behind three places: :func:`~.base.regions` (a heading-only section stays with the next),
    the ``markdown`` strategy's heading parts, and its heading before a block too big for one chunk
    (the heading leads the block's first piece)."""
    out: list[Span] = []
    for part in parts:
        if out and heading_only(*out[-1]) and (may_join is None or may_join(out[-1], part)):
            out[-1] = (out[-1][0], part[1])
        else:
            out.append(part)
    return out


def merge_small(spans: list[Span], estimate: Estimate, min_tokens: int, max_tokens: int, max_chars: int) -> list[Span]:
    """Merge spans under ``min_tokens`` into a neighbour (the smaller one first) where the cap allows.

    ``estimate(a, b)`` counts a span; spans are sorted and do not overlap. One pass each way keeps this
    linear; a small span between two full ones stays as it is, since the cap comes first.
    """
    if min_tokens <= 0 or len(spans) < 2:
        return spans
    out: list[Span] = []
    for a, b in spans:
        if out:
            pa, pb = out[-1]
            small = estimate(a, b) < min_tokens or estimate(pa, pb) < min_tokens
            if small and b - pa <= max_chars and estimate(pa, b) <= max_tokens:
                out[-1] = (pa, b)
                continue
        out.append((a, b))
    return out


def word_overlap(
    text: str, spans: list[Span], tm: TokenMap, overlap: int, max_tokens: int, max_chars: int
) -> list[Span]:
    """Start each span up to ``overlap`` tokens early, at a word start inside the previous span, as long
    as the longer span is still estimated to fit."""
    out = [spans[0]]
    for (pa, _pb), (a, b) in zip(spans, spans[1:]):
        i = max(0, tm.first_after(a) - overlap)
        p = max(tm.starts[i] if i < len(tm) else a, pa + 1)
        while p < a:
            at_word = text[p - 1].isspace() and not text[p].isspace()
            if at_word and tm.estimate(p, a) <= overlap and tm.estimate(p, b) <= max_tokens and b - p <= max_chars:
                break
            m = _WORD_START.search(text, p, a)
            p = m.end() if m else a
        out.append((min(p, a), b))
    return out


def repair(
    spans: list[Span],
    counts: list[int],
    max_tokens: int,
    fix: Callable[[int, int], tuple[list[Span], list[int]]],
    max_chars: int | None = None,
) -> tuple[list[Span], list[int]]:
    """Keep every span whose exact count fits (and, given ``max_chars``, its length); replace span ``k``
    that counted ``n`` by ``fix(k, n)``'s spans and counts (the strategy's re-split)."""
    out_spans: list[Span] = []
    out_counts: list[int] = []
    for k, (span, n) in enumerate(zip(spans, counts)):
        if n <= max_tokens and (max_chars is None or span[1] - span[0] <= max_chars):
            out_spans.append(span)
            out_counts.append(n)
        else:
            sub_spans, sub_counts = fix(k, n)
            out_spans.extend(sub_spans)
            out_counts.extend(sub_counts)
    return out_spans, out_counts


def repack_exact(
    text: str,
    units: list[Span],
    spans: list[Span],
    counts: list[int],
    tokenizer: Tokenizer,
    max_tokens: int,
    overlap: int = 0,
    split_unit: Callable[[int, int], list[Span]] | None = None,
) -> tuple[list[Span], list[int]]:
    """Pack again, counting exactly, where a span's exact count came out over the cap.

    Without overlap only the spans over the cap are packed again (from the units inside them); with
    overlap everything from the first of them on, so spans keep overlapping by whole units and never
    repeat. A unit over the cap (or the character bound) on its own is cut by ``split_unit`` (else by
    :func:`fit_exact`).
    """
    max_chars = max_chars_for(max_tokens)

    def exact(a: int, b: int) -> int:
        return tokenizer.count(text[a:b])

    def fitted(us: list[Span]) -> list[Span]:
        out: list[Span] = []
        for a, b in us:
            if b - a <= max_chars and exact(a, b) <= max_tokens:
                out.append((a, b))
            elif split_unit is not None:
                out.extend(split_unit(a, b))
            else:
                out.extend(fit_exact(text, a, b, tokenizer, max_tokens)[0])
        return out

    def refill(us: list[Span], ov: int) -> tuple[list[Span], list[int]]:
        new = fill(fitted(us), exact, max_tokens, max_chars, ov)
        return new, [exact(x, y) for x, y in new]

    if not overlap:
        return repair(
            spans,
            counts,
            max_tokens,
            lambda k, _n: refill([u for u in units if spans[k][0] <= u[0] and u[1] <= spans[k][1]], 0),
            max_chars,
        )
    first_bad = next(i for i, ((a, b), n) in enumerate(zip(spans, counts)) if n > max_tokens or b - a > max_chars)
    rest_spans, rest_counts = refill([u for u in units if u[0] >= spans[first_bad][0]], overlap)
    return spans[:first_bad] + rest_spans, counts[:first_bad] + rest_counts


def fit_exact(
    text: str, start: int, end: int, tokenizer: Tokenizer, max_tokens: int, max_chars: int | None = None
) -> tuple[list[Span], list[int]]:
    """Cover ``text[start:end]`` with consecutive spans whose *exact* counts are within ``max_tokens``.

    The last resort of every strategy (a word longer than the cap, a span whose estimate was too low):
    cuts fall on token boundaries of the span's own tokenisation, each piece is counted exactly, and a
    piece over the cap shrinks by its excess until it fits. Returns the spans and their counts.
    Raises :class:`ConfigError` when a single character needs more tokens than ``max_tokens`` allows.
    """
    max_chars = max_chars or max_chars_for(max_tokens)
    spans: list[Span] = []
    counts: list[int] = []
    a = start
    while a < end:
        a, _ = trim_span(text, a, end)
        if a >= end:
            break
        b, n = fit_first(text, a, end, tokenizer, max_tokens, max_chars)
        spans.append((a, b))
        counts.append(n)
        a = b
    return spans, counts


def fit_first(text: str, a: int, end: int, tokenizer: Tokenizer, max_tokens: int, max_chars: int) -> tuple[int, int]:
    """The first piece of :func:`fit_exact` from ``a`` (already trimmed): ``(end, exact count)``.

    A caller that needs only the first piece (``fixed`` shrinking one window) calls this instead of
    covering the whole span: at windows of a few tokens most windows shrink, and tokenising every later
    piece only to drop it was most of the strategy's time."""
    piece = text[a:end]
    # token ends of the remaining text, relative to a
    ends = [e for _, e in tokenizer.offsets(piece[: max_chars + 1]) if e > 0]
    limit = min(len(piece), max_chars)
    cands = sorted({e for e in ends if e <= limit} | {limit})
    k = min(len(cands), max_tokens) - 1 if len(cands) > max_tokens else len(cands) - 1
    while True:
        b = a + cands[k]
        n = tokenizer.count(text[a:b])
        if n <= max_tokens:
            return b, n
        if k == 0:
            return _fit_first_token(text, a, cands[0], tokenizer, max_tokens)
        k = max(0, k - max(1, n - max_tokens))


def _fit_first_token(text: str, a: int, c: int, tokenizer: Tokenizer, max_tokens: int) -> tuple[int, int]:
    """Cut inside the first token at ``a`` (``c`` characters long): characters one by one."""
    while c > 1 and tokenizer.count(text[a : a + c]) > max_tokens:
        c = max(1, c // 2) if c > 8 else c - 1
    b = a + c
    n = tokenizer.count(text[a:b])
    if n > max_tokens:
        raise ConfigError(
            f"max_tokens={max_tokens} is too small: the character {text[a]!r} at offset {a} alone "
            f"is {n} {tokenizer.name} tokens"
        )
    return b, n
