"""The defaults matrix: retrieval mode x expansion on public sets of different kinds, against the default.

Why: ``search``'s defaults (hybrid retrieval, the section-first pass, no expansion) were chosen set by set;
this script checks them together on one footing. Every set is evaluated with the default chunking (``auto``)
and the default embedder (MiniLM) through ``chunkwise eval``'s Evaluator, which ranks with the function
``Index.search`` ranks with (``chunkwise.retrieval.search.rank_candidates``), so a run here is what
``search`` returns for that configuration. Runs:

- retrieval: ``dense`` (vectors alone, no section pass), ``hybrid`` (BM25 + vectors, z-score fusion, no
  section pass), ``hybrid+sections`` (the default: a query naming a key such as ``3.8.13`` gets the chunks of
  the sections holding it first);
- expansion: ``none`` (the hits alone: the default before this measurement), ``neighbors:1`` (each hit with
  the chunk before and after it) and ``auto`` (by document kind: ``neighbors:1`` for text without headings or
  pages, the hit alone elsewhere; what ``ask --budget`` and ``eval``'s budgets use when no mode is given);
  ``--expansions`` sets the list besides ``none`` (``neighbors:2``, ``parent:512``, ``section``...).

Every run names its expansion explicitly. Metrics: document nDCG@10 (expansion does not change it) and span
recall at a token budget
(``span_recall@1k/2k/4k``: the share of the gold characters inside the first B cl100k tokens of context the
reader is handed, the ranked chunks widened by the run's expansion). Each run minus the default with a
paired bootstrap 95 % interval over the questions; the baseline is ``hybrid+sections`` with ``none`` (``chunkwise.evaluation.metrics.paired_bootstrap``).

Sets (public; each read from a bare git clone, nothing is downloaded here; ``--repos ROOT`` holds clones as
``ROOT/<owner>+<name>/repo``):

- ``versions``: release notes, ``bench_sections.py``'s benchmark (httpx, pydantic, black, rich, starlette
  changelogs, newest 20 versions each, 100 questions naming a version; gold: the version's Added/Fixed
  subsection, else its section). 5 documents, so its nDCG@10 says little: span recall is the measure.
- ``scifact``: claims over abstracts (``bench_retrieval.py``'s SciFact: Kirloxious/CSI4107_Assignment2
  claims and qrels, nice-hku-coder/coder_data abstracts), ``--claims`` claims over their abstracts plus
  ``--abstract-distractors`` others (seeded).
- ``qmsum``: meeting transcripts (Yale-LILY/QMSum test meetings, ``--meetings`` of them in documents of 40
  turns, the human queries with their gold turns).
- ``cosqa``: code Q&A (Jun-jie-Huang/CoCLR's CoSQA: human web queries and the Python function that answers
  each; ``--code-queries`` queries over their functions plus ``--code-distractors`` others).
- ``cosqa-modules``: the same kind of queries over code kept as source files (``bench_code_retrieval.py``'s
  layout: ``2 * --code-queries`` queries, their functions and ``--code-distractors`` others shuffled into
  modules of 12 functions; a query's reference is its function's span). Not in the default ``--only``: a
  check that what holds for one function per document holds for code in modules.
- ``chroma``: prose with short answers (Chroma's chunking-evaluation set as published: 5 corpora, 472
  LLM-written questions with answer spans; 5 documents, so again span recall is the measure).

    python benchmarks/bench_defaults_matrix.py --repos /work/.mirror --out-dir /tmp/defaults-matrix
    python benchmarks/bench_defaults_matrix.py --repos /work/.mirror --only qmsum --chunking fixed:max_tokens=128,overlap=16

Each set's rows are written to ``OUT_DIR/<set>.json`` as soon as it is done; ``--table`` prints the Markdown
table of every JSON in ``--out-dir``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_retrieval import prepare_cosqa, prepare_qmsum, prepare_scifact, write_set  # noqa: E402

#: retrieval modes: label -> run keys
MODES = {
    "dense": "hybrid=false,sections=false",
    "hybrid": "sections=false",
    "hybrid+sections": "",
}
DEFAULT = ("hybrid+sections", "none")
BUDGET_METRICS = ("span_recall@1k", "span_recall@2k", "span_recall@4k")
METRICS = ("ndcg@10", *BUDGET_METRICS)
SETS = ("versions", "scifact", "qmsum", "cosqa", "cosqa-modules", "chroma")
REPOS = {
    "qmsum": "Yale-LILY+QMSum",
    "cosqa": "Jun-jie-Huang+CoCLR",
    "claims": "Kirloxious+CSI4107_Assignment2",
    "abstracts": "nice-hku-coder+coder_data",
}


def prepare_versions(repos: Path, out: Path, versions: int) -> Path:
    """bench_sections.py's answerable questions as a neutral-layout set: each changelog one document, each
    question's reference its gold subsection (Added/Fixed), else its version section."""
    import tempfile

    from bench_sections import cut, questions_for, read_sources

    texts = read_sources(repos, None, Path(tempfile.mkdtemp(prefix="defaults-matrix-")))
    docs, queries = {}, []
    for product, full in texts.items():
        text, sections = cut(full, versions)
        name = f"{product}-changelog.md"
        docs[name] = text
        for q in questions_for(product, full, text, sections):
            span = q.sub or q.gold
            if span is None:  # unanswerable: no gold to recall
                continue
            queries.append(
                {
                    "id": f"{product}-{q.version}",
                    "query": q.text,
                    "references": [{"doc": name, "start": span[0], "end": span[1]}],
                }
            )
    return write_set(out, docs, queries)


