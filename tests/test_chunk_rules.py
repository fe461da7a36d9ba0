"""The rules every strategy keeps (chunkwise.strategies.tidy), property-tested on Markdown-like text.

- A chunk never ends with a heading, a ``:`` lead-in or a block opener (``/// tip``, ``!!! note``, a code
  fence) while the next chunk could take it within ``max_tokens``.
- No chunk is junk (0 tokens, only symbols/punctuation/emoji/private-use glyphs) or under 5 tokens while a
  neighbour could take it within the cap.
- ``{ #anchor }`` attribute lists never reach section paths; ``auto`` resolves by format and labels chunks.

The checks here are independent of the implementation: they count the alternatives themselves.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkwise
from chunkwise.document import Document
from chunkwise.formats import load_bytes
from chunkwise.segmentation.sentences import split_sentences
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies import SEMANTIC_STRATEGIES, get_strategy
from chunkwise.strategies.base import max_chars_for

ROOT = Path(__file__).resolve().parents[1]
STRATEGIES = ["fixed", "sentence", "recursive", "markdown", "auto", "semantic", "maxmin", "cohesion"]
STICKY = re.compile(r"^(?: {0,3}#{1,6}[ \t].*|.*:[ \t]*|[ \t]*(?:/{3}[ \t]*\w.*|!{3}[ \t]*\w.*|```\w*))$")

WORDS = ["pump", "valve", "seal", "bread", "flour", "yeast", "tax", "rate", "orbit", "probe", "data", "model"]
word = st.sampled_from(WORDS)
paragraph = st.lists(word, min_size=2, max_size=7).map(lambda ws: " ".join(ws).capitalize() + ".")
sticky = st.one_of(
    st.lists(word, min_size=1, max_size=3).map(lambda ws: "## " + " ".join(ws).title()),
    st.lists(word, min_size=1, max_size=3).map(lambda ws: "### " + " ".join(ws).title() + " { #anchor }"),
    st.tuples(st.sampled_from(["####", "#####", "######"]), st.lists(word, min_size=1, max_size=3)).map(
        lambda t: t[0] + " " + " ".join(t[1]).title()
    ),
    st.lists(word, min_size=2, max_size=5).map(lambda ws: "If you use " + " ".join(ws) + ":"),
    st.sampled_from(["/// tip", "!!! note", "/// warning | Careful"]),
)
junk = st.sampled_from(["🚀", "---", "\ue000\ue001", "* * *", "...", "→"])
#: a line of inline code between triple backticks (```` ```npm install pump``` ````): no fence, whatever it starts with
inline_code = st.lists(word, min_size=1, max_size=4).map(lambda ws: "```npm install " + " ".join(ws) + " ```")
block = st.one_of(
    st.tuples(st.none() | sticky, paragraph).map(lambda t: "\n\n".join(x for x in t if x)),
    paragraph,
    junk,
    st.lists(paragraph, min_size=1, max_size=3).map(lambda ps: "\n".join("- " + p for p in ps)),
)
documents = st.lists(block, min_size=1, max_size=14).map("\n\n".join)
with_inline_code = st.lists(
    st.one_of(block, st.tuples(st.none() | sticky, inline_code).map(lambda t: "\n\n".join(x for x in t if x))),
    min_size=1,
    max_size=14,
).map("\n\n".join)


def make(name: str, tokenizer: str, **params):
    if name in SEMANTIC_STRATEGIES:
        params.setdefault("embedder", FakeEmbedder(tokenizer=tokenizer))
        params.setdefault("min_tokens", 0)
    return get_strategy(name, tokenizer=tokenizer, **params)


def _last_line_start(text: str, a: int, b: int) -> int:
    body = text[a:b].rstrip()
    return a + body.rfind("\n") + 1


def _para_end(text: str, pos: int) -> int:
    k = text.find("\n\n", pos)
    return len(text) if k < 0 else k


def check_rules(text: str, chunks, max_tokens: int, tokenizer: str, units: list[int] | None = None) -> None:
    """The two rules on ``chunks``. ``units``: where a semantic strategy may cut (its sentence starts), which
    bounds what a tail can take along: the whole unit it is in, and the next chunk's first unit."""
    tok = get_tokenizer(tokenizer)
    bound = max_chars_for(max_tokens)

    def fits(a: int, b: int) -> bool:
        return b - a <= bound and tok.count(text[a:b]) <= max_tokens

    for k, c in enumerate(chunks):
        assert c.token_count > 0 or len(chunks) == 1, "a chunk of 0 tokens"
        nxt = chunks[k + 1] if k + 1 < len(chunks) else None
        prv = chunks[k - 1] if k > 0 else None
        if nxt is not None and nxt.start >= c.end:
            ls = _last_line_start(text, c.start, c.end)
            last = text[ls : c.end].rstrip()
            if STICKY.match(last):
                # allowed only when the tail plus the next chunk's first paragraph is over the cap
                head, body_end = ls, max(nxt.start + 1, min(nxt.end, _para_end(text, nxt.start)))
                if units is not None:  # (in whole units)
                    head = max((u for u in units if c.start <= u <= ls), default=c.start)
                    body_end = min((u for u in units if u > nxt.start), default=nxt.end)
                    body_end = max(body_end, min(nxt.end, _para_end(text, nxt.start)))
                assert not fits(head, body_end), f"chunk {k} ends with {last!r} although the next chunk could take it"
        small = c.token_count < 5 or not any(ch.isalnum() for ch in c.text)
        if small and len(chunks) > 1:
            for other in (prv, nxt):
                if other is not None:
                    lo, hi = min(c.start, other.start), max(c.end, other.end)
                    assert not fits(lo, hi), f"junk chunk {c.text!r} could have merged with a neighbour"


