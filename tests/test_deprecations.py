"""Every old name is in one table (``chunkwise.deprecation.RENAMES``, ``MOVED``) with its removal release, and
each still works through its public entry point with one :class:`ChunkwiseDeprecationWarning` naming the new
name and that release; a deprecation not in the table is refused."""

from __future__ import annotations

import importlib
import warnings

import pytest
from conftest import FakeEmbedder

import chunkwise
from chunkwise.deprecation import (
    MOVED,
    MOVED_REMOVED_IN,
    RENAMES,
    ChunkwiseDeprecationWarning,
    deprecation_message,
    renamed,
    warn_renamed,
)
from chunkwise.pipeline.config import PipelineConfig
from chunkwise.strategies import get_strategy


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def test_every_removal_release_is_later_than_this_one():
    for r in RENAMES:
        assert _version(r.removed_in) > _version(chunkwise.__version__), r
    assert _version(MOVED_REMOVED_IN) > _version(chunkwise.__version__)


def _late_chunking():
    from chunkwise.context import late

    late._renamed_window(None, 128)  # what late_chunk_vectors(window=) and LateChunker(window=) call first


def _llm_contextualizer():
    from chunkwise.context.llm import LLMContextualizer

    LLMContextualizer(base_url="http://127.0.0.1:9", model="m", max_tokens=10)


def _embed_window():
    import argparse

    from chunkwise.cli.eval_flags import add_embedding_options

    p = argparse.ArgumentParser()
    add_embedding_options(p)
    p.parse_args(["--embed-window", "256"])


#: (owner, old name) -> what a user does that uses it, at that public entry point
TRIGGERS = {
    ("embedder", "max_tokens"): lambda: FakeEmbedder(model_window=7).max_tokens,
    ("openai embedder", "max_tokens"): lambda: __import__("chunkwise.embeddings.openai", fromlist=["x"]).OpenAIEmbedder(
        "m", base_url="http://127.0.0.1:9/v1", max_tokens=100
    ),
    ("openai embedder", "max_retries"): lambda: __import__(
        "chunkwise.embeddings.openai", fromlist=["x"]
    ).OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", max_retries=1),
    ("openai embedder", "api_key_env"): lambda: __import__(
        "chunkwise.embeddings.openai", fromlist=["x"]
    ).OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key_env="CHUNKWISE_TEST_KEY"),
    ("get_embedder", "api_key_env"): lambda: __import__("chunkwise.embeddings", fromlist=["x"]).get_embedder(
        "openai:m", base_url="http://127.0.0.1:9/v1", api_key_env="CHUNKWISE_TEST_KEY", cache=False
    ),
    ("static embedder", "max_tokens"): None,  # needs a model download; the message is made by the same call
    ("minilm embedder (model_window = window - 2)", "window"): None,  # needs the MiniLM model; test_renames
    ("eval/tune", "--embed-window"): _embed_window,
    ("embedder name", "minilm-torch"): None,  # needs torch; test_renames covers it where it is installed
    ("LLMContextualizer", "max_tokens"): _llm_contextualizer,
    ("context mode 'llm'", "max_tokens"): lambda: __import__("chunkwise.context", fromlist=["x"]).contextualize(
        chunkwise.Document(""), [], "llm", base_url="http://127.0.0.1:9/v1", model="m", cache=False, max_tokens=5
    ),
    ("context_options", "max_tokens"): lambda: __import__("chunkwise.retrieval.add", fromlist=["x"]).add_request(
        None, None, None, {"context": "llm", "context_options": {"max_tokens": 5}}
    ),
    ("late chunking", "window"): _late_chunking,
    ("late_options", "window"): lambda: PipelineConfig(late_options={"window": 64}).validate(),
    ("strategy 'semantic'", "window"): lambda: get_strategy("semantic", embedder=FakeEmbedder(), window="text"),
    ("configuration", "context_opts"): lambda: PipelineConfig.from_mapping({"run": {"context_opts": {}}}),
    ("configuration", "late_opts"): lambda: PipelineConfig.from_mapping({"run": {"late_opts": {}}}),
    ("strategy 'semantic'", "structure_bonus"): lambda: get_strategy(
        "semantic", embedder=FakeEmbedder(), structure_bonus=0.1
    ),
    ("strategy 'maxmin'", "structure_bonus"): lambda: get_strategy(
        "maxmin", embedder=FakeEmbedder(), structure_bonus=0.1
    ),
    ("strategy 'cohesion'", "structure_bonus"): lambda: get_strategy(
        "cohesion", embedder=FakeEmbedder(), structure_bonus=0.1
    ),
}


def test_every_entry_of_the_table_has_a_trigger():
    assert set(TRIGGERS) == {(owner, r.old) for r in RENAMES for owner in r.owners}


