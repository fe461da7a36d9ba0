"""The main job end to end: load → chunk → (context) → embed → store in Milvus → search.

:class:`Index` is the Python API behind ``chunkwise index`` and ``chunkwise search``::

    from chunkwise import Index
    with Index(db="./chunkwise.db") as index:          # or Index(uri="http://host:19530", token=...)
        report = index.add(["docs/"], strategy="recursive", params={"max_tokens": 256})
        for hit in index.search("how do I reset the lamp?", k=5):   # BM25 + vectors; hybrid=False: vectors
            print(hit.rank, hit.score, hit.source, hit.page_start, hit.text)

What it guarantees (details in :mod:`chunkwise.store.milvus`):

- **Incremental**: a document whose content hash is recorded is skipped (nothing chunked or embedded).
- **Crash-safe**: a document is replaced by *unmark → upsert new → delete stale → mark*; a run killed at any
  moment and run again ends with exactly the chunks of a clean run.
- **One configuration per collection**: the embedder, strategy and parameters, vector, late chunking and
  context modes are recorded; a run with others is refused (``recreate=True`` rebuilds) instead of mixing.
- **Nothing embedded twice**: ``vectors="pool"`` reuses a semantic strategy's sentence vectors (mean-pooled,
  re-normalised); else each chunk's ``embed_text`` is embedded once, through the persistent cache.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..deprecation import moved_getattr
from ..embeddings.base import Embedder
from ..embeddings.vectors import query_vectors
from ..errors import ConfigError, InputError
from ..pipeline.config import DEFAULT_FUSION, DEFAULT_HYBRID, VECTOR_MODES, PipelineConfig, run_config
from ..progress import Progress
from ..store.base import Marker, Store
from ..store.milvus import DEFAULT_COLLECTION, SCHEMA_VERSION, MilvusStore
from ..strategies import Strategy
from ..strategies.params import EmbedderSpec, StrategySpec, TokenizerSpec
from ..validation import InstanceOf, Interval, MappingOf, PathSpec, StrList, validated
from .collection_config import check_add_options, differences
from .lazy_embedder import LazyEmbedder, makes_recorded
from .results import IndexReport, SearchResult
from .search import check_search, ranked_results

if TYPE_CHECKING:
    from .add import AddRequest, AddSettings


#: its old names (AddSettings, EMBED_BATCH, RESULT_FIELDS) import from their homes, with a warning
__getattr__ = moved_getattr(__name__)


#: chunks gathered (over several small documents) before one embedding + write round
DEFAULT_BATCH = 256

_Progress = Progress  # the progress of one run (bars on a terminal, heartbeat lines elsewhere)


#: the declarations several methods share
PIPELINE_CONFIG = InstanceOf(PipelineConfig)
FILTER = InstanceOf(str, "a Milvus boolean expression")
#: how many results (``k`` of search and ask, and ``-k``)
TOP_K = Interval(int, 1, None)
#: chunks embedded and written at once (``Index.add(batch_size=)`` and ``--batch-size``)
BATCH_SIZE = Interval(int, 1, None)
#: seconds to wait for a server (``Index(timeout=)`` and ``--timeout``)
TIMEOUT = Interval(float, 0, None, closed="neither")
CALLBACK = InstanceOf(Callable, "a callable")  # type: ignore[arg-type]


class Index(AbstractContextManager["Index", None]):
    """A chunk index in Milvus: :meth:`add` documents, :meth:`search` them, :meth:`delete` them.

    ``db``: Milvus Lite directory (default ``./chunkwise.db``); ``uri``/``token``: a Milvus server instead.
    ``embedder``: an :class:`~chunkwise.embeddings.base.Embedder`, a name for
    :func:`chunkwise.embeddings.get_embedder`, or ``None`` for the one the collection was built with
    (``$CHUNKWISE_EMBEDDER`` or ``minilm`` for a new collection). ``cache``, ``cache_dir`` and
    ``embedder_options`` (e.g. ``{"base_url": ...}``) go to ``get_embedder``. ``timeout`` (seconds) bounds
    connecting to a server and each Milvus call. ``store``: any :class:`~chunkwise.store.base.Store`
    instead of Milvus (then ``db``/``uri``/``token``/``collection``/``timeout`` are not used).
    """

    @validated(
        "Index",
        db=[PathSpec(), None],
        uri=[InstanceOf(str, "a URI"), None],
        token=[InstanceOf(str), None],
        collection=InstanceOf(str, "a collection name"),
        embedder=[EmbedderSpec(), None],
        cache=InstanceOf(bool),
        cache_dir=[PathSpec(), None],
        embedder_options=[MappingOf(), None],
        timeout=TIMEOUT,
        store=[InstanceOf(Store, "a Store"), None],
    )
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
        self._lazy: LazyEmbedder | None = None  # the last add's embedder, when it was to be made at first use
        self._cache = cache
        self._cache_dir = cache_dir
        self._embedder_options = dict(embedder_options or {})

    # -- lifecycle -------------------------------------------------------------------------------------
    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Release the database (Milvus Lite allows one process at a time) and an embedder made here."""
        self.store.close()
        if self._owns_embedder and self._embedder is not None:
            getattr(self._embedder, "close", lambda: None)()
            self._embedder = None
        self._lazy = None

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

    @validated("Index.embedder", config=[MappingOf(), None])
    def embedder(self, config: dict[str, Any] | None = None) -> Embedder:
        """The embedder: the one given, else the one the collection records, else ``minilm``; after an
        :meth:`add` that did not need it, that run's :class:`~.lazy_embedder.LazyEmbedder` (made at first use)."""
        if self._embedder is None and config is None and self._lazy is not None:
            return self._lazy
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

    def _embedder_for_add(self, config: dict[str, Any] | None) -> Embedder:
        """The embedder :meth:`add` runs with: a :class:`~.lazy_embedder.LazyEmbedder` when the collection
        records the embedder this index would make (a run that embeds nothing then never makes the model),
        else :meth:`embedder` at once (a new collection, an embedder given or already made, other options)."""
        rec = (config or {}).get("embedder") or {}
        if self._embedder is not None or not makes_recorded(self._embedder_arg, self._embedder_options, rec):
            return self.embedder(config)
        self._lazy = LazyEmbedder(rec["model_id"], int(rec["dim"]), lambda: self.embedder(config))
        return self._lazy

    # -- configuration ---------------------------------------------------------------------------------
    #: what a run would change in a collection's recorded configuration (retrieval/collection_config.py)
    _differences = staticmethod(differences)

    def _prepare(self, request: AddRequest, lazy: bool = False) -> tuple[Strategy, Embedder]:
        """Check everything and create or verify the collection before a single row is written. ``lazy``:
        the local engine's embedder may be made at its first use (:meth:`_embedder_for_add`); another engine
        ships the embedder's spec to its workers, so it gets the real one, checked now."""
        from .add import settle

        check_add_options(request.config)
        config = None if request.recreate else self.store.read_config()
        strat, embedder, new, diffs = settle(self, request, config, lazy, SCHEMA_VERSION)
        if config is not None:
            if diffs:
                raise ConfigError(
                    f"collection {self.store.collection!r} was built with "
                    + "; ".join(diffs)
                    + ": use another --collection, or --recreate to rebuild it",
                    source=self.store.location,
                )
            self.store.open()
        else:
            late = request.config.late_options if request.config.late else {}
            if late.get("late_window") is not None or late.get("overlap") is not None:
                from ..context.late import check_late_options

                # against the embedder's own window now, not at the first document, after the record
                check_late_options(late, int(getattr(embedder, "model_window", 0) or 0))
            self.store.create(new, embedder.dim, replace=request.recreate)  # create-if-absent, atomic on the server
        return strat, embedder

    @validated(
        "Index.prepare_add",
        strategy=[StrategySpec(), None],
        params=[MappingOf(), None],
        config=[PIPELINE_CONFIG, None],
        recreate=InstanceOf(bool),
    )
    def prepare_add(
        self,
        strategy: str | Strategy | None = None,
        params: dict[str, Any] | None = None,
        *,
        config: PipelineConfig | None = None,
        recreate: bool = False,
        **settings: Any,
    ) -> AddSettings:
        """What :meth:`add` settles before the first document: every option checked, the collection created
        or its recorded configuration verified, the strategy and embedder made. Another engine (the Ray
        engine) calls it so that it runs exactly the configuration the local engine would; it takes
        ``config`` and the keyword settings as :meth:`add` does."""
        from .add import AddSettings, add_request, reuses

        request = add_request(config, strategy, params, settings, recreate, "prepare_add")
        strat, embedder = self._prepare(request)
        return AddSettings.settled(strat, embedder, request.config, reuses(strat, embedder, request.config.vectors))

    # -- adding documents ------------------------------------------------------------------------------
    @validated(
        "Index.add",
        strategy=[StrategySpec(), None],
        config=[PIPELINE_CONFIG, None],
        params=[MappingOf(), None],
        prune=InstanceOf(bool),
        include=[StrList(empty=True), None],
        exclude=[StrList(empty=True), None],
        all_files=InstanceOf(bool),
        code=InstanceOf(bool),
        gitignore=InstanceOf(bool),
        load_options=[MappingOf(), None],
        batch_size=BATCH_SIZE,
        recreate=InstanceOf(bool),
        progress=InstanceOf(bool),
        notify=[CALLBACK, None],
    )
    def add(
        self,
        inputs: Any,
        strategy: str | Strategy | None = None,
        *,
        config: PipelineConfig | None = None,
        params: dict[str, Any] | None = None,
        prune: bool = False,
        include: list[str] | None = None,
        exclude: list[str] | None = None,
        all_files: bool = False,
        code: bool = False,
        gitignore: bool = True,
        load_options: dict[str, Any] | None = None,
        batch_size: int = DEFAULT_BATCH,
        recreate: bool = False,
        progress: bool = False,
        notify: Callable[[str], None] | None = None,
        **settings: Any,
    ) -> IndexReport:
        """Index files, folders or :class:`Document` objects; returns an :class:`IndexReport`.

        ``config``: a :class:`~chunkwise.pipeline.PipelineConfig` (a ``tune`` result, say): its strategy,
        parameters and ``"index"`` settings say how documents are chunked and embedded. ``strategy``/``params``
        replace its chunker (a name and its parameters, or a strategy object), and keyword arguments naming an
        index setting replace its settings (without ``config``, the defaults'): ``vectors="pool"``: chunk
        vectors mean-pooled from the sentence vectors a semantic strategy already computed (no second
        embedding pass); ``"text"`` (default) embeds each chunk's ``embed_text``. ``late=True``: late-chunked
        vectors (:func:`chunkwise.context.late_chunk_vectors`, options ``late_window`` (formerly
        ``window``)/``overlap``/``macro`` in ``late_options``). ``context``: ``headings``/``neighbors``/``llm``
        fills ``Chunk.context`` (:func:`chunkwise.context.contextualize` with ``context_options``), embedded and
        BM25-indexed with the text.

        ``prune=True``: remove documents whose source files no longer exist. ``load_options``: options of
        :func:`chunkwise.formats.load` (``password``, ``encoding``, ``format``, ``html_mode``, ``clean``..., as
        ``chunkwise chunk`` takes them). Unreadable inputs go to ``report.failed``; the others are indexed.
        Folders give their files of supported types (``include``/``exclude`` globs narrow the walk, an
        ``include`` naming an extension such as ``*.svg`` widens it, ``all_files=True`` reads every file; see
        :func:`chunkwise.formats.list_inputs`); the files left out are said in one
        :class:`~chunkwise.formats.SkippedFilesWarning` before anything is read. ``progress``: bars on a
        terminal, heartbeat lines elsewhere (:mod:`chunkwise.progress`). ``notify(line)``: called for
        a document in a language the embedder does not read (before it is embedded). ``code=True``: folders
        give source files too (``.py``, ``.js``...). ``gitignore=False``: a folder in a git work tree gives
        what its ``.gitignore`` files ignore too."""
        from .add import AddInputs, add_request, collect_files, run_add, split_inputs, start_run, unchanged_report

        t0 = time.perf_counter()
        request = add_request(config, strategy, params, settings, recreate)
        docs, paths = split_inputs(inputs)
        found = collect_files(paths, include, exclude, all_files, code, gitignore)  # listed before any read
        inputs_ = AddInputs(docs, found, load_options, prune)
        if quick := unchanged_report(self, request, inputs_, t0, progress):
            return quick  # nothing to do, decided from the store's snapshot (store/snapshot.py)
        run, contextualizer = start_run(self, request, batch_size, progress, notify)
        run.report.timings["setup"] = time.perf_counter() - t0
        try:
            run_add(run, docs, found, load_options, prune)
        finally:
            run.bars.close()
            if contextualizer is not None:
                contextualizer.close()
        run.report.seconds = time.perf_counter() - t0
        return run.report

    # the Ray engine's driver writes and prunes through these (retrieval/add.py has the work)
    def _write(self, pending, vectors, markers, model_id, report, bars, incomplete=frozenset()) -> None:
        from .add import write_batch

        write_batch(self.store, pending, vectors, markers, model_id, report, bars, incomplete)

    def _prune(self, markers, seen, walked=frozenset(), unreadable=()) -> int:
        from .add import prune_gone

        return prune_gone(self.store, markers, seen, walked, unreadable)

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
        _from_copies(self.store)  # Milvus Lite: the count its saved copies hold, without its engine
        return self.store.count() if _opened(self.store) else 0

    def documents(self) -> list[Marker]:
        """The completely indexed documents (source, content hash, chunk count), sorted by source."""
        if not _opened(self.store):
            return []
        return sorted(self.store.markers().values(), key=lambda m: (m.source, m.doc_id))

    @validated("Index.delete", doc_id_or_source=PathSpec())
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

    @validated(
        "Index.search",
        query=InstanceOf(str),
        k=TOP_K,
        filter=[FILTER, None],
        config=[PIPELINE_CONFIG, None],
    )
    def search(
        self,
        query: str,
        k: int = 5,
        filter: str | None = None,
        *,
        config: PipelineConfig | None = None,
        where: Any = None,
        **settings: Any,
    ) -> list[SearchResult]:
        """The ``k`` best chunks for ``query``: BM25 and vectors fused (the default), or by cosine similarity alone
        with ``hybrid=False``.

        ``config``: a :class:`~chunkwise.pipeline.PipelineConfig` (a ``tune`` result, say) whose retrieval
        settings this search uses; keyword arguments naming a retrieval setting (``hybrid``, ``fusion``,
        ``dense_weight``, ``rrf_k``, ``sections``, ``rerank``, ``rerank_depth``: every setting of stage ``"search"``) override
        it, and without ``config`` override the defaults. ``filter`` is a raw Milvus boolean expression over the
        stored fields, e.g. ``'source like "%manual%" and page_start >= 3'``, passed as it is: only for trusted
        input. ``where`` is the safe form for values from untrusted input: ``(field, operator, value)`` tuples (or
        a ``{field: value}`` mapping for equality) that :func:`chunkwise.retrieval.filters.build_filter` checks
        and quotes, e.g. ``where=[("page_start", ">=", 2), ("source", "==", user_value)]``. Both given: both must
        hold. With ``hybrid=True``, ``fusion`` is ``"zscore"`` (the default: ``dense_weight * z(vector) + (1 -
        dense_weight) * z(BM25)`` over the candidates of both sides) or ``"rrf"`` (reciprocal rank fusion with
        constant ``rrf_k``); see :mod:`chunkwise.retrieval.fusion`. ``rerank`` (e.g. ``"maxsim"``;
        ``None``/``"none"``: no second stage): the first stage retrieves ``max(k, rerank_depth)`` candidates and
        :func:`chunkwise.retrieval.rerank.rerank_results` re-orders them and keeps ``k``. ``sections``: the
        sections naming the query's keys (``3.8.13``) first (:mod:`.sections`). Hybrid is the default because it
        measured better than vectors alone on transcripts and Chroma's corpora (docs/evaluation.md); a store
        without BM25 of its own (Milvus < 2.5) scores BM25 client-side."""
        filter = check_search(query, k, filter, where)
        run = run_config(config, settings, ("search",), "search")
        with _one_state(self.store):
            if not filter and run.hybrid:
                _from_copies(self.store)  # Milvus Lite: its engine only if something needs it
            config_record = self._open_existing()
            embedder = self.embedder(config_record)
            qvec = query_vectors(embedder, [query])[0]  # E5 reads a query unlike a document
            depth = max(k, run.rerank_depth) if run.rerank else k
            results = ranked_results(self.store, query, qvec, depth, filter, run)
            if not run.rerank:
                return results
            from .rerank import rerank_results  # a second stage's models load only when one is asked for

            return rerank_results(query, results, run.rerank, embedder=embedder, k=k)

    @validated(
        "Index.expand",
        results=InstanceOf(Sequence, "a list of SearchResult"),
        mode=[InstanceOf(str, "an expand mode"), None],
        budget=[Interval(int, 1, None), InstanceOf(str, "a token budget such as '2k'"), None],
        tokenizer=TokenizerSpec(),
    )
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

    @validated(
        "Index.ask",
        question=InstanceOf(str),
        k=TOP_K,
        config=[PIPELINE_CONFIG, None],
        filter=[FILTER, None],
        min_score=[Interval(float, None, None), None],
        on_token=[CALLBACK, None],
        on_passages=[CALLBACK, None],
    )
    def ask(
        self,
        question: str,
        k: int = 5,
        *,
        llm=None,
        config: PipelineConfig | None = None,
        filter: str | None = None,
        min_score: float | None = None,
        on_token=None,
        on_passages=None,
        **settings: Any,
    ):
        """Answer ``question`` from the ``k`` best chunks, citing them as ``[n]``; see :func:`chunkwise.llm.answer.ask_index`.
        ``llm``: an :class:`~chunkwise.llm.base.LLM` (default: the offline extractive one); ``min_score``: cosine
        threshold (default :data:`~chunkwise.llm.answer.DEFAULT_MIN_SCORE`); ``on_token`` receives the answer as it
        streams, ``on_passages`` the passages before the LLM is asked. ``config`` and keyword arguments as for
        :meth:`search` (the retrieval settings, ``sections`` too), plus ``expand``/``budget``: the LLM reads the
        hits widened as :meth:`expand` does, and cites those passages; a ``budget`` without ``expand`` widens by
        document kind (``"auto"``: neighbours in text without headings or pages), ``expand="none"`` keeps the
        hits alone."""
        from ..llm.answer import DEFAULT_MIN_SCORE, ask_index
        from ..pipeline.config import reader_expand

        run = run_config(config, settings, ("search", "expand"), "ask")  # refused before anything is retrieved
        retrieval = run.search_options()
        retrieval.pop("hybrid")  # ask_index takes it apart from the others
        with _one_state(self.store):
            return ask_index(
                self,
                question,
                k,
                llm=llm,
                filter=filter,
                on_token=on_token,
                min_score=DEFAULT_MIN_SCORE if min_score is None else min_score,
                on_passages=on_passages,
                hybrid=run.hybrid,
                search_options=retrieval,
                expand=reader_expand(run.expand, run.budget),  # a budget without a mode: by document kind
                budget=run.budget,
            )


def _opened(store: Store) -> bool:
    """Open the collection when it exists; False when it does not."""
    if store.missing or store.read_config() is None:
        return False
    store.open()
    return True


def _from_copies(store: Store) -> None:
    """A store that keeps saved copies beside its files (Milvus Lite: ``MilvusStore.open_copies``) answers from
    them while they are current; an optional member of the store protocol."""
    open_copies = getattr(store, "open_copies", None)
    if open_copies is not None:
        open_copies()


def _one_state(store: Store) -> contextlib.AbstractContextManager[Any]:
    """A search or a question reads one state of the store (``MilvusStore.one_state``; optional too)."""
    one_state = getattr(store, "one_state", None)
    return one_state() if one_state is not None else contextlib.nullcontext()


__all__ = [
    "Index",
    "IndexReport",
    "SearchResult",
    "VECTOR_MODES",
    "DEFAULT_HYBRID",
    "DEFAULT_FUSION",
    "DEFAULT_BATCH",
]
