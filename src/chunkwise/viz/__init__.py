"""See your chunks: a self-contained HTML report (and the pieces the web app reuses).

``report(doc_or_path, ["semantic", ("recursive", {"max_tokens": 128})], path="report.html")`` chunks one
document with 1-4 strategies and writes one HTML file that works from disk: the text with every chunk
coloured and a hover card with its provenance and cut cause, the distance curve with threshold and
breakpoints for semantic strategies, and the chunk-size histogram against ``max_tokens``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..document import Document
from ..errors import ConfigError
from .html import MAX_COLUMNS, render_columns, render_report
from .model import CAUSES, StrategyView, build_view


def _strategy(spec: Any, shared: dict[str, Any]):
    """A strategy from an instance, a name, or ``(name, params)``; ``shared`` parameters apply where valid."""
    from ..strategies import Strategy
    from ..strategies.factory import make_strategy

    if isinstance(spec, (Strategy, str)):
        return make_strategy(spec, shared=shared)
    name, params = spec
    return make_strategy(name, params, shared=shared)


def labels_for(strategies: Sequence[Any]) -> list[str]:
    """Column titles: the strategy name, with ``#2``... when a name repeats."""
    names = [s.name for s in strategies]
    return [n if names.count(n) == 1 else f"{n} #{names[: k + 1].count(n)}" for k, n in enumerate(names)]


def build_views(doc: Document, strategies: Sequence[Any], shared: dict[str, Any] | None = None) -> list[StrategyView]:
    """One :class:`StrategyView` per strategy (1 to 4)."""
    built = [_strategy(s, shared or {}) for s in strategies]
    if not 1 <= len(built) <= MAX_COLUMNS:
        raise ConfigError(f"a report shows 1 to {MAX_COLUMNS} strategies, got {len(built)}")
    return [build_view(doc, s, label) for s, label in zip(built, labels_for(built))]


def report(
    doc: Document | str | os.PathLike,
    strategies: Sequence[Any] = ("auto",),
    path: str | os.PathLike | None = None,
    **shared: Any,
) -> str:
    """The HTML report of ``doc`` (a :class:`Document`, a path or text) chunked by ``strategies``; written to
    ``path`` when given. ``shared`` parameters (``max_tokens=...``) apply to every strategy that has them."""
    from ..api import as_document

    document = as_document(doc, text_ok=True)
    page = render_report(document, build_views(document, strategies, shared))
    if path is not None:
        Path(path).write_text(page, encoding="utf-8")
    return page


__all__ = ["report", "build_views", "build_view", "render_report", "render_columns", "StrategyView", "CAUSES"]
