"""Notebooks, CSV/TSV tables and content sniffing: what is kept, what is left out, and the invariants
(exact offsets, caps, token counts, source offsets into the file) on generated notebooks and tables."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

import chunkwise
from chunkwise.cli import main
from chunkwise.context import contextualize
from chunkwise.document import Document
from chunkwise.errors import InputError
from chunkwise.formats import detect_format, load, load_bytes
from chunkwise.formats.sniff import looks_like_markdown
from chunkwise.formats.table import row_spans
from chunkwise.segmentation.tokenizers import resolve_tokenizer
from chunkwise.strategies import get_strategy
from chunkwise.strategies.base import max_chars_for

DATA = Path(__file__).parent / "data" / "formats"
NB_KEYS = re.compile(r'"(cell_type|execution_count|output_type|nbformat)"\s*:')
BASE64 = re.compile(r"[A-Za-z0-9+/]{100,}")


def _check_source_map(doc, raw: str) -> None:
    """Segments cover the text in order; copied segments equal the file's characters."""
    c_pos = s_pos = 0
    for c0, c1, s0, s1, exact in doc.source_map.segments:
        assert c0 == c_pos and c1 >= c0 and s0 >= s_pos and s1 >= s0
        if exact:
            assert raw[s0:s1] == doc.text[c0:c1]
        c_pos, s_pos = c1, s1
    assert c_pos == len(doc.text) and s_pos <= len(raw)


def _check_chunks(doc, chunks, max_tokens: int, tokenizer) -> None:
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert c.token_count == tokenizer.count(c.text) <= max_tokens


# -- notebooks ------------------------------------------------------------------------------------------
def test_notebook_cells_as_markdown_outputs_short_images_left_out():
    doc = load(DATA / "notebook.ipynb")
    assert doc.metadata["format"] == "notebook" and doc.title == "Lighthouse log"
    assert not NB_KEYS.search(doc.text) and not BASE64.search(doc.text)
    assert doc.metadata["dropped_outputs"] == {"image": 2, "HTML": 1, "widget": 1}
    assert "```python\nimport csv\n" in doc.text
    assert "row 11\n… (28 more lines of output)\n```" in doc.text and "row 12" not in doc.text
    assert "ZeroDivisionError: division by zero" in doc.text and "\x1b" not in doc.text.replace("\\x1b", "")
    assert "<Figure size" not in doc.text and "IntSlider(value=0)" not in doc.text and "<table>" not in doc.text
    assert "   hours\n0      1" in doc.text  # a result's text/plain is kept beside its dropped HTML
    assert "````python\n# a comment" in doc.text  # a fence longer than the ``` inside the code
    assert [s.path for s in doc.sections] == [
        ("Lighthouse log",),
        ("Lighthouse log", "Plot"),
        ("Lighthouse log", "Errors"),
    ]  # the comment in a code cell is not a heading
    numbers = [p.number for p in doc.pages]
    assert numbers == [1, 2, 3, 4, 5, 6, 7, 9]  # the empty cell 8 has no text
    for p in doc.pages:
        assert doc.text[p.start : p.end].strip()


def test_notebook_chunks_carry_cells_sections_and_source_offsets():
    raw = (DATA / "notebook.ipynb").read_text(encoding="utf-8")
    doc = load(DATA / "notebook.ipynb")
    _check_source_map(doc, raw)
    chunks = chunkwise.chunk(DATA / "notebook.ipynb", max_tokens=40, tokenizer="words")
    assert {c.strategy for c in chunks} == {"auto:markdown"}
    _check_chunks(doc, chunks, 40, resolve_tokenizer("words"))
    assert all(c.section for c in chunks)
    first = chunks[0]
    assert first.page_start == 1 and first.section == ["Lighthouse log"]
    # the chunk's source span in the .ipynb holds its words, JSON-escaped where they had to be
    assert raw[first.source_start : first.source_end].startswith("# Lighthouse log\\n")
    assert '\\"lamp\\"' in raw[first.source_start : first.source_end]
    plot = next(c for c in chunks if c.text.startswith("## Plot"))
    assert plot.page_start == 3
    code = next(c for c in chunks if "import matplotlib" in c.text)
    assert (code.page_start, code.page_end) == (3, 4) and "import matplotlib.pyplot as plt" in raw[
        code.source_start : code.source_end
    ]


