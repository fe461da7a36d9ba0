"""``--engine ray`` on a local Ray cluster (started here, loopback) against a Milvus Lite server.

The Ray engine must produce the same collection as the local path on the same input (ids, texts, vectors
within 1e-6), be incremental the same way, and a ``chunkwise index --engine ray`` process killed with
SIGKILL mid-job, run again, must end identical to a clean run. Runs when the ``ray`` extra is installed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from milvus_servers import start_milvus_lite
from milvus_servers import CLI, contents, new_collection, wait_for_chunks, write_corpus

from chunkwise.errors import ConfigError
from chunkwise.retrieval import Index
from chunkwise.store.milvus import MilvusStore

ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed (pip install 'chunkwise[ray]')")
pytestmark = pytest.mark.slow
PARAMS = {"max_tokens": 64}


@pytest.fixture(scope="module")
def lite(tmp_path_factory):
    try:
        srv = start_milvus_lite(tmp_path_factory.mktemp("ray-lite"))
    except (OSError, RuntimeError) as exc:
        pytest.skip(f"milvus-lite server cannot start on this machine: {exc}")
    yield srv
    srv.kill()


@pytest.fixture(scope="module")
def local_ray():
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "120")  # loaded CI machines: slow GCS start
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1",
             configure_logging=False)
    yield
    ray.shutdown()


def vectors(srv, collection: str) -> dict[str, np.ndarray]:
    store = MilvusStore(uri=srv.uri, collection=collection, timeout=60)
    try:
        store.open()
        return {r["id"]: np.asarray(r["vector"], dtype=np.float32) for r in store.scan_chunks(["id", "vector"])}
    finally:
        store.close()


def test_ray_equals_local_and_is_incremental(lite, local_ray, tmp_path):
    from chunkwise.retrieval.ray_engine import RayIngest

    folder = tmp_path / "corpus"
    write_corpus(folder, 3, [f"f{i}.txt" for i in range(8)])
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    local, dist = new_collection(), new_collection()
    with Index(uri=lite.uri, collection=local, embedder="minilm", cache=False) as ix:
        ref = ix.add(folder, params=PARAMS, batch_size=32)
    with Index(uri=lite.uri, collection=dist, embedder="minilm", cache=False) as ix:
        rep = RayIngest(ix, workers=2).run([folder], params=PARAMS, batch_size=32)
        assert (rep.indexed, rep.chunks, len(rep.failed)) == (ref.indexed, ref.chunks, 1)
        assert rep.failed[0][0].endswith("broken.pdf")
        again = RayIngest(ix, workers=2).run([folder], params=PARAMS, batch_size=32)
        assert (again.skipped, again.chunks, again.embedded) == (8, 0, 0)
    assert contents(lite, dist) == contents(lite, local)
    a, b = vectors(lite, local), vectors(lite, dist)
    assert a.keys() == b.keys()
    assert max(float(np.abs(a[k] - b[k]).max()) for k in a) <= 1e-6


def test_ray_refuses_milvus_lite_path(tmp_path):
    from chunkwise.retrieval.ray_engine import RayIngest

    with pytest.raises(ConfigError, match="--uri"):
        RayIngest(Index(db=tmp_path / "x.db"))


def test_ray_writes_to_any_store(local_ray, tmp_path):
    """A Store given as ``store=`` (no Milvus Lite path, no ``db`` attribute) is written by the driver, the
    same chunks as the local path (``RayIngest`` once read ``store.db``, which the Store protocol lacks)."""
    from test_extending import MemoryStore

    from chunkwise.retrieval.ray_engine import RayIngest

    folder = tmp_path / "corpus"
    write_corpus(folder, 2, [f"f{i}.txt" for i in range(3)])
    local, dist = MemoryStore(), MemoryStore()
    with Index(store=local, embedder="minilm", cache=False) as ix:
        ref = ix.add(folder, params=PARAMS, batch_size=16)
    with Index(store=dist, embedder="minilm", cache=False) as ix:
        rep = RayIngest(ix, workers=1).run([folder], params=PARAMS, batch_size=16)
    assert (rep.indexed, rep.chunks) == (ref.indexed, ref.chunks) and rep.chunks > 0
    assert dist.rows.keys() == local.rows.keys()
    assert dist.marks == local.marks


def test_ray_job_killed_then_resumed(lite, local_ray, tmp_path):
    """A real ``chunkwise index --engine ray --address auto`` driver (joining the test's cluster) SIGKILLed
    mid-job; the re-run completes and the collection equals a clean run's."""
    folder = tmp_path / "corpus"
    write_corpus(folder, 5, [f"f{i}.txt" for i in range(10)])
    args = ["-q", "--no-cache", "index", str(folder), "--max-tokens", "64", "--batch-size", "8", "--uri",
            lite.uri, "--engine", "ray", "--workers", "1", "--address", "auto"]
    clean, coll = new_collection(), new_collection()
    with Index(uri=lite.uri, collection=clean, embedder="minilm", cache=False) as ix:
        ix.add(folder, params={"max_tokens": 64}, batch_size=8)
    env = {**os.environ, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    proc = subprocess.Popen([sys.executable, "-c", CLI, *args, "--collection", coll], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    wait_for_chunks(lite, coll, proc, timeout=180)
    os.kill(proc.pid, signal.SIGKILL)  # the driver; its actors and tasks die with their job
    proc.wait(timeout=30)
    done = subprocess.run([sys.executable, "-c", CLI, *args, "--collection", coll], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert contents(lite, coll) == contents(lite, clean)
