"""chunkwise: chunk documents where the meaning changes, index them, and measure whether it retrieves better.

The names below are the Python API. Heavy parts (Milvus, embedding back-ends) are imported on first use so
``import chunkwise`` stays fast.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .api import chunk, chunk_file, chunk_text
from .document import Chunk, Cue, Document, Page, Section
from .errors import ChunkwiseError, ConfigError, InputError
from .strategies import get_strategy

_LAZY = {
    "Index": ("chunkwise.retrieval.index", "Index"),
    "get_embedder": ("chunkwise.embeddings", "get_embedder"),
    "load": ("chunkwise.formats", "load"),
    "get_tokenizer": ("chunkwise.segmentation.tokenizers", "get_tokenizer"),
    "split_sentences": ("chunkwise.segmentation.sentences", "split_sentences"),
    "summarize": ("chunkwise.llm.mapreduce", "summarize"),
    "LLM": ("chunkwise.llm.base", "LLM"),
    "OpenAILLM": ("chunkwise.llm.openai", "OpenAILLM"),
    "ExtractiveLLM": ("chunkwise.llm.extractive", "ExtractiveLLM"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'chunkwise' has no attribute {name!r}")


__all__ = ["chunk", "chunk_file", "chunk_text", "Chunk", "Cue", "Document", "Page", "Section", "ChunkwiseError", "ConfigError",
           "InputError", "get_strategy", *_LAZY, "__version__"]
