"""Trust nothing chunkwise wrote earlier: a damaged rewritten graph, damaged cached vectors, a read-only index.

Each test runs the real CLI in a child process (``hostile.run_cli``, which fails on any traceback) against
artefacts damaged the way an outside campaign damaged them: 4 KB flipped inside the rewritten graph's
weights (same size), the graph cut in half, ``+inf``/NaN/wrong-length vectors in the
embedding cache, and an index directory the user may read but not write (as ``nobody``: root writes
anyway). Every run must end with a clean run's result and at most one warning line, or one error line.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hostile import GOOD, NOBODY, can_drop_privileges, run_cli, shared_dir  # noqa: F401

DOCS = {
    "keeper.txt": GOOD,
    "pump.txt": "The XR-12 coolant pump must be inspected every 500 operating hours. Check the impeller for "
    "cavitation damage during each inspection. Replace the seal kit if coolant leaks exceed 5 ml per hour.",
    "cafe.txt": "The staff cafeteria now serves vegetarian lunch options on Fridays. Cafeteria opening hours "
    "are 11:30 to 14:00 on weekdays.",
}


def _docs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _good_graph() -> Path:
    """The rewritten graph of the default cache directory (made on first use), with its record."""
    from chunkwise.embeddings.cache import default_cache_dir
    from chunkwise.embeddings.minilm import onnx_model_path
    from chunkwise.embeddings.onnx_graph import fast_graph_path

    path = Path(fast_graph_path(onnx_model_path(), default_cache_dir()))
    assert path.suffix == ".onnx", "the rewrite is needed for these tests"
    return path


def _cache_with_graph(folder: Path, damage: str | None = None) -> Path:
    """A cache directory holding a copy of the good graph, its weights file and its record (no rewrite
    needed), damaged as the campaign did: ``flip`` (4 KB scrambled inside the first attention weight, same
    size: in the weights file, where the graph keeps its weights) or ``cut`` (the second half gone)."""
    import onnx

    from chunkwise.embeddings.onnx_trust import weights_path

    good = _good_graph()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    weights = weights_path(good)
    assert weights.is_file(), "the rewritten graph keeps its weights beside it"
    data = bytearray(good.read_bytes())
    held = bytearray(weights.read_bytes())
    if damage == "flip":
        model = onnx.load(str(good), load_external_data=False)
        inits = {t.name: t for t in model.graph.initializer}
        node = next(n for n in model.graph.node if n.op_type == "MatMul" and any(i in inits for i in n.input))
        init = next(inits[i] for i in node.input if i in inits)
        where = {e.key: e.value for e in init.external_data}
        at = int(where.get("offset", 0)) + 4096
        assert init.data_type == onnx.TensorProto.FLOAT and int(where["length"]) >= 2 * 4096
        # the 1,024 float32 weights there in reverse order: finite, plausible, wrong (inverting the bytes
        # instead gives NaN, which the index's own finiteness check already stopped)
        held[at : at + 4096] = np.frombuffer(bytes(held[at : at + 4096]), dtype=np.float32)[::-1].tobytes()
    elif damage == "cut":
        del data[len(data) // 2 :]
    (folder / good.name).write_bytes(bytes(data))
    (folder / weights.name).write_bytes(bytes(held))
    if good.with_suffix(".json").is_file():
        shutil.copyfile(good.with_suffix(".json"), folder / good.with_suffix(".json").name)
    return folder


def _cached_vectors(cache: Path) -> dict[bytes, np.ndarray]:
    with sqlite3.connect(cache / "embeddings.sqlite3") as conn:
        rows = conn.execute("SELECT key, vec FROM embeddings").fetchall()
    return {bytes(k): np.frombuffer(v, dtype=np.float32) for k, v in rows}


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("chunkwise: warning:")]


@pytest.mark.slow  # CLI index/search subprocesses with the real model (a graph rewrite each)
@pytest.mark.parametrize("damage", ["flip", "cut"])
def test_a_damaged_graph_is_rebuilt_and_gives_a_clean_runs_vectors(tmp_path, damage):
    """Before: the flipped graph indexed with exit 0 and wrong vectors (which then stayed in the embedding
    cache), the cut one ended in an InvalidProtobuf traceback on every run. Now: one warning line, the graph
    rebuilt, and the vectors (read back from each run's embedding cache) are a clean run's within 1e-5."""
    docs = _docs(tmp_path / "docs")
    clean_cache = _cache_with_graph(tmp_path / "clean")
    clean = run_cli(["-q", "index", docs, "--db", tmp_path / "clean.db"], cache_dir=str(clean_cache))
    assert clean.returncode == 0 and not _warnings(clean.err), clean.err

    cache = _cache_with_graph(tmp_path / "damaged", damage)
    done = run_cli(["-q", "index", docs, "--db", tmp_path / "damaged.db"], cache_dir=str(cache))
    assert done.returncode == 0, done.err
    lines = _warnings(done.err)
    assert len(lines) == 1 and "rewritten MiniLM graph" in lines[0] and "rebuilding it" in lines[0], done.err
    want, got = _cached_vectors(clean_cache), _cached_vectors(cache)
    assert want.keys() == got.keys() and len(want) >= 3
    assert max(float(np.abs(want[k] - got[k]).max()) for k in want) < 1e-5

    again = run_cli(["-q", "search", "coolant pump", "--db", tmp_path / "damaged.db"], cache_dir=str(cache))
    assert again.returncode == 0 and "pump.txt" in again.out and not _warnings(again.err), again.err


@pytest.mark.slow  # CLI index/search subprocesses with the real model (a graph rewrite each)
def test_damaged_cached_vectors_are_embedded_again_and_counted(tmp_path):
    """Before: one cached vector holding +inf failed every later run ('embedder returned a non-finite
    vector'), blamed on the embedder. Now: +inf, NaN, a doubled vector and a truncated blob are each embedded
    again, overwritten, and the run says how many in one line."""
    docs = _docs(tmp_path / "docs")
    cache = _cache_with_graph(tmp_path / "cache")
    first = run_cli(["-q", "index", docs, "--db", tmp_path / "a.db"], cache_dir=str(cache))
    assert first.returncode == 0, first.err
    clean = _cached_vectors(cache)
    keys = sorted(clean)
    assert len(keys) >= 3
    bad = [
        np.full(384, np.inf, np.float32).tobytes(),
        np.full(384, np.nan, np.float32).tobytes(),
        (clean[keys[2]] * 2).tobytes(),
    ] + [clean[k].tobytes()[:100] for k in keys[3:]]
    with sqlite3.connect(cache / "embeddings.sqlite3") as conn:
        conn.executemany("UPDATE embeddings SET vec = ? WHERE key = ?", zip(bad, keys))

    done = run_cli(["index", docs, "--db", tmp_path / "b.db"], cache_dir=str(cache))
    assert done.returncode == 0, done.err
    lines = _warnings(done.err)
    assert len(lines) == 1 and f"{len(keys)} cached vectors were damaged" in lines[0], done.err
    repaired = _cached_vectors(cache)
    assert repaired.keys() == clean.keys()
    assert max(float(np.abs(repaired[k] - clean[k]).max()) for k in keys) < 1e-5

    third = run_cli(["index", docs, "--db", tmp_path / "c.db"], cache_dir=str(cache))
    assert third.returncode == 0 and not _warnings(third.err), third.err


def _snapshot(folder: Path) -> list[tuple[str, int, int]]:
    """Every file under ``folder`` with its size and mtime (to show a read-only index was not touched)."""
    out = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            st = os.stat(os.path.join(root, name))
            out.append((os.path.relpath(os.path.join(root, name), folder), st.st_size, st.st_mtime_ns))
    return sorted(out)


def _chmod_tree(folder: Path, dirs: int, files: int) -> None:
    for root, subdirs, names in os.walk(folder):
        os.chmod(root, dirs)
        for name in names:
            os.chmod(os.path.join(root, name), files)
        for name in subdirs:
            os.chmod(os.path.join(root, name), dirs)


@pytest.mark.skipif(
    not can_drop_privileges(),
    reason="needs root (to run a child as nobody) and setpriv; root writes to a read-only folder anyway",
)
@pytest.mark.slow  # CLI index/search subprocesses with the real model (a graph rewrite each)
def test_a_read_only_index_can_be_searched(shared_dir):  # noqa: F811 (the imported fixture)
    """Before: `search` on an index its user may read but not write failed with 'the database directory is
    not writable'. Now: it is searched (through a private copy, the original untouched), and `index` on it
    fails with one line before doing any work."""
    docs = _docs(shared_dir / "docs")
    cache = _cache_with_graph(shared_dir / "cache")
    _chmod_tree(shared_dir, 0o777, 0o666)
    os.chmod(cache, 0o700)
    for path in [cache, *cache.iterdir()]:
        os.chown(path, NOBODY, NOBODY)
    db = shared_dir / "x.db"
    first = run_cli(["-q", "index", docs, "--db", db], user=NOBODY, cache_dir=str(cache))
    assert first.returncode == 0, first.err
    _chmod_tree(db, 0o555, 0o444)
    before = _snapshot(db)

    found = run_cli(
        ["-q", "search", "coolant pump inspection", "--db", db, "--format", "jsonl"], user=NOBODY, cache_dir=str(cache)
    )
    assert found.returncode == 0, found.err
    hits = [json.loads(line) for line in found.out.splitlines()]
    assert hits and os.path.basename(hits[0]["source"]) == "pump.txt"
    assert "chunkwise:" not in found.err, found.err  # (onnxruntime may log that nobody's home is read-only)

    (docs / "new.txt").write_text("A new document about the harbour crane.", encoding="utf-8")
    os.chmod(docs / "new.txt", 0o666)
    refused = run_cli(["index", docs, "--db", db], user=NOBODY, cache_dir=str(cache))
    assert refused.returncode == 2, refused.err
    assert refused.err.count("\n") == 0 and refused.err.startswith("chunkwise: error: "), refused.err
    assert "not writable" in refused.err and "can be searched" in refused.err
    assert _snapshot(db) == before
    _chmod_tree(db, 0o755, 0o644)


def test_a_read_only_index_is_searched_through_a_private_copy(tmp_path, monkeypatch):
    """The same in process (root reads and writes anything, so the check is made to say 'not writable'):
    search answers, writes are refused with one line, the original is not touched and the copy is gone
    after closing."""
    from conftest import FakeEmbedder

    import chunkwise.store.milvus as milvus
    from chunkwise.document import Document
    from chunkwise.errors import InputError
    from chunkwise.retrieval.index import Index

    db = tmp_path / "x.db"
    with Index(db=db, embedder=FakeEmbedder()) as index:
        index.add([Document(text, source=name) for name, text in DOCS.items()])
    before = _snapshot(db)
    monkeypatch.setattr(milvus, "_writable", lambda path: False)
    with Index(db=db, embedder=FakeEmbedder()) as index:
        hits = index.search("coolant pump impeller inspection", k=1)
        assert hits and hits[0].source == "pump.txt"
        copy = Path(index.store.connect().folder)
        with pytest.raises(InputError) as err:
            index.delete("pump.txt")
        assert "not writable" in str(err.value) and "\n" not in str(err.value)
        with pytest.raises(InputError):
            index.store.require_writable()
    assert _snapshot(db) == before
    assert not copy.exists()
