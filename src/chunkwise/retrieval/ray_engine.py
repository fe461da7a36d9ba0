"""Distributed ingestion on Ray: ``chunkwise index PATH... --engine ray [--address ...] [--workers N]``.

The same job as :meth:`chunkwise.retrieval.index.Index.add`, spread over a Ray cluster:

1. the driver creates or checks the collection (same recorded configuration) and reads the document
   markers, then lists the input files (nothing is read yet);
2. Ray **tasks** load and chunk groups of files (a document whose marker holds its current content hash is
   skipped in the task, so an unchanged corpus costs one read per file and no embedding);
3. an **actor pool** of ``workers`` embedders (one model per actor, loaded once) embeds the chunk texts in
   batches of :data:`~chunkwise.retrieval.index.EMBED_BATCH`;
4. the driver writes each embedded batch with the local path's protocol (unmark -> upsert -> delete stale ->
   mark, :meth:`Index._write`), so chunk ids, rows and crash safety are exactly those of the local path: a
   killed job, run again, ends with exactly a clean run's chunks.

At most ``2 * workers`` chunking tasks and ``2 * workers`` embedding calls are in flight, so the driver's
memory stays bounded whatever the corpus size. The store must be a Milvus server (``--uri``) or a custom
:class:`~chunkwise.store.base.Store` given as ``Index(store=...)``: Milvus Lite is a single-process database
that remote workers cannot reach, and only the driver writes anyway.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..document import Chunk
from ..errors import ChunkwiseError, ConfigError, InputError, MissingDependencyError
from ..formats.walk import UnreadableFolder
from ..strategies import DEFAULT_STRATEGY
from ..store.milvus import MilvusStore
from .index import EMBED_BATCH, Index, IndexReport, _Progress

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
class _Batch:
    """Chunked documents on their way to the embedders and the store."""

    docs: list[tuple[DocInfo, list[Chunk]]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(c) for _, c in self.docs)


def import_ray():
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("--engine ray", "ray", "ray") from None
    return ray


def list_files(paths: list[str], include: list[str] | None,
               exclude: list[str] | None) -> tuple[list[str], list[InputError]]:
    """The files :func:`chunkwise.formats.iter_documents` would read, in its order (OS paths: each task
    reads one and gets the same source name as the local path, so doc ids match), and the problems the
    listing met (unreadable folders, folders without files), which the run reports and ``--prune`` respects."""
    from ..formats import list_inputs

    files: list[str] = []
    problems: list[InputError] = []
    for item in list_inputs(paths, include, exclude):
        if item.error is not None:
            problems.append(item.error)
        elif item.path == "-":
            problems.append(InputError("--engine ray reads files, not standard input", source="<stdin>"))
        else:
            assert item.path is not None, "a Found is a path or an error"
            files.append(item.path)
    return files, problems


def chunk_files(files: list[str], strategy, known: dict[str, str], include, exclude,
                load_options: dict | None = None) -> list[tuple]:
    """Task body: load and chunk ``files``; ``("doc", info, chunks)``, ``("skip", doc_id)`` or
    ``("error", source, problem)`` per input, in order."""
    from ..formats import iter_documents

    out: list[tuple] = []
    for source, doc in iter_documents(files, include=include, exclude=exclude, **(load_options or {})):
        if isinstance(doc, ChunkwiseError):
            out.append(("error", str(source), doc.problem))
            continue
        if known.get(doc.id) == doc.content_hash:
            out.append(("skip", doc.id))
            continue
        try:
            chunks = strategy.chunk(doc)
            Index._check_sizes(doc, chunks)
        except InputError as exc:
            out.append(("error", doc.source, exc.problem))
            continue
        for c in chunks:  # vectors from chunking are not used by this engine: do not ship them back
            c.vector = c.sentence_vectors = c.sentence_spans = None
        info = DocInfo(doc.id, doc.source, doc.title, dict(doc.metadata), doc.content_hash)
        out.append(("doc", info, chunks))
    return out


class EmbedWorker:
    """Actor body: one embedder per actor, loaded once, embedding batches of texts."""

    def __init__(self, embedder):
        if isinstance(embedder, dict):
            from ..embeddings import get_embedder

            embedder = get_embedder(embedder["name"], cache=embedder["cache"], cache_dir=embedder["cache_dir"],
                                    **embedder["options"])
        self.embedder = embedder

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed(texts), dtype=np.float32)


class RayIngest:
    """Index files into ``index`` (a server store) on a Ray cluster; :meth:`run` returns an IndexReport.

    ``address``: ``None`` starts a local Ray instance, ``"auto"`` joins the running cluster, ``ray://host:10001``
    connects a Ray client. ``workers``: embedding actors (default: the cluster's CPUs, at least 1).
    """

    def __init__(self, index: Index, address: str | None = None, workers: int | None = None,
                 files_per_task: int = FILES_PER_TASK):
        if workers is not None and workers < 1:
            raise ConfigError(f"--workers must be >= 1, got {workers}")
        # Milvus Lite is refused; another Store (store=..., no ``db`` in the protocol) is written by the driver only
        if isinstance(index.store, MilvusStore) and index.store.db is not None:
            raise ConfigError("--engine ray writes to a Milvus server: give --uri (Milvus Lite is a local "
                              "single-process database that Ray workers cannot share)")
        self.index = index
        self.address = address
        self.workers = workers
        self.files_per_task = files_per_task

    def _init_ray(self):
        ray = import_ray()
        if not ray.is_initialized():
            # a local head's GCS may take longer than Ray's default 30 s to bind its port on a loaded
            # machine (seen on 2 busy cores); the user's own setting wins
            os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "120")
            try:
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                         configure_logging=False)
            except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError ...
                raise ChunkwiseError(f"cannot start or join the Ray cluster: {' '.join(str(exc).split())}",
                                     source=self.address or "local Ray") from None
        return ray

    def _embedder_spec(self):
        ix = self.index
        if isinstance(ix._embedder_arg, str) or ix._embedder_arg is None:
            return {"name": ix._embedder_name(), "cache": ix._cache, "cache_dir": ix._cache_dir,
                    "options": ix._embedder_options}
        return ix._embedder_arg  # an Embedder object: shipped to the actors as it is

    def run(self, paths: list[str], strategy=DEFAULT_STRATEGY, params: dict | None = None, *, include=None,
            exclude=None, prune: bool = False, batch_size: int = 256, recreate: bool = False,
            progress: bool = False, load_options: dict | None = None) -> IndexReport:
        t0 = time.perf_counter()
        ix = self.index
        report = IndexReport()
        strat, embedder, _ = ix._prepare(strategy, params, "text", False, {}, None, {}, recreate)
        if "embedder" in strat.param_names():
            raise ConfigError(f"--engine ray does not run strategy {strat.name!r} yet (it embeds while "
                              "chunking); use a strategy without an embedder or the local engine")
        markers = ix.store.markers()
        if ix.store.hybrid_note:
            report.notes.append(ix.store.hybrid_note)
        files, problems = list_files([os.fspath(p) for p in paths], include, exclude)
        for problem in problems:
            report.failed.append((str(problem.source), problem.problem))
        unreadable = [p.path for p in problems if isinstance(p, UnreadableFolder)]
        report.timings["setup"] = time.perf_counter() - t0
        ray = self._init_ray()
        workers = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        bars = _Progress(progress)
        try:
            self._pipeline(ray, files, strat, embedder, markers, workers, include, exclude, batch_size,
                           report, bars, load_options)
            if prune:
                seen = set(self._seen)
                report.pruned = ix._prune(markers, seen, unreadable=unreadable)
            if report.chunks or report.removed or report.pruned:
                ix.store.flush()
        finally:
            bars.close()
        report.total_chunks = ix.store.count()
        report.seconds = time.perf_counter() - t0
        return report

    def _pipeline(self, ray, files, strat, embedder, markers, workers, include, exclude, batch_size,
                  report: IndexReport, bars: _Progress, load_options: dict | None = None) -> None:
        """Chunking tasks -> embedding actor pool -> driver writes, with bounded work in flight."""
        from ray.util import ActorPool

        # no CPU reserved: the actors may hold every CPU, and the in-flight limit bounds these tasks anyway
        chunk_task = ray.remote(num_cpus=0)(chunk_files)
        # a killed actor is restarted (its model reloaded) and its call retried, so the job usually finishes;
        # past the retries the RayError below ends the run with one line, and a re-run resumes
        actor = ray.remote(num_cpus=1, max_restarts=2, max_task_retries=2)(EmbedWorker)
        spec = ray.put(self._embedder_spec())
        pool = ActorPool([actor.remote(spec) for _ in range(workers)])
        strat_ref = ray.put(strat)
        known_ref = ray.put({d: m.content_hash for d, m in markers.items()})
        groups = deque(files[i:i + self.files_per_task] for i in range(0, len(files), self.files_per_task))
        in_flight: deque = deque()
        self._seen: set[str] = set()
        batch = _Batch()
        try:
            while groups or in_flight:
                while groups and len(in_flight) < 2 * workers:
                    in_flight.append(chunk_task.remote(groups.popleft(), strat_ref, known_ref, include, exclude, load_options))
                t = time.perf_counter()
                results = ray.get(in_flight.popleft())
                report.timings["chunk"] += time.perf_counter() - t
                for item in results:
                    bars.update("files", "file")
                    if item[0] == "error":
                        report.failed.append((item[1], item[2]))
                        continue
                    doc_id = item[1] if item[0] == "skip" else item[1].id
                    if doc_id in self._seen:
                        continue
                    self._seen.add(doc_id)
                    report.documents += 1
                    if item[0] == "skip":
                        report.skipped += 1
                        continue
                    batch.docs.append((item[1], item[2]))
                    if batch.size >= batch_size:
                        self._embed_write(pool, batch, embedder, markers, report, bars)
                        batch = _Batch()
            if batch.docs:
                self._embed_write(pool, batch, embedder, markers, report, bars)
        except ray.exceptions.RayError as exc:
            raise ChunkwiseError(f"the Ray job failed ({type(exc).__name__}: "
                                 f"{' '.join(str(exc).split())[:300]}); run the same command again to resume "
                                 "(finished documents are skipped)", source=self.address or "local Ray") from None

    def _embed_write(self, pool, batch: _Batch, embedder, markers, report: IndexReport, bars: _Progress) -> None:
        """Embed a batch on the actor pool (texts split into EMBED_BATCH calls), then write it."""
        t = time.perf_counter()
        texts = [c.embed_text for _, chunks in batch.docs for c in chunks]
        parts = [texts[a:a + EMBED_BATCH] for a in range(0, len(texts), EMBED_BATCH)]
        vecs = list(pool.map(lambda a, part: a.embed.remote(part), parts))
        flat = np.concatenate(vecs) if vecs else np.zeros((0, embedder.dim), dtype=np.float32)
        report.embedded += len(texts)
        report.timings["embed"] += time.perf_counter() - t
        vectors, at = [], 0
        for _, chunks in batch.docs:
            vectors.append(flat[at:at + len(chunks)])
            at += len(chunks)
        self.index._write(batch.docs, vectors, markers, embedder.model_id, report, bars)


def index_with_ray(index: Index, paths: list[str], address: str | None = None, workers: int | None = None,
                   **options: Any) -> IndexReport:
    """:class:`RayIngest` in one call (the CLI's ``--engine ray``)."""
    return RayIngest(index, address=address, workers=workers).run(paths, **options)


__all__ = ["RayIngest", "index_with_ray", "list_files", "DocInfo"]
