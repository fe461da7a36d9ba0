"""Embedding back-ends behind one interface (see :mod:`chunkwise.embeddings.base`), chosen by name.

``get_embedder("minilm")`` is what every command uses unless ``--embedder`` says otherwise:

=====================  =================================================================================
``minilm`` (default)   all-MiniLM-L6-v2, int8 ONNX on onnxruntime (``backend="onnx"``, the default):
                       offline, no torch; ``backend="torch"``: the same model (same 512 window) on
                       sentence-transformers (extra ``torch``; formerly the name ``minilm-torch``)
``st:NAME_OR_PATH``    any sentence-transformers model from a local path (extra ``torch``)
``static``             model2vec static embeddings distilled from MiniLM by ``chunkwise distill``
``openai:MODEL``       any OpenAI-compatible ``/v1/embeddings`` endpoint (``base_url``, key from env)
``use-multilingual``   Universal Sentence Encoder Multilingual v3, 16 languages, offline numpy (extra
                       ``multilingual``; see :mod:`.multilingual`)
=====================  =================================================================================

Every back-end is wrapped in the persistent SQLite cache (:mod:`.cache`) unless ``cache=False``.

The model and the library that runs it are chosen apart, as in sentence-transformers
(``SentenceTransformer(name, backend="onnx")``): ``get_embedder("minilm", backend="torch")``, on the
command line ``--embedder minilm --embedder-backend torch``. The old name ``minilm-torch`` still works with
a deprecation warning; its ``model_id`` stays ``minilm-torch``, so caches and indexes keep matching.
"""

from __future__ import annotations

import argparse
import os
import warnings
from typing import Any

from ..deprecation import ChunkwiseDeprecationWarning, deprecation_message
from ..errors import ConfigError
from .base import Embedder, check_texts, l2_normalize

#: the names ``--embedder`` accepts (``st:`` and ``openai:`` take a suffix)
EMBEDDER_NAMES = ("minilm", "st:NAME_OR_PATH", "static", "openai:MODEL", "use-multilingual", "e5", "auto")
#: models that run on more than one library: ``backend=`` choices, the default first
EMBEDDER_BACKENDS = {"minilm": ("onnx", "torch")}
#: old names that carried the back-end -> (model name, backend); still accepted, with a warning
OLD_EMBEDDER_NAMES = {"minilm-torch": ("minilm", "torch")}
DEFAULT_EMBEDDER = "minilm"
#: environment variables that override the default embedder (and its back-end) for every command
EMBEDDER_ENV = "CHUNKWISE_EMBEDDER"
EMBEDDER_BACKEND_ENV = "CHUNKWISE_EMBEDDER_BACKEND"


#: old keywords the back-ends still accept (with a deprecation warning) but no longer list as valid
_OLD_KEYWORDS = ("window", "max_tokens")


def _check_kwargs(name: str, factory, kw: dict[str, Any], given: tuple[str, ...] = ()) -> None:
    """Unknown keyword arguments are a ConfigError naming the valid ones, as for strategies."""
    import inspect

    params = inspect.signature(factory).parameters
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


def split_name(name: str, backend: str | None = None) -> tuple[str, str | None]:
    """``(model name, backend)`` for ``name``, old names (``minilm-torch``) translated without a warning
    (for names recorded by earlier versions, e.g. in an index's configuration)."""
    if name in OLD_EMBEDDER_NAMES:
        new, old_backend = OLD_EMBEDDER_NAMES[name]
        if backend not in (None, old_backend):
            raise ConfigError(
                f"embedder {name!r} runs on {old_backend}, not backend={backend!r}; "
                f"use embedder {new!r} with backend={backend!r}"
            )
        return new, old_backend
    return name, backend


def _check_backend(name: str, backend: str | None) -> str | None:
    """``backend`` checked against the model's choices (``None``: the default)."""
    if backend is None:
        return None
    choices = EMBEDDER_BACKENDS.get(name)
    if not choices:
        runs = ", ".join(f"{m} ({', '.join(c)})" for m, c in EMBEDDER_BACKENDS.items())
        raise ConfigError(f"embedder {name!r} runs on one back-end only; backend= applies to {runs}")
    if backend not in choices:
        raise ConfigError(f"unknown backend {backend!r} for embedder {name!r}; choose one of {', '.join(choices)}")
    return backend


