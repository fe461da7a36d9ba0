"""Grid search over a strategy's parameters, scored on an evaluation dataset.

Every grid point is a full evaluation (chunk, embed, retrieve, score), so the search is only affordable
because nothing is embedded twice: all points share one :class:`~.runner.Evaluator`, whose in-memory memo
sits on the persistent embedding cache. Texts common to several points (the same chunk produced by two
configurations, the sentences a semantic strategy embeds, the queries) are embedded once for the whole
search; a rerun reads them all from the cache.

The winner is written as ``{"strategy": ..., "params": {...}}``, the configuration file that ``chunkwise
chunk``, ``index`` and ``eval`` read with ``--config FILE``.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from . import metrics as M
from .results import RunResult
from .runner import Evaluator
from .spec import RUN_KEYS, parse_value, spec_from_params, split_top_level

#: metric names ``tune`` accepts (``@N`` takes any positive N for span and document recall metrics)
METRIC_HELP = (
    "recall@N, precision@N, iou@N (Chroma's arithmetic), recall_set@N, precision_set@N, iou_set@N "
    "(set arithmetic), N a number or 'min'; doc_recall@N, ndcg@10, mrr, precision_omega"
)
_METRIC = re.compile(r"^(recall|precision|iou|recall_set|precision_set|iou_set|doc_recall)@(\d+|min)$")


def parse_metric(metric: str) -> tuple[str, int | None]:
    """Validate a metric name; returns it and the ``k`` the evaluation needs for it (or ``None``)."""
    metric = metric.strip()
    if metric in ("ndcg@10", "mrr", "precision_omega", "precision_omega_set"):
        return metric, None
    m = _METRIC.match(metric)
    if not m:
        raise ConfigError(f"unknown metric {metric!r}; use one of {METRIC_HELP}")
    n = m.group(2)
    if n != "min" and int(n) < 1:
        raise ConfigError(f"metric {metric!r}: N must be >= 1")
    if m.group(1) == "doc_recall" and n == "min":
        raise ConfigError("doc_recall needs a number, e.g. doc_recall@5")
    return metric, (int(n) if n != "min" else None)


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """``['max_tokens=100,200', 'overlap=0,50']`` -> ``{"max_tokens": [100, 200], "overlap": [0, 50]}``.

    Values are JSON where they parse; a value list may also be written as one JSON list
    (``separators=[["\\n\\n", " "], ["\\n", " "]]``), and values may contain commas inside brackets.
    """
    grid: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--grid expects NAME=V1,V2,..., got {item!r}")
        name, _, values = item.partition("=")
        name = name.strip().replace("-", "_")
        values = values.strip()
        parsed: list[Any]
        as_json = parse_value(values) if values.startswith("[") else None
        if isinstance(as_json, list) and values.count("[") > 1 and all(isinstance(v, list) for v in as_json):
            parsed = as_json
        else:
            parsed = [parse_value(v) for v in split_top_level(values) if v.strip()]
        if not parsed:
            raise ConfigError(f"--grid {name}: no values")
        if name in grid:
            raise ConfigError(f"--grid {name} given twice")
        grid[name] = list(dict.fromkeys(json.dumps(v, sort_keys=True) for v in parsed))
        grid[name] = [json.loads(v) for v in grid[name]]
    return grid


def check_grid(strategy: str, grid: dict[str, Any], fixed: dict[str, Any]) -> None:
    """Unknown grid or fixed parameters are an error that lists the valid ones."""
    from ..strategies import strategy_class

    cls = strategy_class(strategy)
    valid = [p for p in cls.param_names() if p != "embedder"]
    # an old name (semantic's window) is accepted here and renamed, with a warning, by get_strategy
    unknown = [p for p in [*grid, *fixed] if p not in valid and p not in RUN_KEYS and p not in cls.renamed_params]
    if unknown:
        raise ConfigError(
            f"strategy {strategy!r} has no parameter {', '.join(sorted(set(unknown)))}; valid: "
            f"{', '.join(valid)} (and the run options late, context)"
        )


_REQUIRE = re.compile(r"^\s*([\w@.]+)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*$")


def parse_requirement(text: str) -> tuple[str, str, float]:
    """``"iou@5>=0.072"`` -> ``("iou@5", ">=", 0.072)``; the metric is checked like ``--metric``."""
    m = _REQUIRE.match(text)
    if not m:
        raise ConfigError(f"--require expects METRIC>=VALUE (or >, <=, <), got {text!r}")
    name = m.group(1)
    if not name.startswith("tokens_retrieved@"):
        parse_metric(name)
    return name, m.group(2), float(m.group(3))


def _meets(scores: dict[str, float], req: tuple[str, str, float]) -> bool:
    name, op, value = req
    if name not in scores:
        raise ConfigError(f"--require {name}: not computed; available: {', '.join(sorted(scores))}")
    v = scores[name]
    return {">=": v >= value, ">": v > value, "<=": v <= value, "<": v < value}[op]


@dataclass
class TuneRow:
    params: dict[str, Any]
    score: float | None
    result: RunResult | None = None
    error: str | None = None
    over_budget: bool = False
    #: requirements (``--require``) this point fails
    failed: list[str] = field(default_factory=list)
    #: the metric's mean over the search queries (all queries without a held-out split): what ranks rows
    search_score: float | None = None

    @property
    def cost(self) -> tuple[float, int]:
        """What "cheapest" means: mean tokens retrieved per query, then the number of chunks."""
        if self.result is None:
            return (float("inf"), 0)
        tokens = next((v for k, v in self.result.scores.items() if k.startswith("tokens_retrieved@")), 0.0)
        return (float(tokens), int(self.result.stats.get("chunks", 0)))


@dataclass
class Decision:
    """Whether the search winner is better than the runner-up beyond the noise, and what is written.

    The difference ``winner - runner-up`` of the metric is estimated per query on the held-out queries
    (all queries when there are too few to hold some out) with a paired bootstrap. When its interval
    contains 0 there is no significant winner, and the cheapest configuration that is not significantly
    worse than the winner (fewest tokens retrieved, then fewest chunks) is the one written: on 40 queries a
    one-query lead is noise, and the cheaper pipeline then costs nothing in quality that can be measured.
    """

    verdict: str
    winner: str
    runner_up: str | None
    diff: float
    lo: float
    hi: float
    queries: int
    split: str
    chosen: str
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "winner": self.winner,
            "runner_up": self.runner_up,
            "diff": round(self.diff, 6),
            "ci95": [round(self.lo, 6), round(self.hi, 6)],
            "queries": self.queries,
            "split": self.split,
            "chosen": self.chosen,
            "rule": self.rule,
        }

    def summary(self, metric: str) -> str:
        if self.runner_up is None:
            return f"{self.verdict}; wrote {self.chosen}"
        head = (
            f"{self.winner} vs {self.runner_up}: {metric} {self.diff:+.4f} [95% CI {self.lo:+.4f}, "
            f"{self.hi:+.4f}] on {self.queries} {self.split}"
        )
        if self.verdict == SIGNIFICANT:
            return f"{head}: significant winner {self.chosen}"
        return f"{head}: no significant winner: took the cheapest within the interval, {self.chosen}"


SIGNIFICANT = "significant winner"
NO_WINNER = "no significant winner"
#: a held-out part smaller than this is not made (the comparison then uses all queries, and says so)
MIN_HOLDOUT_QUERIES = 10


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
    #: the row written by :meth:`best_config`: ``best``, or the cheapest within the interval (:class:`Decision`)
    chosen: TuneRow | None = None
    decision: Decision | None = None
    #: how points were picked: "grid", "optuna-tpe" or "random"
    sampler: str = "grid"

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
) -> TuneResult:
    """Evaluate every point of ``grid`` (``fixed`` parameters added to each) and rank them by ``metric``.

    ``max_tokens_retrieved`` excludes from the choice of the best (not from the leaderboard) points whose
    mean tokens retrieved per query at the evaluator's ``k`` exceed it; ``require`` (``"iou@5>=0.072"``)
    likewise keeps points failing a requirement on another metric from winning. Invalid points (say
    overlap >= max_tokens) are listed with their error and skipped.

    ``holdout`` (a fraction, seeded by ``seed``, default the evaluator's) of the queries is kept out of the
    ranking and used only for the final comparison of the winner with the runner-up (:class:`Decision`);
    the result's ``chosen`` row is what :meth:`TuneResult.best_config` writes.
    """
    reqs = [parse_requirement(r) if isinstance(r, str) else r for r in require]
    fixed = dict(fixed or {})
    metric, _ = parse_metric(metric)
    check_grid(strategy, grid, fixed)
    progress = progress or (lambda msg: None)
    names = list(grid)
    points = [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))] or [{}]
    t0 = time.perf_counter()
    n0 = evaluator.embedder.texts_embedded
    rows: list[TuneRow] = []
    for i, point in enumerate(points, 1):
        rows.append(
            _point(
                evaluator,
                strategy,
                {**fixed, **point},
                metric,
                max_tokens_retrieved,
                reqs,
                progress,
                f"[{i}/{len(points)}]",
            )
        )
    return finish(
        evaluator, strategy, metric, rows, t0, n0, max_tokens_retrieved, fixed, reqs, holdout, seed, n_boot, "grid"
    )


def _point(
    evaluator: Evaluator,
    strategy: str,
    params: dict[str, Any],
    metric: str,
    max_tokens_retrieved: float | None,
    reqs: list[tuple[str, str, float]],
    progress: Callable[[str], None],
    where: str,
    shown: dict[str, Any] | None = None,
) -> TuneRow:
    """Evaluate one point; an invalid one (``overlap >= max_tokens``) is a row with its error."""
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
    over = max_tokens_retrieved is not None and result.scores[tokens_key] > max_tokens_retrieved
    failed = [f"{n}{op}{v:g}" for n, op, v in reqs if not _meets(result.scores, (n, op, v))]
    extra = "".join(
        f", {n} = {result.scores[n]:.4f}"
        for n in dict.fromkeys(["recall@5", "iou@5", *(r[0] for r in reqs)])
        if n != metric and n in result.scores
    )
    progress(
        f"{where} {spec.name}: {metric} = {score:.4f}{extra}"
        f" ({result.scores[tokens_key]:.0f} tokens retrieved{', over budget' if over else ''})"
    )
    return TuneRow(shown, score, result, over_budget=over, failed=failed)


def split_queries(n: int, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Indices of the search queries and of the held-out ones (a seeded permutation), and a description.
    No split (both all queries) when ``holdout`` is 0 or would hold out fewer than
    :data:`MIN_HOLDOUT_QUERIES`."""
    if not 0.0 <= holdout < 1.0:
        raise ConfigError(f"--holdout must be a fraction in [0, 1), got {holdout!r}")
    every = np.arange(n)
    n_hold = int(round(holdout * n))
    if holdout == 0:
        return every, every, "queries (no held-out split)"
    if n_hold < MIN_HOLDOUT_QUERIES or n - n_hold < 1:
        return (
            every,
            every,
            (
                f"queries (all: {n} are too few to hold out {holdout:.0%}, which needs "
                f"{MIN_HOLDOUT_QUERIES} held-out queries)"
            ),
        )
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_hold:]), np.sort(perm[:n_hold]), f"held-out queries ({holdout:.0%}, seed {seed})"


