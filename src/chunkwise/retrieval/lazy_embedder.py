"""The index's embedder, made only when something is embedded.

A re-index in which every document is unchanged embeds nothing, yet making the embedder (MiniLM: the
ONNX session and the SHA-256 check of its rewritten graph) is most of what such a run costs after the
imports. When a collection records its embedder, :class:`~chunkwise.retrieval.index.Index.add` therefore
runs with a :class:`LazyEmbedder`: it answers ``model_id`` and ``dim`` from the record, which is all that
checking the configuration and skipping unchanged documents need, and makes the real embedder (through
:meth:`Index.embedder <chunkwise.retrieval.index.Index.embedder>`, which checks it against the record) at
the first call that needs the model. A model that no longer matches the record is then refused with the
same error, before a single vector of it is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..embeddings.base import Embedder, WrappedEmbedder, distinct_queries
from ..segmentation.tokenizers import Tokenizer


class LazyEmbedder(WrappedEmbedder):
    """An :class:`Embedder` whose back-end ``load()`` is called at the first use of the model; until then
    ``model_id``, ``dim`` and the counters (0) are answered without it, and ``inner`` is ``None``: code that
    walks the wrappers (the embedding cache's count of repaired vectors) finds nothing under it yet instead
    of making the model to ask."""

    def __init__(self, model_id: str, dim: int, load: Callable[[], Embedder]):
        self.model_id = model_id
        self._dim = int(dim)
        self._load = load
        self._inner: Embedder | None = None

    @property
    def loaded(self) -> bool:
        """Whether the real embedder has been made."""
        return self._inner is not None

    @property
    def inner(self) -> Embedder | None:  # type: ignore[override]
        return self._inner

    def real(self) -> Embedder:
        """The real embedder, made (and checked, by ``load``) at the first call."""
        if self._inner is None:
            self._inner = self._load()
        return self._inner

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self._dim

    @property
    def truncated(self) -> int:  # type: ignore[override]
        return self._inner.truncated if self._inner is not None else 0

    @property
    def texts_embedded(self) -> int:  # type: ignore[override]
        return self._inner.texts_embedded if self._inner is not None else 0

    @property
    def model_window(self) -> int:  # type: ignore[override]
        return self.real().model_window

    @property
    def tokenizer(self) -> Tokenizer:
        return self.real().tokenizer

    @property
    def distinct_queries(self) -> bool:
        return distinct_queries(self.real())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.real().embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.real().embed_queries(texts)

    def embed_tokens(self, text: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
        return self.real().embed_tokens(text)

    def embed_stream(self, texts: Iterable[str], batch_size: int = 4096) -> Iterator[np.ndarray]:
        return self.real().embed_stream(texts, batch_size)

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()

    def __getattr__(self, name: str) -> Any:
        """Anything else a back-end has (``name``, ``batch_size``...) is the real embedder's."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.real(), name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, dim={self._dim}, loaded={self.loaded})"


def makes_recorded(name: Any, options: dict[str, Any], rec: dict[str, Any]) -> bool:
    """Whether :meth:`Index.embedder <chunkwise.retrieval.index.Index.embedder>`, given the embedder
    ``name`` (``None``: the recorded one) and ``options``, makes the embedder a collection records
    (``rec``: its name, back-end, model id and dim): no name or the recorded one, and no option but the
    recorded back-end. Anything else is made at once and checked against the record then."""
    if not rec.get("model_id") or not rec.get("dim"):
        return False
    options = dict(options)
    backend = options.pop("backend", None)
    if options:
        return False
    if name is None:
        return backend is None or backend == rec.get("backend")
    return isinstance(name, str) and name == rec.get("name") and backend == rec.get("backend")


__all__ = ["LazyEmbedder", "makes_recorded"]
