"""Contextual chunk text without a model: the document's title and section path, or neighbouring sentences.

The text goes into :attr:`Chunk.context`, never into ``Chunk.text``: the index embeds and BM25-indexes
``Chunk.embed_text`` (context, blank line, chunk text) but returns the exact chunk text, so offsets stay
exact and a reader never sees words that were not in that part of the document.

- ``headings``: "Title > Section > Subsection", the cheapest fix for chunks that never name their subject
  (Anthropic's contextual retrieval without the LLM). The title is ``doc.title``, else the file name
  without its extension; the section path is the chunk's own ``section`` (set by every strategy from the
  loader's headings). A path element equal to the title is not repeated.
- ``neighbors``: the ``neighbors`` sentences before and after the chunk, the sliding-window cure for
  fragmented context. A sentence the chunk cuts in two counts as one of them; the neighbours are capped at
  ``max_context_tokens`` (default 128, split evenly, trimmed at the far end) so the context cannot push the
  chunk's own text out of the embedding model's window.
"""

from __future__ import annotations

import bisect
from pathlib import Path

from ..document import Chunk, Document
from ..segmentation.tokenizers import Tokenizer, resolve_tokenizer
from ..validation import Interval, check


def document_title(doc: Document) -> str | None:
    """``doc.title``, else the file name without extension (``<text>``-style sources have none)."""
    if doc.title and doc.title.strip():
        return " ".join(doc.title.split())
    src = doc.source or ""
    if not src or src.startswith("<"):
        return None
    name = Path(src).name
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return " ".join(stem.replace("_", " ").split()) or None


def headings_context(doc: Document, chunk: Chunk, separator: str = " > ") -> str | None:
    """``"Title > Section > Subsection"`` for ``chunk``, or ``None`` when the document has neither."""
    title = document_title(doc)
    path = [" ".join(p.split()) for p in (chunk.section or doc.section_at(chunk.start, chunk.end))]
    path = [p for p in path if p]
    parts = [title] if title else []
    for p in path:
        if not parts or p.casefold() != parts[-1].casefold():
            parts.append(p)
    return separator.join(parts) if parts else None


def add_headings(doc: Document, chunks: list[Chunk], separator: str = " > ") -> list[Chunk]:
    for c in chunks:
        c.context = headings_context(doc, c, separator)
    return chunks


def add_neighbors(
    doc: Document,
    chunks: list[Chunk],
    neighbors: int = 2,
    max_context_tokens: int | None = 128,
    tokenizer: str | Tokenizer = "minilm",
    sentence_backend: str = "chunkwise",
) -> list[Chunk]:
    """Set ``context`` to the ``neighbors`` sentences before and after each chunk, joined by `` … ``.

    ``max_context_tokens`` (``0`` or ``None``: no cap) bounds the whole context, half before and half after the
    chunk; the part before is trimmed from its start and the part after from its end, on token boundaries,
    so what remains is what sits next to the chunk.
    """
    check(neighbors, Interval(int, 1, None), "neighbors", "neighbors context")
    no_cap = Interval(int, 0, 0)  # 0: no cap
    check(max_context_tokens, [no_cap, Interval(int, 2, None), None], "max_context_tokens", "neighbors context")
    if max_context_tokens == 0:
        max_context_tokens = None
    from ..segmentation.sentences import split_sentences

    text = doc.text
    sents = split_sentences(text, backend=sentence_backend) if chunks else []
    starts = [a for a, _ in sents]
    ends = [b for _, b in sents]
    tok = resolve_tokenizer(tokenizer) if max_context_tokens is not None else None
    half = max_context_tokens // 2 if max_context_tokens is not None else None
    for c in chunks:
        # sentences that begin before the chunk: the last `neighbors` of them (one may straddle the start)
        i = bisect.bisect_left(starts, c.start)
        before = ""
        if i > 0:
            a = starts[max(0, i - neighbors)]
            before = text[a : c.start].strip()
        # sentences that end after the chunk: the first `neighbors` of them (one may straddle the end)
        j = bisect.bisect_right(ends, c.end)
        after = ""
        if j < len(sents):
            b = ends[min(len(sents), j + neighbors) - 1]
            after = text[c.end : b].strip()
        if tok is not None and half is not None:
            before = _keep_tokens(before, tok, half, from_end=True)
            after = _keep_tokens(after, tok, half, from_end=False)
        parts = [p for p in (before, after) if p]
        c.context = " … ".join(parts) if parts else None
    return chunks


def _keep_tokens(text: str, tok: Tokenizer, limit: int, from_end: bool) -> str:
    """At most ``limit`` tokens of ``text``: its last ones when ``from_end``, else its first ones."""
    if not text:
        return text
    offs = tok.offsets(text)
    if len(offs) <= limit:
        return text
    if from_end:
        return text[offs[-limit][0] :].strip()
    return text[: offs[limit - 1][1]].strip()
