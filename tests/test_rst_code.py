"""reStructuredText (docutils titles, Markdown packing) and source code (tree-sitter ``code`` strategy).

The checks are independent of the code under test where they can be: an rst title at a chunk's end is found
by its adornment in the chunk text, a code chunk's start is checked against Python's own ``ast`` statement
positions, and the invariants (exact slices, caps, counts) are counted again here.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_invariants import check

import chunkwise
from chunkwise.cli import main
from chunkwise.document import Document
from chunkwise.formats import code as code_format
from chunkwise.formats import detect_format, iter_documents, load, load_bytes
from chunkwise.formats.rst import rst_blocks
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies import get_strategy

DATA = Path(__file__).parent / "data"
RST = DATA / "rst" / "guide.rst"
PY = DATA / "code" / "shapes.py"
_ADORN = re.compile(r"([!-/:-@\[-`{-~])\1+")


def ends_on_title(text: str) -> bool:
    """A chunk whose last two lines are a title and its underline (what a reader sees as a heading)."""
    lines = [ln.rstrip() for ln in text.rstrip().split("\n")]
    return len(lines) >= 2 and bool(_ADORN.fullmatch(lines[-1])) and len(lines[-1]) >= len(lines[-2].strip()) > 0


# -- reStructuredText ---------------------------------------------------------------------------------------
def test_rst_sections_come_from_the_real_titles():
    doc = load(RST)
    assert doc.metadata["format"] == "rst"
    assert [s.path for s in doc.sections] == [
        ("User Guide",),
        ("User Guide", "Installation"),
        ("User Guide", "Installation", "Configuration"),
        ("User Guide", "Installation", "Advanced topics"),
        ("User Guide", "Reference"),
    ]  # not "Not a title" (code block), "Fake heading" (literal block), nor the transition
    assert doc.title == "User Guide"
    for s in doc.sections:
        head = doc.text[s.heading_start : s.heading_end]
        assert s.path[-1] in head and _ADORN.fullmatch(head.split("\n")[-1])


def test_rst_roles_and_references_read_as_text_and_map_back_to_the_file():
    raw = RST.read_text()
    doc = load(RST)
    assert "how the app object is built with\ncreate_app and where the docs live" in doc.text
    assert ":ref:" not in doc.text and ".. _guide:" not in doc.text and "<https://" not in doc.text
    assert ":class:" not in doc.text and "mypkg.Signal" in doc.text
    assert "$ pip install mypkg" in doc.text  # code untouched
    for c in chunkwise.chunk_file(RST, max_tokens=40):
        assert doc.text[c.start : c.end] == c.text
        src = raw[c.source_start : c.source_end]
        assert c.text.split()[0] in src and c.text.split()[-1] in src


@pytest.mark.parametrize("max_tokens", [30, 60, 256])
def test_rst_chunks_carry_sections_never_end_on_a_title_and_keep_directives_whole(max_tokens):
    chunks = chunkwise.chunk_file(RST, max_tokens=max_tokens)
    assert {c.strategy for c in chunks} == {"auto:rst"}
    assert all(c.section for c in chunks)
    if max_tokens >= 60:  # at 30, "User Guide" and its two 10-token rules leave 6 tokens: too few to lead text
        assert not [c.text for c in chunks if ends_on_title(c.text)]
    note = next(c for c in chunks if ".. note::" in c.text)
    assert "installer says so." in note.text  # the directive with its body
    if max_tokens >= 60:
        code = next(c for c in chunks if ".. code-block:: bash" in c.text)
        assert "$ mypkg --version" in code.text and "Not a title" in code.text
        assert any("[mypkg]" in c.text and "Fake heading" in c.text and "Settings are read" in c.text for c in chunks)


def test_rst_blocks_keep_directive_bodies_with_their_directive():
    doc = load(RST)
    blocks = rst_blocks(doc.text)
    kinds = [(b.kind, doc.text[b.start : b.end].split("\n")[0]) for b in blocks]
    assert ("code", ".. code-block:: bash") in kinds
    note = next(b for b in blocks if doc.text[b.start : b.end].startswith(".. note::"))
    assert doc.text[note.start : note.end].endswith("installer says so.")


def test_malformed_rst_is_one_line_and_the_rest_is_read(tmp_path, capsys):
    (tmp_path / "good.rst").write_text(RST.read_text())
    (tmp_path / "bad.rst").write_text((DATA / "rst" / "broken.rst").read_text())
    code = main(["chunk", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    sources = {json.loads(line)["source"].rsplit("/", 1)[-1] for line in out.splitlines()}
    assert sources == {"good.rst", "bad.rst"}
    lines = [ln for ln in err.splitlines() if "malformed reStructuredText" in ln]
    assert len(lines) == 1 and "bad.rst" in lines[0] and "Inconsistent title style" in lines[0]
    assert "Traceback" not in err


def test_rst_strategy_on_a_plain_string_finds_the_titles():
    text = "Title\n=====\n\nBody text here.\n\nPart\n----\n\nMore text.\n"
    chunks = chunkwise.chunk_text(text, "rst", max_tokens=12)
    assert [c.section for c in chunks] == [["Title"], ["Title", "Part"]]


_RST_PIECES = st.sampled_from(
    [
        "Title\n=====\n\n",
        "Sub\n---\n\n",
        "=====\nOver\n=====\n\n",
        "A paragraph of words that goes on for a while. Another sentence follows.\n\n",
        ".. code-block:: python\n\n   def f(x):\n       return x\n\n",
        ".. note::\n\n   Mind the :ref:`gap <gap>`.\n\n",
        "Literal::\n\n    raw text\n    ----\n\n",
        "- item one\n- item two\n\n",
        ".. _label:\n\n",
        "   indented quote\n\n",
        "Über ünïcödé 日本語\n\n",
        "\n",
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_RST_PIECES, min_size=1, max_size=25), max_tokens=st.sampled_from([8, 20, 64]))
def test_rst_invariants(pieces, max_tokens):
    text = "".join(pieces)
    if not text.strip():
        return
    for name in ("rst", "auto"):
        doc = Document(text, metadata={"format": "rst"})
        chunks = get_strategy(name, max_tokens=max_tokens).chunk(doc)
        check(text, chunks, max_tokens, "minilm")


def test_rst_loader_invariants_on_the_sample():
    doc = load(RST)
    for m in (10, 50, 200):
        check(doc.text, get_strategy("auto", max_tokens=m).chunk(doc), m, "minilm")


# -- source code --------------------------------------------------------------------------------------------
def _statement_starts(src: str) -> set[int]:
    """Offsets where a Python statement, a decorator or a comment line starts (Python's own parser)."""
    starts = [0] + [m.end() for m in re.finditer("\n", src)]
    out = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.stmt | ast.ExceptHandler | ast.match_case):
            line, col = (
                (node.pattern.lineno, node.pattern.col_offset - 5)
                if isinstance(node, ast.match_case)
                else (node.lineno, node.col_offset)
            )
            out.add(starts[line - 1] + col)
            for dec in getattr(node, "decorator_list", []):
                out.add(starts[dec.lineno - 1] + dec.col_offset - 1)
    for m in re.finditer(r"(?m)^[ \t]*(#|(?:else|elif|finally)\b)", src):  # comments; clauses ast does not place
        out.add(m.start(1))
    return out


