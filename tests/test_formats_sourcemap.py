"""Source offsets: every chunk of a file maps back into the decoded file (or the PDF page's extracted text),
through the cleaning edits; and the PDF cleaning of real-book noise (running headers that change with the
section, ligatures, TeX glyphs, dot leaders, tables, numbered headings)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.formats import load, load_bytes
from chunkwise.formats.cleaning import clean, fold_edits, header_footer_edits
from chunkwise.formats.sourcemap import SourceMap
from chunkwise.strategies import get_strategy


def _check_map(smap: SourceMap, source: str, cleaned: str) -> None:
    """Segments cover the cleaned text in order, source spans are ordered, copied text is equal."""
    c_pos = s_pos = 0
    for c0, c1, s0, s1, exact in smap.segments:
        assert c0 == c_pos and c1 >= c0 and s0 >= s_pos and s1 >= s0
        if exact:
            assert source[s0:s1] == cleaned[c0:c1]
        c_pos, s_pos = c1, s1
    assert c_pos == len(cleaned) and s_pos <= len(source)


def _check_chunks(doc, source: str, max_tokens: int = 40) -> None:
    smap = doc.source_map
    _check_map(smap, source, doc.text)
    inner = {p for c0, c1, _, _, exact in smap.segments if not exact for p in range(c0 + 1, c1)}
    for c in get_strategy("recursive", max_tokens=max_tokens, tokenizer="words").chunk(doc):
        assert (c.source_start, c.source_end) == smap.to_source(c.start, c.end)
        replayed = smap.clean_slice(source, doc.text, c.source_start, c.source_end)
        assert c.text in replayed
        if c.start not in inner and c.end not in inner:
            assert replayed == c.text


_WORDS = st.sampled_from(
    ["alpha", "Beta", "main-", "tenance", "the", "office.", "ﬁne", "x", "Ünïcode", "12", "-", "\u00a0", "end."]
)
_SEPS = st.sampled_from([" ", " ", " ", "\n", "\r\n", "\n\n", "\r", "  ", "\t", "\n\n\n"])


@st.composite
def _texts(draw):
    parts = draw(st.lists(st.tuples(_WORDS, _SEPS), min_size=1, max_size=120))
    return "".join(w + s for w, s in parts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts(), st.sampled_from(["notes.txt", "notes.md", "data.csv"]))
def test_text_formats_map_back_into_the_file(text, name):
    data = text.encode("utf-8")
    if not text.strip():
        return
    doc = load_bytes(data, source=name, name=name)
    _check_chunks(doc, data.decode("utf-8"))


def test_txt_offsets_through_crlf_hyphenation_and_reflow():
    line = "The keeper checks the lamp every evening and writes the result into the log book so that the main-"
    source = "Title\r\n\r\n" + line + "\r\ntenance office knows it.   More text follows here on this line.\r\n"
    doc = load_bytes(source.encode(), source="a.txt", name="a.txt")
    assert "maintenance\noffice" in doc.text and "\r" not in doc.text
    _check_chunks(doc, source, max_tokens=8)
    i = doc.text.index("maintenance")
    ss, se = doc.source_map.to_source(i, i + len("maintenance"))
    assert source[ss:se] == "main-\r\ntenance"


def test_markdown_offsets_skip_front_matter():
    source = "---\r\ntitle: Guide\r\n---\r\n\r\n# Install\r\n\r\nRun the installer.\r\n\r\n\r\n"
    doc = load_bytes(source.encode(), source="g.md", name="g.md")
    c = get_strategy("markdown", max_tokens=50).chunk(doc)[0]
    assert source[c.source_start : c.source_end].replace("\r\n", "\n") == c.text
    _check_chunks(doc, source)


@pytest.mark.parametrize(
    "name,source",
    [
        (
            "a.srt",
            "1\r\n00:00:01,000 --> 00:00:02,000\r\n<i>Hello</i> there,\r\nmy friend.\r\n\r\n"
            "2\r\n00:00:03,000 --> 00:00:04,000\r\nBOB: See you soon.\r\n",
        ),
        (
            "a.vtt",
            "WEBVTT\n\n00:01.000 --> 00:02.000\n<v Alice>Hello there, my friend.\n\n"
            "00:03.000 --> 00:04.000\n<v Bob>See you soon.\n",
        ),
    ],
)
def test_subtitle_offsets_point_at_the_cue_text(name, source):
    doc = load_bytes(source.encode(), source=name, name=name)
    _check_map(doc.source_map, source, doc.text)
    for c in get_strategy("fixed", max_tokens=3, tokenizer="words").chunk(doc):
        words = [w for w in re.findall(r"\w+", c.text) if w not in ("Alice", "Bob", "BOB")]
        assert all(w in source[c.source_start : c.source_end] for w in words)


def test_text_given_directly_has_no_source_offsets():
    c = get_strategy("recursive", max_tokens=20).chunk("Plain text given directly.")[0]
    assert c.source_start is None and c.source_end is None
    assert "source_start" in c.to_dict() and "source_end" in c.to_dict()


# -- PDF ----------------------------------------------------------------------------------------------------
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
BODY = (
    "The keeper checks the lamp every evening and writes what was found into the log book, so that the "
    "next keeper knows the state of the light before the night begins. "
)


def _body(number: int, times: int) -> str:
    return " ".join(BODY.replace("evening", f"evening of day {number * 10 + k}").strip() for k in range(times))


def _book(path, ligatures: bool = False):
    """A small book: running headers with the page number and the current section (on alternating sides),
    a chapter's first page without one, a table of contents with dot leaders, a table, numbered headings."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(False)
    if ligatures:
        pdf.add_font("dejavu", fname=FONT)
        font = "dejavu"
    else:
        font = "helvetica"
    sections = [("1", "Lamp"), ("1.1", "Cleaning"), ("2", "Tower"), ("2.1", "Paint")]

    def page(number, header, lines, section=None):
        pdf.add_page()
        pdf.set_font(font, size=10)
        if section:
            pdf.start_section(section[1], level=section[0].count("."))  # an outline entry
        if header:
            text = f"{number} {header}" if number % 2 == 0 else f"{header} {number}"
            pdf.cell(0, 8, text, align="L" if number % 2 == 0 else "R", new_x="LMARGIN", new_y="NEXT")
        for line in lines:
            pdf.multi_cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")

    toc = [f"{n} {t} " + ". " * 30 + f"{k + 2}" for k, (n, t) in enumerate(sections)]
    page(1, None, ["Contents", *toc])
    number = 2
    for n, title in sections:
        head = f"{n}. {title.upper()}"
        word = "ﬁne oﬀer" if ligatures else "fine offer"
        page(
            number, None if "." not in n else head, [f"{n} {title}", _body(number, 2) + " " + word], section=(n, title)
        )
        number += 1
        page(number, head, [_body(number, 3)])
        number += 1
        page(number, head, [_body(number, 2)])
        number += 1
    pdf.output(str(path))
    return path


