"""The cleaning steps that read the page layout: running headers and footers (:func:`header_footer_edits`)
and line-wrapped paragraphs (:func:`reflow_edits`); see :mod:`.cleaning` for how the steps are run.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from ..registry import lazy_regex

Edit = tuple[int, int, str]

#: line-ending sentence terminators (Latin and CJK), possibly followed by closing quotes or brackets
_TERMINATOR = lazy_regex(r"[.!?:;\u2026\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*$")
_BULLET = lazy_regex(r"^\s*(?:[-*\u2022\u25aa\u25cf\u2013\u2014]\s|\d{1,3}[.)]\s|[a-z][.)]\s|\(\w{1,3}\)\s)")
_PAGE_NUMBER = lazy_regex(
    r"^\s*(?:[-\u2013\u2014]\s*)?(?:(?:page|p\.|seite|pag\.|página|page no\.?)\s*)?"
    r"(?:\d{1,5}|(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3}))(?:\s*(?:of|/|von|de|sur)\s*\d{1,5})?(?:\s*[-\u2013\u2014])?\s*$",
    re.IGNORECASE,
)


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, without its newline."""
    spans = []
    pos = 0
    for line in text.split("\n"):
        spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def _signature(line: str) -> str:
    """How a line is compared across pages. Short lines that do not read as a sentence are compared with
    their digits masked, so "Page 3 of 9" matches "Page 4 of 9" and "Report 2025 | 12" matches
    "Report 2025 | 13"; other lines must repeat exactly ("More of page 3." is body text, not a footer)."""
    norm = " ".join(line.split()).lower()
    if len(norm.split()) <= 6 and not _TERMINATOR.search(norm):
        return re.sub(r"\d+", "#", norm)
    return norm


_EDGE_NUMBER = lazy_regex(r"^\s*(\d{1,4})\s+(\S.*?)\s*$|^\s*(\S.*?)\s+(\d{1,4})\s*$")


def _edge_number(line: str) -> tuple[int | None, str]:
    """A number at the start or end of a line and the rest: ``"19 1.6. WEGE UND KNOTEN"`` -> (19, "1.6. ...")."""
    m = _EDGE_NUMBER.match(line)
    if not m:
        return None, line
    if m.group(1) is not None:
        return int(m.group(1)), m.group(2)
    return int(m.group(4)), m.group(3)


def _header_like(line: str) -> bool:
    """Short, with a letter, not ending a sentence: what a running title looks like."""
    words = line.split()
    return 0 < len(words) <= 10 and any(ch.isalpha() for ch in line) and not _TERMINATOR.search(line.strip())


def _page_runs(indices: list[int], min_pages: int = 3, max_gap: int = 2) -> set[int]:
    """The pages that belong to a run of at least ``min_pages`` occurrences, each at most ``max_gap`` pages
    after the previous one (a title running over a section, or on every other page)."""
    found: set[int] = set()
    run: list[int] = []
    ordered: list[int | None] = [*sorted(set(indices)), None]  # None closes the last run
    for index in ordered:
        if index is not None and run and index - run[-1] <= max_gap:
            run.append(index)
            continue
        if len(run) >= min_pages:
            found.update(run)
        run = [index] if index is not None else []
    return found


def header_footer_edits(text: str, page_starts: list[int], max_lines: int = 3) -> list[Edit]:
    """Delete running headers/footers and bare page numbers at the top and bottom of pages.

    Lines are looked at by position: the first and last ``max_lines`` non-empty lines of each page. Such a
    line is a running header/footer when

    - the same line (see :func:`_signature`) stands at the same place on at least half of the pages (and
      on at least two; three when the document has more than three pages): verbatim headers, "Page 3 of 9";
    - it starts or ends with a number that follows the page sequence (printed number minus page index is
      the same on at least three pages and a quarter of them): "19 1.6. WEGE UND KNOTEN" on one page,
      "20 1.6. WEGE UND KNOTEN" on the next, "21 2.1. MANNIGFALTIGKEITEN" later, on even and odd pages
      alike; a chapter's first page, whose "2 Mannigfaltigkeiten" does not fit the sequence, keeps it;
    - it is a short title-like line (see :func:`_header_like`) repeated verbatim at the same place on a run
      of at least three pages at most two pages apart: a section title running over its pages, a book
      title on every even page;
    - it is a bare page number ("12", "- 12 -", "Page 3 of 9", "iv") at the very top or bottom.

    Only a contiguous block from the top (bottom) is removed, and a page is never emptied.
    """
    n = len(text)
    bounds = list(page_starts) + [n]
    pages = [
        [(s + a, e + a) for s, e in _lines(text[a:b]) if text[s + a : e + a].strip()]
        for a, b in zip(bounds, bounds[1:])
    ]
    running = _RunningLines(text, pages, max_lines)
    remove: set[tuple[int, int]] = set()
    for index, lines in enumerate(pages):
        if not lines:
            continue
        found: set[tuple[int, int]] = set()
        for side, ordered in _edges(lines, max_lines):
            for i, (s, e) in enumerate(ordered):
                if running(side, i, index, text[s:e]) or (i == 0 and _PAGE_NUMBER.match(text[s:e])):
                    found.add((s, e))
                else:
                    break  # only a contiguous block at the top (bottom) is a header (footer)
        if len(found) < len(lines):
            remove |= found
    edits = []
    for s, e in sorted(remove):
        e2 = e + 1 if e < n and text[e] == "\n" else e  # take the line's newline with it
        edits.append((s, e2, ""))
    return _merge_adjacent(edits)


