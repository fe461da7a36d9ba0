"""``eval --answers``: does the answer cite a chunk that holds the reference? (citation recall)

Retrieval metrics say whether the right text was among the top k; this asks the LLM each query with those
k chunks, numbered as ``chunkwise ask`` numbers them, and scores the answer:

- ``citation_recall``: 1 when the answer cites (validly) at least one chunk that overlaps a reference span
  of the query, else 0;
- ``answer_cites``: 1 when it cites any chunk that was given;
- ``invalid_citations``: citations to numbers that were not given.

So a chunking choice can be judged by the answers it leads to, not only by what it retrieves. Without an
endpoint the extractive LLM answers, which measures whether the best-matching *sentences* sit in chunks
that overlap the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..document import Chunk
from ..llm.base import LLM, check_citations, passages_from
from .datasets import Query

ANSWER_METRICS = ("citation_recall", "answer_cites", "invalid_citations")


def _overlaps(chunk: Chunk, query: Query) -> bool:
    return any(r.doc == chunk.source and chunk.start < r.end and r.start < chunk.end for r in query.references)


def answer_scores(
    llm: LLM,
    queries: Sequence[Query],
    chunks: list[Chunk],
    order: np.ndarray,
    k: int,
    concurrency: int = 4,
    progress: Callable[[str], None] | None = None,
) -> dict[str, np.ndarray]:
    """Per query: citation recall, whether the answer cites a given chunk, and its invalid citations.

    ``order[qi]`` ranks chunk indices for query ``qi``; the first ``k`` are given to ``llm``. Extractive
    answers run in this thread (they share the embedder); chat requests ``concurrency`` at a time."""

    def one(qi: int) -> tuple[float, float, float]:
        top = [chunks[i] for i in order[qi][:k]]
        passages = passages_from(top)
        comp = llm.answer(queries[qi].text, passages)
        valid, invalid = check_citations(comp.text, [p.number for p in comp.given if p.number is not None])
        hit = any(_overlaps(top[n - 1], queries[qi]) for n in valid)
        return float(hit), float(bool(valid)), float(len(invalid))

    n = len(queries)
    workers = 1 if getattr(llm, "extractive", False) else max(1, concurrency)
    if workers == 1:
        rows = [one(qi) for qi in range(n)]
    else:
        with ThreadPoolExecutor(max_workers=min(workers, n)) as pool:
            rows = list(pool.map(one, range(n)))
    if progress:
        progress(f"answers: {n} queries asked ({llm.name})")
    arr = np.asarray(rows, dtype=np.float64).reshape(n, 3)
    return {name: arr[:, j] for j, name in enumerate(ANSWER_METRICS)}


def format_answers_table(report) -> str:
    """A small table of the answer metrics, one row per run."""
    lines = [
        "",
        f"answers (top {report.k} chunks per query): citation recall = the answer cites a chunk "
        "overlapping a reference",
    ]
    lines.append(f"{'run':<32} {'citation recall':>16} {'answers citing':>15} {'invalid cites':>14}")
    for r in report.runs:
        if "citation_recall" not in r.scores:
            continue
        lines.append(
            f"{r.name[:32]:<32} {100 * r.scores['citation_recall']:>15.1f}% "
            f"{100 * r.scores['answer_cites']:>14.1f}% {r.scores['invalid_citations'] * len(r.per_query['citation_recall']):>14.0f}"
        )
    return "\n".join(lines)


__all__ = ["answer_scores", "format_answers_table", "ANSWER_METRICS"]
