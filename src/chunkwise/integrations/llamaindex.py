"""chunkwise as a LlamaIndex ``NodeParser`` (extra ``llamaindex``).

>>> from chunkwise.integrations.llamaindex import ChunkwiseNodeParser
>>> parser = ChunkwiseNodeParser.from_strategy("markdown", max_tokens=300)
>>> nodes = parser.get_nodes_from_documents(documents)     # or inside an IngestionPipeline

Each node's ``start_char_idx``/``end_char_idx`` are the chunk's exact offsets into its document's text
(LlamaIndex's base class re-derives them with ``str.find``, which can land on an earlier copy of a repeated
passage; this parser puts the exact ones back). Nodes link to their source document and to their
previous/next neighbours; chunkwise's fields are in the metadata but excluded from the text that is embedded
or shown to an LLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..strategies import DEFAULT_STRATEGY, Strategy
from ..validation import is_scalar, validated
from ._shared import (
    ADAPTER_CONSTRAINTS,
    METADATA_KEYS,
    build_strategy,
    check_list_metadata,
    chunk_metadata,
    chunks_of,
    ecosystem_params,
    require,
)

_core = require("llama_index.core.node_parser", "llamaindex", "the LlamaIndex adapter")
_schema = require("llama_index.core.schema", "llamaindex", "the LlamaIndex adapter")
_pyd = require("llama_index.core.bridge.pydantic", "llamaindex", "the LlamaIndex adapter")

#: the chunkwise metadata keys kept out of the embedded and LLM-visible text: every chunk field but the text
_CHUNKWISE_KEYS = METADATA_KEYS


class ChunkwiseNodeParser(_core.NodeParser):  # type: ignore[name-defined]  # base imported at run time
    """A LlamaIndex ``NodeParser`` whose cuts are a chunkwise strategy's (``strategy`` name + ``params``)."""

    strategy: str = _pyd.Field(default=DEFAULT_STRATEGY, description="chunkwise strategy name")
    params: dict = _pyd.Field(default_factory=dict, description="the strategy's parameters")
    list_metadata: str = _pyd.Field(default="join", description="'join' lists into strings, or 'keep' them")
    _strategy: Any = _pyd.PrivateAttr(default=None)

    @classmethod
    @validated("ChunkwiseNodeParser", **ADAPTER_CONSTRAINTS)
    def from_strategy(
        cls, strategy: str | Strategy = DEFAULT_STRATEGY, list_metadata: str = "join", **params: Any
    ) -> ChunkwiseNodeParser:
        """A parser for ``strategy`` (name or object); ``chunk_size``/``chunk_overlap`` are accepted as
        LlamaIndex spells ``max_tokens``/``overlap``."""
        strat = build_strategy(strategy, ecosystem_params(params))
        parser = cls(
            strategy=strat.name,
            list_metadata=check_list_metadata(list_metadata),
            params={k: v for k, v in strat.get_params().items() if is_scalar(v)},
        )
        parser._strategy = strat
        return parser

    @classmethod
    def from_defaults(
        cls,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        strategy: str | Strategy = DEFAULT_STRATEGY,
        **params: Any,
    ) -> ChunkwiseNodeParser:
        """LlamaIndex's constructor convention (``SentenceSplitter.from_defaults(chunk_size=..., ...)``);
        framework-only keywords (``callback_manager``, ``include_prev_next_rel``...) are passed to the base."""
        list_metadata = params.pop("list_metadata", "join")
        own = {k: params.pop(k) for k in list(params) if k in cls.model_fields}
        if chunk_size is not None:
            params["chunk_size"] = chunk_size
        if chunk_overlap is not None:
            params["chunk_overlap"] = chunk_overlap
        parser = cls.from_strategy(strategy, list_metadata=list_metadata, **params)
        for k, v in own.items():
            setattr(parser, k, v)
        return parser

    def _get_strategy(self) -> Strategy:
        if self._strategy is None:
            check_list_metadata(self.list_metadata)
            self._strategy = build_strategy(self.strategy, ecosystem_params(dict(self.params)))
        return self._strategy

    def _parse_nodes(self, nodes: Sequence, show_progress: bool = False, **kwargs: Any) -> list:
        strat = self._get_strategy()
        out = []
        for node in nodes:
            text = node.get_content(metadata_mode=_schema.MetadataMode.NONE)
            source = node.metadata.get("file_path") or node.node_id
            for c in chunks_of(strat, text, source):
                own = chunk_metadata(c, self.list_metadata)
                meta = {**node.metadata, **own} if self.include_metadata else own
                child = _schema.TextNode(
                    id_=c.id,
                    text=c.text,
                    start_char_idx=c.start,
                    end_char_idx=c.end,
                    metadata=meta,
                    excluded_embed_metadata_keys=[*node.excluded_embed_metadata_keys, *_CHUNKWISE_KEYS],
                    excluded_llm_metadata_keys=[*node.excluded_llm_metadata_keys, *_CHUNKWISE_KEYS],
                    relationships={_schema.NodeRelationship.SOURCE: node.as_related_node_info()},
                )
                out.append(child)
        return out

    def _postprocess_parsed_nodes(self, nodes: list, parent_doc_map: dict) -> list:
        """The base class's relationships and metadata merge, then the exact offsets put back."""
        exact = [(n.start_char_idx, n.end_char_idx) for n in nodes]
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for n, (a, b) in zip(nodes, exact):
            n.start_char_idx, n.end_char_idx = a, b
        return nodes
