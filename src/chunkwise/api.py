"""The one-call Python API: ``chunk_file(path)``, ``chunk_text(text)`` and ``chunk(x)`` with an explicit rule.

``chunk(x)`` never guesses between a file and a text: a :class:`~pathlib.Path` (any ``os.PathLike``) or a
string naming an existing file is a file; a string that *looks* like a file name (one short line ending in
an extension chunkwise reads) but does not exist is an :class:`~chunkwise.errors.InputError`, so a typo is
not silently chunked as the text "typo.md"; any other string is an error too unless ``text=`` says it is
text. Loader options (``password``, ``encoding``, ``format``, ``html_mode``, ``clean``...) are those of
:func:`chunkwise.formats.load`, the same the command line's ``--pdf-password``, ``--html-mode``... set.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .document import Chunk, Document
from .errors import ConfigError, InputError
from .strategies import DEFAULT_STRATEGY, Strategy
from .strategies.params import StrategySpec
from .validation import InstanceOf, PathSpec, validated


def _split_options(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(loader options, strategy parameters) from one set of keyword arguments."""
    from .formats import LOADER_OPTIONS

    loader = {k: params[k] for k in LOADER_OPTIONS if k in params}
    return loader, {k: v for k, v in params.items() if k not in loader}


def _strategy(strategy: str | Strategy, params: dict[str, Any]) -> Strategy:
    from .strategies.factory import make_strategy

    return make_strategy(strategy, params)


def looks_like_path(text: str) -> bool:
    """One short line ending in an extension chunkwise reads (``notes.md``, ``../a/b.pdf``)."""
    from .formats import EXTENSIONS

    return (
        0 < len(text) <= 1024
        and "\n" not in text
        and not text.startswith(" ")
        and Path(text).suffix.lower() in EXTENSIONS
    )


@validated("chunk_file", path=PathSpec(), strategy=StrategySpec())
def chunk_file(path: str | os.PathLike, strategy: str | Strategy = DEFAULT_STRATEGY, **params: Any) -> list[Chunk]:
    """Load one file (any supported format) and chunk it. ``params`` holds both the loader options
    (:data:`chunkwise.formats.LOADER_OPTIONS`) and the strategy's parameters (``max_tokens``, ``overlap``, ...)."""
    from .formats import load

    loader, strategy_params = _split_options(params)
    strat = _strategy(strategy, strategy_params)
    return strat.chunk(load(path, **loader))


@validated("chunk_text", text=InstanceOf(str), strategy=StrategySpec(), source=InstanceOf(str))
def chunk_text(
    text: str, strategy: str | Strategy = DEFAULT_STRATEGY, *, source: str = "<text>", **params: Any
) -> list[Chunk]:
    """Chunk a string exactly as given (no file is read, no cleaning); ``auto`` reads it as Markdown when it
    looks like Markdown (:func:`chunkwise.formats.sniff.looks_like_markdown`), else as plain text."""
    return _strategy(strategy, params).chunk(Document(text, source=source))


def as_document(obj: str | os.PathLike | Document, *, text_ok: bool = False, **loader: Any) -> Document:
    """A :class:`Document` from a Document, a path (``os.PathLike`` or a string naming an existing file),
    or, when ``text_ok`` (callers whose API documents "a path or a text"), any other string as text.

    A string that looks like a file name but names none is always an :class:`InputError`: a typo is never
    silently treated as the text "typo.md".
    """
    if isinstance(obj, Document):
        return obj
    from .formats import load

    if isinstance(obj, os.PathLike):
        return load(obj, **loader)
    if isinstance(obj, str):
        short = len(obj) < 4096 and "\n" not in obj and "\0" not in obj
        if short and Path(obj).is_file():
            return load(obj, **loader)
        if looks_like_path(obj):
            raise InputError(
                "no such file; use chunkwise.chunk_text(...) (or chunk(text=...)) for raw text", source=obj
            )
        if text_ok:
            return Document(obj)
        raise InputError(
            "not a file; chunkwise.chunk() reads files: use chunkwise.chunk_text(text) or "
            "chunk(text=...) to chunk a string"
        )
    raise InputError(f"expected a path, a Document or text=..., got {type(obj).__name__}")


@validated(
    "chunk",
    path_or_doc=[PathSpec(), InstanceOf(Document), None],
    strategy=StrategySpec(),
    text=[InstanceOf(str), None],
)
def chunk(
    path_or_doc: str | os.PathLike | Document | None = None,
    strategy: str | Strategy = DEFAULT_STRATEGY,
    *,
    text: str | None = None,
    **params: Any,
) -> list[Chunk]:
    """Chunk a file, a :class:`Document`, or (with ``text=``) a string.

    The rule (no guessing): a ``Path``/``os.PathLike`` or a string naming an existing file is read as a
    file; a :class:`Document` is chunked as it is; ``text="..."`` is chunked as text. A string that names
    no file raises :class:`~chunkwise.errors.InputError` ("no such file" when it looks like a file name);
    use ``chunk_text(...)`` or ``text=`` for raw text. ``strategy`` is ``"auto"`` (the default: chosen per
    document by format, see :mod:`chunkwise.strategies.auto`), another name or a strategy object.
    """
    if text is not None:
        if path_or_doc is not None:
            raise ConfigError("give either a path/Document or text=, not both")
        return chunk_text(text, strategy, **params)
    if path_or_doc is None:
        raise InputError("nothing to chunk: give a path, a Document or text=...")
    loader, strategy_params = _split_options(params)
    return _strategy(strategy, strategy_params).chunk(as_document(path_or_doc, **loader))
