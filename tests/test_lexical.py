"""BM25 terms that keep identifiers whole: a version or a name in the query matches the same identifier in
any chunk, never a piece of a longer one (``3.8.1`` is not ``3.8.13``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.segmentation.lexical import contains_term, key_terms, lexical_terms, stopwords
from chunkwise.store.bm25 import BM25Fallback, BM25Postings

FILLER = "The release fixes several problems in the parser and adds new options for users."

numbers = st.integers(min_value=0, max_value=120).map(str)
versions = st.builds(
    lambda parts, v, pre: ("v" if v else "") + ".".join(parts) + pre,
    st.lists(numbers, min_size=2, max_size=4),
    st.booleans(),
    st.sampled_from(["", "-rc.1", "-beta.2", "a1", "b3", "+build.7"]),
)
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=7)
names = st.one_of(
    st.lists(words, min_size=2, max_size=3).map("_".join),  # snake_case
    st.lists(words, min_size=2, max_size=3).map(".".join),  # dotted.name
    st.lists(words, min_size=2, max_size=3).map(lambda ws: ws[0] + "".join(w.capitalize() for w in ws[1:])),
)
identifiers = st.one_of(versions, names)


def _longer(ident: str, tail: str, joiner: str) -> str:
    """An identifier that starts with ``ident`` and goes on (a longer version or name)."""
    if joiner == "digits" and ident[-1].isdigit():
        return ident + tail  # 3.8.1 -> 3.8.13
    if joiner == "_":
        return f"{ident}_{tail}x"
    return f"{ident}.{tail}"


@settings(max_examples=150, deadline=None)
@given(identifiers, st.integers(min_value=0, max_value=99).map(str), st.sampled_from(["digits", "_", "."]))
def test_an_identifier_in_the_query_matches_it_whole_and_never_a_longer_one(ident, tail, joiner):
    longer = _longer(ident, tail, joiner)
    bm = BM25Fallback(
        [
            ("whole", f"{FILLER} Changes in {ident}: faster start."),
            ("longer", f"{FILLER} Changes in {longer}: faster start."),
            ("none", FILLER),
        ]
    )
    hits = [i for i, _ in bm.search(f"What changed in {ident}?", 3)]
    assert hits and hits[0] == "whole"
    assert "longer" not in hits  # the other words (changes, faster, start) are in both: the key decides
    # a corpus that only holds the longer identifier does not match it at all on the identifier
    only_longer = BM25Fallback([("longer", f"{FILLER} {longer}"), ("none", FILLER)])
    assert only_longer.search(ident, 3) == []


@settings(max_examples=100, deadline=None)
@given(versions)
def test_a_leading_v_does_not_make_another_version(version):
    bare = version[1:] if version[0] == "v" else version
    assert lexical_terms(f"v{bare}") == lexical_terms(bare)
    bm = BM25Fallback([("a", f"## v{bare}\n{FILLER}"), ("b", FILLER)])
    assert [i for i, _ in bm.search(bare, 2)] == ["a"]


def test_words_inside_names_are_found_by_words():
    # (FILLER's "users" would match "user": number is folded)
    bm = BM25Fallback([("a", "Set max_tokens and call os.path.join or getUserName."), ("b", "Rain all day.")])
    for query in ("tokens", "join", "user name"):
        assert [i for i, _ in bm.search(query, 2)] == ["a"], query
    assert bm.search("max_tokens_total", 2) == []


def test_terms_of_prose_and_identifiers():
    assert lexical_terms("Python 3.8.13 is out", parts=False) == ["python", "3.8.13", "out"]
    assert lexical_terms("real-time x86-64 utf-8 200ms 404.", parts=False) == [
        "real",
        "time",
        "x86-64",
        "utf-8",
        "200ms",
        "404",
    ]
    assert key_terms("What is new in Pydantic v2.5.0, e.g. for os.path and 404?") == ["2.5.0", "os.path", "404"]
    assert contains_term("## 3.8.13 (2024)", "3.8.13") and not contains_term("## 3.8.13 (2024)", "3.8.1")


def test_a_saved_index_made_with_other_terms_is_not_loaded(tmp_path):
    """A Milvus Lite directory keeps its BM25 index between processes: one saved with other terms (or by a
    version that wrote none) is refused, so the store builds it again with whole identifiers."""
    import pytest

    bm = BM25Fallback([("a", "Changes in 3.8.13"), ("b", FILLER)])
    bm.save(tmp_path / "bm25")
    assert [i for i, _ in BM25Fallback.load(tmp_path / "bm25").search("3.8.13", 2)] == ["a"]
    (tmp_path / "bm25" / "tokenizer.txt").write_text("bm25s-words", encoding="utf-8")
    with pytest.raises(ValueError, match="other terms"):
        BM25Fallback.load(tmp_path / "bm25")
    (tmp_path / "bm25" / "tokenizer.txt").unlink()
    with pytest.raises(OSError):
        BM25Fallback.load(tmp_path / "bm25")


def test_singular_folds_number_only():
    from chunkwise.segmentation.lexical import singular

    cases = {
        "tokens": "token",
        "queries": "query",
        "files": "file",
        "trees": "tree",
        "heroes": "heroe",  # -oes keeps its e: Harman's rule, as measured
        "status": "status",
        "process": "process",
        "designer": "designer",  # a role is not its verb: only number is folded
        "discussion": "discussion",
        "has": "has",  # three letters or fewer are kept
    }
    assert {w: singular(w) for w in cases} == cases


# words that end in neither s, u, e nor i, and are not stop words: w + "s" is their plural under the rule; nor
# one of FILLER's own terms ("add", from its "adds"), which the filler chunk would then rightly match
FILLER_TERMS = frozenset(lexical_terms(FILLER, fold=True))
plain = st.text(alphabet="abcdfghjklmnoprtvwxz", min_size=3, max_size=8).filter(
    lambda w: w not in stopwords() and w not in FILLER_TERMS
)


@settings(max_examples=100, deadline=None)
@given(plain)
def test_a_word_finds_its_plural_and_the_plural_the_word(word):
    """Both BM25 copies (bm25s for the in-memory store, the postings beside Milvus Lite) fold number on both
    sides: a question in the plural finds a chunk in the singular, in prose or inside a name, and back."""
    texts = [
        ("prose", f"{FILLER} One {word} here."),
        ("plural", f"{FILLER} Many {word}s here."),
        ("name", f"def get_{word}s(): pass"),
        ("none", FILLER),
    ]
    for bm in (BM25Fallback(texts), BM25Postings(texts)):
        for query in (word, f"{word}s", f"{word.upper()}S"):
            assert {i for i, _ in bm.search(query, 4)} == {"prose", "plural", "name"}, (type(bm), query)


def test_whole_identifiers_are_not_folded():
    """``get_items`` and ``get_item`` stay two names (and ``getItems`` / ``getItem``): only words are folded."""
    for bm in (
        BM25Fallback([("a", "call get_item here"), ("b", FILLER)]),
        BM25Postings([("a", "call getItem here"), ("b", FILLER)]),
    ):
        assert bm.search("get_items", 2) == [] and bm.search("getItems", 2) == []
    assert lexical_terms("get_items users", fold=True) == ["get_items", "get", "item", "user"]
    assert lexical_terms("get_items users") == ["get_items", "get", "items", "users"]
