"""Offsets back into the source: where each part of a cleaned document text came from.

Cleaning (:mod:`.cleaning`) edits the text a loader decoded; chunks are exact slices of the *cleaned* text. A
:class:`SourceMap` remembers the edits so any span of the cleaned text can be mapped back to the *source
text* (the decoded file for text formats, the pages' extracted text for PDF), e.g. to highlight a citation
in the original file.

The map is a list of segments that cover the cleaned text in order. Each segment pairs a span of the
cleaned text with a span of the source text:

- an *exact* segment is copied text: ``source[s0:s1] == clean[c0:c1]``, and positions inside it map one to
  one;
- a *replaced* segment is what a cleaning edit wrote (a space for a line break, "fi" for the ligature "ﬁ",
  nothing for a deleted header); a position inside it maps to the whole replaced source span.

Source text that was deleted lies between two segments; a span of the cleaned text that covers both
neighbours also covers it in the source. So :meth:`SourceMap.to_source` is exact wherever a chunk boundary
falls in copied text (chunk boundaries almost always do: strategies cut at whitespace, which is copied or
replaced as a whole) and otherwise widens to the whole edit. The guarantee, property-tested:
``clean_slice(source, clean, *to_source(a, b))`` (the source slice with the document's own cleaning edits inside
it replayed) contains ``clean[a:b]`` and equals it when ``a`` and ``b`` are not strictly inside a replaced
segment. Cleaning a slice *afresh* is not the same: re-flowing and header removal look at the whole
document (line widths, repetition across pages), so only the replayed edits reproduce the chunk.

A loader that cannot map exactly (an HTML extractor that rewrites the page) may set ``exact=False`` on the
map it builds from whatever anchors it has, or leave ``Document.source_map`` as ``None``: chunks then carry
``source_start``/``source_end`` of ``None``, never a wrong number presented as exact.

For PDF, ``page_starts`` are the starts of the pages in the joined source text; :meth:`span` then gives
offsets relative to the page the position is on (``source_start`` into the text of the chunk's first page,
``source_end`` into the text of its last page).
"""

from __future__ import annotations

import bisect
import re
from typing import Any

Edit = tuple[int, int, str]


class SourceMap:
    """Segments ``(c0, c1, s0, s1, exact)`` mapping the cleaned text back into the source text."""

    def __init__(
        self,
        segments: list[tuple[int, int, int, int, bool]],
        source_length: int,
        page_starts: list[int] | None = None,
        exact: bool = True,
    ):
        self.segments = segments
        self.source_length = source_length
        self.page_starts = page_starts
        self.exact = exact
        self._c_starts = [seg[0] for seg in segments]
        self._c_ends = [seg[1] for seg in segments]

    @classmethod
    def identity(cls, length: int) -> SourceMap:
        """The map of a text that was not changed."""
        return cls([(0, length, 0, length, True)] if length else [], length)

    @classmethod
    def align(cls, clean: str, source: str, window: int = 4096) -> SourceMap:
        """A map found by matching the words of ``clean`` in order in ``source`` (each looked for within
        ``window`` characters after the previous match), for loaders that rebuild the text rather than
        edit it (subtitles: cues without timing lines and tags). Matched words are exact segments; what
        lies between two matches (a tag, a line break, a speaker label added) is a replaced segment."""
        segments: list[tuple[int, int, int, int, bool]] = []
        c_prev = s_prev = 0
        for m in re.finditer(r"\S+", clean):
            word = m.group()
            at = source.find(word, s_prev, s_prev + window + len(word))
            if at < 0:
                continue
            segments.append((c_prev, m.start(), s_prev, at, False))
            segments.append((m.start(), m.end(), at, at + len(word), True))
            c_prev, s_prev = m.end(), at + len(word)
        segments.append((c_prev, len(clean), s_prev, len(source), False))
        return cls(_normalise(segments, len(source)), len(source))

    @property
    def clean_length(self) -> int:
        return self._c_ends[-1] if self.segments else 0

    # -- building ----------------------------------------------------------------------------------------
    def apply(self, edits: list[Edit]) -> SourceMap:
        """The map after ``edits`` (non-overlapping ``(start, end, replacement)`` over the current cleaned
        text) were applied to it."""
        if not edits:
            return self
        out: list[tuple[int, int, int, int, bool]] = []
        delta = 0
        prev = 0
        for s, e, rep in sorted(edits):
            self._copy(prev, s, delta, out)
            src_s, src_e = self._source_point(s, start=True), self._source_point(e, start=False)
            if e == s:
                src_e = src_s
            if rep or src_e > src_s:
                out.append((s + delta, s + delta + len(rep), src_s, max(src_s, src_e), False))
            delta += len(rep) - (e - s)
            prev = e
        self._copy(prev, self.clean_length, delta, out)
        return SourceMap(_normalise(out, self.source_length), self.source_length, self.page_starts, self.exact)

    def _copy(self, a: int, b: int, delta: int, out: list) -> None:
        """Append the segments of the unchanged clean span ``[a, b)``, shifted by ``delta``."""
        if b <= a:
            return
        i = max(0, bisect.bisect_right(self._c_starts, a) - 1)
        while i < len(self.segments) and self.segments[i][0] < b:
            c0, c1, s0, s1, exact = self.segments[i]
            lo, hi = max(a, c0), min(b, c1)
            if hi > lo:
                if exact:
                    out.append((lo + delta, hi + delta, s0 + lo - c0, s0 + hi - c0, True))
                else:
                    out.append((lo + delta, hi + delta, s0, s1, False))
            i += 1

    def _source_point(self, pos: int, start: bool) -> int:
        """Source offset of a cleaned-text position, as the start (or end) of a span."""
        if not self.segments:
            return 0
        if start:
            i = bisect.bisect_right(self._c_starts, pos) - 1
            if i < 0:
                return self.segments[0][2]
            c0, c1, s0, s1, exact = self.segments[i]
            if pos >= c1:  # past the end of the text
                return s1
            return s0 + pos - c0 if exact else s0
        i = bisect.bisect_left(self._c_ends, pos)
        if i >= len(self.segments):
            return self.segments[-1][3]
        c0, c1, s0, s1, exact = self.segments[i]
        if pos <= c0:
            return s0
        return s0 + pos - c0 if exact else s1

    # -- using ---------------------------------------------------------------------------------------------
    def to_source(self, start: int, end: int) -> tuple[int, int]:
        """The span of the (joined) source text that ``clean[start:end]`` came from."""
        a = self._source_point(start, start=True)
        b = self._source_point(end, start=False) if end > start else a
        return a, max(a, b)

    def span(self, start: int, end: int) -> tuple[int | None, int | None]:
        """``source_start``/``source_end`` of a chunk: :meth:`to_source`, made relative to the page each
        end lies on when the source is a sequence of pages (PDF)."""
        a, b = self.to_source(start, end)
        if not self.page_starts:
            return a, b
        pa = max(0, bisect.bisect_right(self.page_starts, a) - 1)
        pb = max(0, bisect.bisect_right(self.page_starts, max(a, b - 1)) - 1)
        return a - self.page_starts[pa], b - self.page_starts[pb]

    def clean_slice(self, source: str, clean: str, start: int, end: int) -> str:
        """``source[start:end]`` (joined source offsets) with the cleaning edits that lie wholly inside it
        replayed: copied text stays, replaced text becomes what cleaning wrote (see the module doc)."""
        parts = []
        i = max(0, bisect.bisect_left([seg[3] for seg in self.segments], start) - 1)
        for c0, c1, s0, s1, exact in self.segments[i:]:
            if s0 >= end:
                break
            if exact:
                lo, hi = max(s0, start), min(s1, end)
                if hi > lo:
                    parts.append(source[lo:hi])
            elif start <= s0 and s1 <= end:
                parts.append(clean[c0:c1])
        return "".join(parts)


