"""What every command costs before it works: start-up CPU of the CLI next to Python's own, in one run.

    python benchmarks/bench_startup.py [--rounds 5] [--db PATH] [--acceptance [--baseline-src OTHER/src [--baseline-db PATH]]]

``--acceptance`` runs only the four rows of the two budgets (``chunk`` against ``import json``, a cold search
against importing numpy, tokenizers and onnxruntime) and prints both ratios; ``--baseline-src OTHER/src`` adds
the same two commands run with another checkout's code, in the same interleaved rounds (its search on an index
that checkout built, ``--baseline-db``).

Each row runs a fresh interpreter ``--rounds`` times (bytecode cached: one warm-up run first), the rows
in turn within each round (ABAB: a change of the machine's load hits every row alike), and takes the median
user+system CPU time of the child (``resource.getrusage(RUSAGE_CHILDREN)`` deltas), which a
machine shared with other work disturbs less than wall time. Rows:

- ``python -c "import json"``: the floor every Python command pays.
- ``chunkwise --version`` and ``chunkwise --help``: budget 2x the floor (no numpy, no strategies).
- ``chunkwise chunk small.txt``: a two-paragraph text file with the default strategy, budget 3x the floor
  (it needs the strategies, numpy and the MiniLM tokenizer; no retrieval, store or model), next to
  ``import numpy, tokenizers``, what it cannot avoid.
- ``import`` rows for what a search on a Milvus Lite directory needs: numpy, tokenizers, onnxruntime, Milvus
  Lite's engine, ``pyarrow.dataset`` (the engine reads its segment files with it when a collection loads;
  it imports pandas) and bm25s (the default hybrid search ranks with it; a row without it too). Then a
  cold ``chunkwise search`` on a small index (``--db``, default: one built here from examples/): budget
  1.3x importing what it needs. chunkwise calls Milvus Lite's engine in process (store/lite.py), so
  pymilvus is not among them; its row shows what a search of a server adds. The search rows also give
  their ratio to importing numpy, tokenizers and onnxruntime alone (what any search with the default
  embedder needs, whatever the store; budget 2.5x).

The two ``default install`` rows repeat the imports and the search with pymilvus and pandas hidden as if not
installed (``bench_first_run.DEFAULT``): ``pip install chunkwise`` has neither since pymilvus became the
``milvus`` extra, while this venv has both (for servers and the tests), and pyarrow imports pandas wherever
it is installed.

Printed: the median CPU seconds, the ratio to the floor, and for the search row the ratio to each import
row (the search also does its work: it opens Milvus Lite, loads the collections, the model and bm25s).
``python -X importtime -c 'from chunkwise.cli import main; main(["--version"])'`` shows where the time of a row goes.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_first_run import DEFAULT  # pymilvus and pandas hidden, as ``pip install chunkwise`` has neither

ROOT = Path(__file__).resolve().parents[1]
#: the children write and use bytecode, as a user's Python does: a shell (or CI) that sets
#: PYTHONDONTWRITEBYTECODE would otherwise compile chunkwise's own modules from source in every round
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


#: what a search on a Milvus Lite directory imports (see the module docstring), and the search itself
NEEDS = "import numpy, tokenizers, onnxruntime, milvus_lite.db, pyarrow.dataset, bm25s"
SEARCH = (
    "import sys\nfrom chunkwise import cli\n"
    "sys.argv = ['chunkwise', '-q', 'search', 'lighthouse lens', '--db', sys.argv[1], '-k', '3']\n"
    "sys.exit(cli.run())\n"
)


def cpu_once(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """CPU seconds (user + system) of one run of ``cmd`` in a child process (``env``: default :data:`ENV`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env or ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cpu_of_rows(rows: list[tuple[str, list[str]]], rounds: int) -> dict[str, float]:
    """Median CPU seconds of each row's command: one warm-up run of each, then ``rounds`` rounds that run
    every row once in turn (ABAB...), so a change of the machine's load hits every row alike. A row named
    in :data:`ROW_ENV` runs with that environment."""
    for name, cmd in rows:
        cpu_once(cmd, ROW_ENV.get(name))
    times: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(rounds):
        for name, cmd in rows:
            times[name].append(cpu_once(cmd, ROW_ENV.get(name)))
    return {name: statistics.median(values) for name, values in times.items()}


#: row name -> the environment its command runs with (the ``--baseline-src`` rows)
ROW_ENV: dict[str, dict[str, str]] = {}


def cpu_of(cmd: list[str], rounds: int) -> float:
    """Median CPU seconds (user + system) of ``cmd`` in a child process, after one warm-up run."""
    return cpu_of_rows([("cmd", cmd)], rounds)["cmd"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--db", help="an index to search (default: examples/ indexed into a temporary one)")
    ap.add_argument(
        "--acceptance",
        action="store_true",
        help="only the four rows of the two start-up budgets (chunk against import json, a cold search "
        "against importing numpy, tokenizers and onnxruntime), more rounds in the same time",
    )
    ap.add_argument(
        "--baseline-src",
        help="with --acceptance: also run chunk and the cold search with PYTHONPATH set to this src folder "
        "(another checkout), in the same interleaved rounds, each ratio against the same baselines",
    )
    ap.add_argument(
        "--baseline-db",
        help="with --baseline-src: the index the baseline searches, built by that checkout (default: examples/ "
        "indexed by it into a temporary one). A checkout reads only the saved copies it knows: searching one "
        "tree's index with another may rebuild them on every run",
    )
    args = ap.parse_args(argv)
    py = sys.executable
    cli = [str(Path(py).parent / "chunkwise")]  # the installed entry point, as a user runs it
    db = args.db
    if db is None:
        db = str(Path(tempfile.mkdtemp(prefix="bench-startup-")) / "examples.db")
        subprocess.run([*cli, "-q", "index", str(ROOT / "examples"), "--db", db], check=True, env=ENV)
    small = str(Path(tempfile.mkdtemp(prefix="bench-startup-")) / "small.txt")
    Path(small).write_text("The keeper trims the wick.\n\nShips pass in the storm.\n", encoding="utf-8")
    rows = [
        ("python -c 'import json'", [py, "-c", "import json"]),
        ("chunkwise --version", [*cli, "--version"]),
        ("chunkwise --help", [*cli, "--help"]),
        ("chunkwise chunk small.txt", [*cli, "chunk", small]),
        ("import numpy, tokenizers", [py, "-c", "import numpy, tokenizers"]),
        ("import numpy", [py, "-c", "import numpy"]),
        ("import numpy, tok., onnxrt", [py, "-c", "import numpy, tokenizers, onnxruntime"]),
        ("import all but bm25s", [py, "-c", "import numpy, tokenizers, onnxruntime, milvus_lite.db, pyarrow.dataset"]),
        ("import what search needs", [py, "-c", NEEDS]),
        ("import pymilvus (a server)", [py, "-c", "import pymilvus"]),
        ("chunkwise search (cold)", [*cli, "-q", "search", "lighthouse lens", "--db", db, "-k", "3"]),
        ("default install: imports", [py, "-c", DEFAULT + NEEDS]),
        ("default install: search", [py, "-c", DEFAULT + SEARCH, db]),
    ]
    load_before = os.getloadavg()
    if args.acceptance:
        budgets = list(BUDGETS)
        if args.baseline_src:
            env = {**ENV, "PYTHONPATH": str(Path(args.baseline_src).resolve())}
            base_db = args.baseline_db
            if base_db is None:
                base_db = str(Path(tempfile.mkdtemp(prefix="bench-startup-")) / "examples.db")
                subprocess.run([*cli, "-q", "index", str(ROOT / "examples"), "--db", base_db], check=True, env=env)
            for name, base, budget in BUDGETS:
                ROW_ENV[f"{name} (baseline)"] = env
                cmd = [base_db if part == db else part for part in dict(rows)[name]]
                rows.append((f"{name} (baseline)", cmd))
                budgets.append((f"{name} (baseline)", base, budget))
        return acceptance(rows, args.rounds, load_before, budgets)
    results = cpu_of_rows(rows, args.rounds)
    floor = results["python -c 'import json'"]
    needs = results["import what search needs"]
    imports = {"chunkwise search (cold)": needs, "default install: search": results["default install: imports"]}
    runs = results["import all but bm25s"]
    print(f"{'row':28} {'CPU s':>7} {'x floor':>8}  budget")
    budgets = {
        "chunkwise --version": ("floor", 2.0),
        "chunkwise --help": ("floor", 2.0),
        "chunkwise chunk small.txt": ("floor", 3.0),
        "chunkwise search (cold)": ("needs", 1.3),
        "default install: search": ("needs", 1.3),
    }
    for name, cpu in results.items():
        line = f"{name:28} {cpu:7.3f} {cpu / floor:8.1f}"
        if name in budgets:
            ref_name, limit = budgets[name]
            ref = floor if ref_name == "floor" else imports[name]
            ratio = cpu / ref
            line += f"  {ratio:.2f}x {'the floor' if ref_name == 'floor' else 'its imports'} (budget {limit}x)"
            if name == "chunkwise search (cold)":
                line += f", {cpu / runs:.2f}x without bm25s"
            if name.endswith("search (cold)") or name.endswith(": search"):
                base = results["import numpy, tok., onnxrt"]
                line += f"; {cpu / base:.2f}x numpy + tokenizers + onnxruntime (budget 2.5x)"
        print(line)
    print(
        f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after; {args.rounds} rounds, interleaved"
    )
    return 0


#: the two start-up budgets: (row, baseline row, budget)
BUDGETS = (
    ("chunkwise chunk small.txt", "python -c 'import json'", 3.0),
    ("chunkwise search (cold)", "import numpy, tok., onnxrt", 2.5),
)


def acceptance(
    rows: list[tuple[str, list[str]]],
    rounds: int,
    load_before: tuple[float, ...],
    budgets: list[tuple[str, str, float]] | None = None,
) -> int:
    """The rows of ``budgets`` (default :data:`BUDGETS`) alone, interleaved; each ratio with its baseline from
    the same rounds."""
    budgets = list(BUDGETS) if budgets is None else budgets
    wanted = {name for pair in budgets for name in pair[:2]}
    results = cpu_of_rows([row for row in rows if row[0] in wanted], rounds)
    for name, base, budget in budgets:
        ratio = results[name] / results[base]
        print(
            f"{name:39} {results[name] * 1000:6.0f} CPU-ms = {ratio:.2f}x {base} ({results[base] * 1000:.0f} "
            f"CPU-ms; budget {budget}x: {'met' if ratio <= budget else 'NOT met'})"
        )
    print(f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after; {rounds} rounds, interleaved")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