@pytest.mark.parametrize("tokenizer", ["words", "minilm"])
@pytest.mark.parametrize("name", STRATEGIES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents, max_tokens=st.sampled_from([24, 40, 80]))
def test_rules_hold_for_every_strategy(name, tokenizer, text, max_tokens):
    doc = load_bytes(text.encode(), source="<doc.md>", name="doc.md") if name == "auto" else Document(text)
    chunks = make(name, tokenizer, max_tokens=max_tokens).chunk(doc)
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
    assert all(c.token_count <= max_tokens for c in chunks)
    units = [a for a, _ in split_sentences(doc.text)] if name in SEMANTIC_STRATEGIES else None
    check_rules(doc.text, chunks, max_tokens, tokenizer, units)


@pytest.mark.parametrize("name", ["recursive", "markdown", "auto"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=with_inline_code, max_tokens=st.sampled_from([24, 40, 80]))
def test_rules_hold_with_lines_of_inline_triple_backticks(name, text, max_tokens):
    # (the semantic strategies cut only between their sentences, which join such a line to the junk after it)
    doc = load_bytes(text.encode(), source="<doc.md>", name="doc.md") if name == "auto" else Document(text)
    chunks = make(name, "minilm", max_tokens=max_tokens).chunk(doc)
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
    check_rules(doc.text, chunks, max_tokens, "minilm")


@pytest.mark.parametrize("name", STRATEGIES)
def test_heading_moves_to_its_body(name):
    body = " ".join(["The pump seal holds the valve pressure."] * 3)
    text = f"{body}\n\n## Seals\n\n{body}\n\n## Valves\n\n{body}"
    chunks = make(name, "words", max_tokens=30).chunk(Document(text))
    for c in chunks[:-1]:
        assert not c.text.rstrip().splitlines()[-1].startswith("## "), c.text
    if name in ("recursive", "markdown", "auto"):  # the rest may keep a heading mid-chunk; never at the end
        assert any(c.text.startswith("## Seals") for c in chunks)


@pytest.mark.parametrize("name", STRATEGIES)
def test_lead_in_and_opener_stay_with_what_follows(name):
    para = "Bread needs flour, water, salt and a starter that is active and bubbly."
    text = f"{para}\n\nIf you go to:\n\n{para}\n\n/// tip\n\n{para}\n\n///\n\n{para}"
    chunks = make(name, "words", max_tokens=20).chunk(Document(text))
    for c in chunks:
        assert c.text.strip() not in ("If you go to:", "/// tip"), [x.text for x in chunks]
        assert not c.text.rstrip().endswith(("If you go to:", "/// tip")) or c is chunks[-1]


@pytest.mark.parametrize("opener", ["/// tip", "//// tab | Linux", "!!! note", "::: warning"])
@pytest.mark.parametrize("name", STRATEGIES)
def test_nested_block_openers_stay_with_their_body(name, opener):
    """pymdownx nests blocks with more slashes (``//// tab | Linux`` inside ``/// tab``): still an opener."""
    para = "Bread needs flour, water, salt and a starter that is active and bubbly."
    text = f"{para}\n\n{para}\n\n{opener}\n\n{para}\n\n{para}"
    chunks = make(name, "words", max_tokens=20).chunk(Document(text))
    for c in chunks[:-1]:
        assert not c.text.rstrip().endswith(opener), [x.text for x in chunks]


@pytest.mark.parametrize("heading", ["   ## Indented", "#"])
def test_one_definition_of_a_heading_line(heading):
    """An indented ATX heading and a bare ``#`` are headings to the chunk rules, the semantic units and the
    recursive splitter alike (CommonMark); four spaces make code, ``#tag`` is text."""
    from chunkwise.formats.markdown_lines import ATX_HEADING_RE
    from chunkwise.strategies.recursive import PRESETS
    from chunkwise.strategies.units import structure_breaks

    assert ATX_HEADING_RE.match(heading) and not ATX_HEADING_RE.match("    # code")
    assert not ATX_HEADING_RE.match("#tag")
    text = f"First line.\n{heading}\nSecond line."
    assert re.search(PRESETS["markdown"][0], text)  # the recursive preset cuts before it
    a = text.index(heading)
    breaks = structure_breaks(text, [(0, a - 1), (a, len(text))])
    assert breaks[0] == 1.0  # a semantic unit boundary of full strength


@pytest.mark.parametrize("name", STRATEGIES)
def test_symbol_only_chunks_are_merged(name):
    text = "The pump seal holds the valve pressure well.\n\n🚀\n\n\ue000\ue001\n\nThe valve opens at high pressure."
    chunks = make(name, "minilm", max_tokens=64).chunk(Document(text))
    assert all(any(ch.isalnum() for ch in c.text) for c in chunks)
    assert "".join(c.text for c in chunks).count("🚀") == 1  # merged, never dropped


def test_a_document_of_only_symbols_is_kept():
    chunks = chunkwise.chunk(Document("🚀 → ✓"), strategy="recursive")
    assert [c.text for c in chunks] == ["🚀 → ✓"]


def test_anchor_attributes_are_not_in_sections():
    doc = load_bytes(
        b"# Guide { #guide }\n\nIntro text here.\n\n## Install {#install .big}\n\nRun pip install.\n",
        source="<g.md>",
        name="g.md",
    )
    assert [s.path for s in doc.sections] == [("Guide",), ("Guide", "Install")]
    chunks = chunkwise.chunk(doc, max_tokens=8)
    assert all("{" not in " ".join(c.section) for c in chunks)


def test_heading_only_section_is_not_a_region():
    from chunkwise.strategies.base import regions

    doc = load_bytes(
        b"# Guide\n\n## Install\n\nRun pip install now.\n\n## Use\n\nImport it.\n", source="<g.md>", name="g.md"
    )
    bounds = regions(doc, 2)
    assert doc.text[bounds[0][0] : bounds[0][1]].startswith("# Guide\n\n## Install")
    assert len(bounds) == 2


def test_auto_resolves_by_format_and_labels_chunks():
    md = load_bytes(b"# T\n\nSome text for the reader.\n", source="<a.md>", name="a.md")
    txt = load_bytes(b"Some text for the reader.\n", source="<a.txt>", name="a.txt")
    srt = load_bytes(
        b"1\n00:00:01,000 --> 00:00:02,000\nHello there, this is\n\n2\n00:00:02,000 --> "
        b"00:00:03,000\na sentence over two cues.\n",
        source="<a.srt>",
        name="a.srt",
    )
    assert {c.strategy for c in chunkwise.chunk(md)} == {"auto:markdown"}
    assert {c.strategy for c in chunkwise.chunk(txt)} == {"auto:recursive"}
    assert {c.strategy for c in chunkwise.chunk(srt)} == {"auto:sentence"}
    auto_ids = [c.id for c in chunkwise.chunk(md)]
    assert auto_ids == [c.id for c in chunkwise.chunk(md)]  # deterministic
    assert auto_ids != [c.id for c in chunkwise.chunk(md, strategy="markdown")]  # its own configuration


def test_auto_html_with_headings_respects_sections():
    from chunkwise.strategies.auto import SECTION_LEVEL, AutoChunker

    # an <article>: trafilatura keeps the headings of the main content it finds (bare <body> text may lose them)
    html = (
        b"<html><body><article><h1>Guide</h1><p>"
        + b"Intro words here. " * 5
        + b"</p><h2>Install</h2><p>"
        + b"Run the installer now. " * 5
        + b"</p></article></body></html>"
    )
    doc = load_bytes(html, source="<a.html>", name="a.html")
    assert doc.sections
    inner = AutoChunker(max_tokens=200).resolve(doc)
    assert inner.name == "recursive" and inner.respect_sections == SECTION_LEVEL
    chunks = chunkwise.chunk(doc, max_tokens=200)
    assert any(c.text.lstrip().startswith("Install") for c in chunks)


@pytest.mark.parametrize("name", sorted(SEMANTIC_STRATEGIES))
def test_a_bare_line_over_the_first_heading_does_not_hold_the_heading_back(name):
    """Found by the property test above: the sentence splitter glues a document's first letterless piece
    ("🚀") to the next sentence, a heading; as one unit, the heading could not move to its body within the cap
    (semantic strategies cut only at unit starts). A heading now always starts a unit."""
    text = "🚀\n\n### Pump Pump Pump { #anchor }\n\nPump pump pump pump pump pump pump.\n\n---\n\n---"
    chunks = make(name, "minilm", max_tokens=24).chunk(Document(text))
    check_rules(text, chunks, 24, "minilm")
    assert any(c.text.startswith("### Pump") and "Pump pump" in c.text for c in chunks)


def _geotopo_like() -> str:
    """The shape of pypdf's text of LaTeX lecture notes (GeoTopo): theorem-like labels and unnumbered
    headings stand on a line of their own before their body, with nothing marking them as headings."""
    para = "Sei X ein topologischer Raum und U eine offene Teilmenge von X mit der Teilraumtopologie."
    body = f"{para}\n\n{para}"
    return (
        f"{body}\n\nDanksagungen\n\n{body}\n\n{para}\nDefinition 47\n\n{body}\n\n"
        f"{para}\n\nSatz 1.2 (Jordanscher Kurvensatz)\n\n{body}\n\n{para}\n\nLösung zu Aufgabe 6\n\n"
        f"{body}\n\n{para}"
    )


@pytest.mark.parametrize("name", ["recursive", "sentence", "fixed", "auto"])
@pytest.mark.parametrize("max_tokens", [30, 40, 60])
def test_pdf_labels_and_unmarked_headings_stay_with_their_body(name, max_tokens):
    """In PDF text a label (``Definition 47``) or a heading the outline leaves out (``Danksagungen``) is a
    plain line; a chunk must not end on it while its body starts the next chunk (it did for 50 of 292
    chunks of GeoTopo)."""
    text = _geotopo_like()
    labels = ["Danksagungen", "Definition 47", "Satz 1.2 (Jordanscher Kurvensatz)", "Lösung zu Aufgabe 6"]
    doc = Document(text, source="<notes.pdf>", metadata={"format": "pdf"})
    chunks = make(name, "words", max_tokens=max_tokens).chunk(doc)
    assert all(doc.text[c.start : c.end] == c.text and c.token_count <= max_tokens for c in chunks)
    for c in chunks[:-1]:
        assert c.text.rstrip().splitlines()[-1] not in labels, [x.text for x in chunks]
    for label in labels:  # each label is in the chunk where its body starts
        body = text.index("Sei", text.index(label))
        assert any(c.start <= text.index(label) and body < c.end for c in chunks), label


def test_label_lines_are_only_label_shaped_lines():
    from chunkwise.strategies.tidy import is_label_line

    for line in ["Definition 47", "Beispiel 3 (Basis und Subbasis)", "Proposition 4.2", "Satz (Zwischenwertsatz)"]:
        assert is_label_line(line, alone=False), line
    assert is_label_line("Danksagungen", alone=True) and not is_label_line("Danksagungen", alone=False)
    for line in [
        "Kurve, 87",
        "Wäre A∩A1 = ∅",
        "X",
        "x 2",
        "R0 1 0 f g",
        "Abbildung 2.4: Kartenwechsel",
        "Beweis.",
        "Das ist alles.",
    ]:
        assert not is_label_line(line, alone=True), line


def test_label_rule_is_for_unmarked_text_only():
    """Plain strings and Markdown keep their chunks: a short line there is text (their headings are marked)."""
    text = _geotopo_like()
    plain = make("recursive", "words", max_tokens=30).chunk(Document(text))
    assert any(c.text.rstrip().endswith("Definition 47") for c in plain)


def _vtt(utterances: list[tuple[str, str]]) -> bytes:
    cues, t = ["WEBVTT", ""], 0
    for speaker, line in utterances:
        cues += [f"00:00:{t:02d}.000 --> 00:00:{t + 2:02d}.000", f"<v {speaker}>{line}", ""]
        t += 2
    return "\n".join(cues).encode()


def test_auto_cuts_a_transcript_at_its_topic_shifts():
    """examples/team-meeting.vtt has three topics (its NOTE says so); ``auto`` packed all 237 tokens into
    one chunk. Now each topic is its own chunk, cut exactly where the next topic starts."""
    doc = chunkwise.load(ROOT / "examples" / "team-meeting.vtt")
    chunks = chunkwise.chunk(doc)
    assert [c.text.split("\n")[0][:40] for c in chunks] == [
        "Maria: Good morning everyone, let's star",
        "Aisha: Next topic is the crash in the pa",
        "Maria: Last topic: the summer party.",
    ]
    assert {c.strategy for c in chunks} == {"auto:sentence"}
    assert [(c.start_time, c.end_time) for c in chunks] == [(1.0, 24.0), (25.0, 45.0), (46.0, 61.0)]


def test_auto_transcript_topics_come_from_the_words_not_from_cue_phrases():
    release = [
        "The release of version two ships on the fourteenth.",
        "Testing the release branch takes two weeks.",
        "The release notes list every feature of version two.",
        "Marketing announces the release date.",
    ]
    garden = [
        "The garden beds need compost before planting tomatoes.",
        "Tomatoes and beans grow in the sunny beds.",
        "Water the garden beds every evening in summer.",
        "Compost from the kitchen feeds the tomatoes.",
    ]
    doc = load_bytes(_vtt([("Ann", s) for s in release + garden]), source="<m.vtt>", name="m.vtt")
    chunks = chunkwise.chunk(doc)
    assert [c.text.split("\n")[0].removeprefix("Ann: ") for c in chunks] == [release[0], garden[0]]
    one = load_bytes(_vtt([("Ann", s) for s in release * 2]), source="<r.vtt>", name="r.vtt")
    assert len(chunkwise.chunk(one)) == 1  # one topic: one chunk, as before
    assert all(c.token_count <= 20 for c in chunkwise.chunk(doc, max_tokens=20))  # the cap still rules


def test_topic_cuts_need_a_real_valley():
    from chunkwise.strategies.auto import topic_cuts

    assert topic_cuts([]) == [] and topic_cuts(["One thing only."] * 3) == []
    same = ["The pump seal holds the valve pressure."] * 10
    assert topic_cuts(same) == []


_SETUP_GUIDE = """# Tools for the pump lab

A short guide to the tools this lab uses, from the first install to the first run of the model.

## Getting started

#### 1. Install the package manager and the command line tool (if you have not already)

```curl -LsSf https://example.org/install.sh | sh ```

```npm install -g @example/pump-cli```

#### 2. Clone and set up the project

```git clone https://example.org/pump-lab.git ```

```cd pump-lab/models```

```uv sync ```

#### 3. Register the environment as a kernel

```uv run python -m ipykernel install --user --name="pump-lab" ```

#### 4. An API key
1. Visit the console and sign in to your account
2. Click on "Get API keys" and copy the key
3. Paste it into your `.env` file as ```API_KEY=```
"""


@pytest.mark.parametrize("max_tokens", range(24, 140, 8))
def test_a_heading_before_inline_triple_backticks_still_moves_to_its_body(max_tokens):
    # a line such as ```npm install x``` is inline code, not a fence: read as one, it flipped what counted as
    # inside code for the rest of the file, and a level-4 heading was left at the end of a chunk
    doc = load_bytes(_SETUP_GUIDE.encode(), source="<README.md>", name="README.md")
    chunks = get_strategy("auto", max_tokens=max_tokens).chunk(doc)
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
    check_rules(doc.text, chunks, max_tokens, "minilm")  # a heading ends a chunk only where the cap forbids more
    if max_tokens >= 48:  # every heading with a line of its body fits
        assert not any(c.text.rstrip().split("\n")[-1].startswith("#") for c in chunks)
