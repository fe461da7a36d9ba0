"""Chunking strategies, by name. Each is a plain object: parameters in, ``chunk(doc)`` does the work."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..deprecation import renamed
from ..errors import ConfigError

if TYPE_CHECKING:
    from .base import Strategy, build_chunks, regions, trim_span

#: names of ``strategies.base`` re-exported here, imported on first use: a command line that only needs
#: the strategy names (``--strategy`` choices) does not import the tokenizers and numpy
_BASE_NAMES = ("Strategy", "build_chunks", "regions", "trim_span")


def __getattr__(name: str) -> Any:
    if name in _BASE_NAMES:
        from . import base

        value = getattr(base, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: name -> "module:Class", imported on first use so `chunkwise chunk` never loads embedding code it skips
_REGISTRY: dict[str, str] = {
    "auto": "auto:AutoChunker",
    "fixed": "fixed:FixedTokenChunker",
    "sentence": "sentence:SentenceChunker",
    "recursive": "recursive:RecursiveChunker",
    "markdown": "markdown:MarkdownChunker",
    "semantic": "semantic:SemanticChunker",
    "maxmin": "maxmin:MaxMinChunker",
    "cohesion": "cohesion:CohesionChunker",
}
STRATEGY_NAMES = tuple(_REGISTRY)
#: the strategy of every front end that is not told one (CLI, Python API, web app, adapters, map-reduce):
#: ``auto`` picks per document (Markdown structure, subtitles' cues, prose). Measured against ``fixed``
#: 256/32 with hybrid retrieval and MiniLM (docs/semantic.md, "When they help"): +0.055 nDCG@10 [+0.018,
#: +0.094] on QMSum transcripts, -0.012 [-0.027, +0.002] (within noise) on Chroma's corpora
DEFAULT_STRATEGY = "auto"
#: strategies that embed while chunking (they take an ``embedder``)
SEMANTIC_STRATEGIES = ("semantic", "maxmin", "cohesion")


def strategy_class(name: str) -> type[Strategy]:
    if name not in _REGISTRY:
        raise ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGY_NAMES)}")
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def get_strategy(name: str, **params: Any) -> Strategy:
    """Build a strategy by name; unknown parameters are an error that lists the valid ones."""
    cls = strategy_class(name)
    params = renamed(params, cls.renamed_params, f"strategy {name!r}")
    valid = cls.param_names()
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ConfigError(f"strategy {name!r} has no parameter {', '.join(unknown)}; valid: {', '.join(valid)}")
    return cls(**params)


__all__ = [
    "Strategy",
    "build_chunks",
    "regions",
    "trim_span",
    "get_strategy",
    "strategy_class",
    "STRATEGY_NAMES",
    "SEMANTIC_STRATEGIES",
    "DEFAULT_STRATEGY",
]
