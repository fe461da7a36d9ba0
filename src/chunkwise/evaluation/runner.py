"""Run chunking strategies over an evaluation dataset and score what an exact retriever returns.

Retrieval here is deliberately not the production index: one in-process matrix of L2-normalised chunk
vectors pooled over *all* documents (as Chroma's evaluation pools all corpora in one collection), exact
dot-product search with numpy, ties broken by chunk order. It is fast, needs no server and gives the same
answer on every run, so two strategies differ only by their chunks.

Embedding is the expensive part, so nothing is embedded twice: an in-memory memo (:class:`MemoEmbedder`)
sits on top of the embedder's persistent cache, and is shared by the chunk vectors, the query vectors and
the sentence vectors semantic strategies compute while chunking. A grid search (:mod:`.tune`) therefore
embeds each distinct text once over the whole search, and a second run of the same evaluation reads
everything from the persistent cache.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from ..strategies.factory import make_strategy, parse_value  # noqa: F401  (parse_value: re-exported)
from ..retrieval.fusion import DENSE_WEIGHT, FUSION_MODES, RRF_K, fuse_zscore, reciprocal_rank_fusion, zscore

from ..document import Chunk, Document
from ..embeddings.base import Embedder, WrappedEmbedder, l2_normalize
from ..embeddings.vectors import pooled_vector
from ..errors import ChunkwiseError, ConfigError
from ..segmentation.tokenizers import resolve_tokenizer
from . import metrics as M
from .datasets import Dataset

#: numbers of retrieved chunks at which span metrics are always reported
SPAN_NS = (5, 10)
#: points of the recall-vs-tokens-retrieved curve
CURVE_NS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20)
#: metrics compared between strategies with the paired bootstrap
COMPARED_METRICS = ("recall@5", "iou@5", "precision@5", "recall_set@5", "iou_set@5", "ndcg@10", "mrr")
#: keys of a run spec that configure the run, not the strategy
RUN_KEYS = ("label", "late", "context", "context_opts", "late_opts", "hybrid", "vectors", "fusion", "rrf_k",
            "dense_weight")
#: how chunk vectors are made: the same modes as ``chunkwise index --vectors`` (one definition)
from ..retrieval.index import VECTOR_MODES  # noqa: E402

#: candidates taken from each ranking before reciprocal rank fusion (hybrid runs)
HYBRID_CANDIDATES = 100
#: how a hybrid run fuses the vector and BM25 rankings, the RRF constant and the z-score weight: the same
#: definitions as ``chunkwise search`` (:mod:`chunkwise.retrieval.fusion`)
DEFAULT_RRF_K = RRF_K
DEFAULT_DENSE_WEIGHT = DENSE_WEIGHT


def top_indices(sims: np.ndarray, n: int) -> np.ndarray:
    """Per row, the indices of the ``n`` highest scores, best first; ties broken by index (stable)."""
    total = sims.shape[1]
    n = min(n, total)
    if n < total:
        part = np.argpartition(-sims, n - 1, axis=1)[:, :n]
        part.sort(axis=1)
        return np.take_along_axis(part, np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1,
                                                   kind="stable"), axis=1)
    return np.argsort(-sims, axis=1, kind="stable")


# -- run specifications -------------------------------------------------------------------------------


@dataclass
class RunSpec:
    """One configuration to evaluate: a strategy with its parameters, plus contextual/late options.

    ``context`` is a :func:`chunkwise.context.contextualize` mode (``headings``, ``neighbors``...);
    ``late`` embeds chunks by late chunking (:func:`chunkwise.context.late_chunk_vectors`);
    ``hybrid`` retrieves by reciprocal rank fusion of the vector ranking and BM25 (as ``search --hybrid``).
    """

    strategy: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    late: bool = False
    context: str | None = None
    context_opts: dict[str, Any] = field(default_factory=dict)
    late_opts: dict[str, Any] = field(default_factory=dict)
    hybrid: bool = False
    vectors: str = "text"
    #: hybrid fusion: ``rrf`` (reciprocal rank fusion with constant ``rrf_k``) or ``zscore`` (per query, each
    #: retriever's scores over all chunks z-normalised, then ``dense_weight * dense + (1 - dense_weight) * bm25``)
    fusion: str = "rrf"
    rrf_k: int = DEFAULT_RRF_K
    dense_weight: float = DEFAULT_DENSE_WEIGHT

    def fusion_options(self) -> dict[str, Any]:
        """The fusion settings that differ from the defaults (``{}`` for plain RRF with k = 60)."""
        out: dict[str, Any] = {}
        if self.fusion != "rrf":
            out["fusion"] = self.fusion
            out["dense_weight"] = self.dense_weight
        elif self.rrf_k != DEFAULT_RRF_K:
            out["rrf_k"] = self.rrf_k
        return out

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        parts = [self.strategy]
        for k, v in self.params.items():
            if k == "embedder":
                continue
            parts.append(f"{k}={json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}")
        if self.context:
            parts.append(f"context={self.context}")
        if self.late:
            parts.append("late")
        if self.hybrid:
            parts.append("hybrid")
            parts.extend(f"{k}={v}" for k, v in self.fusion_options().items())
        if self.vectors != "text":
            parts.append(f"vectors={self.vectors}")
        return " ".join(parts)

    def to_config(self) -> dict[str, Any]:
        """The JSON ``--config`` files hold (``chunk``/``index``/``eval`` read ``strategy`` and ``params``)."""
        out: dict[str, Any] = {"strategy": self.strategy,
                               "params": {k: v for k, v in self.params.items() if k != "embedder"}}
        run: dict[str, Any] = {}
        if self.late:
            run["late"] = True
        if self.context:
            run["context"] = self.context
        if self.context_opts:
            run["context_opts"] = self.context_opts
        if self.hybrid:
            run["hybrid"] = True
            run.update(self.fusion_options())
        if self.vectors != "text":
            run["vectors"] = self.vectors
        if run:
            out["run"] = run
        return out


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside brackets, braces and quotes (so JSON values may contain commas)."""
    out, depth, quote, buf, escape = [], 0, None, [], False
    for ch in text:
        if escape:
            buf.append(ch)
            escape = False
            continue
        if ch == "\\" and quote:
            buf.append(ch)
            escape = True
            continue
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    out.append("".join(buf))
    return out