@pytest.mark.parametrize("max_tokens", [16, 40, 80, 400])
def test_code_chunks_start_at_statements_and_name_their_definition(max_tokens):
    src = PY.read_text()
    doc = load(PY)
    assert doc.metadata["format"] == "code" and doc.metadata["language"] == "python"
    chunks = chunkwise.chunk_file(PY, max_tokens=max_tokens)
    assert {c.strategy for c in chunks} == {"auto:code"}
    starts = _statement_starts(src)
    tok = get_tokenizer("minilm")
    # a chunk starts inside a statement only when that statement alone is over the cap
    inside = [c.start for c in chunks if c.start not in starts]
    for pos in inside:
        a = max(x for x in starts if x < pos)
        line_end = src.index("\n", pos)
        assert tok.count(src[a:line_end]) > max_tokens or "\n\n" in src[a:pos], (pos, src[a:line_end])
    if max_tokens >= 40:
        assert inside == []
    check(src, chunks, max_tokens, "minilm")
    if max_tokens == 40:
        area = next(c for c in chunks if "def area(self)" in c.text)
        assert area.section == ["Rectangle", "area"]
        assert "# the area in square units" in area.text  # the comment above stays with its code
        assert '"""Width times height."""' in area.text  # and the docstring
        init = next(c for c in chunks if "def __init__" in c.text)
        assert init.section[0] == "Rectangle"


