"""Token counting with exact offsets: MiniLM's own tokenizer, cl100k, characters, words."""

from __future__ import annotations

import random

import pytest
from conftest import CHROMA
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.errors import ConfigError
from chunkwise.segmentation.token_map import TokenMap
from chunkwise.segmentation.tokenizers import (
    TOKENIZER_NAMES,
    CharTokenizer,
    get_tokenizer,
    minilm_tokenizer_path,
    resolve_tokenizer,
)

SAMPLES = [
    "",
    "a",
    "Hello, world!",
    "naïve café — déjà vu",
    "e\u0301\u0301",
    "🤖👩‍👩‍👧🇩🇪",
    "中文字符，日本語。",
    "line\r\nbreak\rcr",
    "nul\x00inside",
    "  leading and trailing  ",
    "<|endoftext|> is ordinary text",
    "x" * 500,
    "1234567890" * 20,
    "مرحبا بالعالم",
    "a\u200bb\ufeffc",
]


@pytest.mark.parametrize("name", TOKENIZER_NAMES)
@pytest.mark.parametrize("text", SAMPLES)
def test_offsets_are_ordered_character_spans(name, text):
    tok = get_tokenizer(name)
    spans = tok.offsets(text)
    prev = 0
    for a, b in spans:
        assert prev <= a <= b <= len(text)
        prev = b
    if name in ("cl100k", "chars"):  # these cover the text without gaps
        assert (spans[0][0] if spans else 0) == 0 and (spans[-1][1] if spans else len(text)) == len(text)
        assert all(x[1] == y[0] for x, y in zip(spans, spans[1:]))


@pytest.mark.parametrize("text", SAMPLES)
def test_cl100k_counts_match_tiktoken(text):
    tok = get_tokenizer("cl100k")
    expected = len(tok.encoding.encode_ordinary(text))
    assert tok.count(text) == expected == len(tok.offsets(text)) == len(tok.encode(text))
    assert tok.count_batch([text, text + " more"]) == [expected, len(tok.encoding.encode_ordinary(text + " more"))]


def test_cl100k_lone_surrogates_fall_back_to_tiktoken():
    tok = get_tokenizer("cl100k")
    text = "a\ud800b"
    assert tok.count(text) == len(tok.encoding.encode_ordinary(text))
    assert len(tok.offsets(text)) == tok.count(text)


def test_cl100k_byte_length_table_matches_the_ranks():
    tok = get_tokenizer("cl100k")
    ranks = tok.encoding._mergeable_ranks
    sample = random.Random(0).sample(sorted(ranks.items(), key=lambda kv: kv[1]), 2000)
    assert all(tok._byte_len[rank] == len(token) for token, rank in sample)


def test_cl100k_is_linear_on_a_megabyte_without_spaces():
    tok = get_tokenizer("cl100k")
    text = "abcdefghij" * 100_000
    assert tok.count(text) == len(tok.encode(text)) > 1000


def test_minilm_has_truncation_and_padding_switched_off():
    tok = get_tokenizer("minilm")
    assert tok.count("hi") == 1
    assert tok.count("word " * 400) == 400  # beyond the 128 the file bakes in
    assert minilm_tokenizer_path().name == "tokenizer.json"


def test_minilm_long_runs_are_one_unknown_token_fast_and_exact():
    tok = get_tokenizer("minilm")
    hf = tok.hf
    rng = random.Random(3)
    parts = ["a" * 150, "b" * 99, "c" * 101, " ", ".", "é", "\x00", "x", "\n", "中", "1" * 120, "-", "Q" * 300]
    for _ in range(400):
        text = "".join(rng.choice(parts) for _ in range(rng.randrange(1, 12)))
        enc = hf.encode(text, add_special_tokens=False)
        assert tok.count(text) == len(enc.ids)
        assert tok.offsets(text) == [tuple(o) for o in enc.offsets]
    big = "abcdefghij" * 500_000  # 5 MB: one [UNK]
    assert tok.count(big) == 1 and tok.offsets(big) == [(0, len(big))]


def test_chars_and_words():
    assert get_tokenizer("chars").count("héllo 🤖") == 7
    assert get_tokenizer("words").count(" two  words\n") == 2
    assert get_tokenizer("words").offsets("a bc") == [(0, 1), (2, 4)]


