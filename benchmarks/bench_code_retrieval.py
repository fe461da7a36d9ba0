"""Code retrieval by how code files are cut: the ``code`` strategy (syntax boundaries) against
``recursive -p separators=code``, on human questions about code.

Why: ``auto`` reads source files with ``code``; that default should follow a retrieval measurement, not
only the share of chunks starting at a statement (``bench_formats_rst_code.py``).

Data: CoSQA (Huang et al., ACL 2021), github.com/Jun-jie-Huang/CoCLR: human web queries ("sort by a token
in string python") and the Python function annotators judged to answer each
(``data/search/cosqa-retrieval-test-500.json``, ``label`` 1) among ``data/search/code_idx_map.txt``
(6,267 functions). One function per document would make every strategy the same (a function fits one
chunk), so the functions -- the answers and seeded others -- are shuffled into modules of ``--per-file``
functions (``module_NNN.py``, functions separated by two blank lines, as in a source file), and a query's
reference is the character span of its function in its module: span recall asks for the right part of the
right file.

    git clone --bare https://github.com/Jun-jie-Huang/CoCLR coclr.git
    python benchmarks/bench_code_retrieval.py coclr.git --work /tmp/cosqa-modules

It writes the set in ``chunkwise eval``'s neutral layout (docs/ + queries.jsonl) and runs

    chunkwise eval WORK --input-format code --max-tokens 256 --run code=code:max_tokens=256 \
        --run recursive-code=recursive:separators=code,max_tokens=256

(``auto``, the first run, is ``code`` for these files) whose table gives span recall, IoU, nDCG@10 and MRR per run and the paired bootstrap 95 % intervals of
the differences (1,000 resamples over queries). Seeded (``--seed``).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

from bench_retrieval import git_show, write_set


def build(repo: str, out: Path, n_queries: int, n_distractors: int, per_file: int, seed: int) -> Path:
    rng = random.Random(seed)
    code_idx = json.loads(git_show(repo, "data/search/code_idx_map.txt"))
    codes = {idx: code.strip("\n") for code, idx in code_idx.items()}
    rows = [r for r in json.loads(git_show(repo, "data/search/cosqa-retrieval-test-500.json")) if r["label"] == 1]
    rows = rng.sample(rows, min(n_queries, len(rows)))
    gold = {r["retrieval_idx"] for r in rows}
    others = sorted(set(codes) - gold)
    functions = sorted(gold) + rng.sample(others, min(n_distractors, len(others)))
    rng.shuffle(functions)
    docs: dict[str, str] = {}
    where: dict[int, tuple[str, int, int]] = {}
    for m in range(0, len(functions), per_file):
        name = f"module_{m // per_file:03d}.py"
        parts, pos = [], 0
        for idx in functions[m : m + per_file]:
            if parts:
                parts.append("\n\n\n")
                pos += 3
            where[idx] = (name, pos, pos + len(codes[idx]))
            parts.append(codes[idx])
            pos += len(codes[idx])
        docs[name] = "".join(parts) + "\n"
    queries = []
    for r in rows:
        name, a, b = where[r["retrieval_idx"]]
        queries.append({"id": r["idx"], "query": r["doc"], "references": [{"doc": name, "start": a, "end": b}]})
    return write_set(out, docs, queries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cosqa", help="a git dir of github.com/Jun-jie-Huang/CoCLR")
    ap.add_argument("--work", type=Path, default=Path("/tmp/cosqa-modules"))
    ap.add_argument("--queries", type=int, default=300, help="human queries (of the 500 with label 1)")
    ap.add_argument("--distractors", type=int, default=600, help="other functions among the answers")
    ap.add_argument("--per-file", type=int, default=12, help="functions per module")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args(argv)
    out = build(args.cosqa, args.work, args.queries, args.distractors, args.per_file, args.seed)
    n_docs = len(list((out / "docs").iterdir()))
    n_q = sum(1 for _ in open(out / "queries.jsonl", encoding="utf-8"))
    print(f"{n_docs} modules, {n_q} queries in {out}", flush=True)
    cmd = [
        sys.executable,
        "-c",
        "from chunkwise.cli import run; run()",
        "eval",
        str(out),
        "--input-format",
        "code",
        "--max-tokens",
        str(args.max_tokens),
        "--run",
        f"code=code:max_tokens={args.max_tokens}",
        "--run",
        f"recursive-code=recursive:separators=code,max_tokens={args.max_tokens}",
    ]
    print("chunkwise " + " ".join(cmd[3:]), flush=True)
    return subprocess.call(cmd)


if __name__ == "__main__":
    raise SystemExit(main())
