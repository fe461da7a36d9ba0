"""Whole sentences packed up to ``max_tokens``; overlap in whole sentences.

Sentences come from :func:`chunkwise.segmentation.sentences.split_sentences` (abbreviations, decimals,
CJK terminators). They are packed greedily, in order, while the chunk still fits. With ``overlap`` the next
chunk starts with the largest number of trailing sentences of the previous one whose tokens add up to at
most ``overlap`` (never all of them, so every chunk brings at least one new sentence). A sentence longer
than ``max_tokens`` is split by the recursive rules (clauses, words, characters) and its pieces are packed
like sentences: no chunk is ever over the cap.

Sizes are planned on one tokenisation of the region and every chunk is then counted exactly; a chunk whose
exact count is over (a token or two at a cut, rarely) is packed again with its own count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..registry import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")  # imported when first used: small texts are counted without it

from ..document import Document
from ..segmentation.sentence_rules import SENTENCE_BACKENDS
from ..segmentation.token_map import TokenMap
from ..segmentation.tokenizers import Tokenizer
from ..validation import InstanceOf, Options
from .base import CountingStrategy, Span, max_chars_for
from .packing import pack
from .recursive import recursive_split


class SentenceChunker(CountingStrategy):
    """Greedy packing of whole sentences; ``sentence_backend`` picks the segmenter (``chunkwise``, ``pysbd``,
    ``blingfire``) and ``language`` hints it (``en``, ``de``, ``zh``, ``ja``)."""

    name = "sentence"
    min_tokens: int  # never None here (only the semantic strategies have a default of their own)
    _parameter_constraints = {
        "sentence_backend": [Options(*SENTENCE_BACKENDS)],
        "language": [InstanceOf(str, "a language code"), None],
    }

    def __init__(
        self,
        *,
        sentence_backend: str = "chunkwise",
        language: str | None = None,
        **shared: Any,
    ):
        super().__init__(**shared)
        self.sentence_backend = sentence_backend
        self.language = language

    def units(self, text: str, start: int, end: int, tokenizer: Tokenizer, tm: TokenMap, given=None) -> list[Span]:
        """Sentences of the region, with sentences over the cap replaced by their recursive pieces.

        ``given`` are sentence units a loader already knows (a transcript's cues merged into sentences,
        ``Document.metadata["units"]``): they are packed as they are, so a chunk never ends mid-cue."""
        from ..segmentation.sentences import split_sentences

        max_chars = max_chars_for(self.max_tokens)
        kwargs = {"language": self.language} if self.language else {}
        if given:
            from .units import sentence_spans

            sentences = sentence_spans(text, start, end, given)
        else:
            sentences = [
                (a + start, b + start)
                for a, b in split_sentences(text[start:end], backend=self.sentence_backend, **kwargs)
            ]
        if not sentences:
            return []
        # every sentence's estimate in one vectorised pass (see TokenMap.bound_counts)
        upper, lower = tm.bound_counts([b for _, b in sentences] + [a for a, _ in sentences])
        m = len(sentences)
        over = np.flatnonzero(
            (upper[:m] - lower[m:] > self.max_tokens) | (np.asarray([b - a for a, b in sentences]) > max_chars)
        )
        if not len(over):
            return sentences
        units: list[Span] = []
        done = 0
        for k in over.tolist():
            units.extend(sentences[done:k])
            a, b = sentences[k]
            units.extend(recursive_split(text, a, b, tokenizer, self.max_tokens, token_map=tm))
            done = k + 1
        units.extend(sentences[done:])
        return units

    def split_with_counts(self, doc: Document, start: int, end: int, tokenizer: Tokenizer):
        """Sentences (and the pieces of over-long ones) packed by :func:`~chunkwise.strategies.packing.pack`:
        overlap in whole sentences, repair by packing the sentences of a span over the cap again."""
        text = doc.text
        max_tokens = self.max_tokens
        tm = TokenMap(text[start:end], tokenizer, base=start)
        units = self.units(text, start, end, tokenizer, tm, doc.metadata.get("units"))
        if not units:
            return [], []
        upper, lower = tm.bound_counts([b for _, b in units] + [a for a, _ in units])
        m = len(units)
        return pack(
            text,
            units,
            tokenizer,
            max_tokens,
            token_map=tm,
            min_tokens=self.min_tokens,
            overlap=self.overlap,
            overlap_by="units",
            counted=(upper[:m].tolist(), lower[m:].tolist()),
            split_unit=lambda a, b: recursive_split(text, a, b, tokenizer, max_tokens),
        )
