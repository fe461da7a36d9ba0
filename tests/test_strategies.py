"""Behaviour of the classic strategies: what each one promises beyond the shared invariants."""

from __future__ import annotations

import random

import pytest
from conftest import CHROMA

from chunkwise import chunk
from chunkwise.document import Document, Section
from chunkwise.errors import ConfigError
from chunkwise.formats.markdown_blocks import markdown_blocks, markdown_sections
from chunkwise.segmentation.sentences import split_sentences
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies import get_strategy
from chunkwise.strategies.recursive import PRESETS, recursive_split, recursive_split_counted

PROSE = (
    "Dr. Smith arrived at 9 a.m. on Monday. He reviewed version 2.4.13 of the report, e.g. the tables. "
    "The results were clear: costs fell by 3.5 percent. Nobody expected that!\n\n"
    "The second paragraph is about something else entirely. It has three sentences. This is the third.\n\n"
    "Ein deutscher Absatz folgt am 3. Oktober. Er hat z. B. zwei Sätze.\n"
)


def words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


# -- fixed ------------------------------------------------------------------------------------------------
def test_fixed_windows_are_full_and_overlap_by_the_requested_tokens():
    text = words(1000)
    chunks = chunk(Document(text), "fixed", max_tokens=100, overlap=20, tokenizer="words")
    assert [c.token_count for c in chunks[:-1]] == [100] * (len(chunks) - 1)
    for prev, cur in zip(chunks, chunks[1:]):
        shared = text[cur.start : prev.end].split()
        assert len(shared) == 20
    assert chunks[-1].end == len(text)


def test_fixed_cl100k_counts_equal_tiktoken_and_never_exceed_the_cap():
    tok = get_tokenizer("cl100k")
    text = (PROSE * 30) + "unbelievablyunpronounceable" * 40 + " 🤖é中文" * 50
    chunks = chunk(Document(text), "fixed", max_tokens=64, overlap=8, tokenizer="cl100k")
    for c in chunks:
        assert c.token_count == len(tok.encoding.encode_ordinary(c.text)) <= 64
    # windows are nearly full: only the last, and those snapped back to a word boundary, are shorter
    assert sum(c.token_count for c in chunks) / len(chunks) > 56


def test_fixed_ends_between_words_when_a_boundary_is_near():
    text = " ".join(["internationalization"] * 300)
    chunks = chunk(Document(text), "fixed", max_tokens=50, tokenizer="cl100k")
    for c in chunks[:-1]:
        assert c.text.endswith("internationalization")


# -- sentence ---------------------------------------------------------------------------------------------
def test_sentence_chunks_hold_whole_sentences():
    text = PROSE * 5
    sentences = set(split_sentences(text))
    chunks = chunk(Document(text), "sentence", max_tokens=60, tokenizer="cl100k")
    starts = {a for a, _ in sentences}
    ends = {b for _, b in sentences}
    for c in chunks:
        assert c.start in starts and c.end in ends


def test_sentence_overlap_repeats_whole_trailing_sentences_within_the_budget():
    text = " ".join(f"Sentence number {i} is here." for i in range(60))
    tok = get_tokenizer("words")
    chunks = chunk(Document(text), "sentence", max_tokens=30, overlap=12, tokenizer="words")
    sentence_spans = split_sentences(text)
    ends = {b for _, b in sentence_spans}
    for prev, cur in zip(chunks, chunks[1:]):
        assert cur.start < prev.end, "no overlap"
        shared = text[cur.start : prev.end]
        assert tok.count(shared) <= 12
        # the shared part is whole sentences: 2 sentences of 5 words fit in 12 tokens, 3 do not
        assert tok.count(shared) == 10
        assert prev.end in ends


def test_sentence_longer_than_the_cap_is_split_not_emitted_over():
    long_sentence = "This sentence goes on " + "and on " * 200 + "until it ends."
    text = "Short one. " + long_sentence + " Short two."
    chunks = chunk(Document(text), "sentence", max_tokens=40, tokenizer="minilm")
    assert all(c.token_count <= 40 for c in chunks)
    assert chunks[0].text.startswith("Short one.")
    assert len(chunks) > 5


# -- recursive --------------------------------------------------------------------------------------------
def test_recursive_prefers_paragraphs_then_sentences():
    chunks = chunk(Document(PROSE), "recursive", max_tokens=45, tokenizer="cl100k")
    paragraphs = [p.strip() for p in PROSE.split("\n\n")]
    assert chunks[0].text == paragraphs[0] or paragraphs[0].startswith(chunks[0].text)
    for c in chunks:  # every chunk starts at a sentence start
        assert c.start in {a for a, _ in split_sentences(PROSE)}


