"""Recursive splitting: cut at the coarsest separator that makes pieces fit, merge small neighbours.

The order is paragraphs -> lines -> sentences -> clauses -> words -> characters (the ``prose`` preset;
``markdown`` starts with headings and list items, ``code`` with top-level definitions, ``docstring`` --
the prose inside code -- with paragraphs, then field, directive, doctest and list lines). A piece that fits in
``max_tokens`` is kept whole; one that does not is cut at the next separator down, and the pieces of one
level are merged greedily, in order, as long as the merged span still fits. This is the algorithm of
LangChain's ``RecursiveCharacterTextSplitter`` and semchunk, with three differences:

- **Exact slices.** Chunks are spans of the original text (trimmed of surrounding whitespace), never
  re-joined strings, so ``doc.text[c.start:c.end] == c.text`` always holds.
- **One tokenisation.** The region is tokenised once; the size of any span is then two binary searches in
  the token offsets (:class:`~chunkwise.segmentation.token_map.TokenMap`), not a call to the tokenizer per
  piece. That estimate can differ from a fresh count by a token where a cut splits a word, so every chunk is
  counted exactly once at the end, and the rare chunk over the cap is split again: no chunk is ever over.
- **A character bound.** No chunk is longer than ``max_tokens * 16`` characters (see
  :data:`~chunkwise.strategies.base.MAX_CHARS_PER_TOKEN`), so text that a tokenizer compresses into one
  token (MiniLM's ``[UNK]`` for a word over 100 characters) still gives chunks of a sensible size.
- **Fenced code stays whole.** With a preset, a fenced code block (```` ``` ```` or ``~~~``, at any
  indentation, as inside an admonition) that fits ``max_tokens`` is never cut: its blank and other lines
  are no separators. A separator level knows nothing of fences, and a console session or a diagram with
  blank lines in it came out in two chunks (26 of 391 such blocks of the FastAPI docs). An explicit list
  of separators is taken literally (LangChain's behaviour, which the evaluation reproduces).

Separators are kept with the piece: with the presets a separator stays at the *end* of the piece it closes
(a sentence keeps its full stop); with an explicit list of strings (LangChain style, e.g. Chroma's
``["\\n\\n", "\\n", ".", "?", "!", " ", ""]``) it goes to the *start* of the next piece, as LangChain's
``keep_separator=True`` does, so the evaluation can reproduce Chroma's baseline. ``keep_separator`` chooses
explicitly. ``""`` in a list means "characters" (the last resort).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from typing import Any

from ..document import Document
from ..formats.markdown_lines import ATX_HEADING
from ..registry import lazy_regex
from ..segmentation.token_map import TokenMap
from ..segmentation.tokenizers import Tokenizer
from ..validation import Options, StrList, check
from .base import CountingStrategy, Span, max_chars_for, trim_span
from .packing import fill, fit_exact, pack, repair

_SENTENCES = "<sentences>"
_CHARACTERS = ""

_LOOKAHEAD = 80  # characters of context the sentence segmenter gets past a window

_CLAUSE = r"[,;:\u2014\u2013][ \t]+|[\uff0c\u3001\uff1b\uff1a]"
#: a code-fence line: indentation, the fence run, the rest (an info string on an opener, nothing on a closer)
_FENCE_LINE = lazy_regex(r"^([ \t]*)(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
_WORDS = r"\s+"

#: name -> separator levels, coarsest first. Strings are regular expressions; the piece ends where the
#: match ends (or starts, with keep_separator="start"). ``<sentences>`` uses the sentence segmenter.
PRESETS: dict[str, list[str]] = {
    "prose": [r"\n[ \t]*\n\s*", r"\n", _SENTENCES, _CLAUSE, _WORDS, _CHARACTERS],
    "markdown": [
        rf"\n(?={ATX_HEADING})",  # before a heading
        r"\n[ \t]*\n\s*",  # blank line: paragraphs, blocks
        r"\n(?=[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t])",  # before a list item
        r"\n",
        _SENTENCES,
        _CLAUSE,
        _WORDS,
        _CHARACTERS,
    ],
    "code": [
        # before a top-level definition (Python, JavaScript/TypeScript, Go, Rust, Java, C#)
        r"\n(?=@\w|(?:async[ \t]+def|def|class|function|export|const|let|var|interface|type|enum|struct"
        r"|impl|fn|func|pub|public|private|protected|static|package|module)\b)",
        r"\n[ \t]*\n\s*",  # blank lines
        r"\n(?=[ \t]+(?:@\w|(?:async[ \t]+def|def|class|function|fn|func)\b))",  # nested definitions
        r"\n",
        _WORDS,
        _CHARACTERS,
    ],
    # a docstring or comment too long for one chunk: its paragraphs, then the lines that start a field
    # (``:param x:``, ``@param``, ``Args:``), a directive (``.. note::``), a doctest or a list item
    "docstring": [
        r"\n[ \t]*\n\s*",
        r"\n(?=[ \t]*(?:[*#]|//+)?[ \t]*(?::\w[^:\n`]*:(?=\s)|@\w|\.\. |>>> |[-*+][ \t]|\d{1,9}[.)][ \t]"
        r"|[A-Z]\w*(?: \w+)?:[ \t]*\n))",
        r"\n",
        _SENTENCES,
        _CLAUSE,
        _WORDS,
        _CHARACTERS,
    ],
}


#: the one declaration of ``separators`` (the strategy's parameter and :func:`recursive_split`'s)
SEPARATORS = [Options(*PRESETS, what="a preset"), StrList()]


class _Level:
    """One separator level: ``kind`` "regex" (cut where ``pattern`` matches), "sentences" or "chars".

    (A plain class, as :class:`_Splitter`: a dataclass costs ~1 CPU-ms to create on Python 3.11, at the
    start of every ``chunkwise chunk``.)"""

    __slots__ = ("kind", "pattern")

    def __init__(self, kind: str, pattern: re.Pattern | None = None) -> None:
        self.kind = kind
        self.pattern = pattern


def _levels(separators: str | Sequence[str] | None) -> tuple[list[_Level], str]:
    """Compile a preset name or an explicit list of literal separators; also the default keep side."""
    if separators is None:
        separators = "prose"
    check(separators, SEPARATORS, "separators", "recursive_split")
    cached, keep = _compiled_levels(separators if isinstance(separators, str) else tuple(separators))
    return list(cached), keep


@functools.lru_cache(maxsize=64)
def _compiled_levels(separators: str | tuple) -> tuple[tuple[_Level, ...], str]:
    levels, keep = _compile_levels(separators)
    return tuple(levels), keep


def _compile_levels(separators: str | Sequence[str]) -> tuple[list[_Level], str]:
    if isinstance(separators, str):
        raw, literal, keep = PRESETS[separators], False, "end"
    else:
        raw, literal, keep = list(separators), True, "start"
    levels = []
    for sep in raw:
        if sep == _CHARACTERS:
            levels.append(_Level("chars"))
        elif sep == _SENTENCES and not literal:
            levels.append(_Level("sentences"))
        else:
            # compiled when a piece is cut at this level: a text that fits reaches none of them
            levels.append(_Level("regex", lazy_regex(re.escape(sep) if literal else sep)))
    if levels[-1].kind != "chars":  # characters are always the last resort
        levels.append(_Level("chars"))
    return levels, keep


class _Splitter:
    """One run of the algorithm over ``text[start:end]`` (state shared by the recursive calls)."""

    def __init__(
        self,
        text: str,
        tokenizer: Tokenizer,
        max_tokens: int,
        levels: list[_Level],
        keep: str,
        tm: TokenMap,
        max_chars: int,
        fences: bool = False,  # keep fenced code blocks that fit whole (the presets)
    ) -> None:
        self.text = text
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.levels = levels
        self.keep = keep
        self.tm = tm
        self.max_chars = max_chars
        self.fences = fences
        self._guards: list[Span] | None = None
        self._guard_starts: list[int] = []

    def guards(self, a: int, b: int) -> list[Span]:
        """The fenced code blocks in ``[a, b)`` (the first range asked for: the whole split) that fit."""
        if self._guards is None:
            self._guards = [g for g in fence_spans(self.text, a, b) if self.fits(*g)] if self.fences else []
            self._guard_starts = [g[0] for g in self._guards]
        return self._guards

    def inside_guard(self, c: int) -> bool:
        """Whether a cut at ``c`` would fall inside a fenced block that fits."""
        i = bisect.bisect_right(self._guard_starts, c - 1) - 1
        return i >= 0 and c < self._guards[i][1]  # type: ignore[index]

    def fits(self, a: int, b: int) -> bool:
        return b - a <= self.max_chars and self.tm.estimate(a, b) <= self.max_tokens

    def split(self, a: int, b: int, level: int = 0) -> list[Span]:
        """Spans covering ``[a, b)``, each estimated to fit."""
        if self.fits(a, b):
            return [(a, b)]
        self.guards(a, b)
        for i in range(level, len(self.levels)):
            if self.levels[i].kind == "sentences":
                return self.pack_sentences(a, b, i + 1)
            pieces = self.cut(a, b, self.levels[i])
            if len(pieces) > 1 or self.levels[i].kind == "chars":
                return self.merge(pieces, i + 1)
        return [(a, b)]  # pragma: no cover - the chars level always cuts

    def pack_sentences(self, a: int, b: int, next_level: int) -> list[Span]:
        """The sentence level, packed greedily without segmenting the whole piece.

        Same result as cutting ``[a, b)`` into sentences and merging them (whole sentences while they
        fit; a sentence too long alone goes to ``next_level``), but the sentence segmenter only reads a
        window before the point where the token budget runs out (with some text after it, so the word
        after a full stop is seen), since only the last sentence start before that point matters.
        Pieces at this level hold no line breaks (lines come first), so a window sees what the whole
        piece would.
        """
        out: list[Span] = []
        pos = a
        while pos < b:
            if self.fits(pos, b):
                out.append((pos, b))
                break
            p = self.budget_end(pos, b)
            cut = self.last_sentence_start(pos, p, b)
            if cut is None:  # the sentence starting at pos is longer than the budget
                nxt = self.next_sentence_start(p, b)
                out.extend(self.split(pos, nxt, next_level))
                pos = nxt
            else:
                out.append((pos, cut))
                pos = cut
        return out

    def budget_end(self, pos: int, b: int) -> int:
        """The furthest end such that ``[pos, end)`` is estimated to fit."""
        tm = self.tm
        j = tm.first_after(pos) + self.max_tokens
        end = tm.starts[j] if j < len(tm) else b
        return max(pos + 1, min(end, b, pos + self.max_chars))

    def _sentence_starts(self, w0: int, w1: int) -> list[int]:
        from ..segmentation.sentences import split_sentences

        return [w0 + s for s, _ in split_sentences(self.text[w0:w1])[1:]]

    def last_sentence_start(self, pos: int, p: int, b: int) -> int | None:
        """The last sentence start in ``(pos, p]``, looking at a window before ``p`` first."""
        width = max(256, (p - pos) // 4)
        w0 = max(pos, p - width)
        while True:
            found = [c for c in self._sentence_starts(w0, min(b, p + _LOOKAHEAD)) if pos < c <= p]
            if found:
                return found[-1]
            if w0 == pos:
                return None
            w0 = max(pos, w0 - 4 * width)

    def next_sentence_start(self, p: int, b: int) -> int:
        """The first sentence start after ``p`` (or ``b``)."""
        width = 1024
        while True:
            w1 = min(b, p + width)
            found = [c for c in self._sentence_starts(max(0, p - _LOOKAHEAD), w1) if c > p]
            if found and (found[0] < w1 - _LOOKAHEAD or w1 == b):
                return found[0]
            if w1 == b:
                return b
            width *= 4

    def cut(self, a: int, b: int, level: _Level) -> list[Span]:
        """Pieces of ``[a, b)`` at one separator level (consecutive, covering the span)."""
        if level.kind == "chars":
            return self.char_pieces(a, b)
        if level.kind == "sentences":
            from ..segmentation.sentences import split_sentences

            cuts = [a + s for s, _ in split_sentences(self.text[a:b])[1:]]
        else:
            use_start = self.keep == "start"
            assert level.pattern is not None  # every level but "sentences" has one
            cuts = [m.start() if use_start else m.end() for m in level.pattern.finditer(self.text, a, b)]
        if self._guards:
            cuts = [c for c in cuts if not self.inside_guard(c)]
        bounds = [a]
        for c in cuts:
            if bounds[-1] < c < b:
                bounds.append(c)
        bounds.append(b)
        return list(zip(bounds, bounds[1:]))

    def char_pieces(self, a: int, b: int) -> list[Span]:
        """Windows of ``max_tokens`` tokens on token boundaries (and at most ``max_chars`` characters)."""
        out, pos = [], a
        while pos < b:
            e = self.budget_end(pos, b)
            out.append((pos, e))
            pos = e
        return out

    def merge(self, pieces: list[Span], next_level: int) -> list[Span]:
        """Greedy merge of consecutive fitting pieces (:func:`~chunkwise.strategies.packing.fill`); pieces
        too big are split at ``next_level``. Eight or more contiguous pieces are planned with bound counts."""
        counted = None
        if len(pieces) >= 8:
            bounds = [pa for pa, _ in pieces]
            bounds.append(pieces[-1][1])
            if all(pb == bounds[k + 1] for k, (_, pb) in enumerate(pieces)):
                upper, lower = self.tm.bound_counts(bounds)
                counted = (upper[1:].tolist(), lower[:-1].tolist())
        return fill(
            pieces,
            self.tm.estimate,
            self.max_tokens,
            self.max_chars,
            counted=counted,
            oversize=lambda a, b: self.split(a, b, next_level),
        )


def fence_spans(text: str, start: int, end: int) -> list[Span]:
    """Fenced code blocks in ``text[start:end]``, from the opener's fence to the end of the closing line.

    A closer is a line of the opener's fence character, at least as long, with nothing after it (as
    CommonMark; any indentation, since pymdownx nests fences in admonitions and tabs). An opener that is
    never closed makes no block: nothing to keep whole."""
    if text.find("```", start, end) < 0 and text.find("~~~", start, end) < 0:
        return []
    out: list[Span] = []
    opener: re.Match | None = None
    for m in _FENCE_LINE.finditer(text, start, end):
        run = m.group(2)
        if opener is None:
            if not (run[0] == "`" and "`" in m.group(3)):
                opener = m
        elif run[0] == opener.group(2)[0] and len(run) >= len(opener.group(2)) and not m.group(3).strip():
            out.append((opener.start(2), m.end()))
            opener = None
    return out


def recursive_split_counted(
    text: str,
    start: int,
    end: int,
    tokenizer: Tokenizer,
    max_tokens: int,
    *,
    min_tokens: int = 0,
    overlap: int = 0,
    separators: str | Sequence[str] | None = "prose",
    keep_separator: str | None = None,
    token_map: TokenMap | None = None,
) -> tuple[list[Span], list[int]]:
    """:func:`recursive_split` plus the exact token count of every span."""
    if end <= start:
        return [], []
    levels, keep = _levels(separators)
    if keep_separator is not None:
        keep = check(keep_separator, Options("start", "end"), "keep_separator", "recursive_split")
    max_chars = max_chars_for(max_tokens)
    tm = token_map if token_map is not None else TokenMap(text[start:end], tokenizer, base=start)
    fences = isinstance(separators, str)  # a preset; an explicit list is taken literally
    splitter = _Splitter(text, tokenizer, max_tokens, levels, keep, tm, max_chars, fences)
    spans = [trim_span(text, a, b) for a, b in splitter.split(start, end)]
    spans = [(a, b) for a, b in spans if b > a]
    return pack(
        text,
        spans,
        tokenizer,
        max_tokens,
        token_map=tm,
        min_tokens=min_tokens,
        overlap=overlap,
        overlap_by="words",
        packed=True,
        resplit=lambda a, b, n: _resplit(text, a, b, tokenizer, max_tokens, levels, keep, n, fences),
    )


def _resplit(
    text: str,
    a: int,
    b: int,
    tokenizer: Tokenizer,
    max_tokens: int,
    levels: list[_Level],
    keep: str,
    n: int,
    fences: bool = False,
) -> tuple[list[Span], list[int]]:
    """Split a span that counted ``n > max_tokens`` tokens, with its own tokenisation and a tighter budget."""
    budget = max_tokens
    for attempt in range(3):
        # first with the span's own tokenisation (estimates are then right but for the cut edges), then
        # with a budget that leaves room for the error seen
        if attempt:
            budget = max(1, budget - (n - max_tokens) - 1)
        tm = TokenMap(text[a:b], tokenizer, base=a)
        splitter = _Splitter(text, tokenizer, budget, levels, keep, tm, max_chars_for(max_tokens), fences)
        spans = [s for s in (trim_span(text, x, y) for x, y in splitter.split(a, b)) if s[1] > s[0]]
        counts = tm.counts(text, spans)
        if all(c <= max_tokens for c in counts):
            return spans, counts
        n = max(counts)
    return fit_exact(text, a, b, tokenizer, max_tokens)


def resplit_over_cap(
    text: str, spans: list[Span], counts: list[int], tokenizer: Tokenizer, max_tokens: int, separators: str
) -> tuple[list[Span], list[int]]:
    """``spans`` (with their exact ``counts``) as they are, but for the rare one over ``max_tokens`` (its
    estimate was short), re-split by the recursive rules with the ``separators`` preset."""

    def fix(k: int, _n: int) -> tuple[list[Span], list[int]]:
        return recursive_split_counted(text, spans[k][0], spans[k][1], tokenizer, max_tokens, separators=separators)

    return repair(spans, counts, max_tokens, fix)


def recursive_split(
    text: str, start: int, end: int, tokenizer: Tokenizer, max_tokens: int, **options: Any
) -> list[Span]:
    """Spans of ``text[start:end]`` by the recursive rules, each exactly within ``max_tokens``.

    Reusable by other strategies (the semantic ones split over-long sentences with it before embedding).
    Spans are trimmed of whitespace, sorted, and cover every non-whitespace character of the range;
    with ``overlap`` consecutive spans overlap by up to that many tokens, starting at a word.
    ``token_map`` may pass a :class:`TokenMap` of a text range containing ``[start, end)`` to skip the
    tokenisation. ``options`` are :func:`recursive_split_counted`'s (``min_tokens``, ``overlap``,
    ``separators``, ``keep_separator``, ``token_map``).
    """
    return recursive_split_counted(text, start, end, tokenizer, max_tokens, **options)[0]


class RecursiveChunker(CountingStrategy):
    """Paragraphs, then lines, sentences, clauses, words and characters, until every piece fits.

    ``separators``: a preset (``"prose"``, ``"markdown"``, ``"code"``, ``"docstring"``) or a list of literal separator
    strings, coarsest first (``""`` = characters). ``keep_separator``: ``"end"`` (a separator stays with the
    piece before it; the presets' default) or ``"start"`` (with the piece after it; LangChain's behaviour
    and the default for an explicit list).
    """

    name = "recursive"
    #: an int here (the base also allows ``None``, for the semantic strategies' own default)
    min_tokens: int
    _parameter_constraints = {
        "separators": SEPARATORS,
        "keep_separator": [Options("start", "end"), None],
    }

    def __init__(
        self,
        *,
        separators: str | Sequence[str] = "prose",
        keep_separator: str | None = None,
        **shared: Any,
    ):
        super().__init__(**shared)
        self.separators = separators
        self.keep_separator = keep_separator

    def split_with_counts(self, doc: Document, start: int, end: int, tokenizer: Tokenizer):
        return recursive_split_counted(
            doc.text,
            start,
            end,
            tokenizer,
            self.max_tokens,
            min_tokens=self.min_tokens,
            overlap=self.overlap,
            separators=self.separators,
            keep_separator=self.keep_separator,
        )
