"""Token counting with exact character offsets, in the tokenizer the chunks are measured in.

Why this module matters: a size cap is only a cap if it is counted in the tokenizer of the model that will
read the chunk. chunkwise counts in the embedding model's own tokenizer by default (``minilm``), or in
OpenAI's ``cl100k``, or in characters or words. Every tokenizer gives, besides a count, the character span of
each token, so strategies can cut *on* token boundaries and still return exact slices of the text.

Counts never include special tokens ([CLS]/[SEP]); the embedder accounts for those in its own limit.
"""

from __future__ import annotations

import array
import bisect
import functools
import importlib.util
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ConfigError, MissingDependencyError
from .cl100k_encoder import fast_encoder

Span = tuple[int, int]


class Tokenizer(ABC):
    """The narrow interface every strategy counts with."""

    #: short name used in configuration, ids and the CLI (``minilm``, ``cl100k``, ``chars``, ``words``)
    name: str = ""
    #: which cuts keep counts additive (see :meth:`TokenMap.exact`); ``None``: no known rule
    additive: str | None = None

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

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts (back-ends override this with a batched call)."""
        return [self.count(t) for t in texts]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class CharTokenizer(Tokenizer):
    """One token per character (code point)."""

    name = "chars"
    additive = "chars"

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
        from tokenizers import Tokenizer as _HF

        self.name = name
        self.path = str(path)
        # BERT's normaliser and pre-tokeniser (MiniLM) never let a token cross ASCII whitespace
        self.additive = "bert" if name == "minilm" else None
        self._tok = _HF.from_file(self.path)
        self._tok.no_truncation()
        self._tok.no_padding()

    @property
    def hf(self):
        """The underlying ``tokenizers.Tokenizer`` (truncation/padding off), for embedders."""
        return self._tok

    def offsets(self, text: str) -> list[Span]:
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
        text, _ = self._squeeze(text)
        if self.name != "minilm" or len(text) <= _STREAM_CHARS:
            return len(self._tok.encode(text, add_special_tokens=False).ids)
        # long text: count block by block (a few MB of Rust encodings at a time, not the whole text's)
        blocks = _whitespace_blocks(text)
        total = 0
        for group in _block_groups(blocks):
            total += sum(len(e.ids) for e in self._tok.encode_batch([text[a:b] for a, b in group],
                                                                    add_special_tokens=False))
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
                parts.extend(np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2) + a
                             for e, (a, _) in zip(encs, group))
                del encs
        arr = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)
        starts, ends = arr[:, 0], arr[:, 1]
        if runs:  # map squeezed offsets back: after each placeholder, add the characters it stood for
            lengths = np.asarray([n for _, n in runs], dtype=np.int64)
            squeezed_pos = np.asarray([s for s, _ in runs], dtype=np.int64) - np.concatenate(
                ([0], np.cumsum(lengths - 1)[:-1]))
            shift = np.concatenate(([0], np.cumsum(lengths - 1)))
            starts = starts + shift[np.searchsorted(squeezed_pos + 1, starts, side="right")]
            ends = ends + shift[np.searchsorted(squeezed_pos + 1, ends, side="right")]
        return starts, ends

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        if self.name == "minilm" and sum(len(t) for t in texts) > _STREAM_CHARS:
            return [self.count(t) if len(t) > _STREAM_CHARS else n
                    for t, n in zip(texts, self._count_small(texts))]
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


#: an ASCII letter/digit run over 100 characters with whitespace, ASCII punctuation or an end on each side
_LONG_ASCII_WORD = re.compile(r"(?<![^ \t\n\r!-/:-@\[-`{-~])[A-Za-z0-9]{101,}(?![^ \t\n\r!-/:-@\[-`{-~])")


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

    def __init__(self, encoding: str = "cl100k_base", name: str = "cl100k"):
        self.name = name
        self.additive = "cl100k" if encoding == "cl100k_base" else None
        self.encoding_name = encoding
        self._enc = None
        # Importing the bpe_openai package parses all three of its rank files (~3 s); everything here is
        # read from its files directly instead: the Rust encoder and the byte length of every token.
        package_dir = _package_file("bpe_openai")
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
    "cl100k_base": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                    "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
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
    return {"name": encoding, "pat_str": _CL100K_PATTERN, "mergeable_ranks": ranks,
            "special_tokens": _SPECIAL[encoding]}


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
            token, rank = line.split()
            table[int(rank)] = len(token) * 3 // 4 - token[-2:].count("=")
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
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module.tokenizer_for_encoding(encoding)
            except Exception:  # pragma: no cover - fall back to tiktoken
                return None
    return None  # pragma: no cover


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


_SPACE = re.compile(r"[ \t\n\r]")  # BERT splits here; it deletes other controls (\x1c) instead
#: where a BERT token can never continue: ASCII whitespace, or before a CJK ideograph (BERT's _is_chinese_char)
_CUT = re.compile("[ \t\n\r\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df"
                  "\U0002a700-\U0002ceaf\U0002f800-\U0002fa1f]")
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


def _byte_lengths_to_char_spans(text: str, byte_lengths: Sequence[int]) -> list[Span]:
    """Map consecutive byte runs of ``text.encode()`` to character spans snapped to character boundaries."""
    starts, ends = _byte_lengths_to_char_arrays(text, byte_lengths)
    return list(zip(starts.tolist(), ends.tolist()))


def _byte_lengths_to_char_arrays(text: str, byte_lengths) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_byte_lengths_to_char_spans` as two arrays (starts, ends)."""
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


