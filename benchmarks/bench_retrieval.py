"""Dense vs hybrid retrieval (RRF and z-score fusion) on public sets of different document kinds.

Why: `search`, `ask`, `eval` and the adapters need one default retrieval. An outside evaluation found no
chunking strategy significantly better than fixed 256/32 under one embedder, but hybrid retrieval (BM25 +
vectors) better on every kind of document it tried. This script measures it here, with the project's own
`Evaluator` (chunk -> embed -> MemoryStore -> score) and the default MiniLM embedder, so the default is
chosen by numbers that anyone can reproduce.

Sets (each converted to the neutral layout of `chunkwise eval`: docs/ + queries.jsonl, written to --work):

- ``qmsum``: meeting transcripts, human queries with the transcript turns that answer them.
  QMSum (Zhong et al., NAACL 2021), github.com/Yale-LILY/QMSum, ``data/ALL/test/*.json``,
  ``specific_query_list`` (query + ``relevant_text_span`` in turns). Each meeting is cut into documents of
  ``--turns`` turns (``Speaker: text`` lines), so document-level nDCG asks for the right part of the right
  meeting; a reference that crosses a cut becomes one reference per document.
- ``cosqa``: code Q&A, human web queries ("sort by a token in string python") and the Python function
  annotators judged to answer it. CoSQA (Huang et al., ACL 2021), github.com/Jun-jie-Huang/CoCLR,
  ``data/search/cosqa-retrieval-test-500.json`` (queries with ``label`` 1 only) over
  ``data/search/code_idx_map.txt`` (6,267 functions). One function per document.
- ``scifact``: scientific claims and the abstracts that support or contradict them. SciFact (Wadden et al.,
  EMNLP 2020), in its BEIR form: the claims and ``qrels/{train,test}.tsv`` from
  github.com/Kirloxious/CSI4107_Assignment2 (``scifact/``; its ``corpus.jsonl`` is not in the public copy)
  and the abstracts from github.com/nice-hku-coder/coder_data, ``scifact_antonym/corpus_candidate.jsonl``:
  2,101 of SciFact's 5,183 abstracts (the full ``scifact/corpus.jsonl`` there is too large for the public
  copy). Only claims whose cited abstracts are all among those 2,101 are kept (train and test claims
  together, 265), so every distractor is an abstract some other claim cites: a harder pool than the full
  corpus, and not comparable with published SciFact numbers. One abstract per document.
- ``chroma``: Chroma's chunking-evaluation set (finance, pubmed, wikitexts, chatlogs, state of the union;
  LLM-written questions with character spans), ``../shared/data/chroma-eval``; corpora cut into documents
  of about ``--doc-chars`` characters at line breaks, so nDCG is not a 5-document ranking.

Fetch the first two as git repositories (any clone will do; the script reads with ``git show HEAD:path``):

    git clone --bare https://github.com/Yale-LILY/QMSum qmsum.git
    git clone --bare https://github.com/Jun-jie-Huang/CoCLR coclr.git
    git clone --bare https://github.com/Kirloxious/CSI4107_Assignment2 claims.git
    git clone --bare https://github.com/nice-hku-coder/coder_data abstracts.git
    python benchmarks/bench_retrieval.py --qmsum qmsum.git --cosqa coclr.git \
        --scifact claims.git --scifact-abstracts abstracts.git [--chroma ../shared/data/chroma-eval]

Subsampling (so each set runs in a few minutes on 2 shared cores, cold cache): QMSum ``--meetings``
(default 12 of the 35 test meetings), CoSQA ``--code-queries`` (200 queries) over their functions plus
``--code-distractors`` (1,500) others, Chroma all questions over ``--chroma-corpora`` (default all but
finance), SciFact ``--claims`` (all 265) over all 2,101 abstracts or, with ``--abstract-distractors N``,
over the kept claims' abstracts plus N others. Seeded (``--seed``). Chunking is fixed 256/32 MiniLM tokens
for every run; only retrieval changes. Reported: document nDCG@10, document recall@10 and Chroma's span recall@10, each as dense, and
hybrid - dense with a paired bootstrap 95 % interval (1,000 resamples, `chunkwise.evaluation.metrics`).

Embedders (``--embedders minilm,e5,static,use-multilingual``; default ``minilm`` alone): MiniLM is the
baseline and always runs; every other embedder gets a dense and a default hybrid (z-score 0.8) run over the
same chunks (fixed 256/32 MiniLM tokens whatever the embedder, so only the vectors change), each reported
with its difference to MiniLM under the same retrieval (paired bootstrap as above), its wall seconds and
CPU seconds. An embedder whose extra is missing (or, for ``static``, that is not distilled yet) is skipped
with one line. ``--converted`` reads the sets already converted under ``--work`` instead of converting
them again, so no source repository is needed for a rerun.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("ndcg@10", "doc_recall@10", "recall@10")
CHUNKING = "fixed:max_tokens=256,overlap=32"
RUNS = {
    "dense": CHUNKING + ",hybrid=false",
    "hybrid rrf": CHUNKING + ",hybrid=true,fusion=rrf",
    "hybrid zscore": CHUNKING + ",hybrid=true,fusion=zscore",
}
#: what every embedder besides the MiniLM baseline is measured under: vectors alone and the default hybrid
EMBEDDER_RUNS = ("dense", "hybrid zscore")
SET_NAMES = ("qmsum", "cosqa", "scifact", "chroma")


def git_show(repo: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, "show", f"HEAD:{path}"], check=True, capture_output=True, text=True
    ).stdout


def write_set(out: Path, docs: dict[str, str], queries: list[dict]) -> Path:
    """A neutral-layout dataset folder: docs/<id> and queries.jsonl."""
    for doc_id, text in docs.items():
        p = out / "docs" / doc_id
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8", newline="")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q) + "\n")
    return out


def windows(
    name: str,
    text: str,
    refs_by_query: list[tuple[str, str, list[tuple[int, int]]]],
    doc_chars: int,
    docs: dict[str, str],
    queries: list[dict],
) -> None:
    """Cut ``text`` into documents of about ``doc_chars`` characters at line breaks and map each query's
    character spans onto them (a span crossing a cut becomes one reference per document)."""
    cuts = [0]
    while cuts[-1] < len(text):
        nxt = text.find("\n", cuts[-1] + doc_chars)
        cuts.append(len(text) if nxt < 0 else nxt + 1)
    for w, (a, b) in enumerate(zip(cuts, cuts[1:])):
        docs[f"{name}/{w:03d}.txt"] = text[a:b]
    for qid, qtext, spans in refs_by_query:
        refs = []
        for s, e in spans:
            for w, (a, b) in enumerate(zip(cuts, cuts[1:])):
                lo, hi = max(s, a), min(e, b)
                if hi > lo and text[lo:hi].strip():
                    refs.append({"doc": f"{name}/{w:03d}.txt", "start": lo - a, "end": hi - a})
        if refs:
            queries.append({"id": qid, "query": qtext, "references": refs})


def prepare_qmsum(repo: str, out: Path, meetings: int, turns: int, seed: int) -> Path:
    names = subprocess.run(
        ["git", "-C", repo, "ls-tree", "--name-only", "HEAD", "data/ALL/test/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    names = sorted(random.Random(seed).sample(sorted(names), min(meetings, len(names))))
    docs: dict[str, str] = {}
    queries: list[dict] = []
    for path in names:
        meeting = json.loads(git_show(repo, path))
        lines, starts = [], []
        pos = 0
        for t in meeting["meeting_transcripts"]:
            line = f"{t['speaker']}: {' '.join(t['content'].split())}\n"
            starts.append(pos)
            lines.append(line)
            pos += len(line)
        text = "".join(lines)
        starts.append(len(text))
        name = Path(path).stem
        # documents of `turns` turns each
        cuts = list(range(0, len(lines), turns)) + [len(lines)]
        for w, (a, b) in enumerate(zip(cuts, cuts[1:])):
            docs[f"{name}/{w:03d}.txt"] = "".join(lines[a:b])
        for qi, q in enumerate(meeting["specific_query_list"]):
            refs = []
            for span in q["relevant_text_span"]:
                a, b = int(span[0]), min(int(span[1]), len(lines) - 1)
                for w, (wa, wb) in enumerate(zip(cuts, cuts[1:])):
                    lo, hi = max(a, wa), min(b + 1, wb)
                    if hi > lo:
                        refs.append(
                            {
                                "doc": f"{name}/{w:03d}.txt",
                                "start": starts[lo] - starts[wa],
                                "end": starts[hi] - starts[wa] - 1,
                            }
                        )
            if refs:
                queries.append({"id": f"{name}-{qi}", "query": q["query"], "references": refs})
    return write_set(out, docs, queries)


def prepare_cosqa(repo: str, out: Path, n_queries: int, n_distractors: int, seed: int) -> Path:
    rng = random.Random(seed)
    code_idx = json.loads(git_show(repo, "data/search/code_idx_map.txt"))
    codes = {idx: code for code, idx in code_idx.items()}
    rows = [r for r in json.loads(git_show(repo, "data/search/cosqa-retrieval-test-500.json")) if r["label"] == 1]
    rows = rng.sample(rows, min(n_queries, len(rows)))
    keep = {r["retrieval_idx"] for r in rows}
    others = sorted(set(codes) - keep)
    keep |= set(rng.sample(others, min(n_distractors, len(others))))
    docs = {f"{i:05d}.txt": codes[i] for i in sorted(keep)}
    queries = [{"id": r["idx"], "query": r["doc"], "references": [f"{r['retrieval_idx']:05d}.txt"]} for r in rows]
    return write_set(out, docs, queries)


def prepare_scifact(
    claims_repo: str, abstracts_repo: str, out: Path, n_queries: int, seed: int, n_distractors: int | None = None
) -> Path:
    """The claims whose cited abstracts are all in the public candidate pool, over that pool (or, with
    ``n_distractors``, over the kept claims' abstracts plus that many seeded others: a smaller, easier pool
    for an embedder too slow for all 2,101)."""
    pool = [
        json.loads(line) for line in git_show(abstracts_repo, "scifact_antonym/corpus_candidate.jsonl").splitlines()
    ]
    docs = {f"{d['doc_id']}.txt": d["text"] for d in pool if d["text"].strip()}
    claims = {}
    for line in git_show(claims_repo, "scifact/queries.jsonl").splitlines():
        q = json.loads(line)
        claims[q["_id"]] = q["text"]
    cited: dict[str, list[str]] = {}
    for split in ("train", "test"):
        for row in git_show(claims_repo, f"scifact/qrels/{split}.tsv").splitlines():
            cells = row.split()  # "query-id corpus-id score"; the test file has a "0" column between
            if cells and cells[0].isdigit():
                cited.setdefault(cells[0], []).append(f"{cells[-2]}.txt")
    keep = sorted(q for q, ds in cited.items() if q in claims and all(d in docs for d in ds))
    keep = sorted(random.Random(seed).sample(keep, min(n_queries, len(keep))), key=int)
    queries = [{"id": f"claim-{q}", "query": claims[q], "references": sorted(set(cited[q]))} for q in keep]
    if n_distractors is not None:
        needed = {d for q in queries for d in q["references"]}
        others = sorted(set(docs) - needed)
        needed |= set(random.Random(seed).sample(others, min(n_distractors, len(others))))
        docs = {d: docs[d] for d in sorted(needed)}
    return write_set(out, docs, queries)


def prepare_chroma(path: str, out: Path, corpora: list[str], doc_chars: int) -> Path:
    docs: dict[str, str] = {}
    queries: list[dict] = []
    by_corpus: dict[str, list] = {c: [] for c in corpora}
    with open(Path(path) / "questions_df.csv", encoding="utf-8", newline="") as f:
        for i, row in enumerate(csv.DictReader(f)):
            if row["corpus_id"] in by_corpus:
                spans = [(r["start_index"], r["end_index"]) for r in json.loads(row["references"])]
                by_corpus[row["corpus_id"]].append((f"q{i}", row["question"], spans))
    for c in corpora:
        with open(Path(path) / "corpora" / f"{c}.md", encoding="utf-8") as f:  # universal newlines, as Chroma
            text = f.read()
        windows(c, text, by_corpus[c], doc_chars, docs, queries)
    return write_set(out, docs, queries)


def evaluate(ds, embedder, runs: dict[str, str], n_boot: int) -> tuple[dict, float, float]:
    """Each run's result on one dataset under one embedder, with the wall and CPU seconds they took
    (CPU counts every thread of the process, so it is the cost that a loaded machine does not distort)."""
    from chunkwise.evaluation import Evaluator, parse_run_spec

    ev = Evaluator(ds, embedder, k=10, n_boot=n_boot)
    t0, c0 = time.perf_counter(), time.process_time()
    results = {label: ev.run(parse_run_spec(f"{label.replace(' ', '_')}={spec}")) for label, spec in runs.items()}
    return results, time.perf_counter() - t0, time.process_time() - c0


def measure(name: str, ds, embedder, n_boot: int, weights: list[float]) -> tuple[list[dict], dict]:
    """The MiniLM rows (dense, then each hybrid run as a difference to dense) and their results, which the
    other embedders are compared with."""
    from chunkwise.evaluation.metrics import paired_bootstrap

    runs = dict(RUNS)
    for w in weights:
        runs[f"zscore w{w:g}"] = CHUNKING + f",hybrid=true,fusion=zscore,dense_weight={w:g}"
    results, seconds, cpu = evaluate(ds, embedder, runs, n_boot)
    print(f"{name}: minilm {seconds:.1f} s wall, {cpu:.1f} s CPU")
    dense = results["dense"]
    rows = []
    for label, res in results.items():
        row = {
            "set": name,
            "docs": len(ds.documents),
            "queries": len(ds.queries),
            "run": label,
            "seconds": round(seconds, 1),
        }
        for m in METRICS:
            row[m] = float(res.scores[m])
            if label != "dense":
                b = paired_bootstrap(res.per_query[m], dense.per_query[m], n_boot=n_boot, seed=0)
                row[f"{m} diff"] = (b["diff"], b["lo"], b["hi"])
        rows.append(row)
    return rows, results


def compare_embedder(name: str, ds, label: str, embedder, baseline: dict, n_boot: int) -> list[dict]:
    """One embedder's dense and default-hybrid rows, each with its difference to MiniLM under the same
    retrieval (paired over the same queries, so the interval is about the vectors alone)."""
    from chunkwise.evaluation.metrics import paired_bootstrap

    results, seconds, cpu = evaluate(ds, embedder, {r: RUNS[r] for r in EMBEDDER_RUNS}, n_boot)
    texts = sum(int(res.stats.get("texts_embedded", 0)) for res in results.values())
    print(f"{name}: {label} {seconds:.1f} s wall, {cpu:.1f} s CPU, {texts} texts embedded")
    rows = []
    for run, res in results.items():
        row = {
            "set": name,
            "docs": len(ds.documents),
            "queries": len(ds.queries),
            "embedder": label,
            "run": run,
            "seconds": round(seconds, 1),
            "cpu_seconds": round(cpu, 1),
        }
        for m in METRICS:
            row[m] = float(res.scores[m])
            b = paired_bootstrap(res.per_query[m], baseline[run].per_query[m], n_boot=n_boot, seed=0)
            row[f"{m} vs minilm"] = (b["diff"], b["lo"], b["hi"])
        rows.append(row)
    return rows


def load_embedders(names: list[str]) -> dict:
    """The embedders to compare with MiniLM; one line for each that cannot be loaded here."""
    from chunkwise.embeddings import get_embedder
    from chunkwise.errors import ConfigError

    out = {}
    for n in names:
        if n == "minilm":
            continue
        try:
            out[n] = get_embedder(n)
        except ConfigError as exc:  # MissingDependencyError is one; so is an undistilled static model
            print(f"skipping {n}: {str(exc).splitlines()[0]}")
    return out


def collect_sets(args) -> list[tuple[str, Path]]:
    """The sets to measure: converted from their sources, or (``--converted``) read from ``--work``."""
    work = Path(args.work)
    only = set(args.only.split(",")) if args.only else None
    wanted = [s for s in SET_NAMES if only is None or s in only]
    if args.converted:
        return [(s, work / s) for s in wanted if (work / s / "queries.jsonl").is_file()]
    sets: list[tuple[str, Path]] = []
    if args.qmsum and "qmsum" in wanted:
        sets.append(("qmsum", prepare_qmsum(args.qmsum, work / "qmsum", args.meetings, args.turns, args.seed)))
    if args.cosqa and "cosqa" in wanted:
        sets.append(
            ("cosqa", prepare_cosqa(args.cosqa, work / "cosqa", args.code_queries, args.code_distractors, args.seed))
        )
    if args.scifact and args.scifact_abstracts and "scifact" in wanted:
        folder = prepare_scifact(
            args.scifact, args.scifact_abstracts, work / "scifact", args.claims, args.seed, args.abstract_distractors
        )
        sets.append(("scifact", folder))
    if args.chroma and Path(args.chroma).exists() and "chroma" in wanted:
        sets.append(
            ("chroma", prepare_chroma(args.chroma, work / "chroma", args.chroma_corpora.split(","), args.doc_chars))
        )
    return sets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qmsum", help="a git dir of github.com/Yale-LILY/QMSum")
    ap.add_argument("--cosqa", help="a git dir of github.com/Jun-jie-Huang/CoCLR")
    ap.add_argument("--scifact", help="a git dir of github.com/Kirloxious/CSI4107_Assignment2 (claims, qrels)")
    ap.add_argument("--scifact-abstracts", help="a git dir of github.com/nice-hku-coder/coder_data (abstracts)")
    ap.add_argument("--claims", type=int, default=265, help="SciFact claims (all 265 usable ones by default)")
    ap.add_argument(
        "--abstract-distractors",
        type=int,
        default=None,
        help="SciFact: the kept claims' abstracts plus this many others (default: all 2,101 abstracts)",
    )
    ap.add_argument("--chroma", default=str(ROOT.parent / "shared" / "data" / "chroma-eval"))
    ap.add_argument("--work", default="/tmp/chunkwise-bench-retrieval", help="where the converted sets go")
    ap.add_argument("--meetings", type=int, default=12)
    ap.add_argument("--turns", type=int, default=40, help="QMSum turns per document")
    ap.add_argument("--code-queries", type=int, default=200)
    ap.add_argument("--code-distractors", type=int, default=1500)
    ap.add_argument("--chroma-corpora", default="chatlogs,state_of_the_union,wikitexts,pubmed")
    ap.add_argument("--doc-chars", type=int, default=4000, help="Chroma characters per document")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--only", default=None, help="comma-separated subset of qmsum,cosqa,scifact,chroma")
    ap.add_argument("--weights", default="", help="extra z-score dense weights to measure, e.g. 0.8,0.9")
    ap.add_argument(
        "--embedders",
        default="minilm",
        help="comma-separated embedders to compare with MiniLM (always measured, the baseline), "
        "e.g. minilm,e5,static,use-multilingual",
    )
    ap.add_argument("--converted", action="store_true", help="read the sets already converted under --work")
    ap.add_argument("-o", "--output", default=None, help="JSON file for the rows")
    args = ap.parse_args()

    from chunkwise import registry
    from chunkwise.embeddings import get_embedder
    from chunkwise.errors import ChunkwiseError
    from chunkwise.evaluation import load_dataset

    names = [n for n in args.embedders.split(",") if n]
    known = {k.split(":")[0] for k in registry.names("embedder")}  # st:NAME, openai:MODEL by their prefix
    unknown = [n for n in names if n.split(":")[0] not in known]
    if unknown:
        ap.error(f"unknown embedder(s) {', '.join(unknown)}; choose from {', '.join(registry.names('embedder'))}")
    extra = load_embedders(names)
    embedder = get_embedder("minilm")
    weights = [float(w) for w in args.weights.split(",") if w]
    rows: list[dict] = []
    for name, folder in collect_sets(args):
        ds = load_dataset(folder)
        if ds.problems:
            print(f"{name}: {len(ds.problems)} reference(s) skipped, first: {ds.problems[0]}")
        base_rows, baseline = measure(name, ds, embedder, args.bootstrap, weights)
        rows += base_rows
        for label, other in list(extra.items()):
            try:
                rows += compare_embedder(name, ds, label, other, baseline, args.bootstrap)
            except ChunkwiseError as exc:  # an endpoint that cannot be reached, say: the other rows still count
                print(f"skipping {label}: {str(exc).splitlines()[0]}")
                del extra[label]
        print_table([r for r in rows if "embedder" not in r])
        print_embedder_table([r for r in rows if "embedder" in r])
        if args.output:  # after every set, so a long run that is stopped keeps what it measured
            Path(args.output).write_text(json.dumps(rows, indent=1))


def print_table(rows: list[dict]) -> None:
    print(f"{'set':8s} {'docs':>5s} {'qs':>4s} {'run':16s} " + " ".join(f"{m:>26s}" for m in METRICS))
    for r in rows:
        cells = []
        for m in METRICS:
            d = r.get(f"{m} diff")
            cells.append(f"{r[m]:.3f}" + (f" {d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]" if d else " " * 20))
        print(f"{r['set']:8s} {r['docs']:5d} {r['queries']:4d} {r['run']:16s} " + " ".join(f"{c:>26s}" for c in cells))


def print_embedder_table(rows: list[dict]) -> None:
    """Each embedder's score and its difference to MiniLM under the same retrieval."""
    if not rows:
        return
    print(f"{'set':8s} {'embedder':17s} {'run':14s} " + " ".join(f"{m + ' vs minilm':>28s}" for m in METRICS))
    for r in rows:
        cells = []
        for m in METRICS:
            d = r[f"{m} vs minilm"]
            cells.append(f"{r[m]:.3f} {d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]")
        print(f"{r['set']:8s} {r['embedder']:17s} {r['run']:14s} " + " ".join(f"{c:>28s}" for c in cells))


if __name__ == "__main__":
    main()
