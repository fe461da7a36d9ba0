"""Token counting with exact character offsets, in the tokenizer the chunks are measured in.

Why this module matters: a size cap is only a cap if it is counted in the tokenizer of the model that will
read the chunk. chunkwise counts in the embedding model's own tokenizer by default (``minilm``), or in
OpenAI's ``cl100k``, or in characters or words. Every tokenizer gives, besides a count, the character span of
each token, so strategies can cut *on* token boundaries and still return exact slices of the text.

Counts never include special tokens ([CLS]/[SEP]); the embedder accounts for those in its own limit.

This module holds the :class:`Tokenizer` interface, the character, word and Hugging Face tokenizers and the
look-ups by name through :mod:`chunkwise.registry` (:func:`get_tokenizer`, :func:`resolve_tokenizer`);
cl100k lives in :mod:`.tiktoken_bpe` and span counting over a tokenised text in :mod:`.token_map`.
"""

from __future__ import annotations

import array
import functools
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..registry import LazyModule, lazy_regex

if TYPE_CHECKING:
    import numpy as np

    from .wordpiece import WordPiece
else:
    np = LazyModule("numpy")  # imported when first used: small texts are counted without it

from .. import registry
from ..errors import ConfigError
from ..validation import InstanceOf, Named, check, validated

Span = tuple[int, int]


