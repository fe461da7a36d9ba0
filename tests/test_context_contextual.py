"""Contextual chunk text: headings and neighbouring sentences, and contextualize()'s contract."""

from __future__ import annotations

import pytest
from conftest import Paragraphs

from chunkwise.context import CONTEXT_MODES, contextualize
from chunkwise.context.contextual import document_title
from chunkwise.document import Chunk, Document, Section
from chunkwise.errors import ConfigError
from chunkwise.segmentation.tokenizers import get_tokenizer

GUIDE = """# Tarn CLI

Tarn syncs folders between machines.

## Install

### Linux

Download the archive and run the installer. It needs glibc 2.31 or newer.

### Windows

Run the MSI package as administrator."""


def guide_doc(title=None, source="docs/tarn-guide.md"):
    text = GUIDE
    h1, inst, lin, win = (text.index(s) for s in ("# Tarn", "## Install", "### Linux", "### Windows"))
    sections = [
        Section(h1, len(text), ("Tarn CLI",), 1),
        Section(inst, len(text), ("Tarn CLI", "Install"), 2),
        Section(lin, win, ("Tarn CLI", "Install", "Linux"), 3),
        Section(win, len(text), ("Tarn CLI", "Install", "Windows"), 3),
    ]
    return Document(text, source=source, sections=sections, title=title)


def test_headings_context_is_title_and_section_path_and_text_is_untouched():
    doc = guide_doc(title="Tarn user guide")
    chunks = Paragraphs(max_tokens=100).chunk(doc)
    texts = [c.text for c in chunks]
    out = contextualize(doc, chunks, "headings")
    assert out is not None and [c.text for c in out] == texts
    assert all(doc.text[c.start : c.end] == c.text for c in out)
    linux = next(c for c in out if c.text.startswith("Download"))
    assert linux.context == "Tarn user guide > Tarn CLI > Install > Linux"
    assert linux.embed_text == linux.context + "\n\n" + linux.text
    windows = next(c for c in out if c.text.startswith("Run the MSI"))
    assert windows.context.endswith("Install > Windows")


def test_headings_title_falls_back_to_the_file_name_and_is_not_repeated():
    doc = guide_doc(title=None, source="docs/Tarn CLI.md")
    assert document_title(doc) == "Tarn CLI"
    chunks = contextualize(doc, Paragraphs(max_tokens=100).chunk(doc), "headings")
    linux = next(c for c in chunks if c.text.startswith("Download"))
    assert linux.context == "Tarn CLI > Install > Linux"  # the h1 equal to the title is not repeated
    plain = Document("No title, no headings.")
    assert contextualize(plain, Paragraphs(max_tokens=100).chunk(plain), "headings")[0].context is None
    assert document_title(Document("x", source="/tmp/report.final.pdf")) == "report.final"
    assert contextualize(plain, Paragraphs(max_tokens=100).chunk(plain), "headings", separator=" / ")[0].context is None


STORY = (
    "Mara found the map in 1921. She kept it hidden for years. The ink had faded to brown. "
    "Nobody believed her at first. Then the museum called. They wanted it for an exhibition."
)


def sentence_chunk(doc, sentence):
    a = doc.text.index(sentence)
    return Chunk(
        text=sentence,
        start=a,
        end=a + len(sentence),
        index=0,
        id="x",
        doc_id=doc.id,
        source=doc.source,
        token_count=0,
        strategy="test",
    )


def test_neighbors_context_holds_the_sentences_around_the_chunk():
    doc = Document(STORY)
    c = sentence_chunk(doc, "The ink had faded to brown.")
    contextualize(doc, [c], "neighbors", neighbors=1)
    assert c.context == "She kept it hidden for years. … Nobody believed her at first."
    contextualize(doc, [c], "neighbors", neighbors=2)
    assert c.context == (
        "Mara found the map in 1921. She kept it hidden for years. … "
        "Nobody believed her at first. Then the museum called."
    )
    assert c.text == "The ink had faded to brown."


def test_neighbors_at_the_edges_and_mid_sentence_chunks():
    doc = Document(STORY)
    first = sentence_chunk(doc, "Mara found the map in 1921.")
    last = sentence_chunk(doc, "They wanted it for an exhibition.")
    contextualize(doc, [first, last], "neighbors", neighbors=1)
    assert first.context == "She kept it hidden for years."
    assert last.context == "Then the museum called."
    # a chunk that starts and ends inside sentences: the cut sentences count as the neighbours
    mid = sentence_chunk(doc, "hidden for years. The ink")
    contextualize(doc, [mid], "neighbors", neighbors=1)
    assert mid.context == "She kept it … had faded to brown."
    whole = Document("Only one sentence here.")
    one = sentence_chunk(whole, "Only one sentence here.")
    assert contextualize(whole, [one], "neighbors")[0].context is None


def test_neighbors_context_is_capped_in_tokens_keeping_the_text_next_to_the_chunk():
    doc = Document(STORY)
    c = sentence_chunk(doc, "The ink had faded to brown.")
    contextualize(doc, [c], "neighbors", neighbors=3, max_context_tokens=6, tokenizer="words")
    before, after = c.context.split(" … ")
    assert before == "hidden for years."  # the last 3 words before the chunk
    assert after == "Nobody believed her"  # the first 3 words after it
    contextualize(doc, [c], "neighbors", neighbors=2, max_context_tokens=0)
    assert c.context.startswith("Mara found") and c.context.endswith("museum called.")
    with pytest.raises(ConfigError, match="max_context_tokens"):
        contextualize(doc, [c], "neighbors", max_context_tokens=1)
    tok = get_tokenizer("minilm")
    long_doc = Document(" ".join(f"Sentence number {i} talks about topic {i}." for i in range(60)))
    mid = sentence_chunk(long_doc, "Sentence number 30 talks about topic 30.")
    contextualize(long_doc, [mid], "neighbors", neighbors=10)
    assert tok.count(mid.context.replace(" … ", " ")) <= 128


def test_contextualize_contract_and_bad_input():
    assert set(CONTEXT_MODES) == {"headings", "neighbors", "llm"}
    doc = Document(STORY)
    c = sentence_chunk(doc, "Then the museum called.")
    assert contextualize(doc, [c], None)[0].context is None
    assert contextualize(doc, [c], "none")[0].context is None
    with pytest.raises(ConfigError, match="contextualize: mode must be one of .*, got 'summary'"):
        contextualize(doc, [c], "summary")
    with pytest.raises(ConfigError, match="no option window"):
        contextualize(doc, [c], "neighbors", window=3)
    with pytest.raises(ConfigError, match="neighbors must be"):
        contextualize(doc, [c], "neighbors", neighbors=0)
    # options that are None (CLI defaults) are ignored
    assert contextualize(doc, [c], "neighbors", neighbors=None, base_url=None)[0].context
    c.end += 500
    with pytest.raises(RuntimeError, match="outside document"):
        contextualize(doc, [c], "headings")
    assert contextualize(doc, [], "headings") == []
