"""Markdown by structure: a chunk never spans two headings, and code fences and tables stay whole.

The text is parsed with markdown-it-py (CommonMark plus tables), so a ``#`` inside a code fence is code,
not a heading, and setext headings (``Title`` over ``===``) count. Then:

1. The region is cut at every heading: each heading starts a new chunk, and every chunk's ``section`` is
   the heading path it starts in (``["Guide", "Install"]``). A heading with nothing under it but a
   sub-heading is kept with that sub-heading rather than left alone as a two-token chunk.
2. Within a heading's part, top-level blocks (paragraphs, lists, block quotes, code fences, tables, HTML)
   are packed greedily, in order, up to ``max_tokens``. A block that fits is never cut, so a fence or a
   table that fits in ``max_tokens`` is always whole in one chunk.
3. A block too big for one chunk is split by the recursive rules: the ``code`` preset for fences and
   indented code, the ``markdown`` preset (list items, lines, sentences...) for the rest, so a long table
   is cut between rows.

A plain string (no loader) gets its sections from :func:`markdown_sections`; a document from the Markdown
loader keeps the sections it has. ``overlap`` repeats tokens between consecutive chunks of one part, never
across a heading.
"""

from __future__ import annotations

import dataclasses

from ..document import Document
from ..formats.markdown_blocks import Block, markdown_blocks, markdown_sections, markdown_tables
from ..segmentation.token_map import TokenMap
from ..segmentation.tokenizers import Tokenizer
from .base import CountingStrategy, Span, max_chars_for, trim_span
from .packing import fill, keep_headings_with_bodies, merge_small, word_overlap
from .recursive import recursive_split_counted, resplit_over_cap


class MarkdownChunker(CountingStrategy):
    """Split at headings, pack whole blocks (fences and tables never cut when they fit), sub-split with
    the recursive rules."""

    name = "markdown"

    def blocks(self, text: str) -> list[Block]:
        """The top-level blocks the packing works on (headings, code, tables, text); a subclass for
        another markup gives its own and keeps the packing (:class:`chunkwise.strategies.rst.RstChunker`)."""
        return markdown_blocks(text)

    def prepare_document(self, doc: Document) -> Document:
        if (doc.sections and doc.tables) or not doc.text:
            return doc
        blocks = self.blocks(doc.text)
        return dataclasses.replace(
            doc,
            sections=doc.sections or markdown_sections(doc.text, blocks),
            tables=doc.tables or markdown_tables(doc.text, blocks),
        )

    def split_with_counts(self, doc: Document, start: int, end: int, tokenizer: Tokenizer):
        text = doc.text
        max_tokens = self.max_tokens
        max_chars = max_chars_for(max_tokens)
        tm = TokenMap(text[start:end], tokenizer, base=start)
        blocks = [b for b in self.blocks(text) if start <= b.start < end]
        parts = _parts(text, start, end, blocks)
        spans: list[Span] = []
        counts: list[int] = []

        def fits(a: int, b: int) -> bool:
            return b - a <= max_chars and tm.estimate(a, b) <= max_tokens

        for p_start, p_end, p_blocks in _headings_with_bodies(parts, fits):
            part_spans, part_counts = self._pack(text, p_blocks or [(p_start, p_end, "text")], tokenizer, tm, fits)
            spans += part_spans
            counts += part_counts
        if self.min_tokens:
            merged = merge_small(spans, tm.estimate, self.min_tokens, max_tokens, max_chars)
            if merged != spans:
                spans = merged
                counts = tm.counts(text, spans)
        return _verify(text, spans, counts, tokenizer, max_tokens)

    def _pack(self, text: str, blocks: list[tuple[int, int, str]], tokenizer: Tokenizer, tm: TokenMap, fits):
        """Greedy packing of one part's blocks (:func:`~chunkwise.strategies.packing.fill` over the blocks
        between two too big for one chunk); a block too big is split by the recursive rules, and a run of
        headings just before it leads its first piece instead of being a chunk alone."""
        max_tokens = self.max_tokens
        spans: list[Span] = []
        counts: list[int | None] = []

        def emit(runs: list[Span]) -> None:
            for run in runs:
                a, b = trim_span(text, *run)
                if b > a:
                    spans.append((a, b))
                    counts.append(None)

        done = 0
        for k, (a, b, kind) in enumerate(blocks):
            stranded = (  # headings right before a block that fits, but not with them: they lead its first piece
                kind != "heading"
                and k > done
                and all(kd == "heading" for _, _, kd in blocks[done:k])
                and not fits(blocks[done][0], b)
            )
            if fits(a, b) and not stranded:
                continue
            runs = fill([(x, y) for x, y, _ in blocks[done:k]], tm.estimate, max_tokens, max_chars_for(max_tokens))
            lead = None
            if runs and all(kd == "heading" for x, _, kd in blocks[done:k] if x >= runs[-1][0]):
                lead = runs.pop()[0]
            emit(runs)
            done = k + 1
            preset = "code" if kind == "code" else "markdown"
            sub, sub_ints = recursive_split_counted(text, a, b, tokenizer, max_tokens, separators=preset, token_map=tm)
            sub_counts: list[int | None] = list(sub_ints)
            if lead is not None:
                sub, sub_counts = _lead(text, (lead, a), sub, sub_counts, fits)
                if sub and sub[0] == trim_span(text, lead, a):
                    sub, sub_counts = _lead_smaller(
                        text, (lead, a, b), sub, sub_counts, tokenizer, tm, fits, preset, max_tokens
                    )
            spans += sub
            counts += sub_counts
        emit(fill([(x, y) for x, y, _ in blocks[done:]], tm.estimate, max_tokens, max_chars_for(max_tokens)))
        if self.overlap and len(spans) > 1:
            # a chunk keeps its overlap only if its exact count still fits; otherwise it goes back to its
            # plain span (never re-split: that could repeat a neighbour's piece)
            with_overlap = word_overlap(text, spans, tm, self.overlap, max_tokens, max_chars_for(max_tokens))
            for k, (plain, wide) in enumerate(zip(list(spans), with_overlap)):
                if wide != plain:
                    n = tm.exact(text, *wide)
                    n = tokenizer.count(text[wide[0] : wide[1]]) if n is None else n
                    if n <= max_tokens:
                        spans[k], counts[k] = wide, n
        todo = [i for i, c in enumerate(counts) if c is None]
        for i, c in zip(todo, tm.counts(text, [spans[i] for i in todo])):
            counts[i] = c
        return spans, counts


