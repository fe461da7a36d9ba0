"""Shared test fixtures and the suite's own rules.

``FakeEmbedder`` is a deterministic, dependency-free :class:`Embedder` (hashed bag of words) for tests that
exercise strategies, indexing and evaluation logic without the ONNX model. Tests that check real semantic
behaviour use the real ``minilm`` back-end instead.

Tests marked ``chroma`` read Chroma's chunking-evaluation set from outside the repository
(``../shared/data/chroma-eval``, or ``$CHUNKWISE_CHROMA_EVAL``); without it they are skipped and the run's
summary says so in one line, so a green run never hides that they did not run.

Hypothesis has no per-example deadline here: the suite runs on loaded 2-core machines, where a deadline
measures the machine, not the code (hangs are bounded by pytest-timeout instead). On CI (``CHUNKWISE_CI=1``)
it draws the same examples on every run; a developer's run draws new ones.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pytest
from eval_data import write_topics
from hypothesis import settings

from chunkwise.embeddings.base import Embedder, l2_normalize
from chunkwise.segmentation.tokenizers import get_tokenizer
from chunkwise.strategies.base import Strategy

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
CHROMA = Path(os.environ.get("CHUNKWISE_CHROMA_EVAL") or SHARED / "chroma-eval")
_NO_CHROMA = f"needs Chroma's evaluation set at {CHROMA} (set CHUNKWISE_CHROMA_EVAL)"

#: a CI run (``.ci/run`` sets ``CHUNKWISE_CI=1``): Hypothesis draws the same examples every time (a seed per test,
#: no example database, as its own "ci" profile does), so the verdict does not depend on the draw; a developer's
#: run draws new examples each time
FIXED_EXAMPLES = {"derandomize": True, "database": None} if os.environ.get("CHUNKWISE_CI") == "1" else {}
settings.register_profile("chunkwise", deadline=None, print_blob=True, **FIXED_EXAMPLES)
settings.load_profile("chunkwise")


def pytest_collection_modifyitems(config, items):
    """Skip the ``chroma`` tests, with one reason, when the data set is not there."""
    if CHROMA.is_dir():
        return
    skip = pytest.mark.skip(reason=_NO_CHROMA)
    for item in items:
        if "chroma" in item.keywords:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    """One line naming how many tests did not run for want of the shared data (also under xdist)."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if _NO_CHROMA in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"shared data: {len(skipped)} tests skipped, {_NO_CHROMA}", yellow=True)


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
def dataset(tmp_path):
    """The topics dataset of ``eval_data.py``, loaded."""
    from chunkwise.evaluation import load_dataset

    return load_dataset(write_topics(tmp_path))


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