def test_malformed_notebook_is_one_line_and_the_folder_goes_on(capsys, tmp_path):
    for name in ("notebook.ipynb", "broken.ipynb", "readings.csv"):
        shutil.copy(DATA / name, tmp_path / name)
    (tmp_path / "list.ipynb").write_text("[1, 2]", encoding="utf-8")
    code = main(["chunk", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("chunkwise: error:")]
    assert len(errors) == 2 and all("not a valid Jupyter notebook" in line for line in errors)
    assert any("broken.ipynb" in line for line in errors) and any("list.ipynb" in line for line in errors)
    sources = {Path(json.loads(line)["source"]).name for line in out.splitlines()}
    assert sources == {"notebook.ipynb", "readings.csv"}
    assert "notebook outputs left out: 2 image, 1 HTML, 1 widget" in err


def test_notebook_version_3_is_upgraded_without_a_source_map():
    nb = nbformat.v3.new_notebook(
        worksheets=[nbformat.v3.new_worksheet(cells=[nbformat.v3.new_text_cell("markdown", "# Old\n\nText.")])]
    )
    doc = load_bytes(nbformat.writes(nb, version=3).encode(), source="old.ipynb", name="old.ipynb")
    assert doc.text.startswith("# Old") and doc.source_map is None and doc.pages[0].number == 1


_WORD = st.sampled_from(
    ["lamp", "keeper", 'say "hi"', "back\\slash", "tab\there", "ünï", "日本", "#", "`", "x=1", "cr\r\nlf", "😀"]
)
_LINE = st.lists(_WORD, min_size=0, max_size=8).map(" ".join)
_SOURCE = st.lists(_LINE, min_size=0, max_size=6).map("\n".join)


@st.composite
def _notebooks(draw):
    cells = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            head = draw(st.sampled_from(["", "# Title\n\n", "## Part\n", "### Deep\n\n"]))
            cells.append(new_markdown_cell(head + draw(_SOURCE)))
        else:
            outputs = []
            if draw(st.booleans()):
                outputs.append(new_output("stream", name="stdout", text=draw(_SOURCE) + "\n"))
            if draw(st.booleans()):
                outputs.append(new_output("display_data", data={"image/png": "iVBORw0KGgo" * 30, "text/plain": "<F>"}))
            cells.append(new_code_cell(draw(_SOURCE), outputs=outputs))
    return new_notebook(cells=cells)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_notebooks(), st.integers(8, 60), st.booleans(), st.booleans())
def test_generated_notebooks_keep_offsets_caps_and_source_map(nb, max_tokens, crlf, ascii_only):
    raw = nbformat.writes(nb)
    if ascii_only:  # written by a tool that escapes every non-ASCII character (\u00fc, surrogate pairs)
        raw = json.dumps(json.loads(raw), indent=2, ensure_ascii=True)
    if crlf:
        raw = raw.replace("\n", "\r\n")
    try:
        doc = load_bytes(raw.encode("utf-8"), source="gen.ipynb", name="gen.ipynb")
    except InputError as exc:
        assert "no cells with text" in str(exc)
        return
    assert not NB_KEYS.search(doc.text) and "iVBORw0KGgo" not in doc.text
    _check_source_map(doc, raw)
    chunks = get_strategy("auto", max_tokens=max_tokens, tokenizer="words").chunk(doc)
    _check_chunks(doc, chunks, max_tokens, resolve_tokenizer("words"))
    for c in chunks:
        assert c.page_start is not None and c.page_start <= c.page_end
        assert 0 <= c.source_start <= c.source_end <= len(raw)
        # the file's span with the loader's edits (escapes decoded, fences written) replayed holds the chunk
        assert c.text in doc.source_map.clean_slice(raw, doc.text, c.source_start, c.source_end)


