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

from ..errors import ConfigError
from ..strategies import DEFAULT_STRATEGY, Strategy
from ..validation import InstanceOf, validated
from . import _shared as shared

_lc = shared.require("langchain_text_splitters", "langchain", "the LangChain adapter")
_lc_docs = shared.require("langchain_core.documents", "langchain", "the LangChain adapter")


class ChunkwiseTextSplitter(_lc.TextSplitter):  # type: ignore[name-defined]  # base imported at run time
    """A LangChain ``TextSplitter`` whose cuts are a chunkwise strategy's.

    ``strategy`` is a strategy name or object; ``params`` are its parameters (``max_tokens``,
    ``overlap``, ``tokenizer``, ...). ``chunk_size`` and ``chunk_overlap`` of the base class mirror
    ``max_tokens`` and ``overlap``, counted in the strategy's tokenizer, not in characters.
    LangChain's own spelling is accepted too: ``ChunkwiseTextSplitter(chunk_size=200, chunk_overlap=20)``
    is ``max_tokens=200, overlap=20``. ``add_start_index`` keeps LangChain's ``start_index`` metadata key
    (equal to ``start``). Metadata has no ``None`` values and lists joined into strings, which every
    vector store accepts; ``list_metadata="keep"`` keeps the lists.
    """

    @validated("ChunkwiseTextSplitter", add_start_index=InstanceOf(bool), **shared.ADAPTER_CONSTRAINTS)
    def __init__(
        self,
        strategy: str | Strategy = DEFAULT_STRATEGY,
        *,
        add_start_index: bool = False,
        list_metadata: str = "join",
        **params: Any,
    ):
        strat = shared.build_strategy(strategy, shared.ecosystem_params(params))
        super().__init__(
            chunk_size=strat.max_tokens,
            chunk_overlap=min(strat.overlap, strat.max_tokens - 1),
            add_start_index=add_start_index,
            strip_whitespace=False,
        )
        self.strategy = strat
        self.list_metadata = shared.check_list_metadata(list_metadata)

    @classmethod
    def from_tiktoken_encoder(
        cls,
        encoding_name: str = "cl100k_base",
        model_name: str | None = None,
        allowed_special: Any = None,
        disallowed_special: Any = None,
        **kwargs: Any,
    ):
        """LangChain's constructor for token sizes, offline: counts in chunkwise's own cl100k encoder (the
        base class would download tiktoken's rank file). Other encodings are refused with one line."""
        if model_name is not None or encoding_name != "cl100k_base":
            raise ConfigError(
                f"only cl100k_base is available offline, got {model_name or encoding_name!r}; "
                "or pass tokenizer='hf:PATH/tokenizer.json'"
            )
        strategy = kwargs.pop("strategy", DEFAULT_STRATEGY)
        return cls(strategy, tokenizer="cl100k", **kwargs)

    @classmethod
    def from_huggingface_tokenizer(cls, tokenizer: Any, **kwargs: Any):
        """LangChain's constructor for a Hugging Face tokenizer object: not supported (chunkwise needs a
        tokenizer with exact offsets); name its ``tokenizer.json`` instead."""
        raise ConfigError("pass tokenizer='hf:PATH/tokenizer.json' (a tokenizer file, counted exactly)")

    def split_text(self, text: str) -> list[str]:
        """The chunk texts, in order: exact slices of ``text``."""
        return [c.text for c in shared.chunks_of(self.strategy, text)]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None) -> list:
        """One Document per chunk; the input metadata is copied and the chunk's own fields added."""
        metadatas = metadatas or [{}] * len(texts)
        out = []
        for text, meta in zip(texts, metadatas):
            for c in shared.chunks_of(self.strategy, text, meta.get("source")):
                m = copy.deepcopy(meta)
                m.update(shared.chunk_metadata(c, self.list_metadata))
                if self._add_start_index:
                    m["start_index"] = c.start
                out.append(_lc_docs.Document(page_content=c.text, metadata=m))
        return out
