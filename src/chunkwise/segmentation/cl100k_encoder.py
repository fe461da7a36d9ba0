"""The fastest cl100k encoder that is installed: gigatoken when it is there, else bpe-openai's.

Why: the ``fixed`` strategy costs one cl100k encoding plus slicing, so the encoder sets its floor (issue 19).
``benchmarks/bench_cl100k_encoders.py`` measured gigatoken (MIT, the ``cl100k-fast`` extra) at 17-20x
bpe-openai's Rust encoder in single-thread CPU time on two corpora, with ids equal to tiktoken's on both
and on a hostile set. Both encoders are loaded from bpe-openai's shipped ``cl100k_base.tiktoken.gz``, so
nothing is downloaded. gigatoken wants a plain file path, so the ranks are unpacked into a temporary file
that is deleted once they are loaded.

Every encoder here has ``encode(text)`` (ids as a list or a uint32 array, special-token text treated as
ordinary text) and ``count(text)``; both raise on text that cannot become UTF-8 (lone surrogates), and the
caller falls back to tiktoken.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np


class GigatokenEncoder:
    """gigatoken's BPE with the cl100k ("gpt4") pre-tokeniser and no special tokens."""

    def __init__(self, rank_file: Path):
        from gigatoken.gigatoken_rs import BPETokenizer

        handle, plain = tempfile.mkstemp(suffix=".tiktoken", prefix="chunkwise-cl100k-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(gzip.decompress(rank_file.read_bytes()))
            # no special tokens: "<|endoftext|>" in a document is text, as in tiktoken's encode_ordinary
            self._bpe = BPETokenizer.from_tiktoken(plain, "gpt4", {})
        finally:
            os.unlink(plain)

    def encode(self, text: str) -> np.ndarray:
        """Token ids as a uint32 array (no Python int per token)."""
        return self._bpe.encode(text)

    def count(self, text: str) -> int:
        """Number of tokens."""
        return len(self._bpe.encode(text))


def fast_encoder(rank_file: Path, encoding: str, fallback):
    """gigatoken for cl100k when it is installed and loads, else ``fallback()`` (bpe-openai's encoder).

    Set ``CHUNKWISE_CL100K_ENCODER=bpe-openai`` to skip gigatoken (the benchmarks compare the two).
    """
    wanted = os.environ.get("CHUNKWISE_CL100K_ENCODER", "")
    if encoding == "cl100k_base" and wanted != "bpe-openai" and importlib.util.find_spec("gigatoken"):
        try:
            encoder = GigatokenEncoder(rank_file)
            if encoder.encode("Hello world!").tolist() == [9906, 1917, 0]:  # a wrong build or vocabulary
                return encoder
        except Exception:  # pragma: no cover - a broken install falls back to bpe-openai
            pass
    return fallback()
