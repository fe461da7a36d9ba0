"""The budgeted search of ``tune --trials N``: a :class:`SearchSpace` of strategy x chunk size x overlap x
retrieval, sampled by Optuna's TPE (or at random, seeded) and ranked and decided as the grid search is
(:func:`~.tune_grid.finish`)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..validation import Interval, Options, check_flag
from .runner import Evaluator
from .tune_decide import PREFER, TuneRow, split_queries
from .tune_grid import TuneContext, TuneResult, evaluate_default, evaluate_point, finish
from .tune_parse import check_grid, parse_metric, parse_requirement

#: retrieval settings of the search space: how each reads as run options
RETRIEVALS: dict[str, dict[str, Any]] = {
    "dense": {"hybrid": False},
    "zscore": {"hybrid": True, "fusion": "zscore"},
    "rrf": {"hybrid": True, "fusion": "rrf"},
}
#: a progress line at least this often while a trial runs (seconds)
HEARTBEAT_SECONDS = 20.0
#: the declaration of a search's wall-clock budget (seconds; ``None``: none), ``--time``'s too
TIME_BUDGET = [Interval(float, 0, None, closed="neither"), None]


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
    time_budget: float | None = None,
    journal: str | Path | None = None,
    prefer: str = "quality",
    heartbeat: float = HEARTBEAT_SECONDS,
) -> TuneResult:
    """Evaluate the default configuration, then ``trials`` distinct points of ``space`` chosen by Optuna's
    TPE sampler (seeded; ``sampler="random"`` or Optuna missing: a seeded random sample), ranked on the
    search queries and decided against the default on the held-out ones as :func:`tune` does. A space no
    larger than ``trials`` is evaluated whole.

    ``time_budget`` (seconds) starts no trial once it is spent (the trial under way finishes); a progress
    line (trials done and left, the best so far) is said at least every ``heartbeat`` seconds; ``journal``
    gets one JSON line per finished trial, flushed as it finishes, so a killed search keeps what it
    measured. ``prefer="cheaper"``: see :func:`~.tune_decide.decide`."""
    space = space or SearchSpace()
    metric, reqs, points = _checked(space, trials, metric, require)
    check_flag(prefer, "--prefer", Options(*PREFER))
    check_flag(time_budget, "--time", TIME_BUDGET)
    fixed = dict(fixed or {})
    seed = evaluator.seed if seed is None else seed
    say = progress or (lambda msg: None)
    search_idx, _, _ = split_queries(len(evaluator.dataset.queries), holdout, seed)
    ctx = TuneContext(evaluator, fixed, metric, max_tokens_retrieved, reqs, say)
    runs = _Trials(ctx, min(trials, len(points)))
    runs.start(time_budget, journal, heartbeat)
    try:
        base = runs.default()
        used = _sampler(len(points), trials, sampler, say)
        if used in ("grid", "random"):
            chosen = list(points) if used == "grid" else random.Random(seed).sample(points, trials)
            for strat, params in chosen:
                if runs.out_of_time():
                    break
                runs.run(strat, params)
        else:
            used = "optuna-tpe"
            _optuna_trials(space, points, trials, seed, runs.done, runs.run, metric, search_idx, runs.out_of_time)
    finally:
        runs.close()
    rows = [base, *runs.done.values()]
    return finish(ctx, "search", rows, holdout, seed, n_boot, used, prefer=prefer, stopped=runs.stopped())


class _Trials:
    """The trials of one :func:`search`: each point evaluated once (``done``), saved to the journal as it
    finishes, under the time budget and the progress heartbeat."""

    def __init__(self, ctx: TuneContext, total: int) -> None:
        self.ctx, self.metric, self.say, self.total = ctx, ctx.metric, ctx.progress, total
        self.done: dict[str, TuneRow] = {}
        self.t0 = ctx.t0
        self.budget: float | None = None

    def start(self, budget: float | None, journal: str | Path | None, heartbeat: float) -> None:
        self.budget = budget
        self.log = _Journal(journal, self.metric)
        self.beat = _Heartbeat(self.say, heartbeat, self.t0, self.total, self.metric, self.done)
        self.say(
            f"tune: the default configuration, then up to {self.total} trials"
            + (f" within {budget:.0f} s" if budget is not None else "")
            + (f"; finished trials are saved in {journal}" if journal is not None else "")
        )

    def out_of_time(self) -> bool:
        return self.budget is not None and time.perf_counter() - self.t0 >= self.budget

    def default(self) -> TuneRow:
        with self.beat.running("the default configuration"):
            base = evaluate_default(self.ctx, "[default]")
        self.log.write(base)
        self.beat.default = base
        return base

    def run(self, strat: str, params: dict[str, Any]) -> TuneRow:
        key = json.dumps([strat, params], sort_keys=True)
        if key not in self.done:
            with self.beat.running(f"{strat} {json.dumps(params, sort_keys=True)}"):
                where = f"[{len(self.done) + 1}/{self.total}]"
                row = evaluate_point(
                    self.ctx, strat, {**self.ctx.fixed, **params}, where, {"strategy": strat, **params}
                )
            self.done[key] = row
            self.log.write(row)
        return self.done[key]

    def close(self) -> None:
        self.beat.stop()
        self.log.close()

    def stopped(self) -> str:
        """The line said when the budget cut the search short ("" when it did not)."""
        if len(self.done) >= self.total or not self.out_of_time():
            return ""
        line = (
            f"the time budget ({self.budget:.0f} s) was spent after {len(self.done)} of {self.total} trials; "
            "the decision uses the trials finished"
        )
        self.say(line)
        return line


class _Journal:
    """One JSON line per finished trial (parameters, scores, the metric per query), appended and flushed as
    each finishes: what a killed ``tune`` leaves behind."""

    def __init__(self, path: str | Path | None, metric: str) -> None:
        self.metric = metric
        self.fh = None
        if path is not None:
            try:
                self.fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
            except OSError as exc:
                raise ConfigError(f"cannot write the trials file ({exc.strerror})", source=str(path)) from None

    def write(self, row: TuneRow) -> None:
        if self.fh is None:
            return
        rec: dict[str, Any] = {"params": row.params, "default": row.is_default}
        if row.result is None:
            rec["error"] = row.error
        else:
            rec["config"] = row.result.spec.to_mapping()
            rec["scores"] = {k: round(float(v), 6) for k, v in row.result.scores.items()}
            rec["per_query"] = {self.metric: [round(float(x), 6) for x in row.result.per_query[self.metric]]}
        self.fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


class _Heartbeat:
    """Says a progress line at least every ``every`` seconds while a trial runs: trials done and left, the
    elapsed time and the best score so far (a trial can take minutes on a large folder)."""

    def __init__(
        self, say: Callable[[str], None], every: float, t0: float, total: int, metric: str, done: dict[str, TuneRow]
    ) -> None:
        self.say, self.every, self.t0, self.total, self.metric, self.done = say, every, t0, total, metric, done
        self.default: TuneRow | None = None
        self._stop = threading.Event()
        self._what = ""
        self._since = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="tune-progress")
        self._thread.start()

    def line(self) -> str:
        rows = [r for r in (self.default, *self.done.values()) if r is not None and r.score is not None]
        best = max(rows, key=lambda r: r.score or 0.0, default=None)
        best_txt = (
            f"; best so far {self.metric} = {best.score:.4f} ({best.result.name})" if best and best.result else ""
        )
        return (
            f"tune: {len(self.done)} of {self.total} trials done, {self.total - len(self.done)} left, "
            f"{time.perf_counter() - self.t0:.0f} s{best_txt}; running {self._what} for "
            f"{time.perf_counter() - self._since:.0f} s"
        )

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            if self._what:
                self.say(self.line())

    @contextlib.contextmanager
    def running(self, what: str):
        self._what, self._since = what, time.perf_counter()
        try:
            yield
        finally:
            self._what = ""

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)


def _checked(
    space: SearchSpace, trials: int, metric: str, require: Sequence[tuple[str, str, float] | str]
) -> tuple[str, list[tuple[str, str, float]], list[tuple[str, dict[str, Any]]]]:
    """The search's arguments checked before anything is evaluated (one :class:`ConfigError` each): the
    metric's name, the parsed requirements and the space's points."""
    space.check()
    reqs = [parse_requirement(r) if isinstance(r, str) else r for r in require]
    metric, _ = parse_metric(metric)
    check_flag(trials, "--trials", Interval(int, 1, None))
    points = space.points()
    if not points:
        raise ConfigError("the search space has no valid point (every overlap >= every max_tokens?)")
    return metric, reqs, points


def _sampler(n_points: int, trials: int, sampler: str, progress: Callable[[str], None]) -> str:
    """How :func:`search` picks its points: the whole space when it is no larger than ``trials``, else
    ``sampler``; TPE falls back to a seeded random sample (said once) when Optuna is not installed."""
    used = "grid" if n_points <= trials else sampler
    if used == "tpe":
        try:
            import optuna  # noqa: F401
        except ImportError:
            progress("optuna is not installed (pip install 'chunkwise[tune]'): sampling points at random")
            used = "random"
    return used


def _optuna_trials(
    space: SearchSpace,
    points: list[tuple[str, dict[str, Any]]],
    trials: int,
    seed: int,
    done: dict[str, TuneRow],
    run: Callable[..., TuneRow],
    metric: str,
    search_idx: np.ndarray,
    out_of_time: Callable[[], bool] = lambda: False,
) -> None:
    """Ask Optuna's TPE sampler for points until ``trials`` distinct ones are evaluated (``done`` fills as
    ``run`` evaluates them); apart from :func:`search` because the ask/tell loop is the only Optuna code.
    A suggestion outside the space (overlap >= max_tokens) is pruned, a failed point told as failed, and the
    rest told ``metric``'s mean over the search queries (``search_idx``)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(10, trials))
    )
    by_key = {json.dumps([st, pr], sort_keys=True): (st, pr) for st, pr in points}
    asks = 0
    while len(done) < trials and asks < 20 * trials:
        if out_of_time():
            return
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
