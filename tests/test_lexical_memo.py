"""The memoised :func:`lexical_terms` gives exactly the terms of the plain one it replaced, for every input.

``reference_lexical_terms`` below is a verbatim copy of the implementation before the memo (one pass of
per-character checks for every word); the current one must agree with it on random and hostile text
(any unicode, identifiers, versions, snake/camel case, plurals, hyphens, underscores) and on real text,
for every flag pair, on a first call (memo misses) and on a repeated one (memo hits), and when the memo
is emptied because it is full.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.segmentation import lexical
from chunkwise.segmentation.lexical import lexical_terms

ROOT = Path(__file__).resolve().parents[1]
FLAGS = [(p, f) for p in (False, True) for f in (False, True)]

# --- reference: the implementation before the memo, copied verbatim (do not "fix" it) -----------------
REFERENCE_TERM = re.compile(r"_*[^\W_]+(?:[._+\-]+[^\W_]+)*_*", re.UNICODE)
REFERENCE_JOINER = re.compile(r"[._+\-]+")
REFERENCE_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[^\W\d_]+")
REFERENCE_VERSION_V = re.compile(r"^[vV](?=\d+(?:\.\d+)+)")
REFERENCE_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)


def reference_is_identifier(raw: str) -> bool:
    if any(ch.isdigit() for ch in raw) or any(ch in "._+" for ch in raw):
        return True
    return any(a.islower() and b.isupper() for a, b in zip(raw, raw[1:]))


def reference_parts(raw: str) -> list[str]:
    out = []
    for piece in REFERENCE_JOINER.split(raw.strip("_")):
        out += [w.lower() for w in REFERENCE_CAMEL.findall(piece) if not any(ch.isdigit() for ch in w)]
    return out


def reference_singular(word: str) -> str:
    if len(word) <= 3 or not word.endswith("s"):
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith(("us", "ss")):
        return word
    return word[:-1]


def reference_lexical_terms(text: str, parts: bool = True, fold: bool = False) -> list[str]:
    stop = REFERENCE_STOPWORDS
    num = reference_singular if fold else (lambda w: w)
    out: list[str] = []
    for m in REFERENCE_TERM.finditer(text):
        raw = m.group()
        if "-" in raw and not reference_is_identifier(raw):
            words = [w for w in raw.split("-") if w]
        elif reference_is_identifier(raw):
            whole = REFERENCE_VERSION_V.sub("", raw).lower()
            out.append(whole)
            if parts:
                out += [num(w) for w in reference_parts(raw) if len(w) > 1 and w not in stop and w != whole]
            continue
        else:
            words = [raw]
        for w in words:
            w = w.lower()
            if len(w) > 1 and w not in stop:
                out.append(num(w))
    return out


# --- strategies --------------------------------------------------------------------------------------
# letters whose case or digit-ness is unusual: dotted/dotless i, the titlecase digraph, sharp s and its
# capital, Greek final sigma, superscript and Arabic-Indic digits, fullwidth letters, a combining accent,
# CJK, the Roman numeral, a non-breaking space
TRICKY = "aAsSvVzZ0139_.-+ \n\tİıǅǄßẞςΣσ²³٣Ｖｖ１é\u0301中ー\u2167\u00a0'\"/:;,()"
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=9)
plurals = st.builds(lambda w, e: w + e, words, st.sampled_from(["s", "es", "ies", "ss", "us", "eies", "aes", "oes"]))
versions = st.builds(
    lambda ns, v, pre: v + ".".join(map(str, ns)) + pre,
    st.lists(st.integers(0, 120), min_size=1, max_size=4),
    st.sampled_from(["", "v", "V"]),
    st.sampled_from(["", "-rc.1", "-beta.2", "a1", "+build.7", "ms", "s"]),
)
snake = st.lists(st.one_of(words, plurals), min_size=1, max_size=4).map("_".join)
camel = st.lists(st.one_of(words, plurals), min_size=1, max_size=4).map(
    lambda ws: ws[0] + "".join(w.capitalize() if i % 2 else w.upper() for i, w in enumerate(ws[1:]))
)
dotted = st.lists(st.one_of(words, plurals), min_size=1, max_size=4).map(".".join)
hyphenated = st.lists(st.one_of(words, plurals), min_size=1, max_size=4).map("-".join)
dunder = st.one_of(words, snake).map(lambda w: f"__{w}__")
stop = st.sampled_from(sorted(REFERENCE_STOPWORDS) + ["The", "AND", "is-a", "it's"])
tokens = st.one_of(
    words, plurals, versions, snake, camel, dotted, hyphenated, dunder, stop, st.text(TRICKY, max_size=6)
)
separators = st.sampled_from([" ", "  ", "\n", ". ", ", ", "-", "_", ".", "+", "(", ") ", "\u00a0", ""])
texts = st.one_of(
    st.text(),  # any unicode
    st.text(alphabet=TRICKY),
    st.lists(st.tuples(tokens, separators), max_size=40).map(lambda ts: "".join(a + b for a, b in ts)),
)


def _agree(text: str) -> None:
    for parts, fold in FLAGS:
        want = reference_lexical_terms(text, parts=parts, fold=fold)
        assert lexical_terms(text, parts=parts, fold=fold) == want, (text, parts, fold)
        assert lexical_terms(text, parts=parts, fold=fold) == want, (text, parts, fold)  # now from the memo


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_terms_are_those_of_the_reference_on_random_and_hostile_text(text):
    _agree(text)


def _empty_memos() -> None:
    for key, memo in lexical._MEMOS.items():
        memo.clear()
        lexical._HELD[key] = 0


def _strings_held(memo: dict[str, tuple[str, ...]]) -> int:
    return sum(1 + len(terms) for terms in memo.values())


@settings(max_examples=100, deadline=None)
@given(st.lists(tokens, min_size=1, max_size=30))
def test_the_terms_are_those_of_the_reference_when_the_memo_is_emptied_as_it_fills(some_tokens):
    # a memo of 4 strings is emptied over and over within one text
    saved = lexical._MEMO_STRINGS
    lexical._MEMO_STRINGS = 4
    try:
        _empty_memos()
        _agree(" ".join(some_tokens))
        for key, memo in lexical._MEMOS.items():
            assert _strings_held(memo) == lexical._HELD[key]
            assert len(memo) <= 1 or lexical._HELD[key] <= 4
    finally:
        lexical._MEMO_STRINGS = saved
        _empty_memos()


def test_a_word_too_long_for_the_memo_still_has_its_terms_and_is_not_kept():
    long_name = "get" + "UserNames" * 20  # longer than the memo keeps
    assert len(long_name) > lexical._MEMO_KEY_CHARS
    _agree(f"call {long_name} twice: {long_name}")
    assert all(long_name not in memo for memo in lexical._MEMOS.values())


def test_the_memo_stays_bounded():
    _empty_memos()
    n = lexical._MEMO_STRINGS  # each word and its one term: twice the budget
    lexical_terms(" ".join(f"word{i}" for i in range(n)), fold=True)
    memo = lexical._MEMOS[True, True]
    assert 0 < _strings_held(memo) == lexical._HELD[True, True] <= lexical._MEMO_STRINGS
    assert f"word{n - 1}" in memo  # the latest words are kept


REAL = sorted([*ROOT.glob("docs/*.md"), *ROOT.glob("docs/guide/*.md"), *ROOT.glob("src/chunkwise/segmentation/*.py")])


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_terms_are_those_of_the_reference_on_real_text(path):
    text = path.read_text(encoding="utf-8")
    _agree(text)
    for block in text.split("\n\n"):  # chunk-sized pieces, many words now in the memo
        _agree(block)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_the_word_pattern_matches_the_same_spans_as_the_reference_pattern(text):
    # the pattern's quantifiers are possessive now; key_terms and contains_term scan with it too
    assert [m.span() for m in lexical._TERM.finditer(text)] == [m.span() for m in REFERENCE_TERM.finditer(text)]
