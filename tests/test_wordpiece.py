"""MiniLM's WordPiece in Python (segmentation/wordpiece.py) gives the Rust tokenizer's tokens, or declines."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.segmentation import wordpiece
from chunkwise.segmentation.tokenizers import HFTokenizer, get_tokenizer, minilm_tokenizer_path
from chunkwise.segmentation.wordpiece import WordPiece

PYTHON = WordPiece.from_file(minilm_tokenizer_path())
RUST = get_tokenizer("minilm").hf  # the Rust tokenizer itself, truncation and padding off


def rust_spans(text: str) -> list[tuple[int, int]]:
    return [tuple(s) for s in RUST.encode(text, add_special_tokens=False).offsets]


def test_the_shipped_file_is_the_set_up_it_reproduces():
    assert PYTHON is not None and len(PYTHON.vocab) == 30522


# words from the vocabulary, pieces of them, punctuation, digits, long runs, [UNK]-making symbols
_ALPHABET = string.ascii_letters + string.digits + string.punctuation + " \t\n\r"
_WORDS = st.sampled_from(
    [
        "The",
        "keeper",
        "unaffable",
        "tokenization",
        "XR-12",
        "don't",
        "e.g.",
        "http://x.org/a?b=1",
        "ünïcode"[:0] + "zzq",
        "a" * 99,
        "b" * 100,
        "c" * 101,
        "[CLS",
        "MASK]",
        "##ing",
        "__init__",
        "3.14159",
        "snake_case",
        "CamelCaseWord",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_WORDS, st.text(_ALPHABET, max_size=30)), max_size=40).map("".join))
def test_same_tokens_as_rust_on_ascii_text(text):
    special = any(s in text for s in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))
    assert PYTHON.covers(text) is not special  # the Rust tokenizer matches those before normalising
    if special:
        return
    ids, spans = PYTHON.encode(text)
    assert spans == rust_spans(text)
    assert ids == RUST.encode(text, add_special_tokens=False).ids


@pytest.mark.parametrize(
    "text",
    ["café au lait", "a\x0bb", "tab\x00null", "see [MASK] here", "[CLS] first", "中文", "x\u00a0y", "emoji 🙂"],
)
def test_declines_what_it_does_not_reproduce(text):
    assert not PYTHON.covers(text)


def test_same_tokens_on_real_text():
    files = sorted(Path(__file__).parent.glob("data/changelog/*.md")) + [Path(wordpiece.__file__)]
    checked = 0
    for path in files:
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            if PYTHON.covers(block):
                assert PYTHON.offsets(block) == rust_spans(block), block
                checked += 1
    assert checked >= 50


def test_every_entry_of_the_shipped_vocabulary_is_found_in_its_bytes():
    """The look-ups a short run makes before the vocabulary is parsed (:class:`wordpiece.Vocabulary`) give the
    parsed object's id for every entry it can be asked (printable ASCII), and nothing for pieces not in it."""
    import json
    import random

    raw = minilm_tokenizer_path().read_bytes()
    parsed = json.loads(raw)["model"]["vocab"]
    spec, vocab = wordpiece.Vocabulary.of_file(raw)
    assert vocab._dict is None and spec["model"]["vocab"] == {}  # the shipped file is searched, not parsed
    asked = [piece for piece in parsed if piece.isascii() and piece.isprintable()]
    assert len(asked) > 28_000
    assert [vocab._search(piece) for piece in asked] == [parsed[piece] for piece in asked]
    rnd = random.Random(7)
    others = list(string.printable[:95]) + [
        "".join(rnd.choice(string.ascii_lowercase + '#",:{}[]\\') for _ in range(rnd.randint(1, 9)))
        for _ in range(2000)
    ]
    assert [vocab._search(piece) for piece in others] == [parsed.get(piece) for piece in others]


def test_the_vocabulary_is_parsed_after_its_look_ups(monkeypatch):
    monkeypatch.setattr(wordpiece, "RAW_LOOKUPS", 3)
    vocab = WordPiece.from_file(minilm_tokenizer_path()).vocab
    assert [vocab.get(p) for p in ("the", "keeper", "zzqx", "the")] == [
        PYTHON.vocab.get(p) for p in ("the", "keeper", "zzqx", "the")
    ]
    assert vocab._dict is None  # three pieces searched ("the" twice)
    assert vocab.get("wick") == PYTHON.vocab.get("wick") and vocab._dict is not None and len(vocab) == 30522
    assert vocab.get("café") == PYTHON.vocab.get("café")  # not printable ASCII: always the parsed object


@pytest.mark.parametrize("indent", [None, 2])
def test_a_file_written_otherwise_is_parsed_at_once(tmp_path, indent):
    import json

    spec = json.loads(minilm_tokenizer_path().read_text(encoding="utf-8"))
    spec["model"]["extra"] = {"the": 1}  # the vocabulary no longer the file's last object
    other = tmp_path / "tokenizer.json"
    separators = (",", ":") if indent is None else None  # compact as the shipped file, or indented
    other.write_text(json.dumps(spec, indent=indent, separators=separators), encoding="utf-8")
    vocab = wordpiece.Vocabulary.of_file(other.read_bytes())[1]
    assert vocab._dict is not None and vocab.get("the") == PYTHON.vocab.get("the")
    del spec["model"]["extra"]
    other.write_text(json.dumps(spec, indent=2), encoding="utf-8")  # whitespace in the object
    assert wordpiece.Vocabulary.of_file(other.read_bytes())[1]._dict is not None