def _attach_insertions(segments: list[tuple[int, int, int, int, bool]], source_length: int) -> list[list]:
    """Text inserted where the source had nothing (a line break added at the end) replaces the deleted
    source text around it if there is any, else is glued to the source character before it (after it, at
    the very start): a source span then never has to guess whether an insertion at its edge belongs to it."""
    out: list[Any] = [list(seg) for seg in segments if not (seg[1] == seg[0] and seg[3] == seg[2])]
    k = 0
    while k < len(out):
        c0, c1, s0, s1, exact = out[k]
        if s1 > s0 or c1 == c0:
            k += 1
            continue
        prev = next((j for j in range(k - 1, -1, -1) if out[j][3] > out[j][2]), None)
        nxt = next((j for j in range(k + 1, len(out)) if out[j][3] > out[j][2]), None)
        lo = out[prev][3] if prev is not None else 0
        hi = out[nxt][2] if nxt is not None else source_length
        if hi > lo:  # deleted source text next to it: the insertion replaces that
            out[k][2], out[k][3] = lo, hi
            k += 1
            continue
        if prev is not None and out[prev][3] == s0:
            p = out[prev]
            if p[4] and p[1] - p[0] > 1:  # split the copied segment's last character off
                out.insert(prev + 1, [p[1] - 1, p[1], p[3] - 1, p[3], True])
                p[1], p[3] = p[1] - 1, p[3] - 1
                prev, k = prev + 1, k + 1
            p = out[prev]
            p[1], p[4] = c1, False
            for j in range(prev + 1, k):  # empty-source segments between them are taken in
                out[j] = None
            out[k] = None
            out = [seg for seg in out if seg is not None]
            k = prev + 1
            continue
        if nxt is not None and out[nxt][2] == s0:
            n = out[nxt]
            if n[4] and n[1] - n[0] > 1:
                out.insert(nxt + 1, [n[0] + 1, n[1], n[2] + 1, n[3], True])
                n[1], n[3] = n[0] + 1, n[2] + 1
            n[0], n[4] = c0, False
            for j in range(k, nxt):
                out[j] = None
            out = [seg for seg in out if seg is not None]
            continue
        k += 1
    return out


def _normalise(
    segments: list[tuple[int, int, int, int, bool]], source_length: int
) -> list[tuple[int, int, int, int, bool]]:
    """Merge neighbours: exact ones that continue each other, and any whose source spans overlap (a cut
    through a replaced segment makes the whole of it one replaced segment again); insertions are attached
    to a neighbouring source character (:func:`_attach_insertions`)."""
    out: list[list] = []
    for c0, c1, s0, s1, exact in _attach_insertions(segments, source_length):
        if out:
            p = out[-1]
            if s0 < p[3]:
                p[1], p[3], p[4] = max(p[1], c1), max(p[3], s1), False
                continue
            if exact and p[4] and p[1] == c0 and p[3] == s0:
                p[1], p[3] = c1, s1
                continue
        out.append([c0, c1, s0, s1, exact])
    return [tuple(p) for p in out]
