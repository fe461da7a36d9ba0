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
from collections import Counter
from dataclasses import dataclass, field

from ..registry import lazy_regex
from .cleaning_layout import Edit, header_footer_edits, reflow_edits
from .sourcemap import SourceMap

__all__ = [
    "CleanResult",
    "CleaningOptions",
    "Edit",
    "apply_edits",
    "clean",
    "dehyphenate_edits",
    "dot_leader_edits",
    "fold_edits",
    "glued_word_edits",
    "header_footer_edits",
    "reflow_edits",
    "whitespace_edits",
]

_UNICODE_SPACES = lazy_regex(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_INVISIBLE = lazy_regex(r"[\u200b\u200c\u200d\u2060\ufeff\u00ad]|[\x00-\x08\x0b\x0e-\x1f\x7f]")


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


_DOT_LEADER = lazy_regex(
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


def whitespace_edits(text: str, collapse_spaces: bool = False) -> list[Edit]:
    """Normalise whitespace: odd spaces to plain spaces, invisible and control characters removed, trailing
    spaces dropped, runs of blank lines cut to one blank line, leading/trailing blank space removed; with
    ``collapse_spaces`` (PDF text) runs of spaces inside a line become one space."""
    edits: list[Edit] = []
    for m in () if text.isascii() else _UNICODE_SPACES.finditer(text):  # ASCII has none (not compiled then)
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
_HYPHENATED = lazy_regex(r"(?<![^\W\d_])([^\W\d_]+)-[ \t]*\n[ \t]*([a-z\u00df-\u00ff][^\W\d_]*)([.,;:!?)\]]*)[ \t]*")
_WORD = lazy_regex(r"[^\W\d_]+(?:-[^\W\d_]+)*")


def dehyphenate_edits(text: str) -> list[Edit]:
    """Re-join words hyphenated across a line break: "main-\\ntenance office" -> "maintenance\\noffice".

    The line break moves after the re-joined word so line structure survives for the next steps. When the
    hyphenated form occurs elsewhere in the text ("well-known") and the joined one does not, the hyphen is
    kept ("well-known").
    """
    edits: list[Edit] = []
    words: set[str] | None = None  # every word of the text, built once and only when a match needs it
    if "-" not in text:  # no hyphen, no match (and the pattern is not compiled)
        return edits
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


_LETTERS = lazy_regex(r"[^\W\d_]+")
_SPACE = lazy_regex(r"\s")
#: a lower-case letter followed by an upper-case one (Latin): where a word boundary lost its space would be
_CASE_TURN = lazy_regex(r"(?<=[a-z\u00df-\u00f6\u00f8-\u00ff])(?=[A-Z\u00c0-\u00d6\u00d8-\u00de])")


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


_FOLD_CANDIDATES = lazy_regex(r"[^\x00-\x7f]")


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
    (that is how they are kept track of). ``fold`` (PDF) folds compatibility characters (:func:`fold_edits`;
    part of ``normalize_whitespace``). ``headings`` (PDF outline titles) are lines reflow never joins,
    ``paragraph_ends`` lines after which it always starts a paragraph, ``table_lines`` table rows it keeps
    as they are; with page starts, table-of-contents dot-leader lines are dropped. ``split_glued`` (PDF)
    puts back spaces the extraction lost between words (:func:`glued_word_edits`; part of
    ``normalize_whitespace``). Returns the cleaned text, the mapped positions, how many edits each step made
    and the :class:`~.sourcemap.SourceMap` from ``text`` (or from the source of ``source_map``) to it.
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
        joins = reflow_edits(text, paragraph_breaks, headings, paragraph_ends=paragraph_ends, table_lines=table_lines)
        run("reflow", joins)
    if options.normalize_whitespace:  # the steps above may leave doubled blank lines or edge space
        run("normalize_whitespace_final", whitespace_edits(text, collapse_spaces=False))
    return CleanResult(text, mapped, steps, smap)
