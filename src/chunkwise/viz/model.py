"""What a picture of a chunking needs, computed once: chunks with provenance and the reason for every cut.

:func:`build_view` runs one strategy on one document and returns a :class:`StrategyView`: the chunks as
dictionaries (every JSONL field plus ``cause`` and ``where``), the per-sentence rows of ``inspect`` for the
semantic strategies (distance to the next sentence, the threshold it was compared with, breakpoints), and
the token counts for the size histogram. The HTML report, the web app and the JSON API all render from it,
so they show the same numbers as ``chunkwise chunk`` and ``chunkwise inspect``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..document import Chunk, Document
from ..embeddings.memo import MemoEmbedder
from ..strategies import SEMANTIC_STRATEGIES
from ..strategies.explain import number_rows
from ..timefmt import format_time_range
from ..validation import is_scalar

#: what each cause means, shown in the hover card and the legend
CAUSES = {
    "threshold": "distance to the next sentence above the threshold",
    "objective": "the global cohesion objective placed a boundary here",
    "max_tokens": "the chunk reached max_tokens (hard cap)",
    "section": "a section (heading) boundary",
    "end": "end of the document",
    "rule": "the strategy's splitting rule (separator or size)",
}


@dataclass
class StrategyView:
    """One strategy's chunking of one document, ready to draw."""

    label: str
    strategy: str
    params: dict[str, Any]
    max_tokens: int
    chunks: list[dict[str, Any]]
    rows: list[dict[str, Any]] | None = None  # per-sentence distances (semantic strategies only)
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def breakpoints(self) -> list[int]:
        """Sentence-gap indices where the strategy cut (one marker each on the distance plot)."""
        if not self.rows:
            return []
        # the final cuts: the shared chunk rules (strategies/tidy.py) may move a decision's cut, so the
        # markers follow the chunks that were returned, not the decision before the rules
        ends = {c["end"] for c in self.chunks[:-1]}
        return [k for k, r in enumerate(self.rows[:-1]) if r["end"] in ends]

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "strategy": self.strategy,
            "params": _plain(self.params),
            "max_tokens": self.max_tokens,
            "seconds": round(self.seconds, 4),
            "chunks": self.chunks,
            "rows": self.rows,
            "breakpoints": self.breakpoints,
        }


def _plain(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters as JSON values (an embedder instance becomes its name)."""
    out = {}
    for k, v in params.items():
        out[k] = v if is_scalar(v) or isinstance(v, list) else getattr(v, "model_id", str(v))
    return out


def where(chunk: Chunk) -> str:
    """Pages (``p3-4``) or time range (``1:36:50.4-1:37:02.0``) of a chunk; empty when it has neither."""
    if chunk.page_start is not None:
        if chunk.page_end in (None, chunk.page_start):
            return f"p{chunk.page_start}"
        return f"p{chunk.page_start}-{chunk.page_end}"
    return format_time_range(chunk.start_time, chunk.end_time)


def chunk_causes(doc: Document, chunks: list[Chunk], rows: list[dict[str, Any]] | None) -> list[str]:
    """Why each chunk ends where it does.

    Semantic strategies: the ``cause`` of the breakpoint row at the chunk's end (``threshold``,
    ``objective``, ``max_tokens``, ``section``, ``end``). Other strategies: ``end`` for the last chunk,
    ``section`` when the next chunk starts a heading, else ``rule``.
    """
    out: list[str] = []
    if rows:
        # a chunk that ends where the strategy decided to cut gets that decision's cause; one whose end the
        # shared chunk rules moved (a heading carried forward, a tiny piece merged) gets "rule"
        cause_at = {r["end"]: r["cause"] for r in rows if (r["breakpoint"] or r["cause"]) and r["cause"]}
        last = max(range(len(chunks)), key=lambda i: chunks[i].end) if chunks else -1
        for i, c in enumerate(chunks):
            out.append("end" if i == last else cause_at.get(c.end, "rule"))
        return out
    heading_starts = {s.start for s in doc.sections} | {s.heading_start for s in doc.sections}
    by_start = sorted(range(len(chunks)), key=lambda i: chunks[i].start)
    causes = ["end"] * len(chunks)
    for i, nxt in zip(by_start, by_start[1:]):
        k = chunks[nxt].start
        while k < len(doc.text) and doc.text[k].isspace():
            k += 1
        causes[i] = "section" if (chunks[nxt].start in heading_starts or k in heading_starts) else "rule"
    return causes


def build_view(doc: Document, strategy, label: str | None = None) -> StrategyView:
    """Chunk ``doc`` with ``strategy`` and collect what the report shows (see the module docstring)."""
    t0 = time.perf_counter()
    strategy.validate()
    rows = None
    if strategy.name in SEMANTIC_STRATEGIES and hasattr(strategy, "explain"):
        from ..embeddings.vectors import resolve_embedder
        from ..strategies import get_strategy

        params = dict(strategy.get_params(), embedder=MemoEmbedder(resolve_embedder(strategy.embedder)))
        once: Any = get_strategy(strategy.name, **params)  # chunk() and explain() share one embedding pass
        chunks = once.chunk(doc)
        rows = once.explain(doc)
        number_rows(rows)
    else:
        chunks = strategy.chunk(doc)
    seconds = time.perf_counter() - t0
    causes = chunk_causes(doc, chunks, rows)
    out = []
    for c, cause in zip(chunks, causes):
        d = c.to_dict()
        d["cause"] = cause
        d["where"] = where(c)
        out.append(d)
    params = strategy.get_params()
    return StrategyView(
        label=label or strategy.name,
        strategy=strategy.name,
        params=params,
        max_tokens=int(strategy.max_tokens),
        chunks=out,
        rows=rows,
        seconds=seconds,
    )


__all__ = ["StrategyView", "build_view", "chunk_causes", "where", "CAUSES"]
