"""The LangChain and LlamaIndex adapters keep the frameworks' contracts and chunkwise's exact offsets."""

from __future__ import annotations

import pytest

from chunkwise import get_strategy

TEXT = (
    "The pump is inspected every spring. " * 6
    + "\n\n"
    + "Its filter is replaced yearly. " * 5
    + "\n\n"
    + "The pump is inspected every spring. " * 6
)  # a repeated passage: str.find would land on the first copy


class TestLangChain:
    lc = pytest.importorskip("langchain_text_splitters")

    def splitter(self, **kw):
        from chunkwise.integrations.langchain import ChunkwiseTextSplitter

        return ChunkwiseTextSplitter("sentence", max_tokens=24, **kw)

    def test_is_a_text_splitter_with_the_strategys_cuts(self):
        from langchain_core.documents import BaseDocumentTransformer

        s = self.splitter()
        assert isinstance(s, self.lc.TextSplitter) and isinstance(s, BaseDocumentTransformer)
        expected = [c.text for c in get_strategy("sentence", max_tokens=24).chunk(TEXT)]
        assert s.split_text(TEXT) == expected and len(expected) > 3

    def test_documents_carry_exact_offsets_under_chunk_field_names(self):
        from langchain_core.documents import Document

        s = self.splitter(add_start_index=True)
        docs = s.split_documents([Document(page_content=TEXT, metadata={"source": "pump.txt", "lang": "en"})])
        assert len(docs) > 3
        for i, d in enumerate(docs):
            m = d.metadata
            assert TEXT[m["start"] : m["end"]] == d.page_content
            assert m["start_index"] == m["start"] and m["index"] == i
            assert m["lang"] == "en" and m["source"] == "pump.txt" and 0 < m["token_count"] <= 24
        # the repeated passage's second copy keeps its own offsets
        assert docs[-1].metadata["start"] > len(TEXT) // 2

    def test_transform_documents_and_bad_parameters(self):
        from langchain_core.documents import Document

        from chunkwise.errors import ConfigError

        out = self.splitter().transform_documents([Document(page_content=TEXT)])
        assert [d.page_content for d in out] == self.splitter().split_text(TEXT)
        from chunkwise.integrations.langchain import ChunkwiseTextSplitter

        with pytest.raises(ConfigError, match="no parameter"):
            ChunkwiseTextSplitter("sentence", bogus=1)


class TestLlamaIndex:
    pytest.importorskip("llama_index.core")

    def parser(self):
        from chunkwise.integrations.llamaindex import ChunkwiseNodeParser

        return ChunkwiseNodeParser.from_strategy("sentence", max_tokens=24)

    def test_nodes_have_exact_offsets_and_neighbours(self):
        from llama_index.core import Document
        from llama_index.core.schema import NodeRelationship

        doc = Document(text=TEXT, metadata={"file_path": "pump.txt"})
        nodes = self.parser().get_nodes_from_documents([doc])
        assert len(nodes) > 3
        for i, n in enumerate(nodes):
            assert TEXT[n.start_char_idx : n.end_char_idx] == n.text
            assert n.metadata["start"] == n.start_char_idx and n.metadata["file_path"] == "pump.txt"
            assert n.relationships[NodeRelationship.SOURCE].node_id == doc.doc_id
            if i:
                assert n.relationships[NodeRelationship.PREVIOUS].node_id == nodes[i - 1].node_id
        assert nodes[-1].start_char_idx > len(TEXT) // 2
        # chunkwise's bookkeeping is not embedded with the text
        assert "token_count" not in nodes[0].get_content(metadata_mode="embed")

    def test_inside_an_ingestion_pipeline(self):
        from llama_index.core import Document
        from llama_index.core.ingestion import IngestionPipeline

        from chunkwise.integrations.llamaindex import ChunkwiseNodeParser

        pipe = IngestionPipeline(transformations=[ChunkwiseNodeParser(strategy="sentence", params={"max_tokens": 24})])
        nodes = pipe.run(documents=[Document(text=TEXT), Document(text="A second, short document.")])
        assert [n.text for n in nodes[:-1]] == [c.text for c in get_strategy("sentence", max_tokens=24).chunk(TEXT)]
        assert nodes[-1].text == "A second, short document."
        assert len({n.node_id for n in nodes}) == len(nodes)


