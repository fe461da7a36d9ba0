"""The fastest cl100k encoder that is installed: gigatoken when it is there, else bpe-openai's.

Why: the ``fixed`` strategy costs one cl100k encoding plus slicing, so the encoder sets its floor (issue 19).
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

import gzip
import importlib.util
import os
import re
import tempfile
from pathlib import Path

import numpy as np


#: texts longer than this (characters) are checked for a long run without whitespace before gigatoken
CHECK_CHARS = 1 << 20
#: a run without whitespace longer than this (bytes) goes to the linear-time fallback encoder
LONG_RUN = 1 << 16


#: characters that gigatoken 0.10 and tiktoken classify differently (letters and digits assigned in recent
#: Unicode versions: Garay, Kirat Rai, Tulu-Tigalari, CJK extension H and others; 4,657 code points in 26
#: ranges), so the two pre-tokenise them differently. Found by comparing both encoders on every code point in
#: probe strings (``scripts/scan_cl100k_unicode.py``); text that contains one goes to the fallback encoder.
_UNICODE_DIFF = re.compile(
    "["
    "\U0000088f\U00000c5c\U00000cdc\U0000a7ce-\U0000a7cf\U0000a7d2\U0000a7d4\U0000a7f1\U00010940-\U00010959"
    "\U00010ec5-\U00010ec7\U00011db0-\U00011ddb\U00011de0-\U00011de9\U00016ea0-\U00016eb8\U00016ebb-\U00016ed3"
    "\U00016ff2-\U00016ff6\U000187f8-\U000187ff\U00018d09-\U00018d1e\U00018d80-\U00018df2\U0001e6c0-\U0001e6de"
    "\U0001e6e0-\U0001e6e2\U0001e6e4-\U0001e6e5\U0001e6e7-\U0001e6ed\U0001e6f0-\U0001e6f4\U0001e6fe-\U0001e6ff"
    "\U0002b73a-\U0002b73f\U0002cea2-\U0002cead\U000323b0-\U00033479"
    "]"
)


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
        tiktoken (:data:`_UNICODE_DIFF`): those texts go to the fallback encoder."""
        if self._fallback is None:
            return False
        if len(text) > CHECK_CHARS and self._slow_for_gigatoken(text):
            return True
        return not text.isascii() and _UNICODE_DIFF.search(text) is not None

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
