"""``chunkwise eval`` and ``chunkwise tune``: measure retrieval on a dataset, and search a parameter grid.

Several strategies are compared in one ``eval`` run with repeated ``--run SPEC``, each spec carrying its
own parameters::

    chunkwise eval ../shared/data/chroma-eval \\
        --run 'recursive:max_tokens=200,overlap=0,tokenizer=cl100k' \\
        --run 'fixed:max_tokens=250,overlap=125,tokenizer=cl100k' --report report.html

The shared chunking flags (``--strategy``, ``--max-tokens``, ``-p``, ``--config``) describe one more run,
and the only one when no ``--run`` is given.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..errors import ConfigError
from .options import DeprecatedFlag, add_chunking_options, add_input_options, input_options


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "dataset",
        metavar="DATASET",
        help="folder in Chroma's layout (corpora/ + questions_df.csv) or the neutral layout "
        "(docs/ + queries.jsonl [+ boundaries.jsonl])",
    )
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
    p.add_argument("-k", type=int, default=5, help="n of doc recall@k and of tokens retrieved (default 5)")
    p.add_argument("--late", action="store_true", help="embed chunks by late chunking (every run)")
    p.add_argument(
        "--dense",
        action="store_true",
        help="retrieve by vectors alone (every run; default: BM25 + vectors fused, as `search`)",
    )
    p.add_argument("--hybrid", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old scripts
    p.add_argument(
        "--fusion",
        choices=("rrf", "zscore"),
        default=None,
        help="how BM25 and the vector ranking are fused: zscore (per query z-normalised scores, "
        "dense_weight * vector + (1 - dense_weight) * BM25; default, as `search`) or rrf "
        "(reciprocal rank fusion)",
    )
    p.add_argument(
        "--rrf-k", type=int, default=None, metavar="K", help="the RRF constant for --fusion rrf (default 60)"
    )
    p.add_argument(
        "--dense-weight",
        type=float,
        default=None,
        metavar="W",
        help="weight of the vector scores for --fusion zscore, in [0, 1] (default 0.8)",
    )
    p.add_argument(
        "--vectors",
        choices=("text", "pool"),
        default=None,
        help="chunk vectors: embed the text (default) or pool a semantic strategy's sentence vectors "
        "(as `index --vectors pool`)",
    )
    p.add_argument(
        "--context",
        default=None,
        metavar="MODE",
        help="contextual chunk text for every run: headings | neighbors | ...",
    )
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
    add_input_options(p, globs=False)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "eval",
        help="measure retrieval quality of chunking strategies on a dataset",
        description="Chunk every document, embed the chunks, retrieve for every query with an exact in-process "
        "index pooled over all documents, and score: Chroma's span metrics (recall, precision, "
        "precision_Ω, IoU at n=5, 10 and min), their corrected set variant, doc recall@k, nDCG@10, "
        "MRR, Pk/WindowDiff when gold boundaries exist, and paired-bootstrap CIs between runs.",
    )
    _add_common(p)
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
        "parent:TOKENS (default: the chunks alone)",
    )
    p.add_argument(
        "--answers",
        action="store_true",
        help="also ask the LLM (--llm-base-url; extractive without one) each query with the top -k "
        "chunks and report citation recall: the answer cites a chunk overlapping a reference",
    )
    add_chunking_options(p)
    from .answers import add_llm_options

    add_llm_options(p)
    p.set_defaults(func=run_eval)

    t = subparsers.add_parser(
        "tune",
        help="grid-search a strategy's parameters on a dataset and write the best --config",
        description="Evaluate every combination of --grid values (each text embedded once over the whole "
        "search), print a leaderboard and write the best configuration as JSON for --config.",
    )
    _add_common(t)
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
    add_search_options(t)
    add_chunking_options(t)
    t.set_defaults(func=run_tune)


# -- shared plumbing ----------------------------------------------------------------------------------


def _progress(args):
    if getattr(args, "quiet", False):
        return None
    return lambda msg: print(f"chunkwise: {msg}", file=sys.stderr, flush=True)


def _dataset(args):
    from ..evaluation.datasets import load_dataset

    ds = load_dataset(args.dataset, **input_options(args))
    if args.docs or args.limit is not None:
        docs = [d.strip() for d in args.docs.split(",") if d.strip()] if args.docs else None
        if args.limit is not None and args.limit < 1:
            raise ConfigError("--limit must be >= 1")
        ds = ds.subset(docs, args.limit)
    if ds.problems and not getattr(args, "quiet", False):
        print(
            f"chunkwise: {args.dataset}: skipped {ds.skipped_references} reference(s) and "
            f"{ds.skipped_queries} query(ies):",
            file=sys.stderr,
        )
        for line in ds.problems[:20]:
            print(f"  {line}", file=sys.stderr)
        if len(ds.problems) > 20:
            print(f"  ... and {len(ds.problems) - 20} more (all listed in --format json / the report)", file=sys.stderr)
    return ds


def _embedder(args):
    from ..embeddings import embedder_from_args

    kw = {}
    if args.embed_window is not None:  # the old flag: positions, [CLS]/[SEP] included, minilm only
        name = getattr(args, "embedder", None) or "minilm"
        if name != "minilm":
            raise ConfigError(f"--embed-window applies to the minilm embedder only, not {name!r}")
        if args.model_window is not None:
            raise ConfigError("give --model-window only (--embed-window is its old name)")
        if not isinstance(args.embed_window, int) or not 3 <= args.embed_window <= 512:
            raise ConfigError(f"--embed-window must be an integer in 3..512, got {args.embed_window}")
        kw["model_window"] = args.embed_window - 2
    if args.model_window is not None:
        kw["model_window"] = args.model_window
    return embedder_from_args(args, **kw)


def _evaluator(args, ds, k=None):
    from ..evaluation.runner import Evaluator

    embedder = _embedder(args)
    llm = None
    if getattr(args, "answers", False):
        from .answers import llm_from_args

        llm = llm_from_args(args, embedder=embedder, stream=False)
    elif getattr(args, "llm_base_url", None) or getattr(args, "llm_model", None):
        raise ConfigError("--llm-base-url and --llm-model need --answers")
    _check_languages(ds, embedder)
    return Evaluator(
        ds,
        embedder,
        k=k or args.k,
        count_tokenizer=args.count_tokenizer,
        n_boot=args.bootstrap,
        seed=args.seed,
        progress=_progress(args),
        answer_llm=llm,
    )


def _check_languages(ds, embedder) -> None:
    """One warning when the corpus looks like a language the embedder does not read (chunkwise.embeddings.
    language); a warning, not a progress line, so it is printed with -q too."""
    from ..embeddings.language import LanguageCheck

    check = LanguageCheck(embedder)
    if check.active:
        for doc in ds.documents.values():
            check.add(doc.text)
        check.warn()


def _shared_flags_given(args) -> bool:
    return any(
        getattr(args, f, None) not in (None, [])
        for f in ("strategy", "config", "max_tokens", "min_tokens", "overlap", "tokenizer", "respect_sections", "param")
    )


def _config_file(path: str):
    """Strategy, params and run options of a ``--config`` JSON file (which must name a strategy)."""
    from .options import load_config

    name, params, run = load_config(path)
    if not name:
        raise ConfigError('the configuration names no "strategy"', source=path)
    return name, params, run


def _shared_spec(args):
    from ..evaluation.spec import spec_from_params
    from .options import strategy_params_from_args

    if args.dense and args.hybrid:
        raise ConfigError("--dense and --hybrid contradict each other (hybrid is the default)")

    run = _config_file(args.config)[2] if args.config else {}
    name, params = strategy_params_from_args(args)
    return spec_from_params(name, params, run=run)


def _specs(args):
    from ..evaluation.spec import parse_run_spec, spec_from_params

    if args.dense and args.hybrid:
        raise ConfigError("--dense and --hybrid contradict each other (hybrid is the default)")
    specs = []
    if not args.runs or _shared_flags_given(args):
        specs.append(_shared_spec(args))
    for text in args.runs:
        label, sep, path = text.partition("=")
        if not sep or ":" in label:  # no LABEL= prefix (a spec's own key=value lies after its ':')
            label, path = "", text
        if path.strip().endswith(".json"):  # FILE.json or LABEL=FILE.json, read like --config
            name, params, run = _config_file(path.strip())
            specs.append(spec_from_params(name, params, label=label.strip() or Path(path.strip()).stem, run=run))
        else:
            specs.append(parse_run_spec(text))
    for s in specs:
        if args.late:
            s.late = True
        if args.dense:
            s.hybrid = False
        if args.vectors and s.vectors == "text":
            s.vectors = args.vectors
        _apply_fusion_flags(args, s)
        if args.context and not s.context:
            s.context = args.context
        if getattr(args, "expand", None) and not s.expand:
            s.expand = s.with_settings(expand=args.expand).expand  # checked: one line on a bad mode
    return specs


def _fusion_flags(args) -> dict:
    """The fusion flags given on the command line, validated (``{}`` when none)."""
    from ..evaluation.spec import fusion_settings

    given = {
        k: v
        for k, v in (("fusion", args.fusion), ("rrf_k", args.rrf_k), ("dense_weight", args.dense_weight))
        if v is not None
    }
    fusion_settings(given)  # raises ConfigError on a bad value
    return given


def _apply_fusion_flags(args, spec) -> None:
    """Fusion flags apply to every run that does not set the same option itself."""
    from ..evaluation.spec import DEFAULT_DENSE_WEIGHT, DEFAULT_FUSION, DEFAULT_RRF_K

    flags = _fusion_flags(args)
    if "fusion" in flags and spec.fusion == DEFAULT_FUSION:
        spec.fusion = flags["fusion"]
    if "rrf_k" in flags and spec.rrf_k == DEFAULT_RRF_K:
        spec.rrf_k = int(flags["rrf_k"])
    if "dense_weight" in flags and spec.dense_weight == DEFAULT_DENSE_WEIGHT:
        spec.dense_weight = float(flags["dense_weight"])


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write ({exc.strerror})", source=path) from None


def _emit(args, report, title: str) -> None:
    from ..evaluation.report import format_html, format_json

    if args.report:
        _write(args.report, format_html(report, title=title))
        if not args.quiet:
            print(f"chunkwise: wrote {args.report}", file=sys.stderr)
    if getattr(args, "output", None) and args.func is run_eval:
        _write(args.output, format_json(report) + "\n")


# -- commands -----------------------------------------------------------------------------------------


def run_eval(args) -> int:
    from ..evaluation.report import format_json, format_table

    t0 = time.perf_counter()
    specs = _specs(args)
    ds = _dataset(args)
    evaluator = _evaluator(args, ds)
    try:
        report = evaluator.evaluate(specs)
    finally:
        if evaluator.answer_llm is not None:
            evaluator.answer_llm.close()
    _emit(args, report, f"chunkwise eval: {Path(args.dataset).name}")
    if args.format == "json":
        print(format_json(report))
    else:
        print(format_table(report))
        if evaluator.answer_llm is not None:
            from ..evaluation.answers import format_answers_table

            print(format_answers_table(report))
    if not args.quiet and args.format == "table":
        print(f"\n{time.perf_counter() - t0:.1f} s in all", file=sys.stderr)
    return 0


def run_tune(args) -> int:
    from ..evaluation.report import format_html, format_leaderboard
    from ..evaluation.results import EvaluationReport
    from ..evaluation.tune import check_grid, parse_grid, parse_metric, parse_requirement, tune, write_config

    if args.trials is not None or (not args.grid and not args.strategy and not args.config):
        from .tune_search import run_search

        return run_search(args)
    if not args.strategy and not args.config:
        raise ConfigError("tune needs --strategy NAME (or --config FILE) and at least one --grid NAME=V1,V2")
    if not args.grid:
        raise ConfigError("tune needs at least one --grid NAME=V1,V2,...")
    metric, metric_k = parse_metric(args.metric)
    grid = parse_grid(args.grid)
    base = _shared_spec(args)
    fixed = dict(base.params)
    if base.late or args.late:
        fixed["late"] = True
    if base.context or args.context:
        fixed["context"] = base.context or args.context
    fixed["hybrid"] = base.hybrid and not args.dense
    if args.vectors or base.vectors != "text":
        fixed["vectors"] = args.vectors or base.vectors
    _apply_fusion_flags(args, base)
    fixed.update(base.fusion_options())  # without hybrid the run reports the mistake
    for name in grid:
        fixed.pop(name, None)
    check_grid(base.strategy, grid, fixed)
    ds = _dataset(args)
    k = metric_k or args.k  # tokens retrieved (and the budget) are counted at the metric's n
    evaluator = _evaluator(args, ds, k=k)
    require = [parse_requirement(r) for r in args.require]
    result = tune(
        evaluator,
        base.strategy,
        grid,
        metric,
        fixed,
        args.max_tokens_retrieved,
        _progress(args),
        require=require,
        holdout=args.holdout,
    )
    board = format_leaderboard(result, evaluator.k)
    lines = board.splitlines()
    print("\n".join(lines[: 2 + args.top]))
    if len(lines) > 2 + args.top:
        print(f"... {len(lines) - 2 - args.top} more")
    print(
        f"\n{len(result.rows)} configurations in {result.seconds:.1f} s; {result.texts_embedded} texts sent to "
        f"the embedder (the rest came from the memo or the cache)"
    )
    config = result.best_config(dataset=str(args.dataset), embedder=evaluator.embedder.model_id)
    best = result.chosen
    assert best is not None and best.result is not None and best.score is not None  # best_config raised otherwise
    write_config(args.output, config)
    if result.decision is not None:
        print(result.decision.summary(metric))
    print(
        f"wrote ({metric} = {fmt_score(metric, best.score)}): {json.dumps({k: config[k] for k in config if k != 'tuned'})}"
    )
    print(
        f"wrote {args.output}; use it with: chunkwise chunk --config {args.output} FILES / chunkwise eval "
        f"{args.dataset} --config {args.output}"
    )
    if args.report:
        # the winner first (the baseline of the Δ columns), then the best of the rest
        done = [best.result] + [r.result for r in result.rows if r.result is not None and r is not best][:9]
        report = EvaluationReport(
            ds.path,
            ds.summary(),
            evaluator.embedder.model_id,
            evaluator.k,
            evaluator.count_tokenizer.name,
            len(ds.queries),
            done,
            evaluator.compare(done, metrics=(metric, "recall@5", "iou@5")),
            list(ds.problems),
            result.seconds,
        )
        _write(args.report, format_html(report, title=f"chunkwise tune: {base.strategy} by {metric}"))
        if not args.quiet:
            print(f"chunkwise: wrote {args.report}", file=sys.stderr)
    return 0


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
        "TPE sampler (seeded) instead of a --grid (default 30 when neither is given)",
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


def fmt_score(metric: str, value: float) -> str:
    from ..evaluation.report import fmt

    return fmt(metric, value)
