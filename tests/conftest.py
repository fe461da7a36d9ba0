"""Shared test fixtures.

``FakeEmbedder`` is a deterministic, dependency-free :class:`Embedder` (hashed bag of words) for tests that
exercise strategies, indexing and evaluation logic without the ONNX model. Tests that check real semantic
behaviour use the real ``minilm`` back-end instead.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from chunkwise.embeddings.base import Embedder, l2_normalize
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies.base import Strategy

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
CHROMA = SHARED / "chroma-eval"


class FakeEmbedder(Embedder):
    """Hashed bag-of-words vectors: texts that share words are similar, others are nearly orthogonal."""

    def __init__(self, dim: int = 64, model_window: int = 510, tokenizer: str = "words"):
        self.dim = dim
        self.model_window = model_window
        self.model_id = f"fake-bow-{dim}"
        self._tokenizer = get_tokenizer(tokenizer)
        self.calls: list[list[str]] = []
        self.texts_embedded = 0

    @property
    def tokenizer(self):
        return self._tokenizer

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            h = int(hashlib.md5(w.encode()).hexdigest(), 16)
            v[h % self.dim] += 1.0 if (h >> 64) & 1 else -1.0
        if not v.any():
            v[0] = 1.0
        return v

    def embed(self, texts):
        texts = list(texts)
        self.calls.append(texts)
        self.texts_embedded += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(np.stack([self._vec(t) for t in texts]))

    def embed_tokens(self, text):
        spans = [m.span() for m in re.finditer(r"\w+", text)][: self.model_window]
        if not spans:
            return np.zeros((0, self.dim), dtype=np.float32), []
        return l2_normalize(np.stack([self._vec(text[a:b]) for a, b in spans])), spans


class Paragraphs(Strategy):
    """A test strategy with predictable chunks: one per blank-line-separated paragraph."""

    name = "paragraphs"
    apply_rules = False  # exactly one chunk per paragraph, headings included

    def split(self, doc, start, end, tokenizer):
        out, pos = [], start
        for para in doc.text[start:end].split("\n\n"):
            a = doc.text.index(para, pos)
            pos = a + len(para)
            out.append((a, pos))
        return out


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def fake_openai():
    """An OpenAI-compatible chat + embeddings server on the loopback (``tests/fake_openai.py``)."""
    from fake_openai import FakeOpenAI

    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture
def other_host():
    """A second fake server on another loopback address: where redirects point, recording what reaches it."""
    from fake_openai import FakeOpenAI

    server = FakeOpenAI(host="other")
    yield server
    server.close()