def test_recursive_merges_small_neighbours_up_to_the_cap():
    text = "\n\n".join(words(10, i * 10) for i in range(20))  # 20 paragraphs of 10 words
    chunks = chunk(Document(text), "recursive", max_tokens=35, tokenizer="words")
    assert [c.token_count for c in chunks] == [30] * 6 + [20]


def test_recursive_min_tokens_merges_a_small_piece_with_a_neighbour():
    # a short paragraph before a long one: the hierarchy leaves it alone, min_tokens merges it forward
    long_paragraph = " ".join(f"Sentence {words(15, i * 15)}." for i in range(3))  # 3 sentences, 16 words
    text = words(5) + "\n\n" + long_paragraph
    plain = chunk(Document(text), "recursive", max_tokens=40, tokenizer="words")
    merged = chunk(Document(text), "recursive", max_tokens=40, min_tokens=10, tokenizer="words")
    assert [c.token_count for c in plain] == [5, 32, 16]
    assert [c.token_count for c in merged] == [37, 16]


def test_recursive_overlap_starts_at_a_word_inside_the_previous_chunk():
    text = "\n\n".join(words(30, i * 30) for i in range(6))
    chunks = chunk(Document(text), "recursive", max_tokens=40, overlap=5, tokenizer="words")
    for prev, cur in zip(chunks, chunks[1:]):
        assert prev.start < cur.start < prev.end
        assert text[cur.start - 1].isspace()
        assert len(text[cur.start : prev.end].split()) <= 5


def test_recursive_explicit_separators_keep_the_separator_at_the_start_like_langchain():
    text = "alpha beta. gamma delta. epsilon zeta. eta theta."
    spans = recursive_split(text, 0, len(text), get_tokenizer("words"), 3, separators=[".", " ", ""])
    pieces = [text[a:b] for a, b in spans]
    assert pieces[0] == "alpha beta"
    assert pieces[1].startswith(". gamma")
    end_spans = recursive_split(
        text, 0, len(text), get_tokenizer("words"), 3, separators=[".", " ", ""], keep_separator="end"
    )
    assert text[slice(*end_spans[0])] == "alpha beta."


def test_recursive_code_preset_cuts_before_top_level_definitions():
    code = (
        "import os\n\n"
        + "\n".join(f"def f{i}(x):\n    y = x + {i}\n    return y * 2\n" for i in range(8))
        + "\nclass K:\n    def m(self):\n        return 1\n"
    )
    chunks = chunk(Document(code), "recursive", max_tokens=30, tokenizer="cl100k", separators="code")
    assert all(c.token_count <= 30 for c in chunks)
    assert sum(c.text.startswith(("def ", "class ")) for c in chunks) >= len(chunks) - 1


def test_recursive_presets_and_bad_separators():
    assert set(PRESETS) == {"prose", "markdown", "code", "docstring"}
    with pytest.raises(ConfigError, match="preset"):
        chunk(Document("x"), "recursive", separators="poetry")
    with pytest.raises(ConfigError):
        chunk(Document("x"), "recursive", separators=[])
    with pytest.raises(ConfigError, match="keep_separator"):
        chunk(Document("x"), "recursive", keep_separator="middle")


def test_recursive_split_is_reusable_on_a_range_and_returns_exact_counts():
    tok = get_tokenizer("minilm")
    text = "prefix " + PROSE * 3 + " suffix"
    start, end = 7, 7 + len(PROSE) * 3
    spans, counts = recursive_split_counted(text, start, end, tok, 20)
    assert spans and all(start <= a < b <= end for a, b in spans)
    assert counts == [tok.count(text[a:b]) for a, b in spans]
    assert max(counts) <= 20


# -- markdown ---------------------------------------------------------------------------------------------
MD = """# Guide

Intro paragraph with some words.

## Install

```bash
# this is a comment, not a heading
pip install chunkwise
```

| option | meaning |
|--------|---------|
| a      | first   |
| b      | second  |

## Use
### Details
Text under details. More text under details.
"""


def test_markdown_sections_from_headings_not_from_code():
    sections = markdown_sections(MD)
    assert [s.path for s in sections] == [
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Use"),
        ("Guide", "Use", "Details"),
    ]
    assert sections[0].end == len(MD)
    assert MD[sections[1].heading_start : sections[1].heading_end] == "## Install"


def test_markdown_sections_handle_crlf_and_setext():
    text = "Title\r\n=====\r\n\r\nBody.\r\n\r\nSub\r\n---\r\nMore."
    sections = markdown_sections(text)
    assert [s.path for s in sections] == [("Title",), ("Title", "Sub")]
    assert text[sections[1].start :].startswith("Sub")


