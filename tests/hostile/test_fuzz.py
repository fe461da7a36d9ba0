"""Fuzzing the loaders and the sentence splitter: hostile bytes never escape as anything but
one :class:`ChunkwiseError`, and sentence spans keep their invariants.

Time-boxed here (``CHUNKWISE_FUZZ_EXAMPLES``, default 150 per target); ``scripts/fuzz.py`` runs the same
targets much longer.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.errors import ChunkwiseError
from chunkwise.formats import FORMATS, load_bytes
from chunkwise.segmentation.sentences import split_sentences

EXAMPLES = int(os.environ.get("CHUNKWISE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 150, suppress_health_check=list(HealthCheck)
)

SEEDS = [
    b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF",
    b"WEBVTT\n\n00:00.000 --> 00:01.000\nhello\n",
    b"1\n00:00:00,000 --> 00:00:01,000\nhi\n\n",
    b"<!doctype html><html><body><h1>T</h1><p>x</p>",
    b"# Title\n\n```\ncode\n",
    b"\xff\xfe\x00\x00",
    b"\xef\xbb\xbf",
    "日本語の文。".encode("utf-16-le"),
    b"\x00" * 8,
]


@st.composite
def hostile_bytes(draw):
    base = draw(st.sampled_from(SEEDS + [b""]))
    noise = draw(st.binary(max_size=600))
    where = draw(st.integers(0, len(base)))
    return base[:where] + noise + base[where:]


@FUZZ
@given(
    data=hostile_bytes(),
    fmt=st.sampled_from((None,) + FORMATS),
    name=st.sampled_from([None, "a.txt", "a.md", "a.html", "a.pdf", "a.vtt", "a.srt", "noext"]),
)
def test_loaders_fail_only_with_one_clear_error(data, fmt, name):
    options = {"format": fmt} if fmt else {}
    try:
        doc = load_bytes(data, source="fuzz", name=name, **options)
    except ChunkwiseError as exc:
        assert str(exc).strip() and "\n" not in str(exc).strip()
        return
    text = doc.text
    assert isinstance(text, str)
    for page in doc.pages:
        assert 0 <= page.start <= page.end <= len(text)
    for section in doc.sections:
        assert 0 <= section.start <= section.end <= len(text)


@FUZZ
@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=800)
    | st.lists(
        st.sampled_from(
            [
                "Dr.",
                "e.g.",
                "3.5",
                " ",
                "\n",
                "。",
                "?!",
                "...",
                "U.S.",
                "“",
                "”",
                ")",
                "x" * 50,
                "\u200b",
                "\r\n",
                "A",
                "b",
                "。」",
            ]
        ),
        max_size=200,
    ).map("".join)
)
def test_sentence_spans_keep_their_invariants(text):
    spans = split_sentences(text)
    pos = 0
    for a, b in spans:
        assert pos <= a < b <= len(text)
        assert text[a:b] == text[a:b].strip()
        pos = b
    covered = "".join(text[a:b] for a, b in spans)
    assert "".join(covered.split()) == "".join(text.split())  # no content lost