def test_a_long_function_is_split_at_statements_with_its_signature_first():
    body = "".join(f"    value_{i} = compute(value_{i - 1}, {i}) + offset\n" for i in range(1, 120))
    src = f'def long_one(offset):\n    """Many steps."""\n    value_0 = 0\n{body}    return value_119\n'
    chunks = chunkwise.chunk_text(src, "code", max_tokens=64)
    assert len(chunks) > 3
    assert chunks[0].text.startswith("def long_one(offset):") and "Many steps" in chunks[0].text
    starts = _statement_starts(src)
    assert all(c.start in starts for c in chunks)
    assert all(c.section == ["long_one"] for c in chunks)
    check(src, chunks, 64, "minilm")


def _paragraphs(n: int) -> str:
    return "\n\n".join(
        f"    Paragraph {i} says what the function does in plain words, at some length, so that\n"
        f"    several of them make a docstring longer than one chunk; it mentions item {i}."
        for i in range(n)
    )


@pytest.mark.parametrize("max_tokens", [48, 96, 200])
def test_a_docstring_longer_than_a_chunk_is_cut_at_its_paragraphs_and_the_code_after_starts_a_chunk(max_tokens):
    src = (
        "import os\n\n\n"
        f'def documented(path):\n    """Read a file.\n\n{_paragraphs(12)}\n\n'
        '    :param path: where the file is.\n    :returns: its text.\n    """\n'
        "    with open(path) as f:\n        return f.read()\n\n\n"
        "def after():\n    return os.sep\n"
    )
    chunks = chunkwise.chunk_text(src, "code", max_tokens=max_tokens)
    check(src, chunks, max_tokens, "minilm")
    starts = _statement_starts(src)
    doc_start, doc_end = src.index('"""Read'), src.index('"""\n    with') + 3
    for c in chunks:
        if c.start not in starts:  # only inside the docstring, and then at a paragraph or a field line
            assert doc_start < c.start < doc_end, c.text[:40]
            before = src[src.rfind("\n", 0, c.start - 1) : c.start]
            assert before.strip() == "" and (before.count("\n") >= 1), c.text[:40]
            assert c.text.startswith(("Paragraph", ":param", ":returns")), c.text[:40]
    with_stmt = src.index("with open(path)")
    assert any(c.start == with_stmt for c in chunks)  # the first statement after the docstring starts a chunk
    assert not any(c.start == doc_end - 3 for c in chunks)  # nor do the closing quotes
    assert sum(c.start not in starts for c in chunks) >= 1
    assert all(c.section == ["documented"] for c in chunks if src.index("def documented") <= c.start < with_stmt)


def test_the_closing_quotes_of_a_docstring_never_start_a_chunk():
    # the last paragraph fills a chunk exactly: the quotes take its last line along instead of joining the code
    for n in range(4, 30):
        src = f'def f():\n    """{"word " * n}\n\n    {"more " * n}\n    """\n    x = 1\n    return x\n'
        chunks = chunkwise.chunk_text(src, "code", max_tokens=16)
        check(src, chunks, 16, "minilm")
        closing = src.rindex('"""')
        assert not any(c.start == closing for c in chunks), n
        assert any(c.text.startswith("x = 1") for c in chunks), n


@pytest.mark.parametrize(
    ("name", "language", "section", "needle"),
    [
        ("server.js", "javascript", ["Router", "add"], "add(path, handler)"),
        ("stack.go", "go", ["Push"], "func (s *Stack) Push"),
    ],
)
def test_other_languages_by_their_extension(name, language, section, needle):
    path = DATA / "code" / name
    assert load(path).metadata["language"] == language
    chunks = chunkwise.chunk_file(path, max_tokens=24)
    hit = next(c for c in chunks if needle in c.text)
    assert hit.section == section
    assert hit.text.lstrip().startswith(("//", needle.split("(")[0]))
    check(path.read_text(), chunks, 24, "minilm")


