"""MiniLM's WordPiece in Python, for the few texts a short run counts: the same tokens as the Rust tokenizer.

Why: ``chunkwise chunk small.txt`` spent more on loading the Hugging Face tokenizer (``import tokenizers``
and ``Tokenizer.from_file``: about 40 CPU-ms, 1.6x Python's own start-up) than on anything else it does.
Counting a few kilobytes here costs a millisecond; the vocabulary is read from the same ``tokenizer.json``
(``json``, no cache to trust), and only after its normaliser, pre-tokeniser and model are checked to be the
BERT ones this module reproduces. Past :data:`PYTHON_BUDGET` characters in a process, or once the Rust
tokenizer is loaded anyway (an embedder needs it), the Rust one counts (:class:`~.tokenizers.HFTokenizer`).
The vocabulary itself (30,522 entries) is parsed only once a run has looked up more than a few dozen pieces
(:class:`Vocabulary`).

What it covers, exactly: text made of printable ASCII, tabs and line breaks, without the special tokens'
text (``[CLS]``...), which the Rust tokenizer matches before normalising. There BERT's normaliser only
lowercases and turns ``\\t\\n\\r`` into spaces (same length, so offsets are the original text's), its
pre-tokeniser cuts at whitespace and around every ASCII punctuation character, and WordPiece takes the
longest vocabulary entry at each place (``##`` inside a word), a word over 100 characters or one with a
piece not in the vocabulary being one ``[UNK]`` over the whole word. Any other text returns ``None`` and is
counted in Rust. ``tests/test_wordpiece.py`` compares both on generated and real text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

#: characters of text tokenised in Python per process before the Rust tokenizer is loaded instead (Python
#: takes ~1 CPU-ms per 2,000 characters, the Rust tokenizer ~40 CPU-ms to load)
PYTHON_BUDGET = 64 * 1024

#: anything outside printable ASCII, tab, line feed and carriage return
_OUTSIDE = re.compile(r"[^\t\n\r -~]")
#: BERT's pre-tokens of such text: ASCII letter/digit runs, and each ASCII punctuation character alone
_PRE_TOKEN = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")

#: the tokenizer.json sections this module reproduces (anything else: the Rust tokenizer counts)
_EXPECTED = {
    "normalizer": {
        "type": "BertNormalizer",
        "clean_text": True,
        "handle_chinese_chars": True,
        "strip_accents": None,
        "lowercase": True,
    },
    "pre_tokenizer": {"type": "BertPreTokenizer"},
}
#: WordPiece's longest word; a longer one is one [UNK]
MAX_WORD = 100
_MODEL = {
    "type": "WordPiece",
    "unk_token": "[UNK]",
    "continuing_subword_prefix": "##",
    "max_input_chars_per_word": MAX_WORD,
}


#: pieces a :class:`Vocabulary` finds in the file's bytes before it parses the whole vocabulary once (a
#: look-up there costs 0.03-0.2 CPU-ms, the parse ~12: a two-paragraph text needs ~20 look-ups, a page ~1,000)
RAW_LOOKUPS = 48

#: the ``model`` object's ``vocab`` key: the vocabulary, the last entry of the file (see :meth:`Vocabulary.of_file`)
_VOCAB_KEY = b'"vocab":{'


def _followed(raw: bytes, start: int, stop: int, lead: bytes, after: tuple[bytes, ...]) -> bool:
    """Whether ``raw[start:stop]`` (``0 <= start <= stop``) holds ``lead`` followed by one of the bytes
    ``after``: what a search for each two-byte pair finds, in one scan for the one byte (``memchr``, ~20x
    faster than a two-byte search over the vocabulary's 460 KB, where ``lead`` is rare)."""
    at = raw.find(lead, start, stop)
    while at >= 0:
        if at + 1 < stop and raw[at + 1 : at + 2] in after:
            return True
        at = raw.find(lead, at + 1, stop)
    return False


class Vocabulary:
    """A WordPiece vocabulary (piece -> id) from the ``vocab`` object of a ``tokenizer.json``: the object is
    parsed on the :data:`RAW_LOOKUPS` + 1st look-up (``json.loads`` of 30,522 entries, ~12 CPU-ms: more than
    anything else a short ``chunkwise chunk`` does), the ones before are found in its bytes.

    How a piece is found there: the Hugging Face library writes the object as compact JSON, piece -> integer,
    so entry ``p`` is the bytes ``"p":ID`` right after the ``{`` or ``,`` that opens it, ``p`` written as JSON
    writes it (for printable ASCII, which is all this module tokenises: ``\\"`` and ``\\\\`` escaped, nothing
    else). Inside a key every ``"`` is escaped, so those bytes after ``{`` or ``,`` start an entry and nothing
    else. :meth:`of_file` finds them only in a file where the object is the last value of ``model``, itself the
    file's last entry, and is written without whitespace; any other file's vocabulary is parsed at once.
    ``tests/test_wordpiece.py`` looks every entry of the shipped file up both ways.
    """

    def __init__(self, parsed: dict[str, int] | None = None, raw: bytes = b"", start: int = 0, end: int = 0):
        #: the parsed object, or ``None`` while look-ups search ``raw[start:end]`` (the object's JSON bytes)
        self._dict = parsed
        self._raw, self._start, self._end = raw, start, end
        self._found: dict[str, int | None] = {}  # the pieces found so far in the bytes (each searched once)

    def get(self, piece: str, default: int | None = None) -> int | None:
        """The id of ``piece``, or ``default`` when it is not in the vocabulary.

        Safe from several threads (a tokenizer is shared: ``chunkwise serve`` tokenises in a thread pool): the
        bytes and the pieces found are never cleared, so a look-up that began before another thread parsed
        the object still finds its piece; two threads may both parse it, which only costs time."""
        parsed = self._dict
        if parsed is not None:
            return parsed.get(piece, default)
        if piece in self._found:  # never removed once there
            found = self._found[piece]
        elif len(self._found) >= RAW_LOOKUPS or not (piece.isascii() and piece.isprintable()):
            return self._parsed().get(piece, default)
        else:
            found = self._found[piece] = self._search(piece)
        return default if found is None else found

    def __getitem__(self, piece: str) -> int:
        found = self.get(piece)
        if found is None:
            raise KeyError(piece)
        return found

    def __len__(self) -> int:
        return len(self._parsed())

    def _parsed(self) -> dict[str, int]:
        """The vocabulary as a dict, the object parsed now if it was not yet."""
        parsed = self._dict
        if parsed is None:
            parsed = self._dict = json.loads(self._raw[self._start : self._end])
        return parsed

    def _search(self, piece: str) -> int | None:
        raw, start, end = self._raw, self._start, self._end
        key = json.dumps(piece).encode("ascii") + b":"
        at = raw.find(key, start, end)
        while at > start and raw[at - 1] not in b"{,":  # inside another key (after an escaped quote)
            at = raw.find(key, at + 1, end)
        if at < 0:
            return None
        first = last = at + len(key)
        while raw[last : last + 1].isdigit():
            last += 1
        if first == last or raw[last : last + 1] not in (b",", b"}"):  # not a plain integer id: as JSON reads it
            return self._parsed().get(piece)
        return int(raw[first:last])

    @classmethod
    def of_file(cls, raw: bytes) -> tuple[dict[str, Any], Vocabulary]:
        """The parsed ``tokenizer.json`` ``raw`` with its vocabulary left out (``spec["model"]["vocab"] == {}``),
        and the vocabulary. Raises ``ValueError`` when ``raw`` is not JSON."""
        at = raw.find(_VOCAB_KEY)
        end = len(raw)
        while end and raw[end - 1] in b" \t\n\r":
            end -= 1
        start, stop = at + len(_VOCAB_KEY) - 1, end - 2  # the object, if the model and the file close after it
        if (
            at >= 0
            and raw.endswith(b"}}}", 0, end)
            and raw[stop - 2 : stop - 1].isdigit()  # its last entry's id
            # no whitespace, no nested object, and no escape that writes printable ASCII another way than
            # json.dumps does (\/, \u0061): else a piece's bytes could differ from what _search looks for
            and not any(raw.find(c, start, stop) >= 0 for c in (b" ", b"\t", b"\n", b"\r"))
            and not _followed(raw, start, stop, b"}", (b",",))
            and not _followed(raw, start, stop, b"\\", (b"/", b"u"))
        ):
            try:
                spec = json.loads(raw[:at] + b'"vocab":{}}}')
            except ValueError:
                spec = None
            if (
                isinstance(spec, dict)
                and list(spec)[-1:] == ["model"]
                and isinstance(spec["model"], dict)
                and list(spec["model"])[-1:] == ["vocab"]
            ):
                return spec, cls(None, raw, start, stop)
        spec = json.loads(raw)  # any other file: parsed whole, as the Rust tokenizer reads it
        vocab = spec["model"]["vocab"] if isinstance(spec, dict) and isinstance(spec.get("model"), dict) else None
        if not isinstance(vocab, dict):
            return spec, cls({})  # not a WordPiece file: WordPiece.from_file declines it
        spec["model"]["vocab"] = {}
        return spec, cls(vocab)


class WordPiece:
    """Token spans of :mod:`this module's <chunkwise.segmentation.wordpiece>` texts, by BERT's rules."""

    def __init__(self, vocab: Vocabulary | dict[str, int], specials: list[str], max_chars: int = MAX_WORD):
        self.vocab = vocab
        self.specials = specials
        self.max_chars = max_chars

    @classmethod
    def from_file(cls, path: str | Path) -> WordPiece | None:
        """The WordPiece of a ``tokenizer.json``, or ``None`` when the file is not the BERT set-up above (or
        cannot be read: the Rust tokenizer then says why)."""
        try:
            spec, vocab = Vocabulary.of_file(Path(path).read_bytes())
            model = spec["model"]
            if any(spec.get(k) != v for k, v in _EXPECTED.items()):
                return None
            if any(model.get(k) != v for k, v in _MODEL.items()) or model.get("vocab") != {}:
                return None
            specials = [t["content"] for t in spec.get("added_tokens") or []]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        if not all(isinstance(s, str) and s for s in specials):
            return None
        return cls(vocab, specials, MAX_WORD)

    def covers(self, text: str) -> bool:
        """Whether :meth:`offsets` gives the Rust tokenizer's tokens for ``text``."""
        if _OUTSIDE.search(text) is not None:
            return False
        return "[" not in text or not any(s in text for s in self.specials)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """The character span of every token of ``text`` (a text :meth:`covers`), in order."""
        return self.encode(text)[1]

    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """The id and the character span of every token of ``text`` (a text :meth:`covers`), in order."""
        vocab = self.vocab
        unk = vocab["[UNK]"]
        ids: list[int] = []
        spans: list[tuple[int, int]] = []
        lowered = text.lower()
        for m in _PRE_TOKEN.finditer(lowered):
            a, b = m.span()
            word = m.group()
            n = b - a
            if n > self.max_chars:
                ids.append(unk)
                spans.append((a, b))
                continue
            pieces: list[tuple[int, int, int]] = []
            start = 0
            while start < n:
                end = n
                while start < end:
                    found = vocab.get(word[start:end] if start == 0 else "##" + word[start:end])
                    if found is not None:
                        break
                    end -= 1
                else:  # no entry starts here: the whole word is [UNK]
                    pieces = [(unk, a, b)]
                    break
                pieces.append((found, a + start, a + end))
                start = end
            for token, start, end in pieces:
                ids.append(token)
                spans.append((start, end))
        return ids, spans
