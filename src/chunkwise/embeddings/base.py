"""The one narrow interface every embedding back-end implements (as sentence-transformers does for models).

Strategies, the index, evaluation and late chunking only ever see an :class:`Embedder`:

- ``embed(texts) -> float32 array (n, dim)``, rows L2-normalised (so a dot product is a cosine);
- ``dim``, ``model_id`` (recorded in indexes and cache keys);
- ``max_tokens``: how many content tokens (special tokens excluded) of ``tokenizer`` the model reads;
  longer texts are truncated by the back-end and counted in ``truncated``;
- ``tokenizer``: the :class:`~chunkwise.segmentation.tokens.Tokenizer` whose counts match the model;
- ``embed_tokens(text) -> (token vectors (t, dim), [(start, end)] character offsets)`` for late chunking.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

import numpy as np

from ..segmentation.tokens import Tokenizer


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


class Embedder(ABC):
    model_id: str = ""
    dim: int = 0
    max_tokens: int = 0
    #: texts truncated to ``max_tokens`` so far (a warning count, never an error)
    truncated: int = 0
    #: texts actually sent to the model so far (cache hits excluded): lets tests prove "embedded once"
    texts_embedded: int = 0

    @property
    @abstractmethod
    def tokenizer(self) -> Tokenizer:
        """The tokenizer strategies should count with when they use this embedder."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as a float32 ``(len(texts), dim)`` array with unit-length rows."""

    def embed_tokens(self, text: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """Contextual token vectors of ``text`` (one window, up to ``max_tokens``) and their character spans.

        Back-ends that cannot expose token vectors (static, remote APIs) raise ``ConfigError``.
        """
        from ..errors import ConfigError

        raise ConfigError(f"embedder {self.model_id!r} cannot give token vectors (needed for late chunking)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, dim={self.dim})"