def test_markdown_chunks_keep_fence_and_table_whole_and_fill_sections():
    chunks = chunk(Document(MD), "markdown", max_tokens=40, tokenizer="cl100k")
    fence = MD[MD.index("```bash") : MD.index("```\n\n|") + 3]
    table = MD[MD.index("| option") : MD.index("| second  |") + len("| second  |")]
    assert any(fence in c.text for c in chunks)
    assert any(table in c.text for c in chunks)
    by_text = {c.text.splitlines()[0]: c.section for c in chunks}
    assert by_text["# Guide"] == ["Guide"]
    assert any(c.section == ["Guide", "Install"] for c in chunks)
    # a heading with only a sub-heading under it stays with that sub-heading
    assert any(c.text.startswith("## Use\n### Details") for c in chunks)


def test_markdown_never_crosses_a_heading():
    heading_starts = [b.start for b in markdown_blocks(MD) if b.kind == "heading"]
    for max_tokens in (500, 40, 12):
        for c in chunk(Document(MD), "markdown", max_tokens=max_tokens, tokenizer="cl100k"):
            for h in heading_starts:
                if c.start < h < c.end:
                    # only a heading-only parent may sit before a heading inside a chunk
                    assert all(line.startswith("#") for line in MD[c.start : h].strip().splitlines())


def test_markdown_splits_a_fence_too_big_with_the_code_rules():
    code = "```python\n" + "\n".join(f"def f{i}():\n    return {i}\n" for i in range(40)) + "```\n"
    chunks = chunk(Document("# Code\n\n" + code), "markdown", max_tokens=30, tokenizer="cl100k")
    assert all(c.token_count <= 30 for c in chunks)
    assert sum(c.text.startswith("def ") for c in chunks) >= len(chunks) - 2


def test_markdown_keeps_sections_of_a_loaded_document():
    text = "Intro.\n\nBody text."
    doc = Document(text, sections=[Section(0, len(text), ("From loader",), 1, 0, 0)])
    chunks = chunk(doc, "markdown", max_tokens=50, tokenizer="words")
    assert chunks[0].section == ["From loader"]


def test_markdown_blocks_classify_code_and_tables():
    kinds = [b.kind for b in markdown_blocks(MD)]
    assert kinds == ["heading", "text", "heading", "code", "table", "heading", "heading", "text"]


# -- shared -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fixed", "sentence", "recursive", "markdown"])
def test_parameter_errors_are_config_errors(name):
    with pytest.raises(ConfigError, match="max_tokens"):
        get_strategy(name, max_tokens=0).chunk("text")
    with pytest.raises(ConfigError, match="overlap"):
        get_strategy(name, max_tokens=10, overlap=10).chunk("text")
    with pytest.raises(ConfigError, match="has no parameter"):
        get_strategy(name, maximum=3)


@pytest.mark.parametrize("name", ["fixed", "sentence", "recursive", "markdown"])
def test_respect_sections_never_crosses_a_section(name):
    text = "# A\n\n" + "alpha " * 30 + "\n\n# B\n\n" + "beta " * 30
    sections = markdown_sections(text)
    doc = Document(text, sections=sections)
    chunks = chunk(doc, name, max_tokens=500, tokenizer="words", respect_sections=1)
    cut = sections[1].start
    assert all(c.end <= cut or c.start >= cut for c in chunks)
    assert {tuple(c.section) for c in chunks} == {("A",), ("B",)}


@pytest.mark.chroma
@pytest.mark.parametrize("name", ["fixed", "sentence", "recursive", "markdown"])
def test_counts_are_not_recounted_wrongly_on_real_text(name):
    text = (CHROMA / "corpora" / "wikitexts.md").read_text(encoding="utf-8")[:60000]
    tok = get_tokenizer("cl100k")
    chunks = chunk(Document(text), name, max_tokens=200, overlap=20, tokenizer="cl100k")
    assert [c.token_count for c in chunks] == [len(tok.encoding.encode_ordinary(c.text)) for c in chunks]


def test_markdown_heading_leads_the_first_piece_of_a_long_paragraph():
    text = "# Title\n\n" + " ".join(f"Sentence number {i} is here." for i in range(40)) + "\n"
    chunks = chunk(Document(text), "markdown", max_tokens=40, tokenizer="cl100k")
    assert chunks[0].text.startswith("# Title\n\nSentence number 0")
    assert all(c.token_count <= 40 for c in chunks)
    assert all(c.section == ["Title"] for c in chunks)


