"""The fast cl100k encoder (gigatoken, the ``cl100k-fast`` extra) gives tiktoken's ids on any text."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.segmentation.cl100k_encoder import CHECK_CHARS, GigatokenEncoder, fast_encoder, longest_run
from chunkwise.segmentation.tiktoken_bpe import TiktokenTokenizer
from chunkwise.segmentation.tokenizers import get_tokenizer

pytest.importorskip("gigatoken")

HOSTILE = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\r\n\r\n",
    "  \n\n\t  x",
    "x   ",
    " " * 3000,
    "\n" * 300,
    "e\u0301" * 200,
    "\u0300\u0301 leading marks",
    "日本語のテキストと中文文本和한국어",
    "😀👍🏽👨‍👩‍👧‍👦🇩🇪",
    "🙂" * 500,
    "<|endoftext|>",
    "a<|endoftext|>b <|fim_prefix|><|endofprompt|>",
    "I'm, you'RE, they'Ll",
    "1234567890" * 50,
    "\u200b\u200c\u200d\ufeff",
    "\u2028\u2029\x85\x0b\x0c",
    "ﬁ Ⅻ ① ²³",
    "\U0010ffff\U000e0001\ue000",
    "İı ẞß",
]


@pytest.fixture(scope="module")
def tok() -> TiktokenTokenizer:
    tok = get_tokenizer("cl100k")
    assert isinstance(tok, TiktokenTokenizer)
    return tok


@pytest.fixture(scope="module")
def giga(tok) -> GigatokenEncoder:
    assert isinstance(tok._fast, GigatokenEncoder)
    return tok._fast  # gigatoken with its fallback, as the tokenizer uses it


def ids(x) -> list[int]:
    return [int(v) for v in x]  # a uint32 array from gigatoken, a list from the fallback


def test_the_cl100k_tokenizer_uses_gigatoken_when_installed(tok):
    assert isinstance(tok._fast, GigatokenEncoder)


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_gives_tiktoken_ids_and_exact_offsets(tok, giga, text):
    want = tok.encoding.encode_ordinary(text)
    assert ids(giga.encode(text)) == want and giga.count(text) == len(want)
    assert tok.encode(text) == want
    starts, ends = tok.offset_arrays(text)
    assert len(ends) == len(want)
    if want:  # the spans tile the text, widened to whole characters
        assert starts[0] == 0 and ends[-1] == len(text) and (starts[1:] == ends[:-1]).all()


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.characters(exclude_categories=("Cs",)), max_size=300))
def test_random_text_gives_tiktoken_ids(tok, giga, text):
    assert ids(giga.encode(text)) == tok.encoding.encode_ordinary(text)


@settings(max_examples=100, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(
            [
                "a",
                "Z",
                " ",
                "  ",
                "\n",
                "\r\n",
                "\t",
                "'s",
                "'LL",
                "12345",
                ".",
                "!?",
                "é",
                "e\u0301",
                "日本",
                "🙂",
                "👍🏽",
                "\x00",
                "<|endoftext|>",
                "\u200d",
            ]
        ),
        max_size=80,
    )
)
def test_pattern_edges_give_tiktoken_ids(tok, giga, parts):
    text = "".join(parts)
    assert ids(giga.encode(text)) == tok.encoding.encode_ordinary(text)


def test_a_megabyte_without_spaces(tok, giga):
    rng = random.Random(3)
    text = "".join(rng.choice("abcXYZ019.,;:-_/()é日") for _ in range(1_000_000))
    assert ids(giga.encode(text)) == tok.encoding.encode_ordinary(text)


def test_lone_surrogates_raise_so_the_tokenizer_falls_back(tok, giga):
    with pytest.raises(TypeError):  # gigatoken cannot take a lone surrogate
        giga.encode("a\ud800b")
    assert tok.count("a\ud800b") == len(tok.encoding.encode_ordinary("a\ud800b"))


def test_environment_variable_selects_bpe_openai(tok, monkeypatch):
    monkeypatch.setenv("CHUNKWISE_CL100K_ENCODER", "bpe-openai")
    sentinel = object()
    assert fast_encoder(tok._rank_file, "cl100k_base", lambda: sentinel) is sentinel
    monkeypatch.delenv("CHUNKWISE_CL100K_ENCODER")
    assert isinstance(fast_encoder(tok._rank_file, "cl100k_base", lambda: sentinel), GigatokenEncoder)


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.sampled_from(["a", "é", "日", " ", "\n", "\t", "\x00", "\x1f", "!", "🙂"]), max_size=60))
def test_longest_run_counts_bytes_between_whitespace_and_controls(text):
    runs = re.split(r"[\x00- ]", text)
    assert longest_run(text) == max(len(r.encode()) for r in runs)


def test_a_long_text_with_a_long_run_goes_to_the_linear_fallback(tok, giga):
    calls = []

    class Spy:
        def encode(self, text):
            calls.append(len(text))
            return tok._fast._fallback.encode(text)

        def count(self, text):
            return len(self.encode(text))

    text = "word " * 1000 + "a" * (CHECK_CHARS + 10) + " end"
    spied = GigatokenEncoder(tok._rank_file, Spy())
    want = ids(giga.encode(text))  # gigatoken alone (slow on the run, but right)
    assert spied.encode(text) == want and spied.count(text) == len(want) == tok.count(text)
    assert calls == [len(text), len(text)]
    assert spied.encode("word " * (CHECK_CHARS // 4)).tolist() == giga.encode("word " * (CHECK_CHARS // 4)).tolist()
    assert len(calls) == 2  # long, but no long run: gigatoken


def test_characters_gigatoken_reads_unlike_tiktoken_go_to_the_fallback(tok, giga):
    """Code points of UNICODE_DIFF_RANGES (recent Unicode letters; hypothesis found U+323B0 on Python 3.13),
    in probe strings: tiktoken's ids through the encoder the tokenizer uses; the check finds each of them."""
    from chunkwise.segmentation.cl100k_encoder import UNICODE_DIFF_RANGES, reads_unlike_tiktoken

    found = [cp for a, b in UNICODE_DIFF_RANGES for cp in range(a, b + 1)]
    assert len(found) == 4657 and all(reads_unlike_tiktoken("ab " + chr(cp)) for cp in found)
    assert not reads_unlike_tiktoken("naïve café 日本語 🙂 " + chr(found[0] - 1) + chr(found[-1] + 1))
    for cp in found[::7] + [0x323B0]:
        for text in ("x" + chr(cp) + "x", chr(cp) + ":A", " " + chr(cp) + " 12"):
            assert ids(giga.encode(text)) == tok.encoding.encode_ordinary(text), hex(cp)
            assert giga.count(text) == len(tok.encoding.encode_ordinary(text))
