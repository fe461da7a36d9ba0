"""Scoring one run's retrieval: span metrics, document ranking metrics, the tokens curve and run statistics.

:class:`~.runner.Evaluator` retrieves (chunk, embed, store, rank: :mod:`.ranking`); this part turns each
query's ranked chunks into numbers. It is a mixin of the evaluator because every metric needs the same few
things the evaluator holds: the dataset, ``k``, the count tokenizer and its token memo.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..document import Chunk
from ..segmentation.sentences import split_sentences
from ..segmentation.tokenizers import Tokenizer
from . import metrics as M
from .boundaries import boundaries_from_offsets, pk, window_diff
from .datasets import Dataset
from .spec import RunSpec

#: numbers of retrieved chunks at which span metrics are always reported
SPAN_NS = (5, 10)
#: points of the recall-vs-tokens-retrieved curve
CURVE_NS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20)


@dataclass
class _Layout:
    """Where the pooled chunks of one run are: per chunk its document, span and token count (arrays in chunk
    order), and per document the spans of its chunks (what the span metrics compare references with)."""

    docs: list[str]
    starts: np.ndarray
    ends: np.ndarray
    chunk_doc: np.ndarray
    tokens: np.ndarray
    by_doc: dict[str, tuple[np.ndarray, np.ndarray]]


class ScoringMixin:
    """The metrics of :class:`~.runner.Evaluator` (see the module docstring)."""

    dataset: Dataset
    k: int
    doc_ids: list[str]
    count_tokenizer: Tokenizer
    _token_memo: dict[str, int]

    def token_counts(self, chunks: list[Chunk]) -> list[int]:
        missing = list(dict.fromkeys(c.text for c in chunks if c.text not in self._token_memo))
        if missing:
            for t, n in zip(missing, self.count_tokenizer.count_batch(missing)):
                self._token_memo[t] = n
        return [self._token_memo[c.text] for c in chunks]

    def _layout(self, chunks: list[Chunk]) -> _Layout:
        """The pooled chunks as arrays (document, span, tokens) and each document's spans."""
        starts = np.array([c.start for c in chunks], dtype=np.int64)
        ends = np.array([c.end for c in chunks], dtype=np.int64)
        docs = [c.source for c in chunks]
        doc_index = {d: i for i, d in enumerate(self.doc_ids)}
        chunk_doc = np.array([doc_index[d] for d in docs], dtype=np.int64)
        tokens = np.array(self.token_counts(chunks), dtype=np.int64)
        by_doc: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for d in self.doc_ids:
            m = chunk_doc == doc_index[d]
            by_doc[d] = (starts[m], ends[m])
        return _Layout(docs, starts, ends, chunk_doc, tokens, by_doc)

    def _doc_rank(self, layout: _Layout, scores: np.ndarray) -> np.ndarray:
        """Documents per query, best first: a document's score is its best chunk's score."""
        doc_scores = np.full((len(scores), len(self.doc_ids)), -np.inf, dtype=np.float32)
        for j in range(len(self.doc_ids)):
            m = layout.chunk_doc == j
            if m.any():
                doc_scores[:, j] = scores[:, m].max(axis=1)
        return np.argsort(-doc_scores, axis=1, kind="stable")

    def _cutoffs(self) -> list[int | str]:
        """The ``n`` of the span metrics: :data:`SPAN_NS`, ``k`` and ``"min"`` (Chroma's minimal n)."""
        return [*sorted(set(SPAN_NS) | {self.k}), "min"]

    def _score_queries(
        self, layout: _Layout, order: np.ndarray, doc_rank: np.ndarray
    ) -> tuple[dict[str, np.ndarray], dict[int, np.ndarray]]:
        """Every metric for every query, and the summed (tokens, recall, IoU) of each curve point."""
        names = [
            f"{m}@{n}"
            for n in self._cutoffs()
            for m in ("recall", "precision", "iou", "recall_set", "precision_set", "iou_set")
        ]
        names += [
            "precision_omega",
            "precision_omega_set",
            "min_n",
            f"doc_recall@{self.k}",
            "ndcg@10",
            "mrr",
            f"tokens_retrieved@{self.k}",
        ]
        per_query = {name: np.zeros(len(self.dataset.queries)) for name in names}
        curve_acc = {n: np.zeros(3) for n in CURVE_NS}
        for qi, q in enumerate(self.dataset.queries):
            refs = [(r.doc, r.start, r.end) for r in q.references]
            ranked = order[qi]
            retrieved = [(layout.docs[i], int(layout.starts[i]), int(layout.ends[i])) for i in ranked]
            self._span_metrics(qi, refs, retrieved, layout, per_query)
            ranked_docs = [self.doc_ids[j] for j in doc_rank[qi]]
            per_query[f"doc_recall@{self.k}"][qi] = M.doc_recall_at_k(ranked_docs, q.docs, self.k)
            per_query["ndcg@10"][qi] = M.ndcg_at_k(ranked_docs, q.docs, 10)
            per_query["mrr"][qi] = M.reciprocal_rank(ranked_docs, q.docs)
            per_query[f"tokens_retrieved@{self.k}"][qi] = float(layout.tokens[ranked[: self.k]].sum())
            for n in CURVE_NS:
                if n > len(retrieved):
                    continue
                iou, rec, _ = M.chroma_span_scores(refs, retrieved[:n])
                curve_acc[n] += (float(layout.tokens[ranked[:n]].sum()), rec, iou)
        return per_query, curve_acc

    def _budget_recall(self, spec: RunSpec, chunks: list[Chunk], order: np.ndarray) -> dict[str, np.ndarray]:
        """Span recall at each token budget (:data:`~.metrics.BUDGETS`, and the run's ``budget``): the ranked
        chunks handed to the reader as ``spec.expand`` widens them (unset: as ``ask --budget`` does, by
        document kind; ``none``: the chunks themselves, hits of one document that meet merged), until the
        budget (counted with ``count_tokenizer``) is full."""
        from ..pipeline.config import reader_expand
        from ..retrieval.expand import expand_chunks

        budgets = sorted(set(M.BUDGETS) | ({spec.budget} if spec.budget else set()))
        by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            by_doc.setdefault(c.doc_id, []).append(c)
        out = {M.budget_name(b): np.zeros(len(self.dataset.queries)) for b in budgets}
        for qi, q in enumerate(self.dataset.queries):
            refs = [(r.doc, r.start, r.end) for r in q.references]
            hits = [chunks[i] for i in order[qi]]
            for b in budgets:
                passages = expand_chunks(
                    hits,
                    by_doc.__getitem__,
                    reader_expand(spec.expand, b),
                    b,
                    self.count_tokenizer,
                    memo=self._token_memo,
                )
                context = [(p.source, a, e) for p in passages for a, e in p.pieces]
                out[M.budget_name(b)][qi] = M.span_recall(refs, context)
        return out

    def _span_metrics(
        self,
        qi: int,
        refs: list[tuple[str, int, int]],
        retrieved: list[tuple[str, int, int]],
        layout: _Layout,
        per_query: dict[str, np.ndarray],
    ) -> None:
        """Chroma's span metrics and the set variants of query ``qi`` at every cutoff, into ``per_query``."""
        omega, count = M.chroma_precision_omega(refs, layout.by_doc)
        omega_set, count_set = M.set_precision_omega(refs, layout.by_doc)
        per_query["precision_omega"][qi] = omega
        per_query["precision_omega_set"][qi] = omega_set
        per_query["min_n"][qi] = min(count, M.MIN_CAP)
        for n in self._cutoffs():
            n_c = min(count, M.MIN_CAP) if isinstance(n, str) else n  # n: a cutoff or "min"
            n_s = min(count_set, M.MIN_CAP) if isinstance(n, str) else n
            iou, rec, prec = M.chroma_span_scores(refs, retrieved[:n_c])
            iou_s, rec_s, prec_s = M.set_span_scores(refs, retrieved[:n_s])
            per_query[f"recall@{n}"][qi] = rec
            per_query[f"precision@{n}"][qi] = prec
            per_query[f"iou@{n}"][qi] = iou
            per_query[f"recall_set@{n}"][qi] = rec_s
            per_query[f"precision_set@{n}"][qi] = prec_s
            per_query[f"iou_set@{n}"][qi] = iou_s

    def _curve(self, curve_acc: dict[int, np.ndarray], retrieved: int) -> dict[int, tuple[float, float, float]]:
        """Mean (tokens retrieved, recall, IoU) per curve point that the retrieval depth reaches."""
        nq = len(self.dataset.queries)
        curve: dict[int, tuple[float, float, float]] = {}
        for n, acc in curve_acc.items():
            if n <= retrieved:
                tok, rec, iou = (float(x) for x in acc / nq)
                curve[n] = (tok, rec, iou)
        return curve

    def _stats(self, layout: _Layout, per_query: dict[str, np.ndarray], scores: dict[str, float]) -> dict[str, Any]:
        """Chunk sizes, tokens retrieved and, with several corpora, the main scores per corpus (Chroma's
        ``corpora_scores``: queries grouped by the document of their first reference)."""
        tok_list = layout.tokens.tolist()
        stats: dict[str, Any] = {
            "chunks": len(tok_list),
            "tokens_per_chunk_mean": round(float(np.mean(tok_list)), 2),
            "tokens_per_chunk_median": float(statistics.median(tok_list)),
            "tokens_per_chunk_max": int(max(tok_list)),
            f"tokens_retrieved@{self.k}": round(scores[f"tokens_retrieved@{self.k}"], 1),
            "count_tokenizer": self.count_tokenizer.name,
        }
        groups: dict[str, list[int]] = {}
        for qi, q in enumerate(self.dataset.queries):
            groups.setdefault(q.references[0].doc, []).append(qi)
        if len(groups) > 1:
            stats["by_document"] = {
                d: {
                    "queries": len(ix),
                    **{
                        m: round(float(per_query[m][ix].mean()), 6)
                        for m in ("recall@5", "iou@5", "precision@5", "recall_set@5", "iou_set@5")
                    },
                }
                for d, ix in groups.items()
            }
        return stats

    def _boundary_scores(self, chunks: list[Chunk]) -> dict[str, dict[str, float]]:
        """Pk and WindowDiff of the chunk starts against each document's gold boundaries (over its units)."""
        out: dict[str, dict[str, float]] = {}
        for doc_id, gold in self.dataset.boundaries.items():
            units = gold.units
            if units is None:
                units = split_sentences(self.dataset.documents[doc_id].text)
            if not units:
                continue
            unit_starts = [a for a, _ in units]
            ref = boundaries_from_offsets(unit_starts, gold.boundaries)
            hyp = boundaries_from_offsets(unit_starts, [c.start for c in chunks if c.source == doc_id])
            out[doc_id] = {"pk": pk(ref, hyp, len(units)), "window_diff": window_diff(ref, hyp, len(units))}
        return out


__all__ = ["ScoringMixin", "SPAN_NS", "CURVE_NS"]
