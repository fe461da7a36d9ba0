"""MiniLM's WordPiece in Python, for the few texts a short run counts: the same tokens as the Rust tokenizer.

Why: ``chunkwise chunk small.txt`` spent more on loading the Hugging Face tokenizer (``import tokenizers``
and ``Tokenizer.from_file``: about 40 CPU-ms, 1.6x Python's own start-up) than on anything else it does.
Counting a few kilobytes here costs a millisecond; the vocabulary is read from the same ``tokenizer.json``
(``json``, no cache to trust), and only after its normaliser, pre-tokeniser and model are checked to be the
BERT ones this module reproduces. Past :data:`PYTHON_BUDGET` characters in a process, or once the Rust
tokenizer is loaded anyway (an embedder needs it), the Rust one counts (:class:`~.tokenizers.HFTokenizer`).

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


class WordPiece:
    """Token spans of :mod:`this module's <chunkwise.segmentation.wordpiece>` texts, by BERT's rules."""

    def __init__(self, vocab: dict[str, int], specials: list[str], max_chars: int = MAX_WORD):
        self.vocab = vocab
        self.specials = specials
        self.max_chars = max_chars

    @classmethod
    def from_file(cls, path: str | Path) -> WordPiece | None:
        """The WordPiece of a ``tokenizer.json``, or ``None`` when the file is not the BERT set-up above (or
        cannot be read: the Rust tokenizer then says why)."""
        try:
            spec = json.loads(Path(path).read_text(encoding="utf-8"))
            model = spec["model"]
            if any(spec.get(k) != v for k, v in _EXPECTED.items()):
                return None
            if any(model.get(k) != v for k, v in _MODEL.items()) or not isinstance(model.get("vocab"), dict):
                return None
            specials = [t["content"] for t in spec.get("added_tokens") or []]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not all(isinstance(s, str) and s for s in specials):
            return None
        return cls(model["vocab"], specials, MAX_WORD)

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