@pytest.mark.parametrize("owner, old", [k for k, v in TRIGGERS.items() if v is not None])
def test_each_old_name_still_works_and_warns_once_with_its_removal_release(owner, old):
    rename = next(r for r in RENAMES if r.old == old and owner in r.owners)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            TRIGGERS[(owner, old)]()
        except chunkwise.errors.ChunkwiseError:
            pass  # the warning comes first; what happens after (no server here) is another test's
    ours = [str(w.message) for w in caught if issubclass(w.category, ChunkwiseDeprecationWarning)]
    assert len(ours) == 1, ours
    assert old in ours[0] and rename.new in ours[0] and f"(removed in chunkwise {rename.removed_in})" in ours[0]


@pytest.mark.parametrize(
    "name", ["semantic", "maxmin", "cohesion"], ids=["break_distance", "break_similarity", "break_reward"]
)
def test_structure_bonus_is_the_strategy_own_parameter_under_its_old_name(name):
    new = {"semantic": "break_distance", "maxmin": "break_similarity", "cohesion": "break_reward"}[name]
    with pytest.warns(ChunkwiseDeprecationWarning, match=f"'structure_bonus' is deprecated, use '{new}'"):
        old = get_strategy(name, embedder=FakeEmbedder(), structure_bonus=0.7)
    fresh = get_strategy(name, embedder=FakeEmbedder(), **{new: 0.7})
    assert getattr(old, new) == 0.7 and old.config_id() == fresh.config_id()
    assert "structure_bonus" not in fresh.get_params()
    with pytest.warns(ChunkwiseDeprecationWarning):  # the constructor is an entry point too
        direct = type(fresh)(embedder=FakeEmbedder(), structure_bonus=0.7)
    assert direct.config_id() == fresh.config_id() and getattr(direct, new) == 0.7


def test_the_three_structure_parameters_have_their_own_defaults_and_help():
    from chunkwise.strategies.params import PARAM_HELP

    defaults = {}
    for name, param in (("semantic", "break_distance"), ("maxmin", "break_similarity"), ("cohesion", "break_reward")):
        defaults[param] = getattr(get_strategy(name, embedder=FakeEmbedder()), param)
        assert PARAM_HELP[param].startswith(f"{name}:")
    assert defaults == {"break_distance": 0.2, "break_similarity": 0.1, "break_reward": 0.25}
    assert "structure_bonus" not in PARAM_HELP


@pytest.mark.parametrize("module, name", [(m, n) for m, names in MOVED.items() for n in names])
def test_old_import_paths_give_the_new_objects_with_a_warning(module, name):
    home, _, attr = MOVED[module][name].partition(":")
    with pytest.warns(ChunkwiseDeprecationWarning, match=f"{module}.{name} is deprecated, use {home}.{attr}"):
        value = getattr(importlib.import_module(module), name)
    assert value is getattr(importlib.import_module(home), attr)
    with pytest.raises(AttributeError):
        _ = importlib.import_module(module).no_such_name


def test_a_deprecation_outside_the_table_is_refused():
    with pytest.raises(LookupError, match="not in chunkwise.deprecation.RENAMES"):
        deprecation_message("'colour'", "'color'")
    with pytest.raises(LookupError, match="not an owner"):
        warn_renamed("window", "late_window", "some other entry point")
    with pytest.raises(LookupError):
        renamed({"colour": 1}, {"colour": "color"}, "paint")


def test_every_deprecation_warning_in_the_package_is_worded_by_the_table():
    """A ``ChunkwiseDeprecationWarning`` raised anywhere but ``deprecation.py`` carries a message made by
    ``deprecation_message`` (which looks the name up in ``RENAMES``): no deprecation outside the table."""
    import ast
    from pathlib import Path

    root = Path(chunkwise.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "deprecation.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "warnings.warn"):
                continue
            if "DeprecationWarning" not in ast.unparse(node):
                continue
            first = node.args[0] if node.args else None
            if not (isinstance(first, ast.Call) and ast.unparse(first.func) == "deprecation_message"):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []


@pytest.mark.parametrize(
    ("module", "cls", "new"),
    [
        ("semantic", "SemanticChunker", "break_distance"),
        ("maxmin", "MaxMinChunker", "break_similarity"),
        ("cohesion", "CohesionChunker", "break_reward"),
    ],
)
def test_a_constructor_given_the_old_and_the_new_name_refuses_both(module, cls, new):
    import importlib

    chunker = getattr(importlib.import_module(f"chunkwise.strategies.{module}"), cls)
    with pytest.raises(chunkwise.errors.ConfigError, match=rf"give '{new}' only \('structure_bonus' is its old name\)"):
        chunker(embedder=FakeEmbedder(), structure_bonus=0.05, **{new: 0.07})
    assert getattr(chunker(embedder=FakeEmbedder(), **{new: 0.07}), new) == 0.07
