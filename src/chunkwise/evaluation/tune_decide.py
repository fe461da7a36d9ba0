"""How ``tune`` picks what it writes: a row per evaluated point (:class:`TuneRow`), the held-out split
of the queries, the paired-bootstrap comparison with the default configuration (:func:`decide`), whose
outcome and reasons are a :class:`Decision`, and how hard the question set was (:class:`Saturation`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..records import pick
from ..validation import Interval, Options, check_flag
from . import metrics as M
from .results import RunResult

SIGNIFICANT = "significant winner"
NO_WINNER = "no significant winner"
#: the one line said when nothing beats the default beyond the noise
KEEP_DEFAULT = "no significant winner: keeping the default"
#: what ``--prefer`` accepts: ``quality`` (the default; ties broken by the priors) or ``cheaper``
PREFER = ("quality", "cheaper")
PREFER_CHEAPER_RULE = "--prefer cheaper: the cheapest"
#: a configuration replacing the default must not be significantly worse than it on these either
GUARD_METRICS = ("recall@5", "ndcg@10")
#: a held-out part smaller than this is not made (the comparison then uses all queries, and says so)
MIN_HOLDOUT_QUERIES = 10


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
    #: the configuration used without ``--config`` (the baseline a winner must beat)
    is_default: bool = False

    @property
    def cost(self) -> tuple[float, int]:
        """What "cheapest" means: mean tokens retrieved per query, then the number of chunks."""
        if self.result is None:
            return (float("inf"), 0)
        tokens = next((v for k, v in self.result.scores.items() if k.startswith("tokens_retrieved@")), 0.0)
        return (float(tokens), int(self.result.stats.get("chunks", 0)))


@dataclass
class Decision:
    """What ``tune`` writes and why, decided against the default configuration.

    The difference ``candidate - default`` of the metric is estimated per query on the held-out queries
    (all queries when there are too few to hold some out) with a paired bootstrap. Only a configuration
    whose interval against the default excludes 0 can replace it: otherwise *no significant winner:
    keeping the default*. Among the configurations significantly better than the default and not
    significantly worse than the best of them, ties are broken by measured priors (hybrid retrieval over
    dense, then the larger context budget: more tokens retrieved), the two choices on which generated
    questions rank pipelines as people's questions do (docs/evaluation.md); never by cost alone. Cost is a
    separate objective the caller asks for (``prefer="cheaper"``): the cheapest configuration not
    significantly worse than the default nor than the best.
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
    #: what ``winner - runner_up`` compares: "the default" (the baseline) or "the runner-up"
    against: str = "the runner-up"

    def to_dict(self) -> dict[str, Any]:
        return {
            **pick(self, "verdict winner runner_up against"),
            "diff": round(self.diff, 6),
            "ci95": [round(self.lo, 6), round(self.hi, 6)],
            **pick(self, "queries split chosen rule"),
        }

    def summary(self, metric: str) -> str:
        if self.runner_up is None:
            return f"{self.verdict}; wrote {self.chosen}"
        head = (
            f"{self.winner} vs {self.runner_up}: {metric} {self.diff:+.4f} [95% CI {self.lo:+.4f}, "
            f"{self.hi:+.4f}] on {self.queries} {self.split}"
        )
        if self.rule.startswith(PREFER_CHEAPER_RULE):
            return f"{head}: {self.verdict}; --prefer cheaper: wrote {self.chosen}"
        if self.verdict == SIGNIFICANT:
            return f"{head}: significant winner {self.chosen}"
        if self.chosen_is_default:
            return f"{head}: {self.rule if self.rule.startswith(KEEP_DEFAULT) else KEEP_DEFAULT}"
        return f"{head}: no significant winner: kept {self.chosen} ({self.rule})"

    @property
    def chosen_is_default(self) -> bool:
        return self.against == "the default" and self.chosen == self.runner_up


