"""The flags of ``chunkwise eval`` and ``chunkwise tune``, one function per option group: what both commands
read (the dataset, the embedder, retrieval, output), what only ``eval`` reads (its runs) and what only
``tune`` reads (the grid and its limits, the held-out split and the budgeted search)."""

from __future__ import annotations

import argparse

from .options import DeprecatedFlag, add_input_options, add_stage_flags


def add_common_options(p: argparse.ArgumentParser) -> None:
    """The flags ``eval`` and ``tune`` share, group by group."""
    add_dataset_options(p)
    add_embedding_options(p)
    add_retrieval_options(p)
    add_output_options(p)
    add_input_options(p, globs=False)


def add_dataset_options(p: argparse.ArgumentParser) -> None:
    """The dataset argument."""
    p.add_argument(
        "dataset",
        metavar="DATASET",
        help="folder in Chroma's layout (corpora/ + questions_df.csv) or the neutral layout "
        "(docs/ + queries.jsonl [+ boundaries.jsonl])",
    )


def add_embedding_options(p: argparse.ArgumentParser) -> None:
    """Which model embeds, and how much of each text it reads."""
    p.add_argument(
        "--embedder", default=argparse.SUPPRESS, help="embedding model (same as the global --embedder; default minilm)"
    )
    p.add_argument(
        "--model-window",
        type=int,
        default=None,
        metavar="N",
        help="content tokens the embedding model reads per text (minilm: 1..510, default 510; "
        "254 reproduces sentence-transformers' truncation)",
    )
    p.add_argument(
        "--embed-window", action=DeprecatedFlag, new="--model-window N-2", type=int, default=None, dest="embed_window"
    )


def add_retrieval_options(p: argparse.ArgumentParser) -> None:
    """How every run retrieves: ``-k``, and a flag for every setting of ``Index.add`` and ``Index.search``
    (chunk vectors, late chunking, context; dense or hybrid, fusion, the section-first pass, the reranker),
    each from its declaration in :class:`~chunkwise.pipeline.PipelineConfig` as ``index`` and ``search`` have
    it. A flag given applies to every run that leaves the setting at its default."""
    p.add_argument("-k", type=int, default=5, help="n of doc recall@k and of tokens retrieved (default 5)")
    add_stage_flags(p, "index", "search")


def add_output_options(p: argparse.ArgumentParser) -> None:
    """Token counting, which documents and queries, the report and stdout, the bootstrap."""
    p.add_argument(
        "--count-tokenizer", default="cl100k", help="tokenizer for chunk sizes and tokens retrieved (default cl100k)"
    )
    p.add_argument(
        "--docs", default=None, metavar="ID,ID", help="evaluate on these documents only (and the queries about them)"
    )
    p.add_argument("--limit", type=int, default=None, metavar="N", help="first N queries only")
    p.add_argument("--report", default=None, metavar="FILE.html", help="write a self-contained HTML report")
    p.add_argument("--format", choices=("table", "json"), default="table", help="output on stdout")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")


def add_eval_options(p: argparse.ArgumentParser) -> None:
    """``eval``'s own flags: the runs to compare, the JSON output, ``--expand`` and ``--answers``."""
    p.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="SPEC",
        dest="runs",
        help="a configuration to evaluate, repeatable: [LABEL=]STRATEGY[:key=value,...], e.g. "
        "'recursive:max_tokens=200,overlap=0,tokenizer=cl100k'; values are JSON where they "
        "parse; keys late/context set run options; a .json path is read like --config",
    )
    p.add_argument("-o", "--output", default=None, metavar="FILE.json", help="also write the JSON results here")
    p.add_argument(
        "--expand",
        default=None,
        metavar="MODE",
        help="every run without its own expand: widen the ranked chunks before span recall at a token "
        "budget (span_recall@1k/2k/4k, cl100k tokens) is scored: neighbors:N, section, "
        "parent:TOKENS, auto, none (default: auto, as ask --budget: neighbors:1 in text without headings or "
        "pages, the chunks alone elsewhere)",
    )
    p.add_argument(
        "--answers",
        action="store_true",
        help="also ask the LLM (--llm-base-url; extractive without one) each query with the top -k "
        "chunks and report citation recall: the answer cites a chunk overlapping a reference",
    )


def add_tune_options(t: argparse.ArgumentParser) -> None:
    """``tune``'s grid flags: the grid, the metric to maximise, the limits a winner must meet, the output."""
    t.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="parameter values to try, repeatable (values JSON where they parse)",
    )
    t.add_argument(
        "--metric",
        default="recall@5",
        help="what to maximise: recall@N, iou@N, precision@N (Chroma), recall_set@N, iou_set@N, "
        "ndcg@10, mrr, doc_recall@N (default recall@5)",
    )
    t.add_argument(
        "--max-tokens-retrieved",
        type=float,
        default=None,
        metavar="N",
        help="only configurations retrieving at most N tokens per query (at the metric's n) can win",
    )
    t.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="METRIC>=VALUE",
        help="only configurations meeting this can win, repeatable, e.g. 'iou@5>=0.072' (fractions)",
    )
    t.add_argument(
        "-o",
        "--output",
        default="best.json",
        metavar="FILE.json",
        help="where to write the best configuration (default best.json)",
    )
    t.add_argument("--top", type=int, default=20, help="leaderboard rows to print (default 20)")


def add_search_options(t: argparse.ArgumentParser) -> None:
    """``tune``'s held-out split and its budgeted search (:func:`chunkwise.evaluation.tune.search`)."""
    t.add_argument(
        "--holdout",
        type=float,
        default=0.3,
        metavar="F",
        help="fraction of the queries kept out of the ranking for the final winner vs runner-up "
        "comparison (seeded by --seed; default 0.3; 0: compare on all queries)",
    )
    g = t.add_argument_group("search (tune --trials N, or tune DATASET alone)")
    g.add_argument(
        "--trials",
        type=int,
        default=None,
        metavar="N",
        help="evaluate N distinct points of strategy x size x overlap x retrieval chosen by Optuna's "
        "TPE sampler (seeded) instead of a --grid (default 30 when neither is given); without Optuna "
        "(pip install 'chunkwise[tune]') the N points are a seeded random sample",
    )
    g.add_argument(
        "--strategies", default=None, metavar="LIST", help="strategies to search (default fixed,sentence,recursive)"
    )
    g.add_argument("--sizes", default=None, metavar="LIST", help="max_tokens values (default 128,256,512)")
    g.add_argument("--overlaps", default=None, metavar="LIST", help="overlap values (default 0,32)")
    g.add_argument(
        "--retrieval",
        default=None,
        metavar="LIST",
        help="dense, zscore (hybrid, z-score fusion), rrf (hybrid, RRF) (default all three)",
    )
    g.add_argument("--rrf-ks", default=None, metavar="LIST", help="RRF constants for rrf (default 10,60)")
    g.add_argument(
        "--time",
        default=None,
        metavar="DURATION",
        help="wall-clock budget of the search, e.g. 10m, 90s, 1h: no trial starts once it is spent (default 6m)",
    )
    t.add_argument(
        "--prefer",
        choices=("quality", "cheaper"),
        default="quality",
        help="quality (default): a configuration replaces the default only when significantly better, ties "
        "broken by hybrid over dense then the larger context; cheaper: the cheapest configuration not "
        "significantly worse than the default or the best",
    )
