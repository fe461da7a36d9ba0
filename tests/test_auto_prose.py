"""``auto`` on plain text without layout: cut where the topic changes (``semantic``), the model made only
there. Text with layout keeps its strategy and ids (pinned in tests/test_chunk_ids.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise import chunk_text
from chunkwise.document import Cue, Document
from chunkwise.strategies import get_strategy, semantic_strategies
from chunkwise.strategies.auto import without_layout
from chunkwise.strategies.factory import make_strategy
from tests.conftest import FakeEmbedder
from tests.test_semantic import CAFETERIA, PUMP, SEED


@pytest.mark.parametrize(
    ("text", "flat"),
    [
        (SEED, True),
        ("\n\n" + SEED + "\n\n\n", True),  # blank lines before or after the text are no layout
        ("One utterance.\nAnother one.\nA third.", True),  # lines without a paragraph break
        ("First paragraph.\n\nSecond paragraph.", False),
        ("First paragraph.\n \t\nSecond paragraph.", False),  # a whitespace-only line is a blank line
        ("First paragraph.\r\n\r\nSecond paragraph.", False),
        ("One sentence alone, nothing to decide.", False),
        ("A title line\nand a second line", True),
        ("Zwei S\u00e4tze. Noch einer!", True),
    ],
)
def test_without_layout_rule(text, flat):
    assert without_layout(Document(text), "") is flat
    assert without_layout(Document(text), "text") is flat
    assert not without_layout(Document(text), "markdown")


def test_documents_with_structure_are_not_flat():
    cues = Document(SEED, cues=[Cue(0, len(SEED), 0.0, 1.0)])
    assert not without_layout(cues, "")
    units = Document(SEED, metadata={"units": [(0, 10)]})
    assert not without_layout(units, "text")


def test_flat_text_goes_to_semantic_with_the_runs_embedder():
    emb = FakeEmbedder()
    auto = make_strategy("auto", {}, emb)
    assert auto.embedder is emb and "auto" not in semantic_strategies()
    inner = auto.resolve(Document(SEED))
    assert inner.name == "semantic" and inner.embedder is emb
    assert inner.min_tokens is None  # auto's default 0 leaves semantic its own default
    assert get_strategy("auto", min_tokens=5).resolve(Document(SEED)).min_tokens == 5
    paragraphs = Document(PUMP + "\n\n" + CAFETERIA)
    assert auto.resolve(paragraphs).name == "recursive"
    # the embedder decides the semantic cuts, so it is in their ids (and only there)
    other = make_strategy("auto", {}, FakeEmbedder(dim=32))
    assert auto.config_id() == other.config_id() == get_strategy("auto").config_id()
    flat = auto.chunk(Document(SEED))
    assert {c.strategy for c in flat} == {"auto:semantic"}
    assert {c.id for c in flat}.isdisjoint(c.id for c in other.chunk(Document(SEED)))
    assert [c.id for c in auto.chunk(paragraphs)] == [c.id for c in other.chunk(paragraphs)]
    for c in auto.chunk(Document(SEED)):
        assert SEED[c.start : c.end] == c.text


# -- acceptance: the seed example with the real model, no options ------------------------------------------
def test_seed_splits_by_topic_through_chunk_text():
    chunks = chunk_text(SEED)
    assert [c.text for c in chunks] == [PUMP, CAFETERIA]
    assert {c.strategy for c in chunks} == {"auto:semantic"}


def test_seed_splits_by_topic_through_the_cli(tmp_path, capsys):
    from chunkwise.cli import main

    path = tmp_path / "pump.txt"
    path.write_text(SEED + "\n", encoding="utf-8")
    assert main(["chunk", str(path)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["text"] for r in rows] == [PUMP, CAFETERIA]
    assert {r["strategy"] for r in rows} == {"auto:semantic"}


def test_text_with_layout_loads_no_model(tmp_path):
    """``chunkwise chunk`` on Markdown and on text with paragraphs imports no onnxruntime."""
    md = tmp_path / "notes.md"
    md.write_text("# Pump\n\n" + PUMP + "\n\n## Lunch\n\n" + CAFETERIA + "\n", encoding="utf-8")
    txt = tmp_path / "notes.txt"
    txt.write_text(PUMP + "\n\n" + CAFETERIA + "\n", encoding="utf-8")
    code = (
        "import sys, io, contextlib, json; from chunkwise.cli import main\n"
        "out = io.StringIO()\n"
        f"with contextlib.redirect_stdout(out): rc = main(['chunk', {str(md)!r}, {str(txt)!r}])\n"
        "labels = sorted({json.loads(l)['strategy'] for l in out.getvalue().splitlines() if l.startswith('{')})\n"
        "print(rc, labels, 'onnxruntime' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split("\n")[-2] == "0 ['auto:markdown', 'auto:recursive'] False", out.stdout + out.stderr


def test_the_cli_hands_auto_the_embedder_name_unmade():
    """``chunk`` gives ``auto`` the ``--embedder`` name (made only if a document needs it), nothing without
    one (the default is made then), and a semantic strategy the embedder itself."""
    from chunkwise.cli import build_parser
    from chunkwise.cli.chunk import _build_strategy

    args = build_parser("chunk").parse_args(["--embedder", "minilm", "chunk", "x.txt"])
    assert _build_strategy(args).embedder == "minilm"
    assert _build_strategy(build_parser("chunk").parse_args(["chunk", "x.txt"])).embedder is None


_SENTENCES = st.lists(
    st.sampled_from(
        [
            "The pump leaks coolant.",
            "Replace the seal kit!",
            "Lunch is soup today.",
            "Is the cafeteria open?",
            "Tax credits expire in May.",
            "The rocket reached orbit.",
        ]
    ),
    min_size=2,
    max_size=40,
)


@settings(max_examples=25, deadline=None)
@given(_SENTENCES, st.sampled_from([" ", "\n"]), st.integers(min_value=8, max_value=64))
def test_flat_text_chunks_are_exact_and_capped(sentences, sep, max_tokens):
    text = sep.join(sentences)
    chunks = get_strategy("auto", embedder=FakeEmbedder(), max_tokens=max_tokens).chunk(Document(text))
    assert {c.strategy for c in chunks} == {"auto:semantic"}
    assert all(text[c.start : c.end] == c.text and c.token_count <= max_tokens for c in chunks)
    assert "".join(text[c.start : c.end] for c in chunks).replace(" ", "").replace("\n", "") == text.replace(
        " ", ""
    ).replace("\n", "")
    assert len({c.id for c in chunks}) == len(chunks)
