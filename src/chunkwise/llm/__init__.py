"""Language models at the end of the pipeline: cited answers (``ask``) and map-reduce summaries.

- :mod:`.client`: :class:`ChatClient`, the one OpenAI-compatible chat client (streaming, disk cache keyed
  on the endpoint; its HTTP side is :mod:`chunkwise.http`), also used by contextual retrieval
  (:mod:`chunkwise.context.llm`); :class:`ChatSettings`, the connection settings, declared once.
- :mod:`.base`: the :class:`LLM` interface, numbered :class:`Passage` s with provenance, citation checks.
- :mod:`.openai`: :class:`OpenAILLM`, prompts fitted to the model's context window.
- :mod:`.extractive`: :class:`ExtractiveLLM`, the offline fallback (the passages' own best sentences).
- :mod:`.answer`: retrieve then answer (``Index.ask``); :mod:`.mapreduce`: map-reduce summaries.
"""

from __future__ import annotations

from typing import Any

from .base import LLM, Completion, Passage, check_citations, parse_citations, passages_from, provenance
from .client import BASE_URL_ENV, ChatClient, ChatSettings, EmptyAnswerError, FatalLLMError, LLMError


def _check_options(cls: type, options: dict[str, Any]) -> None:
    """Unknown options are a ConfigError naming the valid ones (as for strategies and embedders), checked
    whether or not an endpoint is configured, so a typo is not silently ignored by the offline fallback."""
    import inspect

    from ..errors import ConfigError
    from .client import SETTINGS

    params = inspect.signature(cls).parameters
    valid = [
        n
        for n, p in params.items()
        if n not in ("self", "base_url", "model") and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):  # the connection settings, declared once
        valid += [n for n in SETTINGS if n not in valid and n not in ("base_url", "model")]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ConfigError(f"llm has no option {', '.join(unknown)}; valid: {', '.join(valid)}")


def get_llm(base_url: str | None = None, model: str | None = None, *, embedder: Any = None, **options: Any) -> LLM:
    """An :class:`OpenAILLM` when an endpoint is given (``base_url``, ``endpoint=`` an
    :class:`~chunkwise.http.Endpoint`, or ``$CHUNKWISE_LLM_BASE_URL``), else the
    offline :class:`ExtractiveLLM` (with ``embedder``). ``options`` go to ``OpenAILLM`` (``None`` ignored)."""
    from .openai import OpenAILLM

    _check_options(OpenAILLM, options)
    options = {k: v for k, v in options.items() if v is not None}
    from .client import command_base_url

    if base_url or options.get("endpoint") is not None or command_base_url():
        return OpenAILLM(base_url, model, **options)
    if model:
        from ..errors import ConfigError

        raise ConfigError(f"--llm-model needs an endpoint: --llm-base-url URL or ${BASE_URL_ENV}")
    from .extractive import ExtractiveLLM

    return ExtractiveLLM(embedder=embedder)


def __getattr__(name: str):
    lazy = {
        "OpenAILLM": ".openai",
        "ExtractiveLLM": ".extractive",
        "Answer": ".answer",
        "ask_index": ".answer",
        "Summary": ".mapreduce",
        "summarize": ".mapreduce",
    }
    if name in lazy:
        import importlib

        return getattr(importlib.import_module(lazy[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LLM",
    "Completion",
    "Passage",
    "ChatClient",
    "ChatSettings",
    "LLMError",
    "FatalLLMError",
    "EmptyAnswerError",
    "OpenAILLM",
    "ExtractiveLLM",
    "Answer",
    "Summary",
    "summarize",
    "get_llm",
    "check_citations",
    "parse_citations",
    "passages_from",
    "provenance",
]
