"""PDF loading: pages and outline sections on every chunk, no running headers/footers, bad PDFs."""

from __future__ import annotations

import importlib.util
import io
import re
from pathlib import Path

import pytest

from chunkwise.errors import InputError
from chunkwise.formats import load, load_bytes
from chunkwise.strategies import SEMANTIC_STRATEGIES, STRATEGY_NAMES, get_strategy

ROOT = Path(__file__).resolve().parents[1]
PDF = ROOT / "examples" / "lighthouse-manual.pdf"


def _generator():
    spec = importlib.util.spec_from_file_location("make_example_pdf", ROOT / "scripts" / "make_example_pdf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _norm(text: str) -> str:
    return " ".join(text.replace("-\n", "").split())


def _raw_pages() -> list[str]:
    from pypdf import PdfReader

    return [_norm(p.extract_text()) for p in PdfReader(str(PDF)).pages]


def _expected_section(gen, snippet: str) -> list[str]:
    """The heading path of the chapter whose text contains ``snippet``, from the generator's own source."""
    path: list[str] = []
    for level, heading, paragraphs in gen.CHAPTERS:
        path = path[:level] + [heading]
        body = " ".join(_norm("\n".join(p) if isinstance(p, list) else p) for p in paragraphs)
        if snippet in _norm(heading) + " " + body:
            return list(path)
    return []


def _strategies(fake_embedder):
    for name in STRATEGY_NAMES:
        try:
            params = {"max_tokens": 80}
            if name in SEMANTIC_STRATEGIES:
                params["embedder"] = fake_embedder
            yield name, get_strategy(name, **params)
        except ImportError:  # a strategy module not in this checkout
            continue


def test_example_pdf_is_generated_by_the_committed_script(tmp_path):
    pytest.importorskip("fpdf")
    gen = _generator()
    out = tmp_path / "manual.pdf"
    gen.build(out)
    assert load(out).text == load(PDF).text


def test_pdf_pages_sections_and_cleaning():
    doc = load(PDF)
    assert doc.title == "Harbor Lighthouse Maintenance Manual"
    assert [p.number for p in doc.pages] == [1, 2, 3, 4]
    assert [s.path for s in doc.sections] == [
        ("1 Introduction",),
        ("2 Lamp and Lens",),
        ("2 Lamp and Lens", "2.1 Cleaning the Lens"),
        ("2 Lamp and Lens", "2.2 Replacing the Lamp"),
        ("3 Tower Structure",),
        ("4 Log Book and Reports",),
    ]
    for s in doc.sections:  # each section starts at its heading, found in the text
        assert doc.text[s.heading_start : s.heading_end] == s.path[-1]
    # the outline points "2.1" at page 1, but the heading was pushed to page 2: found there
    s21 = doc.sections[2]
    assert doc.page_span(s21.start, s21.start + 1) == (2, 2)
    assert "Revision 3" not in doc.text and not re.search(r"Page \d of \d", doc.text)
    assert "maintenance office" in doc.text  # "main-\ntenance" re-joined
    # paragraph ends seen in the layout (a full-width last line) become blank lines
    assert "entries that belong in the log book.\n\nThe light has guided" in doc.text
    # the paragraph cut by the page break 2 -> 3 is one paragraph again
    assert "Switch the circuit off at the panel on the landing" in doc.text
    para = next(p for p in doc.text.split("\n\n") if p.startswith("The lamp is replaced"))
    start = doc.text.index(para)
    assert doc.page_span(start, start + len(para)) == (2, 3)


def test_every_chunk_has_right_pages_and_section(fake_embedder):
    gen = _generator()
    doc = load(PDF)
    pages = _raw_pages()
    checked = 0
    for name, strategy in _strategies(fake_embedder):
        chunks = strategy.chunk(doc)
        assert chunks, name
        for c in chunks:
            assert doc.text[c.start : c.end] == c.text
            assert "Revision 3" not in c.text and not re.search(r"Page \d+ of \d+", c.text), (name, c.text)
            words = c.text.split()
            first, last = " ".join(words[:4]), " ".join(words[-4:])
            hits_first = [i + 1 for i, p in enumerate(pages) if first in p]
            hits_last = [i + 1 for i, p in enumerate(pages) if last in p]
            if len(hits_first) == 1:
                assert c.page_start == hits_first[0], (name, c.index, first)
                checked += 1
            if len(hits_last) == 1:
                assert c.page_end == hits_last[0], (name, c.index, last)
            # the chapter holding the chunk's first words (fewer words when the first four cross a heading)
            expected = next((e for k in (4, 3, 2) if (e := _expected_section(gen, " ".join(words[:k])))), [])
            if not expected:  # the chunk starts in the document title, before the first chapter
                assert c.start < min(s.start for s in doc.sections), (name, first)
                assert _norm(c.text).startswith(words[0]) and words[0] in _norm(gen.TITLE), (name, first)
            assert c.section == expected, (name, c.index, first)
            checked += 1
    assert checked > 20


def test_cleaning_switches_on_pdf():
    kept = load(PDF, clean_headers=False)
    assert kept.text.count("Harbor Lighthouse Maintenance Manual - Revision 3") == 4
    assert [p.number for p in kept.pages] == [1, 2, 3, 4]
    for p in kept.pages:  # pages still start at their own header
        assert kept.text[p.start :].startswith("Harbor Lighthouse Maintenance Manual - Revision 3")
    raw = load(PDF, clean=False)
    assert "main-\ntenance" in raw.text and "Page 2 of 4" in raw.text
    assert len(raw.sections) == 6


# -- bad PDFs --------------------------------------------------------------------------------------------


def _encrypted(user_password: str, algorithm: str = "RC4-128") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(str(PDF)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm=algorithm)
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def test_encrypted_pdf_needs_password(tmp_path):
    p = tmp_path / "secret.pdf"
    p.write_bytes(_encrypted("letmein"))
    with pytest.raises(InputError, match=r"secret\.pdf: encrypted PDF: a password is needed"):
        load(p)
    with pytest.raises(InputError, match="the given password is wrong"):
        load(p, password="nope")
    assert "lighthouse" in load(p, password="letmein").text


def test_encrypted_pdf_with_empty_user_password_opens(tmp_path):
    p = tmp_path / "owner-only.pdf"
    p.write_bytes(_encrypted(""))
    assert len(load(p).pages) == 4


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ngarbage",
        PDF.read_bytes()[:900],
        b"%PDF-1.7\n" + bytes(range(256)) * 8,
    ],
)
def test_corrupt_pdf(tmp_path, data):
    p = tmp_path / "broken.pdf"
    p.write_bytes(data)
    with pytest.raises(InputError, match=r"broken\.pdf: (corrupt or unreadable PDF|no text layer)"):
        load(p)


