"""Old attribute names on instances (``deprecation.renamed_attribute``): they read and write the new one with
the one deprecation wording, and a class that defines the old name itself is left as it is."""

from __future__ import annotations

import warnings

import pytest
from conftest import FakeEmbedder

import chunkwise.deprecation as deprecation
from chunkwise.deprecation import REMOVED_IN, ChunkwiseDeprecationWarning, Rename, renamed_attribute


class Thing:
    old = renamed_attribute("old", "new", "thing")

    def __init__(self):
        self.new = 1


@pytest.fixture
def thing_renamed(monkeypatch):
    """``Thing.old`` in the table of renames (a deprecation must be listed there to warn)."""
    monkeypatch.setattr(deprecation, "RENAMES", (*deprecation.RENAMES, Rename("old", "new", ("thing",))))


def test_an_old_attribute_reads_and_writes_the_new_one(thing_renamed):
    thing = Thing()
    message = f"thing: 'old' is deprecated, use 'new' (removed in chunkwise {REMOVED_IN})"
    with pytest.warns(ChunkwiseDeprecationWarning) as caught:
        assert thing.old == 1
        thing.old = 2
    assert thing.new == 2 and [str(w.message) for w in caught] == [message, message]
    assert caught[0].filename == __file__  # the warning points at the caller's line


def test_embedder_max_tokens_is_model_window_on_instances():
    emb = FakeEmbedder(model_window=7)
    with pytest.warns(ChunkwiseDeprecationWarning, match="embedder: 'max_tokens' is deprecated, use 'model_window'"):
        assert emb.max_tokens == 7


def test_a_subclass_that_defines_max_tokens_is_not_rewritten():
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class Old(FakeEmbedder):
            max_tokens = 5

        old = Old(model_window=9)
        assert (old.max_tokens, old.model_window) == (5, 9)  # its own attribute, nothing translated
