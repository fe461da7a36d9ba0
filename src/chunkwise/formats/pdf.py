"""PDF: text per page (pypdf), cleaned, with the outline (bookmarks) as sections.

The pages' text is joined with line breaks and cleaned as one text (see :mod:`.cleaning`): running headers
and footers and bare page numbers are removed, hyphenated words re-joined and lines re-flowed into
paragraphs, also across page breaks. Page starts are mapped through every cleaning step, so
``doc.pages`` are exact spans of the cleaned text.

Outline entries become sections. An entry points to a page; the section starts where the entry's title is
found as a line on that page (or on the next two pages: generators often point to the page *before* a
heading that was pushed to the next page), else at the start of the page it points to.

Encrypted PDFs are opened with the empty password (or ``password=``); PDFs that need another password, are
corrupt, or have no text layer (scans: OCR is not supported) raise :class:`~chunkwise.errors.InputError`.
"""

from __future__ import annotations

import io
import logging
import re
import unicodedata
from contextlib import contextmanager

from ..document import Document, Page, Section
from ..errors import InputError
from .cleaning import CleaningOptions, apply_edits, clean, fold_edits


@contextmanager
def _quiet_pypdf():
    """pypdf logs every recoverable oddity of a file as a warning; they are noise for a user."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _open(data: bytes, source: str, password: str | None):
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
    except DependencyError as exc:
        raise InputError(f"cannot open this PDF: {exc} (pip install cryptography)", source=source) from None
    except Exception as exc:  # pypdf raises many kinds of errors on damaged files
        raise InputError(f"corrupt or unreadable PDF ({type(exc).__name__}: {exc})", source=source) from None
    try:
        if reader.is_encrypted:
            try:
                ok = reader.decrypt(password or "")
            except DependencyError:
                raise InputError(
                    "encrypted PDF (AES): reading it needs the 'cryptography' package (pip install cryptography)",
                    source=source,
                ) from None
            if not ok:
                what = "the given password is wrong" if password else "a password is needed"
                raise InputError(f"encrypted PDF: {what}", source=source)
        pages = reader.pages
        len(pages)
    except InputError:
        raise
    except (FileNotDecryptedError, PdfReadError, Exception) as exc:
        raise InputError(f"corrupt or unreadable PDF ({type(exc).__name__}: {exc})", source=source) from None
    return reader


def _outline(reader) -> list[tuple[int, str, int]]:
    """(level, title, 0-based page index) of every outline entry, in outline order."""
    entries: list[tuple[int, str, int]] = []

    def walk(items, level):
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            try:
                page = reader.get_destination_page_number(item)
            except Exception:
                page = None
            if title and page is not None and page >= 0:
                entries.append((level, title, page))

    try:
        walk(reader.outline, 1)
    except Exception:  # a broken outline must not cost the text
        return entries
    return entries


_NUMBER_PREFIX = r"(?:(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.|[A-Z]\.|(?:chapter|kapitel|part|section)\s+\w+[.:]?)[ \t]+)?"


def _find_heading(text: str, title: str, start: int, stop: int) -> re.Match | None:
    """The heading line of an outline title: group 1 is the line from its start (a heading number such as
    "2" or "1.6." included, so the section starts where the line does), else the title anywhere."""
    words = [re.escape(w) for w in unicodedata.normalize("NFKC", title).split()]
    if not words:
        return None
    body = r"\s+".join(words)
    for pattern in (
        rf"(?im)^[ \t]*({_NUMBER_PREFIX}{body})[ \t]*$",
        rf"(?im)^[ \t]*({_NUMBER_PREFIX}{body})",
        rf"(?i)({body})",
    ):
        m = re.compile(pattern).search(text, start, stop)
        if m:
            return m
    return None


def _sections(text: str, pages: list[Page], outline: list[tuple[int, str, int]]) -> list[Section]:
    n = len(text)
    placed: list[tuple[int, int, int, int, str]] = []  # start, level, heading start, heading end, title
    stack: list[tuple[int, str]] = []
    paths: list[tuple[str, ...]] = []
    floor = 0
    for level, title, page_index in outline:
        if page_index >= len(pages):
            continue
        page = pages[page_index]
        hi = pages[min(len(pages) - 1, page_index + 2)].end
        lo = max(page.start, floor) if floor < hi else page.start
        m = _find_heading(text, title, lo, hi)
        if m:
            start, hs, he = m.start(1), m.start(1), m.end(1)
            floor = he
        else:
            start = hs = he = page.start
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        placed.append((start, level, hs, he, title))
        paths.append(tuple(t for _, t in stack))
    order = sorted(range(len(placed)), key=lambda i: (placed[i][0], placed[i][1]))
    sections = []
    for rank, i in enumerate(order):
        start, level, hs, he, _ = placed[i]
        end = next((placed[j][0] for j in order[rank + 1 :] if placed[j][1] <= level and placed[j][0] > start), n)
        sections.append(Section(start, end, paths[i], level, hs, he))
    return sections


def _layout_hints(page) -> tuple[set[str], set[str]]:
    """Paragraph ends and table rows of a page, as its layout shows them.

    pypdf's plain extraction (used for the text) has no blank lines between paragraphs and writes a table
    row as words separated by single spaces; its layout mode renders vertical gaps as blank lines and keeps
    columns apart, but also reproduces multi-column pages side by side, so it only supplies hints, as
    normalised lines. A line from a multi-column layout simply matches no line of the plain text.

    - paragraph ends: lines followed by a blank line; the last three lines of a page give no hint (the gap
      after them is the footer's);
    - table rows (see :func:`_table_rows`).
    """
    try:
        lines = (page.extract_text(extraction_mode="layout") or "").split("\n")
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


def _page_problem(exc: Exception, source: str) -> str:
    """Why a page's text could not be extracted, in words; a missing AES back-end stops the whole file."""
    from pypdf.errors import DependencyError, LimitReachedError

    if isinstance(exc, DependencyError):
        raise InputError(
            "encrypted PDF (AES): reading it needs the 'cryptography' package (pip install cryptography)", source=source
        ) from None
    if isinstance(exc, LimitReachedError):
        return "a compressed stream expands past pypdf's safety limit (a decompression bomb, or a huge page); refused"
    return f"corrupt content stream ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})"


def _probe_pages(reader, source: str, limit: int = 5) -> list[str]:
    """Why the first pages gave no text, when it is not "no text layer": decoding their content streams
    directly surfaces the errors pypdf's text extraction logs and hides (bombs, damaged streams, AES)."""
    problems: list[str] = []
    for page in list(reader.pages)[:limit]:
        try:
            contents = page.get_contents()
            data = contents.get_data() if contents is not None else b""
        except Exception as exc:
            problems.append(_page_problem(exc, source))
            continue
        if not data.strip() and _raw_length(page) > 0:  # pypdf logged a decoding error and went on
            problems.append("corrupt content stream (its compressed data could not be decoded)")
    return problems


def _raw_length(page) -> int:
    """Bytes of the page's content streams as stored (before decompression)."""
    try:
        obj = page.get("/Contents")
        obj = obj.get_object() if obj is not None else None
        items = list(obj) if isinstance(obj, list) else [obj]
        return sum(len(getattr(o.get_object() if o is not None else None, "_data", b"") or b"") for o in items)
    except Exception:
        return 0


def load_pdf(data: bytes, source: str, **options) -> Document:
    """A PDF document (see the module docstring). ``doc.source_map`` maps the cleaned text back to the
    pages' extracted text: chunks get ``source_start`` as an offset into the text pypdf extracts from the
    chunk's first page (``page.extract_text()``), ``source_end`` into that of its last page."""
    with _quiet_pypdf():
        reader = _open(data, source, options.get("password"))
        texts: list[str] = []
        glyphs: list[list[str]] = []
        warns: list[str] = []
        page_errors: list[str] = []
        paragraph_ends: set[str] = set()
        table_lines: set[str] = set()
        layout = CleaningOptions.from_options(options).reflow
        for i, page in enumerate(reader.pages):
            try:
                text, nul_fonts = _extract(page)
            except Exception as exc:
                texts.append("")
                glyphs.append([])
                problem = _page_problem(exc, source)
                page_errors.append(problem)
                warns.append(f"page {i + 1} could not be read ({problem}); it is left out")
                continue
            texts.append(text)
            glyphs.append(nul_fonts)
            if layout and text.strip():
                ends, rows = _layout_hints(page)
                paragraph_ends |= {_fold(line) for line in ends}  # compared with the folded text
                table_lines |= {_fold(line) for line in rows}
        if not any(t.strip() for t in texts) and not page_errors:
            page_errors = _probe_pages(reader, source)  # pypdf swallowed the reason: find it
        outline = _outline(reader)
        try:
            meta_title = (reader.metadata or {}).get("/Title")
        except Exception:
            meta_title = None
    if not any(t.strip() for t in texts) and page_errors:
        # every page failed: say why, not "no text layer" (a bomb or a damaged file is not a scan)
        raise InputError(f"no page could be read: {page_errors[0]}", source=source)
    if not any(t.strip() for t in texts):
        raise InputError(
            f"no text layer in {len(texts)} page(s): a scanned PDF needs OCR, which chunkwise does not do",
            source=source,
        )
    starts, pos = [], 0
    edits = []
    for t, nul_fonts in zip(texts, glyphs):
        starts.append(pos)
        edits.extend(_glyph_edits(t, nul_fonts, pos))
        pos += len(t) + 1  # pages are joined by one line break
    raw = "\n".join(texts)
    result = clean(
        raw,
        starts,
        CleaningOptions.from_options(options),
        page_starts=starts,
        paragraph_breaks=True,
        collapse_spaces=True,
        headings={t for _, t, _ in outline},
        paragraph_ends=paragraph_ends,
        table_lines=table_lines,
        fold=True,
        edits=edits,
        split_glued=True,
    )
    text = result.text
    n = len(text)
    mapped = [min(max(0, p), n) for p in result.positions]
    for k in range(1, len(mapped)):
        mapped[k] = max(mapped[k], mapped[k - 1])
    pages = [Page(i + 1, mapped[i], mapped[i + 1] if i + 1 < len(mapped) else n) for i in range(len(mapped))]
    sections = _sections(text, pages, outline)
    title = str(meta_title).strip() if meta_title and str(meta_title).strip() else None
    if not title and sections:
        title = sections[0].path[0]
    smap = result.source_map
    assert smap is not None  # clean() always returns one
    smap.page_starts = starts
    return Document(
        text,
        source=source,
        pages=pages,
        sections=sections,
        title=title,
        metadata={"format": "pdf", "page_count": len(pages), "warnings": warns, "cleaning": result.steps},
        source_map=smap,
    )
