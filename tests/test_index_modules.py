"""``chunkwise.retrieval.index`` is split by concept; its old import paths name the very objects of their new
homes (one class each, so ``isinstance`` and pickles agree whichever path a caller used), with a warning."""

from __future__ import annotations

import pytest

import chunkwise.retrieval as retrieval
from chunkwise.deprecation import ChunkwiseDeprecationWarning
from chunkwise.retrieval import add, index, ingest, results


def test_old_import_path_names_the_moved_objects():
    assert index.SearchResult is results.SearchResult is retrieval.SearchResult
    assert index.IndexReport is results.IndexReport is retrieval.IndexReport
    with pytest.warns(ChunkwiseDeprecationWarning, match="chunkwise.retrieval.index.AddSettings is deprecated"):
        assert index.AddSettings is add.AddSettings
    with pytest.warns(ChunkwiseDeprecationWarning):
        assert index.RESULT_FIELDS is results.RESULT_FIELDS
    with pytest.warns(ChunkwiseDeprecationWarning):
        assert index.EMBED_BATCH == ingest.EMBED_BATCH
    assert set(index.__all__) <= set(dir(index))
