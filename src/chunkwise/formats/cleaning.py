"""Cleaning extracted text without losing track of where things were.

PDF text (and hard-wrapped plain text) comes with noise that hurts chunking and retrieval: running headers
and footers repeated on every page, bare page numbers, words hyphenated across line breaks, paragraphs broken
into short lines, ragged whitespace. Each step here removes one kind of noise and can be switched off.

Every step is a list of *edits* ``(start, end, replacement)`` over the current text. Applying edits also
maps positions (page starts, in practice) from the old text to the new one, so a document's ``pages`` still
refer to the cleaned text exactly and ``page_start``/``page_end`` of every chunk stay right.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .sourcemap import SourceMap

Edit = tuple[int, int, str]

#: line-ending sentence terminators (Latin and CJK), possibly followed by closing quotes or brackets
_TERMINATOR = re.compile(r"[.!?:;\u2026\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*$")
_BULLET = re.compile(r"^\s*(?:[-*\u2022\u25aa\u25cf\u2013\u2014]\s|\d{1,3}[.)]\s|[a-z][.)]\s|\(\w{1,3}\)\s)")
_PAGE_NUMBER = re.compile(
    r"^\s*(?:[-\u2013\u2014]\s*)?(?:(?:page|p\.|seite|pag\.|página|page no\.?)\s*)?"
    r"(?:\d{1,5}|(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3}))(?:\s*(?:of|/|von|de|sur)\s*\d{1,5})?(?:\s*[-\u2013\u2014])?\s*$",
    re.IGNORECASE,
)
_UNICODE_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_INVISIBLE = re.compile(r"[\u200b\u200c\u200d\u2060\ufeff\u00ad]|[\x00-\x08\x0b\x0e-\x1f\x7f]")


@dataclass
class CleaningOptions:
    """Which cleaning steps run. All default to on; a loader decides which apply to its format."""

    clean_headers: bool = True
    dehyphenate: bool = True
    reflow: bool = True
    normalize_whitespace: bool = True

    @classmethod
    def from_options(cls, options: dict) -> CleaningOptions:
        """Read ``clean=False`` (all off) and the individual switches from loader keyword options."""
        on = bool(options.get("clean", True))
        return cls(
            **{
                name: bool(options.get(name, on))
                for name in ("clean_headers", "dehyphenate", "reflow", "normalize_whitespace")
            }
        )


@dataclass
class CleanResult:
    text: str
    positions: list[int]
    steps: dict[str, int] = field(default_factory=dict)
    source_map: SourceMap | None = None


def apply_edits(text: str, edits: list[Edit], positions: list[int]) -> tuple[str, list[int]]:
    """Apply non-overlapping ``edits`` and map ``positions`` from the old text into the new one.

    A position inside a replaced range moves to the start of its replacement; a position at the end of an
    edit moves to just after the replacement.
    """
    if not edits:
        return text, list(positions)
    edits = sorted(edits)
    out: list[str] = []
    prev = 0
    starts: list[int] = []
    ends: list[int] = []
    deltas: list[int] = []  # cumulative length change after each edit
    delta = 0
    for s, e, rep in edits:
        if s < prev:
            raise ValueError("overlapping edits")
        out.append(text[prev:s])
        out.append(rep)
        prev = e
        starts.append(s)
        ends.append(e)
        delta += len(rep) - (e - s)
        deltas.append(delta)
    out.append(text[prev:])
    mapped = []
    for p in positions:
        i = bisect.bisect_right(ends, p)  # edits entirely at or before p
        before = deltas[i - 1] if i else 0
        if i < len(starts) and starts[i] < p:  # p inside edit i
            p = starts[i]
        mapped.append(p + before)
    return "".join(out), mapped


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


_EDGE_NUMBER = re.compile(r"^\s*(\d{1,4})\s+(\S.*?)\s*$|^\s*(\S.*?)\s+(\d{1,4})\s*$")


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
    pages = []
    for a, b in zip(bounds, bounds[1:]):
        lines = [(s + a, e + a) for s, e in _lines(text[a:b]) if text[s + a : e + a].strip()]
        pages.append(lines)

    def edges(lines):
        return (("top", lines[:max_lines]), ("bottom", list(reversed(lines[-max_lines:]))))

    sigs: Counter = Counter()
    offsets: Counter = Counter()
    titles: dict = defaultdict(list)
    for index, lines in enumerate(pages):
        for side, ordered in edges(lines):
            for i, (s, e) in enumerate(ordered):
                line = text[s:e]
                sigs[(side, i, _signature(line))] += 1
                number, rest = _edge_number(line)
                if number is not None and _header_like(rest):
                    offsets[(side, i, number - index)] += 1
                if _header_like(line):
                    titles[(side, i, _norm_line(line))].append(index)
    needed = max(2 if len(pages) <= 3 else 3, (len(pages) + 1) // 2)
    needed_sequence = max(3, len(pages) // 4)
    runs = {key: _page_runs(indices) for key, indices in titles.items() if len(indices) >= 3}

    def running(side: str, i: int, index: int, line: str) -> bool:
        if len(pages) < 2:
            return False
        if sigs[(side, i, _signature(line))] >= needed:
            return True
        number, rest = _edge_number(line)
        if number is not None and _header_like(rest) and offsets[(side, i, number - index)] >= needed_sequence:
            return True
        return len(pages) > 3 and _header_like(line) and index in runs.get((side, i, _norm_line(line)), ())

    remove: set[tuple[int, int]] = set()
    for index, lines in enumerate(pages):
        if not lines:
            continue
        found: set[tuple[int, int]] = set()
        for side, ordered in edges(lines):
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


_DOT_LEADER = re.compile(
    r"^[^\n]*?(?:\.[ \t]?){4,}[ \t]*(?:\d{1,5}|[ivxlcdm]{1,7})[ \t]*$", re.MULTILINE | re.IGNORECASE
)


def dot_leader_edits(text: str) -> list[Edit]:
    """Delete table-of-contents lines: a title, a dot leader and a page number ("1.2 Metric spaces . . . 6").
    They repeat the headings with page numbers of the printed book; as chunks they only match queries
    for the headings themselves and crowd out the sections they name."""
    edits = []
    for m in _DOT_LEADER.finditer(text):
        end = m.end() + 1 if m.end() < len(text) and text[m.end()] == "\n" else m.end()
        edits.append((m.start(), end, ""))
    return edits


def _merge_adjacent(edits: list[Edit]) -> list[Edit]:
    merged: list[Edit] = []
    for s, e, r in sorted(edits):
        if merged and s < merged[-1][1]:
            ps, pe, pr = merged[-1]
            merged[-1] = (ps, max(pe, e), pr + r)
        else:
            merged.append((s, e, r))
    return merged


def whitespace_edits(text: str, collapse_spaces: bool = False) -> list[Edit]:
    """Normalise whitespace: odd spaces to plain spaces, invisible and control characters removed, trailing
    spaces dropped, runs of blank lines cut to one blank line, leading/trailing blank space removed; with
    ``collapse_spaces`` (PDF text) runs of spaces inside a line become one space."""
    edits: list[Edit] = []
    for m in _UNICODE_SPACES.finditer(text):
        edits.append((m.start(), m.end(), " "))
    for m in _INVISIBLE.finditer(text):
        edits.append((m.start(), m.end(), ""))
    for m in re.finditer("\f", text):  # form feed: a page break in extracted text reads as a line break
        edits.append((m.start(), m.end(), "\n"))
    for m in re.finditer(r"[ \t]+(?=\n|\Z)", text):
        edits.append((m.start(), m.end(), ""))
    for m in re.finditer(r"\n{3,}", text):
        edits.append((m.start(), m.end(), "\n\n"))
    if collapse_spaces:
        for m in re.finditer(r"(?<=\S)(?: {2,}|[ \t]*\t[ \t]*)(?=\S)", text):
            edits.append((m.start(), m.end(), " "))
    lead = re.match(r"\s+", text)
    if lead:
        edits.append((0, lead.end(), ""))
    trail = re.search(r"\s+$", text)
    if trail and (not lead or trail.start() > lead.end()):
        edits.append((trail.start(), len(text), ""))
    return _resolve_overlaps(edits)


def _resolve_overlaps(edits: list[Edit]) -> list[Edit]:
    """Keep the first of overlapping edits when sorted by (start, -length): the larger one wins."""
    out: list[Edit] = []
    for s, e, r in sorted(edits, key=lambda x: (x[0], -(x[1] - x[0]))):
        if out and s < out[-1][1]:
            ps, pe, pr = out[-1]
            if e > pe:  # partial overlap: extend the earlier edit, keeping its replacement
                out[-1] = (ps, e, pr)
            continue
        out.append((s, e, r))
    return out


# The look-behind makes a match start only at the beginning of a word: without it a long run of letters
# with no hyphen is rescanned from every position inside it (quadratic; minutes on a 5 MB line).
_HYPHENATED = re.compile(r"(?<![^\W\d_])([^\W\d_]+)-[ \t]*\n[ \t]*([a-z\u00df-\u00ff][^\W\d_]*)([.,;:!?)\]]*)[ \t]*")
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")


def dehyphenate_edits(text: str) -> list[Edit]:
    """Re-join words hyphenated across a line break: "main-\\ntenance office" -> "maintenance\\noffice".

    The line break moves after the re-joined word so line structure survives for the next steps. When the
    hyphenated form occurs elsewhere in the text ("well-known") and the joined one does not, the hyphen is
    kept ("well-known").
    """
    edits: list[Edit] = []
    words: set[str] | None = None  # every word of the text, built once and only when a match needs it
    for m in _HYPHENATED.finditer(text):
        left, right = m.group(1), m.group(2)
        if words is None:
            words = set(_WORD.findall(text.lower()))
        keep_hyphen = f"{left}-{right}".lower() in words and f"{left}{right}".lower() not in words
        # two small edits (the break inside the word, the space after it) keep the word itself copied text,
        # so source offsets (see .sourcemap) stay exact at the word's edges
        edits.append((m.end(1), m.start(2), "-" if keep_hyphen else ""))
        at_line_end = m.end() == len(text) or text[m.end()] == "\n"
        tail = "" if at_line_end else "\n"
        if m.end() > m.end(3) or tail:
            edits.append((m.end(3), m.end(), tail))
    return edits


_LETTERS = re.compile(r"[^\W\d_]+")
_SPACE = re.compile(r"\s")
#: a lower-case letter followed by an upper-case one (Latin): where a word boundary lost its space would be
_CASE_TURN = re.compile(r"(?<=[a-z\u00df-\u00f6\u00f8-\u00ff])(?=[A-Z\u00c0-\u00d6\u00d8-\u00de])")


def glued_word_edits(text: str) -> list[Edit]:
    """Put back the space between two words that a PDF's text extraction glued together.

    A PDF positions words instead of storing spaces; pypdf infers a space from the gap, and where a font
    changes (an italic defined term, a math variable) it sometimes finds none: "Z heißtVerklebung vonX
    undY". Its layout mode glues the same places, so the repair is in the text: a run of letters that
    occurs only once is cut where a lower-case letter meets an upper-case one when every piece is a word
    of this document standing alone elsewhere (in any case: "Reguläre" opening a caption is "reguläre"), or
    a one-letter capital that does (a variable such as "X"). The document's own vocabulary decides, so
    "JavaScript" in a text that uses it twice, a German compound (whose parts after the first are lower
    case) or "iPhone" (a one-letter piece) stay whole, and so does anything in a URL or an e-mail address.
    Words glued in lower case ("wenneskeineoffenen") have no such sign and are left as they are.
    """
    runs = _LETTERS.findall(text)
    if not runs:
        return []
    vocab = Counter(runs)
    lower = Counter(r.lower() for r in runs)  # "Reguläre" opening a caption is the word "reguläre"
    edits: list[Edit] = []
    for m in _LETTERS.finditer(text):
        run = m.group()
        if len(run) < 4 or vocab[run] > 1 or not _CASE_TURN.search(run):
            continue
        cuts = [t.start() for t in _CASE_TURN.finditer(run)]
        pieces = [run[a:b] for a, b in zip([0, *cuts], [*cuts, len(run)])]
        if not (
            all((len(w) >= 2 and lower[w.lower()] >= 1) or (len(w) == 1 and vocab[w] >= 2) for w in pieces)
            and len(pieces[0]) >= 2
        ):
            continue
        lo = max(text.rfind(" ", 0, m.start()), text.rfind("\n", 0, m.start())) + 1
        hi = _SPACE.search(text, m.end())
        token = text[lo : hi.start() if hi else len(text)]
        if "/" not in token and "@" not in token:  # an address: its letters are no words
            edits.extend((m.start() + c, m.start() + c, " ") for c in cuts)
    return edits


_FOLD_CANDIDATES = re.compile(r"[^\x00-\x7f]")


def fold_edits(text: str) -> list[Edit]:
    """Fold compatibility characters (Unicode NFKC, character by character): ligatures "ﬁ" -> "fi", "ﬀ" ->
    "ff", full-width letters, "…" -> "...". PDF fonts emit ligature glyphs; left in, they split words for
    every tokenizer (MiniLM reads "oﬀen" as [UNK]) and BM25 cannot match them. Characters that fold to a
    space plus a combining mark (spacing accents such as "¨") are left alone, and so are characters in
    the private use area (no meaning to fold)."""
    if unicodedata.is_normalized("NFKC", text):
        return []
    edits: list[Edit] = []
    for m in _FOLD_CANDIDATES.finditer(text):
        ch = m.group()
        folded = unicodedata.normalize("NFKC", ch)
        if folded != ch and not (folded[:1] == " " and len(folded) > 1):
            edits.append((m.start(), m.end(), folded))
    return edits


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


_HEADING_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.|[A-Z]\.)\s+")


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
        if rows and (_norm_line(line) in rows or _norm_line(nxt) in rows):
            if paragraph_breaks and not (_norm_line(line) in rows and _norm_line(nxt) in rows):
                edits.append((e1, s2, "\n\n"))
            continue
        if heads and _is_heading(f"{line} {nxt}", heads):  # a heading wrapped onto a second line
            edits.append((e1, s2, " "))
            continue
        if heads and (_is_heading(line, heads) or _is_heading(nxt, heads)):
            if paragraph_breaks:
                edits.append((e1, s2, "\n\n"))
            continue
        if paragraph_breaks and ends and _norm_line(line) in ends:
            edits.append((e1, s2, "\n\n"))
            continue
        if (_structural(line) and not _BULLET.match(line)) or _structural(nxt):
            if paragraph_breaks and _BULLET.match(nxt) and not _structural(line):
                edits.append((e1, s2, "\n\n"))  # a list starts after a paragraph
            continue
        size = len(line.rstrip())
        ends_sentence = bool(_TERMINATOR.search(line.rstrip()))
        starts_lower = nxt.lstrip()[:1].islower()
        if ends_sentence:
            join = size >= 0.85 * width and not nxt.lstrip()[:1].isdigit()
        else:
            join = size >= 0.6 * width or starts_lower
        if join and _BULLET.match(line) and size < 0.6 * width:
            join = False
        if join:
            edits.append((e1, s2, " "))
        elif paragraph_breaks:
            edits.append((e1, s2, "\n\n"))
    return edits


def clean(
    text: str,
    positions: list[int] | None = None,
    options: CleaningOptions | None = None,
    *,
    page_starts: list[int] | None = None,
    paragraph_breaks: bool = False,
    collapse_spaces: bool = False,
    headings: set[str] | frozenset[str] = frozenset(),
    paragraph_ends: set[str] | frozenset[str] = frozenset(),
    fold: bool = False,
    edits: list[Edit] | None = None,
    source_map: SourceMap | None = None,
    table_lines: set[str] | frozenset[str] = frozenset(),
    split_glued: bool = False,
) -> CleanResult:
    """Run the enabled cleaning steps in order and map ``positions`` through all of them.

    ``edits`` are the loader's own edits, applied first whatever the options (line endings, PDF glyph
    fixes). ``page_starts`` (PDF) enables header/footer removal; they must also be the first ``positions``
    (that is how they are kept track of). ``fold`` (PDF) folds compatibility characters (:func:`fold_edits`; part of
    ``normalize_whitespace``). ``headings`` (PDF outline titles) are lines reflow never joins,
    ``paragraph_ends`` lines after which it always starts a paragraph, ``table_lines`` table rows it keeps
    as they are; with page starts, table-of-contents dot-leader lines are dropped. ``split_glued`` (PDF) puts
    back spaces the extraction lost between words (:func:`glued_word_edits`; part of ``normalize_whitespace``).
    Returns the cleaned text, the mapped
    positions, how many edits each step made and the :class:`~.sourcemap.SourceMap` from ``text`` (or from
    the source of the given ``source_map``) to the cleaned text.
    """
    options = options or CleaningOptions()
    mapped = list(positions or [])
    steps: dict[str, int] = {}
    smap = source_map or SourceMap.identity(len(text))

    def run(name: str, step_edits: list[Edit]) -> None:
        nonlocal text, mapped, smap
        steps[name] = len(step_edits)
        text, mapped = apply_edits(text, step_edits, mapped)
        smap = smap.apply(step_edits)

    if edits:
        run("loader", edits)
    if options.normalize_whitespace and fold:
        run("fold_compat", fold_edits(text))
    if options.clean_headers and page_starts:
        page_starts = mapped[: len(page_starts)]  # mapped through the steps before
        run("clean_headers", header_footer_edits(text, page_starts))
        run("dot_leaders", dot_leader_edits(text))
    if options.normalize_whitespace:
        run("normalize_whitespace", whitespace_edits(text, collapse_spaces))
    if options.dehyphenate:
        run("dehyphenate", dehyphenate_edits(text))
    if options.normalize_whitespace and split_glued:
        run("split_glued", glued_word_edits(text))
    if options.reflow:
        run(
            "reflow",
            reflow_edits(text, paragraph_breaks, headings, paragraph_ends=paragraph_ends, table_lines=table_lines),
        )
    if options.normalize_whitespace:  # the steps above may leave doubled blank lines or edge space
        run("normalize_whitespace_final", whitespace_edits(text, collapse_spaces=False))
    return CleanResult(text, mapped, steps, smap)
