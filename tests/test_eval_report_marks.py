"""The terminal report's "Δ vs the first run [interval]" column prints a bound at zero as +0.0, never -0.0:
an interval ending at "-0.0" read as excluding 0 while the mark said "not significant"."""

from __future__ import annotations

from types import SimpleNamespace

from chunkwise.evaluation.report import NS_MARK, baseline_marks
from chunkwise.evaluation.results import Comparison


def _report(comparison: Comparison):
    runs = [SimpleNamespace(name="base"), SimpleNamespace(name="coh")]
    return SimpleNamespace(runs=runs, comparison=lambda a, b, m: comparison)


def test_a_bound_at_zero_is_printed_as_plus_zero():
    # stored as base - run: run - base = -0.028 [-0.065, 0.0], not significant
    c = Comparison("base", "coh", "recall@5", diff=0.028, lo=0.0, hi=0.065, significant=False)
    assert baseline_marks(_report(c), "recall@5") == {"coh": f"-2.8 [-6.5, +0.0] {NS_MARK}"}


def test_a_significant_difference_has_no_mark():
    c = Comparison("base", "coh", "recall@5", diff=0.028, lo=0.001, hi=0.065, significant=True)
    assert baseline_marks(_report(c), "recall@5") == {"coh": "-2.8 [-6.5, -0.1]"}
