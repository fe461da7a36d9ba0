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

import numpy as np

from ..document import Document
from ..segmentation.token_map import TokenMap
from ..segmentation.tokenizers import Tokenizer
from .base import Span, Strategy, max_chars_for, merge_small
from .recursive import recursive_split


class SentenceChunker(Strategy):
    """Greedy packing of whole sentences; ``sentence_backend`` picks the segmenter (``chunkwise``, ``pysbd``,
    ``blingfire``) and ``language`` hints it (``en``, ``de``, ``zh``, ``ja``)."""

    name = "sentence"

    def __init__(
        self,
        max_tokens: int = 256,
        min_tokens: int = 0,
        overlap: int = 0,
        tokenizer: str | Tokenizer = "minilm",
        respect_sections: int | None = None,
        sentence_backend: str = "chunkwise",
        language: str | None = None,
    ):
        super().__init__(max_tokens, min_tokens, overlap, tokenizer, respect_sections)
        self.sentence_backend = sentence_backend
        self.language = language

    def units(self, text: str, start: int, end: int, tokenizer: Tokenizer, tm: TokenMap,
              given=None) -> list[Span]:
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
            sentences = [(a + start, b + start) for a, b in
                         split_sentences(text[start:end], backend=self.sentence_backend, **kwargs)]
        if not sentences:
            return []
        # every sentence's estimate in one vectorised pass (see TokenMap.bound_counts)
        upper, lower = tm.bound_counts([b for _, b in sentences] + [a for a, _ in sentences])
        m = len(sentences)
        over = np.flatnonzero((upper[:m] - lower[m:] > self.max_tokens)
                              | (np.asarray([b - a for a, b in sentences]) > max_chars))
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
        text = doc.text
        max_tokens, overlap = self.max_tokens, self.overlap
        max_chars = max_chars_for(max_tokens)
        tm = TokenMap(text[start:end], tokenizer, base=start)
        units = self.units(text, start, end, tokenizer, tm, doc.metadata.get("units"))
        if not units:
            return [], []
        upper, lower = tm.bound_counts([b for _, b in units] + [a for a, _ in units])
        m = len(units)
        spans = _pack(units, tm.estimate, max_tokens, max_chars, overlap,
                      counted=(upper[:m].tolist(), lower[m:].tolist()))
        if self.min_tokens:
            spans = merge_small(spans, tm.estimate, self.min_tokens, max_tokens, max_chars)
        counts = tm.counts(text, spans)
        if all(n <= max_tokens for n in counts):
            return spans, counts
        return self._repair(text, units, spans, counts, tokenizer)

    def _repair(self, text: str, units: list[Span], spans: list[Span], counts: list[int], tokenizer: Tokenizer):
        """Pack again, counting exactly, where a chunk's exact count came out over the cap (its estimate was
        a token or two short, or a unit was a word that one tokenisation makes [UNK] and another does not).
        Without overlap only the chunks over the cap are packed again; with overlap everything from the
        first of them on, so chunks keep overlapping by whole units and never repeat."""
        max_tokens, max_chars = self.max_tokens, max_chars_for(self.max_tokens)

        def exact(a: int, b: int) -> int:
            return tokenizer.count(text[a:b])

        def fitted(us: list[Span]) -> list[Span]:
            out: list[Span] = []
            for a, b in us:
                if exact(a, b) <= max_tokens:
                    out.append((a, b))
                else:
                    out.extend(recursive_split(text, a, b, tokenizer, max_tokens))
            return out

        out_spans: list[Span] = []
        out_counts: list[int] = []
        if not self.overlap:
            for (a, b), n in zip(spans, counts):
                if n <= max_tokens:
                    out_spans.append((a, b))
                    out_counts.append(n)
                    continue
                inner = fitted([u for u in units if a <= u[0] and u[1] <= b])
                for x, y in _pack(inner, exact, max_tokens, max_chars, 0):
                    out_spans.append((x, y))
                    out_counts.append(exact(x, y))
            return out_spans, out_counts
        first_bad = next(i for i, n in enumerate(counts) if n > max_tokens)
        out_spans, out_counts = spans[:first_bad], counts[:first_bad]
        rest = fitted([u for u in units if u[0] >= spans[first_bad][0]])
        for x, y in _pack(rest, exact, max_tokens, max_chars, self.overlap):
            out_spans.append((x, y))
            out_counts.append(exact(x, y))
        return out_spans, out_counts

    def split(self, doc: Document, start: int, end: int, tokenizer: Tokenizer) -> list[Span]:
        return self.split_with_counts(doc, start, end, tokenizer)[0]


def _pack(units: list[Span], estimate, max_tokens: int, max_chars: int, overlap: int,
          counted: tuple[list[int], list[int]] | None = None) -> list[Span]:
    """Greedy packing of consecutive units; with ``overlap``, trailing units are repeated.

    ``counted``: ``(upper, lower)`` from :meth:`TokenMap.bound_counts` at the units' ends and starts, so
    that ``estimate(units[i][0], units[j][1]) == max(0, upper[j] - lower[i])``: no search per step.
    """
    starts = [a for a, _ in units]
    ends = [b for _, b in units]
    if counted is not None:
        upper, lower = counted

        def est(i: int, j: int) -> int:  # units i..j inclusive
            return upper[j] - lower[i] if ends[j] > starts[i] else 0
    else:
        def est(i: int, j: int) -> int:
            return estimate(starts[i], ends[j])

    def fits(i: int, j: int) -> bool:  # units i..j inclusive
        return ends[j] - starts[i] <= max_chars and est(i, j) <= max_tokens

    spans: list[Span] = []
    i, n = 0, len(units)
    while i < n:
        j = i
        if counted is not None:  # the hot loop, inlined
            a, low = starts[i], lower[i]
            while j + 1 < n:
                b = ends[j + 1]
                if b - a > max_chars or (b > a and upper[j + 1] - low > max_tokens):
                    break
                j += 1
        else:
            while j + 1 < n and fits(i, j + 1):
                j += 1
        spans.append((units[i][0], units[j][1]))
        if j + 1 >= n:
            break
        nxt = j + 1
        if overlap:
            k = j + 1
            # the largest number of trailing units (never all of them) whose tokens fit in `overlap`
            while k - 1 > i and est(k - 1, j) <= overlap:
                k -= 1
            while k <= j and not fits(k, j + 1):  # the next chunk must still take the next unit
                k += 1
            nxt = k
        i = nxt
    return spans