def _backend(
    name: str, backend: str | None, base_url: str | None, api_key_env: str, cache_dir, kw: dict[str, Any]
) -> Embedder:
    if name in OLD_EMBEDDER_NAMES:
        new, old_backend = OLD_EMBEDDER_NAMES[name]
        warnings.warn(
            deprecation_message(
                f"embedder name {name!r}",
                f"{new!r} with backend={old_backend!r} (CLI: --embedder {new} --embedder-backend {old_backend})",
            ),
            ChunkwiseDeprecationWarning,
            stacklevel=4,
        )
    name, backend = split_name(name, backend)
    backend = _check_backend(name, backend)
    if name == "minilm" and backend == "torch":
        from .sentence_transformers import SentenceTransformerEmbedder, local_minilm_dir

        # the same 512-position window as the onnx back-end, so the two are interchangeable
        # (sentence-transformers' own default for this model is 256; pass model_window=254 for that)
        if "model_window" not in kw:
            kw.setdefault("max_seq_length", 512)
        _check_kwargs(name, SentenceTransformerEmbedder.__init__, kw, ("name_or_path", "model_id"))
        return SentenceTransformerEmbedder(local_minilm_dir(), model_id="minilm-torch", **kw)
    if name == "minilm":
        from .minilm import MiniLMEmbedder

        _check_kwargs(name, MiniLMEmbedder.__init__, kw, ("cache_dir",))
        return MiniLMEmbedder(cache_dir=cache_dir, **kw)  # the rewritten graph is kept beside the vectors
    if name.startswith("st:") and len(name) > 3:
        from .sentence_transformers import SentenceTransformerEmbedder

        _check_kwargs(name, SentenceTransformerEmbedder.__init__, kw, ("name_or_path",))
        return SentenceTransformerEmbedder(name[3:], **kw)
    if name == "static":
        from .static import StaticEmbedder

        _check_kwargs(
            name, StaticEmbedder.__init__, {k: v for k, v in kw.items() if k not in ("name", "path")}, ("path",)
        )
        return StaticEmbedder.load(cache_dir=cache_dir, **kw)
    if name == "use-multilingual":
        from .multilingual import USEMultilingualEmbedder

        _check_kwargs(name, USEMultilingualEmbedder.__init__, kw)
        return USEMultilingualEmbedder(**kw)
    if name in ("e5", "multilingual-e5-small"):
        from .e5 import E5Embedder

        _check_kwargs(name, E5Embedder.__init__, kw)
        return E5Embedder(**kw)
    if name == "auto":
        from .language import choose_embedder

        sample = kw.pop("sample", None)
        if sample is None:
            raise ConfigError(
                "embedder 'auto' picks by the documents' language: pass sample=[texts] "
                "(the command line samples the input files itself)"
            )
        return _backend(choose_embedder(sample), backend, base_url, api_key_env, cache_dir, kw)
    if name.startswith("openai:") and len(name) > 7:
        from .openai import OpenAIEmbedder

        _check_kwargs(name, OpenAIEmbedder.__init__, kw, ("model", "base_url", "api_key_env"))
        return OpenAIEmbedder(name[7:], base_url=base_url, api_key_env=api_key_env, **kw)
    raise ConfigError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}")


def get_embedder(
    name: str | None = DEFAULT_EMBEDDER,
    *,
    backend: str | None = None,
    cache: bool = True,
    cache_dir: str | os.PathLike | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    **kw: Any,
) -> Embedder:
    """An embedder by name, wrapped in the persistent cache unless ``cache=False``.

    ``name=None`` means ``$CHUNKWISE_EMBEDDER`` or ``minilm`` (and ``backend=None`` then means
    ``$CHUNKWISE_EMBEDDER_BACKEND``). ``backend``: the library that runs the model, where there is a choice
    (:data:`EMBEDDER_BACKENDS`: ``minilm`` on ``onnx``, the default, or ``torch``). ``cache_dir`` defaults to
    ``$CHUNKWISE_CACHE_DIR`` or the platform's user cache directory. Extra keyword arguments go to the
    back-end (``model_window``/``batch_size`` for minilm, ``batch_size``/``timeout``/``max_retries`` for
    openai...); an unknown one is a :class:`ConfigError` that lists the valid ones.
    """
    if name is None:
        name = os.environ.get(EMBEDDER_ENV) or DEFAULT_EMBEDDER
        if backend is None:
            backend = os.environ.get(EMBEDDER_BACKEND_ENV) or None
    if not isinstance(name, str):
        raise ConfigError(f"embedder name must be a string, got {type(name).__name__}")
    if backend is not None and not isinstance(backend, str):
        raise ConfigError(f"embedder backend must be a string, got {type(backend).__name__}")
    name = name.strip()
    inner = _backend(name, backend, base_url, api_key_env, cache_dir, kw)
    if not cache:
        return inner
    from .cache import CachedEmbedder, EmbeddingCache

    return CachedEmbedder(inner, EmbeddingCache(cache_dir))


def embedder_from_args(args: argparse.Namespace, **kw: Any) -> Embedder:
    """The embedder the global CLI options ask for (``--embedder``, ``--embedder-backend``, ``--base-url``,
    ``--cache-dir``, ``--no-cache``)."""
    return get_embedder(
        getattr(args, "embedder", None),
        backend=getattr(args, "embedder_backend", None),
        cache=not getattr(args, "no_cache", False),
        cache_dir=getattr(args, "cache_dir", None),
        base_url=getattr(args, "base_url", None),
        **kw,
    )


__all__ = [
    "Embedder",
    "l2_normalize",
    "check_texts",
    "get_embedder",
    "embedder_from_args",
    "EMBEDDER_NAMES",
    "EMBEDDER_BACKENDS",
    "DEFAULT_EMBEDDER",
    "split_name",
]