def test_pdf_running_headers_with_changing_sections_are_removed(tmp_path):
    doc = load(_book(tmp_path / "book.pdf"))
    assert not re.search(r"\d\. (LAMP|CLEANING|TOWER|PAINT)", doc.text)
    assert ". . . ." not in doc.text  # the table of contents' dot leaders
    flat = " ".join(doc.text.split())
    assert all(_body(number, 2) in flat for number in range(2, 14))
    # sections start at the heading line, its number included
    assert [s.path[-1] for s in doc.sections] == ["Lamp", "Cleaning", "Tower", "Paint"]
    for s in doc.sections:
        assert re.match(r"\d+(\.\d+)? " + re.escape(s.path[-1]), doc.text[s.start :])
    chunks = get_strategy("recursive", max_tokens=60).chunk(doc)
    starting = [c for c in chunks if re.match(r"2 Tower", c.text)]
    assert starting and all(c.section == ["Tower"] for c in starting)


def test_pdf_offsets_point_into_the_page_text(tmp_path):
    from pypdf import PdfReader

    path = _book(tmp_path / "book.pdf")
    pages = [p.extract_text() for p in PdfReader(str(path)).pages]
    doc = load(path)
    for c in get_strategy("recursive", max_tokens=60).chunk(doc):
        first = pages[c.page_start - 1]
        words = c.text.split()
        assert first[c.source_start :].split()[0] == words[0]
        assert pages[c.page_end - 1][: c.source_end].split()[-1] == words[-1]


@pytest.mark.skipif(not __import__("os").path.exists(FONT), reason="needs the DejaVu font for ligature glyphs")
def test_pdf_ligatures_are_folded(tmp_path):
    doc = load(_book(tmp_path / "book.pdf", ligatures=True))
    assert "fine offer" in doc.text and not re.search("[\ufb00-\ufb06]", doc.text)