def _edges(lines: list[tuple[int, int]], max_lines: int):
    """The first and the last ``max_lines`` lines of a page, each side read from its edge inwards."""
    return (("top", lines[:max_lines]), ("bottom", list(reversed(lines[-max_lines:]))))


class _RunningLines:
    """Which edge lines run over pages (the first three rules of :func:`header_footer_edits`), judged on
    counts over the edges of every page: ``running(side, i, page index, line)``."""

    def __init__(self, text: str, pages: list[list[tuple[int, int]]], max_lines: int):
        self.sigs: Counter = Counter()
        self.offsets: Counter = Counter()
        titles: dict = defaultdict(list)
        for index, lines in enumerate(pages):
            for side, ordered in _edges(lines, max_lines):
                for i, (s, e) in enumerate(ordered):
                    line = text[s:e]
                    self.sigs[(side, i, _signature(line))] += 1
                    number, rest = _edge_number(line)
                    if number is not None and _header_like(rest):
                        self.offsets[(side, i, number - index)] += 1
                    if _header_like(line):
                        titles[(side, i, _norm_line(line))].append(index)
        self.pages = len(pages)
        self.needed = max(2 if len(pages) <= 3 else 3, (len(pages) + 1) // 2)
        self.needed_sequence = max(3, len(pages) // 4)
        self.runs = {key: _page_runs(indices) for key, indices in titles.items() if len(indices) >= 3}

    def __call__(self, side: str, i: int, index: int, line: str) -> bool:
        if self.pages < 2:
            return False
        if self.sigs[(side, i, _signature(line))] >= self.needed:
            return True
        number, rest = _edge_number(line)
        if (
            number is not None
            and _header_like(rest)
            and self.offsets[(side, i, number - index)] >= self.needed_sequence
        ):
            return True
        return self.pages > 3 and _header_like(line) and index in self.runs.get((side, i, _norm_line(line)), ())


def _merge_adjacent(edits: list[Edit]) -> list[Edit]:
    merged: list[Edit] = []
    for s, e, r in sorted(edits):
        if merged and s < merged[-1][1]:
            ps, pe, pr = merged[-1]
            merged[-1] = (ps, max(pe, e), pr + r)
        else:
            merged.append((s, e, r))
    return merged


def _wrap_width(lengths: list[int]) -> int:
    """The width lines are wrapped at: a high percentile of the line lengths."""
    lengths = sorted(n for n in lengths if n)
    if not lengths:
        return 0
    return lengths[min(len(lengths) - 1, int(len(lengths) * 0.9))]


def _structural(line: str) -> bool:
    """Lines never joined with their neighbours: list items, indented code, table rows, rules."""
    return bool(
        _BULLET.match(line)
        or line.startswith(("    ", "\t", "|", "```", "#", ">"))
        or re.search(r"\S {3,}\S|\|", line)
        or re.fullmatch(r"\s*[-=_*~]{3,}\s*", line)
    )


def _wrapped_prose(text: str, spans: list[tuple[int, int]], width: int) -> bool:
    """Is this plain text hard-wrapped prose? Wrapped at 40 characters or more, many non-blank lines fill
    the width, and the text is mostly letters, digits and spaces (code and data are full of brackets and
    operators)."""
    lines = [text[a:b] for a, b in spans if b > a and text[a:b].strip()]
    if len(lines) < 3 or width < 40:
        return False
    full = sum(1 for line in lines if len(line) >= 0.6 * width)
    chars = sum(len(line) for line in lines)
    prose = sum(1 for line in lines for ch in line if ch.isalnum() or ch in " ,.'\"-;:!?()%&/")
    return full >= 0.4 * len(lines) and prose >= 0.95 * chars


def _norm_line(line: str) -> str:
    return " ".join(line.split()).casefold()


_HEADING_NUMBER = lazy_regex(r"^(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.|[A-Z]\.)\s+")


def _is_heading(line: str, heads: set[str]) -> bool:
    norm = _norm_line(line)
    return norm in heads or _HEADING_NUMBER.sub("", norm) in heads


def reflow_edits(
    text: str,
    paragraph_breaks: bool,
    headings: set[str] | frozenset[str] = frozenset(),
    min_width: int = 30,
    max_width: int = 160,
    paragraph_ends: set[str] | frozenset[str] = frozenset(),
    table_lines: set[str] | frozenset[str] = frozenset(),
) -> list[Edit]:
    """Join line-wrapped paragraphs: a single line break inside a paragraph becomes a space.

    The wrap width is estimated from the line lengths. A break is joined when the line does not end a
    sentence and is long (60% of the width) or the next line starts in lower case, or when the line ends a
    sentence but fills the width (85%: the paragraph goes on). With ``paragraph_breaks`` (PDF text, which
    has no blank lines between paragraphs) any other break becomes a blank line. Text whose lines are
    mostly longer than ``max_width`` is not wrapped and is left alone, as are list items, indented code,
    table rows and lines equal to one of ``headings`` (normalised), which always stand alone.
    ``paragraph_ends`` are lines (normalised) known to end a paragraph, e.g. from the PDF's layout: a break
    after them is always a paragraph break. ``table_lines`` (normalised) are rows of a table block: never
    joined, kept one per line, the block set apart from the prose around it. A heading matches with or
    without its number ("1.6 Wege und Knoten" for the outline title "Wege und Knoten").
    """
    spans = _lines(text)
    width = _wrap_width([e - s for s, e in spans])
    if width < min_width or width > max_width:
        return []
    if not paragraph_breaks and not _wrapped_prose(text, spans, width):
        return []  # plain text that is not hard-wrapped prose (code, logs, lists, data): leave it
    heads = {_norm_line(h) for h in headings}
    ends = {_norm_line(h) for h in paragraph_ends}
    rows = {_norm_line(h) for h in table_lines}
    edits: list[Edit] = []
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        line, nxt = text[s1:e1], text[s2:e2]
        if not line.strip() or not nxt.strip():
            continue  # blank line: already a paragraph break
        replacement = _line_break(line, nxt, width, paragraph_breaks, heads, ends, rows)
        if replacement is not None:
            edits.append((e1, s2, replacement))
    return edits


def _line_break(
    line: str, nxt: str, width: int, paragraph_breaks: bool, heads: set[str], ends: set[str], rows: set[str]
) -> str | None:
    """What the line break between ``line`` and ``nxt`` becomes in :func:`reflow_edits`: ``" "`` (joined),
    ``"\n\n"`` (a paragraph break) or ``None`` (left as it is)."""
    paragraph = "\n\n" if paragraph_breaks else None
    if rows and (_norm_line(line) in rows or _norm_line(nxt) in rows):
        return paragraph if not (_norm_line(line) in rows and _norm_line(nxt) in rows) else None
    if heads and _is_heading(f"{line} {nxt}", heads):  # a heading wrapped onto a second line
        return " "
    if heads and (_is_heading(line, heads) or _is_heading(nxt, heads)):
        return paragraph
    if paragraph_breaks and ends and _norm_line(line) in ends:
        return paragraph
    if (_structural(line) and not _BULLET.match(line)) or _structural(nxt):
        return paragraph if _BULLET.match(nxt) and not _structural(line) else None  # a list after a paragraph
    size = len(line.rstrip())
    if _TERMINATOR.search(line.rstrip()):
        join = size >= 0.85 * width and not nxt.lstrip()[:1].isdigit()
    else:
        join = size >= 0.6 * width or nxt.lstrip()[:1].islower()
    if join and _BULLET.match(line) and size < 0.6 * width:
        join = False
    return " " if join else paragraph