class Tokenizer(ABC):
    """The narrow interface every strategy counts with."""

    #: short name used in configuration, ids and the CLI (``minilm``, ``cl100k``, ``chars``, ``words``)
    name: str = ""
    #: which cuts keep counts additive (see :meth:`TokenMap.exact`); ``None``: no known rule
    additive: str | None = None
    #: one token per character, token ``i`` is ``[i, i + 1)`` (:class:`TokenMap` then needs no offsets)
    per_character: bool = False
    #: tokens tile the text, each starting where the one before ends (:class:`TokenMap` keeps only the ends)
    tiles_text: bool = False

    @abstractmethod
    def offsets(self, text: str) -> list[Span]:
        """Character span ``(start, end)`` of every token of ``text``, in order.

        Spans never overlap and are non-decreasing; whitespace between tokens may be outside every span.
        """

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        return len(self.offsets(text))

    def offset_arrays(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Token starts and ends as two int64 arrays (what :class:`TokenMap` is built from)."""
        spans = self.offsets(text)
        if not spans:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        arr = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0], arr[:, 1]

    def offset_ends(self, text: str, base: int = 0) -> tuple[array.array[int], array.array[int]]:
        """Token starts and ends plus ``base`` as two ``array.array`` of 64-bit ints (what :class:`TokenMap`
        searches). A text up to :data:`SMALL_TEXT` characters goes through :meth:`offsets` in Python, so
        chunking a small file does not import numpy; a longer one through :meth:`offset_arrays`."""
        if len(text) <= SMALL_TEXT:
            spans = self.offsets(text)
            return array.array("q", [a + base for a, _ in spans]), array.array("q", [b + base for _, b in spans])
        starts, ends = self.offset_arrays(text)
        return _int_array(starts, base), _int_array(ends, base)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts (back-ends override this with a batched call)."""
        return [self.count(t) for t in texts]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class CharTokenizer(Tokenizer):
    """One token per character (code point)."""

    name = "chars"
    additive = "chars"
    per_character = True
    tiles_text = True

    def offsets(self, text: str) -> list[Span]:
        return [(i, i + 1) for i in range(len(text))]

    def count(self, text: str) -> int:
        return len(text)


class WordTokenizer(Tokenizer):
    """One token per run of non-whitespace characters."""

    name = "words"
    additive = "words"
    _word = re.compile(r"\S+")

    def offsets(self, text: str) -> list[Span]:
        return [m.span() for m in self._word.finditer(text)]

    def count(self, text: str) -> int:
        return sum(1 for _ in self._word.finditer(text))


class HFTokenizer(Tokenizer):
    """A Hugging Face ``tokenizers`` tokenizer from a ``tokenizer.json``, with truncation and padding off.

    The MiniLM file ships with truncation and padding fixed at 128; left on, every count would be capped at
    128 and short texts padded to 128, so both are disabled here.
    """

    def __init__(self, path: str | Path, name: str):
        self.name = name
        self.path = str(path)
        # BERT's normaliser and pre-tokeniser (MiniLM) never let a token cross ASCII whitespace
        self.additive = "bert" if name == "minilm" else None
        self._hf = None
        #: MiniLM's WordPiece in Python for a short run's texts (:mod:`.wordpiece`): made on first use,
        #: ``False`` once it does not apply (another file's set-up, or its budget spent)
        self._python: WordPiece | Literal[False] | None = None if name == "minilm" else False
        self._python_chars = 0
        if name != "minilm":  # a user's file is read now, so a bad one is refused before any input
            self._load()

    def _load(self):
        from tokenizers import Tokenizer as _HF

        try:
            tok = _HF.from_file(self.path)
        except Exception as exc:  # tokenizers raises its own Exception for any file it cannot read
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            raise ConfigError(f"not a Hugging Face tokenizer.json ({reason})", source=self.path) from None
        tok.no_truncation()
        tok.no_padding()
        self._hf = tok
        return tok

    @property
    def _tok(self):
        """The Rust tokenizer, loaded on first use (the shipped MiniLM file's: a short run may count without it)."""
        return self._hf if self._hf is not None else self._load()

    @property
    def hf(self):
        """The underlying ``tokenizers.Tokenizer`` (truncation/padding off), for embedders."""
        return self._tok

    def token_id(self, token: str) -> int:
        """The id of ``token`` in the vocabulary (from the Python WordPiece when it is read and the Rust
        tokenizer is not loaded: the same file)."""
        if self._hf is None and self._python is None:
            self.python_encode("")  # reads the vocabulary where the Python WordPiece applies
        found = self._python.vocab.get(token) if self._hf is None and self._python else self._tok.token_to_id(token)
        if found is None:
            raise ConfigError(f"the tokenizer has no {token} token", source=self.path)
        return found

    def _python_offsets(self, text: str) -> list[Span] | None:
        """The token spans of ``text`` from :mod:`.wordpiece` while the Rust tokenizer is not loaded, the
        Python budget lasts and the text is one it covers; else ``None``."""
        found = self.python_encode(text)
        return None if found is None else found[1]

    def python_encode(self, text: str) -> tuple[list[int], list[Span]] | None:
        """The ids and spans of ``text``'s tokens (no special tokens) from :mod:`.wordpiece` while the Rust
        tokenizer is not loaded, the Python budget lasts and the text is one it covers; else ``None`` (the
        Rust tokenizer then gives the same)."""
        if self._python is False or self._hf is not None:
            return None
        if self._python is None:
            from .wordpiece import WordPiece

            self._python = WordPiece.from_file(self.path) or False
        python = self._python
        if python is False or not python.covers(text):
            return None
        from .wordpiece import PYTHON_BUDGET

        self._python_chars += len(text)
        if self._python_chars > PYTHON_BUDGET:
            self._python = False
            return None
        return python.encode(text)

    def offsets(self, text: str) -> list[Span]:
        if len(text) <= SMALL_TEXT and (spans := self._python_offsets(text)) is not None:
            return spans
        if len(text) <= SMALL_TEXT:  # one block (see offset_arrays), in Python: no numpy for a small text
            squeezed, runs = self._squeeze(text)
            if not runs:
                return self._tok.encode(squeezed, add_special_tokens=False).offsets if text else []
        starts, ends = self.offset_arrays(text)
        return list(zip(starts.tolist(), ends.tolist()))

    def _squeeze(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """MiniLM only: replace every ASCII letter/digit run over 100 characters that stands alone (between
        whitespace, ASCII punctuation or the text's ends) by ``a``.

        WordPiece maps any word over 100 characters to one ``[UNK]``, and ``a`` is one token too, so counts
        do not change; but the Rust normaliser spends about a microsecond a character tracking offsets, so a
        5 MB run without spaces would take seconds to count. Returns the new text and, per replaced run,
        ``(its start, its length)`` in the original text.
        """
        if self.additive != "bert" or len(text) <= 100:
            return text, []
        runs = [(m.start(), m.end() - m.start()) for m in _LONG_ASCII_WORD.finditer(text)]
        if not runs:
            return text, []
        parts, pos = [], 0
        for start, length in runs:
            parts.append(text[pos:start])
            parts.append("a")
            pos = start + length
        parts.append(text[pos:])
        return "".join(parts), runs

    def count(self, text: str) -> int:
        if not text:
            return 0
        if len(text) <= SMALL_TEXT and (spans := self._python_offsets(text)) is not None:
            return len(spans)
        text, _ = self._squeeze(text)
        if self.name != "minilm" or len(text) <= _STREAM_CHARS:
            return len(self._tok.encode(text, add_special_tokens=False).ids)
        # long text: count block by block (a few MB of Rust encodings at a time, not the whole text's)
        blocks = _whitespace_blocks(text)
        total = 0
        for group in _block_groups(blocks):
            total += sum(
                len(e.ids) for e in self._tok.encode_batch([text[a:b] for a, b in group], add_special_tokens=False)
            )
        return total

    def offset_arrays(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        if not text:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        squeezed, runs = self._squeeze(text)
        blocks = _whitespace_blocks(squeezed) if self.name == "minilm" else [(0, len(squeezed))]
        if len(blocks) == 1:
            encs = [self._tok.encode(squeezed, add_special_tokens=False)]
            parts = [np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2) for e in encs]
        else:  # the Rust side encodes a batch on all cores; a group at a time, so memory stays bounded
            parts = []
            for group in _block_groups(blocks):
                encs = self._tok.encode_batch([squeezed[a:b] for a, b in group], add_special_tokens=False)
                parts.extend(np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2) + a for e, (a, _) in zip(encs, group))
                del encs
        arr = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)
        starts, ends = arr[:, 0], arr[:, 1]
        if runs:  # map squeezed offsets back: after each placeholder, add the characters it stood for
            lengths = np.asarray([n for _, n in runs], dtype=np.int64)
            squeezed_pos = np.asarray([s for s, _ in runs], dtype=np.int64) - np.concatenate(
                ([0], np.cumsum(lengths - 1)[:-1])
            )
            shift = np.concatenate(([0], np.cumsum(lengths - 1)))
            starts = starts + shift[np.searchsorted(squeezed_pos + 1, starts, side="right")]
            ends = ends + shift[np.searchsorted(squeezed_pos + 1, ends, side="right")]
        return starts, ends

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        if self._python is not False and self._hf is None and sum(len(t) for t in texts) <= SMALL_TEXT:
            return [self.count(t) for t in texts]
        if self.name == "minilm" and sum(len(t) for t in texts) > _STREAM_CHARS:
            return [self.count(t) if len(t) > _STREAM_CHARS else n for t, n in zip(texts, self._count_small(texts))]
        texts = [self._squeeze(t)[0] for t in texts]
        return [len(e.ids) for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def _count_small(self, texts: Sequence[str]) -> list[int]:
        """Counts of the texts up to :data:`_STREAM_CHARS` (others 0), encoded in bounded batches."""
        out = [0] * len(texts)
        batch: list[int] = []
        size = 0
        for i, t in enumerate(list(texts) + [None]):
            if t is None or (batch and size + len(t) > _STREAM_CHARS):
                encs = self._tok.encode_batch([self._squeeze(texts[k])[0] for k in batch], add_special_tokens=False)
                for k, e in zip(batch, encs):
                    out[k] = len(e.ids)
                batch, size = [], 0
            if t is not None and len(t) <= _STREAM_CHARS:
                batch.append(i)
                size += len(t)
        return out


def _int_array(values: np.ndarray, base: int) -> array.array[int]:
    """``values + base`` as an ``array.array`` of 64-bit ints (a sequence of Python ints for bisect)."""
    return array.array("q", (np.asarray(values, dtype=np.int64) + base).tobytes())


#: texts up to this many characters are tokenised into Python lists, not numpy arrays (:meth:`Tokenizer.offset_ends`):
#: a few thousand tokens cost well under a millisecond either way, and numpy's import costs ~0.1 CPU-s
SMALL_TEXT = 16384

#: an ASCII letter/digit run over 100 characters with whitespace, ASCII punctuation or an end on each side
_LONG_ASCII_WORD = lazy_regex(r"(?<![^ \t\n\r!-/:-@\[-`{-~])[A-Za-z0-9]{101,}(?![^ \t\n\r!-/:-@\[-`{-~])")


def _whitespace_blocks(text: str, size: int = 16384) -> list[Span]:
    """Cut a long text into blocks of about ``size`` characters at whitespace or before a CJK ideograph.

    BERT's pre-tokeniser splits on whitespace before WordPiece, and its normaliser puts spaces around every
    CJK ideograph, so tokens never cross either cut and the blocks can be encoded as a parallel batch with
    the same tokens as the whole text. (Chinese and Japanese text has no spaces; without the second kind of
    cut, 10 MB of it was one block that the tokenizer held in 1.8 GB.)
    """
    n = len(text)
    blocks: list[Span] = []
    a = 0
    while n - a > size:
        m = _CUT.search(text, a + size)
        if m is None:
            break
        blocks.append((a, m.start()))
        a = m.start()
    blocks.append((a, n))
    return blocks


_SPACE = lazy_regex(r"[ \t\n\r]")  # BERT splits here; it deletes other controls (\x1c) instead
#: where a BERT token can never continue: ASCII whitespace, or before a CJK ideograph (BERT's _is_chinese_char)
_CUT = lazy_regex(
    "[ \t\n\r\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002ceaf\U0002f800-\U0002fa1f]"
)
#: texts longer than this are tokenised block by block (bounded memory); blocks go to Rust in groups this big
_STREAM_CHARS = 1 << 16


def _block_groups(blocks: list[Span], chars: int = _STREAM_CHARS) -> list[list[Span]]:
    """Consecutive blocks grouped to about ``chars`` characters per group."""
    groups: list[list[Span]] = [[]]
    size = 0
    for a, b in blocks:
        if groups[-1] and size + (b - a) > chars:
            groups.append([])
            size = 0
        groups[-1].append((a, b))
        size += b - a
    return groups


_ASCII_WS = frozenset(" \t\n\r")
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ASCII_DIGITS = frozenset("0123456789")
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def package_file(package: str, *parts: str) -> Path | None:
    """Path of a data file inside an installed package, found without importing the package."""
    import importlib.util  # here, not at the top: a chunk run does not call this

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*parts)
    return path if path.exists() else None