@pytest.mark.parametrize(
    ("old", "new", "piece"),
    [(b',"/":', b',"\\/":', "/"), (b',"a":', b',"\\u0061":', "a")],  # printable ASCII written another way
)
def test_a_file_escaping_printable_ascii_otherwise_is_parsed_at_once(old, new, piece):
    raw = minilm_tokenizer_path().read_bytes()
    assert raw.count(old) == 1
    vocab = wordpiece.Vocabulary.of_file(raw.replace(old, new))[1]
    assert vocab._dict is not None and vocab.get(piece) == PYTHON.vocab.get(piece) is not None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(b"}\\,/ua"), max_size=40).map(bytes), st.data())
def test_a_byte_followed_by_another_is_found_as_a_search_for_the_pair_finds_it(raw, data):
    # what Vocabulary.of_file checks with one scan for the rarer first byte, against a search per pair
    start = data.draw(st.integers(0, len(raw)))
    stop = data.draw(st.integers(start, len(raw)))
    for lead, after in ((b"}", (b",",)), (b"\\", (b"/", b"u"))):
        expected = any(raw.find(lead + a, start, stop) >= 0 for a in after)
        assert wordpiece._followed(raw, start, stop, lead, after) is expected


def test_an_id_that_is_not_a_plain_integer_is_read_as_json_reads_it():
    raw = minilm_tokenizer_path().read_bytes().replace(b',"/":1013,', b',"/":-5,')
    vocab = wordpiece.Vocabulary.of_file(raw)[1]
    assert vocab._dict is None  # the layout is still the searched one
    assert vocab.get("/") == -5 and vocab.get("the") == PYTHON.vocab.get("the")


def test_a_look_up_that_began_before_another_thread_parsed_the_vocabulary(monkeypatch):
    """A tokenizer is shared between threads (``chunkwise serve``): another thread may parse the object while a
    look-up searches the bytes; the look-up still finds its piece."""
    vocab = WordPiece.from_file(minilm_tokenizer_path()).vocab
    search = wordpiece.Vocabulary._search

    def parsed_meanwhile(self, piece):
        self._parsed()  # what another thread's RAW_LOOKUPS + 1st look-up does
        return search(self, piece)

    monkeypatch.setattr(wordpiece.Vocabulary, "_search", parsed_meanwhile)
    assert vocab.get("the") == PYTHON.vocab.get("the") == 1996


def test_same_tokens_on_real_text_before_the_vocabulary_is_parsed(monkeypatch):
    monkeypatch.setattr(wordpiece, "RAW_LOOKUPS", 10**9)  # every look-up in the file's bytes
    searched = WordPiece.from_file(minilm_tokenizer_path())
    for block in Path(wordpiece.__file__).read_text(encoding="utf-8").split("\n\n")[:40]:
        if searched.covers(block):
            assert searched.encode(block) == (RUST.encode(block, add_special_tokens=False).ids, rust_spans(block))
    assert searched.vocab._dict is None


def test_another_set_up_is_not_reproduced(tmp_path):
    import json

    spec = json.loads(minilm_tokenizer_path().read_text(encoding="utf-8"))
    spec["normalizer"]["lowercase"] = False
    other = tmp_path / "tokenizer.json"
    other.write_text(json.dumps(spec), encoding="utf-8")
    assert WordPiece.from_file(other) is None
    assert WordPiece.from_file(tmp_path / "missing.json") is None


def test_minilm_counts_in_python_until_its_budget_then_in_rust(monkeypatch):
    monkeypatch.setattr(wordpiece, "PYTHON_BUDGET", 100)
    tok = HFTokenizer(minilm_tokenizer_path(), "minilm")
    text = "The keeper trims the wick; ships pass in the storm."
    assert tok.count(text) == len(rust_spans(text)) and tok._hf is None  # Python, no Rust tokenizer loaded
    assert tok.offsets("café") == rust_spans("café") and tok._hf is not None  # not covered: Rust
    tok = HFTokenizer(minilm_tokenizer_path(), "minilm")
    assert tok.count_batch([text, text]) == [len(rust_spans(text))] * 2
    assert tok.count(text * 3) == len(rust_spans(text * 3)) and tok._hf is not None  # budget spent


def test_the_embedder_encodes_a_few_short_texts_without_the_rust_tokenizer():
    """A query's ids come from the Python WordPiece (no Rust tokenizer loaded), the same as the Rust ones with
    [CLS]/[SEP]; a batch with a text it does not cover goes to Rust whole."""
    from chunkwise.embeddings import minilm

    tok = HFTokenizer(minilm_tokenizer_path(), "minilm")  # fresh: the Rust tokenizer not loaded
    emb = minilm.MiniLMEmbedder.__new__(minilm.MiniLMEmbedder)  # its tokenisation alone, no session
    emb._tokenizer, emb.positions, emb.truncated = tok, 512, 0
    emb._cls, emb._sep = tok.token_id("[CLS]"), tok.token_id("[SEP]")
    texts = ["lighthouse lens", "The keeper trims the wick; ships pass in the storm (XR-12)."]
    assert emb._encode(texts) == [RUST.encode(t, add_special_tokens=True).ids for t in texts]
    assert tok._hf is None
    mixed = [*texts, "café au lait"]
    assert emb._encode(mixed) == [RUST.encode(t, add_special_tokens=True).ids for t in mixed]
    assert tok._hf is not None
