"""chunkwise as a LangChain ``TextSplitter`` (extra ``langchain``).

>>> from chunkwise.integrations.langchain import ChunkwiseTextSplitter
>>> splitter = ChunkwiseTextSplitter("cohesion", max_tokens=200)
>>> docs = splitter.split_documents(loaded_docs)     # any LangChain loader's Documents

Unlike LangChain's own splitters, offsets are not recovered with ``str.find`` afterwards: each output
Document's metadata carries the chunk's exact ``start``/``end`` (``text[start:end] == page_content``) and
its provenance under the :class:`~chunkwise.document.Chunk` field names.
"""

from __future__ import annotations

import copy
from typing import Any

from ..strategies import Strategy
from ._shared import build_strategy, chunk_metadata, chunks_of, require

_lc = require("langchain_text_splitters", "langchain", "the LangChain adapter")
_lc_docs = require("langchain_core.documents", "langchain", "the LangChain adapter")


class ChunkwiseTextSplitter(_lc.TextSplitter):  # type: ignore[name-defined]  # base imported at run time
    """A LangChain ``TextSplitter`` whose cuts are a chunkwise strategy's.

    ``strategy`` is a strategy name or object; ``params`` are its parameters (``max_tokens``,
    ``overlap``, ``tokenizer``, ...). ``chunk_size`` and ``chunk_overlap`` of the base class mirror
    ``max_tokens`` and ``overlap``, counted in the strategy's tokenizer, not in characters.
    ``add_start_index`` keeps LangChain's ``start_index`` metadata key (equal to ``start``).
    """

    def __init__(self, strategy: str | Strategy = "recursive", *, add_start_index: bool = False,
                 **params: Any):
        strat = build_strategy(strategy, params)
        super().__init__(chunk_size=strat.max_tokens, chunk_overlap=min(strat.overlap, strat.max_tokens - 1),
                         add_start_index=add_start_index, strip_whitespace=False)
        self.strategy = strat

    def split_text(self, text: str) -> list[str]:
        """The chunk texts, in order: exact slices of ``text``."""
        return [c.text for c in chunks_of(self.strategy, text)]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None) -> list:
        """One Document per chunk; the input metadata is copied and the chunk's own fields added."""
        metadatas = metadatas or [{}] * len(texts)
        out = []
        for text, meta in zip(texts, metadatas):
            for c in chunks_of(self.strategy, text, meta.get("source")):
                m = copy.deepcopy(meta)
                m.update(chunk_metadata(c))
                if self._add_start_index:
                    m["start_index"] = c.start
                out.append(_lc_docs.Document(page_content=c.text, metadata=m))
        return out