def decide(
    rows: Sequence[TuneRow],
    metric: str,
    search: np.ndarray,
    held: np.ndarray,
    split: str,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[TuneRow | None, Decision | None]:
    """The row to write and why: ``rows`` are the eligible rows best first (by the search queries). The
    winner is compared with the runner-up on the ``held`` queries by a paired bootstrap; when the interval
    contains 0 the cheapest row not significantly worse than the winner there is taken."""
    if not rows:
        return None, None
    best = rows[0]
    assert best.result is not None
    if len(rows) == 1:
        return best, Decision(
            "only one configuration could win",
            best.result.name,
            None,
            0.0,
            0.0,
            0.0,
            len(held),
            split,
            best.result.name,
            "the only eligible configuration",
        )
    runner = rows[1]
    assert runner.result is not None

    def vs(row: TuneRow) -> M.Bootstrap:
        assert best.result is not None and row.result is not None
        return M.paired_bootstrap(best.result.per_query[metric][held], row.result.per_query[metric][held], n_boot, seed)

    ci = vs(runner)
    if ci["lo"] > 0:
        return best, Decision(
            SIGNIFICANT,
            best.result.name,
            runner.result.name,
            ci["diff"],
            ci["lo"],
            ci["hi"],
            len(held),
            split,
            best.result.name,
            "the winner's interval against the runner-up excludes 0",
        )
    tied = [best] + [r for r in rows[1:] if vs(r)["lo"] <= 0]
    chosen = min(tied, key=lambda r: r.cost)  # min keeps the better-ranked row among equal costs
    assert chosen.result is not None
    return chosen, Decision(
        NO_WINNER,
        best.result.name,
        runner.result.name,
        ci["diff"],
        ci["lo"],
        ci["hi"],
        len(held),
        split,
        chosen.result.name,
        f"the cheapest (tokens retrieved, then chunks) of the {len(tied)} configurations "
        "not significantly worse than the winner",
    )


def finish(
    evaluator: Evaluator,
    strategy: str,
    metric: str,
    rows: list[TuneRow],
    t0: float,
    n0: int,
    max_tokens_retrieved: float | None,
    fixed: dict[str, Any],
    reqs: list[tuple[str, str, float]],
    holdout: float,
    seed: int | None,
    n_boot: int | None,
    sampler: str,
) -> TuneResult:
    """Rank the rows on the search queries, decide on the held-out ones, and assemble the result."""
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
    chosen, decision = decide(eligible, metric, search, held, split, n_boot, seed)
    return TuneResult(
        strategy,
        metric,
        rows,
        eligible[0] if eligible else None,
        time.perf_counter() - t0,
        evaluator.embedder.texts_embedded - n0,
        max_tokens_retrieved,
        fixed,
        reqs,
        chosen,
        decision,
        sampler,
    )


# -- a budgeted search over the space that matters -----------------------------------------------------

#: retrieval settings of the search space: how each reads as run options
RETRIEVALS: dict[str, dict[str, Any]] = {
    "dense": {"hybrid": False},
    "zscore": {"hybrid": True, "fusion": "zscore"},
    "rrf": {"hybrid": True, "fusion": "rrf"},
}


@dataclass
class SearchSpace:
    """What ``tune --trials N`` searches: strategy x chunk size x overlap x retrieval (dense, hybrid with
    z-score fusion, hybrid with RRF at each ``rrf_k``), plus any ``--grid`` parameters. The defaults are the
    settings measured to matter: retrieval moved nDCG@10 by +0.06 to +0.17 where strategies moved it by at
    most 0.028, so both are searched together rather than strategies alone."""

    strategies: list[str] = field(default_factory=lambda: ["fixed", "sentence", "recursive"])
    max_tokens: list[int] = field(default_factory=lambda: [128, 256, 512])
    overlap: list[int] = field(default_factory=lambda: [0, 32])
    retrieval: list[str] = field(default_factory=lambda: ["dense", "zscore", "rrf"])
    rrf_k: list[int] = field(default_factory=lambda: [10, 60])
    extra: dict[str, list[Any]] = field(default_factory=dict)

    def check(self) -> None:
        from ..strategies import STRATEGY_NAMES

        for name, values in (
            ("strategies", self.strategies),
            ("max_tokens", self.max_tokens),
            ("overlap", self.overlap),
            ("retrieval", self.retrieval),
            ("rrf_k", self.rrf_k),
        ):
            if not values:
                raise ConfigError(f"the search space has no {name}")
        bad = [x for x in self.strategies if x not in STRATEGY_NAMES]
        if bad:
            raise ConfigError(f"unknown strategy {bad[0]!r}; choose from {', '.join(STRATEGY_NAMES)}")
        bad = [x for x in self.retrieval if x not in RETRIEVALS]
        if bad:
            raise ConfigError(f"unknown retrieval {bad[0]!r}; choose from {', '.join(RETRIEVALS)}")
        for x in self.strategies:
            check_grid(x, self.extra, {})

    def points(self) -> list[tuple[str, dict[str, Any]]]:
        """Every distinct valid point (overlap below max_tokens; rrf_k only for RRF), in a fixed order."""
        out = []
        names = list(self.extra)
        for strat, size, ov, ret in itertools.product(self.strategies, self.max_tokens, self.overlap, self.retrieval):
            if ov >= size:
                continue
            for ks in self.rrf_k if ret == "rrf" else [None]:
                for combo in itertools.product(*(self.extra[n] for n in names)):
                    params: dict[str, Any] = {
                        "max_tokens": size,
                        "overlap": ov,
                        **dict(zip(names, combo)),
                        **RETRIEVALS[ret],
                    }
                    if ks is not None:
                        params["rrf_k"] = ks
                    out.append((strat, params))
        return out


def search(
    evaluator: Evaluator,
    space: SearchSpace | None = None,
    trials: int = 30,
    metric: str = "recall@5",
    fixed: dict[str, Any] | None = None,
    max_tokens_retrieved: float | None = None,
    progress: Callable[[str], None] | None = None,
    require: Sequence[tuple[str, str, float] | str] = (),
    holdout: float = 0.3,
    seed: int | None = None,
    n_boot: int | None = None,
    sampler: str = "tpe",
) -> TuneResult:
    """Evaluate ``trials`` distinct points of ``space`` chosen by Optuna's TPE sampler (seeded; ``sampler=
    "random"`` or Optuna missing: a seeded random sample), ranked on the search queries and decided on the
    held-out ones as :func:`tune` does. A space no larger than ``trials`` is evaluated whole."""
    space = space or SearchSpace()
    space.check()
    reqs = [parse_requirement(r) if isinstance(r, str) else r for r in require]
    fixed = dict(fixed or {})
    metric, _ = parse_metric(metric)
    if not isinstance(trials, int) or trials < 1:
        raise ConfigError(f"--trials must be a positive integer, got {trials!r}")
    seed = evaluator.seed if seed is None else seed
    progress = progress or (lambda msg: None)
    points = space.points()
    if not points:
        raise ConfigError("the search space has no valid point (every overlap >= every max_tokens?)")
    search_idx, _, _ = split_queries(len(evaluator.dataset.queries), holdout, seed)
    t0 = time.perf_counter()
    n0 = evaluator.embedder.texts_embedded
    done: dict[str, TuneRow] = {}

    def run(strat: str, params: dict[str, Any]) -> TuneRow:
        key = json.dumps([strat, params], sort_keys=True)
        if key not in done:
            shown = {"strategy": strat, **params}
            done[key] = _point(
                evaluator,
                strat,
                {**fixed, **params},
                metric,
                max_tokens_retrieved,
                reqs,
                progress,
                f"[{len(done) + 1}/{min(trials, len(points))}]",
                shown,
            )
        return done[key]

    used = "grid" if len(points) <= trials else sampler
    if used == "tpe":
        try:
            import optuna
        except ImportError:
            progress("optuna is not installed (pip install 'chunkwise[tune]'): sampling points at random")
            used = "random"
    if used == "grid":
        for strat, params in points:
            run(strat, params)
    elif used == "random":
        for strat, params in random.Random(seed).sample(points, trials):
            run(strat, params)
    else:
        used = "optuna-tpe"
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(
            direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(10, trials))
        )
        by_key = {json.dumps([st, pr], sort_keys=True): (st, pr) for st, pr in points}
        asks = 0
        while len(done) < trials and asks < 20 * trials:
            asks += 1
            trial = study.ask()
            strat = str(trial.suggest_categorical("strategy", space.strategies))
            ret = str(trial.suggest_categorical("retrieval", space.retrieval))
            point: dict[str, Any] = {
                "max_tokens": trial.suggest_categorical("max_tokens", space.max_tokens),
                "overlap": trial.suggest_categorical("overlap", space.overlap),
            }
            for n in space.extra:  # JSON text: Optuna's choices must be plain scalars
                point[n] = json.loads(str(trial.suggest_categorical(n, [json.dumps(v) for v in space.extra[n]])))
            point.update(RETRIEVALS[ret])
            if ret == "rrf":
                point["rrf_k"] = trial.suggest_categorical("rrf_k", space.rrf_k)
            key = json.dumps([strat, point], sort_keys=True)
            if key not in by_key:  # overlap >= max_tokens: not a point of the space
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                continue
            row = run(*by_key[key])
            if row.result is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, float(row.result.per_query[metric][search_idx].mean()))
    rows = list(done.values())
    return finish(
        evaluator, "search", metric, rows, t0, n0, max_tokens_retrieved, fixed, reqs, holdout, seed, n_boot, used
    )


def write_config(path: str | Path, config: dict[str, Any]) -> None:
    p = Path(path)
    try:
        p.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the configuration ({exc.strerror})", source=str(path)) from None


__all__ = [
    "tune",
    "search",
    "SearchSpace",
    "Decision",
    "decide",
    "split_queries",
    "RETRIEVALS",
    "parse_grid",
    "parse_metric",
    "parse_requirement",
    "check_grid",
    "write_config",
    "TuneResult",
    "TuneRow",
]
