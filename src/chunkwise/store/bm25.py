"""BM25 over chunk texts with ``bm25s``, set up once for every caller.

Milvus scores BM25 itself wherever it can (a BM25 function over ``indexed_text``). Everything else that
ranks chunks by BM25 uses this module: :class:`~chunkwise.store.milvus.MilvusStore` on servers without BM25
functions, the in-memory store and therefore evaluation. One set-up means ``chunkwise eval`` measures the
BM25 that ``chunkwise search --hybrid`` runs: the terms of :mod:`chunkwise.segmentation.lexical` (identifiers such
as ``3.8.13`` or ``max_tokens`` whole, words lower-cased, English stop words removed), Lucene's BM25 with
``k1=1.5, b=0.75``, the same variant Milvus uses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..security import replace_folder
from ..segmentation.lexical import TOKENIZER_VERSION, lexical_terms

#: Lucene BM25 parameters (Milvus's defaults too)
K1 = 1.5
B = 0.75
#: the stop word list bm25s removes from texts and queries
STOPWORDS = "en"


def bm25_index(texts: Sequence[str]):
    """A ``bm25s.BM25`` retriever over ``texts`` (at least one), positions in ``texts`` being its ids."""
    import bm25s

    retriever = bm25s.BM25(k1=K1, b=B)
    retriever.index([lexical_terms(t) for t in texts], show_progress=False)
    return retriever


def bm25_query(query: str) -> list[list[str]] | None:
    """``query``'s terms, identifiers whole and without their parts (``None`` when nothing but stop words
    is left): a query identifier matches the same identifier, never a piece of a longer one."""
    tokens = lexical_terms(query, parts=False)
    return [tokens] if tokens else None


class BM25Fallback:
    """An in-memory BM25 index over ``(id, text)`` pairs, for stores without built-in BM25."""

    def __init__(self, items: Iterable[tuple[str, str]]):
        pairs = list(items)
        self.ids = [i for i, _ in pairs]
        self._index_of = {doc: n for n, doc in enumerate(self.ids)}
        self._retriever = bm25_index([t for _, t in pairs]) if pairs else None

    def __len__(self) -> int:
        return len(self.ids)

    def save(self, folder: str | os.PathLike) -> None:
        """Write the index to ``folder`` (replaced whole: written beside it, then renamed), so that a later
        process loads it in milliseconds instead of reading every text back and indexing it again."""

        def fill(tmp: Path) -> None:
            (tmp / "ids.json").write_text(json.dumps(self.ids), encoding="utf-8")
            (tmp / "tokenizer.txt").write_text(TOKENIZER_VERSION, encoding="utf-8")
            if self._retriever is not None:
                self._retriever.save(str(tmp), show_progress=False)

        replace_folder(folder, fill)

    @classmethod
    def load(cls, folder: str | os.PathLike) -> BM25Fallback:
        """An index written by :meth:`save` (``OSError``/``ValueError`` when there is none, it is damaged or
        its terms were made by another :data:`~chunkwise.segmentation.lexical.TOKENIZER_VERSION`)."""
        import bm25s

        folder = Path(folder)
        if (folder / "tokenizer.txt").read_text(encoding="utf-8").strip() != TOKENIZER_VERSION:
            raise ValueError("the saved BM25 index was made with other terms")
        out = cls(())
        out.ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
        out._index_of = {doc: n for n, doc in enumerate(out.ids)}
        if out.ids:
            out._retriever = bm25s.BM25.load(str(folder), show_progress=False)
        return out

    def search(self, query: str, limit: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """The ``limit`` best ``(id, score)`` pairs with a positive score, restricted to ``allowed`` ids."""
        if self._retriever is None or limit <= 0:
            return []
        q = bm25_query(query)
        if q is None:
            return []
        mask = None
        if allowed is not None:
            mask = np.zeros(len(self.ids), dtype=np.float32)
            for doc in allowed:
                n = self._index_of.get(doc)
                if n is not None:
                    mask[n] = 1.0
            if not mask.any():
                return []
        limit = min(limit, len(self.ids))
        try:
            docs, scores = self._retriever.retrieve(q, k=limit, show_progress=False, weight_mask=mask)
        except (ValueError, KeyError):  # every query token is unknown to the vocabulary
            return []
        keep = scores[0] > 0  # filtered in numpy: a search for every chunk returns mostly zeros
        return [(self.ids[n], s) for n, s in zip(docs[0][keep].tolist(), scores[0][keep].tolist())]


__all__ = ["BM25Fallback", "bm25_index", "bm25_query", "K1", "B", "STOPWORDS"]
