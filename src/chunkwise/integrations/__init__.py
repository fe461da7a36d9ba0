"""Adapters that put chunkwise inside other frameworks' pipelines (extras ``langchain``, ``llamaindex``).

Each adapter is a thin shell: the framework's own base class outside, a chunkwise strategy inside, and the
chunk's exact offsets and provenance carried over under the :class:`~chunkwise.document.Chunk` field names.
"""