def prepare(name: str, args) -> Path:
    work = Path(args.work) / name
    if args.converted and (work / "queries.jsonl").is_file():
        return work
    repo = lambda key: str(Path(args.repos) / REPOS[key] / "repo")  # noqa: E731
    if name == "versions":
        return prepare_versions(Path(args.repos), work, args.versions)
    if name == "scifact":
        return prepare_scifact(
            repo("claims"), repo("abstracts"), work, args.claims, args.seed, args.abstract_distractors
        )
    if name == "qmsum":
        return prepare_qmsum(repo("qmsum"), work, args.meetings, 40, args.seed)
    if name == "chroma":
        return Path(args.chroma)
    if name == "cosqa":
        return prepare_cosqa(repo("cosqa"), work, args.code_queries, args.code_distractors, args.seed)
    if name == "cosqa-modules":
        from bench_code_retrieval import build

        return build(repo("cosqa"), work, 2 * args.code_queries, args.code_distractors, 12, args.seed)
    raise ValueError(name)


def measure(name: str, folder: Path, args) -> dict:
    from chunkwise.embeddings import get_embedder
    from chunkwise.evaluation import Evaluator, load_dataset, parse_run_spec
    from chunkwise.evaluation.metrics import paired_bootstrap

    ds = load_dataset(str(folder))
    ev = Evaluator(ds, get_embedder("minilm"), k=10, n_boot=args.bootstrap, seed=args.seed)
    results = {}
    t_set = time.perf_counter()
    for mode, keys in MODES.items():
        for expansion in ("none", *args.expansions.split(",")):
            extra = [k for k in (keys, f"expand={expansion}") if k]
            text = args.chunking + (("," if ":" in args.chunking else ":") + ",".join(extra) if extra else "")
            spec = parse_run_spec(text)
            t0 = time.perf_counter()
            results[(mode, expansion)] = ev.run(spec)
            print(f"{name} {mode} {expansion}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    base = results[DEFAULT]
    rows = []
    for (mode, expansion), res in results.items():
        row: dict = {"set": name, "mode": mode, "expand": expansion}
        for m in METRICS:
            row[m] = res.scores[m]
            if (mode, expansion) != DEFAULT:
                b = paired_bootstrap(res.per_query[m], base.per_query[m], args.bootstrap, args.seed)
                row[f"{m} diff"] = [b["diff"], b["lo"], b["hi"], bool(b["significant"])]
        rows.append(row)
    stats = base.stats
    return {
        "set": name,
        "documents": len(ds.documents),
        "queries": len(ds.queries),
        "chunking": args.chunking,
        "chunks": stats.get("chunks"),
        "tokens_per_chunk": stats.get("tokens_per_chunk_mean"),
        "seconds": round(time.perf_counter() - t_set, 1),
        "rows": rows,
    }


def cell(row: dict, m: str) -> str:
    pct = 1 if m == "ndcg@10" else 100
    value = f"{row[m] * pct:.3f}" if pct == 1 else f"{row[m] * pct:.1f}"
    if f"{m} diff" not in row:
        return f"**{value}**"
    d, lo, hi, sig = row[f"{m} diff"]
    f = (lambda x: f"{x:+.3f}") if pct == 1 else (lambda x: f"{x * 100:+.1f}")
    return f"{value} ({f(d)} [{f(lo)}, {f(hi)}]{'*' if sig else ''})"


def table(out_dir: Path) -> str:
    lines = ["| set | retrieval | expand | nDCG@10 | span recall@1k | @2k | @4k |", "|---|---|---|---|---|---|---|"]
    for name in SETS:
        path = out_dir / f"{name}.json"
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        for row in data["rows"]:
            nd = cell(row, "ndcg@10") if row["expand"] == "none" else "(same)"
            lines.append(
                f"| {name} | {row['mode']} | {row['expand']} | {nd} | "
                + " | ".join(cell(row, m) for m in BUDGET_METRICS)
                + " |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", default="/work/.mirror", help="folder of bare clones <owner>+<name>/repo")
    ap.add_argument("--work", default="/tmp/chunkwise-defaults-matrix", help="where the converted sets go")
    ap.add_argument("--out-dir", default="/tmp/chunkwise-defaults-matrix/results", help="one JSON per set")
    ap.add_argument(
        "--only",
        default=",".join(s for s in SETS if s != "cosqa-modules"),
        help=f"comma-separated subset of {','.join(SETS)}",
    )
    ap.add_argument("--chunking", default="auto", help="the run spec's strategy part (default: auto)")
    ap.add_argument("--expansions", default="neighbors:1,auto", help="expansions besides none, comma-separated")
    ap.add_argument("--versions", type=int, default=20, help="versions kept per changelog")
    ap.add_argument("--claims", type=int, default=150)
    ap.add_argument("--abstract-distractors", type=int, default=350)
    ap.add_argument("--meetings", type=int, default=12)
    ap.add_argument("--code-queries", type=int, default=150)
    ap.add_argument("--code-distractors", type=int, default=600)
    ap.add_argument("--chroma", default="/work/shared/data/chroma-eval", help="Chroma's evaluation set, as published")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--converted", action="store_true", help="reuse the sets converted under --work")
    ap.add_argument("--table", action="store_true", help="print the Markdown table of --out-dir and stop")
    args = ap.parse_args()
    out_dir = Path(args.out_dir)
    if args.table:
        print(table(out_dir))
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in args.only.split(","):
        folder = prepare(name, args)
        print(f"{name}: converted to {folder}", file=sys.stderr, flush=True)
        res = measure(name, folder, args)
        (out_dir / f"{name}.json").write_text(json.dumps(res, indent=1), encoding="utf-8")
        print(f"{name}: {res['queries']} queries, {res['chunks']} chunks, {res['seconds']} s", file=sys.stderr)
    print(table(out_dir))


if __name__ == "__main__":
    main()
