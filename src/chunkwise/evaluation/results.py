"""What an evaluation measured: one run's scores (:class:`RunResult`), the paired comparisons of two runs
(:class:`Comparison`) and the whole report (:class:`EvaluationReport`), each with its JSON form.

The terminal table and the HTML page that present them are in :mod:`.report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..records import pick
from .spec import RunSpec


@dataclass
class RunResult:
    """Everything measured for one :class:`RunSpec`: per-query scores, their means, and context figures."""

    spec: RunSpec
    #: metric name -> one value per query (same query order for every run)
    per_query: dict[str, np.ndarray]
    #: metric name -> mean over queries (span metrics as fractions in [0, 1])
    scores: dict[str, float]
    #: chunk count, tokens per chunk, tokens retrieved, timings
    stats: dict[str, Any]
    #: tokens (count tokenizer) of every chunk, for histograms
    chunk_tokens: list[int]
    #: n -> (mean tokens retrieved per query, mean Chroma recall, mean Chroma IoU)
    curve: dict[int, tuple[float, float, float]]
    #: document id -> {"pk": ..., "window_diff": ...} where gold boundaries exist
    boundary_scores: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "config": self.spec.to_mapping(),
            "scores": self.scores,
            "stats": self.stats,
            "curve": {str(n): {"tokens_retrieved": t, "recall": r, "iou": i} for n, (t, r, i) in self.curve.items()},
            "boundaries": self.boundary_scores,
        }


@dataclass
class Comparison:
    """Paired bootstrap of ``a - b`` for one metric."""

    a: str
    b: str
    metric: str
    diff: float
    lo: float
    hi: float
    significant: bool


@dataclass
class EvaluationReport:
    """The results of several runs on the same dataset, with their pairwise comparisons."""

    dataset: str
    dataset_summary: str
    embedder: str
    k: int
    count_tokenizer: str
    queries: int
    runs: list[RunResult]
    comparisons: list[Comparison]
    problems: list[str]
    seconds: float
    #: for a dataset made by ``chunkwise questions``: how (its ``questions.json``) and the questions with the
    #: excerpts they were made from, so a reader of the report can judge them (see :func:`generated_questions`)
    generated: dict[str, Any] | None = None

    def comparison(self, a: str, b: str, metric: str) -> Comparison | None:
        for c in self.comparisons:
            if c.metric == metric and c.a == a and c.b == b:
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            **pick(self, "dataset summary=dataset_summary embedder k count_tokenizer queries"),
            "seconds": round(self.seconds, 3),
            "problems": self.problems,
            "runs": [r.to_dict() for r in self.runs],
            "comparisons": [c.__dict__ for c in self.comparisons],
            **({"generated": self.generated} if self.generated is not None else {}),
        }


#: questions shown beside their excerpts in a report (the first ones, in the dataset's order)
SHOWN_QUESTIONS = 200
EXCERPT_CHARS = 400


def generated_questions(dataset) -> dict[str, Any] | None:
    """``{"manifest": ..., "questions": [{"query", "doc", "excerpt"}, ...]}`` when the dataset folder holds a
    ``questions.json`` (written by ``chunkwise questions``), else ``None``. Excerpts are the exact reference
    spans, cut at :data:`EXCERPT_CHARS`; what was cut is said (``…``), never hidden."""
    import json
    from pathlib import Path

    path = Path(dataset.path) / "questions.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    shown = []
    for q in dataset.queries[:SHOWN_QUESTIONS]:
        ref = q.references[0] if q.references else None
        doc = dataset.documents.get(ref.doc) if ref else None
        excerpt = doc.text[ref.start : ref.end] if (doc is not None and ref is not None) else ""
        if len(excerpt) > EXCERPT_CHARS:
            excerpt = excerpt[:EXCERPT_CHARS] + "…"
        shown.append({"query": q.text, "doc": ref.doc if ref else "", "excerpt": excerpt})
    return {"manifest": manifest, "questions": shown, "total": len(dataset.queries)}


__all__ = ["RunResult", "Comparison", "EvaluationReport", "generated_questions"]
