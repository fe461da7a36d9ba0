"""Everything chosen by name, in one table: strategies, embedders, input formats and tokenizers.

A name stands for a target, ``"module:attr"`` (imported the first time it is used, so listing the names or
starting the CLI imports none of them) or the object itself. Users and plug-ins add their own with
:func:`register`::

    from chunkwise.registry import register
    register("strategy", "lines", "mypkg.lines:LineChunker")   # get_strategy("lines"), --strategy lines
    register("embedder", "word", "mypkg.emb:WordEmbedder")      # get_embedder("word"), --embedder word
    register("embedder", "my:PATH", "mypkg.emb:from_path")      # my:/models/a -> from_path("/models/a")

A name whose part after the first ``:`` is an upper-case placeholder (``st:PATH``, ``openai:MODEL``,
``hf:PATH``) is a *family*: every name with that prefix and a non-empty rest resolves to it, and the factory
is given the rest. Families exist for kinds whose factories take a rest (embedders, tokenizers).

What a target is called with is the kind's business (:func:`chunkwise.strategies.strategy_class`,
:func:`chunkwise.embeddings.get_embedder`, :func:`chunkwise.formats.register_format`,
:func:`chunkwise.segmentation.tokenizers.get_tokenizer`); an unknown name is one :class:`ConfigError` with
the same wording for every kind (:func:`unknown`).

Some entries are registered by a module of their own rather than listed here (the video loader, with its
file extensions, in :mod:`chunkwise.formats.video_entry`): :data:`_PROVIDERS` names those modules, imported the first time their kind
is looked up.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any, AnyStr, cast

from .errors import ConfigError
from .validation import Function, InstanceOf, check

#: kind -> (how errors name it, whether it has families)
KINDS: dict[str, tuple[str, bool]] = {
    "strategy": ("strategy", False),
    "embedder": ("embedder", True),
    "format": ("input format", False),
    "tokenizer": ("tokenizer", True),
}

#: the built-in entries, in the order they are listed to users
_BUILTIN: dict[str, dict[str, str]] = {
    "strategy": {
        "auto": "chunkwise.strategies.auto:AutoChunker",
        "fixed": "chunkwise.strategies.fixed:FixedTokenChunker",
        "sentence": "chunkwise.strategies.sentence:SentenceChunker",
        "recursive": "chunkwise.strategies.recursive:RecursiveChunker",
        "markdown": "chunkwise.strategies.markdown:MarkdownChunker",
        "rst": "chunkwise.strategies.rst:RstChunker",
        "code": "chunkwise.strategies.code:CodeChunker",
        "semantic": "chunkwise.strategies.semantic:SemanticChunker",
        "maxmin": "chunkwise.strategies.maxmin:MaxMinChunker",
        "cohesion": "chunkwise.strategies.cohesion:CohesionChunker",
    },
    "embedder": {
        "minilm": "chunkwise.embeddings.backends:minilm",
        "st:NAME_OR_PATH": "chunkwise.embeddings.backends:sentence_transformer",
        "static": "chunkwise.embeddings.backends:static",
        "openai:MODEL": "chunkwise.embeddings.backends:openai",
        "use-multilingual": "chunkwise.embeddings.backends:use_multilingual",
        "e5": "chunkwise.embeddings.backends:e5",
        "auto": "chunkwise.embeddings.backends:auto",
    },
    "format": {
        "text": "chunkwise.formats.text:load_text",
        "markdown": "chunkwise.formats.markdown:load_markdown",
        "rst": "chunkwise.formats.rst:load_rst",
        "code": "chunkwise.formats.code:load_code",
        "html": "chunkwise.formats.html:load_html",
        "pdf": "chunkwise.formats.pdf:load_pdf",
        "vtt": "chunkwise.formats.subtitles:load_vtt",
        "srt": "chunkwise.formats.subtitles:load_srt",
        "sbv": "chunkwise.formats.subtitles:load_sbv",
        "notebook": "chunkwise.formats.notebook:load_notebook",
        "table": "chunkwise.formats.table:load_table",
        "docx": "chunkwise.formats.office:load_docx",
        "pptx": "chunkwise.formats.office:load_pptx",
    },
    "tokenizer": {
        "minilm": "chunkwise.segmentation.tokenizers:minilm_tokenizer",
        "cl100k": "chunkwise.segmentation.tokenizers:cl100k_tokenizer",
        "chars": "chunkwise.segmentation.tokenizers:CharTokenizer",
        "words": "chunkwise.segmentation.tokenizers:WordTokenizer",
        "hf:PATH": "chunkwise.segmentation.tokenizers:hf_file_tokenizer",
    },
}
#: modules that register entries of a kind themselves, imported on the first look-up of that kind
_PROVIDERS: dict[str, tuple[str, ...]] = {"format": ("chunkwise.formats.video_entry",)}

#: kind -> name -> target: the built-in entries first, then the registered ones in order
_TABLES: dict[str, dict[str, Any]] = {kind: dict(_BUILTIN.get(kind, {})) for kind in KINDS}
_provided: set[str] = set()

_TARGET = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
#: what a registration points at: an import path, imported on first use, or the object itself
TARGET = [InstanceOf(str, "a 'module:attribute' string"), Function()]
_FAMILY = re.compile(r"([a-z0-9][a-z0-9_.-]*:)[A-Z][A-Z_]*")


def _label(kind: str) -> str:
    if kind not in KINDS:
        raise ConfigError(f"unknown registry kind {kind!r}; choose one of {', '.join(KINDS)}")
    return KINDS[kind][0]


def register(kind: str, name: str, target: str | Callable[..., Any]) -> None:
    """Make ``name`` stand for ``target`` (``"module:attr"``, imported on first use, or the object).

    Registering a name again replaces the earlier registration; a built-in name cannot be replaced.
    """
    label = _label(kind)
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ConfigError(f"cannot register {label} {name!r}: a name is a non-empty string without spaces")
    if name in _BUILTIN.get(kind, {}):
        raise ConfigError(f"cannot register {label} {name!r}: a built-in one")
    if ":" in name and not (KINDS[kind][1] and _FAMILY.fullmatch(name)):
        raise ConfigError(
            f"cannot register {label} {name!r}: a name with ':' is a family such as 'prefix:PATH'"
            + ("" if KINDS[kind][1] else f", and a {label} has none")
        )
    check(target, TARGET, "target", f"cannot register {label} {name!r}")
    if isinstance(target, str) and not _TARGET.fullmatch(target):
        raise ConfigError(f"cannot register {label} {name!r}: target {target!r} is not 'module:attribute'")
    _TABLES[kind][name] = target


def table(kind: str) -> dict[str, Any]:
    """The live table of ``kind`` (name -> target), providers' entries included."""
    _label(kind)
    if kind not in _provided:
        _provided.add(kind)  # first, so a provider that looks its kind up does not import itself again
        try:
            for module in _PROVIDERS.get(kind, ()):
                importlib.import_module(module)
        except BaseException:
            _provided.discard(kind)  # asked again, the provider is imported again (and fails loudly again)
            raise
    return _TABLES[kind]


