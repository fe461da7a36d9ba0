"""The invariants every strategy keeps, on random and hostile text, in every tokenizer.

For every strategy in :data:`STRATEGIES` and every tokenizer: chunks are exact slices; starts never
decrease; every non-whitespace character is in some chunk; no chunk is over ``max_tokens`` (counted again
here, not trusted); the same input gives the same chunks and ids. Hostile input: empty, whitespace only,
one character, emoji and combining marks, CRLF, NUL, right-to-left scripts, CJK, and a long run with no
spaces or punctuation (small under hypothesis, a few MB in an explicit test).

To add a strategy, append its name to :data:`STRATEGIES`; strategies listed in
``chunkwise.strategies.SEMANTIC_STRATEGIES`` get the dependency-free ``FakeEmbedder`` from conftest.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FakeEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies import SEMANTIC_STRATEGIES, get_strategy
from chunkwise.strategies.base import max_chars_for

#: every strategy the invariants are checked for (extend this list for new strategies)
STRATEGIES = ["fixed", "sentence", "recursive", "markdown", "rst", "code", "auto", "semantic", "maxmin", "cohesion"]
TOKENIZERS = ["minilm", "cl100k", "chars", "words"]


def make(name: str, tokenizer: str, **params):
    if name in SEMANTIC_STRATEGIES:
        params.setdefault("embedder", FakeEmbedder(tokenizer=tokenizer))
    return get_strategy(name, tokenizer=tokenizer, **params)


def check(text: str, chunks, max_tokens: int, tokenizer: str) -> None:
    """Assert every invariant for ``chunks`` of ``text``."""
    tok = get_tokenizer(tokenizer)
    bound = max_chars_for(max_tokens)
    covered = np.zeros(len(text) + 1, dtype=np.int64)
    prev_start = -1
    for i, c in enumerate(chunks):
        assert c.index == i
        assert 0 <= c.start < c.end <= len(text)
        assert text[c.start : c.end] == c.text, "not an exact slice"
        assert c.start >= prev_start, "starts decrease"
        prev_start = c.start
        n = tok.count(c.text)
        assert n == c.token_count, f"token_count {c.token_count} but the text counts {n}"
        assert n <= max_tokens, f"chunk of {n} tokens over max_tokens={max_tokens}"
        assert len(c.text) <= bound, f"chunk of {len(c.text)} characters over the bound {bound}"
        assert c.text.strip(), "whitespace-only chunk"
        covered[c.start] += 1
        covered[c.end] -= 1
    inside = np.cumsum(covered)[: len(text)] > 0
    missing = [i for i in np.flatnonzero(~inside).tolist() if not text[i].isspace()]
    assert not missing, f"characters not in any chunk at {missing[:10]}: {[text[i] for i in missing[:10]]}"


def run_twice(name: str, tokenizer: str, text: str, **params):
    first = make(name, tokenizer, **params).chunk(Document(text))
    again = make(name, tokenizer, **params).chunk(Document(text))
    assert [(c.id, c.start, c.end, c.token_count, c.section) for c in first] == [
        (c.id, c.start, c.end, c.token_count, c.section) for c in again
    ], "not deterministic"
    assert len({c.id for c in first}) == len(first), "duplicate ids"
    return first


# -- hostile fragments -------------------------------------------------------------------------------------
FRAGMENTS = [
    "Dr. Smith went to Washington. ",
    "It cost $3.50, i.e. too much! ",
    "Really?! ",
    "See v2.4.13... ",
    "\n\n",
    "\n",
    "\r\n",
    "\r\n\r\n",
    "\t",
    "   ",
    "\x00",
    "\u200b",
    "\ufeff",
    "🤖",
    "👩‍👩‍👧",
    "🇩🇪",
    "e\u0301",
    "a\u0308\u0304",
    "\u0301",
    "مرحبا بالعالم. ",
    "שלום עולם. ",
    "\u202eRTL\u202c",
    "这是一个句子。",
    "日本語の文です！",
    "你好？",
    "한국어 문장입니다. ",
    "# Heading\n",
    "## Sub heading\n",
    "```\ncode # not a heading\n```\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "- item one\n",
    "1. first\n",
    "> quote\n",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "x" * 300,
    "1234567890" * 5,
    "https://example.com/a/b?c=d ",
    "mail@example.org ",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ",
]

texts = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=25).map("".join),
    st.text(max_size=300),
)
params = st.fixed_dictionaries(
    {
        "max_tokens": st.sampled_from([6, 9, 16, 40, 128]),
        "overlap_share": st.sampled_from([0, 0, 0.2, 0.5]),
        "min_share": st.sampled_from([0, 0, 0.3]),
    }
)


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("name", STRATEGIES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, p=params)
def test_invariants_hypothesis(name, tokenizer, text, p):
    max_tokens = p["max_tokens"]
    overlap = int(max_tokens * p["overlap_share"])
    min_tokens = int(max_tokens * p["min_share"])
    chunks = run_twice(name, tokenizer, text, max_tokens=max_tokens, overlap=overlap, min_tokens=min_tokens)
    check(text, chunks, max_tokens, tokenizer)


HOSTILE = {
    "empty": "",
    "whitespace": " \n\t\r\n  \u3000\n",
    "one char": "x",
    "one emoji": "🤖",
    "nul": "a\x00b\x00\x00c",
    "crlf": "Line one.\r\nLine two.\r\n\r\nPara two.\r\n",
    "lone cr": "first\rsecond\r\rthird",
    "combining": "e\u0301" * 50 + " " + "\u0301" * 30,
    "emoji": "👩‍👩‍👧🇩🇪🤖" * 40,
    "rtl": "مرحبا بالعالم. هذه جملة ثانية. " * 20 + "שלום עולם. " * 20,
    "cjk": "这是第一个句子。这是第二个句子！日本語の文です。" * 30,
    "no space": "abcdefghij" * 500,
    "mixed run": "ab中🤖é\x00" * 300,
}


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("name", STRATEGIES)
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_invariants_hostile(name, tokenizer, case):
    text = HOSTILE[case]
    chunks = run_twice(name, tokenizer, text, max_tokens=8, overlap=2)
    check(text, chunks, 8, tokenizer)
    if not text.strip():
        assert chunks == []


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("name", STRATEGIES)
def test_invariants_megabytes_without_spaces(name, tokenizer):
    """3 MB with no spaces or punctuation: fast, within the cap and the character bound."""
    text = "abcdefghij" * 300_000
    chunks = make(name, tokenizer, max_tokens=256, overlap=16).chunk(text)
    check(text, chunks, 256, tokenizer)
    assert max(len(c.text) for c in chunks) <= max_chars_for(256) == 4096


@pytest.mark.parametrize("name", STRATEGIES)
def test_too_small_cap_for_one_character_is_a_config_error(name):
    # one emoji is several cl100k tokens: with max_tokens=1 it cannot be kept whole, nor left out
    with pytest.raises(ConfigError, match="too small"):
        make(name, "cl100k", max_tokens=1).chunk("🤖")


#: inputs that once broke an invariant (found by random search), kept as regression cases
REGRESSIONS = [
    # an overlapped chunk over the cap was re-split and repeated its neighbour's piece (duplicate ids)
    (
        "markdown",
        "cl100k",
        dict(max_tokens=6, overlap=3),
        "- item one\n   See v2.4.13... éLorem ipsum dolor sit amet, consectetur adipiscing elit. ```\n"
        "code # not a heading\n```\n" + "x" * 300 + "שלום עולם. Lorem ipsum dolor sit amet, consectetur "
        "adipiscing elit. é",
    ),
    # a fixed window whose recount disagreed could stop shrinking (endless loop)
    (
        "fixed",
        "minilm",
        dict(max_tokens=6, overlap=1),
        "## Sub heading\nReally?! See v2.4.13... \n> quote\n日本語の文です！\r\nשלום עולם. Really?! \t" + "x" * 300,
    ),
    # sentences packed with overlap and then repaired one by one repeated chunks
    (
        "sentence",
        "minilm",
        dict(max_tokens=6, overlap=1),
        "## Sub heading\nReally?! See v2.4.13... \n> quote\n- item one\n> quote\n日本語の文です！\r\n"
        "שלום עולם. Really?! \t" + "x" * 300,
    ),
]


@pytest.mark.parametrize("name,tokenizer,params,text", REGRESSIONS)
def test_invariants_regressions(name, tokenizer, params, text):
    chunks = run_twice(name, tokenizer, text, **params)
    check(text, chunks, params["max_tokens"], tokenizer)
