"""A strategy object given together with parameters is one error, in one wording, in every front end.

Every front end builds strategies through ``strategies.factory.make_strategy``; before that, the same request
was a ConfigError in the API, a TypeError in the adapters, another wording in ``Index.add`` and silently ignored
by the viz report (``max_tokens=5`` asked, the object's 8 kept).
"""

from __future__ import annotations

import re

import pytest

from chunkwise import api, viz
from chunkwise.errors import ConfigError
from chunkwise.retrieval.index import Index
from chunkwise.store.memory import MemoryStore
from chunkwise.strategies import get_strategy

WORDING = re.escape("parameters max_tokens given with a strategy object; set them on the strategy instead")
TEXT = "The pump failed at dawn. The keeper fixed it.\n\nLunch was soup. Everyone liked the bread."


def _strategy():
    return get_strategy("fixed", max_tokens=8, tokenizer="words")


def _api():
    api.chunk_text(TEXT, _strategy(), max_tokens=5)


def _langchain():
    pytest.importorskip("langchain_text_splitters")
    from chunkwise.integrations.langchain import ChunkwiseTextSplitter

    ChunkwiseTextSplitter(_strategy(), max_tokens=5)


def _llamaindex():
    pytest.importorskip("llama_index.core")
    from chunkwise.integrations.llamaindex import ChunkwiseNodeParser

    ChunkwiseNodeParser.from_strategy(_strategy(), max_tokens=5)


def _viz():
    viz.report(TEXT, [_strategy()], max_tokens=5)


def _index(fake_embedder):
    with Index(store=MemoryStore(), embedder=fake_embedder) as ix:
        from chunkwise.document import Document

        ix.add([Document(TEXT, source="a.txt")], _strategy(), params={"max_tokens": 5})


def _ray_engine(fake_embedder):
    """``RayIngest.run`` settles its options through ``Index.prepare_add`` before any worker starts."""
    with Index(store=MemoryStore(), embedder=fake_embedder) as ix:
        ix.prepare_add(_strategy(), {"max_tokens": 5})


def _summarize():
    from chunkwise.llm.mapreduce import summarize

    summarize(TEXT, strategy=_strategy(), max_tokens=5)


@pytest.mark.parametrize("front", [_api, _langchain, _llamaindex, _viz, _index, _ray_engine, _summarize])
def test_one_error_one_wording(front, fake_embedder):
    with pytest.raises(ConfigError, match=f"^{WORDING}$"):
        front(fake_embedder) if front in (_index, _ray_engine) else front()


def test_the_object_alone_is_used_as_given():
    strat = _strategy()
    got = api.chunk_text(TEXT, strat)
    assert len(got) > 1 and max(c.token_count for c in got) <= 8
    assert [c.text for c in got] == [c.text for c in strat.chunk(TEXT)]


def test_a_named_strategy_takes_shared_parameters_where_it_has_them():
    from chunkwise.strategies.factory import make_strategy

    s = make_strategy("fixed", {"tokenizer": "words"}, shared={"max_tokens": 5, "not_a_fixed_param": 1})
    assert s.max_tokens == 5
    with pytest.raises(ConfigError, match="has no parameter nope"):
        make_strategy("fixed", {"nope": 1})
