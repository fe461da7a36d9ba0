"""How ``tune`` picks what it writes: a row per evaluated point (:class:`TuneRow`), the held-out split
of the queries, and the paired-bootstrap comparison of the winner with the runner-up (:func:`decide`), whose
outcome and reasons are a :class:`Decision`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError
from . import metrics as M
from .results import RunResult

SIGNIFICANT = "significant winner"
NO_WINNER = "no significant winner"
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
        return best, _decision(
            "only one configuration could win", best, None, None, held, split, best, "the only eligible configuration"
        )
    runner = rows[1]
    assert runner.result is not None

    def vs(row: TuneRow) -> M.Bootstrap:
        assert best.result is not None and row.result is not None
        return M.paired_bootstrap(best.result.per_query[metric][held], row.result.per_query[metric][held], n_boot, seed)

    ci = vs(runner)
    if ci["lo"] > 0:
        return best, _decision(
            SIGNIFICANT, best, runner, ci, held, split, best, "the winner's interval against the runner-up excludes 0"
        )
    tied = [best] + [r for r in rows[1:] if vs(r)["lo"] <= 0]
    chosen = min(tied, key=lambda r: r.cost)  # min keeps the better-ranked row among equal costs
    rule = (
        f"the cheapest (tokens retrieved, then chunks) of the {len(tied)} configurations "
        "not significantly worse than the winner"
    )
    return chosen, _decision(NO_WINNER, best, runner, ci, held, split, chosen, rule)


def _decision(
    verdict: str,
    best: TuneRow,
    runner: TuneRow | None,
    ci: M.Bootstrap | None,
    held: np.ndarray,
    split: str,
    chosen: TuneRow,
    rule: str,
) -> Decision:
    """A :class:`Decision` from the rows compared, so each of :func:`decide`'s outcomes is one call; no
    runner-up (``ci`` None) is a difference of 0 with an interval of [0, 0]."""
    assert best.result is not None and chosen.result is not None
    diff, lo, hi = (ci["diff"], ci["lo"], ci["hi"]) if ci is not None else (0.0, 0.0, 0.0)
    runner_name = runner.result.name if runner is not None and runner.result is not None else None
    return Decision(verdict, best.result.name, runner_name, diff, lo, hi, len(held), split, chosen.result.name, rule)
