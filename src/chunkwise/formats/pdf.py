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
from dataclasses import dataclass, field

from ..document import Document, Page, Section
from ..errors import InputError
from .cleaning import CleaningOptions, clean
from .pdf_pages import _extract, _fold, _glyph_edits, _layout_hints, parsed_once


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
        read = _read_pages(reader, source, CleaningOptions.from_options(options).reflow)
        outline = _outline(reader)
        try:
            meta_title = (reader.metadata or {}).get("/Title")
        except Exception:
            meta_title = None
    texts = read.texts
    if not any(t.strip() for t in texts) and read.page_errors:
        # every page failed: say why, not "no text layer" (a bomb or a damaged file is not a scan)
        raise InputError(f"no page could be read: {read.page_errors[0]}", source=source)
    if not any(t.strip() for t in texts):
        raise InputError(
            f"no text layer in {len(texts)} page(s): a scanned PDF needs OCR, which chunkwise does not do",
            source=source,
        )
    starts, pos = [], 0
    edits = []
    for t, nul_fonts in zip(texts, read.glyphs):
        starts.append(pos)
        edits.extend(_glyph_edits(t, nul_fonts, pos))
        pos += len(t) + 1  # pages are joined by one line break
    result = clean(
        "\n".join(texts),
        starts,
        CleaningOptions.from_options(options),
        page_starts=starts,
        paragraph_breaks=True,
        collapse_spaces=True,
        headings={t for _, t, _ in outline},
        paragraph_ends=read.paragraph_ends,
        table_lines=read.table_lines,
        fold=True,
        edits=edits,
        split_glued=True,
    )
    return _document(result, starts, outline, meta_title, source, read.warns)


@dataclass
class _Pages:
    """What the pages of a PDF gave: texts, ``\x00`` replacements, layout hints, problems."""

    texts: list[str] = field(default_factory=list)
    glyphs: list[list[str]] = field(default_factory=list)
    warns: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    paragraph_ends: set[str] = field(default_factory=set)
    table_lines: set[str] = field(default_factory=set)


def _read_pages(reader, source: str, layout: bool) -> _Pages:
    """Every page's text (a page that cannot be read: empty, with a warning) and, with ``layout`` (reflow
    on), its layout hints; each page's content stream is parsed once for both (:func:`.pdf_pages.parsed_once`)."""
    read = _Pages()
    for i, page in enumerate(reader.pages):
        with parsed_once(page) as content:
            try:
                text, nul_fonts = _extract(page)
            except Exception as exc:
                read.texts.append("")
                read.glyphs.append([])
                problem = _page_problem(exc, source)
                read.page_errors.append(problem)
                read.warns.append(f"page {i + 1} could not be read ({problem}); it is left out")
                continue
            read.texts.append(text)
            read.glyphs.append(nul_fonts)
            if layout and text.strip():
                ends, rows = _layout_hints(page, content)
                read.paragraph_ends |= {_fold(line) for line in ends}  # compared with the folded text
                read.table_lines |= {_fold(line) for line in rows}
    if not any(t.strip() for t in read.texts) and not read.page_errors:
        read.page_errors = _probe_pages(reader, source)  # pypdf swallowed the reason: find it
    return read


def _document(result, starts: list[int], outline, meta_title, source: str, warns: list[str]) -> Document:
    """The Document of the cleaned text: pages mapped through the cleaning, outline sections, title."""
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
