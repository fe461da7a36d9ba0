"""The fastest cl100k encoder that is installed: gigatoken when it is there, else bpe-openai's.

Why: the ``fixed`` strategy costs one cl100k encoding plus slicing, so the encoder sets its floor.
``benchmarks/bench_cl100k_encoders.py`` measured gigatoken (MIT, the ``cl100k-fast`` extra) at 17-20x
bpe-openai's Rust encoder in single-thread CPU time on two corpora, with ids equal to tiktoken's on both
and on a hostile set. Both encoders are loaded from bpe-openai's shipped ``cl100k_base.tiktoken.gz``, so
nothing is downloaded. gigatoken wants a plain file path, so the ranks are unpacked into a temporary file
that is deleted once they are loaded.

gigatoken is not linear in the length of one pre-token (a run of letters without a space: 0.33 s for 1 MB
of random letters, 15 s for 16 MB, where bpe-openai takes 10 ms a MB), so a text over
:data:`CHECK_CHARS` with a run of more than :data:`LONG_RUN` characters without whitespace goes to
bpe-openai instead (the check costs a few ms a MB, paid only by texts over 1 MB).

Every encoder here has ``encode(text)`` (ids as a list or a uint32 array, special-token text treated as
ordinary text) and ``count(text)``; both raise on text that cannot become UTF-8 (lone surrogates), and the
caller falls back to tiktoken.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..registry import LazyModule

if TYPE_CHECKING:
    import gzip
    import tempfile

    import numpy as np
else:  # imported when first used (an encoder is built): a command that only counts MiniLM tokens skips them
    gzip, tempfile = LazyModule("gzip"), LazyModule("tempfile")
    np = LazyModule("numpy")  # imported when first used

#: texts longer than this (characters) are checked for a long run without whitespace before gigatoken
CHECK_CHARS = 1 << 20
#: a run without whitespace longer than this (bytes) goes to the linear-time fallback encoder
LONG_RUN = 1 << 16


#: characters that gigatoken 0.10 and tiktoken classify differently (letters and digits assigned in recent
#: Unicode versions: Garay, Kirat Rai, Tulu-Tigalari, CJK extension H and others; 4,657 code points in 26
#: ranges), so the two pre-tokenise them differently. Found by comparing both encoders on every code point in
#: probe strings (``scripts/scan_cl100k_unicode.py``); text that contains one goes to the fallback encoder.
UNICODE_DIFF_RANGES = (
    (0x0088F, 0x0088F),
    (0x00C5C, 0x00C5C),
    (0x00CDC, 0x00CDC),
    (0x0A7CE, 0x0A7CF),
    (0x0A7D2, 0x0A7D2),
    (0x0A7D4, 0x0A7D4),
    (0x0A7F1, 0x0A7F1),
    (0x10940, 0x10959),
    (0x10EC5, 0x10EC7),
    (0x11DB0, 0x11DDB),
    (0x11DE0, 0x11DE9),
    (0x16EA0, 0x16EB8),
    (0x16EBB, 0x16ED3),
    (0x16FF2, 0x16FF6),
    (0x187F8, 0x187FF),
    (0x18D09, 0x18D1E),
    (0x18D80, 0x18DF2),
    (0x1E6C0, 0x1E6DE),
    (0x1E6E0, 0x1E6E2),
    (0x1E6E4, 0x1E6E5),
    (0x1E6E7, 0x1E6ED),
    (0x1E6F0, 0x1E6F4),
    (0x1E6FE, 0x1E6FF),
    (0x2B73A, 0x2B73F),
    (0x2CEA2, 0x2CEAD),
    (0x323B0, 0x33479),
)
_DIFF_LOW = UNICODE_DIFF_RANGES[0][0]
_DIFF_HIGH = UNICODE_DIFF_RANGES[-1][1] + 1


@functools.cache
def _diff_table() -> np.ndarray:
    """True at every listed code point; the last slot is False (built on first use: no numpy at import)."""
    table = np.zeros(_DIFF_HIGH + 1, dtype=bool)
    for a, b in UNICODE_DIFF_RANGES:
        table[a : b + 1] = True
    return table


def reads_unlike_tiktoken(text: str) -> bool:
    """Whether ``text`` has a character of :data:`UNICODE_DIFF_RANGES`. A lookup table over the UTF-32 code
    points (~1 ms for 1.4 MB of non-ASCII prose; a regular expression over these ranges takes 10x longer)."""
    if text.isascii():
        return False
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    points = points[points >= _DIFF_LOW]
    return bool(len(points)) and bool(_diff_table()[np.minimum(points, _DIFF_HIGH)].any())


def longest_run(text: str) -> int:
    """Bytes in the longest run of ``text``'s UTF-8 without an ASCII space or control character."""
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    cuts = np.flatnonzero(data <= 32)
    if not len(cuts):
        return len(data)
    inner = int(np.diff(cuts).max()) - 1 if len(cuts) > 1 else 0
    return max(inner, int(cuts[0]), len(data) - 1 - int(cuts[-1]))


class GigatokenEncoder:
    """gigatoken's BPE with the cl100k ("gpt4") pre-tokeniser and no special tokens; ``fallback`` (an encoder
    with ``encode``/``count``, linear in time) takes the long texts with a long run without whitespace."""

    def __init__(self, rank_file: Path, fallback=None):
        from gigatoken.gigatoken_rs import BPETokenizer

        self._fallback = fallback
        handle, plain = tempfile.mkstemp(suffix=".tiktoken", prefix="chunkwise-cl100k-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(gzip.decompress(rank_file.read_bytes()))
            # no special tokens: "<|endoftext|>" in a document is text, as in tiktoken's encode_ordinary
            self._bpe = BPETokenizer.from_tiktoken(plain, "gpt4", {})
        finally:
            os.unlink(plain)

    def _slow_for_gigatoken(self, text: str) -> bool:
        return self._fallback is not None and longest_run(text) > LONG_RUN

    def _needs_fallback(self, text: str) -> bool:
        """A long run without whitespace (gigatoken is slow there) or a character it classifies unlike
        tiktoken (:data:`UNICODE_DIFF_RANGES`): those texts go to the fallback encoder."""
        if self._fallback is None:
            return False
        if len(text) > CHECK_CHARS and self._slow_for_gigatoken(text):
            return True
        return reads_unlike_tiktoken(text)

    def encode(self, text: str):
        """Token ids: a uint32 array (no Python int per token), or the fallback's list (see
        :meth:`_needs_fallback`)."""
        if self._needs_fallback(text):
            return self._fallback.encode(text)
        return self._bpe.encode(text)

    def count(self, text: str) -> int:
        """Number of tokens."""
        if self._needs_fallback(text):
            return self._fallback.count(text)
        return len(self._bpe.encode(text))


def fast_encoder(rank_file: Path, encoding: str, fallback):
    """gigatoken for cl100k when it is installed and loads, else ``fallback()`` (bpe-openai's encoder).

    Set ``CHUNKWISE_CL100K_ENCODER=bpe-openai`` to skip gigatoken (the benchmarks compare the two).
    """
    wanted = os.environ.get("CHUNKWISE_CL100K_ENCODER", "")
    slow = fallback()
    if encoding == "cl100k_base" and wanted != "bpe-openai" and importlib.util.find_spec("gigatoken"):
        try:
            encoder = GigatokenEncoder(rank_file, slow)
            if encoder.encode("Hello world!").tolist() == [9906, 1917, 0]:  # a wrong build or vocabulary
                return encoder
        except Exception:  # pragma: no cover - a broken install falls back to bpe-openai
            pass
    return slow
