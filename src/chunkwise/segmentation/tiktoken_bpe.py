"""OpenAI's cl100k BPE through tiktoken and bpe-openai's Rust encoder, with no network.

The rank file comes from the ``bpe-openai`` package (read directly, without importing the package, which
would parse all its rank files); character offsets come from per-token byte tables. The cl100k
pre-tokeniser's boundary rules (:func:`_bpe_boundary`) live here too: :class:`~.token_map.TokenMap` uses
them to count slices exactly without re-tokenising.
"""

from __future__ import annotations

import array
import functools
import importlib.util  # noqa: F401 - _rust_encoder reads importlib.util through its local import
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..registry import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")  # imported when first used: small texts are counted without it

from ..errors import ConfigError, MissingDependencyError
from .cl100k_encoder import fast_encoder
from .tokenizers import (
    _ASCII_DIGITS,
    _ASCII_LETTERS,
    _ASCII_PUNCT,
    _ASCII_WS,
    Span,
    Tokenizer,
    _int_array,
    package_file,
)


class TiktokenTokenizer(Tokenizer):
    """OpenAI's BPE (``cl100k_base``) through tiktoken, with the ranks loaded from a local file.

    ``tiktoken.get_encoding`` downloads the rank file on first use; the ``bpe-openai`` package ships the
    same ``cl100k_base.tiktoken.gz``, so we build the ``tiktoken.Encoding`` from it and need no network.

    Counting is the hot path of every strategy, so encoding goes through ``bpe-openai``'s Rust encoder when
    it is there: it gives the same ids as tiktoken (same ranks, same pre-tokenisation pattern) about twice
    as fast on prose and in linear time on pathological input (tiktoken needs ~0.8 s for 1 MB without a
    space; the Rust encoder ~10 ms). With the ``cl100k-fast`` extra, gigatoken encodes instead, with the
    same ids about 18x faster than bpe-openai on prose (see :mod:`.cl100k_encoder`). Text neither can take
    (lone surrogates) falls back to tiktoken.
    """

    tiles_text = True  # widened to whole characters, the tokens cover the text without gaps

    def __init__(self, encoding: str = "cl100k_base", name: str = "cl100k"):
        self.name = name
        self.additive = "cl100k" if encoding == "cl100k_base" else None
        self.encoding_name = encoding
        self._enc = None
        # Importing the bpe_openai package parses all three of its rank files (~3 s); everything here is
        # read from its files directly instead: the Rust encoder and the byte length of every token.
        package_dir = package_file("bpe_openai")
        if package_dir is None:  # pragma: no cover - a core dependency
            raise MissingDependencyError("the cl100k tokenizer", "core", "bpe-openai")
        self._rank_file = package_dir / "data" / f"{encoding}.tiktoken.gz"
        if not self._rank_file.is_file():
            raise ConfigError(f"bpe-openai has no rank file for {encoding!r}")
        self._byte_len = _token_byte_lengths(self._rank_file)
        self._lead: np.ndarray | None = None  # lead bytes per token, for non-ASCII text (built lazily)
        # gigatoken when installed (the ``cl100k-fast`` extra, ~18x faster), else bpe-openai's Rust encoder
        self._fast = fast_encoder(self._rank_file, encoding, lambda: _rust_encoder(package_dir, encoding))

    @property
    def encoding(self):
        """The ``tiktoken.Encoding`` (built on first use: parsing the ranks takes most of a second)."""
        if self._enc is None:
            import tiktoken

            self._enc = tiktoken.Encoding(**_tiktoken_params(self._rank_file, self.encoding_name))
        return self._enc

    def encode(self, text: str) -> list[int]:
        """Token ids (special-token text is treated as ordinary text)."""
        ids = self._encode(text)[0]
        return ids.tolist() if isinstance(ids, np.ndarray) else ids

    def _encode(self, text: str) -> tuple[list[int] | np.ndarray, bool]:
        """Token ids, and whether they come from the Rust encoder (which sees exactly ``text``'s UTF-8).

        One call: the Rust encoder holds the GIL (measured: two threads take as long as one), so encoding
        parts on a thread pool only adds the cost of slicing.
        """
        if self._fast is not None:
            try:
                return self._fast.encode(text), True
            except Exception:  # lone surrogates cannot cross into Rust; tiktoken replaces them
                pass
        return self.encoding.encode_ordinary(text), False

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._fast is not None:
            try:
                return self._fast.count(text)
            except Exception:
                pass
        return len(self.encoding.encode_ordinary(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        # one Rust call per text beats tiktoken's thread-pool batch on small machines (measured: 3x)
        count = self.count
        return [count(t) for t in texts]

    def offsets(self, text: str) -> list[Span]:
        """Token spans in characters. A token that ends inside a multi-byte character is widened to the
        whole character, and the next token starts after it, so spans stay on character boundaries."""
        if not text:
            return []
        starts, ends = self.offset_arrays(text)
        return list(zip(starts.tolist(), ends.tolist()))

    def offset_ends(self, text: str, base: int = 0) -> tuple[array.array[int], array.array[int]]:
        starts, ends = self.offset_arrays(text)  # vectorised at any length (see below)
        return _int_array(starts, base), _int_array(ends, base)

    def offset_arrays(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Token starts and ends in characters, without a Python loop over tokens.

        The tokens of the Rust encoder tile ``text.encode()``, so a token's end in characters is the number
        of characters whose first byte lies before the token's end: the running sum, over the ids, of how
        many UTF-8 lead bytes each token holds (a table built once per tokenizer). That is the character
        end widened to whole characters, and it needs neither the text's bytes nor a byte-to-character
        map. For ASCII text (``str.isascii`` is O(1)) it is the running sum of byte lengths.
        """
        if not text:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        ids, exact_bytes = self._encode(text)
        if not len(ids):
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        # array.array converts a list of ints about 3x faster than np.asarray (ids are < 2**32)
        arr = ids if isinstance(ids, np.ndarray) else np.frombuffer(array.array("I", ids), dtype=np.uint32)
        if exact_bytes:
            table = self._byte_len if text.isascii() else self._lead_bytes()
            if table is not None:
                c_end = np.cumsum(table[arr])
                if int(c_end[-1]) == len(text):
                    c_start = np.empty_like(c_end)
                    c_start[0] = 0
                    c_start[1:] = c_end[:-1]
                    return c_start, c_end
        return _byte_lengths_to_char_arrays(text, self._byte_len[arr])

    def _lead_bytes(self) -> np.ndarray | None:
        """Number of UTF-8 lead bytes (not ``10xxxxxx``) of every token, built on first use (tens of ms)."""
        if self._lead is None:
            self._lead = _token_lead_bytes(self._rank_file, self._byte_len)
        return self._lead if len(self._lead) else None


_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
_SPECIAL = {
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
}


def _tiktoken_params(rank_file: Path, encoding: str) -> dict:
    """Arguments for ``tiktoken.Encoding``, read from bpe-openai's gzipped rank file."""
    import base64
    import gzip

    if encoding != "cl100k_base":  # pragma: no cover - only cl100k is exposed
        from bpe_openai import registry

        return getattr(registry, encoding)()
    ranks: dict[bytes, int] = {}
    with gzip.open(rank_file, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return {
        "name": encoding,
        "pat_str": _CL100K_PATTERN,
        "mergeable_ranks": ranks,
        "special_tokens": _SPECIAL[encoding],
    }


def _token_byte_lengths(rank_file: Path) -> np.ndarray:
    """Byte length of every token id, from the base64 lengths in the rank file (no decoding needed).

    The file lists ``<base64> <rank>`` with ranks 0, 1, 2... in order; that is checked, and a file that
    is not in order is read line by line instead.
    """
    import gzip

    data = np.frombuffer(gzip.decompress(rank_file.read_bytes()), dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    spaces = np.flatnonzero(data == 32)
    line_starts = np.concatenate(([0], newlines[:-1] + 1)) if len(newlines) else np.zeros(0, dtype=np.int64)
    if len(spaces) == len(line_starts) and len(spaces) and data[-1] == 10:
        b64_len = spaces - line_starts
        padding = (data[spaces - 1] == 61).astype(np.int64) + (data[spaces - 2] == 61).astype(np.int64)
        lengths = b64_len * 3 // 4 - padding
        last_rank = int(bytes(data[spaces[-1] + 1 : newlines[-1]]).decode())
        first_rank = int(bytes(data[spaces[0] + 1 : newlines[0]]).decode())
        if first_rank == 0 and last_rank == len(lengths) - 1:
            return lengths.astype(np.int64)
    table: dict[int, int] = {}  # pragma: no cover - fallback for a file not sorted by rank
    for line in bytes(data).decode().splitlines():
        if line.strip():
            token, rank_text = line.split()
            table[int(rank_text)] = len(token) * 3 // 4 - token[-2:].count("=")
    out = np.zeros(max(table) + 1, dtype=np.int64)
    for rank, length in table.items():
        out[rank] = length
    return out


def _token_lead_bytes(rank_file: Path, byte_len: np.ndarray) -> np.ndarray:
    """How many UTF-8 lead bytes (bytes that start a character) each token holds; empty if the rank file
    does not line up with ``byte_len`` (the caller then maps bytes to characters the slow way).

    The base64 of all tokens is decoded at once with numpy (every line's base64 is whole 4-character
    groups, so the groups of the whole file decode independently), in one numpy pass over the file.
    """
    import gzip

    data = np.frombuffer(gzip.decompress(rank_file.read_bytes()), dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    spaces = np.flatnonzero(data == 32)
    line_starts = np.concatenate(([0], newlines[:-1] + 1)) if len(newlines) else np.zeros(0, dtype=np.int64)
    n = len(byte_len)
    if len(spaces) != len(line_starts) or len(line_starts) != n or not n or int(byte_len.min()) < 1:
        return np.zeros(0, dtype=np.int64)  # pragma: no cover - not the cl100k file
    b64_len = spaces - line_starts
    if np.any(b64_len % 4):
        return np.zeros(0, dtype=np.int64)  # pragma: no cover
    # the base64 characters of every line, concatenated: +1 at each line start, -1 at its space
    mark = np.zeros(len(data) + 1, dtype=np.int8)
    mark[line_starts] += 1
    mark[spaces] -= 1
    chars = data[np.cumsum(mark[:-1]) > 0]
    table = np.full(256, 0, dtype=np.uint32)
    alphabet = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)
    table[alphabet] = np.arange(64, dtype=np.uint32)
    groups = table[chars].reshape(-1, 4)
    word = (groups[:, 0] << 18) | (groups[:, 1] << 12) | (groups[:, 2] << 6) | groups[:, 3]
    decoded = np.stack([(word >> 16) & 0xFF, (word >> 8) & 0xFF, word & 0xFF], axis=1).astype(np.uint8)
    pad = chars.reshape(-1, 4) == 61  # "="
    valid = np.ones((len(groups), 3), dtype=bool)
    valid[:, 2] = ~pad[:, 3]
    valid[:, 1] = ~pad[:, 2]
    blob = decoded[valid]
    if len(blob) != int(byte_len.sum()):
        return np.zeros(0, dtype=np.int64)  # pragma: no cover
    is_lead = ((blob & 0xC0) != 0x80).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(byte_len)[:-1]))
    return np.add.reduceat(is_lead, offsets)


def _rust_encoder(package_dir: Path, encoding: str):
    """bpe-openai's Rust encoder, loaded from its extension file without importing the package."""
    import importlib.machinery

    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = package_dir / f"_bindings{suffix}"
        if path.is_file():
            try:
                spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
                if spec is None or spec.loader is None:  # pragma: no cover - not a loadable extension
                    return None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module.tokenizer_for_encoding(encoding)
            except Exception:  # pragma: no cover - fall back to tiktoken
                return None
    return None  # pragma: no cover


def _byte_lengths_to_char_arrays(text: str, byte_lengths) -> tuple[np.ndarray, np.ndarray]:
    """Map consecutive byte runs of ``text.encode()`` to character spans snapped to character boundaries,
    as two arrays (starts, ends)."""
    ends = np.cumsum(np.asarray(byte_lengths, dtype=np.int64))
    if len(ends) == 0:
        return ends, ends
    data = text.encode("utf-8", "surrogatepass")
    n = len(data)
    if n == len(text):  # ASCII: bytes are characters
        c_end = np.minimum(ends, n)
    else:
        arr = np.frombuffer(data, dtype=np.uint8)
        is_start = np.append((arr & 0xC0) != 0x80, True)  # a sentinel boundary at the end
        # char_index[b] = index of the character that starts at or before byte b
        char_index = np.cumsum(is_start) - 1
        e = np.minimum(ends, n)
        # a token ending before byte e: if e is not a character start, widen to that character's end
        c_end = np.where(is_start[e], char_index[e], char_index[e] + 1)
        c_end = np.minimum(c_end, len(text))
    c_end = np.maximum.accumulate(c_end)
    c_end[-1] = len(text)
    c_start = np.concatenate((np.zeros(1, dtype=np.int64), c_end[:-1]))
    return c_start, c_end


@functools.lru_cache(maxsize=1)
def _cl100k_regex():
    import regex  # a dependency of tiktoken

    return regex.compile(_CL100K_PATTERN)


def _bpe_boundary(text: str, p: int, lo: int, hi: int) -> bool:
    """Whether ``p`` is certainly a cl100k pre-token boundary of ``text[lo:hi]`` (see TokenMap.exact)."""
    if p <= lo or p >= hi:
        return True
    left, right = text[p - 1], text[p]
    if right in _ASCII_DIGITS:  # digits are pre-tokens of their own: no other pre-token takes a digit
        return left in _ASCII_LETTERS or left in _ASCII_PUNCT or left in _ASCII_WS
    if left in "\r\n":
        return right in _ASCII_LETTERS or right in _ASCII_DIGITS or right in _ASCII_PUNCT
    if right == " " or right == "\t":
        return left in _ASCII_LETTERS or left in _ASCII_DIGITS or left in _ASCII_PUNCT
    if left in _ASCII_LETTERS:
        return right in _ASCII_DIGITS or right in _ASCII_PUNCT or right in "\r\n"
    if left in _ASCII_DIGITS:
        return right in _ASCII_LETTERS or right in _ASCII_PUNCT or right in "\r\n"
    return False