# -- tables ---------------------------------------------------------------------------------------------
def test_csv_rows_whole_and_header_in_every_chunk():
    doc = load(DATA / "readings.csv")
    assert doc.metadata["format"] == "table" and doc.metadata["rows"] == 3
    assert [doc.text[a:b] for a, b in doc.metadata["units"]][2] == 'Feb,280,"storm on the 3rd\nlamp relit"'
    chunks = chunkwise.chunk(DATA / "readings.csv", max_tokens=6, tokenizer="words")
    assert len(chunks) > 1 and {c.strategy for c in chunks} == {"auto:sentence"}
    assert chunks[0].text.startswith("month,hours,notes") and chunks[0].context is None
    assert all(c.context == "month,hours,notes" for c in chunks[1:])
    assert any("storm on the 3rd\nlamp relit" in c.text for c in chunks)  # the quoted line break stays in its row


def test_tsv_and_the_header_survive_a_context_mode():
    doc = load(DATA / "readings.tsv")
    chunks = get_strategy("auto", max_tokens=3, tokenizer="words").chunk(doc)
    assert [c.text for c in chunks] == ["month\thours", "Jan\t310", "Feb\t280"]
    contextualize(doc, chunks, "headings")
    assert chunks[1].context == "readings.tsv\nmonth\thours"  # the title from the mode, then the header


@st.composite
def _tables(draw):
    field = st.text(st.sampled_from(list('ab ,"\n7é')), max_size=8)
    width = draw(st.integers(1, 4))
    header = [f"col{i}" for i in range(width)]
    rows = draw(st.lists(st.lists(field, min_size=width, max_size=width), min_size=1, max_size=25))
    # every row holds a word: a row of punctuation alone is junk that the chunk rules merge into a neighbour
    rows = [[f"r{i}{r[0]}", *r[1:]] for i, r in enumerate(rows)]
    out = io.StringIO()
    csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"]))).writerows([header, *rows])
    return out.getvalue(), header


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tables(), st.integers(6, 40))
def test_generated_csv_rows_match_the_csv_module_and_chunks_keep_invariants(table, max_tokens):
    raw, header = table
    doc = load_bytes(raw.encode("utf-8"), source="t.csv", name="t.csv")
    text = raw.replace("\r\n", "\n")
    assert doc.text == text
    spans = row_spans(doc.text)
    assert [next(csv.reader(io.StringIO(text[a:b]))) for a, b in spans] == list(csv.reader(io.StringIO(text)))
    tok = resolve_tokenizer("words")
    chunks = get_strategy("auto", max_tokens=max_tokens, tokenizer="words").chunk(doc)
    _check_chunks(doc, chunks, max_tokens, tok)
    head = ",".join(header)
    cap = max_chars_for(max_tokens)  # the character cap every strategy keeps beside the token cap
    fits = all(tok.count(doc.text[a:b]) <= max_tokens and b - a <= cap for a, b in spans)
    starts = {a + len(doc.text[a:b]) - len(doc.text[a:b].lstrip()) for a, b in spans}  # chunks are trimmed
    for c in chunks:
        assert c.text.startswith(head) or c.context == head
        if fits:  # every row fits: chunks begin at a row
            assert c.start in starts
        assert (c.source_start, c.source_end) == doc.source_map.to_source(c.start, c.end)


def test_markdown_table_split_carries_its_header():
    rows = "\n".join(f"| {m} | {h} |" for m, h in zip(["Jan", "Feb", "Mar", "Apr", "May", "Jun"], range(300, 306)))
    text = "# Hours\n\n| month | hours |\n|---|---|\n" + rows + "\n"
    for chunks in (
        chunkwise.chunk_text(text, max_tokens=12, tokenizer="words"),
        get_strategy("auto", max_tokens=12, tokenizer="words").chunk(
            load_bytes(text.encode(), source="h.md", name="h.md")
        ),
    ):
        later = [c for c in chunks if c.text.startswith("| ") and "month" not in c.text]
        assert later and all(c.context == "| month | hours |\n|---|---|" for c in later)
        assert all(c.context is None for c in chunks if "month" in c.text)


def _html_page(tables: list[tuple[list[str], list[list[str]]]], thead: bool) -> str:
    parts = ["<html><head><title>Rain</title></head><body><article><h1>Rain by station</h1>"]
    parts.append("<p>" + "The stations measured the rain over one week in the valley. " * 6 + "</p>")
    for header, rows in tables:
        head = "<tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr>"
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
        parts.append(
            f"<table><thead>{head}</thead><tbody>{body}</tbody></table>" if thead else f"<table>{head}{body}</table>"
        )
        parts.append("<p>" + "What the table shows, said once more in words for the reader. " * 3 + "</p>")
    return "".join(parts) + "</article></body></html>"


