"""``chunkwise tune DATASET [--trials N]``: the budgeted search over strategy x size x overlap x retrieval.

Kept apart from :mod:`.evaluate` (which parses the flags and runs ``--grid`` searches) so the grid path stays
as it was; the search itself is :func:`chunkwise.evaluation.tune.search`.
"""

from __future__ import annotations

import sys

from ..errors import ConfigError

DEFAULT_TRIALS = 30
#: the search's wall-clock budget without --time
DEFAULT_TIME = "6m"


def parse_duration(text: str) -> float:
    """``"10m"`` -> 600.0: seconds from a number with an optional unit s, m or h (no unit: seconds)."""
    t = text.strip().lower()
    unit = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(t[-1:], None)
    number = t[:-1] if unit is not None else t
    try:
        value = float(number) * (unit or 1.0)
    except ValueError:
        raise ConfigError(f"--time expects a duration such as 10m, 90s or 1h, got {text!r}") from None
    from ..evaluation.tune_search import TIME_BUDGET
    from ..validation import check_flag

    return check_flag(value, "--time", TIME_BUDGET)


def journal_path(output: str) -> str:
    """Where the finished trials are saved as they come: beside ``-o FILE.json``, ``FILE.trials.jsonl``."""
    from pathlib import Path

    p = Path(output)
    return str(p.with_name(p.stem + ".trials.jsonl"))


def _list(text: str | None, kind: type, flag: str) -> list | None:
    if text is None:
        return None
    try:
        values = [kind(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"{flag} expects a comma-separated list of {kind.__name__} values, got {text!r}") from None
    if not values:
        raise ConfigError(f"{flag}: no values")
    return list(dict.fromkeys(values))


def space_from_args(args):
    """The :class:`~chunkwise.evaluation.tune.SearchSpace` the flags describe (defaults where not given);
    ``--strategy``/``--max-tokens``/``--overlap`` pin one value, ``--grid`` adds parameters."""
    from ..evaluation.tune import SearchSpace, parse_grid

    space = SearchSpace()
    strategies = _list(args.strategies, str, "--strategies")
    if args.strategy and strategies:
        raise ConfigError("give --strategy (one) or --strategies (several), not both")
    space.strategies = strategies or ([args.strategy] if args.strategy else space.strategies)
    sizes = _list(args.sizes, int, "--sizes")
    space.max_tokens = sizes or ([args.max_tokens] if args.max_tokens else space.max_tokens)
    overlaps = _list(args.overlaps, int, "--overlaps")
    space.overlap = overlaps or ([args.overlap] if args.overlap is not None else space.overlap)
    if getattr(args, "hybrid", None) is False:  # --dense
        space.retrieval = ["dense"]
    space.retrieval = _list(args.retrieval, str, "--retrieval") or space.retrieval
    space.rrf_k = _list(args.rrf_ks, int, "--rrf-ks") or ([args.rrf_k] if args.rrf_k else space.rrf_k)
    space.extra = parse_grid(args.grid) if args.grid else {}
    for name in ("max_tokens", "overlap", "hybrid", "fusion", "rrf_k"):
        if name in space.extra:
            raise ConfigError(f"--grid {name}: use the search flags (--sizes, --overlaps, --retrieval, --rrf-ks)")
    space.check()
    return space


def run_search(args) -> int:
    from ..evaluation.tune import parse_metric, parse_requirement, search
    from .eval_common import _dataset, _evaluator, _finish_tune, _progress

    if args.config:
        raise ConfigError("tune --trials searches its own space; --config applies to --grid searches")
    metric, metric_k = parse_metric(args.metric)
    space = space_from_args(args)
    fixed = _fixed_from_args(args)
    require = [parse_requirement(r) for r in args.require]
    trials = args.trials if args.trials is not None else DEFAULT_TRIALS
    budget = parse_duration(args.time or DEFAULT_TIME)
    journal = journal_path(args.output)
    say = _progress(args)
    if say is not None:
        say(f"tune: reading {args.dataset} and loading the embedder")
    ds = _dataset(args)
    evaluator = _evaluator(args, ds, k=metric_k or args.k)
    result = search(
        evaluator,
        space,
        trials,
        metric,
        fixed,
        args.max_tokens_retrieved,
        say,
        require,
        holdout=args.holdout,
        seed=args.seed,
        n_boot=args.bootstrap,
        time_budget=budget,
        journal=journal,
        prefer=args.prefer,
    )
    summary = (
        f"\n{len(result.rows)} configurations ({result.sampler}, of {len(space.points())} in the space) in "
        f"{result.seconds:.1f} s; {result.texts_embedded} texts sent to the embedder; trials saved in {journal}"
    )
    _finish_tune(args, result, evaluator, metric, summary, ("index", "DOCS"))
    if args.report and not args.quiet:
        print("chunkwise: --report is written by --grid searches only", file=sys.stderr)
    return 0


def _fixed_from_args(args) -> dict:
    """What every searched point shares: the chunking flags the space does not vary (tokenizer,
    ``--min-tokens``, sections, ``-p``) and the run flags (late chunking, context, chunk vectors)."""
    from .options import parse_params

    fixed = {}
    if args.tokenizer:
        fixed["tokenizer"] = args.tokenizer
    if args.min_tokens is not None:
        fixed["min_tokens"] = args.min_tokens
    if args.respect_sections is not None:
        fixed["respect_sections"] = args.respect_sections
    fixed.update(parse_params(args.param) if args.param else {})
    from .eval_common import FUSION_SETTINGS, flag_settings

    # the run flags the space does not vary (retrieval and fusion are its own): vectors, late, context, the
    # section-first pass, the reranker
    fixed.update({k: v for k, v in flag_settings(args).items() if k not in FUSION_SETTINGS})
    return fixed


__all__ = ["run_search", "space_from_args", "parse_duration", "journal_path", "DEFAULT_TRIALS", "DEFAULT_TIME"]