def parse_run_spec(text: str) -> RunSpec:
    """``NAME[:key=value,key=value,...]``, optionally prefixed by ``LABEL=``, e.g.
    ``'rec200=recursive:max_tokens=200,overlap=0,tokenizer=cl100k'``. Values are JSON when they parse
    (``separators=["\\n\\n","\\n"," ",""]``). The keys of :data:`RUN_KEYS` (``late``, ``context``,
    ``hybrid``, ``fusion``...) configure the run."""
    from ..strategies import STRATEGY_NAMES

    text = text.strip()
    label = None
    head, _, rest = text.partition(":")
    if "=" in head:
        label, _, head = head.partition("=")
        label = label.strip() or None
    name = head.strip()
    if name not in STRATEGY_NAMES:
        raise ConfigError(f"--run {text!r}: unknown strategy {name!r}; choose one of {', '.join(STRATEGY_NAMES)}")
    params: dict[str, Any] = {}
    if rest.strip():
        for item in split_top_level(rest):
            if not item.strip():
                continue
            if "=" not in item:
                raise ConfigError(f"--run {text!r}: expected key=value, got {item!r}")
            k, _, v = item.partition("=")
            params[k.strip().replace("-", "_")] = parse_value(v)
    return spec_from_params(name, params, label=label)