def _check_table_context(doc, chunks) -> None:
    """Every chunk that starts among a table's rows after its header carries exactly that header; a chunk
    holding the header, or starting outside every table, carries none."""
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
    for c in chunks:
        table = next((t for t in doc.tables if t.header_end <= c.start < t.end), None)
        if table is None or (c.start <= table.header_start and table.header_end <= c.end):
            assert c.context is None, c.text[:40]
        else:
            assert c.context == doc.text[table.header_start : table.header_end], c.text[:40]


@pytest.mark.parametrize("mode", ["main", "full"])
@pytest.mark.parametrize("thead", [True, False])
def test_html_table_split_carries_its_header_in_every_chunk(mode, thead):
    rain = [[f"Station {i}", f"{i * 3} mm", "calm weather, light wind from the west"] for i in range(40)]
    wind = [[f"Mast {i}", f"{i} m/s"] for i in range(30)]
    page = _html_page([(["Station", "Rain", "Notes"], rain), (["Mast", "Wind"], wind)], thead)
    doc = load_bytes(page.encode(), source="rain.html", name="rain.html", html_mode=mode)
    assert [doc.text[t.header_start : t.header_end] for t in doc.tables] == ["Station | Rain | Notes", "Mast | Wind"]
    chunks = get_strategy("auto", max_tokens=48).chunk(doc)
    _check_table_context(doc, chunks)
    later = [c for c in chunks if c.context]
    assert {c.context for c in later} == {"Station | Rain | Notes", "Mast | Wind"}
    assert all(c.context for c in chunks if re.match(r"(Station|Mast) \d", c.text))  # every piece of a body
    assert all(c.embed_text.startswith(c.context) for c in later)  # what is embedded and indexed


def test_html_table_header_from_the_cli_and_the_python_api(tmp_path, capsys):
    rows = [[f"Station {i}", f"{i * 3} mm"] for i in range(40)]
    path = tmp_path / "rain.html"
    path.write_text(_html_page([(["Station", "Rain"], rows)], thead=True), encoding="utf-8")
    assert main(["chunk", str(path), "--max-tokens", "48"]) == 0
    cli = [json.loads(line) for line in capsys.readouterr()[0].splitlines()]
    api = chunkwise.chunk_file(path, max_tokens=48)
    assert [(r["start"], r["end"], r["context"]) for r in cli] == [(c.start, c.end, c.context) for c in api]
    assert sum(r["context"] == "Station | Rain" for r in cli) >= 2


def test_html_row_too_long_to_be_a_header_is_none():
    prose = "A first row of running text, as a layout table holds, and no column names at all. " * 8
    page = _html_page([([prose], [[f"cell {i}"] for i in range(30)])], thead=False)
    doc = load_bytes(page.encode(), source="layout.html", name="layout.html", html_mode="full")
    assert doc.tables == []
    assert all(c.context is None for c in get_strategy("auto", max_tokens=48).chunk(doc))


_cell = st.text(alphabet="abcdefghij klmno 0123", min_size=1, max_size=24).map(str.strip).filter(bool)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tables=st.lists(
        st.integers(1, 4).flatmap(
            lambda n: st.tuples(
                st.lists(_cell, min_size=n, max_size=n), st.lists(st.lists(_cell, min_size=n, max_size=n), max_size=25)
            )
        ),
        min_size=1,
        max_size=3,
    ),
    thead=st.booleans(),
    mode=st.sampled_from(["main", "full"]),
    max_tokens=st.sampled_from([16, 40, 100]),
    strategy=st.sampled_from(["auto", "recursive", "sentence"]),
)
def test_generated_html_tables_keep_offsets_caps_and_their_header(tables, thead, mode, max_tokens, strategy):
    doc = load_bytes(_html_page(tables, thead).encode(), source="t.html", name="t.html", html_mode=mode)
    chunks = get_strategy(strategy, max_tokens=max_tokens).chunk(doc)
    _check_chunks(doc, chunks, max_tokens, resolve_tokenizer("minilm"))
    _check_table_context(doc, chunks)
    assert len(doc.tables) == sum(bool(rows) for _, rows in tables)
    for t in doc.tables:  # a table is its header row and the rows after it, one line each
        assert t.start == t.header_start < t.header_end < t.end and doc.text[t.header_end] == "\n"


