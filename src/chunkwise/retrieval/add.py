"""One local :meth:`~chunkwise.retrieval.index.Index.add` run, after its configuration is settled: inputs ->
skip the unchanged -> chunk -> finish -> embed -> write, in batches, counted in an :class:`IndexReport`.

The steps themselves (skip, finish, vectors, write) are :mod:`chunkwise.retrieval.ingest`'s, shared with the
Ray engine; this module is the local engine's loop around them: the report, the progress bars, the language
check and the batching. A document whose content hash is recorded is dropped here before it is chunked,
and nothing in that path needs the embedder (an :class:`~.lazy_embedder.LazyEmbedder` stays unmade).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..deprecation import renamed, renames_for
from ..document import Chunk, Document
from ..embeddings.base import Embedder
from ..embeddings.language import LanguageCheck
from ..errors import ChunkwiseError, InputError
from ..formats.walk import UnreadableFolder
from ..pipeline.config import PipelineConfig, run_config
from ..progress import Progress
from ..store.base import Marker, Store
from ..strategies import Strategy
from ..strategies.many import chunk_documents
from ..video.document import VideoDocument, unchanged_video
from .collection_config import build_config, check_add_options, checked_config
from .ingest import embed_documents, finish_chunks, is_unchanged, write_documents
from .lazy_embedder import makes_recorded
from .results import IndexReport

if TYPE_CHECKING:
    from .index import Index


@dataclass(frozen=True)
class AddRequest:
    """What one :meth:`Index.add` asks for, checked: the strategy (a name, or a strategy object) with its
    parameters, the run configuration (its ``"index"`` settings: vectors, late chunking, context) and
    whether the collection is rebuilt."""

    strategy: str | Strategy
    params: dict[str, Any] | None
    config: PipelineConfig
    recreate: bool = False


def add_request(
    config: PipelineConfig | None,
    strategy: str | Strategy | None,
    params: dict[str, Any] | None,
    settings: dict[str, Any],
    recreate: bool = False,
    caller: str = "add",
) -> AddRequest:
    """The one path from :meth:`Index.add`'s arguments to an :class:`AddRequest`: ``config`` (default: the
    defaults), a strategy name (another than the configuration's: with its own parameters) and ``params``
    replacing its strategy, the keyword ``settings`` (``vectors``, ``late``... every setting of stage
    ``"index"``) replacing its settings; old option names renamed (one warning each). A strategy object is
    run as it is (``params`` beside it is one error, later)."""
    base = config if config is not None else PipelineConfig()
    if isinstance(base, PipelineConfig):
        if isinstance(strategy, str) and strategy != base.strategy:  # another strategy: not its parameters
            base = replace(base, strategy=strategy, params={})
        if params is not None and not isinstance(strategy, Strategy):
            base = replace(base, params=params)
    run = run_config(base, settings, ("index",), caller).validate()  # the strategy and its parameters too
    run.index_options()  # refuses an evaluation-only setting (granularities)
    if run.context == "llm":
        run = replace(
            run, context_options=renamed(run.context_options, renames_for("context_options"), "context_options")
        )
    if isinstance(strategy, Strategy):
        return AddRequest(strategy, params, run, recreate)
    return AddRequest(run.strategy, run.params, run, recreate)


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

    @classmethod
    def settled(cls, strategy: Strategy, embedder: Embedder, run: PipelineConfig, reuse: bool) -> AddSettings:
        """The settings of a run of ``run``'s configuration with this strategy and embedder."""
        return cls(
            strategy=strategy,
            embedder=embedder,
            context=run.context,
            context_options=run.context_options,
            late=run.late,
            late_options=run.late_options if run.late else {},
            reuse=reuse,
        )


@dataclass
class AddRun:
    """The state of one :meth:`Index.add` call, shared by its steps."""

    store: Store
    settings: AddSettings
    report: IndexReport
    markers: dict[str, Marker]
    batch_size: int
    bars: Progress
    languages: LanguageCheck
    seen: set[str] = field(default_factory=set)
    walked: set[str] = field(default_factory=set)  # every source met, read or not (never pruned)
    unreadable: list[str] = field(default_factory=list)  # folders not listed (nothing under them is pruned)
    incomplete: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class AddInputs:
    """What one add reads: the documents given, the files found (listed before any is read), the loader's
    options, and whether documents whose files are gone are pruned."""

    docs: list[Document]
    found: list
    load_options: dict[str, Any] | None = None
    prune: bool = False


def reuses(strategy: Strategy, embedder: Embedder, vectors: str) -> bool:
    """``vectors="pool"`` pools the sentence vectors chunking computed only when they are the index's
    embedder's (a strategy with another embedder lives in another vector space)."""
    return vectors == "pool" and getattr(getattr(strategy, "embedder", None), "model_id", None) == embedder.model_id


def split_inputs(inputs: Any) -> tuple[list[Document], list[str]]:
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


def iter_inputs(
    docs: list[Document],
    found: list,
    load_options: dict[str, Any] | None = None,
    markers: dict[str, Marker] | None = None,
) -> Iterator[tuple[str, Document | ChunkwiseError]]:
    """``(source, document or error)`` for the documents given and the files found, each file read as it
    is reached; an unchanged video is known by its file hash, before any decoding."""
    yield from ((d.source, d) for d in docs)
    if found:
        from ..formats import read_inputs

        for item in found:
            stub = unchanged_video(item.path, markers) if markers and item.error is None and item.path else None
            yield from [(item.source, stub)] if stub is not None else read_inputs([item], **(load_options or {}))


def input_sizes(docs: list[Document], found: list) -> dict[str, int]:
    """Bytes of each input (source -> size), for the progress estimate; 0 where unknown."""
    from ..formats.walk import file_sizes

    return {d.source: len(d.text) for d in docs} | file_sizes(found)


def collect_files(
    paths: list[str], include, exclude, all_files: bool, code: bool = False, gitignore: bool = True
) -> list:
    """The files ``paths`` name (folders walked), listed before any is read; none without paths."""
    if not paths:
        return []
    from ..formats import collect_inputs

    return collect_inputs(paths, include, exclude, all_files=all_files, code=code, gitignore=gitignore)


def settle(index: Index, request: AddRequest, config: dict | None, lazy: bool, schema: int):
    """The strategy and embedder of ``request`` against the recorded ``config`` (``None``: a new
    collection): ``(strategy, embedder, the run's record, what it changes in config)``. ``lazy``: the
    embedder may be made at its first use."""
    embedder = index._embedder_for_add(config) if lazy else index.embedder(config)
    from ..strategies.factory import make_strategy

    strat = make_strategy(request.strategy, request.params, embedder)
    backend = index._embedder_options.get("backend")
    record = partial(
        build_config, strat, embedder, request.config, name=index._embedder_name(), backend=backend, schema=schema
    )
    new, diffs = checked_config(config, strat, record)
    return strat, embedder, new, diffs


def unchanged_report(
    index: Index, request: AddRequest, inputs: AddInputs, t0: float, progress: bool
) -> IndexReport | None:
    """The report of a run with nothing to do, decided from the store's trusted snapshot
    (:mod:`chunkwise.store.snapshot`) without opening the database: the configuration this run would record
    is the recorded one, and every input is unchanged (or fails to load, reported as the full run would).
    ``None`` whenever that is not sure (no snapshot, ``recreate``, ``--context llm``, ``prune``, an embedder
    the record does not name, a changed input): the full run then does it all, reading those inputs again.
    An :class:`IndexReport` is always true, so ``if report := unchanged_report(...)`` reads as meant."""
    from ..store.snapshot import local_snapshot

    docs, found, load_options, prune = inputs.docs, inputs.found, inputs.load_options, inputs.prune
    if request.recreate or prune or request.config.context == "llm":
        return None
    snap = local_snapshot(index.store)
    if snap is None or not makes_recorded(index._embedder_arg, index._embedder_options, snap.config["embedder"]):
        return None
    try:
        check_add_options(request.config)
        from . import index as index_module  # its SCHEMA_VERSION (tests change it there)

        strat, embedder, _, diffs = settle(index, request, snap.config, True, index_module.SCHEMA_VERSION)
    except ChunkwiseError:
        return None  # the full run says it
    if diffs or index._embedder is not None:
        return None
    settings = AddSettings.settled(strat, embedder, request.config, False)
    run = AddRun(
        index.store, settings, IndexReport(), snap.markers, 1, Progress(progress, "indexing"), LanguageCheck(embedder)
    )
    try:
        run.bars.set_totals(len(docs) + len(found), input_sizes(docs, found))
        if next(changed(iter_inputs(docs, found, load_options, run.markers), run), None) is not None:
            return None
    finally:
        run.bars.close()
    run.report.notes.extend([snap.note] if snap.note else [])
    run.report.language_warning = run.languages.final_message()
    run.report.total_chunks = snap.count
    run.report.seconds = time.perf_counter() - t0  # ``t0``: the add's start
    run.report.timings["setup"] = run.report.seconds - run.report.timings["load"]
    return run.report


def start_run(index: Index, request: AddRequest, batch_size: int, progress: bool, notify) -> tuple[AddRun, Any]:
    """One :meth:`Index.add` settled before its first document: the llm contextualizer made first (a bad
    LLM configuration fails before the collection is touched), the collection created or checked
    (:meth:`Index._prepare`), the markers read. Returns the run and the contextualizer made here
    (``None``: none), which the caller closes."""
    wanted = request.config
    contextualizer = None
    if wanted.context == "llm" and "contextualizer" not in wanted.context_options:
        from ..context.llm import LLMContextualizer

        contextualizer = LLMContextualizer(**{k: v for k, v in wanted.context_options.items() if v is not None})
    report = IndexReport()
    try:
        strat, embedder = index._prepare(request, lazy=True)
        markers = index.store.markers()
        if hasattr(index.store, "keep_snapshot"):  # what a no-op re-run reads instead (store/snapshot.py)
            index.store.keep_snapshot = True
        note = index.store.hybrid_note
        report.notes.extend([note] if note else [])
    except BaseException:
        if contextualizer is not None:
            contextualizer.close()
        raise
    if contextualizer is not None:
        wanted = replace(wanted, context_options={"contextualizer": contextualizer})
    settings = AddSettings.settled(strat, embedder, wanted, reuses(strat, embedder, wanted.vectors))
    languages = LanguageCheck(embedder, notify=notify)
    return AddRun(index.store, settings, report, markers, batch_size, Progress(progress, "indexing"), languages), (
        contextualizer
    )


def check_languages(items, languages: LanguageCheck):
    """``items`` as they are, each document's language checked before it goes on to be chunked and
    embedded (a video's clip text is not prose)."""
    for source, doc in items:
        if isinstance(doc, Document) and not isinstance(doc, VideoDocument):
            languages.add(doc.text, str(source))
        yield source, doc


def changed(items, run: AddRun):
    """``(source, document)`` for every input that needs chunking: failed loads go to the report (and
    every source met, read or not, to ``run.walked``; folders that could not be listed to
    ``run.unreadable``: ``--prune`` never removes what it could not read), a file named twice is dropped, a
    document whose content hash is already indexed *completely* is skipped (an incomplete one is redone)."""
    report = run.report
    while True:
        t = time.perf_counter()
        try:
            with run.bars.phase("read"):
                source, doc = next(items)
        except StopIteration:
            return
        finally:
            report.timings["load"] += time.perf_counter() - t
        run.bars.file_done(str(source))
        run.walked.add(str(source))
        if isinstance(doc, UnreadableFolder):
            run.unreadable.append(doc.path)
        if isinstance(doc, ChunkwiseError) or not isinstance(doc, Document):
            report.failed.append((str(source), getattr(doc, "problem", str(doc))))
            run.bars.chunked(str(source), 0)  # no work left for it
            continue
        if doc.id in run.seen:  # the same file named twice
            run.bars.chunked(str(source), 0)
            continue
        run.seen.add(doc.id)
        report.documents += 1
        if is_unchanged(doc, run.markers):
            report.skipped += 1
            run.bars.chunked(str(source), 0)
            continue
        report.warnings.extend((doc.source, str(w)) for w in doc.metadata.get("warnings", []))
        yield source, doc


def ingest(stream, run: AddRun) -> None:
    """Take ``(source, document, chunks)`` from the chunking stream, finish each document's chunks
    (context, size checks) and write them in batches of about ``run.batch_size`` chunks."""
    report = run.report
    pending: list[tuple[Document, list[Chunk]]] = []
    while True:
        t, loaded = time.perf_counter(), report.timings["load"]
        try:
            with run.bars.phase("chunk"):
                source, doc, chunks = next(stream)
        except StopIteration:
            break
        finally:  # chunking time is the wait for the stream minus the loading inside it
            report.timings["chunk"] += time.perf_counter() - t - (report.timings["load"] - loaded)
        try:
            with run.bars.phase("chunk"):
                done = finish_chunks(doc, chunks, run.settings.context, run.settings.context_options)
        except InputError as exc:
            report.failed.append((doc.source, exc.problem))
            run.bars.chunked(str(source), 0)
            continue
        report.timings["context"] += done.context_seconds
        report.warnings.extend((doc.source, w) for w in done.warnings)
        if not done.complete:
            report.incomplete += 1
            run.incomplete.add(doc.id)
        run.bars.chunked(str(source), len(done.chunks), sum(c.token_count or 0 for c in done.chunks))
        pending.append((doc, done.chunks))
        if sum(len(c) for _, c in pending) >= run.batch_size:
            flush(pending, run)
            pending = []
    if pending:
        flush(pending, run)


def flush(pending: list[tuple[Document, list[Chunk]]], run: AddRun) -> None:
    """Embed and write a batch of documents with the unmark → upsert → delete stale → mark protocol."""
    s, report, bars = run.settings, run.report, run.bars
    t = time.perf_counter()
    with bars.phase("embed"):
        vectors, embedded, reused = embed_documents(
            pending,
            s.embedder,
            s.reuse,
            s.late,
            s.late_options,
            on_embedded=bars.embedded,
        )
    report.embedded += embedded
    report.reused += reused
    report.timings["embed"] += time.perf_counter() - t
    write_batch(run.store, pending, vectors, run.markers, s.embedder.model_id, report, bars, run.incomplete)


def write_batch(
    store: Store,
    pending,
    vectors: list[np.ndarray],
    markers: dict[str, Marker],
    model_id: str,
    report: IndexReport,
    bars: Progress,
    incomplete: AbstractSet[str] = frozenset(),
) -> None:
    """Write embedded documents (:func:`~chunkwise.retrieval.ingest.write_documents`) and count them."""
    t = time.perf_counter()
    with bars.phase("write"):
        done = write_documents(store, pending, vectors, markers, model_id, incomplete)
    report.removed += done.removed
    report.timings["write"] += time.perf_counter() - t
    report.indexed += len(pending)
    report.chunks += len(done.written)
    bars.update("chunks written", "chunk", len(done.written))


def prune_gone(
    store: Store,
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
    for doc_id, source in store.chunk_documents().items():
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
    store.delete_documents(gone)
    for d in gone:
        markers.pop(d, None)
    return len(gone)


def run_add(run: AddRun, docs: list[Document], found: list, load_options: dict[str, Any] | None, prune: bool) -> None:
    """The documents and files of one :meth:`Index.add` into the store: every changed one chunked, embedded
    and written, the gone ones pruned when asked, the store flushed when anything changed, the report's
    language warning and chunk total filled in."""
    report = run.report
    run.bars.set_totals(len(docs) + len(found), input_sizes(docs, found))
    items = changed(iter_inputs(docs, found, load_options, run.markers), run)
    # semantic strategies embed the sentences of a whole group of documents in one stream; the
    # language of each document is checked as it arrives, before any of it is embedded
    items = check_languages(items, run.languages)
    ingest(chunk_documents(run.settings.strategy, items, progress=run.bars.enabled), run)
    if prune:
        report.pruned = prune_gone(run.store, run.markers, run.seen, run.walked, run.unreadable)
    if report.chunks or report.removed or report.pruned:
        t = time.perf_counter()
        run.store.flush()
        report.timings["write"] += time.perf_counter() - t
    report.language_warning = run.languages.final_message()
    report.total_chunks = run.store.count()


__all__ = [
    "AddInputs",
    "AddRun",
    "AddSettings",
    "collect_files",
    "AddRequest",
    "add_request",
    "start_run",
    "changed",
    "check_languages",
    "flush",
    "ingest",
    "input_sizes",
    "iter_inputs",
    "prune_gone",
    "reuses",
    "run_add",
    "settle",
    "unchanged_report",
    "split_inputs",
    "write_batch",
]
