"""Chunks that remember their document: late chunking and contextual chunk text.

Two independent fixes for chunks that lost their context (a later paragraph that says "it" about a product
named only in the first), combinable with any chunking strategy:

- :func:`late_chunk_vectors` (``--late``): embed the whole document once and pool each chunk's vector from
  its own token vectors, which have attended to the text around it (:mod:`.late`).
- :func:`contextualize` (``--context MODE``): fill :attr:`Chunk.context` with text that situates the chunk:
  ``headings`` (title and section path), ``neighbors`` (surrounding sentences) or ``llm`` (a situating
  sentence written by an OpenAI-compatible chat model, Anthropic's contextual retrieval). The index embeds
  and BM25-indexes ``Chunk.embed_text`` (context + text) and returns the exact ``Chunk.text``.
"""

from __future__ import annotations

from typing import Any

from ..deprecation import renamed, renames_for
from ..document import Chunk, Document
from ..errors import ConfigError
from ..validation import Options, validated
from .late import LateChunkingStats, LateChunkingWarning, check_chunk_spans, late_chunk_vectors

#: the values ``--context`` accepts
CONTEXT_MODES = ("headings", "neighbors", "llm")
#: the one declaration of a context mode (``None`` or ``"none"``: no context), ``PipelineConfig.context``'s too
CONTEXT_MODE = [Options("none", *CONTEXT_MODES), None]

_NEIGHBOR_OPTS = ("neighbors", "max_context_tokens", "tokenizer", "sentence_backend")
_HEADING_OPTS = ("separator",)
_LLM_OPTS = (
    "base_url",
    "model",
    "api_key",
    "concurrency",
    "timeout",
    "retries",
    "backoff",
    "answer_tokens",
    "temperature",
    "max_document_chars",
    "cache",
    "cache_dir",
    "contextualizer",
)


@validated("contextualize", mode=CONTEXT_MODE)
def contextualize(doc: Document | str, chunks: list[Chunk], mode: str | None, **opts: Any) -> list[Chunk]:
    """Fill ``chunk.context`` for every chunk of ``doc`` by ``mode`` and return the chunks (same objects).

    ``mode``: ``"headings"`` | ``"neighbors"`` | ``"llm"``; ``None`` or ``"none"`` leaves chunks unchanged.
    Options, by mode (``None`` values are ignored, so CLI defaults can be passed straight through):

    - headings: ``separator`` (default ``" > "``);
    - neighbors: ``neighbors`` (sentences each side, default 2), ``max_context_tokens`` (default 128),
      ``tokenizer`` (for that cap, default ``minilm``), ``sentence_backend``;
    - llm: ``base_url``, ``model``, ``api_key``, ``concurrency``, ``timeout``, ``retries``, ``backoff``,
      ``answer_tokens`` (old name ``max_tokens``, deprecated), ``temperature``, ``max_document_chars``,
      ``cache``, ``cache_dir``, or a ready
      ``contextualizer`` (:class:`~chunkwise.context.llm.LLMContextualizer`) to share its cache and counters
      across documents.

    Chunks must be exact slices of ``doc`` (``RuntimeError`` otherwise: a bug upstream, never ignored).
    """
    if isinstance(doc, str):
        doc = Document(doc)
    chunks = list(chunks)
    opts = {k: v for k, v in opts.items() if v is not None}
    if mode is None or mode == "none":
        return chunks
    if mode == "llm":
        opts = renamed(opts, renames_for("context mode 'llm'"), "context mode 'llm'")
    allowed = {"headings": _HEADING_OPTS, "neighbors": _NEIGHBOR_OPTS, "llm": _LLM_OPTS}[mode]
    unknown = sorted(set(opts) - set(allowed))
    if unknown:
        raise ConfigError(f"context mode {mode!r} has no option {', '.join(unknown)}; valid: {', '.join(allowed)}")
    check_chunk_spans(doc.text, chunks, doc.source)
    return _keep_table_headers(doc, _contextualize(doc, chunks, mode, opts))


def _keep_table_headers(doc: Document, chunks: list[Chunk]) -> list[Chunk]:
    """A chunk cut from a table's body keeps the table's header after whatever the mode wrote."""
    if doc.tables:
        for c in chunks:
            header = doc.table_header(c.start, c.end)
            if header and not (c.context or "").endswith(header):
                c.context = f"{c.context}\n{header}" if c.context else header
    return chunks


def _contextualize(doc: Document, chunks: list[Chunk], mode: str, opts: dict[str, Any]) -> list[Chunk]:
    if mode == "headings":
        from .contextual import add_headings

        return add_headings(doc, chunks, **opts)
    if mode == "neighbors":
        from .contextual import add_neighbors

        return add_neighbors(doc, chunks, **opts)
    from .llm import LLMContextualizer

    ctx = opts.pop("contextualizer", None)
    if ctx is None:
        ctx = LLMContextualizer(**opts)
        try:
            return ctx.contextualize(doc, chunks)
        finally:
            ctx.close()
    return ctx.contextualize(doc, chunks)


def __getattr__(name: str):
    if name in ("LLMContextualizer", "ContextWarning"):
        from . import llm

        return getattr(llm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "contextualize",
    "late_chunk_vectors",
    "CONTEXT_MODES",
    "LateChunkingStats",
    "LateChunkingWarning",
    "LLMContextualizer",
    "ContextWarning",
]
