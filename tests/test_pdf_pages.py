"""The content stream parsed once per page gives pypdf's own texts: plain and layout, page by page."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkwise.formats.pdf_pages import _extract, _layout_text, parsed_once

ROOT = Path(__file__).resolve().parents[1]
PDF = ROOT / "examples" / "lighthouse-manual.pdf"


def _pages(path: Path):
    from pypdf import PdfReader

    return PdfReader(str(path)).pages


def test_shared_parse_gives_pypdf_s_plain_and_layout_text():
    fresh = _pages(PDF)
    expected = [(p.extract_text(), p.extract_text(extraction_mode="layout")) for p in fresh]
    got = []
    for page in _pages(PDF):
        with parsed_once(page) as content:
            assert content is not None
            got.append((_extract(page)[0], _layout_text(page, content)))
    assert got == expected
    assert any(layout.count("\n") > plain.count("\n") for plain, layout in got)  # the layout text is not the plain


def test_page_gets_its_own_contents_back():
    page = _pages(PDF)[0]
    before = page.get("/Contents")
    with parsed_once(page) as content:
        assert page.get_object()["/Contents"] is content
    assert page.get("/Contents") is before


def test_unparseable_stream_is_left_to_pypdf():
    from pypdf.generic import NameObject, NullObject

    page = _pages(PDF)[0]
    page[NameObject("/Contents")] = NullObject()
    with parsed_once(page) as content:
        assert content is None
        assert _layout_text(page, content) == page.extract_text(extraction_mode="layout")


@pytest.mark.parametrize("reflow", [True, False])
def test_load_pdf_is_the_same_with_and_without_the_shared_parse(monkeypatch, reflow):
    """The shared parse is an optimisation only: switched off, every field of the document is the same."""
    from contextlib import contextmanager

    import chunkwise.formats.pdf as pdf

    data = PDF.read_bytes()
    fast = pdf.load_pdf(data, "m.pdf", reflow=reflow)

    @contextmanager
    def unparsed(page):
        yield None

    monkeypatch.setattr(pdf, "parsed_once", unparsed)
    slow = pdf.load_pdf(data, "m.pdf", reflow=reflow)
    assert (fast.text, fast.pages, fast.sections, fast.title, fast.metadata) == (
        slow.text,
        slow.pages,
        slow.sections,
        slow.title,
        slow.metadata,
    )
    assert fast.source_map.__dict__ == slow.source_map.__dict__