def _lead(text: str, head: Span, sub: list[Span], counts: list[int | None], fits) -> tuple[list[Span], list]:
    """Headings ``head`` before a block too big for one chunk, and the block's pieces ``sub`` (with their
    counts): the headings lead the first piece where that fits, else they are a piece of their own."""

    def heading_only(a: int, b: int) -> bool:
        return (a, b) == head

    led = keep_headings_with_bodies([head, *sub], heading_only, lambda h, p: fits(h[0], p[1]))
    if led[0] == head:
        return [trim_span(text, *head), *sub], [None, *counts]
    return led, [None, *counts[1:]]


def _lead_smaller(
    text: str, region: tuple[int, int, int], sub, counts, tokenizer, tm, fits, preset: str, max_tokens: int
):
    """Headings ``[h, a)`` that fit with no first piece of the block ``[a, b)`` as split: the block's first
    piece cut again, smaller by the headings' tokens, so that they lead it (``sub``/``counts`` unchanged when
    even that does not fit)."""
    h, a, b = region
    budget = max_tokens - tm.estimate(h, a) - 2
    if budget < 8:
        return sub, counts
    first, _ = recursive_split_counted(text, a, b, tokenizer, budget, separators=preset, token_map=tm)
    if not first or not fits(h, first[0][1]):
        return sub, counts
    rest, rest_ints = recursive_split_counted(
        text, first[0][1], b, tokenizer, max_tokens, separators=preset, token_map=tm
    )
    return [trim_span(text, h, first[0][1]), *rest], [None, *rest_ints]


def _headings_with_bodies(parts: list[tuple[int, int, list]], fits) -> list[tuple[int, int, list]]:
    """``parts`` with each heading-only part joined to the part after it where the heading still fits with
    that part (or its first block): the heading's text becomes part of that first block."""
    by_end = {p_end: p_blocks for _, p_end, p_blocks in parts}

    def heading_only(_a: int, b: int) -> bool:
        return bool(by_end[b]) and all(kind == "heading" for _, _, kind in by_end[b])

    def may_join(part: Span, nxt: Span) -> bool:
        first = by_end[nxt[1]]
        return fits(part[0], nxt[1]) or bool(first and fits(part[0], first[0][1]))

    out = []
    for a, b in keep_headings_with_bodies([(a, b) for a, b, _ in parts], heading_only, may_join):
        blocks = list(by_end[b])
        if blocks:
            blocks[0] = (a, blocks[0][1], blocks[0][2])
        out.append((a, b, blocks))
    return out


def _parts(text: str, start: int, end: int, blocks: list[Block]) -> list[tuple[int, int, list]]:
    """Cut ``[start, end)`` at every heading. Each part: (start, end, [(a, b, kind)...]) where the block
    spans reach to the next block so nothing between blocks is lost."""
    cuts = [start] + [b.start for b in blocks if b.kind == "heading" and b.start > start] + [end]
    parts = []
    bi = 0
    for p_start, p_end in zip(cuts, cuts[1:]):
        if p_end <= p_start:
            continue
        inner = []
        while bi < len(blocks) and blocks[bi].start < p_end:
            if blocks[bi].start >= p_start:
                inner.append(blocks[bi])
            bi += 1
        items = []
        for k, blk in enumerate(inner):
            a = p_start if k == 0 else blk.start
            b = inner[k + 1].start if k + 1 < len(inner) else p_end
            items.append((a, b, blk.kind))
        parts.append((p_start, p_end, items))
    return parts


def _verify(text: str, spans: list[Span], counts: list[int], tokenizer: Tokenizer, max_tokens: int):
    """Re-split the rare span whose exact count is over the cap (its estimate was a token short)."""
    return resplit_over_cap(text, spans, counts, tokenizer, max_tokens, "markdown")
