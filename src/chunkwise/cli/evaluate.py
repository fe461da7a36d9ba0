"""``chunkwise eval`` and ``chunkwise tune``: measure retrieval on a dataset, and search a parameter grid.

Several strategies are compared in one ``eval`` run with repeated ``--run SPEC``, each spec carrying its
own parameters::

    chunkwise eval ../shared/data/chroma-eval \\
        --run 'recursive:max_tokens=200,overlap=0,tokenizer=cl100k' \\
        --run 'fixed:max_tokens=250,overlap=125,tokenizer=cl100k' --report report.html

The shared chunking flags (``--strategy``, ``--max-tokens``, ``-p``, ``--config``) describe one more run,
and the only one when no ``--run`` is given.

The flags are :mod:`.eval_flags` (one function per option group); what both commands share between the
flags and the run (dataset, evaluator, run specs) is :mod:`.eval_common`; the budgeted search is
:mod:`.tune_search`. This module registers the commands and runs them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..deprecation import moved_getattr
from ..errors import ConfigError
from . import add_command
from .eval_common import (
    FUSION_SETTINGS,
    _check_languages,
    _config_file,
    _dataset,
    _embedder,
    _evaluator,
    _finish_tune,
    _progress,
    _shared_flags_given,
    _shared_spec,
    _specs,
    _write,
    apply_flag_settings,
    flag_settings,
)
from .eval_flags import add_common_options, add_eval_options, add_search_options, add_tune_options
from .options import add_chunking_options

#: old names (``_add_common``) import with a warning (``chunkwise.deprecation.MOVED``)
__getattr__ = moved_getattr(__name__)


def register(subparsers) -> None:
    """``eval`` and ``tune``: each the flags both share, then its own option groups, in this order (the
    order of their ``--help``)."""
    from .answers import add_llm_options

    commands: dict[str, tuple[tuple[Callable[[argparse.ArgumentParser], None], ...], Callable[..., int]]] = {
        "eval": ((add_eval_options, add_chunking_options, add_llm_options), run_eval),
        "tune": ((add_tune_options, add_search_options, add_chunking_options), run_tune),
    }
    for name, (groups, run) in commands.items():
        p = add_command(subparsers, name)
        add_common_options(p)
        for add_group in groups:
            add_group(p)
        p.set_defaults(func=run)


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
    from ..evaluation.tune import check_grid, parse_grid, parse_metric, parse_requirement, tune
    from .tune_search import run_search

    if args.trials is not None or (not args.grid and not args.strategy and not args.config):
        return run_search(args)
    if args.time is not None:
        raise ConfigError("--time budgets the search (tune --trials N); a --grid evaluates every point")
    if not args.strategy and not args.config:
        raise ConfigError("tune needs --strategy NAME (or --config FILE) and at least one --grid NAME=V1,V2")
    if not args.grid:
        raise ConfigError("tune needs at least one --grid NAME=V1,V2,...")
    metric, metric_k = parse_metric(args.metric)
    grid = parse_grid(args.grid)
    base = _shared_spec(args)
    fixed = _tune_fixed(args, base, grid)
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
        prefer=args.prefer,
    )
    summary = (
        f"\n{len(result.rows)} configurations in {result.seconds:.1f} s; {result.texts_embedded} texts sent to "
        f"the embedder (the rest came from the memo or the cache)"
    )
    best = _finish_tune(args, result, evaluator, metric, summary, ("chunk", "FILES"))
    if args.report:
        _write_tune_report(args, ds, evaluator, result, best, metric, base.strategy)
    return 0


def _tune_fixed(args, base, grid) -> dict:
    """The parameters and run options every grid point shares: the shared flags' strategy parameters and
    the run flags, less what the grid varies."""
    from ..pipeline.config import SETTINGS, stage_names

    apply_flag_settings(base, flag_settings(args), override=True)  # flags override a --config file
    fixed = dict(base.params)
    fixed["hybrid"] = base.hybrid
    for name in stage_names("index", "search"):
        if (
            name not in FUSION_SETTINGS
            and SETTINGS[name].flag_name(name)
            and getattr(base, name) != SETTINGS[name].default
        ):
            fixed[name] = getattr(base, name)
    fixed.update(base.fusion_options())  # without hybrid the run reports the mistake
    for name in grid:
        fixed.pop(name, None)
    return fixed


def _write_tune_report(args, ds, evaluator, result, best, metric: str, strategy: str) -> None:
    """``tune --report``: the winner and the best of the rest as an evaluation report, apart from
    :func:`run_tune` because it rebuilds an :class:`EvaluationReport` from the tune rows."""
    from ..evaluation.report import format_html
    from ..evaluation.results import EvaluationReport

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
    _write(args.report, format_html(report, title=f"chunkwise tune: {strategy} by {metric}"))
    if not args.quiet:
        print(f"chunkwise: wrote {args.report}", file=sys.stderr)


def fmt_score(metric: str, value: float) -> str:
    from ..evaluation.report import fmt

    return fmt(metric, value)


__all__ = [
    "register",
    "run_eval",
    "run_tune",
    "fmt_score",
    "add_search_options",
    "_check_languages",
    "_config_file",
    "_dataset",
    "_embedder",
    "_evaluator",
    "_progress",
    "_shared_flags_given",
    "_shared_spec",
    "_specs",
    "_write",
]