def test_language_from_content_and_from_the_extension():
    assert code_format.guess_language(PY.read_text()) == "python"
    assert code_format.guess_language((DATA / "code" / "stack.go").read_text()) == "go"
    assert code_format.guess_language("just some words\nand more words") is None
    assert detect_format(b"x = 1\n", "a.py") == "code" and detect_format(b"x\n", "a.rst") == "rst"


def test_the_code_strategy_on_a_string_guesses_the_language():
    chunks = chunkwise.chunk_text(PY.read_text(), "code", max_tokens=40)
    assert any(c.section == ["Rectangle", "area"] for c in chunks)


def test_without_the_extra_code_falls_back_to_recursive_code_rules_and_says_so_once(monkeypatch):
    monkeypatch.setattr(code_format, "parser_for", lambda language: None)
    code_format.parse_code.cache_clear()
    monkeypatch.setattr(code_format, "_warned", set())
    src = PY.read_text()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = chunkwise.chunk_text(src, "code", language="python", max_tokens=40)
            chunkwise.chunk_text(src, "code", language="python", max_tokens=40)
    finally:
        code_format.parse_code.cache_clear()
    said = [str(w.message) for w in caught if "recursive rules" in str(w.message)]
    assert len(said) == 1 and "pip install 'chunkwise[code]'" in said[0]
    want = chunkwise.chunk_text(src, "recursive", separators="code", max_tokens=40)
    assert [(c.start, c.end) for c in got] == [(c.start, c.end) for c in want]