class TokenMap:
    """The token spans of one text, for counting any span of it in O(log n) without re-tokenising.

    ``estimate(a, b)`` is the number of tokens of the whole text that overlap ``[a, b)``. It equals the
    count of ``text[a:b]`` tokenised on its own whenever ``a`` and ``b`` fall on word boundaries, and is
    off by a token or two where a cut splits a word; strategies plan with estimates and then verify every
    chunk with an exact count (:meth:`exact`, else the tokenizer), so an estimate never lets a chunk over
    the cap. ``starts``/``ends`` are sequences of ints (``array.array``; ``range`` for characters) that
    ``bisect`` searches; ``lists=False`` keeps them as numpy arrays (for callers that look up few positions).
    """

    def __init__(self, text: str, tokenizer: Tokenizer, base: int = 0, lists: bool = True):
        self.base = base
        self.limit = base + len(text)
        self.tokenizer = tokenizer
        n = len(text)
        if isinstance(tokenizer, CharTokenizer):
            self.starts: Sequence[int] = range(base, base + n)
            self.ends: Sequence[int] = range(base + 1, base + n + 1)
        elif not lists:
            # numpy arrays: no conversion to Python ints, for callers that look up few positions (fixed
            # windows); ``bisect`` works on them, values are numpy integers
            starts, ends = tokenizer.offset_arrays(text)
            # (offsets of the whole text, base 0, are used as they are: two array copies fewer)
            self.starts, self.ends = (starts + base, ends + base) if base else (starts, ends)
        else:
            starts, ends = tokenizer.offset_arrays(text)
            # array.array, not a list: converting is a memcpy instead of one Python int per token (tolist()
            # cost more than all the planning), and bisect on it is as fast or faster (no pointer chasing)
            self.ends = _int_array(ends, base)
            if isinstance(tokenizer, TiktokenTokenizer):  # tokens tile the text: a start is the end before
                self.starts = _StartsFromEnds(self.ends, base)
            else:
                self.starts = _int_array(starts, base)

        if isinstance(self.starts, _StartsFromEnds):
            self.estimate = self._estimate_tiled  # the hot path of planning: no dispatch per call
        if isinstance(self.ends, np.ndarray):  # bisect on an array reads numpy scalars one by one
            self._between = self._between_array

    def __len__(self) -> int:
        return len(self.starts)

    def estimate(self, a: int, b: int) -> int:
        """Tokens overlapping ``[a, b)`` (absolute offsets)."""
        if b <= a:
            return 0
        return max(0, self.starts_before(b) - bisect.bisect_right(self.ends, a))

    def _estimate_tiled(self, a: int, b: int) -> int:
        """:meth:`estimate` for tokens that tile the text (token ``i`` starts where ``i - 1`` ends)."""
        ends = self.ends
        if b <= a or b <= self.base or not ends:
            return 0
        n = 1 + bisect.bisect_left(ends, b, 0, len(ends) - 1) - bisect.bisect_right(ends, a)
        return n if n > 0 else 0

    def bound_counts(self, positions) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`estimate` for many spans at once: arrays ``(upper, lower)`` over ``positions``
        such that ``estimate(positions[x], positions[y]) == max(0, upper[y] - lower[x])`` whenever
        ``positions[x] < positions[y]`` (and 0 otherwise). Two ``searchsorted`` calls replace two binary
        searches per span; planning loops then do integer arithmetic only."""
        p = np.asarray(positions, dtype=np.int64)
        starts, ends = self.starts, self.ends
        if isinstance(starts, range):  # characters: token i is [base + i, base + i + 1)
            n = len(starts)
            return np.clip(p - self.base, 0, n), np.clip(p - self.base, 0, n)
        e = _as_int64(ends)
        lower = e.searchsorted(p, "right")
        if isinstance(starts, _StartsFromEnds):  # see _estimate_tiled
            n = len(e)
            if n == 0:
                return np.zeros(len(p), dtype=np.int64), lower
            return np.where(p > self.base, 1 + e[: n - 1].searchsorted(p, "left"), 0), lower
        return _as_int64(starts).searchsorted(p, "left"), lower

    def starts_before(self, pos: int) -> int:
        """Number of tokens that start before ``pos`` (the index of the first token starting at or after)."""
        starts = self.starts
        if isinstance(starts, _StartsFromEnds):
            n = len(self.ends)
            return 0 if n == 0 or pos <= self.base else 1 + bisect.bisect_left(self.ends, pos, 0, n - 1)
        return bisect.bisect_left(starts, pos)

    def first_after(self, pos: int) -> int:
        """Index of the first token that ends after ``pos``."""
        return bisect.bisect_right(self.ends, pos)

    def exact(self, text: str, a: int, b: int) -> int | None:
        """The exact count of ``text[a:b]`` tokenised on its own, when the cuts provably do not change the
        tokens (else ``None``: count it). ``text`` is the full text the map's offsets refer to.

        Why this is exact: every tokenizer here first splits text into pre-tokens and never lets a token
        cross a pre-token boundary. Where both cuts are boundaries the slice has the same tokens as the
        whole text had there, so its count is a difference of two indexes. The rules below only answer
        for cuts whose classification is certain (ASCII context); anything else is counted.

        - ``chars``: every cut. ``words``: cuts next to whitespace.
        - ``bert`` (MiniLM): cuts next to ASCII whitespace (the normaliser removes control characters, so
          only real whitespace separates words).
        - ``cl100k``: the pre-tokeniser regex has no look-behind, so matching restarts identically at a
          boundary; a boundary is certain after a newline (before non-space), after a letter before a
          non-letter, after a digit before a non-digit, and before a space or tab. A slice that starts on
          a word after a space (`` word`` in the whole text, ``word`` in the slice) has its first
          pre-token (found with the pre-tokeniser's own regex on the slice) counted on its own, and a
          slice that ends where the whole text had one pre-token (``.\\n\\n``) has its last characters
          after the last certain boundary counted on their own; the middle comes from the index.
          Matching from a boundary depends only on the text ahead, so the middle agrees.
        """
        kind = self.tokenizer.additive
        if b <= a:
            return 0
        if kind == "chars":
            return b - a
        lo, hi = self.base, self.limit
        if kind == "words":
            if (a == lo or text[a - 1].isspace()) and (b == hi or text[b].isspace()):
                return self._between(a, b)
            return None
        if kind == "bert":
            if (a == lo or text[a - 1] in _ASCII_WS) and (b == hi or text[b] in _ASCII_WS):
                return self._between(a, b)
            return None
        if kind == "cl100k":
            # tail: back to the last certain boundary t; text[t:b] is counted on its own
            t = b
            if b < hi and text[b - 1].isspace():  # trailing whitespace is one pre-token at a text's end
                t -= 1
            while not _bpe_boundary(text, t, lo, hi):
                t -= 1
                if t <= a or b - t > 32:
                    return None
            # head: certain boundary, or the end of the slice's own first pre-token
            h = a
            if not _bpe_boundary(text, a, lo, hi):
                # the slice's own first pre-token: a run of ASCII letters (or digits) needs no regex;
                # otherwise the pre-tokeniser's regex on the slice (pos=a, endpos=b), ASCII only
                c = text[a]
                run = _ASCII_LETTERS if c in _ASCII_LETTERS else _ASCII_DIGITS if c in _ASCII_DIGITS else None
                if run is not None:
                    while h < t and text[h] in run:
                        h += 1
                else:
                    m = _cl100k_regex().match(text, a, b)
                    h = m.end() if m is not None else a
                if h == a or h > t or not text[a:h].isascii() or not _bpe_boundary(text, h, lo, hi):
                    return None
            if h > t:
                return None
            head = self.tokenizer.count(text[a:h]) if h > a else 0
            tail = self.tokenizer.count(text[t:b]) if b > t else 0
            return head + self._between(h, t) + tail
        return None

    def _between(self, a: int, b: int) -> int:
        """Tokens that end in ``(a, b]`` (a token ending inside a multi-byte character is widened to it, so
        the zero-width tokens after it sit at the character's end and belong to the span before)."""
        return int(bisect.bisect_right(self.ends, b) - bisect.bisect_right(self.ends, a))

    def _between_array(self, a: int, b: int) -> int:
        """:meth:`_between` for offsets kept as a numpy array."""
        ends = self.ends
        return int(ends.searchsorted(b, "right")) - int(ends.searchsorted(a, "right"))

    def counts(self, text: str, spans: Sequence[Span]) -> list[int]:
        """Exact counts of many spans: from the index where :meth:`exact` can tell, else one batch count."""
        out = [self.exact(text, a, b) for a, b in spans]
        todo = [i for i, n in enumerate(out) if n is None]
        if todo:
            for i, n in zip(todo, self.tokenizer.count_batch([text[spans[i][0]:spans[i][1]] for i in todo])):
                out[i] = n
        return out  # type: ignore[return-value]


def _as_int64(values) -> np.ndarray:
    """A sequence of offsets as an int64 array (a view, for ``array.array`` and numpy arrays)."""
    if isinstance(values, np.ndarray):
        return values
    if isinstance(values, array.array) and values.typecode == "q":
        return np.frombuffer(values, dtype=np.int64) if len(values) else np.zeros(0, dtype=np.int64)
    return np.asarray(values, dtype=np.int64)


def _int_array(values: np.ndarray, base: int) -> array.array:
    """``values + base`` as an ``array.array`` of 64-bit ints (a sequence of Python ints for bisect)."""
    return array.array("q", (np.asarray(values, dtype=np.int64) + base).tobytes())


class _StartsFromEnds:
    """Token starts of a tokenizer whose tokens tile the text: ``starts[i] == ends[i - 1]``."""

    __slots__ = ("ends", "base")

    def __init__(self, ends: list[int], base: int):
        self.ends = ends
        self.base = base

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += len(self.ends)
        if not 0 <= i < len(self.ends):
            raise IndexError(i)
        return self.ends[i - 1] if i else self.base


_ASCII_WS = frozenset(" \t\n\r")
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ASCII_DIGITS = frozenset("0123456789")
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


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


def _package_file(package: str, *parts: str) -> Path | None:
    """Path of a data file inside an installed package, found without importing the package."""
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
