"""``auto``: the strategy that suits the document's format, chosen per document (the default).

One rule per format, from what the loader found (``Document.metadata["format"]`` and ``sections``):

=========================== ===================================================================
document                    resolved strategy
=========================== ===================================================================
Markdown                    ``markdown`` (split at headings, fences and tables whole)
HTML or PDF with headings   ``recursive`` with ``respect_sections`` = :data:`SECTION_LEVEL` (a
                            chunk never crosses a heading of level 1-2; an explicit
                            ``respect_sections`` wins)
subtitles (SRT, VTT)        ``sentence`` packing the loader's cue-merged sentences (a chunk never
                            ends mid-cue)
anything else (plain text)  ``recursive``
=========================== ===================================================================

Every chunk records what was used as ``strategy="auto:<name>"`` (``auto:markdown``, ``auto:recursive``,
``auto:sentence``). Chunk ids hash the ``auto`` configuration (its own parameters), the document and the
span, so they are deterministic and differ from the ids an explicit ``--strategy markdown`` gives; index and
eval record ``auto`` and its parameters as the configuration, and the per-document choice follows from the
document, so re-indexing the same files gives the same chunks.
"""

from __future__ import annotations

from ..document import Chunk, Document, stable_hash
from ..segmentation.tokenizers import Tokenizer
from .base import Span, Strategy

#: heading level that HTML and PDF chunks never cross under ``auto`` (1 = ``<h1>``/top outline entries)
SECTION_LEVEL = 2
SUBTITLE_FORMATS = ("srt", "vtt", "subtitles", "webvtt")


class AutoChunker(Strategy):
    """Pick ``markdown``, heading-aware ``recursive``, cue-aware ``sentence`` or ``recursive`` by format.

    Takes the shared parameters only (``max_tokens``, ``min_tokens``, ``overlap``, ``tokenizer``,
    ``respect_sections``) and passes them on to the strategy it resolves to.
    """

    name = "auto"

    def resolve(self, doc: Document) -> Strategy:
        """The strategy for ``doc`` (a new object; ``self`` is never changed)."""
        from . import get_strategy

        fmt = str(doc.metadata.get("format") or "").lower()
        params = self.get_params()
        if fmt == "markdown":
            return get_strategy("markdown", **params)
        if fmt in SUBTITLE_FORMATS or doc.cues:
            return get_strategy("sentence", **params)
        if fmt in ("html", "pdf") and doc.sections and params.get("respect_sections") is None:
            params["respect_sections"] = SECTION_LEVEL
        return get_strategy("recursive", **params)

    def chunk(self, doc: Document | str) -> list[Chunk]:
        """Chunks of ``doc`` by the resolved strategy, labelled ``auto:<name>`` with ``auto``'s ids."""
        if isinstance(doc, str):
            doc = Document(doc)
        self.validate()
        inner = self.resolve(doc)
        chunks = inner.chunk(doc)
        label, config = f"{self.name}:{inner.name}", self.config_id()
        for c in chunks:
            c.strategy = label
            c.id = stable_hash("chunk", c.doc_id, config, f"{c.start}:{c.end}")
        return chunks

    def split(self, doc: Document, start: int, end: int, tokenizer: Tokenizer) -> list[Span]:
        return self.resolve(doc).split(doc, start, end, tokenizer)


__all__ = ["AutoChunker", "SECTION_LEVEL"]
