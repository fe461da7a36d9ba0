"""Embedding back-ends behind one interface (see :mod:`chunkwise.embeddings.base`), chosen by name.

``get_embedder("minilm")`` is what every command uses unless ``--embedder`` says otherwise:

=====================  =================================================================================
``minilm`` (default)   all-MiniLM-L6-v2, int8 ONNX on onnxruntime: offline, no torch
``minilm-torch``       the same model (same 512 window) on sentence-transformers (extra ``torch``)
``st:NAME_OR_PATH``    any sentence-transformers model from a local path (extra ``torch``)
``static``             model2vec static embeddings distilled from MiniLM by ``chunkwise distill``
``openai:MODEL``       any OpenAI-compatible ``/v1/embeddings`` endpoint (``base_url``, key from env)
``use-multilingual``   Universal Sentence Encoder Multilingual v3, 16 languages, offline numpy (extra
                       ``multilingual``; see :mod:`.multilingual`)
=====================  =================================================================================

Every back-end is wrapped in the persistent SQLite cache (:mod:`.cache`) unless ``cache=False``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import ConfigError
from .base import Embedder, check_texts, l2_normalize

#: the names ``--embedder`` accepts (``st:`` and ``openai:`` take a suffix)
EMBEDDER_NAMES = ("minilm", "minilm-torch", "st:NAME_OR_PATH", "static", "openai:MODEL", "use-multilingual")
DEFAULT_EMBEDDER = "minilm"
#: environment variable that overrides the default embedder for every command
EMBEDDER_ENV = "CHUNKWISE_EMBEDDER"


def _check_kwargs(name: str, factory, kw: dict[str, Any], given: tuple[str, ...] = ()) -> None:
    """Unknown keyword arguments are a ConfigError naming the valid ones, as for strategies."""
    import inspect

    params = inspect.signature(factory).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    valid = [n for n, p in params.items() if n not in ("self", "cls", *given)
             and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = sorted(set(kw) - set(valid))
    if unknown:
        raise ConfigError(f"embedder {name!r} has no parameter {', '.join(unknown)}; valid: {', '.join(valid)}")


def _backend(name: str, base_url: str | None, api_key_env: str, cache_dir, kw: dict[str, Any]) -> Embedder:
    if name == "minilm":
        from .minilm import MiniLMEmbedder

        _check_kwargs(name, MiniLMEmbedder.__init__, kw)
        return MiniLMEmbedder(**kw)
    if name == "minilm-torch":
        from .sentence_transformers import SentenceTransformerEmbedder, local_minilm_dir

        # the same 512-position window as ``minilm``, so the two are interchangeable (sentence-transformers'
        # own default for this model is 256; pass max_seq_length=256 for that)
        kw.setdefault("max_seq_length", 512)
        _check_kwargs(name, SentenceTransformerEmbedder.__init__, kw, ("name_or_path", "model_id"))
        return SentenceTransformerEmbedder(local_minilm_dir(), model_id="minilm-torch", **kw)
    if name.startswith("st:") and len(name) > 3:
        from .sentence_transformers import SentenceTransformerEmbedder

        _check_kwargs(name, SentenceTransformerEmbedder.__init__, kw, ("name_or_path",))
        return SentenceTransformerEmbedder(name[3:], **kw)
    if name == "static":
        from .static import StaticEmbedder

        _check_kwargs(name, StaticEmbedder.__init__, {k: v for k, v in kw.items() if k not in ("name", "path")},
                      ("path",))
        return StaticEmbedder.load(cache_dir=cache_dir, **kw)
    if name == "use-multilingual":
        from .multilingual import USEMultilingualEmbedder

        _check_kwargs(name, USEMultilingualEmbedder.__init__, kw)
        return USEMultilingualEmbedder(**kw)
    if name.startswith("openai:") and len(name) > 7:
        from .openai import OpenAIEmbedder

        _check_kwargs(name, OpenAIEmbedder.__init__, kw, ("model", "base_url", "api_key_env"))
        return OpenAIEmbedder(name[7:], base_url=base_url, api_key_env=api_key_env, **kw)
    raise ConfigError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}")


def get_embedder(name: str | None = DEFAULT_EMBEDDER, *, cache: bool = True, cache_dir: str | os.PathLike | None = None,
                 base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY", **kw: Any) -> Embedder:
    """An embedder by name, wrapped in the persistent cache unless ``cache=False``.

    ``name=None`` means ``$CHUNKWISE_EMBEDDER`` or ``minilm``. ``cache_dir`` defaults to
    ``$CHUNKWISE_CACHE_DIR`` or the platform's user cache directory. Extra keyword arguments go to the
    back-end (``window``/``batch_size`` for minilm, ``batch_size``/``timeout``/``max_retries`` for openai...).
    """
    if name is None:
        name = os.environ.get(EMBEDDER_ENV) or DEFAULT_EMBEDDER
    if not isinstance(name, str):
        raise ConfigError(f"embedder name must be a string, got {type(name).__name__}")
    name = name.strip()
    inner = _backend(name, base_url, api_key_env, cache_dir, kw)
    if not cache:
        return inner
    from .cache import CachedEmbedder, EmbeddingCache

    return CachedEmbedder(inner, EmbeddingCache(cache_dir))


def embedder_from_args(args: argparse.Namespace, **kw: Any) -> Embedder:
    """The embedder the global CLI options ask for (``--embedder``, ``--base-url``, ``--cache-dir``,
    ``--no-cache``)."""
    return get_embedder(getattr(args, "embedder", None),
                        cache=not getattr(args, "no_cache", False),
                        cache_dir=getattr(args, "cache_dir", None),
                        base_url=getattr(args, "base_url", None), **kw)


__all__ = ["Embedder", "l2_normalize", "check_texts", "get_embedder", "embedder_from_args",
           "EMBEDDER_NAMES", "DEFAULT_EMBEDDER"]
