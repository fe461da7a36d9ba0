"""The grid search of ``tune`` and what every search shares: one point evaluated into a :class:`TuneRow`
(:func:`evaluate_point`), the rows ranked and decided into a :class:`TuneResult` (:func:`finish`), and the
configuration file the result writes (:meth:`TuneResult.best_config`)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .runner import Evaluator
from .spec import spec_from_params
from .tune_decide import Decision, Saturation, TuneRow, decide, saturation, split_queries
from .tune_parse import check_grid, meets, parse_metric, parse_requirement


@dataclass
class TuneResult:
    strategy: str
    metric: str
    rows: list[TuneRow]
    best: TuneRow | None
    seconds: float
    texts_embedded: int
    max_tokens_retrieved: float | None = None
    fixed: dict[str, Any] = field(default_factory=dict)
    require: list[tuple[str, str, float]] = field(default_factory=list)
    #: the row written by :meth:`best_config`: the default, or a row significantly better (:class:`Decision`)
    chosen: TuneRow | None = None
    decision: Decision | None = None
    #: how points were picked: "grid", "optuna-tpe" or "random"
    sampler: str = "grid"
    #: how hard the question set was for the configurations tried (:class:`Saturation`)
    saturation: Saturation | None = None
    #: why the search stopped before its trials: "" (it did not), or the time budget's line
    stopped: str = ""

    def best_config(self, dataset: str = "", embedder: str = "") -> dict[str, Any]:
        if self.chosen is None:
            self.chosen = self.best
        if self.chosen is None or self.chosen.result is None:
            limits = []
            if self.max_tokens_retrieved is not None:
                limits.append(f"tokens retrieved <= {self.max_tokens_retrieved:g}")
            limits += [f"{n}{op}{v:g}" for n, op, v in self.require]
            raise ConfigError(
                "no configuration of the grid could be evaluated"
                + (f" that meets {', '.join(limits)}" if limits else "")
            )
        cfg = self.chosen.result.spec.to_mapping()
        r = self.chosen.result
        cfg["tuned"] = {
            "metric": self.metric,
            "score": self.chosen.score,
            "dataset": dataset,
            "embedder": embedder,
            "scores": {
                k: round(v, 6)
                for k, v in r.scores.items()
                if k
                in (
                    "recall@5",
                    "iou@5",
                    "precision@5",
                    "recall@10",
                    "iou@10",
                    "ndcg@10",
                    "mrr",
                    "recall_set@5",
                    "iou_set@5",
                    self.metric,
                )
                or k.startswith("tokens_retrieved")
            },
            "grid_points": len(self.rows),
            "sampler": self.sampler,
        }
        if self.decision is not None:
            cfg["tuned"]["decision"] = self.decision.to_dict()
        if self.saturation is not None:
            cfg["tuned"]["question_set"] = self.saturation.to_dict()
        if self.stopped:
            cfg["tuned"]["stopped"] = self.stopped
        return cfg


def tune(
    evaluator: Evaluator,
    strategy: str,
    grid: dict[str, list[Any]],
    metric: str = "recall@5",
    fixed: dict[str, Any] | None = None,
    max_tokens_retrieved: float | None = None,
    progress: Callable[[str], None] | None = None,
    require: Sequence[tuple[str, str, float] | str] = (),
    holdout: float = 0.3,
    seed: int | None = None,
    n_boot: int | None = None,
    baseline: bool = True,
    prefer: str = "quality",
) -> TuneResult:
    """Evaluate every point of ``grid`` (``fixed`` parameters added to each) and rank them by ``metric``.

    ``max_tokens_retrieved`` excludes from the choice of the best (not from the leaderboard) points whose
    mean tokens retrieved per query at the evaluator's ``k`` exceed it; ``require`` (``"iou@5>=0.072"``)
    likewise keeps points failing a requirement on another metric from winning. Invalid points (say
    overlap >= max_tokens) are listed with their error and skipped.

    ``holdout`` (a fraction, seeded by ``seed``) of the queries is kept out of the ranking and used only for
    the final decision (:class:`Decision`); ``baseline`` also evaluates the default configuration
    (:func:`default_spec`), which a point must beat significantly to be written; ``prefer="cheaper"``: see
    :func:`~.tune_decide.decide`. The result's ``chosen`` row is what :meth:`TuneResult.best_config` writes.
    """
    reqs = [parse_requirement(r) if isinstance(r, str) else r for r in require]
    fixed = dict(fixed or {})
    metric, _ = parse_metric(metric)
    check_grid(strategy, grid, fixed)
    names = list(grid)
    points = [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))] or [{}]
    ctx = TuneContext(evaluator, fixed, metric, max_tokens_retrieved, reqs, progress or (lambda msg: None))
    rows: list[TuneRow] = []
    if baseline:
        rows.append(evaluate_default(ctx, "[default]"))
    where = [f"[{i}/{len(points)}]" for i in range(1, len(points) + 1)]
    rows += [evaluate_point(ctx, strategy, {**fixed, **p}, w) for p, w in zip(points, where)]
    return finish(ctx, strategy, rows, holdout, seed, n_boot, "grid", prefer=prefer)


@dataclass
class TuneContext:
    """What every point of one search is evaluated and judged with: the evaluator, the settings every
    point shares (``fixed``), the metric that ranks them, the limits a winner must meet (the token budget
    ``max_tokens_retrieved`` and the requirements ``reqs``) and where progress is said; ``t0`` and ``n0``:
    when the search started and how many texts the evaluator had embedded by then."""

    evaluator: Evaluator
    fixed: dict[str, Any]
    metric: str
    max_tokens_retrieved: float | None
    reqs: list[tuple[str, str, float]]
    progress: Callable[[str], None]
    t0: float = field(default_factory=time.perf_counter)
    n0: int = field(init=False)

    def __post_init__(self) -> None:
        self.n0 = self.evaluator.embedder.texts_embedded


def default_spec(fixed: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The configuration ``index`` uses without ``--config`` (strategy ``auto``, its default sizes, hybrid
    retrieval), with the settings every searched point shares (``fixed``: tokenizer, run options) that
    ``auto`` accepts."""
    from ..strategies import DEFAULT_STRATEGY, strategy_class
    from .spec import RUN_KEYS

    accepted = set(strategy_class(DEFAULT_STRATEGY).param_names()) - {"max_tokens", "overlap"}
    return DEFAULT_STRATEGY, {k: v for k, v in fixed.items() if k in accepted or k in RUN_KEYS}