def test_fold_keeps_offsets_exact_and_spacing_accents():
    text = "oﬀen ﬁnden ¨ x"
    result = clean(text, [], fold=True)
    assert result.text.startswith("offen finden ¨")
    assert len(fold_edits("¨")) == 0
    _check_map(result.source_map, text, result.text)
    i = result.text.index("finden")
    assert result.source_map.to_source(i, i + 6) == (5, 10)


def test_headers_follow_the_page_sequence_but_chapter_openings_stay():
    pages = []
    for k in range(8):
        head = f"{k + 3} {'1.2. METRIC SPACES' if k < 4 else '1.3. CONTINUITY'}"
        pages.append((head if k != 4 else "2 Continuity") + f"\nBody line {k} goes on.\nMore body {k}.\n")
    text = "".join(pages)
    starts = [sum(len(p) for p in pages[:k]) for k in range(8)]
    removed = [text[s:e].strip() for s, e, _ in header_footer_edits(text, starts)]
    assert len(removed) == 7 and "2 Continuity" not in removed


def test_nul_glyphs_are_never_deleted():
    from chunkwise.formats.pdf import _glyph_edits

    edits = _glyph_edits("a \x00 b \x00 c \uf0b7 d \ue123", ["\u2212"], 0)  # counts disagree: U+FFFD
    reps = [r for _, _, r in edits]
    assert reps == ["\ufffd", "\ufffd", "\u2022", "\ufffd"]
    assert [r for _, _, r in _glyph_edits("1 \x00 n", ["\u2212"], 0)] == ["\u2212"]


@pytest.mark.parametrize("align", ["LEFT", "CENTER", "RIGHT"])
def test_table_rows_stay_one_per_line(tmp_path, align):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    prose = "Some prose around the table that is long enough to wrap across more than one line of the page. " * 2
    pdf.multi_cell(0, 6, prose)
    pdf.ln(4)
    with pdf.table(text_align=align, col_widths=(40, 25, 25)) as table:
        for row in [
            ("Part", "Qty", "Price"),
            ("Lamp", "2", "14.50"),
            ("Lens cloth", "10", "3.20"),
            ("Gasket", "4", "1.10"),
        ]:
            r = table.row()
            for cell in row:
                r.cell(cell)
    pdf.ln(4)
    pdf.multi_cell(0, 6, prose)
    pdf.output(str(tmp_path / "t.pdf"))
    text = load(tmp_path / "t.pdf").text
    assert "\n\nPart Qty Price\nLamp 2 14.50\nLens cloth 10 3.20\nGasket 4 1.10\n\n" in text


# -- the index ------------------------------------------------------------------------------------------------
def test_index_stores_source_offsets_and_reads_an_old_collection(tmp_path, monkeypatch):
    from conftest import FakeEmbedder

    import chunkwise.retrieval.index as index_module
    import chunkwise.store.milvus as store_milvus
    from chunkwise.errors import ConfigError
    from chunkwise.retrieval import Index
    from chunkwise.store import MilvusStore

    source = "Bees make honey.\r\n\r\nThe queen lays eggs in spring.\r\n"
    path = tmp_path / "bees.txt"
    path.write_bytes(source.encode())
    with Index(tmp_path / "new.db", embedder=FakeEmbedder()) as ix:
        ix.add([str(path)], strategy="recursive", params={"max_tokens": 8, "tokenizer": "words"})
        hit = next(h for h in ix.search("queen eggs", k=2) if "queen" in h.text)
        assert source[hit.source_start : hit.source_end] == hit.text

    # an index written before source offsets existed (schema 1): searchable, adding to it refused clearly
    original = MilvusStore._chunk_schema

    def old_schema(self, dim, bm25, *args, **kwargs):
        s = original(self, dim, bm25, *args, **kwargs)
        s.fields = [f for f in s.fields if f[0] not in ("source_start", "source_end")]
        return s

    original_rows = store_milvus.chunk_rows

    def old_rows(*args, **kwargs):
        return [
            {k: v for k, v in r.items() if k not in ("source_start", "source_end")}
            for r in original_rows(*args, **kwargs)
        ]

    with monkeypatch.context() as m:
        m.setattr(MilvusStore, "_chunk_schema", old_schema)
        m.setattr(store_milvus, "chunk_rows", old_rows)
        m.setattr(index_module, "SCHEMA_VERSION", 1)
        with Index(tmp_path / "old.db", embedder=FakeEmbedder()) as ix:
            ix.add([str(path)], strategy="recursive", params={"max_tokens": 8, "tokenizer": "words"})
    with Index(tmp_path / "old.db", embedder=FakeEmbedder()) as ix:
        hits = ix.search("queen eggs", k=2)
        assert hits and all(h.source_start is None for h in hits)
        with pytest.raises(ConfigError, match="schema version 1"):
            ix.add([str(path)], strategy="recursive", params={"max_tokens": 8, "tokenizer": "words"})