class TestEcosystemConventions:
    """The frameworks' own parameter names work, nothing reaches the network, and the metadata is what
    scalar-only vector stores accept (no None, no lists) unless lists are asked for."""

    MD = (
        "# Guide\n\nRead this first. "
        + "It says what the guide covers. " * 12
        + "\n\n## Input > Output\n\n"
        + "The pump is inspected every spring. Its filter is replaced yearly.\n"
    )

    def test_langchain_chunk_size_and_overlap(self):
        pytest.importorskip("langchain_text_splitters")
        from chunkwise.errors import ConfigError
        from chunkwise.integrations.langchain import ChunkwiseTextSplitter

        s = ChunkwiseTextSplitter("fixed", chunk_size=12, chunk_overlap=3, tokenizer="words")
        assert (s.strategy.max_tokens, s.strategy.overlap) == (12, 3)
        assert s.split_text(TEXT) == [
            c.text for c in get_strategy("fixed", max_tokens=12, overlap=3, tokenizer="words").chunk(TEXT)
        ]
        with pytest.raises(ConfigError, match="not both"):
            ChunkwiseTextSplitter("fixed", chunk_size=12, max_tokens=10)

    def test_langchain_from_tiktoken_encoder_is_offline(self, monkeypatch):
        pytest.importorskip("langchain_text_splitters")
        import socket

        from chunkwise.errors import ConfigError
        from chunkwise.integrations.langchain import ChunkwiseTextSplitter

        def no_network(*a, **kw):
            raise AssertionError("the network was used")

        monkeypatch.setattr(socket, "create_connection", no_network)
        monkeypatch.setattr(socket.socket, "connect", no_network)
        s = ChunkwiseTextSplitter.from_tiktoken_encoder(chunk_size=20, chunk_overlap=0)
        assert s.strategy.tokenizer == "cl100k" and s.strategy.max_tokens == 20
        assert all(len(t) for t in s.split_text(TEXT))
        with pytest.raises(ConfigError, match="cl100k_base"):
            ChunkwiseTextSplitter.from_tiktoken_encoder("gpt2")

    @pytest.mark.parametrize("list_metadata", ["join", "keep"])
    def test_langchain_metadata_is_scalar_and_never_none(self, list_metadata):
        pytest.importorskip("langchain_text_splitters")
        from langchain_core.documents import Document

        from chunkwise.integrations.langchain import ChunkwiseTextSplitter

        s = ChunkwiseTextSplitter("markdown", max_tokens=64, list_metadata=list_metadata)
        docs = s.split_documents([Document(page_content=self.MD)])
        assert docs[-1].page_content.startswith("## Input > Output")
        m = docs[-1].metadata
        assert None not in m.values()
        assert not {"start_frame", "end_frame", "track_ids", "classes", "page_start", "start_time"} & set(m)
        if list_metadata == "join":
            assert all(isinstance(v, (str, int, float, bool)) for v in m.values())
            assert m["section"] == "Guide > Input > Output"
        else:
            assert m["section"] == ["Guide", "Input > Output"]

    def test_llamaindex_text_has_no_bookkeeping_and_no_none(self):
        pytest.importorskip("llama_index.core")
        from llama_index.core import Document

        from chunkwise.integrations.llamaindex import ChunkwiseNodeParser

        parser = ChunkwiseNodeParser.from_defaults(chunk_size=64, chunk_overlap=0, strategy="markdown")
        assert parser._get_strategy().max_tokens == 64
        node = parser.get_nodes_from_documents([Document(text=self.MD, metadata={"file_path": "g.md"})])[-1]
        assert None not in node.metadata.values() and node.metadata["section"] == "Guide > Input > Output"
        for mode in ("embed", "llm"):
            shown = node.get_content(metadata_mode=mode)
            assert "None" not in shown and "token_count" not in shown and "start_frame" not in shown
            assert "file_path: g.md" in shown  # the user's own metadata still reaches the model
