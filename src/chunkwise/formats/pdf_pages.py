"""One PDF page's text: pypdf's plain extraction, the layout hints, and the glyphs pypdf leaves raw.

Both extractions of a page (plain for the text, layout for the hints) read the same content stream, and
pypdf parses it from its bytes on every call; parsing is about half of the cost of an extraction (GeoTopo's
117 pages: 57% of the profile). :func:`parsed_once` parses it once and hands the parsed stream to both: the
plain extraction finds it on the page (pypdf reuses a ``ContentStream`` it finds there), the layout
extraction gets it through :func:`_layout_text`, which runs the steps of pypdf's ``_layout_mode_text`` on
it. Both read the parsed operations and change none of them, so the texts are pypdf's own
(``tests/test_pdf_pages.py`` compares them page by page); where pypdf's private layout steps differ (another
version) or the stream cannot be parsed up front, pypdf's public call runs as before.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

from .cleaning import apply_edits, fold_edits


@contextmanager
def parsed_once(page):
    """The page's content stream parsed once (yielded; ``None`` when it cannot be parsed up front, then each
    extraction parses it as pypdf does, errors included), set on the page while the block runs and the
    page's own ``/Contents`` put back after it (a probe of a failed page reads the stream as stored)."""
    from pypdf.generic import ContentStream, NameObject

    original = page.get("/Contents")
    try:
        content = ContentStream(original, page.pdf, "bytes") if original is not None else None
        if content is not None:
            content.operations  # noqa: B018 - parses it here, once
    except Exception:  # bombs, damaged streams: the extraction below meets them as it always did
        content = None
    if content is None:
        yield None
        return
    page[NameObject("/Contents")] = content
    try:
        yield content
    finally:
        page[NameObject("/Contents")] = original


def _layout_text(page, content) -> str:
    """pypdf's layout-mode text of ``page`` (``extract_text(extraction_mode="layout")`` with its defaults),
    from the already parsed ``content``; pypdf's public call when its private steps are not there."""
    if content is not None:
        try:
            from pypdf._text_extraction import _layout_mode

            fonts = page._layout_mode_fonts()
            bt_groups = _layout_mode.text_show_operations(iter(content.operations), fonts, True, None)
            if not bt_groups:
                return ""
            ty_groups = _layout_mode.y_coordinate_groups(bt_groups, None)
            char_width = _layout_mode.fixed_char_width(bt_groups, 1.25)
            return _layout_mode.fixed_width_page(ty_groups, char_width, True, 1)
        except Exception:  # noqa: BLE001 - another pypdf's internals: its public call decides
            pass
    return page.extract_text(extraction_mode="layout") or ""


def _layout_hints(page, content=None) -> tuple[set[str], set[str]]:
    """Paragraph ends and table rows of a page, as its layout shows them.

    pypdf's plain extraction (used for the text) has no blank lines between paragraphs and writes a table
    row as words separated by single spaces; its layout mode renders vertical gaps as blank lines and keeps
    columns apart, but also reproduces multi-column pages side by side, so it only supplies hints, as
    normalised lines. A line from a multi-column layout simply matches no line of the plain text.

    - paragraph ends: lines followed by a blank line; the last three lines of a page give no hint (the gap
      after them is the footer's);
    - table rows (see :func:`_table_rows`).

    ``content`` is the page's content stream parsed by :func:`parsed_once` (``None``: pypdf parses it).
    """
    try:
        lines = _layout_text(page, content).split("\n")
    except Exception:
        return set(), set()
    filled = [i for i, line in enumerate(lines) if line.strip()]
    last = filled[-3] if len(filled) >= 3 else -1
    ends = set()
    for i, (line, nxt) in enumerate(zip(lines, lines[1:])):
        words = line.split()
        if i < last and len(words) >= 2 and not nxt.strip():
            ends.add(" ".join(words))
    return ends, _table_rows(lines)


_CELL = re.compile(r"(?:^|(?<=\S) {3,})(\S+(?: {1,2}\S+)*)")


