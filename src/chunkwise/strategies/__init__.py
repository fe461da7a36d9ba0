"""Chunking strategies, by name. Each is a plain object: parameters in, ``chunk(doc)`` does the work.

Names resolve through :mod:`chunkwise.registry` (kind ``"strategy"``): the built-in ones are listed there
and ``register("strategy", name, "module:Class")`` adds one. :data:`STRATEGY_NAMES` and
:data:`SEMANTIC_STRATEGIES` are read from it when asked, so they include registered strategies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import registry
from ..deprecation import renamed
from ..errors import ConfigError
from ..validation import Named, validated

if TYPE_CHECKING:
    from .base import Strategy, build_chunks, regions, trim_span

    STRATEGY_NAMES: tuple[str, ...]
    SEMANTIC_STRATEGIES: tuple[str, ...]

#: names of ``strategies.base`` re-exported here, imported on first use: a command line that only needs
#: the strategy names (``--strategy`` choices) does not import the tokenizers and numpy
_BASE_NAMES = ("Strategy", "build_chunks", "regions", "trim_span")


def __getattr__(name: str) -> Any:
    if name in _BASE_NAMES:
        from . import base

        value = getattr(base, name)
        globals()[name] = value
        return value
    if name == "STRATEGY_NAMES":  # read each time: a strategy registered later is listed too
        return registry.names("strategy")
    if name == "SEMANTIC_STRATEGIES":
        return semantic_strategies()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the strategy of every front end that is not told one (CLI, Python API, web app, adapters, map-reduce):
#: ``auto`` picks per document (Markdown structure, subtitles' cues, prose). Measured against ``fixed``
#: 256/32 with hybrid retrieval and MiniLM (docs/semantic.md, "When they help"): +0.055 nDCG@10 [+0.018,
#: +0.094] on QMSum transcripts, -0.012 [-0.027, +0.002] (within noise) on Chroma's corpora. Those figures
#: were taken when ``auto`` cut text without a blank line (the transcripts) with ``recursive``; it uses
#: ``semantic`` there now (+0.040 [+0.005, +0.080] against ``fixed``; against ``recursive`` not
#: significantly different: benchmarks/results/auto-prose.md)
DEFAULT_STRATEGY = "auto"


def strategy_class(name: str) -> type[Strategy]:
    """The class registered as ``name``; an unknown name is the registry's error listing every valid one."""
    from .base import Strategy

    cls, _ = registry.resolve("strategy", name)
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise ConfigError(f"strategy {name!r} is registered as {cls!r}, which is not a Strategy subclass")
    return cls


def semantic_strategies() -> tuple[str, ...]:
    """The strategies that embed while chunking: those whose constructor takes an ``embedder``, but for
    those that embed only some documents and make the embedder there (``embeds_on_demand``: ``auto``), so
    front ends do not load a model for them (the classes are imported to ask them, which is why this is a
    function behind :data:`SEMANTIC_STRATEGIES`)."""
    return tuple(
        n
        for n in registry.names("strategy")
        if "embedder" in (cls := strategy_class(n)).param_names() and not getattr(cls, "embeds_on_demand", False)
    )


@validated(name=Named("strategy"))
def get_strategy(name: str, **params: Any) -> Strategy:
    """Build a strategy by name; unknown parameters are an error that lists the valid ones."""
    cls = strategy_class(name)
    params = renamed(params, cls.renamed_params, f"strategy {name!r}")
    valid = cls.param_names()
    unknown = sorted(set(params) - set(valid))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], valid, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"strategy {name!r} has no parameter {', '.join(unknown)}{hint}; valid: {', '.join(valid)}")
    return cls(**params)


__all__ = [
    "Strategy",
    "build_chunks",
    "regions",
    "trim_span",
    "get_strategy",
    "strategy_class",
    "semantic_strategies",
    "STRATEGY_NAMES",
    "SEMANTIC_STRATEGIES",
    "DEFAULT_STRATEGY",
]
