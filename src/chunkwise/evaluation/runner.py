"""Run chunking strategies over an evaluation dataset and score what an exact retriever returns.

Retrieval goes through a store, as in production, but an exact one: each run writes the chunks of *all*
documents (as Chroma's evaluation pools all corpora in one collection) to a
:class:`~chunkwise.store.memory.MemoryStore` and asks it for every chunk's cosine similarity and, for hybrid
runs, the shared BM25 (:mod:`chunkwise.store.bm25`); ties go to the earlier chunk in corpus order. It is fast,
needs no server and gives the same answer on every run, so two strategies differ only by their chunks.

Embedding is the expensive part, so nothing is embedded twice: an in-memory memo (:class:`MemoEmbedder`)
sits on top of the embedder's persistent cache, and is shared by the chunk vectors, the query vectors and
the sentence vectors semantic strategies compute while chunking. A grid search (:mod:`.tune`) therefore
embeds each distinct text once over the whole search, and a second run of the same evaluation reads
everything from the persistent cache.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..context import contextualize, late_chunk_vectors
from ..document import Chunk, Document
from ..embeddings.base import Embedder
from ..embeddings.memo import MemoEmbedder
from ..embeddings.vectors import pooled_vector, query_vectors
from ..errors import ChunkwiseError, ConfigError
from ..retrieval.fusion import FUSION_MODES, fuse_zscore, reciprocal_rank_fusion, zscore
from ..segmentation.sentences import split_sentences
from ..segmentation.tokenizers import resolve_tokenizer
from ..store.memory import MemoryStore
from ..strategies.factory import make_strategy, parse_value
from ..strategies.many import chunk_many
from . import metrics as M
from .boundaries import boundaries_from_offsets, pk, window_diff
from .datasets import Dataset
from .results import Comparison, EvaluationReport, RunResult, generated_questions
from .spec import (
    DEFAULT_DENSE_WEIGHT,
    DEFAULT_FUSION,
    DEFAULT_RRF_K,
    RUN_KEYS,
    VECTOR_MODES,
    RunSpec,
    fusion_settings,
    parse_run_spec,
    spec_from_params,
    split_top_level,
)

#: numbers of retrieved chunks at which span metrics are always reported
SPAN_NS = (5, 10)
#: points of the recall-vs-tokens-retrieved curve
CURVE_NS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20)
#: metrics compared between strategies with the paired bootstrap
COMPARED_METRICS = ("recall@5", "iou@5", "precision@5", "recall_set@5", "iou_set@5", "ndcg@10", "mrr")
#: retrieved chunks that span recall at a token budget may draw on (a 4k budget of 64-token chunks)
BUDGET_DEPTH = 64
#: candidates taken from each ranking before reciprocal rank fusion (hybrid runs)
HYBRID_CANDIDATES = 100


def top_indices(sims: np.ndarray, n: int) -> np.ndarray:
    """Per row, the indices of the ``n`` highest scores, best first; ties broken by index (stable) among the
    ``n`` kept (which of several scores tied at the ``n``-th place are kept is ``argpartition``'s choice)."""
    total = sims.shape[1]
    n = min(n, total)
    if n < total:
        part = np.argpartition(-sims, n - 1, axis=1)[:, :n]
        part.sort(axis=1)
        return np.take_along_axis(
            part, np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1, kind="stable"), axis=1
        )
    return np.argsort(-sims, axis=1, kind="stable")


# -- the evaluator ------------------------------------------------------------------------------------


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