# -- the vectorised planning paths agree with the plain ones ------------------------------------------
@pytest.mark.parametrize("tokenizer", ["cl100k", "words", "chars"])
@pytest.mark.parametrize("overlap", [0, 12])
def test_sentence_packing_with_bound_counts_equals_packing_with_estimates(tokenizer, overlap):
    from chunkwise.segmentation.sentences import split_sentences
    from chunkwise.segmentation.token_map import TokenMap
    from chunkwise.segmentation.tokenizers import get_tokenizer
    from chunkwise.strategies.packing import fill as _pack

    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "Dr.", "3.5", "é", "中文。", "x" * 40]
    text = " ".join(rng.choice(words) + ("." if rng.random() < 0.2 else "") for _ in range(3000))
    tok = get_tokenizer(tokenizer)
    tm = TokenMap(text, tok)
    units = split_sentences(text)
    upper, lower = tm.bound_counts([b for _, b in units] + [a for a, _ in units])
    m = len(units)
    for max_tokens in (20, 64, 200):
        plain = _pack(units, tm.estimate, max_tokens, max_tokens * 16, overlap)
        counted = _pack(
            units, tm.estimate, max_tokens, max_tokens * 16, overlap, counted=(upper[:m].tolist(), lower[m:].tolist())
        )
        assert counted == plain


@pytest.mark.parametrize("tokenizer", ["cl100k", "words", "minilm"])
def test_recursive_vectorised_merge_equals_the_scalar_merge(tokenizer):
    from chunkwise.segmentation.token_map import TokenMap
    from chunkwise.segmentation.tokenizers import get_tokenizer
    from chunkwise.strategies import recursive as R

    rng = random.Random(4)
    vocab = ["one", "two", "three.", "x" * 30, "é"]
    paras = [
        "\n\n".join(" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 80))) for _ in range(3)) for _ in range(60)
    ]
    text = "\n".join(paras)
    tok = get_tokenizer(tokenizer)
    levels, keep = R._levels("prose")
    tm = TokenMap(text, tok)
    for max_tokens in (16, 50, 300):
        fast = R._Splitter(text, tok, max_tokens, levels, keep, tm, max_tokens * 16)
        slow = R._Splitter(text, tok, max_tokens, levels, keep, tm, max_tokens * 16)
        slow.tm = TokenMap(text, tok, lists=False)  # numpy offsets: merge takes the scalar path
        assert fast.split(0, len(text)) == slow.split(0, len(text))


# -- fenced code under the recursive presets -------------------------------------------------------------
CONSOLE_FENCE = (
    '```console\n$ uv run fastapi dev main.py\n\n<span style="color: green;">INFO</span>:     '
    "Uvicorn running on http://127.0.0.1:8000\n\nINFO:     Application startup complete.\n```"
)


@pytest.mark.parametrize("separators", ["prose", "markdown"])
@pytest.mark.parametrize("indent", ["", "    "])
def test_recursive_never_cuts_a_fence_that_fits(separators, indent):
    """A console session has blank lines inside its fence; the paragraph level cut there (26 of 391 fences
    of the FastAPI docs that fit 256 tokens came out in two chunks). An indented fence (inside ``!!! note``
    or a tab) is a fence too."""
    fence = "\n".join(indent + line if line else line for line in CONSOLE_FENCE.split("\n"))
    para = "Run the development server and open the page in the browser to see the result of the code."
    text = f"{para}\n\n{para}\n\n{fence}\n\n{para}\n\n{para}"
    tok = get_tokenizer("words")
    n_fence = tok.count(fence.strip())
    doc = Document(text)
    for max_tokens in range(n_fence, n_fence + 40, 3):
        chunks = chunk(doc, "recursive", max_tokens=max_tokens, tokenizer="words", separators=separators)
        a = text.index(fence.strip())
        b = a + len(fence.strip())
        assert any(c.start <= a and b <= c.end for c in chunks), (max_tokens, [c.text for c in chunks])
        assert all(doc.text[c.start : c.end] == c.text and c.token_count <= max_tokens for c in chunks)


def test_recursive_cuts_a_fence_too_big_and_keeps_explicit_separators_literal():
    text = "Intro line here.\n\n" + CONSOLE_FENCE + "\n\nOutro line here."
    tok = get_tokenizer("words")
    small = tok.count(CONSOLE_FENCE) - 2
    chunks = chunk(Document(text), "recursive", max_tokens=small, tokenizer="words")
    assert all(c.token_count <= small for c in chunks)  # too big: cut, never over the cap
    assert not any(CONSOLE_FENCE in c.text for c in chunks)
    # an explicit list is LangChain's splitter: a blank line is a separator wherever it is
    spans = recursive_split(text, 0, len(text), tok, tok.count(CONSOLE_FENCE), separators=["\n\n", "\n", " ", ""])
    assert not any(a <= text.index("```console") and text.index("complete.\n```") < b for a, b in spans)


def test_fence_spans_pairs_openers_with_their_closers():
    from chunkwise.strategies.recursive import fence_spans

    text = "a\n```py\nx = 1\n~~~\n```\nb\n  ~~~~\n  ```\n  ~~~~~\nc\n```\nnever closed\n"
    spans = fence_spans(text, 0, len(text))
    assert [text[a:b] for a, b in spans] == ["```py\nx = 1\n~~~\n```", "~~~~\n  ```\n  ~~~~~"]
