"""Old names that still work: one place that warns about them and maps them to the new ones.

Each public name means one thing (``max_tokens`` the chunk cap, ``model_window`` an embedding model's
input limit, ``answer_tokens`` an LLM answer's length, ``late_window`` late chunking's macro window; see
CHANGELOG "Renamed"). An old spelling keeps working and raises a :class:`ChunkwiseDeprecationWarning` that
names the new one and the release that removes the old one (:data:`REMOVED_IN`); the CLI prints these as
one ``chunkwise: warning: ...`` line. Every deprecation message is made by :func:`deprecation_message`.
"""

from __future__ import annotations

import warnings
from typing import Any

from .errors import ConfigError

#: the release that removes every old name deprecated so far
REMOVED_IN = "0.3.0"


#: late chunking's options (``Index.add(late_options=)``, ``late_chunk_vectors``, a configuration's ``run``)
LATE_RENAMES = {"window": "late_window"}
#: the LLM contextualizer's options (``context="llm"``): ``max_tokens`` is the chunk cap only
LLM_CONTEXT_RENAMES = {"max_tokens": "answer_tokens"}


class ChunkwiseDeprecationWarning(DeprecationWarning):
    """An old name or spelling that still works; the message says what to use instead and when it goes."""


def deprecation_message(old: str, new: str) -> str:
    """``OLD is deprecated, use NEW (removed in chunkwise X)``: the one wording of every deprecation."""
    return f"{old} is deprecated, use {new} (removed in chunkwise {REMOVED_IN})"


def warn_renamed(old: str, new: str, where: str = "", stacklevel: int = 3) -> None:
    """Warn that ``old`` is now ``new`` (``where``: what the name belongs to, e.g. ``"minilm embedder"``)."""
    owner = f"{where}: " if where else ""
    warnings.warn(owner + deprecation_message(repr(old), repr(new)), ChunkwiseDeprecationWarning, stacklevel=stacklevel)


def renamed_attribute(old: str, new: str, where: str = "") -> property:
    """A property ``old`` that reads and writes attribute ``new``, warning on each use: an old attribute name
    kept on instances (``embedder.max_tokens`` -> ``model_window``). A subclass that assigns ``old`` in its
    own body shadows the property and is not translated: a class attribute means what it says."""

    def get(self: Any) -> Any:
        warn_renamed(old, new, where)
        return getattr(self, new)

    def set_(self: Any, value: Any) -> None:
        warn_renamed(old, new, where)
        setattr(self, new, value)

    return property(get, set_, doc=f"Deprecated name of ``{new}`` (removed in chunkwise {REMOVED_IN}).")


def renamed(kw: dict[str, Any], renames: dict[str, str], where: str = "", stacklevel: int = 4) -> dict[str, Any]:
    """``kw`` with every old key of ``renames`` moved to its new name, warning once per old key.

    Giving both the old and the new name is a :class:`ConfigError` (which one was meant is unknowable).
    """
    out = dict(kw)
    for old, new in renames.items():
        if old not in out:
            continue
        if new in out:
            raise ConfigError(f"{where + ': ' if where else ''}give {new!r} only ({old!r} is its old name)")
        warn_renamed(old, new, where, stacklevel)
        out[new] = out.pop(old)
    return out


__all__ = [
    "ChunkwiseDeprecationWarning",
    "REMOVED_IN",
    "deprecation_message",
    "warn_renamed",
    "renamed_attribute",
    "renamed",
]