def spec_from_params(name: str, params: dict[str, Any], label: str | None = None,
                     run: dict[str, Any] | None = None) -> RunSpec:
    """A :class:`RunSpec` from strategy parameters that may include the run keys (late, context...)."""
    params = dict(params)
    run = dict(run or {})
    for key in RUN_KEYS:
        if key in params:
            run[key] = params.pop(key)
    late = _flag(run.get("late", False))
    hybrid = _flag(run.get("hybrid", False))
    ctx = run.get("context") or None
    if ctx is not None and not isinstance(ctx, str):
        raise ConfigError(f"context must be a mode name, got {ctx!r}")
    return RunSpec(name, params, label=label or run.get("label"), late=bool(late), context=ctx,
                   context_opts=dict(run.get("context_opts") or {}), late_opts=dict(run.get("late_opts") or {}),
                   hybrid=hybrid, vectors=_vectors_mode(run.get("vectors", "text")),
                   **fusion_settings(run))


def fusion_settings(run: dict[str, Any]) -> dict[str, Any]:
    """Validated ``fusion``, ``rrf_k`` and ``dense_weight`` from a run mapping (defaults where absent)."""
    fusion = run.get("fusion") or "rrf"
    if fusion not in FUSION_MODES:
        raise ConfigError(f"fusion must be one of {', '.join(FUSION_MODES)}, got {fusion!r}")
    rrf_k = run.get("rrf_k", DEFAULT_RRF_K)
    if rrf_k is None:
        rrf_k = DEFAULT_RRF_K
    if isinstance(rrf_k, bool) or not isinstance(rrf_k, (int, float)) or rrf_k < 0 or int(rrf_k) != rrf_k:
        raise ConfigError(f"rrf_k must be a non-negative integer, got {rrf_k!r}")
    weight = run.get("dense_weight", DEFAULT_DENSE_WEIGHT)
    if weight is None:
        weight = DEFAULT_DENSE_WEIGHT
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= weight <= 1.0:
        raise ConfigError(f"dense_weight must be a number in [0, 1], got {weight!r}")
    return {"fusion": fusion, "rrf_k": int(rrf_k), "dense_weight": float(weight)}


def _vectors_mode(value: Any) -> str:
    if value not in VECTOR_MODES:
        raise ConfigError(f"vectors must be one of {', '.join(VECTOR_MODES)}, got {value!r}")
    return value


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


# -- embedding memo -----------------------------------------------------------------------------------


class MemoEmbedder(WrappedEmbedder):
    """An in-memory memo in front of another embedder: each distinct text goes to it at most once.

    Also keeps the wall time spent in the wrapped embedder (``seconds``), so a run can report what
    embedding cost it (close to zero when the persistent cache is warm).
    """

    #: texts per call to the wrapped embedder
    batch = 512

    def __init__(self, inner: Embedder, progress: Callable[[str], None] | None = None):
        super().__init__(inner)
        self.progress = progress
        self._memo: dict[str, np.ndarray] = {}
        self._tokens: dict[str, tuple[np.ndarray, list]] = {}
        self._token_bytes = 0
        self.seconds = 0.0
        self.requested = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        self.requested += len(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        # in batches: the persistent cache is written batch by batch (an interrupted cold run keeps what it
        # paid for) and long runs can report progress
        for a in range(0, len(missing), self.batch):
            part = missing[a:a + self.batch]
            t0 = time.perf_counter()
            vecs = self.inner.embed(part)
            self.seconds += time.perf_counter() - t0
            for t, v in zip(part, vecs):
                self._memo[t] = v
            if self.progress and len(missing) > self.batch:
                self.progress(f"embedded {min(a + self.batch, len(missing))}/{len(missing)} texts "
                              f"({self.seconds:.0f} s embedding so far)")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts]).astype(np.float32, copy=False)

    #: memory allowed for memoised token vectors (late chunking), stored as float16
    token_memo_bytes = 768 * 2**20

    def embed_tokens(self, text: str):
        """Token vectors, memoised (as float16, within :attr:`token_memo_bytes`): late chunking embeds the
        same document windows for every configuration of a grid, so a search pays for them once."""
        hit = self._tokens.get(text)
        if hit is not None:
            return hit[0].astype(np.float32), list(hit[1])
        t0 = time.perf_counter()
        try:
            vecs, spans = self.inner.embed_tokens(text)
        finally:
            self.seconds += time.perf_counter() - t0
        half = np.asarray(vecs, dtype=np.float16)
        if self._token_bytes + half.nbytes <= self.token_memo_bytes:
            self._tokens[text] = (half, list(spans))
            self._token_bytes += half.nbytes
        return half.astype(np.float32), list(spans)

    def __getattr__(self, name: str):  # anything else a back-end offers (window, batch_size...)
        if name in ("inner", "_memo", "_tokens", "progress"):
            raise AttributeError(name)
        return getattr(self.inner, name)


