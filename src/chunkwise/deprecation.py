"""Old names that still work: one place that warns about them and maps them to the new ones (issue 17).

Each public name means one thing (``max_tokens`` the chunk cap, ``model_window`` an embedding model's
input limit, ``answer_tokens`` an LLM answer's length, ``late_window`` late chunking's macro window; see
CHANGELOG "Renamed"). An old spelling keeps working and raises a :class:`ChunkwiseDeprecationWarning` that
names the new one; the CLI prints these as one ``chunkwise: warning: ...`` line.
"""

from __future__ import annotations

import warnings
from typing import Any

from .errors import ConfigError


class ChunkwiseDeprecationWarning(DeprecationWarning):
    """An old name or spelling that still works; the message says what to use instead."""


def warn_renamed(old: str, new: str, where: str = "", stacklevel: int = 3) -> None:
    """Warn that ``old`` is now ``new`` (``where``: what the name belongs to, e.g. ``"minilm embedder"``)."""
    owner = f"{where}: " if where else ""
    warnings.warn(f"{owner}{old!r} is deprecated, use {new!r}", ChunkwiseDeprecationWarning, stacklevel=stacklevel)


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


__all__ = ["ChunkwiseDeprecationWarning", "warn_renamed", "renamed"]