def test_get_and_resolve_tokenizer():
    assert get_tokenizer("cl100k") is get_tokenizer("cl100k")  # cached
    assert resolve_tokenizer(None).name == "minilm"
    chars = CharTokenizer()
    assert resolve_tokenizer(chars) is chars
    with pytest.raises(ConfigError, match="unknown tokenizer"):
        get_tokenizer("gpt5")
    with pytest.raises(ConfigError, match=r"^get_tokenizer: name must be a tokenizer name \(minilm, .*\), got 5$"):
        get_tokenizer(5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not found"):
        get_tokenizer("hf:/nonexistent/tokenizer.json")
    with pytest.raises(ConfigError):
        resolve_tokenizer(3.5)
    assert get_tokenizer(f"hf:{minilm_tokenizer_path()}").count("hello world") == 2


FRAGMENTS = [
    "word",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\r\n",
    "\t",
    ".",
    ",",
    "'s",
    "'ll",
    "(",
    ")",
    "123",
    "4567",
    "é",
    "中文",
    "🤖",
    "\u0301",
    "\x00",
    "Ab",
    "...",
    "-",
    "x" * 120,
    "$3.50",
    "don't",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x85",
    "\xa0",
    "\u3000",
    "3",
    " 7",
]


@pytest.mark.parametrize("name", TOKENIZER_NAMES)
@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=40), data=st.data())
def test_token_map_exact_counts_agree_with_a_fresh_count(name, parts, data):
    """TokenMap.exact may decline (None) but must never answer wrong: the strategies trust it."""
    tok = get_tokenizer(name)
    text = "".join(parts)
    lo = data.draw(st.integers(0, min(3, len(text) - 1)))
    tm = TokenMap(text[lo:], tok, base=lo)
    for _ in range(8):
        a = data.draw(st.integers(lo, len(text) - 1))
        b = data.draw(st.integers(a + 1, len(text)))
        n = tm.exact(text, a, b)
        if n is not None:
            assert n == tok.count(text[a:b]), (text[a:b], n)
    spans = [(lo, len(text))]
    assert tm.counts(text, spans) == [tok.count(text[lo:])]


@pytest.mark.chroma
def test_token_map_exact_answers_most_cuts_on_real_text():
    text = (CHROMA / "corpora" / "state_of_the_union.md").read_text(encoding="utf-8")[:30000]
    tok = get_tokenizer("cl100k")
    tm = TokenMap(text, tok)
    rng = random.Random(1)
    answered = 0
    for _ in range(300):
        a = rng.randrange(len(text) - 10)
        b = min(len(text), a + rng.randrange(5, 2000))
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        n = tm.exact(text, a, b)
        if n is not None:
            answered += 1
            assert n == tok.count(text[a:b])
    assert answered > 200


def test_minilm_long_text_blocks_are_cut_only_where_bert_splits():
    # texts over 16 KB are encoded in blocks cut at whitespace; \x1c is whitespace to Python but a
    # control character BERT deletes (joining "xy" and "zw"), so it must not be a cut
    tok = get_tokenizer("minilm")
    text = ("abcd " * 3277)[:16380] + "the un\x1cbelievable story " + "more words here " * 2000
    enc = tok.hf.encode(text, add_special_tokens=False)
    assert tok.offsets(text) == [tuple(o) for o in enc.offsets]
    assert tok.count(text) == len(enc.ids)