# -- results ------------------------------------------------------------------------------------------


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
            "config": self.spec.to_config(),
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

    def comparison(self, a: str, b: str, metric: str) -> Comparison | None:
        for c in self.comparisons:
            if c.metric == metric and c.a == a and c.b == b:
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "summary": self.dataset_summary,
            "embedder": self.embedder,
            "k": self.k,
            "count_tokenizer": self.count_tokenizer,
            "queries": self.queries,
            "seconds": round(self.seconds, 3),
            "problems": self.problems,
            "runs": [r.to_dict() for r in self.runs],
            "comparisons": [c.__dict__ for c in self.comparisons],
        }


# -- the evaluator ------------------------------------------------------------------------------------


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

    def __init__(self, dataset: Dataset, embedder: Embedder, k: int = 5, count_tokenizer: str = "cl100k",
                 n_boot: int = 1000, seed: int = 0, progress: Callable[[str], None] | None = None,
                 answer_llm: Any = None, answer_concurrency: int = 4):
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be a positive integer, got {k!r}")
        if not dataset.queries:
            raise ConfigError(f"{dataset.path}: no queries to evaluate"
                              + (f" ({len(dataset.problems)} problem(s), first: {dataset.problems[0]})"
                                 if dataset.problems else ""))
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
            self._query_vectors = self.embedder.embed([q.text for q in self.dataset.queries])
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
            import sys

            from ..strategies.many import chunk_many

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
        try:
            from ..context import contextualize
        except ImportError as exc:
            raise ConfigError(f"contextual chunk text is not available in this installation ({exc})") from None
        chunks = [Chunk(**{**c.__dict__, "context": None}) for c in chunks]  # never mutate memoised chunks
        result = contextualize(doc, chunks, spec.context, **spec.context_opts)
        return list(result) if result is not None else chunks

    def _late_vectors(self, spec: RunSpec, doc: Document, chunks: list[Chunk]) -> np.ndarray:
        try:
            from ..context import late_chunk_vectors
        except ImportError as exc:
            raise ConfigError(f"late chunking is not available in this installation ({exc})") from None
        return late_chunk_vectors(doc, chunks, self.embedder, **spec.late_opts)

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
        if not spec.hybrid and (spec.fusion != "rrf" or spec.rrf_k != DEFAULT_RRF_K
                                or spec.dense_weight != DEFAULT_DENSE_WEIGHT):
            raise ConfigError(f"{spec.name}: fusion, rrf_k and dense_weight apply to hybrid retrieval only; "
                              f"add hybrid=true (or --hybrid)")
        t_start = time.perf_counter()
        emb_n0 = self.embedder.texts_embedded
        q0 = self.embedder.seconds
        qv = self.query_vectors()
        query_s = self.embedder.seconds - q0  # non-zero on the first run only
        emb_s0 = self.embedder.seconds
        by_doc, chunk_seconds = self.chunk_all(spec)
        chunk_embed_s = self.embedder.seconds - emb_s0  # embedding done by semantic strategies
        chunks: list[Chunk] = []
        vectors: list[np.ndarray] = []
        t0 = time.perf_counter()
        for doc_id in self.doc_ids:
            doc, cs = self.dataset.documents[doc_id], by_doc[doc_id]
            if not cs:
                continue
            if spec.context:
                cs = self._contextualize(spec, doc, cs)
            if spec.late:
                vectors.append(np.asarray(self._late_vectors(spec, doc, cs), dtype=np.float32))
            chunks.extend(cs)
        if not chunks:
            raise ConfigError(f"{spec.name}: the strategy produced no chunks")
        if not spec.late:
            vectors = [self._text_or_pooled(spec, chunks)]
        embed_seconds = time.perf_counter() - t0 + chunk_embed_s + query_s
        matrix = l2_normalize(np.concatenate(vectors, axis=0))
        self.progress(f"{spec.name}: {len(chunks)} chunks, scoring {len(self.dataset.queries)} queries")
        result = self._score(spec, chunks, matrix, qv)
        result.stats.update({
            "chunk_seconds": round(chunk_seconds - chunk_embed_s, 3),
            "embed_seconds": round(embed_seconds, 3),
            "texts_embedded": self.embedder.texts_embedded - emb_n0,
            "seconds": round(time.perf_counter() - t_start, 3),
        })
        return result

    def _score(self, spec: RunSpec, chunks: list[Chunk], matrix: np.ndarray, qv: np.ndarray) -> RunResult:
        ds = self.dataset
        n_chunks = len(chunks)
        starts = np.array([c.start for c in chunks], dtype=np.int64)
        ends = np.array([c.end for c in chunks], dtype=np.int64)
        docs = [c.source for c in chunks]
        doc_index = {d: i for i, d in enumerate(self.doc_ids)}
        chunk_doc = np.array([doc_index[d] for d in docs], dtype=np.int64)
        tokens = np.array(self.token_counts(chunks), dtype=np.int64)
        chunks_by_doc: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for d in self.doc_ids:
            m = chunk_doc == doc_index[d]
            chunks_by_doc[d] = (starts[m], ends[m])

        sims = qv @ matrix.T  # (queries, chunks)
        top_n = min(n_chunks, max(max(CURVE_NS), max(SPAN_NS), self.k, M.MIN_CAP))
        if spec.hybrid and spec.fusion == "zscore":
            scores_for_docs = self._zscore_fused(spec, chunks, sims)
            order = top_indices(scores_for_docs, top_n)
        elif spec.hybrid:
            order = self._hybrid_order(chunks, sims, top_n, spec.rrf_k)
            scores_for_docs = np.zeros_like(sims)
            ranks = np.arange(order.shape[1], 0, -1, dtype=np.float32)
            np.put_along_axis(scores_for_docs, order, ranks[None, :], axis=1)
        else:
            order = top_indices(sims, top_n)
            scores_for_docs = sims
        # document ranking: a document's score is its best chunk's score
        doc_scores = np.full((len(qv), len(self.doc_ids)), -np.inf, dtype=np.float32)
        for j in range(len(self.doc_ids)):
            m = chunk_doc == j
            if m.any():
                doc_scores[:, j] = scores_for_docs[:, m].max(axis=1)
        doc_rank = np.argsort(-doc_scores, axis=1, kind="stable")

        ns = sorted(set(SPAN_NS) | {self.k})
        cutoffs: list[int | str] = [*ns, "min"]
        names: list[str] = []
        for n in cutoffs:
            for m in ("recall", "precision", "iou", "recall_set", "precision_set", "iou_set"):
                names.append(f"{m}@{n}")
        names += ["precision_omega", "precision_omega_set", "min_n", f"doc_recall@{self.k}", "ndcg@10", "mrr",
                  f"tokens_retrieved@{self.k}"]
        per_query = {name: np.zeros(len(ds.queries)) for name in names}
        curve_acc = {n: np.zeros(3) for n in CURVE_NS}

        for qi, q in enumerate(ds.queries):
            refs = [(r.doc, r.start, r.end) for r in q.references]
            ranked = order[qi]
            retrieved = [(docs[i], int(starts[i]), int(ends[i])) for i in ranked]
            omega, count = M.chroma_precision_omega(refs, chunks_by_doc)
            omega_set, count_set = M.set_precision_omega(refs, chunks_by_doc)
            per_query["precision_omega"][qi] = omega
            per_query["precision_omega_set"][qi] = omega_set
            per_query["min_n"][qi] = min(count, M.MIN_CAP)
            for n in cutoffs:
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
            ranked_docs = [self.doc_ids[j] for j in doc_rank[qi]]
            per_query[f"doc_recall@{self.k}"][qi] = M.doc_recall_at_k(ranked_docs, q.docs, self.k)
            per_query["ndcg@10"][qi] = M.ndcg_at_k(ranked_docs, q.docs, 10)
            per_query["mrr"][qi] = M.reciprocal_rank(ranked_docs, q.docs)
            per_query[f"tokens_retrieved@{self.k}"][qi] = float(tokens[ranked[: self.k]].sum())
            for n in CURVE_NS:
                if n > len(retrieved):
                    continue
                iou, rec, _ = M.chroma_span_scores(refs, retrieved[:n])
                curve_acc[n] += (float(tokens[ranked[:n]].sum()), rec, iou)

        if self.answer_llm is not None:
            from .answers import answer_scores

            per_query.update(answer_scores(self.answer_llm, ds.queries, chunks, order, self.k,
                                           self.answer_concurrency, self.progress))
        nq = len(ds.queries)
        curve: dict[int, tuple[float, float, float]] = {}
        for n, acc in curve_acc.items():
            if n <= len(order[0]):
                tok, rec, iou = (float(x) for x in acc / nq)
                curve[n] = (tok, rec, iou)
        scores = {name: float(v.mean()) for name, v in per_query.items()}
        tok_list = tokens.tolist()
        stats = {
            "chunks": n_chunks,
            "tokens_per_chunk_mean": round(float(np.mean(tok_list)), 2),
            "tokens_per_chunk_median": float(statistics.median(tok_list)),
            "tokens_per_chunk_max": int(max(tok_list)),
            f"tokens_retrieved@{self.k}": round(scores[f"tokens_retrieved@{self.k}"], 1),
            "count_tokenizer": self.count_tokenizer.name,
        }
        # per corpus (Chroma's corpora_scores): queries grouped by the document of their first reference
        groups: dict[str, list[int]] = {}
        for qi, q in enumerate(ds.queries):
            groups.setdefault(q.references[0].doc, []).append(qi)
        if len(groups) > 1:
            stats["by_document"] = {
                d: {"queries": len(ix), **{m: round(float(per_query[m][ix].mean()), 6)
                                           for m in ("recall@5", "iou@5", "precision@5", "recall_set@5", "iou_set@5")}}
                for d, ix in groups.items()
            }
        result = RunResult(spec, per_query, scores, stats, tok_list, curve)
        if ds.boundaries:
            result.boundary_scores = self._boundary_scores(chunks)
            if result.boundary_scores:
                for m in ("pk", "window_diff"):
                    vals = [v[m] for v in result.boundary_scores.values()]
                    result.scores[m] = float(np.mean(vals))
        return result

    @staticmethod
    def _bm25(chunks: list[Chunk]):
        """A ``bm25s`` index over the chunks' ``embed_text`` (English stop words, k1 = 1.5, b = 0.75)."""
        try:
            import bm25s
        except ImportError:
            raise ConfigError("hybrid evaluation needs the bm25s package (pip install bm25s)") from None
        retriever = bm25s.BM25(k1=1.5, b=0.75)
        retriever.index(bm25s.tokenize([c.embed_text for c in chunks], stopwords="en", show_progress=False),
                        show_progress=False)
        return retriever

    def _bm25_scores(self, chunks: list[Chunk]) -> np.ndarray:
        """BM25 score of every chunk for every query, shape (queries, chunks); 0 where no term matches."""
        retriever = self._bm25(chunks)
        import bm25s

        out = np.zeros((len(self.dataset.queries), len(chunks)), dtype=np.float32)
        for qi, q in enumerate(self.dataset.queries):
            toks = bm25s.tokenize([q.text], stopwords="en", show_progress=False, return_ids=False)
            if not toks or not toks[0]:
                continue
            try:
                ids, scores = retriever.retrieve(toks, k=len(chunks), show_progress=False)
            except (ValueError, KeyError):  # no query token in the vocabulary
                continue
            out[qi, ids[0]] = scores[0]
        return out

    def _zscore_fused(self, spec: RunSpec, chunks: list[Chunk], sims: np.ndarray) -> np.ndarray:
        """``fusion=zscore``: per query, the dense similarities and the BM25 scores of *all* chunks are each
        z-normalised (mean 0, standard deviation 1; a constant row becomes 0), then combined as
        ``dense_weight * dense + (1 - dense_weight) * bm25``. Unlike RRF it keeps how far apart the scores
        are, so a chunk far ahead in one ranking is not pulled level with the runner-up."""
        return fuse_zscore(sims, self._bm25_scores(chunks), spec.dense_weight)

    def _hybrid_order(self, chunks: list[Chunk], sims: np.ndarray, top_n: int,
                      rrf_k: int = DEFAULT_RRF_K) -> np.ndarray:
        """Top chunks by reciprocal rank fusion (constant ``rrf_k``) of the dense ranking and BM25 over
        ``embed_text`` (what the index's ``hybrid=True`` search does), each ranking cut at
        :data:`HYBRID_CANDIDATES`."""
        n_chunks = len(chunks)
        cand = min(n_chunks, max(HYBRID_CANDIDATES, top_n))
        dense = top_indices(sims, cand)
        retriever = self._bm25(chunks)
        import bm25s
        order = np.zeros((len(sims), top_n), dtype=np.int64)
        for qi, q in enumerate(self.dataset.queries):
            bm25_ranking: list[int] = []
            toks = bm25s.tokenize([q.text], stopwords="en", show_progress=False, return_ids=False)
            if toks and toks[0]:
                try:
                    ids, scores = retriever.retrieve(toks, k=cand, show_progress=False)
                except (ValueError, KeyError):  # no query token in the vocabulary
                    ids, scores = np.zeros((1, 0), dtype=np.int64), np.zeros((1, 0))
                bm25_ranking = [int(i) for i, sc in zip(ids[0].tolist(), scores[0].tolist()) if sc > 0]
            fused = dict(reciprocal_rank_fusion([dense[qi].tolist(), bm25_ranking], k=rrf_k))
            best = list(fused)[:top_n]
            if len(best) < top_n:  # pad with the next dense hits (only when BM25 and dense agree a lot)
                rest = [i for i in top_indices(sims[qi:qi + 1], min(n_chunks, 2 * top_n + cand))[0].tolist()
                        if i not in fused]
                best += rest[: top_n - len(best)]
            order[qi] = best
        return order

    def _boundary_scores(self, chunks: list[Chunk]) -> dict[str, dict[str, float]]:
        from .boundaries import boundaries_from_offsets, pk, window_diff

        out: dict[str, dict[str, float]] = {}
        for doc_id, gold in self.dataset.boundaries.items():
            units = gold.units
            if units is None:
                try:
                    from ..segmentation.sentences import split_sentences
                except ImportError as exc:
                    raise ConfigError(f"boundaries.jsonl gives no units for {doc_id!r} and the sentence "
                                      f"splitter is not available ({exc})") from None
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
            for b in results[i + 1:]:
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
        )


def evaluate(dataset: Dataset | str, specs: Sequence[RunSpec | str], embedder: Embedder | str | None = None,
             k: int = 5, **kw: Any) -> EvaluationReport:
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


__all__ = ["RunSpec", "RunResult", "EvaluationReport", "Comparison", "Evaluator", "MemoEmbedder", "evaluate",
           "parse_run_spec", "spec_from_params", "fusion_settings", "fuse_zscore", "zscore", "FUSION_MODES",
           "split_top_level", "top_indices", "CURVE_NS", "SPAN_NS", "VECTOR_MODES"]