def evaluate_default(ctx: TuneContext, where: str) -> TuneRow:
    """The default configuration's row (:func:`default_spec`), marked ``is_default``."""
    strategy, params = default_spec(ctx.fixed)
    row = evaluate_point(ctx, strategy, params, where, {"strategy": f"{strategy} (default)", **params})
    row.is_default = True
    return row


def evaluate_point(
    ctx: TuneContext, strategy: str, params: dict[str, Any], where: str, shown: dict[str, Any] | None = None
) -> TuneRow:
    """Evaluate one point; an invalid one (``overlap >= max_tokens``) is a row with its error."""
    evaluator, metric, reqs, progress = ctx.evaluator, ctx.metric, ctx.reqs, ctx.progress
    budget = ctx.max_tokens_retrieved
    tokens_key = f"tokens_retrieved@{evaluator.k}"
    spec = spec_from_params(strategy, params)
    shown = params if shown is None else shown
    try:
        result = evaluator.run(spec)
    except ConfigError as exc:
        progress(f"{where} {spec.name}: skipped ({exc})")
        return TuneRow(shown, None, error=str(exc))
    if metric not in result.scores:
        raise ConfigError(
            f"metric {metric!r} is not computed with k={evaluator.k}; available: {', '.join(sorted(result.scores))}"
        )
    score = result.scores[metric]
    over = budget is not None and result.scores[tokens_key] > budget
    failed = [f"{n}{op}{v:g}" for n, op, v in reqs if not meets(result.scores, (n, op, v))]
    extra = "".join(
        f", {n} = {result.scores[n]:.4f}"
        for n in dict.fromkeys(["recall@5", "iou@5", *(r[0] for r in reqs)])
        if n != metric and n in result.scores
    )
    progress(  # one line per trial, its chunk count in it
        f"{where} {spec.name}: {result.stats.get('chunks', 0):,} chunks, {metric} = {score:.4f}{extra}"
        f" ({result.scores[tokens_key]:.0f} tokens retrieved{', over budget' if over else ''})"
    )
    return TuneRow(shown, score, result, over_budget=over, failed=failed)


def finish(
    ctx: TuneContext,
    strategy: str,
    rows: list[TuneRow],
    holdout: float,
    seed: int | None,
    n_boot: int | None,
    sampler: str,
    prefer: str = "quality",
    stopped: str = "",
) -> TuneResult:
    """Rank the rows on the search queries, decide on the held-out ones against the default row (when one
    is there and eligible), and assemble the result."""
    evaluator, metric = ctx.evaluator, ctx.metric
    seed = evaluator.seed if seed is None else seed
    n_boot = evaluator.n_boot if n_boot is None else n_boot
    search, held, split = split_queries(len(evaluator.dataset.queries), holdout, seed)
    for r in rows:
        if r.result is not None:
            r.search_score = float(r.result.per_query[metric][search].mean())
    scored = [r for r in rows if r.score is not None]
    scored.sort(key=lambda r: -(r.search_score or 0.0))  # every score here is a float
    rows = scored + [r for r in rows if r.score is None]
    eligible = [r for r in scored if not r.over_budget and not r.failed]
    default = next((r for r in eligible if r.is_default), None)
    sat = saturation(scored, metric)
    chosen, decision = decide(
        eligible,
        metric,
        search,
        held,
        split,
        n_boot,
        seed,
        default=default,
        prefer=prefer,
        saturated=sat is not None and sat.saturated,
    )
    return TuneResult(
        strategy,
        metric,
        rows,
        eligible[0] if eligible else None,
        time.perf_counter() - ctx.t0,
        evaluator.embedder.texts_embedded - ctx.n0,
        ctx.max_tokens_retrieved,
        ctx.fixed,
        ctx.reqs,
        chosen,
        decision,
        sampler,
        sat,
        stopped,
    )