class Evaluator:
    """Scores runs on one dataset with one embedder, sharing query vectors, chunks and embeddings.

    Parameters
    ----------
    dataset: the :class:`~.datasets.Dataset`.
    embedder: any :class:`~chunkwise.embeddings.base.Embedder` (wrapped in a :class:`MemoEmbedder`).
    k: the ``n`` of document-level recall@k and of "tokens retrieved" (span metrics are always given at
       5, 10 and "min", plus ``k``).
    count_tokenizer: tokenizer for chunk sizes and tokens retrieved, the same for every run so they compare.
    n_boot, seed: paired bootstrap resamples and seed.
    progress: optional ``callable(str)`` for progress lines.
    answer_llm: an :class:`~chunkwise.llm.base.LLM`: ask it every query with the top ``k`` chunks and
       score citation recall (:mod:`.answers`); ``answer_concurrency`` requests at once.
    """

    def __init__(
        self,
        dataset: Dataset,
        embedder: Embedder,
        k: int = 5,
        count_tokenizer: str = "cl100k",
        n_boot: int = 1000,
        seed: int = 0,
        progress: Callable[[str], None] | None = None,
        answer_llm: Any = None,
        answer_concurrency: int = 4,
    ):
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be a positive integer, got {k!r}")
        if not dataset.queries:
            raise ConfigError(
                f"{dataset.path}: no queries to evaluate"
                + (f" ({len(dataset.problems)} problem(s), first: {dataset.problems[0]})" if dataset.problems else "")
            )
        self.dataset = dataset
        self.embedder = embedder if isinstance(embedder, MemoEmbedder) else MemoEmbedder(embedder, progress)
        self.k = k
        self.count_tokenizer = resolve_tokenizer(count_tokenizer)
        self.n_boot = n_boot
        self.seed = seed
        self.progress = progress or (lambda msg: None)
        self.doc_ids = list(dataset.documents)
        self._query_vectors: np.ndarray | None = None
        self._chunk_memo: dict[tuple[str, str], list[Chunk]] = {}
        self._token_memo: dict[str, int] = {}
        self.answer_llm = answer_llm
        self.answer_concurrency = answer_concurrency

    # -- pieces -------------------------------------------------------------------------------------
    def query_vectors(self) -> np.ndarray:
        if self._query_vectors is None:
            self._query_vectors = query_vectors(self.embedder, [q.text for q in self.dataset.queries])
        return self._query_vectors

    def build_strategy(self, spec: RunSpec):
        return make_strategy(spec.strategy, spec.params, self.embedder)

    def chunk_all(self, spec: RunSpec) -> tuple[dict[str, list[Chunk]], float]:
        """Chunks of every document (memoised per configuration) and the seconds chunking took."""
        strategy = self.build_strategy(spec)
        strategy.validate()
        key = json.dumps([spec.strategy, strategy.config_id()])
        out: dict[str, list[Chunk]] = {}
        t0 = time.perf_counter()
        todo = [doc_id for doc_id in self.dataset.documents if (key, doc_id) not in self._chunk_memo]
        if todo:
            # one embedding stream for the whole corpus (strategies.many); on a terminal tqdm bars replace
            # the memo's progress lines (which stay for logs and pipes)
            lines = self.embedder.progress
            bars = lines is not None and sys.stderr.isatty()
            if bars:
                self.embedder.progress = None
            try:
                results = chunk_many(strategy, [self.dataset.documents[d] for d in todo], progress=bars)
            finally:
                self.embedder.progress = lines
            for doc_id, chunks in zip(todo, results):
                if isinstance(chunks, ChunkwiseError):  # (return_exceptions=False: chunk_many raises instead)
                    raise chunks
                self._chunk_memo[(key, doc_id)] = chunks
        for doc_id in self.dataset.documents:
            out[doc_id] = self._chunk_memo[(key, doc_id)]
        return out, time.perf_counter() - t0

    def _contextualize(self, spec: RunSpec, doc: Document, chunks: list[Chunk]) -> list[Chunk]:
        chunks = [Chunk(**{**c.__dict__, "context": None}) for c in chunks]  # never mutate memoised chunks
        result = contextualize(doc, chunks, spec.context, **spec.context_options)
        return list(result) if result is not None else chunks

    def _late_vectors(self, spec: RunSpec, doc: Document, chunks: list[Chunk]) -> np.ndarray:
        return late_chunk_vectors(doc, chunks, self.embedder, **spec.late_options)

    def _text_or_pooled(self, spec: RunSpec, chunks: list[Chunk]) -> np.ndarray:
        """Chunk vectors: embedded ``embed_text``, or (``vectors="pool"``) the strategy's own vectors as
        ``chunkwise index --vectors pool`` reuses them (chunks without any are embedded)."""
        out = np.zeros((len(chunks), self.embedder.dim), dtype=np.float32)
        todo = []
        for i, c in enumerate(chunks):
            pooled = pooled_vector(c, self.embedder.dim) if spec.vectors == "pool" and not c.context else None
            if pooled is None:
                todo.append(i)
            else:
                out[i] = pooled
        if todo:
            out[todo] = self.embedder.embed([chunks[i].embed_text for i in todo])
        return out

    def token_counts(self, chunks: list[Chunk]) -> list[int]:
        missing = list(dict.fromkeys(c.text for c in chunks if c.text not in self._token_memo))
        if missing:
            for t, n in zip(missing, self.count_tokenizer.count_batch(missing)):
                self._token_memo[t] = n
        return [self._token_memo[c.text] for c in chunks]

    # -- one run ------------------------------------------------------------------------------------
    def run(self, spec: RunSpec) -> RunResult:
        """Chunk, embed, retrieve and score one configuration."""
        if not spec.hybrid and (
            spec.fusion != DEFAULT_FUSION or spec.rrf_k != DEFAULT_RRF_K or spec.dense_weight != DEFAULT_DENSE_WEIGHT
        ):
            raise ConfigError(
                f"{spec.name}: fusion, rrf_k and dense_weight apply to hybrid retrieval only; "
                f"drop hybrid=false (or --dense)"
            )
        t_start = time.perf_counter()
        emb_n0 = self.embedder.texts_embedded
        q0 = self.embedder.seconds
        qv = self.query_vectors()
        query_s = self.embedder.seconds - q0  # non-zero on the first run only
        emb_s0 = self.embedder.seconds
        by_doc, chunk_seconds = self.chunk_all(spec)
        chunk_embed_s = self.embedder.seconds - emb_s0  # embedding done by semantic strategies
        t0 = time.perf_counter()
        items = self._embedded_chunks(spec, by_doc)
        embed_seconds = time.perf_counter() - t0 + chunk_embed_s + query_s
        store = self._store(items)
        chunks = [c for _, cs, _ in items for c in cs]
        self.progress(f"{spec.name}: {len(chunks)} chunks, scoring {len(self.dataset.queries)} queries")
        result = self._score(spec, chunks, store, qv)
        result.stats.update(
            {
                "chunk_seconds": round(chunk_seconds - chunk_embed_s, 3),
                "embed_seconds": round(embed_seconds, 3),
                "texts_embedded": self.embedder.texts_embedded - emb_n0,
                "seconds": round(time.perf_counter() - t_start, 3),
            }
        )
        return result

    def _embedded_chunks(
        self, spec: RunSpec, by_doc: dict[str, list[Chunk]]
    ) -> list[tuple[Document, list[Chunk], np.ndarray]]:
        """Each document with its chunks (contextualised when the run asks) and their vectors: late-chunked
        per document, or else embedded (or pooled) in one call for all chunks of the corpus."""
        items: list[tuple[Document, list[Chunk], np.ndarray]] = []
        for doc_id in self.doc_ids:
            doc, cs = self.dataset.documents[doc_id], by_doc[doc_id]
            if not cs:
                continue
            if spec.context:
                cs = self._contextualize(spec, doc, cs)
            vecs = (
                np.asarray(self._late_vectors(spec, doc, cs), dtype=np.float32)
                if spec.late
                else np.zeros((0, 0), dtype=np.float32)
            )
            items.append((doc, cs, vecs))
        if not items:
            raise ConfigError(f"{spec.name}: the strategy produced no chunks")
        if not spec.late:
            vectors = self._text_or_pooled(spec, [c for _, cs, _ in items for c in cs])
            bounds = np.cumsum([0] + [len(cs) for _, cs, _ in items])
            items = [(doc, cs, vectors[a:b]) for (doc, cs, _), a, b in zip(items, bounds[:-1], bounds[1:])]
        return items

    def _store(self, items: list[tuple[Document, list[Chunk], np.ndarray]]) -> MemoryStore:
        """The run's chunks written to an in-memory store (exact search), in corpus order."""
        store = MemoryStore(collection="evaluation")
        store.create({"dataset": self.dataset.path}, self.embedder.dim)
        store.upsert(items, self.embedder.model_id)
        if store.count() != sum(len(cs) for _, cs, _ in items):
            raise ChunkwiseError(
                "two chunks of the evaluation corpus have the same id; give the documents distinct names"
            )
        return store

    def _score(self, spec: RunSpec, chunks: list[Chunk], store: MemoryStore, qv: np.ndarray) -> RunResult:
        """Retrieve for every query, then score the spans, the documents and the tokens retrieved."""
        layout = self._layout(chunks)
        sims = self._similarities(store, qv)
        top_n = min(len(chunks), max(max(CURVE_NS), max(SPAN_NS), self.k, M.MIN_CAP))
        deep_order, scores_for_docs = self._rank(spec, store, sims, min(len(chunks), max(top_n, BUDGET_DEPTH)))
        order = deep_order[:, :top_n]
        if spec.hybrid and spec.fusion == "rrf":  # documents ranked by the top_n ranks alone, as before
            scores_for_docs = np.zeros_like(sims)
            np.put_along_axis(scores_for_docs, order, np.arange(top_n, 0, -1, dtype=np.float32)[None, :], axis=1)
        doc_rank = self._doc_rank(layout, scores_for_docs)
        per_query, curve_acc = self._score_queries(layout, order, doc_rank)
        per_query.update(self._budget_recall(spec, chunks, deep_order))
        if self.answer_llm is not None:
            from .answers import answer_scores

            per_query.update(
                answer_scores(
                    self.answer_llm, self.dataset.queries, chunks, order, self.k, self.answer_concurrency, self.progress
                )
            )
        scores = {name: float(v.mean()) for name, v in per_query.items()}
        curve = self._curve(curve_acc, len(order[0]))
        result = RunResult(
            spec, per_query, scores, self._stats(layout, per_query, scores), layout.tokens.tolist(), curve
        )
        if self.dataset.boundaries:
            result.boundary_scores = self._boundary_scores(chunks)
            if result.boundary_scores:
                for m in ("pk", "window_diff"):
                    vals = [v[m] for v in result.boundary_scores.values()]
                    result.scores[m] = float(np.mean(vals))
        return result

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

    @staticmethod
    def _similarities(store: MemoryStore, qv: np.ndarray) -> np.ndarray:
        """Every query's cosine similarity with every chunk, shape (queries, chunks) in chunk order: the
        store's exact vector search asked for all chunks (document ranking and z-scores need them all)."""
        positions, scores = store.search_vectors(qv, store.count())
        sims = np.empty_like(scores)
        np.put_along_axis(sims, positions, scores, axis=1)
        return sims

    def _rank(self, spec: RunSpec, store: MemoryStore, sims: np.ndarray, top_n: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``top_n`` chunks per query, best first, and the per-chunk scores documents are ranked by
        (the similarities; the fused z-scores; for RRF, ``top_n .. 1`` on the retrieved chunks, else 0)."""
        if spec.hybrid and spec.fusion == "zscore":
            fused = self._zscore_fused(spec, store, sims)
            return top_indices(fused, top_n), fused
        if spec.hybrid:
            order = self._hybrid_order(store, sims, top_n, spec.rrf_k)
            rank_scores = np.zeros_like(sims)
            ranks = np.arange(order.shape[1], 0, -1, dtype=np.float32)
            np.put_along_axis(rank_scores, order, ranks[None, :], axis=1)
            return order, rank_scores
        return top_indices(sims, top_n), sims

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
        chunks handed to the reader as ``spec.expand`` widens them (none: the chunks themselves, hits of one
        document that meet merged), until the budget (counted with ``count_tokenizer``) is full."""
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
                    hits, by_doc.__getitem__, spec.expand, b, self.count_tokenizer, memo=self._token_memo
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

    def _bm25_scores(self, store: MemoryStore) -> np.ndarray:
        """BM25 score of every chunk for every query, shape (queries, chunks); 0 where no term matches."""
        position = {chunk_id: n for n, chunk_id in enumerate(store.ids)}
        out = np.zeros((len(self.dataset.queries), store.count()), dtype=np.float32)
        for qi, q in enumerate(self.dataset.queries):
            for hit in store.search_text(q.text, store.count()):
                out[qi, position[hit.id]] = hit.score
        return out

    def _zscore_fused(self, spec: RunSpec, store: MemoryStore, sims: np.ndarray) -> np.ndarray:
        """``fusion=zscore``: per query, the dense similarities and the BM25 scores of *all* chunks are each
        z-normalised (mean 0, standard deviation 1; a constant row becomes 0), then combined as
        ``dense_weight * dense + (1 - dense_weight) * bm25``. Unlike RRF it keeps how far apart the scores
        are, so a chunk far ahead in one ranking is not pulled level with the runner-up."""
        return fuse_zscore(sims, self._bm25_scores(store), spec.dense_weight)

    def _hybrid_order(self, store: MemoryStore, sims: np.ndarray, top_n: int, rrf_k: int = DEFAULT_RRF_K) -> np.ndarray:
        """Top chunks by reciprocal rank fusion (constant ``rrf_k``) of the dense ranking and BM25 over
        ``embed_text`` (what the index's ``hybrid=True`` search does), each ranking cut at
        :data:`HYBRID_CANDIDATES`."""
        n_chunks = store.count()
        cand = min(n_chunks, max(HYBRID_CANDIDATES, top_n))
        dense = top_indices(sims, cand)
        position = {chunk_id: n for n, chunk_id in enumerate(store.ids)}
        order = np.zeros((len(sims), top_n), dtype=np.int64)
        for qi, q in enumerate(self.dataset.queries):
            bm25_ranking = [position[hit.id] for hit in store.search_text(q.text, cand)]
            fused = dict(reciprocal_rank_fusion([dense[qi].tolist(), bm25_ranking], k=rrf_k))
            best = list(fused)[:top_n]
            if len(best) < top_n:  # pad with the next dense hits (only when BM25 and dense agree a lot)
                rest = [
                    i
                    for i in top_indices(sims[qi : qi + 1], min(n_chunks, 2 * top_n + cand))[0].tolist()
                    if i not in fused
                ]
                best += rest[: top_n - len(best)]
            order[qi] = best
        return order

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

    # -- several runs -------------------------------------------------------------------------------
    def compare(self, results: list[RunResult], metrics: Sequence[str] = COMPARED_METRICS) -> list[Comparison]:
        """Paired bootstrap for every ordered pair of runs (``a`` before ``b``) and metric."""
        out = []
        for i, a in enumerate(results):
            for b in results[i + 1 :]:
                for m in metrics:
                    if m not in a.per_query or m not in b.per_query:
                        continue
                    r = M.paired_bootstrap(a.per_query[m], b.per_query[m], self.n_boot, self.seed)
                    out.append(Comparison(a.name, b.name, m, r["diff"], r["lo"], r["hi"], r["significant"]))
        return out

    def evaluate(self, specs: Sequence[RunSpec]) -> EvaluationReport:
        t0 = time.perf_counter()
        names = [s.name for s in specs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"two runs have the same name {dupes[0]!r}; give one a label (LABEL=strategy:...)")
        results = []
        for spec in specs:
            self.progress(f"running {spec.name}")
            results.append(self.run(spec))
        comparisons = self.compare(results) if len(results) > 1 else []
        return EvaluationReport(
            dataset=self.dataset.path,
            dataset_summary=self.dataset.summary(),
            embedder=self.embedder.model_id,
            k=self.k,
            count_tokenizer=self.count_tokenizer.name,
            queries=len(self.dataset.queries),
            runs=results,
            comparisons=comparisons,
            problems=list(self.dataset.problems),
            seconds=time.perf_counter() - t0,
            generated=generated_questions(self.dataset),
        )


def evaluate(
    dataset: Dataset | str,
    specs: Sequence[RunSpec | str],
    embedder: Embedder | str | None = None,
    k: int = 5,
    **kw: Any,
) -> EvaluationReport:
    """Python API: evaluate run specs (or ``"recursive:max_tokens=200"`` strings) on a dataset.

    ``embedder`` is an :class:`Embedder` or a name for :func:`chunkwise.embeddings.get_embedder`
    (default ``minilm`` with the persistent cache).
    """
    from .datasets import load_dataset

    if not isinstance(dataset, Dataset):
        dataset = load_dataset(dataset)
    if embedder is None or isinstance(embedder, str):
        from ..embeddings import get_embedder

        embedder = get_embedder(embedder or "minilm")
    runs = [parse_run_spec(s) if isinstance(s, str) else s for s in specs]
    return Evaluator(dataset, embedder, k=k, **kw).evaluate(runs)


#: the names this module has always offered; :mod:`.spec`, :mod:`.results` and
#: :mod:`chunkwise.embeddings.memo` hold the code
__all__ = [
    "RunSpec",
    "RunResult",
    "EvaluationReport",
    "Comparison",
    "Evaluator",
    "MemoEmbedder",
    "evaluate",
    "parse_run_spec",
    "spec_from_params",
    "fusion_settings",
    "fuse_zscore",
    "zscore",
    "FUSION_MODES",
    "split_top_level",
    "top_indices",
    "CURVE_NS",
    "SPAN_NS",
    "VECTOR_MODES",
    "RUN_KEYS",
    "parse_value",
    "DEFAULT_RRF_K",
    "DEFAULT_DENSE_WEIGHT",
]
