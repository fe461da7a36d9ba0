"""One registry of names (``chunkwise.registry``): strategies, embedders, input formats and tokenizers are
looked up, listed, refused and extended the same way, and listing them imports nothing heavy."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import FakeEmbedder

from chunkwise import embeddings, registry
from chunkwise.embeddings import EMBEDDER_NAMES, get_embedder
from chunkwise.errors import ConfigError
from chunkwise.formats import load_bytes
from chunkwise.registry import register
from chunkwise.segmentation.tokenizers import TOKENIZER_NAMES, WordTokenizer, get_tokenizer
from chunkwise.strategies import get_strategy, semantic_strategies, strategy_class
from chunkwise.strategies.factory import make_strategy
from chunkwise.strategies.semantic import SemanticChunker


@pytest.fixture
def registered():
    """Names a test registers, removed again afterwards (the tables are process-wide)."""
    added: list[tuple[str, str]] = []

    def add(kind, name, target):
        register(kind, name, target)
        added.append((kind, name))

    yield add
    for kind, name in added:
        registry.table(kind).pop(name, None)


def fake_family(dim: str, **kw):
    """A family factory: ``fake:32`` -> a 32-dimensional FakeEmbedder."""
    return FakeEmbedder(dim=int(dim), **kw)


@pytest.mark.parametrize(
    ("kind", "look_up"),
    [
        ("strategy", lambda: get_strategy("nope")),
        ("embedder", lambda: get_embedder("nope", cache=False)),
        ("tokenizer", lambda: get_tokenizer("nope")),
        ("format", lambda: load_bytes(b"text", format="nope")),
    ],
)
def test_an_unknown_name_is_one_error_listing_every_valid_name(kind, look_up):
    label = registry.KINDS[kind][0]
    with pytest.raises(ConfigError) as err:
        look_up()
    assert str(err.value) == f"unknown {label} 'nope'; choose one of {', '.join(registry.names(kind))}"


def test_the_built_in_names_are_listed_as_before():
    assert registry.names("strategy")[:3] == ("auto", "fixed", "sentence")
    assert EMBEDDER_NAMES == ("minilm", "st:NAME_OR_PATH", "static", "openai:MODEL", "use-multilingual", "e5", "auto")
    assert TOKENIZER_NAMES == ("minilm", "cl100k", "chars", "words") and "hf:PATH" in registry.names("tokenizer")
    assert "video" in registry.names("format")  # registered by chunkwise.video itself
    assert semantic_strategies() == ("semantic", "maxmin", "cohesion")


def test_listing_and_importing_the_registry_imports_nothing_heavy():
    code = (
        "import sys; from chunkwise import registry; [registry.names(k) for k in registry.KINDS]; "
        "print(sorted(m for m in ('numpy', 'chunkwise.strategies', 'chunkwise.embeddings', 'onnxruntime') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"


def test_a_strategy_registered_by_target_string(registered):
    registered("strategy", "lines-test", "index_data:LineStrategy")
    assert "lines-test" in registry.names("strategy") and "lines-test" not in semantic_strategies()
    chunks = get_strategy("lines-test", tokenizer="words").chunk("one line\nanother line")
    assert [c.text for c in chunks] == ["one line", "another line"]
    with pytest.raises(ConfigError, match="strategy 'lines-test' has no parameter bogus"):
        get_strategy("lines-test", bogus=1)


def test_a_registered_strategy_that_takes_an_embedder_is_semantic(registered):
    registered("strategy", "semantic-too", SemanticChunker)
    assert semantic_strategies()[-1] == "semantic-too"
    emb = FakeEmbedder()
    assert make_strategy("semantic-too", {"max_tokens": 40}, emb).embedder is emb


def test_a_target_that_is_not_a_strategy_or_cannot_be_imported(registered):
    registered("strategy", "not-a-class", "chunkwise.registry:names")
    with pytest.raises(ConfigError, match="not a Strategy subclass"):
        strategy_class("not-a-class")
    registered("strategy", "missing", "chunkwise_no_such_module:Thing")
    with pytest.raises(ConfigError, match="strategy 'missing': cannot import .*no module 'chunkwise_no_such_module'"):
        strategy_class("missing")
    registered("strategy", "missing-attr", "chunkwise.registry:NoSuchThing")
    with pytest.raises(ConfigError, match="no attribute 'NoSuchThing'"):
        strategy_class("missing-attr")


def test_an_embedder_class_and_an_embedder_family(registered):
    registered("embedder", "fake-bow", "conftest:FakeEmbedder")
    registered("embedder", "fake:DIM", fake_family)
    assert get_embedder("fake-bow", cache=False, dim=16).dim == 16
    with pytest.raises(ConfigError, match="embedder 'fake-bow' has no parameter bogus; valid: dim, model_window"):
        get_embedder("fake-bow", cache=False, bogus=1)
    assert get_embedder("fake:32", cache=False).dim == 32
    assert "fake:DIM" in embeddings.EMBEDDER_NAMES  # read when asked: registered names are listed
    with pytest.raises(ConfigError, match="unknown embedder 'fake:'"):  # a family needs the rest of the name
        get_embedder("fake:", cache=False)


def test_a_registered_tokenizer(registered):
    registered("tokenizer", "words-registered-test", WordTokenizer)
    assert get_tokenizer("words-registered-test").count("three small words") == 3
    registered("tokenizer", "not-a-tokenizer-test", "builtins:dict")
    with pytest.raises(ConfigError, match="does not make a Tokenizer"):
        get_tokenizer("not-a-tokenizer-test")


@pytest.mark.parametrize(
    ("kind", "name", "target", "problem"),
    [
        ("strategy", "fixed", "index_data:LineStrategy", "a built-in one"),
        ("embedder", "minilm", FakeEmbedder, "a built-in one"),
        ("strategy", "x:PATH", "index_data:LineStrategy", "has none"),
        ("embedder", "x:lower", FakeEmbedder, "a family such as 'prefix:PATH'"),
        ("strategy", " spaced", "index_data:LineStrategy", "without spaces"),
        ("strategy", "lines", "index_data.LineStrategy", "is not 'module:attribute'"),
        (
            "strategy",
            "lines",
            3,
            "^cannot register strategy 'lines': target must be a 'module:attribute' string or a function, got 3$",
        ),
        ("chunker", "lines", "index_data:LineStrategy", "unknown registry kind 'chunker'; choose one of strategy"),
    ],
)
def test_what_register_refuses(kind, name, target, problem):
    with pytest.raises(ConfigError, match=problem):
        register(kind, name, target)


def test_a_lazy_module_is_imported_on_first_use():
    import subprocess
    import sys

    code = (
        "import sys\nfrom chunkwise.registry import LazyModule\n"
        "m = LazyModule('colorsys')\nbefore = 'colorsys' in sys.modules\n"
        "value = m.rgb_to_hsv(1.0, 0.0, 0.0)\nprint(before, 'colorsys' in sys.modules, value, m.hsv_to_rgb is sys.modules['colorsys'].hsv_to_rgb)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split() == ["False", "True", "(0.0,", "1.0,", "1.0)", "True"]


def test_a_lazy_regex_matches_like_the_compiled_one():
    import re

    from chunkwise.registry import lazy_regex

    pattern = r"(?P<word>[A-Z]\w+)\s+(\d+)"
    lazy, compiled = lazy_regex(pattern, re.IGNORECASE), re.compile(pattern, re.IGNORECASE)
    text = "keeper 12, Lamp 3 and no number"
    assert [m.groups() for m in lazy.finditer(text)] == [m.groups() for m in compiled.finditer(text)] != []
    assert lazy.sub(r"\2", text) == compiled.sub(r"\2", text)
    assert lazy.pattern == pattern and lazy.flags == compiled.flags
