"""Distributed ingestion on Ray: ``chunkwise index PATH... --engine ray [--address ...] [--workers N]``.

The same job as :meth:`chunkwise.retrieval.index.Index.add`, spread over a Ray cluster, running the same
step functions (:mod:`chunkwise.retrieval.ingest`), so every mode of the local engine (``--vectors pool``,
``--late``, ``--context headings|neighbors|llm``, the strategies that embed while chunking) gives the same
chunks and vectors here:

1. the driver settles the configuration exactly as the local engine does (:meth:`Index.prepare_add`:
   the collection created or its recorded configuration checked) and reads the document markers, then
   lists the input files (nothing is read yet);
2. Ray **tasks** load, skip (a document whose marker holds its current content hash, complete), chunk
   (:func:`~chunkwise.strategies.many.chunk_documents`; a semantic strategy embeds its sentences in the
   task, with one model per worker process) and finish (context, size checks) groups of files;
3. an **actor pool** of ``workers`` embedders (one model per actor, loaded once) embeds the chunk texts in
   the local engine's calls of :data:`~chunkwise.retrieval.ingest.EMBED_BATCH` and late-chunks documents.
   The pool starts only when a batch has something to embed: a re-run with nothing changed loads no model;
4. the driver plans each batch's vectors (:func:`~chunkwise.retrieval.ingest.plan_vectors`: pooled ones
   need no actor) and writes it with the local path's protocol (unmark -> upsert -> delete stale -> mark),
   so chunk ids, rows and crash safety are exactly those of the local path.

At most ``2 * workers`` chunking tasks and ``2 * workers`` embedding calls are in flight, so the driver's
memory stays bounded whatever the corpus size. The store must be a Milvus server (``--uri``) or a custom
:class:`~chunkwise.store.base.Store` given as ``Index(store=...)``: Milvus Lite is a single-process database
that remote workers cannot reach, and only the driver writes anyway.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..document import Chunk, Document
from ..embeddings.base import Embedder
from ..errors import ChunkwiseError, ConfigError, InputError, MissingDependencyError
from ..formats.walk import UnreadableFolder
from ..pipeline.config import PipelineConfig
from ..store.base import Marker
from ..store.milvus import MilvusStore
from ..strategies import Strategy
from ..validation import Interval, check_flag
from .add import AddSettings
from .index import Index, IndexReport, _Progress
from .ingest import finish_chunks, is_unchanged, late_vectors, plan_vectors
from .ray_cluster import local_cluster_options

#: files per chunking task
FILES_PER_TASK = 8


@dataclass
class DocInfo:
    """What writing needs of a document, without its text (which stays in the task)."""

    id: str
    source: str
    title: str | None
    metadata: dict
    content_hash: str


@dataclass
class TaskSpec:
    """What a chunking task needs, shipped once per job: the strategy (its embedder detached and given as
    ``embedder``, a spec the task's worker process loads once, when it embeds while chunking), the markers
    (the skip rule), the context mode, the walk and load options, and what the later steps need of each
    document (the whole text for late chunking, the sentence vectors for pooling)."""

    strategy: Strategy
    embedder: Any
    markers: dict[str, Marker]
    context: str | None
    context_options: dict[str, Any]
    include: list[str] | None
    exclude: list[str] | None
    load_options: dict[str, Any]
    keep_text: bool
    keep_sentence_vectors: bool


@dataclass
class _Batch:
    """Chunked documents on their way to the embedders and the store."""

    docs: list[tuple[Any, list[Chunk]]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(c) for _, c in self.docs)


def import_ray():
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("--engine ray", "ray", "ray") from None
    return ray


def list_files(
    paths: list[str],
    include: list[str] | None,
    exclude: list[str] | None,
    all_files: bool = False,
    code: bool = False,
    gitignore: bool = True,
) -> tuple[list[str], list[InputError]]:
    """The files :func:`chunkwise.formats.iter_documents` would read, in its order (OS paths: each task
    reads one and gets the same source name as the local path, so doc ids match), and the problems the
    listing met (unreadable folders, folders without files), which the run reports and ``--prune`` respects."""
    from ..formats import list_inputs

    files: list[str] = []
    problems: list[InputError] = []
    for item in list_inputs(paths, include, exclude, all_files=all_files, code=code, gitignore=gitignore):
        if item.error is not None:
            problems.append(item.error)
        elif item.path == "-":
            problems.append(InputError("--engine ray reads files, not standard input", source="<stdin>"))
        else:
            assert item.path is not None, "a Found is a path or an error"
            files.append(item.path)
    return files, problems


#: embedders loaded in this worker process, by spec: a semantic strategy's tasks load the model once per
#: process, not once per task
_TASK_EMBEDDERS: dict[str, Embedder] = {}


def load_embedder(spec: Any) -> Embedder:
    """The embedder a spec names (``{"name", "cache", "cache_dir", "options"}``), or the object itself."""
    if not isinstance(spec, dict):
        return spec
    key = json.dumps(spec, sort_keys=True, default=str)
    if key not in _TASK_EMBEDDERS:
        from ..embeddings import get_embedder

        _TASK_EMBEDDERS[key] = get_embedder(
            spec["name"], cache=spec["cache"], cache_dir=spec["cache_dir"], **spec["options"]
        )
    return _TASK_EMBEDDERS[key]


def _read(files: list[str], spec: TaskSpec):
    """``(source, Document or error)`` per file, as the local engine reads them (an unchanged video is
    known by its file hash, before any decoding)."""
    from ..formats import iter_documents
    from ..video.document import unchanged_video

    for path in files:
        stub = unchanged_video(path, spec.markers) if spec.markers else None
        if stub is not None:
            yield path, stub
        else:
            yield from iter_documents([path], include=spec.include, exclude=spec.exclude, **spec.load_options)


def chunk_files(files: list[str], spec: TaskSpec) -> list[tuple]:
    """Task body: load, skip, chunk and finish ``files``; per input, in order, ``("skip", doc_id)``,
    ``("error", source, problem)`` or ``("doc", doc, chunks, complete, warnings)`` (``doc`` a
    :class:`DocInfo` unless the actors need its text)."""
    from ..strategies.many import chunk_documents

    strategy = spec.strategy
    if spec.embedder is not None:
        strategy = copy.copy(strategy)
        strategy.embedder = load_embedder(spec.embedder)  # type: ignore[attr-defined]
    context_options = dict(spec.context_options)
    contextualizer = None
    if spec.context == "llm" and "contextualizer" not in context_options:
        from ..context.llm import LLMContextualizer

        # one per task, as the local engine has one per run: its failure count says which chunks lack context
        contextualizer = LLMContextualizer(**{k: v for k, v in context_options.items() if v is not None})
        context_options = {"contextualizer": contextualizer}
    out: list[tuple] = []
    todo: list[tuple[str, Any]] = []
    slots: list[int] = []
    try:
        for source, doc in _read(files, spec):
            if isinstance(doc, ChunkwiseError) or not isinstance(doc, Document):
                out.append(("error", str(source), getattr(doc, "problem", str(doc))))
            elif is_unchanged(doc, spec.markers):
                out.append(("skip", doc.id))
            else:
                slots.append(len(out))
                out.append(())
                todo.append((str(source), doc))
        for slot, (_source, doc, chunks) in zip(slots, chunk_documents(strategy, todo)):
            try:
                done = finish_chunks(doc, chunks, spec.context, context_options)
            except InputError as exc:
                out[slot] = ("error", doc.source, exc.problem)
                continue
            for c in done.chunks:  # ship back only what the later steps use
                c.vector = None
                if not spec.keep_sentence_vectors:
                    c.sentence_vectors = c.sentence_spans = None
            warnings = [str(w) for w in doc.metadata.get("warnings", [])] + done.warnings
            shipped = (
                doc if spec.keep_text else DocInfo(doc.id, doc.source, doc.title, dict(doc.metadata), doc.content_hash)
            )
            out[slot] = ("doc", shipped, done.chunks, done.complete, warnings)
    finally:
        if contextualizer is not None:
            contextualizer.close()
    return out


class EmbedWorker:
    """Actor body: one embedder per actor, loaded once, embedding batches of texts or late-chunking."""

    def __init__(self, embedder):
        self.embedder = load_embedder(embedder)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed(texts), dtype=np.float32)

    def late(self, doc: Document, chunks: list[Chunk], late_options: dict[str, Any]) -> np.ndarray:
        return late_vectors(doc, chunks, self.embedder, late_options)


class RayIngest:
    """Index files into ``index`` (a server store) on a Ray cluster; :meth:`run` returns an IndexReport.

    ``address``: ``None`` starts a local Ray instance, ``"auto"`` joins the running cluster, ``ray://host:10001``
    connects a Ray client. ``workers``: embedding actors (default: the cluster's CPUs less one for the
    chunking tasks, at least 1). ``actors_started`` counts the embedding actors the last :meth:`run` made.
    """

    def __init__(
        self, index: Index, address: str | None = None, workers: int | None = None, files_per_task: int = FILES_PER_TASK
    ):
        check_flag(workers, "--workers", [Interval(int, 1, None), None])
        # Milvus Lite is refused; another Store (store=..., no ``db`` in the protocol) is written by the driver only
        if isinstance(index.store, MilvusStore) and index.store.db is not None:
            raise ConfigError(
                "--engine ray writes to a Milvus server: give --uri (Milvus Lite is a local "
                "single-process database that Ray workers cannot share)"
            )
        self.index = index
        self.address = address
        self.workers = workers
        self.files_per_task = files_per_task
        self.actors_started = 0

    def _init_ray(self):
        local = local_cluster_options() if self.address is None else {}  # before Ray is imported: it reads them
        ray = import_ray()
        if not ray.is_initialized():
            # a local head's GCS may take longer than Ray's default 30 s to bind its port (2 busy cores)
            os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "120")
            opts = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False, **local}
            try:
                ray.init(address=self.address, **opts)
            except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError ...
                raise ChunkwiseError(
                    f"cannot start or join the Ray cluster: {' '.join(str(exc).split())}",
                    source=self.address or "local Ray",
                ) from None
        return ray

    def _embedder_spec(self):
        ix = self.index
        if isinstance(ix._embedder_arg, str) or ix._embedder_arg is None:
            return {
                "name": ix._embedder_name(),
                "cache": ix._cache,
                "cache_dir": ix._cache_dir,
                "options": ix._embedder_options,
            }
        return ix._embedder_arg  # an Embedder object: shipped to the actors as it is

    def _task_spec(
        self, settings: AddSettings, markers: dict[str, Marker], include, exclude, load_options: dict | None
    ) -> TaskSpec:
        strategy, spec = settings.strategy, None
        own = getattr(strategy, "embedder", None)
        if isinstance(own, Embedder):  # embeds while chunking: the model is loaded where the task runs
            spec = self._embedder_spec() if own is settings.embedder else own
            strategy = copy.copy(strategy)
            strategy.embedder = None  # type: ignore[attr-defined]
        return TaskSpec(
            strategy=strategy,
            embedder=spec,
            markers=dict(markers),
            context=settings.context,
            context_options={k: v for k, v in settings.context_options.items() if k != "contextualizer"},
            include=include,
            exclude=exclude,
            load_options=dict(load_options or {}),
            keep_text=settings.late,
            keep_sentence_vectors=settings.reuse,
        )

    def run(
        self,
        paths: list[str],
        strategy: str | Strategy | None = None,
        params: dict | None = None,
        *,
        config: PipelineConfig | None = None,
        include=None,
        exclude=None,
        all_files: bool = False,
        code: bool = False,
        gitignore: bool = True,
        prune: bool = False,
        batch_size: int = 256,
        recreate: bool = False,
        progress: bool = False,
        load_options: dict | None = None,
        **settings: Any,
    ) -> IndexReport:
        """Index ``paths`` as :meth:`Index.add` would: ``config`` and the keyword ``settings`` (vectors, late
        chunking, context) are :meth:`Index.prepare_add`'s, so both engines run one configuration."""
        t0 = time.perf_counter()
        ix = self.index
        report = IndexReport()
        settled = ix.prepare_add(strategy, params, config=config, recreate=recreate, **settings)
        markers = ix.store.markers()
        if ix.store.hybrid_note:
            report.notes.append(ix.store.hybrid_note)
        files, unreadable = _scan(paths, include, exclude, all_files, report, code, gitignore)
        report.timings["setup"] = time.perf_counter() - t0
        ray = self._init_ray()
        cpus = int(ray.cluster_resources().get("CPU", 1))
        workers = self.workers or max(1, cpus - 1)
        bars = _Progress(progress)
        self.actors_started = 0
        try:
            spec = self._task_spec(settled, markers, include, exclude, load_options)
            self._pipeline(ray, files, settled, markers, workers, cpus, spec, batch_size, report, bars)
            if prune:
                report.pruned = ix._prune(markers, set(self._seen), unreadable=unreadable)
            if report.chunks or report.removed or report.pruned:
                ix.store.flush()
        finally:
            bars.close()
        report.total_chunks = ix.store.count()
        report.seconds = time.perf_counter() - t0
        return report

    def _pipeline(
        self,
        ray,
        files,
        settings: AddSettings,
        markers,
        workers: int,
        cpus: int,
        spec: TaskSpec,
        batch_size: int,
        report: IndexReport,
        bars: _Progress,
    ) -> None:
        """Chunking tasks -> embedding actor pool (started on first use) -> driver writes, with bounded work
        in flight."""
        # one CPU per task, so tasks spread over the nodes' CPUs; none when the actors hold every CPU (a
        # task that needs a CPU no actor gives back would wait for ever)
        chunk_task = ray.remote(num_cpus=1 if cpus > workers else 0, scheduling_strategy="SPREAD")(chunk_files)
        spec_ref = ray.put(spec)
        groups = deque(files[i : i + self.files_per_task] for i in range(0, len(files), self.files_per_task))
        in_flight: deque = deque()
        self._seen: set[str] = set()
        self._pool = None
        self._actors: list = []
        self._workers = workers
        incomplete: set[str] = set()
        batch = _Batch()
        try:
            while groups or in_flight:
                while groups and len(in_flight) < 2 * workers:
                    in_flight.append(chunk_task.remote(groups.popleft(), spec_ref))
                t = time.perf_counter()
                results = ray.get(in_flight.popleft())
                report.timings["chunk"] += time.perf_counter() - t
                for item in results:
                    taken = self._accept(item, report, bars, incomplete)
                    if taken is None:
                        continue
                    batch.docs.append(taken)
                    if batch.size >= batch_size:
                        self._embed_write(ray, batch, settings, markers, report, bars, incomplete)
                        batch = _Batch()
            if batch.docs:
                self._embed_write(ray, batch, settings, markers, report, bars, incomplete)
        except ray.exceptions.RayError as exc:
            raise ChunkwiseError(
                f"the Ray job failed ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:300]}); run the same command again to resume "
                "(finished documents are skipped)",
                source=self.address or "local Ray",
            ) from None
        finally:
            self._release(ray)

    def _accept(self, item: tuple, report: IndexReport, bars: _Progress, incomplete: set[str]):
        """One chunking task's answer for a file, counted in ``report``: the ``(document, chunks)`` to embed
        and write, or ``None`` for a failed file, a document already taken (a duplicate) or one unchanged."""
        bars.update("files", "file")
        if item[0] == "error":
            report.failed.append((item[1], item[2]))
            return None
        doc_id = item[1] if item[0] == "skip" else item[1].id
        if doc_id in self._seen:
            return None
        self._seen.add(doc_id)
        report.documents += 1
        if item[0] == "skip":
            report.skipped += 1
            return None
        _, doc, chunks, complete, warnings = item
        report.warnings.extend((doc.source, w) for w in warnings)
        if not complete:
            report.incomplete += 1
            incomplete.add(doc.id)
        return doc, chunks

    def _release(self, ray) -> None:
        """End the embedding actors: their CPUs go back to the cluster (a later job's chunking tasks, which
        reserve a CPU, would otherwise wait for ever on a cluster whose CPUs idle actors hold)."""
        for actor in self._actors:
            ray.kill(actor)
        self._actors, self._pool = [], None

    def _actor_pool(self, ray):
        """The embedding actors, started on the first batch that needs them (a model each, loaded once)."""
        if self._pool is None:
            from ray.util import ActorPool

            # a killed actor is restarted (its model reloaded) and its call retried, so the job usually
            # finishes; past the retries the RayError of _pipeline ends the run with one line
            actor = ray.remote(num_cpus=1, max_restarts=2, max_task_retries=2)(EmbedWorker)
            # the spec goes by value: an actor restarted after its object-store argument was released could
            # not be rebuilt (Ray warns of exactly that for put arguments with max_restarts)
            spec = self._embedder_spec()
            self._actors = [actor.remote(spec) for _ in range(self._workers)]
            self._pool = ActorPool(self._actors)
            self.actors_started += self._workers
        return self._pool

    def _embed_write(
        self,
        ray,
        batch: _Batch,
        settings: AddSettings,
        markers,
        report: IndexReport,
        bars: _Progress,
        incomplete: set[str],
    ) -> None:
        """Plan a batch's vectors, compute the missing ones on the actor pool (the local engine's embedding
        calls, late chunking per document), then write it."""
        t = time.perf_counter()
        embedder = settings.embedder
        plan = plan_vectors(batch.docs, embedder.dim, settings.reuse, settings.late)
        if plan.late:
            pool = self._actor_pool(ray)
            late = settings.late_options
            for d, vecs in zip(plan.late, pool.map(lambda a, d: a.late.remote(*batch.docs[d], late), plan.late)):
                plan.vectors[d][:] = vecs
                report.embedded += len(batch.docs[d][1])
        parts = plan.text_batches()
        if parts:
            pool = self._actor_pool(ray)
            for part, vecs in zip(parts, pool.map(lambda a, p: a.embed.remote([x for _, _, x in p]), parts)):
                plan.fill(part, vecs)
                report.embedded += len(part)
                bars.update("embedding", "chunk", len(part))
        report.reused += plan.reused
        report.timings["embed"] += time.perf_counter() - t
        self.index._write(batch.docs, plan.vectors, markers, embedder.model_id, report, bars, incomplete)


def _scan(
    paths: list[str], include, exclude, all_files: bool, report: IndexReport, code=False, gitignore=True
) -> tuple[list, list]:
    """The files under ``paths`` and the folders that could not be read (their files are not pruned); every
    problem of the walk is a failure in ``report``."""
    files, problems = list_files([os.fspath(p) for p in paths], include, exclude, all_files, code, gitignore)
    for problem in problems:
        report.failed.append((str(problem.source), problem.problem))
    return files, [p.path for p in problems if isinstance(p, UnreadableFolder)]


def index_with_ray(
    index: Index, paths: list[str], address: str | None = None, workers: int | None = None, **options: Any
) -> IndexReport:
    """:class:`RayIngest` in one call (the CLI's ``--engine ray``)."""
    return RayIngest(index, address=address, workers=workers).run(paths, **options)


__all__ = ["RayIngest", "index_with_ray", "list_files", "load_embedder", "chunk_files", "DocInfo", "TaskSpec"]