def test_pdf_without_text_layer(tmp_path):
    fpdf = pytest.importorskip("fpdf")
    pdf = fpdf.FPDF()
    for _ in range(2):
        pdf.add_page()
        pdf.rect(20, 20, 100, 60, style="F")  # a "scan": drawing only, no text
    p = tmp_path / "scan.pdf"
    pdf.output(str(p))
    with pytest.raises(InputError, match=r"scan\.pdf: no text layer in 2 page\(s\).*OCR"):
        load(p)


def test_pdf_detected_by_content(tmp_path):
    doc = load_bytes(PDF.read_bytes(), "upload.bin", name="upload.bin")
    assert doc.metadata["format"] == "pdf"


def test_words_glued_by_the_extraction_get_their_space_back():
    """pypdf finds no space where a font changes between two words ("Z heißtVerklebung vonX undY" in
    GeoTopo); the document's own vocabulary says where the words part."""
    from chunkwise.formats.cleaning import clean, glued_word_edits

    text = (
        "Z heißtVerklebung vonX undY. Ein Raum heißt zusammenhängend. Die Verklebung von X und Y ist eine "
        "Fläche, X und Y sind Räume. JavaScript und JavaScript. Das iPhone von Java und Script. Siehe github.com/MartinThoma "
        "von Martin und Thoma. Die Kugeloberfläche ist eine Kugel."
    )
    result = clean(text, split_glued=True)
    assert "Z heißt Verklebung von X und Y." in result.text
    for kept in ("JavaScript", "iPhone", "github.com/MartinThoma", "Kugeloberfläche"):
        assert kept in result.text
    assert glued_word_edits("nothing glued here") == []
    assert clean(text).text == text  # only asked for (the PDF loader asks)
    # the source map replays the inserted spaces: a slice of the source maps to the cleaned words
    s, e = result.source_map.span(0, result.text.index("Y.") + 1)
    assert result.source_map.clean_slice(text, result.text, s, e) == result.text[: result.text.index("Y.") + 1]


def test_pdf_loader_splits_glued_words(tmp_path):
    fpdf = pytest.importorskip("fpdf")
    pdf = fpdf.FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(
        0,
        6,
        "Die Verklebung von X und Y heisst eine Flaeche. Z heisstVerklebung vonX undY. "
        "Die Verklebung von X und Y ist stetig.",
    )
    path = tmp_path / "glued.pdf"
    pdf.output(str(path))
    doc = load(path)
    assert "Z heisst Verklebung von X und Y." in doc.text, doc.text
    assert load(path, normalize_whitespace=False).text.count("heisstVerklebung") == 1