def minilm_tokenizer_path() -> Path:
    """The all-MiniLM-L6-v2 ``tokenizer.json`` shipped inside chunkwise (Apache-2.0, see its NOTICE).

    It is package data rather than a dependency because the PyPI package that also carries it declares
    sentence-transformers (and so torch) as a dependency: a plain ``pip install chunkwise`` must work alone.
    """
    return Path(__file__).resolve().parent.parent / "models" / "minilm" / "tokenizer.json"


#: the built-in tokenizers' plain names (``hf:PATH`` and registered names aside)
TOKENIZER_NAMES = tuple(n for n in registry.builtin("tokenizer") if ":" not in n)


def minilm_tokenizer() -> Tokenizer:
    """The tokenizer ``minilm`` stands for: MiniLM's own WordPiece, shipped with chunkwise."""
    return HFTokenizer(minilm_tokenizer_path(), "minilm")


def cl100k_tokenizer() -> Tokenizer:
    """OpenAI's ``cl100k_base`` (:mod:`.tiktoken_bpe`, imported here: it subclasses :class:`Tokenizer`)."""
    from .tiktoken_bpe import TiktokenTokenizer

    return TiktokenTokenizer("cl100k_base", "cl100k")


def hf_file_tokenizer(path: str) -> Tokenizer:
    """``hf:PATH``: a Hugging Face ``tokenizer.json`` file."""
    if not Path(path).is_file():
        raise ConfigError(f"tokenizer file not found: {path}")
    return HFTokenizer(path, "hf:" + path)


@validated(name=Named("tokenizer"))
@functools.lru_cache(maxsize=16)
def get_tokenizer(name: str = "minilm") -> Tokenizer:
    """A tokenizer by name (:mod:`chunkwise.registry`, kind ``"tokenizer"``): ``minilm``, ``cl100k``,
    ``chars``, ``words``, ``hf:/path/tokenizer.json``, or one registered with ``register("tokenizer", ...)``.

    Tokenizers are cached: they are immutable and loading one costs tens of milliseconds (so a name
    registered again after its first use keeps the first tokenizer in this process).
    """
    factory, rest = registry.resolve("tokenizer", name)
    tokenizer = factory() if rest is None else factory(rest)
    if not isinstance(tokenizer, Tokenizer):
        raise ConfigError(f"tokenizer {name!r} is registered as {factory!r}, which does not make a Tokenizer")
    return tokenizer


def resolve_tokenizer(tokenizer: str | Tokenizer | None, default: str = "minilm") -> Tokenizer:
    """Accept a name or a :class:`Tokenizer` instance (or ``None`` for the default)."""
    if tokenizer is None:
        return get_tokenizer(default)
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    return get_tokenizer(check(tokenizer, [Named("tokenizer"), InstanceOf(Tokenizer)], "tokenizer"))
