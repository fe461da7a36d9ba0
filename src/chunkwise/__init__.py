"""chunkwise: chunk documents where the meaning changes, index them, and measure whether it retrieves better.

The names below are the Python API, each imported on first use so ``import chunkwise`` stays fast.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Every name is imported on first use (PEP 562), so ``import chunkwise`` and ``chunkwise --version`` cost
# about what Python's start-up does; ``chunkwise.chunk`` brings in the strategies (and numpy) when asked.
_LAZY = {
    "chunk": ("chunkwise.api", "chunk"),
    "chunk_file": ("chunkwise.api", "chunk_file"),
    "chunk_text": ("chunkwise.api", "chunk_text"),
    "Chunk": ("chunkwise.document", "Chunk"),
    "Cue": ("chunkwise.document", "Cue"),
    "Document": ("chunkwise.document", "Document"),
    "Page": ("chunkwise.document", "Page"),
    "Section": ("chunkwise.document", "Section"),
    "ChunkwiseError": ("chunkwise.errors", "ChunkwiseError"),
    "ConfigError": ("chunkwise.errors", "ConfigError"),
    "InputError": ("chunkwise.errors", "InputError"),
    "get_strategy": ("chunkwise.strategies", "get_strategy"),
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
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'chunkwise' has no attribute {name!r}")


__all__ = [*_LAZY, "__version__"]


def __dir__() -> list[str]:
    return sorted(__all__)
