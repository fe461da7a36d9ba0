"""Run chunking strategies over an evaluation dataset and score what an exact retriever returns.

Retrieval goes through a store, as in production, but an exact one: each run writes the chunks of *all*
documents (as Chroma's evaluation pools all corpora in one collection) to a
:class:`~chunkwise.store.memory.MemoryStore` and ranks each query with ``Index.search``'s own function
(:func:`chunkwise.retrieval.search.rank_candidates`: vectors, the shared BM25 of :mod:`chunkwise.store.bm25`,
the fusion and the section-first pass); ties go to the earlier chunk in corpus order. It is fast,
needs no server and gives the same answer on every run, so two strategies differ only by their chunks.

Embedding is the expensive part, so nothing is embedded twice: an in-memory memo (:class:`MemoEmbedder`)
sits on top of the embedder's persistent cache, and is shared by the chunk vectors, the query vectors and
the sentence vectors semantic strategies compute while chunking. A grid search (:mod:`.tune`) therefore
embeds each distinct text once over the whole search, and a second run of the same evaluation reads
everything from the persistent cache.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..context import contextualize, late_chunk_vectors
from ..document import Chunk, Document
from ..embeddings.base import Embedder
from ..embeddings.memo import MemoEmbedder
from ..embeddings.vectors import pooled_vector, query_vectors
from ..errors import ChunkwiseError, ConfigError
from ..pipeline.config import FUSION_MODES, check_combinations, parse_expand
from ..retrieval.fusion import fuse_zscore, zscore
from ..segmentation.tokenizers import resolve_tokenizer
from ..store.memory import MemoryStore
from ..strategies.factory import make_strategy, parse_value
from ..strategies.many import chunk_many
from ..strategies.params import TokenizerSpec
from ..validation import InstanceOf, Interval, validated
from . import metrics as M
from .datasets import Dataset
from .ranking import RankingMixin, fuse_granularities, top_indices
from .results import Comparison, EvaluationReport, RunResult, generated_questions
from .scoring import CURVE_NS, SPAN_NS, ScoringMixin
from .spec import (
    DEFAULT_DENSE_WEIGHT,
    DEFAULT_RRF_K,
    RUN_KEYS,
    VECTOR_MODES,
    RunSpec,
    fusion_settings,
    parse_run_spec,
    spec_from_params,
    split_top_level,
)

#: metrics compared between strategies with the paired bootstrap
COMPARED_METRICS = ("recall@5", "iou@5", "precision@5", "recall_set@5", "iou_set@5", "ndcg@10", "mrr")
#: retrieved chunks that span recall at a token budget may draw on (a 4k budget of 64-token chunks)
BUDGET_DEPTH = 64


# -- the evaluator ------------------------------------------------------------------------------------


class Evaluator(RankingMixin, ScoringMixin):
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

    @validated(
        "Evaluator",
        dataset=InstanceOf(Dataset),
        k=Interval(int, 1, None),
        count_tokenizer=TokenizerSpec(),
        n_boot=Interval(int, 1, None),
        seed=Interval(int, None, None),
        answer_concurrency=Interval(int, 1, None),
    )
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

    # -- one run ------------------------------------------------------------------------------------
    def run(self, spec: RunSpec) -> RunResult:
        """Chunk, embed, retrieve (at each of ``spec.granularities``, fused), rerank and score one run."""
        self._check_run(spec)
        t_start = time.perf_counter()
        emb_n0 = self.embedder.texts_embedded
        q0 = self.embedder.seconds
        qv = self.query_vectors()
        embed_seconds = self.embedder.seconds - q0  # non-zero on the first run only
        chunk_seconds = 0.0
        parts = []
        for size in spec.granularities or (None,):
            chunks, deep, stage, doc_scores, chunk_s, embed_s = self._retrieve(self._at_size(spec, size), qv)
            parts.append((chunks, deep, doc_scores))
            chunk_seconds += chunk_s
            embed_seconds += embed_s
        if len(parts) > 1:
            chunks, deep, doc_scores = fuse_granularities([(cs, order) for cs, order, _ in parts])
            stage = np.take_along_axis(doc_scores, deep, axis=1)
        if spec.rerank:
            deep, doc_scores = self._reranked(spec, chunks, deep, doc_scores, stage)
        result = self._score(spec, chunks, deep, doc_scores)
        result.stats.update(
            {
                "chunk_seconds": round(chunk_seconds, 3),
                "embed_seconds": round(embed_seconds, 3),
                "texts_embedded": self.embedder.texts_embedded - emb_n0,
                "seconds": round(time.perf_counter() - t_start, 3),
            }
        )
        return result

    @staticmethod
    def _check_run(spec: RunSpec) -> None:
        """One error for settings that contradict each other."""
        try:
            check_combinations(spec, ())
        except ConfigError as exc:
            raise ConfigError(f"{spec.name}: {exc.problem}") from None
        if spec.granularities and parse_expand(spec.expand):
            raise ConfigError(f"{spec.name}: granularities and expand do not combine (whose neighbours?); drop one")

    @staticmethod
    def _at_size(spec: RunSpec, size: int | None) -> RunSpec:
        """The run at one granularity: its strategy with ``max_tokens=size``, no second stage."""
        if size is None:
            return spec
        return replace(spec, params={**spec.params, "max_tokens": size}, granularities=None, rerank=None)

    def _retrieve(
        self, spec: RunSpec, qv: np.ndarray
    ) -> tuple[list[Chunk], np.ndarray, np.ndarray, np.ndarray, float, float]:
        """One chunking's chunks, their ranking (:meth:`_ranking`) and the seconds spent chunking and
        embedding (sentence vectors a semantic strategy computed count as embedding)."""
        emb_s0 = self.embedder.seconds
        by_doc, chunk_seconds = self.chunk_all(spec)
        chunk_embed_s = self.embedder.seconds - emb_s0
        t0 = time.perf_counter()
        items = self._embedded_chunks(spec, by_doc)
        embed_seconds = time.perf_counter() - t0 + chunk_embed_s
        store = self._store(items)
        chunks = [c for _, cs, _ in items for c in cs]
        deep, stage, doc_scores = self._ranking(spec, chunks, store, qv)
        return chunks, deep, stage, doc_scores, chunk_seconds - chunk_embed_s, embed_seconds

    def _top_n(self, n_chunks: int) -> int:
        """Chunks per query the span metrics and the curve read."""
        return min(n_chunks, max(max(CURVE_NS), max(SPAN_NS), self.k, M.MIN_CAP))

    def _ranking(
        self, spec: RunSpec, chunks: list[Chunk], store: MemoryStore, qv: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The deep order (deep enough for the budgets and the reranker), its first-stage scores and the
        scores documents are ranked by (:meth:`~.ranking.RankingMixin._rank`: search's own ranking)."""
        top_n = self._top_n(len(chunks))
        depth = max(top_n, BUDGET_DEPTH, spec.rerank_depth if spec.rerank else 0)
        return self._rank(spec, store, qv, min(len(chunks), depth))

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

    def _score(
        self, spec: RunSpec, chunks: list[Chunk], deep_order: np.ndarray, scores_for_docs: np.ndarray
    ) -> RunResult:
        """Score the spans, the documents and the tokens retrieved of a ranking."""
        layout = self._layout(chunks)
        order = deep_order[:, : self._top_n(len(chunks))]
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
        if self.dataset.boundaries and not spec.granularities:  # chunk starts of one chunking only
            result.boundary_scores = self._boundary_scores(chunks)
            if result.boundary_scores:
                for m in ("pk", "window_diff"):
                    vals = [v[m] for v in result.boundary_scores.values()]
                    result.scores[m] = float(np.mean(vals))
        return result

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
