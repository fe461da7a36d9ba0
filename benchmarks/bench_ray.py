"""Ingestion throughput: the local engine vs ``--engine ray`` with 1..N embedding workers, side by side.

One generated corpus (random-word paragraphs, fixed seed), MiniLM (ONNX int8, no cache), recursive chunks of
<= 256 tokens, written to a Milvus Lite server on loopback (a fresh collection per run). Prints chunks/s and
the share of wall time spent embedding (for Ray: the driver's wait on the actor pool), then, for each Ray run,
the same run again with nothing changed: its time and how many embedding actors it started (none: the
chunking tasks compare the markers and no model is loaded). Needs the ``ray`` extra.

    .venv/bin/python benchmarks/bench_ray.py [--files 40] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    import ray
    from milvus_servers import start_milvus_lite
    from test_milvus_server import write_corpus

    from chunkwise.retrieval import Index
    from chunkwise.retrieval.ray_engine import RayIngest

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        write_corpus(folder, 0, [f"f{i:04d}.txt" for i in range(args.files)])
        srv = start_milvus_lite(Path(tmp) / "srv")
        ray.init(include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1", configure_logging=False)
        print(f"{'engine':10} {'chunks':>7} {'s':>6} {'chunks/s':>9} {'embed %':>8}")
        try:
            runs = [("local", None)] + [(f"ray x{w}", w) for w in args.workers]
            for name, workers in runs:
                with Index(uri=srv.uri, collection=f"b_{name.replace(' ', '_')}", embedder="minilm", cache=False) as ix:
                    ix.embedder()  # model load outside the timing, as the Ray actors load theirs at start
                    t = time.perf_counter()
                    if workers is None:
                        rep = ix.add(folder, params={"max_tokens": 256})
                    else:
                        rep = RayIngest(ix, workers=workers).run([folder], params={"max_tokens": 256})
                    dt = time.perf_counter() - t
                    if workers is not None:  # nothing changed: no actor may start
                        t = time.perf_counter()
                        again = RayIngest(ix, workers=workers)
                        noop = again.run([folder], params={"max_tokens": 256})
                        redo = (time.perf_counter() - t, noop.skipped, again.actors_started)
                print(
                    f"{name:10} {rep.chunks:7d} {dt:6.1f} {rep.chunks / dt:9.1f} "
                    f"{100 * rep.timings['embed'] / dt:7.0f}%",
                    flush=True,
                )
                if workers is not None:
                    print(
                        f"{name:10} re-run with nothing changed: {redo[0]:.1f} s, {redo[1]} skipped, "
                        f"{redo[2]} actors started",
                        flush=True,
                    )
        finally:
            ray.shutdown()
            srv.kill()


if __name__ == "__main__":
    main()