def test_large_data_file_left_out_of_a_folder_in_the_skip_line(capsys, tmp_path, monkeypatch):
    import chunkwise.formats as formats

    monkeypatch.setattr(formats, "DATA_MAX_BYTES", 100)
    shutil.copy(DATA / "readings.csv", tmp_path / "small.csv")
    (tmp_path / "big.csv").write_text("a,b\n" + "1,2\n" * 100, encoding="utf-8")
    (tmp_path / "big.tsv").write_text("a\tb\n" + "1\t2\n" * 100, encoding="utf-8")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    code = main(["chunk", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0
    assert {Path(json.loads(line)["source"]).name for line in out.splitlines()} == {"small.csv"}
    skip = [line for line in err.splitlines() if "skipped" in line]
    assert len(skip) == 1
    assert "1 file of unsupported types: .png 1; 2 data files over 100 bytes: .csv 1, .tsv 1" in skip[0]
    code = main(["chunk", str(tmp_path), "--include", "*.csv"])  # naming the type reads it anyway
    out, _ = capsys.readouterr()
    assert {Path(json.loads(line)["source"]).name for line in out.splitlines()} == {"small.csv", "big.csv"}


# -- content sniffing and auto on plain text ---------------------------------------------------------------
@pytest.mark.parametrize(
    "name,fmt",
    [("Makefile", "text"), ("deploy", "text"), ("config.txt", "text"), ("NOTES", "markdown")],
)
def test_content_sniffing(name, fmt):
    data = (DATA / name).read_bytes()
    assert detect_format(data, name) == fmt
    doc = load(DATA / name)
    assert doc.metadata["format"] == fmt
    if fmt == "text":
        assert doc.text.splitlines() == data.decode().splitlines()  # code and data are never re-flowed
        assert not doc.sections


def test_notebook_named_txt_is_a_notebook():
    data = (DATA / "notebook.ipynb").read_bytes()
    assert detect_format(data, "export.txt") == "notebook" and detect_format(data, None) == "notebook"


def test_markdown_detection_from_text():
    assert looks_like_markdown("# Guide\n\nSee [the docs](https://x.org).\n\n## Install\n\n- pip\n")
    assert not looks_like_markdown((DATA / "Makefile").read_text())
    assert not looks_like_markdown((DATA / "deploy").read_text())
    assert not looks_like_markdown('{"a": "# b", "c": "## d"}')
    assert not looks_like_markdown("# comment\nimport os\nimport sys\n# another\ndef main():\n    pass\n")
    assert not looks_like_markdown("A plain paragraph of prose.\n\nAnother paragraph, with a # sign.")
    rst = "Guide\n=====\n\nUse :func:`run` and ``x``.\n\n- one\n- two\n\n.. note::\n\n   Careful::\n\n       code\n"
    assert not looks_like_markdown(rst)  # setext-like titles and lists are rst's too
    yaml = "# Settings\nname: lamp\nhours: 310\n# Owners\nowners:\n  - ann\n  - bob\nlit: true\n"
    assert not looks_like_markdown(yaml)
    assert not looks_like_markdown('"""Docs."""\n# Setup\nimport os\nimport sys\n\n# Run\n- x\n')
    assert looks_like_markdown("Guide\n=====\n\nIntro with **bold** text.\n\n- one\n- two\n")  # setext, no rst


def _cli_chunks(capsys, path: Path) -> list[tuple[int, int, list[str]]]:
    code = main(["chunk", str(path), "--max-tokens", "40"])
    out, _ = capsys.readouterr()
    assert code == 0
    return [(r["start"], r["end"], r["section"]) for r in map(json.loads, out.splitlines())]


def test_chunk_text_gives_the_cli_chunks_for_markdown(capsys):
    cli = _cli_chunks(capsys, DATA / "guide.md")
    assert len(cli) > 2 and all(s for _, _, s in cli)
    text = (DATA / "guide.md").read_text(encoding="utf-8")
    chunks = chunkwise.chunk_text(text, max_tokens=40)
    assert [(c.start, c.end, c.section) for c in chunks] == cli
    assert {c.strategy for c in chunks} == {"auto:markdown"}


def test_langchain_adapter_gives_the_cli_chunks_for_markdown(capsys):
    from langchain_core.documents import Document as LCDocument

    from chunkwise.integrations.langchain import ChunkwiseTextSplitter

    cli = _cli_chunks(capsys, DATA / "guide.md")
    text = (DATA / "guide.md").read_text(encoding="utf-8")
    lc = ChunkwiseTextSplitter(max_tokens=40).split_documents([LCDocument(page_content=text)])
    assert [(d.metadata["start"], d.metadata["end"], d.metadata["section"]) for d in lc] == [
        (a, b, " > ".join(s)) for a, b, s in cli
    ]


def test_llamaindex_adapter_gives_the_cli_chunks_for_markdown(capsys):
    from llama_index.core.schema import Document as LIDocument

    from chunkwise.integrations.llamaindex import ChunkwiseNodeParser

    cli = _cli_chunks(capsys, DATA / "guide.md")
    text = (DATA / "guide.md").read_text(encoding="utf-8")
    nodes = ChunkwiseNodeParser.from_defaults(max_tokens=40).get_nodes_from_documents([LIDocument(text=text)])
    assert [(n.metadata["start"], n.metadata["end"], n.metadata["section"]) for n in nodes] == [
        (a, b, " > ".join(s)) for a, b, s in cli
    ]


# -- Office documents (the office extra) -------------------------------------------------------------------
def _docx(path: Path) -> Path:
    import docx

    d = docx.Document()
    d.core_properties.title = "Keeper handbook"
    d.add_heading("Keeper handbook", level=1)
    d.add_paragraph("Duties of the lighthouse keeper, day and night.")
    d.add_heading("Lamp", level=2)
    d.add_paragraph("Trim the wick.", style="List Bullet")
    d.add_paragraph("# not a heading: body text that starts with a hash")
    table = d.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "month", "hours"
    for m, h in [("Jan", "310"), ("Feb", "280"), ("Mar", "29|5")]:
        row = table.add_row()
        row.cells[0].text, row.cells[1].text = m, h
    d.add_heading("Log", level=2)
    d.add_paragraph("Write every lighting into the log.")
    d.save(path)
    return path


def _pptx(path: Path) -> Path:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    s = prs.slides.add_slide(prs.slide_layouts[1])
    s.shapes.title.text = "Lamp checks"
    body = s.placeholders[1].text_frame
    body.text = "Oil level"
    p = body.add_paragraph()
    p.text, p.level = "Wick trimmed", 1
    s.notes_slide.notes_text_frame.text = "Say why the wick matters."
    s = prs.slides.add_slide(prs.slide_layouts[5])
    s.shapes.title.text = "Hours"
    shape = s.shapes.add_table(3, 2, Inches(1), Inches(1), Inches(4), Inches(2))
    for r, row in enumerate([("month", "hours"), ("Jan", "310"), ("Feb", "280")]):
        for k, value in enumerate(row):
            shape.table.cell(r, k).text = value
    prs.slides.add_slide(prs.slide_layouts[6])  # blank: no title, no text
    s = prs.slides.add_slide(prs.slide_layouts[6])
    s.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = "Questions?"
    prs.save(path)
    return path


def test_docx_headings_lists_and_tables(tmp_path):
    doc = load(_docx(tmp_path / "handbook.docx"))
    assert doc.metadata["format"] == "docx" and doc.title == "Keeper handbook"
    assert [s.path for s in doc.sections] == [
        ("Keeper handbook",),
        ("Keeper handbook", "Lamp"),
        ("Keeper handbook", "Log"),
    ]
    assert "- Trim the wick." in doc.text and "\\# not a heading" in doc.text
    assert "| month | hours |\n|---|---|\n| Jan | 310 |" in doc.text and "| Mar | 29\\|5 |" in doc.text
    assert len(doc.tables) == 1
    chunks = chunkwise.chunk(tmp_path / "handbook.docx", max_tokens=12, tokenizer="words")
    _check_chunks(doc, chunks, 12, resolve_tokenizer("words"))
    assert {c.strategy for c in chunks} == {"auto:markdown"} and all(c.section for c in chunks)
    assert all(c.source_start is None for c in chunks)
    rows = [c for c in chunks if c.text.startswith("| Feb") or c.text.startswith("| Mar")]
    assert rows and all(c.context == "| month | hours |\n|---|---|" for c in rows)


def test_pptx_slides_as_sections_and_pages(tmp_path):
    doc = load(_pptx(tmp_path / "talk.pptx"))
    assert doc.metadata["format"] == "pptx" and [p.number for p in doc.pages] == [1, 2, 4]
    assert [s.path for s in doc.sections] == [("Lamp checks",), ("Hours",), ("Slide 4",)]
    assert "- Oil level\n  - Wick trimmed" in doc.text and "Notes: Say why the wick matters." in doc.text
    assert "| month | hours |\n|---|---|\n| Jan | 310 |\n| Feb | 280 |" in doc.text
    chunks = get_strategy("auto", max_tokens=50, tokenizer="words").chunk(doc)
    _check_chunks(doc, chunks, 50, resolve_tokenizer("words"))
    assert [(c.page_start, c.section) for c in chunks] == [(1, ["Lamp checks"]), (2, ["Hours"]), (4, ["Slide 4"])]


def test_broken_office_file_is_one_line(capsys, tmp_path):
    (tmp_path / "fake.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (tmp_path / "fake.pptx").write_text("plain text", encoding="utf-8")
    shutil.copy(DATA / "readings.csv", tmp_path / "readings.csv")
    code = main(["chunk", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("chunkwise: error:")]
    assert len(errors) == 2
    assert any("fake.docx: not a readable Word document" in line for line in errors)
    assert any("fake.pptx: not a readable PowerPoint presentation" in line for line in errors)
    assert {Path(json.loads(line)["source"]).name for line in out.splitlines()} == {"readings.csv"}


def test_without_the_office_extra(capsys, tmp_path, monkeypatch):
    import sys

    import chunkwise.formats as formats

    folder = tmp_path / "docs"
    folder.mkdir()
    _docx(folder / "handbook.docx")
    shutil.copy(DATA / "guide.md", folder / "guide.md")
    monkeypatch.setitem(sys.modules, "docx", None)  # import docx now fails, as without the extra
    monkeypatch.setattr(formats, "_office_ready", lambda ext: False)
    code = main(["chunk", str(folder)])
    out, err = capsys.readouterr()
    assert code == 0 and "skipped 1 file of unsupported types: .docx 1" in err
    assert {Path(json.loads(line)["source"]).name for line in out.splitlines()} == {"guide.md"}
    with pytest.raises(InputError, match=r"needs the office extra \(pip install 'chunkwise\[office\]'\)"):
        load(folder / "handbook.docx")


def test_heading_before_a_block_too_big_for_one_chunk_leads_its_first_piece():
    # a fence of 6 paragraphs of 24 words: its first piece fills a 26-word chunk, with no room for the heading
    block = "\n\n".join("\n".join(f"v{k}_{i} = f ( {i} )" for i in range(4)) for k in range(6))
    text = "# Guide\n\nIntro line.\n\n## Iterative coding loop example\n\n```python\n" + block + "\n```\n"
    chunks = chunkwise.chunk_text(text, max_tokens=26, tokenizer="words")
    _check_chunks(Document(text), chunks, 26, resolve_tokenizer("words"))
    for c in chunks:
        assert not c.text.rstrip().split("\n")[-1].startswith("#")  # no chunk ends on a heading
    lead = next(c for c in chunks if "## Iterative" in c.text)
    assert "v0_0 = f ( 0 )" in lead.text
    assert sum(c.token_count == 24 for c in chunks) >= 4  # the rest of the block is cut as before


def test_notebook_from_standard_input_and_cells_in_the_table_output(capsys, monkeypatch):
    data = (DATA / "notebook.ipynb").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    code = main(["chunk", "-", "--max-tokens", "40", "--tokenizer", "words"])
    out, _ = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and rows[0]["strategy"] == "auto:markdown" and rows[0]["page_start"] == 1
    code = main(["chunk", str(DATA / "notebook.ipynb"), "--max-tokens", "40", "--tokenizer", "words", "-f", "table"])
    out, _ = capsys.readouterr()
    assert code == 0 and "cell 1" in out and "cell 3-4" in out
