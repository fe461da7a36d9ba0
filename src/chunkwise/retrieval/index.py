"""The main job end to end: load → chunk → (context) → embed → store in Milvus → search.

:class:`Index` is the Python API behind ``chunkwise index`` and ``chunkwise search``::

    from chunkwise import Index
    with Index(db="./chunkwise.db") as index:          # or Index(uri="http://host:19530", token=...)
        report = index.add(["docs/"], strategy="recursive", params={"max_tokens": 256})
        for hit in index.search("how do I reset the lamp?", k=5):   # BM25 + vectors; hybrid=False: vectors
            print(hit.rank, hit.score, hit.source, hit.page_start, hit.text)

What it guarantees (details in :mod:`chunkwise.store.milvus`):

- **Incremental**: a document whose content hash is recorded is skipped (nothing chunked or embedded).
- **Crash-safe**: a document is replaced by *unmark → upsert new chunks → delete stale chunks → mark*;
  a run killed at any moment and run again ends with exactly the chunks of a clean run.
- **One configuration per collection**: the embedder, chunking strategy and parameters, vector mode, late
  chunking and context mode are recorded when the collection is created; a run with a different one is
  refused (use another ``collection`` or ``recreate=True``) instead of silently mixing vector spaces.
- **Nothing embedded twice**: ``vectors="pool"`` reuses the sentence vectors a semantic strategy computed
  while chunking (mean-pooled, re-normalised); otherwise each chunk's ``embed_text`` is embedded once, in
  batches, through the embedder's persistent cache.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..deprecation import renamed
from ..document import CHUNK_FIELDS, Chunk, Document
from ..embeddings.base import Embedder
from ..embeddings.language import LanguageCheck
from ..embeddings.vectors import query_vectors
from ..errors import ChunkwiseError, ConfigError, InputError
from ..formats.walk import UnreadableFolder
from ..pipeline.config import DEFAULT_FUSION, DEFAULT_HYBRID, LATE_OPTIONS, RRF_K, SETTINGS, VECTOR_MODES
from ..store.base import Hit, Marker, Store
from ..store.milvus import DEFAULT_COLLECTION, SCHEMA_VERSION, MilvusStore
from ..store.rows import jsonable
from ..strategies import DEFAULT_STRATEGY, Strategy
from ..strategies.factory import make_strategy
from ..strategies.many import chunk_documents
from ..video.document import VideoDocument, unchanged_video
from .fusion import DENSE_WEIGHT, ZSCORE_DEPTH, check_fusion, fuse_candidates_zscore, reciprocal_rank_fusion
from .ingest import EMBED_BATCH as EMBED_BATCH  # re-exported: its old home
from .ingest import check_sizes, embed_documents, finish_chunks, is_unchanged, write_documents
from .progress import Progress

#: chunks gathered (over several small documents) before one embedding + write round
DEFAULT_BATCH = 256


#: the chunk's fields a result answers for itself (``hit.text``, ``hit.page_start``...): the chunk schema
#: (:data:`~chunkwise.document.CHUNK_FIELDS`) less ``index``, which a result names ``chunk_index``
_CHUNK_ATTRS = tuple(name for name in CHUNK_FIELDS if name != "index")
#: what :meth:`SearchResult.to_dict` writes, in order: rank and score, every chunk field, then the row's
#: metadata and where each retriever ranked the hit
RESULT_FIELDS = (
    "rank",
    "score",
    *("chunk_index" if name == "index" else name for name in CHUNK_FIELDS),
    "metadata",
    "vector_rank",
    "bm25_rank",
)


@dataclass
class SearchResult:
    """One retrieved :class:`~chunkwise.document.Chunk`. ``score`` is the cosine similarity, or the fusion
    score with ``hybrid=True`` (then ``vector_rank``/``bm25_rank`` say where each retriever placed it,
    ``None`` = not in its list). The chunk's fields read through: ``hit.text``, ``hit.page_start``,
    ``hit.chunk_index`` (the chunk's ``index``)..."""

    rank: int
    score: float
    chunk: Chunk
    metadata: dict[str, Any] = field(default_factory=dict)
    vector_rank: int | None = None
    bm25_rank: int | None = None

    @classmethod
    def from_hit(cls, rank: int, score: float, hit: Hit, **extra: Any) -> SearchResult:
        assert hit.chunk is not None, "results are made from full hits, never from an ids_only search"
        return cls(rank=rank, score=float(score), chunk=hit.chunk, metadata=dict(hit.metadata), **extra)

    @property
    def chunk_index(self) -> int:
        return self.chunk.index

    def __getattr__(self, name: str) -> Any:
        if name in _CHUNK_ATTRS and "chunk" in self.__dict__:
            return getattr(self.__dict__["chunk"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_dict(self) -> dict[str, Any]:
        chunk = self.chunk.to_dict()
        chunk["chunk_index"] = chunk.pop("index")
        extra = {
            "rank": self.rank,
            "score": self.score,
            "metadata": dict(self.metadata),
            "vector_rank": self.vector_rank,
            "bm25_rank": self.bm25_rank,
        }
        return {name: extra[name] if name in extra else chunk[name] for name in RESULT_FIELDS}


@dataclass
class IndexReport:
    """What one :meth:`Index.add` did. ``timings`` splits ``seconds`` into setup (connecting, creating or
    checking the collection, reading the document list), load, chunk, context, embed and write (the rest
    is pruning and the final count)."""

    documents: int = 0
    indexed: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    removed: int = 0
    pruned: int = 0
    total_chunks: int = 0
    seconds: float = 0.0
    #: ``(source, message)``: documents indexed with a problem (undecodable bytes, failed llm context...)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    #: documents written without everything asked for (e.g. failed llm context); retried by the next run
    incomplete: int = 0
    timings: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("setup", "load", "chunk", "context", "embed", "write"), 0.0)
    )
    #: one-line notes for the user (e.g. the server has no BM25, so hybrid search runs client-side)
    notes: list[str] = field(default_factory=list)
    #: one line when documents look like a language the embedder does not read (embeddings.language)
    language_warning: str | None = None

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        parts = [
            f"{self.documents} documents ({self.indexed} indexed, {self.skipped} unchanged and skipped), "
            f"{len(self.failed)} failed"
        ]
        if self.pruned:
            parts.append(f"{self.pruned} pruned")
        if self.incomplete:
            parts.append(f"{self.incomplete} incomplete (retried next run)")
        parts.append(
            f"{self.chunks} chunks written ({self.embedded} embedded, {self.reused} pooled), "
            f"{self.removed} stale removed"
        )
        parts.append(f"{self.seconds:.1f} s, {self.chunks_per_second:.1f} chunks/s")
        parts.append(f"collection holds {self.total_chunks} chunks")
        return "; ".join(parts)


def _printable(value: Any) -> Any:
    if hasattr(value, "model_id"):
        return value.model_id
    if hasattr(value, "name") and not isinstance(value, (str, int, float, bool)):
        return value.name
    return jsonable(value)


#: the progress of one run (bars on a terminal, heartbeat lines elsewhere; retrieval/progress.py)
_Progress = Progress


def _check_languages(items, languages: LanguageCheck):
    """``items`` as they are, each document's language checked before it goes on to be chunked and
    embedded (a video's clip text is not prose)."""
    for source, doc in items:
        if isinstance(doc, Document) and not isinstance(doc, VideoDocument):
            languages.add(doc.text, str(source))
        yield source, doc


def _reuses(strategy: Strategy, embedder: Embedder, vectors: str) -> bool:
    """``vectors="pool"`` pools the sentence vectors chunking computed only when they are the index's
    embedder's (a strategy with another embedder lives in another vector space)."""
    return vectors == "pool" and getattr(getattr(strategy, "embedder", None), "model_id", None) == embedder.model_id


@dataclass
class AddSettings:
    """The settled configuration of one :meth:`Index.add` (:meth:`Index.prepare_add`): the strategy and
    embedder to run, the context mode (``None`` for none) and its options, late chunking and its options,
    and whether chunk vectors are pooled from chunking's sentence vectors (``reuse``)."""

    strategy: Strategy
    embedder: Embedder
    context: str | None
    context_options: dict[str, Any]
    late: bool
    late_options: dict[str, Any]
    reuse: bool


@dataclass
class _Run:
    """The state of one :meth:`Index.add` call, shared by its steps."""

    report: IndexReport
    markers: dict[str, Marker]
    embedder: Embedder
    late: bool
    late_options: dict[str, Any]
    context: str | None
    context_options: dict[str, Any]
    batch_size: int
    bars: _Progress
    languages: LanguageCheck
    reuse: bool
    seen: set[str] = field(default_factory=set)
    walked: set[str] = field(default_factory=set)  # every source met, read or not (never pruned)
    unreadable: list[str] = field(default_factory=list)  # folders not listed (nothing under them is pruned)
    incomplete: set[str] = field(default_factory=set)


class Index:
    """A chunk index in Milvus: :meth:`add` documents, :meth:`search` them, :meth:`delete` them.

    ``db``: Milvus Lite directory (default ``./chunkwise.db``); ``uri``/``token``: a Milvus server instead.
    ``embedder``: an :class:`~chunkwise.embeddings.base.Embedder`, a name for
    :func:`chunkwise.embeddings.get_embedder`, or ``None`` for the one the collection was built with
    (``$CHUNKWISE_EMBEDDER`` or ``minilm`` for a new collection). ``cache``, ``cache_dir`` and
    ``embedder_options`` (e.g. ``{"base_url": ...}``) go to ``get_embedder``. ``timeout`` (seconds) bounds
    connecting to a server and each Milvus call. ``store``: any :class:`~chunkwise.store.base.Store`
    instead of Milvus (then ``db``/``uri``/``token``/``collection``/``timeout`` are not used).
    """

    def __init__(
        self,
        db: str | os.PathLike | None = None,
        *,
        uri: str | None = None,
        token: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        embedder: Embedder | str | None = None,
        cache: bool = True,
        cache_dir: str | os.PathLike | None = None,
        embedder_options: dict[str, Any] | None = None,
        timeout: float = 10.0,
        store: Store | None = None,
    ):
        self.store: Store = (
            store
            if store is not None
            else MilvusStore(db=db, uri=uri, token=token, collection=collection, timeout=timeout)
        )
        self._embedder_arg = embedder
        self._embedder: Embedder | None = embedder if isinstance(embedder, Embedder) else None
        self._owns_embedder = False
        self._cache = cache
        self._cache_dir = cache_dir
        self._embedder_options = dict(embedder_options or {})

    # -- lifecycle -------------------------------------------------------------------------------------
    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Release the database (Milvus Lite allows one process at a time) and an embedder made here."""
        self.store.close()
        if self._owns_embedder and self._embedder is not None:
            close = getattr(self._embedder, "close", None)
            if close:
                close()
            self._embedder = None

    @property
    def config(self) -> dict[str, Any] | None:
        """The configuration recorded in the collection, or ``None`` when it does not exist yet."""
        return None if self.store.missing else self.store.read_config()

    # -- embedder --------------------------------------------------------------------------------------
    def _embedder_name(self) -> str | None:
        if isinstance(self._embedder_arg, str):
            return self._embedder_arg
        if self._embedder is not None:
            return getattr(self._embedder, "name", None) or self._embedder.model_id
        return None

    def embedder(self, config: dict[str, Any] | None = None) -> Embedder:
        """The embedder: the one given, else the one the collection records, else ``minilm``."""
        if self._embedder is None:
            from ..embeddings import get_embedder

            name = self._embedder_arg
            assert not isinstance(name, Embedder), "an Embedder given to __init__ is kept in self._embedder"
            options = dict(self._embedder_options)
            if name is None and config:
                from ..embeddings import split_name

                # as recorded (a name from before back-ends were chosen apart, minilm-torch, without a warning)
                name, backend = split_name(config["embedder"].get("name"), config["embedder"].get("backend"))
                if backend is not None:
                    options.setdefault("backend", backend)
            self._embedder = get_embedder(name, cache=self._cache, cache_dir=self._cache_dir, **options)
            self._owns_embedder = True
        if config:
            rec = config["embedder"]
            emb = self._embedder
            if emb.model_id != rec.get("model_id") or int(emb.dim) != int(rec.get("dim", emb.dim)):
                raise ConfigError(
                    f"collection {self.store.collection!r} was built with embedder {rec.get('model_id')!r} "
                    f"(dim {rec.get('dim')}), not {emb.model_id!r} (dim {emb.dim}); search it with "
                    f"--embedder {rec.get('name')}"
                    + (f" --embedder-backend {rec['backend']}" if rec.get("backend") else "")
                    + " or use another --collection",
                    source=self.store.location,
                )
        return self._embedder

    # -- configuration ---------------------------------------------------------------------------------
    def _build_config(
        self,
        strategy: Strategy,
        embedder: Embedder,
        vectors: str,
        late: bool,
        late_options: dict,
        context: str | None,
        context_options: dict,
    ) -> dict[str, Any]:
        ctx_opts = {
            k: _printable(v)
            for k, v in sorted(context_options.items())
            if v is not None
            and k
            not in (
                "api_key",
                "base_url",
                "cache",
                "cache_dir",
                "contextualizer",
                "concurrency",
                "timeout",
                "retries",
                "backoff",
            )
        }
        return {
            "schema": SCHEMA_VERSION,
            "embedder": {
                "name": self._embedder_name() or embedder.model_id,
                "model_id": embedder.model_id,
                "dim": int(embedder.dim),
                **({"backend": self._embedder_options["backend"]} if self._embedder_options.get("backend") else {}),
            },
            "strategy": {
                "name": strategy.name,
                "config": strategy.config_id(),
                "params": {k: _printable(v) for k, v in strategy.get_params().items()},
            },
            "vectors": vectors,
            "late": bool(late),
            "late_options": {k: v for k, v in sorted(late_options.items()) if v is not None} if late else {},
            "context": context,
            "context_options": ctx_opts if context else {},
            "bm25": None,
        }

    @staticmethod
    def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
        diffs = []
        if old.get("schema") != new["schema"]:
            diffs.append(f"schema version {old.get('schema')} (this chunkwise writes {new['schema']})")
        if (old["embedder"].get("model_id"), old["embedder"].get("dim")) != (
            new["embedder"]["model_id"],
            new["embedder"]["dim"],
        ):
            diffs.append(f"embedder {old['embedder'].get('model_id')!r} (now {new['embedder']['model_id']!r})")
        if old["strategy"].get("config") != new["strategy"]["config"]:
            changed = sorted(
                k
                for k in set(old["strategy"].get("params", {})) | set(new["strategy"]["params"])
                if old["strategy"].get("params", {}).get(k) != new["strategy"]["params"].get(k)
            )
            what = f"strategy {old['strategy'].get('name')!r}"
            if old["strategy"].get("name") == new["strategy"]["name"] and changed:
                what += " with " + ", ".join(
                    f"{k}={old['strategy']['params'].get(k)!r} (now {new['strategy']['params'].get(k)!r})"
                    for k in changed
                )
            else:
                what += f" (now {new['strategy']['name']!r})"
            diffs.append(what)
        # recorded before the renames (late chunking's window, the llm context's max_tokens): the same thing
        for key, was, now in (
            ("late_options", "window", "late_window"),
            ("context_options", "max_tokens", "answer_tokens"),
        ):
            if was in (old.get(key) or {}):
                opts = dict(old[key])
                opts[now] = opts.pop(was)
                old = {**old, key: dict(sorted(opts.items()))}
        for key in ("vectors", "late", "late_options", "context", "context_options"):
            if old.get(key) != new[key]:
                diffs.append(f"{key}={old.get(key)!r} (now {new[key]!r})")
        return diffs

    def _prepare(
        self,
        strategy: str | Strategy,
        params: dict | None,
        vectors: str,
        late: bool,
        late_options: dict,
        context: str | None,
        context_options: dict,
        recreate: bool,
    ):
        """Check everything and create or verify the collection before a single row is written."""
        if vectors not in VECTOR_MODES:
            raise ConfigError(f"vectors must be one of {', '.join(VECTOR_MODES)}, got {vectors!r}")
        if context is not None and context != "none":
            from ..context import CONTEXT_MODES

            if context not in CONTEXT_MODES:
                raise ConfigError(f"unknown context mode {context!r}; choose one of {', '.join(CONTEXT_MODES)}")
            if context != "llm":  # check the options now, not at the first document
                from ..context import contextualize

                contextualize(Document(""), [], context, **context_options)
        else:
            context = None
        unknown = sorted(set(late_options) - set(LATE_OPTIONS))
        if unknown:
            raise ConfigError(f"late chunking has no option {', '.join(unknown)}; valid: {', '.join(LATE_OPTIONS)}")
        config = None if recreate else self.store.read_config()
        embedder = self.embedder(config)
        if isinstance(strategy, Strategy):
            if params:
                raise ConfigError("give strategy parameters either in the strategy object or in params, not both")
            strat = strategy
        else:
            strat = make_strategy(strategy, params, embedder)
        strat.validate()
        new = self._build_config(strat, embedder, vectors, late, late_options, context, context_options)
        if config is not None:
            diffs = self._differences(config, new)
            if diffs:
                raise ConfigError(
                    f"collection {self.store.collection!r} was built with "
                    + "; ".join(diffs)
                    + ": use another --collection, or --recreate to rebuild it",
                    source=self.store.location,
                )
            self.store.open()
        else:
            self.store.create(new, embedder.dim, replace=recreate)  # create-if-absent, atomic on the server
        return strat, embedder, context

    def prepare_add(
        self,
        strategy: str | Strategy = DEFAULT_STRATEGY,
        params: dict[str, Any] | None = None,
        *,
        vectors: str = "text",
        late: bool = False,
        late_options: dict[str, Any] | None = None,
        context: str | None = None,
        context_options: dict[str, Any] | None = None,
        recreate: bool = False,
    ) -> AddSettings:
        """What :meth:`add` settles before the first document: every option checked, the collection created
        or its recorded configuration verified, the strategy and embedder made. Another engine (the Ray
        engine) calls it so that it runs exactly the configuration the local engine would."""
        late_options = renamed(dict(late_options or {}), {"window": "late_window"}, "late_options")
        context_options = dict(context_options or {})
        if context == "llm":
            context_options = renamed(context_options, {"max_tokens": "answer_tokens"}, "context_options")
        strat, embedder, context = self._prepare(
            strategy, params, vectors, late, late_options, context, context_options, recreate
        )
        return AddSettings(
            strat,
            embedder,
            context,
            context_options,
            late,
            late_options if late else {},
            _reuses(strat, embedder, vectors),
        )

    # -- adding documents ------------------------------------------------------------------------------
    @staticmethod
    def _inputs(inputs: Any) -> tuple[list[Document], list[str]]:
        """Documents and paths, checked before anything is written."""
        if isinstance(inputs, (str, os.PathLike, Document)):
            inputs = [inputs]
        paths: list[str] = []
        docs: list[Document] = []
        try:
            items = list(inputs)
        except TypeError:
            raise InputError(f"expected paths or Documents, got {type(inputs).__name__}") from None
        for item in items:
            if isinstance(item, Document):
                docs.append(item)
            elif isinstance(item, (str, os.PathLike)):
                paths.append(os.fspath(item))
            else:
                raise InputError(f"expected paths or Documents, got {type(item).__name__}")
        return docs, paths

    @staticmethod
    def _iter_inputs(
        docs: list[Document],
        found: list,
        load_options: dict[str, Any] | None = None,
        markers: dict[str, Marker] | None = None,
    ) -> Iterator[tuple[str, Document | ChunkwiseError]]:
        yield from ((d.source, d) for d in docs)
        if found:
            from ..formats import read_inputs

            for item in found:  # an unchanged video is known by its file hash, before any decoding
                stub = unchanged_video(item.path, markers) if markers and item.error is None and item.path else None
                yield from [(item.source, stub)] if stub is not None else read_inputs([item], **(load_options or {}))

    @staticmethod
    def _sizes(docs: list[Document], found: list) -> dict[str, int]:
        """Bytes of each input (source -> size), for the progress estimate; 0 where unknown."""
        sizes = {d.source: len(d.text) for d in docs}
        for item in found:
            if item.path and item.path != "-":
                try:
                    sizes[item.source] = os.stat(item.path).st_size
                except OSError:
                    sizes[item.source] = 0
        return sizes

    def add(
        self,
        inputs: Any,
        strategy: str | Strategy = DEFAULT_STRATEGY,
        *,
        params: dict[str, Any] | None = None,
        vectors: str = "text",
        late: bool = False,
        late_options: dict[str, Any] | None = None,
        context: str | None = None,
        context_options: dict[str, Any] | None = None,
        prune: bool = False,
        include: list[str] | None = None,
        exclude: list[str] | None = None,
        all_files: bool = False,
        load_options: dict[str, Any] | None = None,
        batch_size: int = DEFAULT_BATCH,
        recreate: bool = False,
        progress: bool = False,
        notify: Callable[[str], None] | None = None,
    ) -> IndexReport:
        """Index files, folders or :class:`Document` objects; returns an :class:`IndexReport`.

        ``strategy``/``params``: the chunker (a name and its parameters, or a strategy object).
        ``vectors="pool"``: chunk vectors mean-pooled from the sentence vectors a semantic strategy already
        computed (no second embedding pass); ``"text"`` (default) embeds each chunk's ``embed_text``.
        ``late=True``: late-chunked vectors (:func:`chunkwise.context.late_chunk_vectors`, options
        ``late_window``/``overlap``/``macro`` in ``late_options``; ``window`` is the deprecated old name of
        ``late_window``). ``context``: ``headings``/``neighbors``/``llm`` fills
        ``Chunk.context`` (:func:`chunkwise.context.contextualize` with ``context_options``), embedded and
        BM25-indexed with the text. ``prune=True``: remove documents whose source files no longer exist.
        ``load_options``: keyword options of :func:`chunkwise.formats.load` for the files (``password``,
        ``encoding``, ``format``, ``html_mode``, ``clean``..., as ``chunkwise chunk`` takes them).
        Unreadable inputs are reported in ``report.failed`` and the others are still indexed.

        Folders give their files of supported types (``include``/``exclude`` globs narrow the walk, an
        ``include`` naming an extension such as ``*.svg`` widens it, ``all_files=True`` reads every file;
        see :func:`chunkwise.formats.list_inputs`); the files left out are said in one
        :class:`~chunkwise.formats.SkippedFilesWarning` before anything is read. ``progress``: bars on a
        terminal, heartbeat lines elsewhere (:mod:`chunkwise.retrieval.progress`). ``notify(line)`` is
        called as soon as a document looks like a language the embedder does not read, before it is
        embedded (``report.language_warning`` has the run's totals).
        """
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        t0 = time.perf_counter()
        late_options = renamed(dict(late_options or {}), {"window": "late_window"}, "late_options")
        context_options = dict(context_options or {})
        if context == "llm":
            context_options = renamed(context_options, {"max_tokens": "answer_tokens"}, "context_options")
        report = IndexReport()
        docs, paths = self._inputs(inputs)
        if paths:
            from ..formats import collect_inputs

            found = collect_inputs(paths, include, exclude, all_files=all_files)  # listed before any read
        else:
            found = []
        contextualizer = None
        if context == "llm" and "contextualizer" not in context_options:
            # made first so a bad LLM configuration fails before the collection is touched
            from ..context.llm import LLMContextualizer

            contextualizer = LLMContextualizer(**{k: v for k, v in context_options.items() if v is not None})
        try:
            strat, embedder, context = self._prepare(
                strategy, params, vectors, late, late_options, context, context_options, recreate
            )
            markers = self.store.markers()
            note = self.store.hybrid_note
            report.notes.extend([note] if note else [])
        except BaseException:
            if contextualizer is not None:
                contextualizer.close()
            raise
        if contextualizer is not None:
            context_options = {"contextualizer": contextualizer}
        report.timings["setup"] = time.perf_counter() - t0
        run = _Run(
            report=report,
            markers=markers,
            embedder=embedder,
            late=late,
            late_options=late_options,
            context=context,
            context_options=context_options,
            batch_size=batch_size,
            bars=_Progress(progress, "indexing"),
            languages=LanguageCheck(embedder, notify=notify),
            reuse=_reuses(strat, embedder, vectors),
        )
        try:
            run.bars.set_totals(len(docs) + len(found), self._sizes(docs, found))
            items = self._changed(
                self._iter_inputs(docs, found, load_options, markers),
                markers,
                run.seen,
                report,
                run.bars,
                run.walked,
                run.unreadable,
            )
            # semantic strategies embed the sentences of a whole group of documents in one stream; the
            # language of each document is checked as it arrives, before any of it is embedded
            items = _check_languages(items, run.languages)
            self._ingest(chunk_documents(strat, items, progress=run.bars.enabled), run)
            if prune:
                report.pruned = self._prune(markers, run.seen, run.walked, run.unreadable)
            if report.chunks or report.removed or report.pruned:
                t = time.perf_counter()
                self.store.flush()
                report.timings["write"] += time.perf_counter() - t
        finally:
            run.bars.close()
            if contextualizer is not None:
                contextualizer.close()
        report.language_warning = run.languages.final_message()
        report.total_chunks = self.store.count()
        report.seconds = time.perf_counter() - t0
        return report

    def _ingest(self, stream, run: _Run) -> None:
        """Take ``(source, document, chunks)`` from the chunking stream, finish each document's chunks
        (context, size checks) and write them in batches of about ``batch_size`` chunks."""
        report = run.report
        pending: list[tuple[Document, list[Chunk]]] = []
        while True:
            t, loaded = time.perf_counter(), report.timings["load"]
            try:
                _source, doc, chunks = next(stream)
            except StopIteration:
                break
            finally:  # chunking time is the wait for the stream minus the loading inside it
                report.timings["chunk"] += time.perf_counter() - t - (report.timings["load"] - loaded)
            try:
                chunks, complete = self._finish_chunks(doc, chunks, run)
            except InputError as exc:
                report.failed.append((doc.source, exc.problem))
                continue
            if not complete:
                report.incomplete += 1
                run.incomplete.add(doc.id)
            run.bars.update("chunks", "chunk", len(chunks))
            pending.append((doc, chunks))
            if sum(len(c) for _, c in pending) >= run.batch_size:
                self._flush_run(pending, run)
                pending = []
        if pending:
            self._flush_run(pending, run)

    def _finish_chunks(self, doc: Document, chunks, run: _Run) -> tuple[list[Chunk], bool]:
        """A document's final chunks and whether they are complete (an LLM context may fail for some)."""
        done = finish_chunks(doc, chunks, run.context, run.context_options)
        run.report.timings["context"] += done.context_seconds
        run.report.warnings.extend((doc.source, w) for w in done.warnings)
        return done.chunks, done.complete

    def _flush_run(self, pending: list[tuple[Document, list[Chunk]]], run: _Run) -> None:
        self._flush(
            pending,
            run.markers,
            run.embedder,
            run.reuse,
            run.late,
            run.late_options,
            run.report,
            run.bars,
            run.incomplete,
        )

    def _changed(
        self,
        items,
        markers: dict[str, Marker],
        seen: set[str],
        report: IndexReport,
        bars: _Progress,
        walked: set[str],
        unreadable: list[str],
    ):
        """``(source, document)`` for every input that needs chunking: failed loads go to the report (and
        every source met, read or not, to ``walked``; folders that could not be listed to ``unreadable``:
        ``--prune`` never removes what it could not read), a file named twice is dropped, a document whose
        content hash is already indexed *completely* is skipped (an incomplete one is redone)."""
        while True:
            t = time.perf_counter()
            try:
                source, doc = next(items)
            except StopIteration:
                return
            finally:
                report.timings["load"] += time.perf_counter() - t
            bars.file_done(str(source))
            walked.add(str(source))
            if isinstance(doc, UnreadableFolder):
                unreadable.append(doc.path)
            if isinstance(doc, ChunkwiseError) or not isinstance(doc, Document):
                report.failed.append((str(source), getattr(doc, "problem", str(doc))))
                continue
            if doc.id in seen:  # the same file named twice
                continue
            seen.add(doc.id)
            report.documents += 1
            if is_unchanged(doc, markers):
                report.skipped += 1
                continue
            report.warnings.extend((doc.source, str(w)) for w in doc.metadata.get("warnings", []))
            yield source, doc

    @staticmethod
    def _check_sizes(doc: Document, chunks: list[Chunk]) -> None:
        check_sizes(doc, chunks)

    def _flush(
        self,
        pending,
        markers: dict[str, Marker],
        embedder: Embedder,
        reuse: bool,
        late: bool,
        late_options: dict,
        report: IndexReport,
        bars: _Progress,
        incomplete: AbstractSet[str] = frozenset(),
    ) -> None:
        """Embed and write a batch of documents with the unmark → upsert → delete stale → mark protocol."""
        t = time.perf_counter()
        vectors, embedded, reused = embed_documents(
            pending, embedder, reuse, late, late_options, on_embedded=lambda n: bars.update("embedding", "chunk", n)
        )
        report.embedded += embedded
        report.reused += reused
        report.timings["embed"] += time.perf_counter() - t
        self._write(pending, vectors, markers, embedder.model_id, report, bars, incomplete)

    def _write(
        self,
        pending,
        vectors: list[np.ndarray],
        markers: dict[str, Marker],
        model_id: str,
        report: IndexReport,
        bars: _Progress,
        incomplete: AbstractSet[str] = frozenset(),
    ) -> None:
        """Write embedded documents (:func:`~chunkwise.retrieval.ingest.write_documents`) and count them."""
        t = time.perf_counter()
        done = write_documents(self.store, pending, vectors, markers, model_id, incomplete)
        report.removed += done.removed
        report.timings["write"] += time.perf_counter() - t
        report.indexed += len(pending)
        report.chunks += len(done.written)
        bars.update("chunks written", "chunk", len(done.written))

    def _prune(
        self,
        markers: dict[str, Marker],
        seen: AbstractSet[str],
        walked: AbstractSet[str] = frozenset(),
        unreadable: Sequence[str] = (),
    ) -> int:
        """Remove documents whose source file is gone (including chunks a killed run left unmarked).

        Only what is provably gone: never a source this run met (even one it failed to read), one that
        exists under its display or OS name, or one under a folder that could not be listed."""
        from ..formats.walk import source_exists, under

        sources = {m.doc_id: m.source for m in markers.values()}
        for doc_id, source in self.store.chunk_documents().items():
            sources.setdefault(doc_id, source)
        gone = [
            d
            for d, src in sources.items()
            if d not in seen
            and src
            and not src.startswith("<")
            and src not in walked
            and not source_exists(src)
            and not under(src, unreadable)
        ]
        self.store.delete_documents(gone)
        for d in gone:
            markers.pop(d, None)
        return len(gone)

    # -- reading ---------------------------------------------------------------------------------------
    def _open_existing(self) -> dict[str, Any]:
        if self.store.missing:
            raise ConfigError("no database here; run `chunkwise index` first", source=self.store.location)
        config = self.store.read_config()
        if config is None:
            raise ConfigError(
                f"no index named {self.store.collection!r} here; run `chunkwise index` first",
                source=self.store.location,
            )
        self.store.open()
        return config

    def count(self) -> int:
        """Number of chunks in the collection (0 when it does not exist)."""
        if self.store.missing or self.store.read_config() is None:
            return 0
        self.store.open()
        return self.store.count()

    def documents(self) -> list[Marker]:
        """The completely indexed documents (source, content hash, chunk count), sorted by source."""
        if self.store.missing or self.store.read_config() is None:
            return []
        self.store.open()
        return sorted(self.store.markers().values(), key=lambda m: (m.source, m.doc_id))

    def delete(self, doc_id_or_source: str | os.PathLike) -> int:
        """Remove one document, named by its doc id or its source path; returns the chunks deleted."""
        self._open_existing()
        key = os.fspath(doc_id_or_source)
        docs = self.store.chunk_documents()
        docs.update({m.doc_id: m.source for m in self.store.markers().values()})
        if key in docs:
            ids = [key]
        else:
            absolute = os.path.abspath(key)
            ids = [
                d
                for d, src in docs.items()
                if src == key or (not src.startswith("<") and os.path.abspath(src) == absolute)
            ]
        if not ids:
            raise InputError("no such document in the index (give its doc id or its source path)", source=key)
        return self.store.delete_documents(ids)

    def search(
        self,
        query: str,
        k: int = 5,
        filter: str | None = None,
        hybrid: bool = DEFAULT_HYBRID,
        fusion: str = DEFAULT_FUSION,
        dense_weight: float = DENSE_WEIGHT,
        where: Any = None,
        rrf_k: int = RRF_K,
    ) -> list[SearchResult]:
        """The ``k`` best chunks for ``query``: BM25 and vectors fused (the default), or by cosine similarity
        alone with ``hybrid=False``.

        ``filter`` is a raw Milvus boolean expression over the stored fields, e.g.
        ``'source like "%manual%" and page_start >= 3'``, passed as it is: only for trusted input.
        ``where`` is the safe form for values from untrusted input: ``(field, operator, value)`` tuples
        (or a ``{field: value}`` mapping for equality) that :func:`chunkwise.retrieval.filters.build_filter`
        checks and quotes, e.g. ``where=[("page_start", ">=", 2), ("source", "==", user_value)]``.
        Both given: both must hold. With ``hybrid=True``, ``fusion`` is ``"zscore"`` (the default:
        ``dense_weight * z(vector) + (1 - dense_weight) * z(BM25)`` over the candidates of both sides) or
        ``"rrf"`` (reciprocal rank fusion with constant ``rrf_k``); see :mod:`chunkwise.retrieval.fusion`.
        ``search(q, **config.search_options())`` retrieves as a :class:`~chunkwise.pipeline.PipelineConfig`
        (a ``tune`` result) says. Hybrid is the default
        because it measured better than vectors alone on transcripts and Chroma's corpora
        (docs/evaluation.md); a store without BM25 of its own (Milvus < 2.5) scores BM25 client-side.
        """
        from .filters import build_filter

        safe = build_filter(where)
        if not isinstance(query, str) or not query.strip():
            raise InputError("the query is empty")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be an integer >= 1, got {k!r}")
        if filter is not None and not isinstance(filter, str):
            raise ConfigError("filter must be a string (a Milvus boolean expression)")
        check_fusion(fusion, dense_weight)
        rrf_k = SETTINGS["rrf_k"].check("rrf_k", rrf_k)
        filter = filter.strip() if filter else None
        if safe:
            filter = f"({filter}) and {safe}" if filter else safe
        config = self._open_existing()
        embedder = self.embedder(config)
        qvec = query_vectors(embedder, [query])[0]  # E5 reads a query unlike a document
        if not hybrid:
            hits = self.store.search_vector(qvec, k, filter)
            return [SearchResult.from_hit(r, h.score, h, vector_rank=r) for r, h in enumerate(hits, start=1)]
        # Both rankings go deeper than k so fusion can promote a chunk that is, say, 12th by vectors and
        # 2nd by BM25; only ids and scores travel until the final k are known.
        depth = max(ZSCORE_DEPTH if fusion == "zscore" else 50, 4 * k)
        vector_hits = {h.id: h.score for h in self.store.search_vector(qvec, depth, filter, ids_only=True)}
        bm25_hits = {h.id: h.score for h in self.store.search_text(query, depth, filter)}
        if fusion == "zscore":
            fused = fuse_candidates_zscore(vector_hits, bm25_hits, dense_weight)[:k]
        else:
            fused = reciprocal_rank_fusion([list(vector_hits), list(bm25_hits)], k=rrf_k)[:k]
        stored = {h.id: h for h in self.store.fetch([i for i, _ in fused])}
        vrank = {i: n for n, i in enumerate(vector_hits, start=1)}
        brank = {i: n for n, i in enumerate(bm25_hits, start=1)}
        return [
            SearchResult.from_hit(r, s, stored[i], vector_rank=vrank.get(i), bm25_rank=brank.get(i))
            for r, (i, s) in enumerate(fused, start=1)
            if i in stored
        ]

    def expand(
        self,
        results: Sequence[SearchResult],
        mode: str | None = None,
        budget: int | str | None = None,
        tokenizer: Any = "cl100k",
    ):
        """The context a reader gets from ``results`` (best first): each hit widened by ``mode``
        (``"neighbors:N"``, ``"section"``, ``"parent:TOKENS"``; ``None``: the hit alone), hits of one document
        that meet merged into one passage, at most ``budget`` tokens in all (counted with ``tokenizer``,
        cl100k by default: the reader's tokens). Neighbouring chunks are read from the store by document;
        see :mod:`chunkwise.retrieval.expand`. Returns :class:`~chunkwise.retrieval.expand.ExpandedPassage` s,
        best first, each with its exact offsets and the ranks of the results it holds."""
        from .expand import expand_chunks, store_chunks

        if not results:
            return []
        self._open_existing()
        return expand_chunks(results, store_chunks(self.store), mode, budget, tokenizer)

    def ask(
        self,
        question: str,
        k: int = 5,
        *,
        llm=None,
        hybrid: bool = DEFAULT_HYBRID,
        filter: str | None = None,
        min_score: float | None = None,
        on_token=None,
        on_passages=None,
        fusion: str = DEFAULT_FUSION,
        dense_weight: float = DENSE_WEIGHT,
        rrf_k: int = RRF_K,
        expand: str | None = None,
        budget: int | str | None = None,
    ):
        """Answer ``question`` from the ``k`` best chunks, citing them as ``[n]``; see
        :func:`chunkwise.llm.answer.ask_index`. ``llm``: an :class:`~chunkwise.llm.base.LLM` (default: the
        offline extractive answer); ``min_score``: cosine threshold (default
        :data:`~chunkwise.llm.answer.DEFAULT_MIN_SCORE`); ``on_token`` receives the answer as it streams,
        ``on_passages`` the numbered passages before the LLM is asked; ``fusion``/``dense_weight``/``rrf_k``
        as for :meth:`search` (``ask(q, **config.search_options())`` retrieves as a configuration says);
        ``expand``/``budget``: the LLM reads the hits widened as :meth:`expand` does, and cites those passages."""
        from ..llm.answer import DEFAULT_MIN_SCORE, ask_index
        from ..pipeline.config import parse_budget, parse_expand

        parse_expand(expand), parse_budget(budget)  # a bad mode is refused before anything is retrieved
        return ask_index(
            self,
            question,
            k,
            llm=llm,
            hybrid=hybrid,
            filter=filter,
            on_token=on_token,
            min_score=DEFAULT_MIN_SCORE if min_score is None else min_score,
            on_passages=on_passages,
            search_options={"fusion": fusion, "dense_weight": dense_weight, "rrf_k": rrf_k},
            expand=expand,
            budget=budget,
        )


__all__ = ["Index", "IndexReport", "AddSettings", "SearchResult", "VECTOR_MODES", "DEFAULT_HYBRID", "DEFAULT_FUSION"]