def names(kind: str) -> tuple[str, ...]:
    """The names of ``kind``, built-in ones first; a family as its pattern (``st:NAME_OR_PATH``)."""
    return tuple(table(kind))


def builtin(kind: str) -> tuple[str, ...]:
    """The built-in names of ``kind`` (what :func:`register` refuses to replace)."""
    _label(kind)
    return tuple(_BUILTIN.get(kind, {}))


def unknown(kind: str, name: object) -> ConfigError:
    """The one error for a name nothing is registered under: it lists every valid name."""
    return ConfigError(f"unknown {_label(kind)} {name!r}; choose one of {', '.join(names(kind))}")


def _entry(kind: str, name: str) -> tuple[str, str | None] | None:
    """``(registered name, rest)``: the exact name (rest ``None``), else the family with its rest."""
    entries = table(kind)
    if name in entries:
        return name, None
    if ":" in name:
        prefix, rest = name.split(":", 1)
        for key in entries:
            m = _FAMILY.fullmatch(key)
            if m and m.group(1) == prefix + ":" and rest:
                return key, rest
    return None


def has(kind: str, name: object) -> bool:
    """Whether ``name`` resolves (exactly or through a family), without importing its target."""
    return isinstance(name, str) and _entry(kind, name) is not None


def resolve(kind: str, name: object) -> tuple[Any, str | None]:
    """``(the object name stands for, the rest for a family or None)``, imported now if it was a string;
    an unknown name is :func:`unknown`'s error."""
    found = _entry(kind, name) if isinstance(name, str) else None
    if found is None:
        raise unknown(kind, name)
    key, rest = found
    return load_target(_TABLES[kind][key], f"{_label(kind)} {name!r}"), rest


def load_target(target: str | Any, what: str = "target") -> Any:
    """The object a ``"module:attr"`` string names (any other target as it is). A module or attribute
    that does not exist is a :class:`ConfigError` naming ``what``; errors raised while importing a module
    that does exist are that module's own and pass through."""
    if not isinstance(target, str):
        return target
    module, attr = target.split(":", 1)
    try:
        obj: Any = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module == exc.name or module.startswith(exc.name + ".")):
            raise
        raise ConfigError(f"{what}: cannot import {target!r} (no module {exc.name!r})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{what}: cannot import {target!r} (no attribute {part!r})")
        obj = getattr(obj, part)
    return obj


def lazy_module_getattr(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each public name from its home module
    (``homes``: name -> module relative to the package) on first use and keeps it: a command that needs one
    name does not import the package's other modules."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            import sys
            from importlib import import_module

            value = getattr(import_module(f".{homes[name]}", package), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


class LazyModule:
    """A module imported on its first attribute access: ``np = LazyModule("numpy")`` at the top of a module
    lets a command that never reaches an ``np.`` line skip numpy's import (about 5x Python's own start-up).
    After the import the module's names are copied onto the proxy, so later look-ups cost what a module's do.
    (Type checkers should see the real import: ``if TYPE_CHECKING: import numpy as np``.)"""

    def __init__(self, name: str):
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__dict__["_lazy_name"])
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_name']!r}>"


class _LazyPattern:
    """A compiled regular expression that compiles on its first use (see :func:`lazy_regex`); each method
    looked up is then kept on the instance, so later calls cost what the pattern's own do."""

    def __init__(self, pattern: str | bytes, flags: int):
        self.__dict__["_args"] = (pattern, flags)

    def __getattr__(self, attr: str) -> Any:
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = re.compile(*self.__dict__["_args"])
        value = getattr(compiled, attr)
        self.__dict__[attr] = value
        return value


def lazy_regex(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)`` when first used: a module's many patterns (sentence rules, format
    sniffing, cleaning) cost nothing to a command that never reaches them (compiling them all at import
    was about 15 % of ``chunkwise chunk``'s start-up)."""
    return cast("re.Pattern[AnyStr]", _LazyPattern(pattern, flags))


__all__ = [
    "KINDS",
    "LazyModule",
    "lazy_regex",
    "register",
    "table",
    "names",
    "builtin",
    "unknown",
    "has",
    "resolve",
    "load_target",
    "lazy_module_getattr",
]
