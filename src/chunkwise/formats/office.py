"""Word (``.docx``) and PowerPoint (``.pptx``) files, with the ``office`` extra (python-docx, python-pptx).

Both are written out as Markdown text, so ``auto`` chunks them with the ``markdown`` strategy and the
structure is the same as a Markdown file's:

- **Word**: paragraphs in body order; a ``Title`` or ``Heading N`` paragraph becomes a heading of that level
  (the sections), a list paragraph a ``- `` item, a table a Markdown table (its first row the header, which
  later chunks of a long table carry as ``context``). Headers, footers, comments and images are not read.
- **PowerPoint**: one level-1 heading per slide, the slide's title (``Slide N`` when it has none), so every
  chunk's section is its slide; then the text of its shapes in order (a paragraph per line, ``- `` with
  indentation by its level), tables as Markdown tables, and the speaker notes after ``Notes:``. Each slide
  is a :class:`~chunkwise.document.Page` numbered from 1, so ``page_start``/``page_end`` are slides (a
  slide without any text has no page, and the numbers of the others stay as in the presentation).

The text is rebuilt from the XML, so chunks have no ``source_start``/``source_end`` (``None``, never a wrong
number). A file the library cannot open is one :class:`~chunkwise.errors.InputError` naming it.
"""

from __future__ import annotations

import io
import re
from typing import Any

from ..document import Document, Page
from ..errors import InputError
from .markdown_blocks import markdown_blocks, markdown_tables, sectioned_document

#: format -> (module the extra installs, what the file is)
OFFICE_FORMATS = {"docx": ("docx", "Word document"), "pptx": ("pptx", "PowerPoint presentation")}
_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.IGNORECASE)


def _require(fmt: str, source: str):
    import importlib

    module, what = OFFICE_FORMATS[fmt]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(
            f"reading a {what} needs the office extra (pip install 'chunkwise[office]')", source=source
        ) from None


def _open(fmt: str, data: bytes, source: str) -> Any:
    lib = _require(fmt, source)
    try:
        return lib.Document(io.BytesIO(data)) if fmt == "docx" else lib.Presentation(io.BytesIO(data))
    except Exception as exc:  # zip, XML and package errors of many types
        problem = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise InputError(f"not a readable {OFFICE_FORMATS[fmt][1]} ({problem})", source=source) from None


def _line(text: str) -> str:
    return " ".join(text.split())


def _table(rows: list[list[str]]) -> str:
    """A Markdown table; cells on one line, ``|`` escaped; the first row is the header."""
    rows = [[_line(c).replace("|", "\\|") for c in r] for r in rows if any(c.strip() for c in r)]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out)


def _document(text: str, source: str, fmt: str, title: str | None, pages: list[Page], extra: dict) -> Document:
    if not text.strip():
        raise InputError(f"no text in this {OFFICE_FORMATS[fmt][1]}", source=source)
    text = text.rstrip() + "\n"
    blocks = markdown_blocks(text)
    metadata = {"format": fmt, "warnings": [], **extra}
    tables = markdown_tables(text, blocks)
    return sectioned_document(text, source, blocks, title=title, pages=pages, tables=tables, metadata=metadata)


def load_docx(data: bytes, source: str, **options) -> Document:
    """A Word document as Markdown text (see the module doc)."""
    doc = _open("docx", data, source)
    parts: list[str] = []
    tables = 0
    for item in doc.iter_inner_content():
        if hasattr(item, "rows"):
            rows = [[cell.text for cell in row.cells] for row in item.rows]
            block = _table(rows)
            tables += bool(block)
        else:
            text = _line(item.text)
            if not text:
                continue
            style = (item.style.name if item.style is not None else "") or ""
            m = _HEADING_STYLE.match(style)
            if style.lower() == "title":
                block = f"# {text}"
            elif m:
                block = "#" * min(6, max(1, int(m.group(1)))) + f" {text}"
            elif "list" in style.lower() or item._p.pPr is not None and item._p.pPr.numPr is not None:
                block = f"- {text}"
            else:
                block = "\\" + text if text[0] in "#>|`" else text  # body text, not Markdown syntax
        if block:
            parts.append(block)
    title = _line(doc.core_properties.title or "") or None
    return _document("\n\n".join(parts), source, "docx", title, [], {"tables": tables})


def _shape_blocks(shape, out: list[str]) -> None:
    """The text of one shape (a group's shapes in order) as Markdown blocks."""
    if hasattr(shape, "shapes"):  # a group
        for inner in shape.shapes:
            _shape_blocks(inner, out)
        return
    if getattr(shape, "has_table", False):
        block = _table([[cell.text for cell in row.cells] for row in shape.table.rows])
        if block:
            out.append(block)
        return
    if getattr(shape, "has_text_frame", False):
        lines = []
        for p in shape.text_frame.paragraphs:
            text = _line(p.text)
            if text:
                lines.append("  " * (p.level or 0) + f"- {text}")
        if lines:
            out.append("\n".join(lines))


def load_pptx(data: bytes, source: str, **options) -> Document:
    """A PowerPoint presentation as Markdown text, one page and one section per slide (see the module doc)."""
    prs = _open("pptx", data, source)
    text = ""
    pages: list[Page] = []
    for n, slide in enumerate(prs.slides, start=1):
        title_shape = slide.shapes.title
        title = _line(title_shape.text) if title_shape is not None and title_shape.has_text_frame else ""
        blocks = [f"# {title or f'Slide {n}'}"]
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            _shape_blocks(shape, blocks)
        if slide.has_notes_slide:
            notes = _line(slide.notes_slide.notes_text_frame.text) if slide.notes_slide.notes_text_frame else ""
            if notes:
                blocks.append(f"Notes: {notes}")
        if not title and len(blocks) == 1:  # nothing on the slide: no page of text (its number is kept)
            continue
        if text:
            text += "\n\n"
        start = len(text)
        text += "\n\n".join(blocks)
        pages.append(Page(n, start, len(text)))
    deck_title = _line(prs.core_properties.title or "") or None
    return _document(text, source, "pptx", deck_title, pages, {"slides": len(pages)})


__all__ = ["load_docx", "load_pptx", "OFFICE_FORMATS"]