def _table_rows(lines: list[str], min_rows: int = 3) -> set[str]:
    """Rows of table-like blocks in layout text: at least ``min_rows`` lines (blank lines between them
    allowed) of two or more short cells (three spaces or more apart, four words at most on average), each
    with as many cells as the row before or with columns lining up with its (two cell starts shared, give
    or take two characters)."""
    rows: set[str] = set()
    block: list[tuple[str, list[int]]] = []

    def flush():
        if len(block) >= min_rows:
            rows.update(" ".join(line.split()) for line, _ in block)
        block.clear()

    for line in lines:
        if not line.strip():
            continue
        cells = [(m.start(1), m.group(1)) for m in _CELL.finditer(line)]
        short = cells and sum(len(c.split()) for _, c in cells) <= 4 * len(cells)
        if len(cells) < 2 or not short:
            flush()
            continue
        starts = [pos for pos, _ in cells]
        if block:
            previous = block[-1][1]
            shared = sum(1 for p in starts if any(abs(p - q) <= 2 for q in previous))
            if len(starts) != len(previous) and shared < 2:  # centred or right-aligned columns drift
                flush()
        block.append((line, starts))
    flush()
    return rows


#: what pypdf's "\x00" stands for in TeX's fonts (code 0 of the font: no ToUnicode entry, so pypdf gives
#: the raw code): minus in the symbol fonts, capital Gamma in the text and math italic fonts, a big left
#: parenthesis in the extension font. Anything else: U+FFFD, so a glyph is never silently lost.
_NUL_BY_FONT = (
    ("CMSY", "\u2212"),
    ("CMBSY", "\u2212"),
    ("CMEX", "("),
    ("CMMI", "\u0393"),
    ("CMR", "\u0393"),
    ("CMBX", "\u0393"),
    ("CMTI", "\u0393"),
    ("CMSL", "\u0393"),
    ("CMSS", "\u0393"),
)
#: private-use code points of symbol fonts that stand for common characters (Symbol/Wingdings bullets)
_PUA = {
    "\uf0b7": "\u2022",
    "\uf0a7": "\u25aa",
    "\uf076": "\u2756",
    "\uf0d8": "\u27a2",
    "\uf0fc": "\u2713",
    "\uf0e0": "\u2192",
    "\uf02d": "-",
    "\uf0a8": "\u25a1",
    "\uf06e": "\u25a0",
    "\uf0b2": "\u2265",
    "\uf0a3": "\u2264",
}
# Adobe's corporate-use code points for the pieces of big brackets (top, extender, bottom) in Symbol fonts
_PUA.update(
    {chr(0xF8EB + k): "(" for k in range(3)}
    | {chr(0xF8EE + k): "[" for k in range(3)}
    | {chr(0xF8F1 + k): "{" for k in range(4)}
    | {chr(0xF8F6 + k): ")" for k in range(3)}
    | {chr(0xF8F9 + k): "]" for k in range(3)}
    | {chr(0xF8FC + k): "}" for k in range(3)}
    | {"\uf8f5": "|", "\uf8e6": "|", "\uf8e7": "\u2015"}
)
_PRIVATE = re.compile(r"[\ue000-\uf8ff]")


def _fold(line: str) -> str:
    """A layout line folded like the text it is compared with (ligatures: "Oﬃcial" -> "Official")."""
    return apply_edits(line, fold_edits(line), [])[0]


def _nul_char(font) -> str:
    name = str((font or {}).get("/BaseFont", "")).split("+")[-1].upper()
    return next((ch for prefix, ch in _NUL_BY_FONT if name.startswith(prefix)), "\ufffd")


def _glyph_edits(text: str, nul_fonts: list[str], offset: int) -> list[tuple[int, int, str]]:
    """Edits for one page's extracted text: ``\x00`` glyphs to what their font says (matched in order
    with the fonts pypdf reported for them; U+FFFD when the counts disagree), private-use glyphs to the
    character they stand for or U+FFFD (their code has no meaning outside the font; never deleted), and
    line endings to ``\n``."""
    edits: list[tuple[int, int, str]] = []
    nuls = [m.start() for m in re.finditer("\x00", text)]
    chars = nul_fonts if len(nul_fonts) == len(nuls) else ["\ufffd"] * len(nuls)
    edits.extend((offset + i, offset + i + 1, ch) for i, ch in zip(nuls, chars))
    for m in _PRIVATE.finditer(text):
        edits.append((offset + m.start(), offset + m.end(), _PUA.get(m.group(), "\ufffd")))
    for m in re.finditer("\r\n?", text):
        edits.append((offset + m.start(), offset + m.end(), "\n"))
    return edits


def _extract(page) -> tuple[str, list[str]]:
    """A page's plain text and, for each ``\x00`` in it, the replacement its font calls for."""
    nul_fonts: list[str] = []

    def visit(text, cm, tm, font, size):
        if text and "\x00" in text:
            nul_fonts.extend([_nul_char(font)] * text.count("\x00"))

    return page.extract_text(visitor_text=visit) or "", nul_fonts