def test_auto_without_the_extra_labels_code_chunks_by_the_recursive_rules_that_cut_them(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(code_format, "parser_for", lambda language: None)
    code_format.parse_code.cache_clear()
    monkeypatch.setattr(code_format, "_warned", set())
    (tmp_path / "shapes.py").write_text(PY.read_text())
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            chunks = chunkwise.chunk_text(PY.read_text(), max_tokens=40)
        assert main(["chunk", "--code", str(tmp_path), "--max-tokens", "40"]) == 0
    finally:
        code_format.parse_code.cache_clear()
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {c.strategy for c in chunks} == {"auto:recursive"} == {r["strategy"] for r in rows}
    want = chunkwise.chunk_text(PY.read_text(), "recursive", separators="code", max_tokens=40)
    assert (
        [(c.start, c.end) for c in chunks] == [(c.start, c.end) for c in want] == [(r["start"], r["end"]) for r in rows]
    )
    assert any("pip install 'chunkwise[code]'" in str(w.message) for w in caught)


def test_malformed_code_is_one_line_and_still_chunked(tmp_path, capsys):
    (tmp_path / "broken.py").write_text((DATA / "code" / "broken.py").read_text())
    (tmp_path / "shapes.py").write_text(PY.read_text())
    code = main(["chunk", "--code", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["source"].rsplit("/", 1)[-1] for r in rows} == {"broken.py", "shapes.py"}
    assert any("def after" in r["text"] for r in rows)
    lines = [ln for ln in err.splitlines() if "syntax error" in ln]
    assert len(lines) == 1 and "broken.py" in lines[0] and "line 5" in lines[0]


def test_folders_read_code_only_when_asked(tmp_path, capsys):
    (tmp_path / "guide.rst").write_text(RST.read_text())
    (tmp_path / "shapes.py").write_text(PY.read_text())
    (tmp_path / "app.ts").write_text("export function hello(name: string): string {\n  return name;\n}\n")
    assert main(["chunk", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert {json.loads(ln)["source"].rsplit("/", 1)[-1] for ln in out.splitlines()} == {"guide.rst"}
    assert "2 of them source code, read with --code" in err
    assert main(["chunk", "--code", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(ln) for ln in out.splitlines()]
    assert {r["source"].rsplit("/", 1)[-1] for r in rows} == {"guide.rst", "shapes.py", "app.ts"}
    assert {r["strategy"] for r in rows} == {"auto:rst", "auto:code"}
    assert any(r["section"] == ["hello"] for r in rows)  # TypeScript, not a video stream
    assert "skipped" not in err
    found = [s for s, d in iter_documents([tmp_path], include=["*.py"])]
    assert [Path(s).name for s in found] == ["shapes.py"]


def test_cli_and_python_api_give_the_same_code_chunks(capsys):
    assert main(["chunk", str(PY), "--max-tokens", "40"]) == 0
    cli = [json.loads(ln) for ln in capsys.readouterr()[0].splitlines()]
    api = chunkwise.chunk_text(PY.read_text(), "code", max_tokens=40)
    assert [(r["start"], r["end"], r["section"]) for r in cli] == [(c.start, c.end, c.section) for c in api]


_PY_PIECES = st.sampled_from(
    [
        "import os\n",
        "# a comment\n",
        "\n",
        "def f(a, b):\n    '''Doc.'''\n    return a + b\n",
        "class K:\n    x = 1\n\n    def m(self):\n        return self.x\n",
        "if True:\n    y = [i for i in range(10)]\nelse:\n    y = None\n",
        "s = 'ünïcödé 日本語 ' * 3\n",
        "@decorator\ndef g():\n    pass\n",
        "long = " + " + ".join(f"v{i}" for i in range(60)) + "\n",
        "def broken(:\n",
        'def d():\n    """Title.\n\n    '
        + "A paragraph of words here. " * 9
        + '\n\n    :param x: the x.\n    """\n    return 1\n',
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(_PY_PIECES, min_size=1, max_size=20),
    max_tokens=st.sampled_from([6, 16, 48, 128]),
    overlap=st.sampled_from([0, 8]),
)
def test_code_invariants(pieces, max_tokens, overlap):
    text = "".join(pieces)
    if not text.strip():
        return
    strategy = get_strategy("code", max_tokens=max_tokens, overlap=min(overlap, max_tokens // 2), language="python")
    chunks = strategy.chunk(Document(text))
    check(text, chunks, max_tokens, "minilm")


def test_markup_before_the_first_title_belongs_to_its_section():
    text = ":orphan:\n\n.. currentmodule:: mypkg\n\nGuide\n=====\n\nSome words about it.\n"
    doc = load_bytes(text.encode(), format="rst")
    chunks = get_strategy("auto", max_tokens=64).chunk(doc)
    assert [c.section for c in chunks] == [["Guide"]] and chunks[0].text.startswith(":orphan:")
    prose = "Some intro prose.\n\nGuide\n=====\n\nSome words about it.\n"  # prose before a title keeps no section
    assert [c.section for c in get_strategy("auto", max_tokens=8).chunk(load_bytes(prose.encode(), format="rst"))][
        0
    ] == []


def test_text_without_a_name_is_chunked_as_rst_or_code_like_the_file(capsys):
    from chunkwise.integrations.langchain import ChunkwiseTextSplitter

    src = PY.read_text()
    auto = chunkwise.chunk_text(src, max_tokens=40)
    assert {c.strategy for c in auto} == {"auto:code"}
    assert main(["chunk", str(PY), "--max-tokens", "40"]) == 0
    cli = [json.loads(ln) for ln in capsys.readouterr()[0].splitlines()]
    assert [(c.start, c.end) for c in auto] == [(r["start"], r["end"]) for r in cli]
    assert ChunkwiseTextSplitter(max_tokens=40).split_text(src) == [c.text for c in auto]
    text = "Title\n=====\n\nBody text here.\n\nPart\n----\n\n.. note::\n\n   More text.\n"
    rst = chunkwise.chunk_text(text, max_tokens=64)
    assert {c.strategy for c in rst} == {"auto:rst"} and rst[-1].section == ["Title", "Part"]
    setext = "Title\n=====\n\nSee [the docs](https://example.org).\n\nPart\n----\n\nMore.\n"  # Markdown
    assert {c.strategy for c in chunkwise.chunk_text(setext, max_tokens=64)} != {"auto:rst"}
    prose = "We define the plan. Then we import goods and class them by size.\n\n" * 5  # paragraphs: not flat
    assert {c.strategy for c in chunkwise.chunk_text(prose, max_tokens=64)} == {"auto:recursive"}


def test_code_overlap_repeats_the_end_of_the_chunk_before():
    src = PY.read_text()
    plain = chunkwise.chunk_text(src, "code", max_tokens=40)
    wide = chunkwise.chunk_text(src, "code", max_tokens=40, overlap=8)
    assert [c.end for c in wide] == [c.end for c in plain]
    assert any(w.start < p.start for w, p in zip(wide[1:], plain[1:]))
    assert all(w.start >= prev.start for w, prev in zip(wide[1:], wide))
    check(src, wide, 40, "minilm")
