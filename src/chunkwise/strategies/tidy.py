"""The rules every chunking keeps, whatever the strategy decided: no stranded lead-ins, no junk chunks.

A strategy decides where meaning or size says to cut; some cuts are wrong for a reader whatever the
strategy, so they are fixed once here, in the shared step that turns spans into chunks:

1. **Nothing that introduces is left behind.** A chunk never ends with a heading, a lead-in that ends with
   ``:`` (``If you go to:``), an admonition or block opener (``/// tip``, ``!!! note``, ``???``, ``:::tip``)
   or a code-fence opener whose body starts the next chunk: that tail moves to the next chunk when the
   next chunk still fits ``max_tokens`` (the cap comes first). A PDF has no markup for the headings its
   outline leaves out nor for theorem-like labels, so in PDF text a line that stands alone before a
   paragraph break and is shaped like one (``Definition 47``, ``Satz 1.2 (Jordanscher Kurvensatz)``, a
   short title such as ``Danksagungen``) counts as a heading too (:func:`is_label_line`).
2. **No junk chunk.** A chunk of 0 tokens, of only punctuation, symbols, emoji or private-use glyphs (no
   letter or digit in any script), or under :data:`MIN_CHUNK_TOKENS` tokens is merged into a neighbour
   when the merged chunk fits the cap; a document that is nothing but junk keeps it (nothing is dropped).

Both rules stay inside a region (``respect_sections`` is never crossed), keep offsets exact (a merged span
covers both spans and the whitespace between them) and count every changed span exactly. The semantic
strategies pass ``cuts``, the positions where a cut may fall (their unit starts), so every chunk still
owns whole embedded units.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from ..document import Document
from ..formats.markdown_lines import ATX_HEADING_RE
from ..registry import lazy_regex
from ..segmentation.tokenizers import Tokenizer
from .base import Span, max_chars_for, trim_span

#: a chunk under this many tokens is merged into a neighbour where the cap allows (every strategy)
MIN_CHUNK_TOKENS = 5

_ATX = ATX_HEADING_RE
#: a fence line; a backtick run followed by another backtick on its line (```` ```npm install``` ````) is inline
#: code, no fence (CommonMark: a backtick fence's info string holds no backtick)
_FENCE = lazy_regex(r"[ \t]{0,3}(`{3,}(?![^\n]*`)|~{3,})(.*)$")
#: pymdownx blocks (``/// tip``, nested ``//// tab | Title``), admonitions (``!!! note``, ``??? note``, ``???+ note``), Docusaurus/
#: MyST colon fences (``:::tip``, ``::: {note}``); not mkdocstrings' ``::: package.module`` (one line, dotted)
_OPENER = lazy_regex(
    r"[ \t]*(?:/{3,}[ \t]*[\w-]|!{3}[ \t]*[\w-]|\?{3}\+?[ \t]*[\w-]"
    r"|:{3,}[ \t]*\{?[A-Za-z-]+\}?(?:[ \t].*)?$)"
)
_FENCE_LINE = lazy_regex(r"^[ \t]{0,3}(?:`{3,}(?![^\n]*`)|~{3,})", re.MULTILINE)
#: a label: one to four words (the first capitalised, of three letters or more: not a variable), then a number (``47``, ``1.2``) and/or a
#: parenthesised title: ``Definition 47``, ``Lösung zu Aufgabe 6``, ``Satz (Zwischenwertsatz)``
_LABEL = lazy_regex(
    r"[ \t]*([^\W\d_]{3}[\w-]*(?:[ \t]+[^\W\d_][\w-]*){0,3})"
    r"((?:[ \t]+\d+(?:\.\d+)*)?\.?)((?:[ \t]+\([^()\n]{1,80}\))?)[ \t]*$"
)
#: a short title: one to four words of letters (the first capitalised, three letters or more), nothing else on the line
_TITLE = lazy_regex(r"[ \t]*[^\W\d_]{3}[^\W\d_-]*(?:[- \t]+[^\W\d_]+){0,3}[ \t]*$")
#: formats whose text has no markup for its headings, so the chunk rules recognise them by their shape
LABEL_FORMATS = ("pdf",)


def is_label_line(line: str, alone: bool) -> bool:
    """Whether ``line``, followed by a paragraph break, is a label or a heading in unmarked (PDF) text.

    A numbered or titled label (``Definition 47``, ``Beispiel 3 (Basis und Subbasis)``) qualifies wherever
    it stands; a bare short title (``Danksagungen``, ``Erforderliche Vorkenntnisse``) only when it is a
    paragraph of its own (``alone``: a blank line or the chunk start before it), since a prose paragraph
    may end in a short line. At most 80 characters, the first letter upper case (``Lemma 2``, not a
    formula such as ``x 2`` or a wrapped ``and 3``)."""
    line = line.strip()
    if not line or len(line) > 80 or not line[0].isupper():
        return False
    m = _LABEL.fullmatch(line)
    if m and (m.group(2).strip(" \t.") or m.group(3).strip()):
        return True
    return alone and bool(_TITLE.fullmatch(line))


def is_junk(text: str) -> bool:
    """True when ``text`` has no letter or digit in any script: punctuation, symbols, emoji, private-use
    glyphs (a PDF's icon font), box drawing, or nothing at all."""
    return not any(ch.isalnum() for ch in text)


class _Doc:
    """What the rules need to know about the text: heading spans and code-fence lines, found once."""

    def __init__(self, doc: Document):
        self.text = doc.text
        # trimmed heading end -> heading start, from the loader's or the strategy's sections
        self.heads: dict[int, int] = {}
        for s in doc.sections:
            if 0 <= s.heading_start < s.heading_end:
                a, b = trim_span(self.text, s.heading_start, s.heading_end)
                if b > a:
                    self.heads[b] = a
        self._fences: list[int] | None = None
        self.labels = str(doc.metadata.get("format") or "").lower() in LABEL_FORMATS

    def fence_opens(self, line_start: int) -> bool:
        """Whether the fence line at ``line_start`` opens a block (an even number of fence lines before)."""
        if self._fences is None:
            self._fences = [m.start() for m in _FENCE_LINE.finditer(self.text)]
        return bisect.bisect_left(self._fences, line_start) % 2 == 0

    def sticky_tail(self, a: int, b: int) -> int | None:
        """Start of the part at the end of ``text[a:b]`` that introduces what follows, or ``None``."""
        text = self.text
        _, pos = trim_span(text, a, b)
        tail = None
        for _ in range(8):  # heading over lead-in over opener: a few steps are plenty
            if pos <= a:
                break
            ls = max(a, text.rfind("\n", a, pos) + 1)
            line = text[ls:pos]
            start = self._sticky_line(ls, pos, line, a)
            if start is None:
                break
            tail = start
            _, pos = trim_span(text, a, start)
        return tail

    def _sticky_line(self, ls: int, pos: int, line: str, a: int) -> int | None:
        if pos in self.heads and self.heads[pos] >= a:
            return self.heads[pos]
        if _ATX.match(line):
            return ls
        fence = _FENCE.match(line)
        if fence:
            return ls if (fence.group(2).strip() or self.fence_opens(ls)) else None
        if _OPENER.match(line):
            return ls
        if line.rstrip().endswith(":") and not self._in_code(ls):
            return self._paragraph_start(ls, a)
        if self.labels and self._label(ls, pos, line, a):
            return ls
        return None

    def _label(self, ls: int, pos: int, line: str, a: int) -> bool:
        """A label or unmarked heading line (:func:`is_label_line`) before a paragraph break."""
        text = self.text
        nxt = pos
        while nxt < len(text) and text[nxt].isspace():
            nxt += 1
        if nxt >= len(text) or not paragraph_break(text, nxt):
            return False
        alone = ls <= a or paragraph_break(text, ls)
        return is_label_line(line, alone)

    def _in_code(self, pos: int) -> bool:
        if self._fences is None:
            self._fences = [m.start() for m in _FENCE_LINE.finditer(self.text)]
        return bisect.bisect_left(self._fences, pos) % 2 == 1

    def _paragraph_start(self, ls: int, a: int) -> int:
        """Start of the paragraph whose last line starts at ``ls`` (back to a blank line, or ``a``)."""
        text = self.text
        pos = ls
        while pos > a:
            prev = max(a, text.rfind("\n", a, pos - 1) + 1)
            if not text[prev : pos - 1].strip() or _ATX.match(text[prev:pos]):
                break
            pos = prev
        return pos


def tidy_spans(
    doc: Document,
    spans: Sequence[Span],
    counts: Sequence[int],
    tokenizer: Tokenizer,
    max_tokens: int,
    bounds: Sequence[Span],
    cuts: Sequence[int] | None = None,
) -> tuple[list[Span], list[int]]:
    """Apply the rules of this module to sorted ``spans`` (with exact ``counts``) inside ``bounds``
    (the regions); ``cuts`` are the allowed new cut positions (sorted), ``None`` for any line start."""
    if not spans:
        return [], []
    info = _Doc(doc)
    out_spans: list[Span] = []
    out_counts: list[int] = []
    items = [[a, b, n] for (a, b), n in zip(spans, counts)]
    k = 0
    lonely: list[bool] = []  # per output span: the only chunk of its region
    for lo, hi in bounds:
        group = []
        while k < len(items) and items[k][0] < hi:
            if items[k][0] >= lo:
                group.append(items[k])
            else:  # a span before the first region (cannot happen; kept as it is)
                out_spans.append((items[k][0], items[k][1]))
                out_counts.append(items[k][2])
            k += 1
        group = _Rules(info, tokenizer, max_tokens, cuts).apply(group)
        out_spans.extend((a, b) for a, b, _ in group)
        out_counts.extend(n for _, _, n in group)
        lonely.extend([len(group) == 1] * len(group))
    for a, b, n in items[k:]:
        out_spans.append((a, b))
        out_counts.append(n)
    if len(bounds) > 1 and any(lonely):
        # a region whose whole text is junk or a few tokens (a kicker above the title, a heading with a
        # word under it) is no section worth keeping apart: it joins a neighbouring region's chunk
        rules = _Rules(info, tokenizer, max_tokens, cuts)
        g = [[a, b, n] for (a, b), n in zip(out_spans, out_counts)]
        flags = lonely + [False] * (len(g) - len(lonely))
        g = rules.merge_junk(g, flags)
        out_spans, out_counts = [(a, b) for a, b, _ in g], [n for _, _, n in g]
    return out_spans, out_counts


def paragraph_break(text: str, pos: int) -> bool:
    """Whether ``pos`` starts a paragraph: the whitespace right before it holds a blank line."""
    j = pos
    while j > 0 and text[j - 1].isspace():
        j -= 1
    return j < pos and text.count("\n", j, pos) >= 2


def _find_all(text: str, sub: str, a: int, b: int):
    """Positions of ``sub`` in ``text[a:b]``."""
    i = text.find(sub, a, b)
    while i >= 0:
        yield i
        i = text.find(sub, i + 1, b)


class _Rules:
    """The two rules on the spans of one region."""

    def __init__(self, info: _Doc, tokenizer: Tokenizer, max_tokens: int, cuts: Sequence[int] | None):
        self.info = info
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.max_chars = max_chars_for(max_tokens)
        self.cuts = cuts

    def fits(self, a: int, b: int) -> int | None:
        """The exact count of ``text[a:b]`` when it fits the cap, else ``None``."""
        if b - a > self.max_chars:
            return None
        n = self.tokenizer.count(self.info.text[a:b])
        return n if n <= self.max_tokens else None

    def snap(self, pos: int, a: int) -> int | None:
        """The allowed cut at or before ``pos`` and after... ``a`` itself counts (the whole span moves)."""
        if self.cuts is None:
            return pos
        i = bisect.bisect_right(self.cuts, pos) - 1
        if i >= 0 and self.cuts[i] >= a:
            return self.cuts[i]
        return None

    def apply(self, g: list[list[int]]) -> list[list[int]]:
        """Tails first, then junk; twice, since a junk chunk merged into a heading-only chunk makes a chunk
        that ends with a heading again (the second round moves it)."""
        for _ in range(2):
            g = self.merge_junk(self.move_tails(g))
        return g

    def move_tails(self, g: list[list[int]]) -> list[list[int]]:
        text = self.info.text
        k = 0
        while k < len(g) - 1:
            a, b, _ = g[k]
            na, nb, _ = g[k + 1]
            t = self.info.sticky_tail(a, b) if na >= b else None
            t = None if t is None else self.snap(t, a)
            if t is not None:
                ta, _ = trim_span(text, t, nb)
                n2 = self.fits(ta, nb) if ta < na else None
                rest = None
                if n2 is None and ta < na:
                    # the next chunk is full: the tail takes the head of it, cut at a line break
                    cut = self.split_point(ta, na, nb)
                    if cut is not None:
                        nb_, n2 = cut
                        ra, rb = trim_span(text, nb_, nb)
                        rest = [ra, rb, self.tokenizer.count(text[ra:rb])] if rb > ra else None
                        nb = trim_span(text, ta, nb_)[1]
                if n2 is not None:
                    pa, pb = trim_span(text, a, t)
                    g[k + 1] = [ta, nb, n2]
                    if rest is not None:
                        g.insert(k + 2, rest)
                    if pb > pa:
                        g[k] = [pa, pb, self.tokenizer.count(text[pa:pb])]
                    else:
                        del g[k]
                        continue
            k += 1
        return g

    def split_point(self, ta: int, na: int, nb: int) -> tuple[int, int] | None:
        """The latest paragraph start ``c`` in ``(na, nb)`` (after a blank line, outside code; else a line
        start outside code and tables) such that
        ``text[ta:c]`` fits the cap; with its exact count, or ``None``."""
        text = self.info.text
        lines = [m + 1 for m in _find_all(text, "\n", na, nb)]
        if self.cuts is not None:
            lo, hi = bisect.bisect_right(self.cuts, na), bisect.bisect_left(self.cuts, nb)
            lines = list(self.cuts[lo:hi])
        # only paragraph breaks outside code fences: a fence or a table that fits stays whole
        lines = [
            c
            for c in lines
            if na < c < nb
            and c - ta <= self.max_chars
            and not self.info._in_code(c)
            and text[c : c + 1] not in ("\n", "\r", "")
        ]
        paras = [c for c in lines if paragraph_break(text, c)]
        # else between lines (list items), never between table rows
        lines = paras or [c for c in lines if not text[c : c + 1] == "|"]
        if not lines:
            return None
        # the longest head that fits: binary search over line starts (counts grow with length)
        lo, hi, best = 0, len(lines) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            c = lines[mid]
            n = self.fits(ta, trim_span(text, ta, c)[1])
            if n is not None:
                best, lo = (c, n), mid + 1
            else:
                hi = mid - 1
        if best is None:
            return None
        return best

    def borrow(self, g: list[list[int]], k: int) -> bool:
        """A junk chunk whose neighbours are both too full to take it takes the last line (or unit) of the
        previous chunk, or the first of the next, instead. True when it did."""
        text = self.info.text
        a, b, _ = g[k]
        if not is_junk(text[a:b]):
            return False  # merely short: left as it is when the cap forbids a merge
        if k > 0 and g[k - 1][1] <= a:
            pa, pb, _ = g[k - 1]
            c = self._last_piece_start(pa, pb)
            if c is not None:
                # never leave the previous chunk ending with a heading or lead-in: borrow that too
                t = self.info.sticky_tail(pa, c)
                c = c if t is None else self.snap(t, pa)
            if c is not None and c > pa:
                n = self.fits(c, b)
                if n is not None:
                    qa, qb = trim_span(text, pa, c)
                    g[k - 1] = [qa, qb, self.tokenizer.count(text[qa:qb])]
                    g[k] = [c, b, n]
                    return True
        if k + 1 < len(g) and g[k + 1][0] >= b:
            na, nb, _ = g[k + 1]
            # the first piece of the next chunk that does not end with a heading or lead-in
            for c in self._pieces(na, nb):
                e = trim_span(text, na, c)[1]
                ra, rb = trim_span(text, c, nb)
                if e <= na or rb <= ra:
                    continue
                n = self.fits(a, e)
                if n is None:
                    break
                if self.info.sticky_tail(a, e) is not None:
                    continue
                g[k] = [a, e, n]
                g[k + 1] = [ra, rb, self.tokenizer.count(text[ra:rb])]
                return True
        return False

    def _pieces(self, a: int, b: int) -> list[int]:
        """Allowed cut positions strictly inside ``(a, b)``: unit starts, else line starts outside code."""
        text = self.info.text
        if self.cuts is not None:
            lo, hi = bisect.bisect_right(self.cuts, a), bisect.bisect_left(self.cuts, b)
            return list(self.cuts[lo:hi])
        return [
            m + 1
            for m in _find_all(text, "\n", a, b - 1)
            if text[m + 1 : m + 2] not in ("\n", "\r", "") and not self.info._in_code(m + 1)
        ]

    def _last_piece_start(self, a: int, b: int) -> int | None:
        cands = [c for c in self._pieces(a, b) if trim_span(self.info.text, a, c)[1] > a]
        return cands[-1] if cands else None

    def small(self, item: list[int]) -> bool:
        a, b, n = item
        return n < MIN_CHUNK_TOKENS or is_junk(self.info.text[a:b])

    def merge_junk(self, g: list[list[int]], only: list[bool] | None = None) -> list[list[int]]:
        """Merge small or junk chunks into a neighbour; with ``only``, just the flagged ones."""
        flags = list(only) if only is not None else None
        k = 0
        while k < len(g):
            if len(g) < 2 or not self.small(g[k]) or (flags is not None and not flags[k]):
                k += 1
                continue
            a, b, _ = g[k]
            options = []
            for j in (k - 1, k + 1):
                if 0 <= j < len(g):
                    lo, hi = min(a, g[j][0]), max(b, g[j][1])
                    n = self.fits(lo, hi)
                    if n is not None:
                        # prefer the neighbour a lead-in introduces, then the smaller merged chunk
                        sticky = j == k + 1 and self.info.sticky_tail(a, b) is not None
                        options.append((not sticky, n, j, lo, hi))
            if not options:
                borrowed = self.borrow(g, k)
                k += 1 if not borrowed else 0
                if borrowed and flags is not None:
                    flags[k] = False
                continue
            _, n, j, lo, hi = min(options)
            first = min(j, k)
            g[first : first + 2] = [[lo, hi, n]]
            if flags is not None:
                flags[first : first + 2] = [False]
            k = max(0, first - 1) if first < k else first
        return g


__all__ = ["tidy_spans", "is_junk", "is_label_line", "MIN_CHUNK_TOKENS", "LABEL_FORMATS"]
