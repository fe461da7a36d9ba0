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
from contextlib import contextmanager

from ..document import Document, Page, Section
from ..errors import InputError
from .cleaning import CleaningOptions, clean


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
                raise InputError("encrypted PDF (AES): reading it needs the 'cryptography' package "
                                 "(pip install cryptography)", source=source) from None
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


def _find_heading(text: str, title: str, start: int, stop: int) -> re.Match | None:
    words = [re.escape(w) for w in title.split()]
    if not words:
        return None
    body = r"\s+".join(words)
    for pattern in (rf"(?im)^[ \t]*({body})[ \t]*$", rf"(?im)^[ \t]*({body})", rf"(?i)({body})"):
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
        end = next((placed[j][0] for j in order[rank + 1:] if placed[j][1] <= level and placed[j][0] > start), n)
        sections.append(Section(start, end, paths[i], level, hs, he))
    return sections


def _layout_paragraph_ends(page) -> set[str]:
    """Lines followed by vertical space on the page: paragraph ends, as the layout shows them.

    pypdf's plain extraction (used for the text) has no blank lines between paragraphs; its layout mode
    renders vertical gaps as blank lines but also reproduces columns side by side, so it only supplies
    these hints. A line from a multi-column layout simply matches no line of the plain text. The last
    three lines of a page give no hint: the gap after them is the footer's.
    """
    try:
        lines = (page.extract_text(extraction_mode="layout") or "").split("\n")
    except Exception:
        return set()
    filled = [i for i, line in enumerate(lines) if line.strip()]
    # the last lines of a page are followed by the footer gap, not by a paragraph break: no hint there
    last = filled[-3] if len(filled) >= 3 else -1
    ends = set()
    for i, (line, nxt) in enumerate(zip(lines, lines[1:])):
        words = line.split()
        if i < last and len(words) >= 2 and not nxt.strip():
            ends.add(" ".join(words))
    return ends


def _page_problem(exc: Exception, source: str) -> str:
    """Why a page's text could not be extracted, in words; a missing AES back-end stops the whole file."""
    from pypdf.errors import DependencyError, LimitReachedError

    if isinstance(exc, DependencyError):
        raise InputError("encrypted PDF (AES): reading it needs the 'cryptography' package "
                         "(pip install cryptography)", source=source) from None
    if isinstance(exc, LimitReachedError):
        return ("a compressed stream expands past pypdf's safety limit (a decompression bomb, or a huge "
                "page); refused")
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
    with _quiet_pypdf():
        reader = _open(data, source, options.get("password"))
        texts: list[str] = []
        warns: list[str] = []
        page_errors: list[str] = []
        paragraph_ends: set[str] = set()
        layout = CleaningOptions.from_options(options).reflow
        for i, page in enumerate(reader.pages):
            try:
                texts.append(page.extract_text() or "")
            except Exception as exc:
                texts.append("")
                problem = _page_problem(exc, source)
                page_errors.append(problem)
                warns.append(f"page {i + 1} could not be read ({problem}); it is left out")
                continue
            if layout and texts[-1].strip():
                paragraph_ends |= _layout_paragraph_ends(page)
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
        raise InputError(f"no text layer in {len(texts)} page(s): a scanned PDF needs OCR, which chunkwise "
                         "does not do", source=source)
    texts = [t.replace("\r\n", "\n").replace("\r", "\n") for t in texts]
    starts, pos = [], 0
    for t in texts:
        starts.append(pos)
        pos += len(t) + 1  # pages are joined by one line break
    raw = "\n".join(texts)
    result = clean(raw, starts, CleaningOptions.from_options(options), page_starts=starts,
                   paragraph_breaks=True, collapse_spaces=True, headings={t for _, t, _ in outline},
                   paragraph_ends=paragraph_ends)
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
    return Document(text, source=source, pages=pages, sections=sections, title=title,
                    metadata={"format": "pdf", "page_count": len(pages), "warnings": warns,
                              "cleaning": result.steps})