def test_cl100k_long_texts_encode_with_the_same_tokens():
    tok = get_tokenizer("cl100k")
    rng = random.Random(5)
    parts = ["word", " ", "  ", "\n", "\n\n", ".\n", "  \n", "\r\n", "1234", "é", "🤖", "(x)", "\t", "'s", "-"]
    text = "".join(rng.choice(parts) for _ in range(60_000))
    expected = tok.encoding.encode_ordinary(text)
    assert tok.encode(text) == expected
    assert tok.count(text) == len(expected) == len(tok.offsets(text))
    assert tok.count(text + "\ud800") == len(tok.encoding.encode_ordinary(text + "\ud800"))


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS + ["ü", "ß", "€", "𝔘", "\u200d", "ąę"]), min_size=1, max_size=60))
def test_cl100k_offsets_from_lead_bytes_match_the_byte_to_character_map(parts):
    """offset_arrays sums each token's UTF-8 lead bytes (a table by id); the plain way maps the token byte
    ends onto the text's own bytes. Both must give the same character spans (widened to whole characters)."""
    import numpy as np

    from chunkwise.segmentation.tiktoken_bpe import _byte_lengths_to_char_arrays

    tok = get_tokenizer("cl100k")
    text = "".join(parts)
    ids = np.asarray(tok.encode(text), dtype=np.int64)
    want = _byte_lengths_to_char_arrays(text, tok._byte_len[ids])
    got = tok.offset_arrays(text)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_cl100k_lead_byte_table_matches_the_ranks():
    tok = get_tokenizer("cl100k")
    lead = tok._lead_bytes()
    enc = tok.encoding
    for rank in [0, 1, 32, 200, 255, 1000, 5000, 50000, 100000]:
        token = enc.decode_single_token_bytes(rank)
        assert lead[rank] == sum(1 for b in token if b & 0xC0 != 0x80)


@pytest.mark.parametrize("name", TOKENIZER_NAMES)
@pytest.mark.parametrize("lists", [True, False])
@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=40), data=st.data())
def test_token_map_bound_counts_agree_with_estimate(name, lists, parts, data):
    """The vectorised planning path (bound_counts) must give exactly TokenMap.estimate."""
    tok = get_tokenizer(name)
    text = "".join(parts)
    lo = data.draw(st.integers(0, min(3, len(text) - 1)))
    tm = TokenMap(text[lo:], tok, base=lo, lists=lists)
    positions = sorted(data.draw(st.lists(st.integers(0, len(text) + 2), min_size=2, max_size=12)))
    upper, lower = tm.bound_counts(positions)
    for x, a in enumerate(positions):
        for y, b in enumerate(positions):
            want = tm.estimate(a, b)
            got = max(0, int(upper[y]) - int(lower[x])) if a < b else 0
            assert got == want, (a, b)


def test_the_public_import_path_re_exports_the_one_implementation():
    """``chunkwise.segmentation.tokens`` is what users import; it must hold the same objects, not copies."""
    from chunkwise.segmentation import tiktoken_bpe, token_map, tokenizers, tokens

    for name in tokens.__all__:
        home = next(m for m in (tokenizers, tiktoken_bpe, token_map) if hasattr(m, name))
        assert getattr(tokens, name) is getattr(home, name)
    assert tokens.get_tokenizer("cl100k") is tokenizers.get_tokenizer("cl100k")
    assert isinstance(tokens.get_tokenizer("cl100k"), tokens.TiktokenTokenizer)


@pytest.mark.parametrize("name", TOKENIZER_NAMES)
@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), min_size=0, max_size=60), base=st.integers(0, 1000))
def test_small_texts_get_the_offsets_of_the_vectorised_path(name, parts, base):
    """A text up to SMALL_TEXT characters is tokenised in Python (no numpy import for a small file); its
    offsets must be the ones the numpy path gives."""
    from chunkwise.segmentation.tokenizers import SMALL_TEXT

    tok = get_tokenizer(name)
    text = "".join(parts)
    assert len(text) <= SMALL_TEXT
    starts, ends = tok.offset_ends(text, base)
    want_starts, want_ends = tok.offset_arrays(text)
    assert list(starts) == [int(s) + base for s in want_starts]
    assert list(ends) == [int(e) + base for e in want_ends]
    assert tok.offsets(text) == [(int(a), int(b)) for a, b in zip(want_starts, want_ends)]


def test_offsets_over_the_small_text_limit_agree_with_a_python_count():
    from chunkwise.segmentation.tokenizers import SMALL_TEXT

    tok = get_tokenizer("minilm")
    text = "Keeper's lamp, 12 ships; naïve café.\n" * (SMALL_TEXT // 30)
    assert len(text) > SMALL_TEXT
    starts, ends = tok.offset_ends(text, 5)
    assert len(ends) == tok.count(text) and starts[0] == 5 and ends[-1] == len(text) + 4
    tm = TokenMap(text, tok)
    assert tm.estimate(0, len(text)) == tok.count(text)