@st.composite
def _edit_rounds(draw):
    """A text and rounds of random non-overlapping edits (deletions, insertions, replacements)."""
    text = draw(st.text(alphabet="ab \n\u00a0ﬁ", min_size=1, max_size=40))  # (text from nothing has no source)
    rounds = []
    length = len(text)
    for _ in range(draw(st.integers(1, 4))):
        cuts = sorted(draw(st.lists(st.integers(0, length), max_size=8)))
        edits = []
        for s, e in zip(cuts[::2], cuts[1::2]):
            edits.append((s, e, draw(st.sampled_from(["", " ", "\n", "xy", "fi"]))))
        rounds.append(edits)
        length += sum(len(r) - (e - s) for s, e, r in edits)
    return text, rounds


@settings(max_examples=300, deadline=None)
@given(_edit_rounds())
def test_source_map_composes_any_edits(case):
    from chunkwise.formats.cleaning import apply_edits

    source, rounds = case
    text, smap = source, SourceMap.identity(len(source))
    for edits in rounds:
        text, _ = apply_edits(text, edits, [])
        smap = smap.apply(edits)
    _check_map(smap, source, text)
    inner = {p for c0, c1, _, _, exact in smap.segments if not exact for p in range(c0 + 1, c1)}
    for a in range(len(text)):
        for b in range(a + 1, len(text) + 1):
            s, e = smap.to_source(a, b)
            replayed = smap.clean_slice(source, text, s, e)
            assert text[a:b] in replayed
            if a not in inner and b not in inner:
                assert replayed == text[a:b], (a, b)


def test_pdf_loader_folds_ligatures_and_maps_nul_glyphs(tmp_path, monkeypatch):
    """Through the whole loader, without needing a font with ligature glyphs: pypdf's output for each page
    is replaced by what it gives for TeX documents (ligature code points, ``\\x00`` for the CMSY minus)."""
    import chunkwise.formats.pdf as pdf_module

    path = _book(tmp_path / "book.pdf")
    original = pdf_module._extract

    def extract(page):
        text, _ = original(page)
        text = text.replace("fine", "\ufb01ne").replace("offer", "o\ufb00er (\x001)k")
        return text, ["\u2212"] * text.count("\x00")

    monkeypatch.setattr(pdf_module, "_extract", extract)
    doc = load(path)
    assert "fine offer (\u22121)k" in doc.text and not re.search("[\ufb00-\ufb06\x00]", doc.text)
    from pypdf import PdfReader

    pages = [extract(p)[0] for p in PdfReader(str(path)).pages]
    for c in get_strategy("recursive", max_tokens=60).chunk(doc):
        if "offer" in c.text:
            src = pages[c.page_end - 1][: c.source_end]
            assert "o\ufb00er" in src or "o\ufb00er" in pages[c.page_start - 1][c.source_start :]


def test_numbered_and_wrapped_outline_headings_stand_alone():
    prose = (
        "The keeper checks the lamp every evening and writes what was found\n"
        "into the log book, so that the next keeper knows the state of the\n"
        "light before the night begins and can plan the work of the day.\n"
    )
    text = prose + "2 Mannigfaltigkeiten und\nSimplizialkomplexe\n" + prose + "2.1 Topologische Räume\n" + prose
    result = clean(
        text, [], paragraph_breaks=True, headings={"2 Mannigfaltigkeiten und Simplizialkomplexe", "Topologische Räume"}
    )
    assert "\n\n2 Mannigfaltigkeiten und Simplizialkomplexe\n\nThe keeper" in result.text
    assert "\n\n2.1 Topologische Räume\n\nThe keeper" in result.text