def split_queries(n: int, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Indices of the search queries and of the held-out ones (a seeded permutation), and a description.
    No split (both all queries) when ``holdout`` is 0 or would hold out fewer than
    :data:`MIN_HOLDOUT_QUERIES`."""
    check_flag(holdout, "--holdout", Interval(float, 0, 1, closed="left"))
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


def prior_key(row: TuneRow) -> tuple[int, float, float]:
    """How tied rows are ordered, best first: hybrid before dense retrieval, then more tokens retrieved (the
    larger context budget), then the search score. Both priors are measured: hybrid beat dense and larger
    budgets beat smaller ones on human questions wherever generated questions said so
    (``benchmarks/bench_questions.py``), while "the cheapest within the interval" lost up to 0.17 recall@5
    on human queries by taking dense 128-token configurations."""
    assert row.result is not None
    tokens = next((v for k, v in row.result.scores.items() if k.startswith("tokens_retrieved@")), 0.0)
    return (0 if row.result.spec.hybrid else 1, -float(tokens), -(row.search_score or 0.0))


def decide(
    rows: Sequence[TuneRow],
    metric: str,
    search: np.ndarray,
    held: np.ndarray,
    split: str,
    n_boot: int = 1000,
    seed: int = 0,
    default: TuneRow | None = None,
    prefer: str = "quality",
    saturated: bool = False,
) -> tuple[TuneRow | None, Decision | None]:
    """The row to write and why: ``rows`` are the eligible rows best first (by the search queries).

    With a ``default`` row (the configuration used without ``--config``, evaluated on the same queries),
    a row replaces it only when its paired interval against the default on the ``held`` queries excludes
    0 and it is not significantly worse than the default on the other metrics of :data:`GUARD_METRICS`;
    otherwise the default is kept, and so it is when the question set is ``saturated``. Without one, the
    winner is compared with the runner-up, and a tie keeps the row the priors prefer among those not
    significantly worse than the winner (:func:`prior_key`). ``prefer="cheaper"`` takes the cheapest row not significantly worse than the
    winner (nor than the default)."""
    check_flag(prefer, "--prefer", Options(*PREFER))
    if default is not None and default.result is None:
        default = None
    if not rows:
        return (
            (default, _decision(NO_WINNER, default, None, None, held, split, default, KEEP_DEFAULT))
            if default
            else (None, None)
        )
    best = rows[0]
    assert best.result is not None

    def vs(row: TuneRow, other: TuneRow, name: str = metric) -> M.Bootstrap:
        assert other.result is not None and row.result is not None
        return M.paired_bootstrap(row.result.per_query[name][held], other.result.per_query[name][held], n_boot, seed)

    if default is None:
        return _decide_without_default(rows, best, vs, held, split, prefer)
    return _decide_with_default(rows, default, vs, metric, held, split, prefer, saturated)


def _decide_with_default(rows, default, vs, metric, held, split, prefer, saturated):
    """:func:`decide` against the default row: only a significantly better row replaces it."""
    others = [r for r in rows if r is not default]
    if not others:
        return default, _decision(
            "only the default could win", default, None, None, held, split, default, "the only eligible configuration"
        )
    top = others[0]
    ci = vs(top, default)
    if prefer == "cheaper":
        ok = [default] + [r for r in others if vs(r, default)["hi"] >= 0 and vs(r, top)["hi"] >= 0]
        chosen = min(ok, key=lambda r: r.cost)
        verdict = SIGNIFICANT if chosen is not default and vs(chosen, default)["lo"] > 0 else NO_WINNER
        rule = (
            f"{PREFER_CHEAPER_RULE} (tokens retrieved, then chunks) of the {len(ok)} configurations not "
            "significantly worse than the default nor than the best"
        )
        return chosen, _decision(verdict, top, default, ci, held, split, chosen, rule, "the default")
    if saturated:
        rule = f"{KEEP_DEFAULT} (the question set is saturated)"
        return default, _decision(NO_WINNER, top, default, ci, held, split, default, rule, "the default")
    assert default.result is not None
    guards = [g for g in GUARD_METRICS if g != metric and g in default.result.per_query]

    def not_worse(row: TuneRow) -> bool:  # on the other metrics the questions rank: no significant loss
        return all(vs(row, default, g)["hi"] >= 0 for g in guards)

    better = [r for r in others if vs(r, default)["lo"] > 0 and not_worse(r)]
    if not better:
        return default, _decision(NO_WINNER, top, default, ci, held, split, default, KEEP_DEFAULT, "the default")
    lead = better[0]
    tied = [lead] + [r for r in better[1:] if vs(r, lead)["hi"] >= 0]
    chosen = min(tied, key=prior_key)  # min keeps the better-ranked row among equal keys
    ci = vs(chosen, default)
    rule = (
        f"significantly better than the default; of the {len(tied)} such configurations not significantly "
        "worse than the best of them, the one the priors prefer (hybrid over dense, then the larger context "
        "budget)"
        if len(tied) > 1
        else "the only configuration significantly better than the default"
    )
    return chosen, _decision(SIGNIFICANT, chosen, default, ci, held, split, chosen, rule, "the default")


def _decide_without_default(rows, best, vs, held, split, prefer):
    """:func:`decide` without a baseline: the winner against the runner-up."""
    if len(rows) == 1:
        return best, _decision(
            "only one configuration could win", best, None, None, held, split, best, "the only eligible configuration"
        )
    runner = rows[1]
    ci = vs(best, runner)
    if ci["lo"] > 0 and prefer != "cheaper":
        return best, _decision(
            SIGNIFICANT, best, runner, ci, held, split, best, "the winner's interval against the runner-up excludes 0"
        )
    tied = [best] + [r for r in rows[1:] if vs(r, best)["hi"] >= 0]
    if prefer == "cheaper":
        chosen = min(tied, key=lambda r: r.cost)
        rule = f"{PREFER_CHEAPER_RULE} (tokens retrieved, then chunks) of the {len(tied)} configurations not significantly worse than the winner"
    else:
        chosen = min(tied, key=prior_key)
        rule = (
            f"of the {len(tied)} configurations not significantly worse than the winner, the one the priors "
            "prefer (hybrid over dense, then the larger context budget)"
        )
    verdict = SIGNIFICANT if ci["lo"] > 0 else NO_WINNER
    return chosen, _decision(verdict, best, runner, ci, held, split, chosen, rule)


def _decision(
    verdict: str,
    best: TuneRow,
    runner: TuneRow | None,
    ci: M.Bootstrap | None,
    held: np.ndarray,
    split: str,
    chosen: TuneRow,
    rule: str,
    against: str = "the runner-up",
) -> Decision:
    """A :class:`Decision` from the rows compared, so each of :func:`decide`'s outcomes is one call; no
    runner-up (``ci`` None) is a difference of 0 with an interval of [0, 0]."""
    assert best.result is not None and chosen.result is not None
    diff, lo, hi = (ci["diff"], ci["lo"], ci["hi"]) if ci is not None else (0.0, 0.0, 0.0)
    runner_name = runner.result.name if runner is not None and runner.result is not None else None
    return Decision(
        verdict, best.result.name, runner_name, diff, lo, hi, len(held), split, chosen.result.name, rule, against
    )


#: a question set whose best configuration scores at least this cannot rank configurations
SATURATED_BEST = 0.95
#: ... nor one where at least this share of the questions is answered by every configuration
SATURATED_SHARE = 0.8
#: a question is "answered" by a configuration when its per-query score reaches this
ANSWERED = 0.5


@dataclass
class Saturation:
    """How hard a question set is for the configurations tried: the best one's score, and the share of the
    questions every configuration answers (per-query score >= :data:`ANSWERED`). A set is *saturated*
    when the best scores at least :data:`SATURATED_BEST` or every configuration answers at least
    :data:`SATURATED_SHARE` of it: the configurations then differ on too few questions to be ranked."""

    metric: str
    best: float
    answered_by_all: float
    questions: int
    configurations: int

    @property
    def saturated(self) -> bool:
        return self.configurations > 1 and (self.best >= SATURATED_BEST or self.answered_by_all >= SATURATED_SHARE)

    def line(self) -> str:
        return (
            f"question set: best {self.metric} {self.best:.3f}; {self.answered_by_all:.0%} of {self.questions} "
            f"questions answered by all {self.configurations} configurations"
        )

    def warning(self) -> str | None:
        """One line when the set is saturated, else ``None``."""
        if not self.saturated:
            return None
        return (
            f"warning: the question set is saturated (best {self.metric} {self.best:.3f}; "
            f"{self.answered_by_all:.0%} of {self.questions} questions answered by all {self.configurations} "
            "configurations): it cannot rank them; write harder questions (another --method, or an LLM)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "best": round(self.best, 6),
            "answered_by_all": round(self.answered_by_all, 6),
            "questions": self.questions,
            "configurations": self.configurations,
            "saturated": self.saturated,
        }


def saturation(rows: Sequence[TuneRow], metric: str) -> Saturation | None:
    """The :class:`Saturation` of the rows that have a result (``None`` without any)."""
    done = [r.result for r in rows if r.result is not None]
    if not done:
        return None
    per = np.vstack([r.per_query[metric] for r in done])
    return Saturation(
        metric,
        float(per.mean(axis=1).max()),
        float((per >= ANSWERED).all(axis=0).mean()) if per.shape[1] else 0.0,
        int(per.shape[1]),
        len(done),
    )
