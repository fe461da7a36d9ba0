"""Strategy parameters are declared once (constraints in the class, meaning in PARAM_HELP) and checked by
one function with one wording: every declared constraint of every strategy is tried with values it must
reject and values it must take."""

from __future__ import annotations

import math

import pytest

from chunkwise.cli import main
from chunkwise.errors import ConfigError
from chunkwise.strategies import STRATEGY_NAMES, Strategy, get_strategy, strategy_class
from chunkwise.strategies.auto import TranscriptChunker
from chunkwise.strategies.param_docs import describe
from chunkwise.strategies.params import PARAM_HELP
from chunkwise.validation import Interval, Options, StrList, constraint_text, satisfies

CLASSES = {name: strategy_class(name) for name in STRATEGY_NAMES} | {"transcript": TranscriptChunker}
CASES = [(label, p) for label, cls in CLASSES.items() for p in cls.param_names()]


def build(label: str, **params) -> Strategy:
    cls = CLASSES[label]
    return cls(**params) if label == "transcript" else get_strategy(label, **params)


@pytest.mark.parametrize("label", list(CLASSES))
def test_every_constructor_parameter_is_declared_with_help(label):
    cls = CLASSES[label]
    declared = cls.param_constraints()
    assert set(cls.param_names()) == set(declared), f"{label}: declare every parameter in _parameter_constraints"
    for d in describe(cls):
        assert PARAM_HELP.get(d.name), f"{label}.{d.name} has no line in strategies/params.py"
        assert d.constraint == constraint_text(declared[d.name])


def _invalid_values(constraints) -> list:
    """Every example any one constraint rejects that no constraint of the parameter takes."""
    values = []
    for c in constraints:
        if c is not None:
            values += [v for v in c.invalid() if not satisfies(v, constraints)]
    if None not in constraints:
        values.append(None)
    return values


@pytest.mark.parametrize(("label", "param"), CASES)
def test_every_constraint_rejects_its_invalid_values(label, param):
    constraints = CLASSES[label].param_constraints()[param]
    for c in constraints:  # each constraint names values it rejects, and some stay invalid for the parameter
        if c is not None:
            assert c.invalid() and any(not satisfies(v, constraints) for v in c.invalid()), (param, c)
    values = _invalid_values(constraints)
    assert values
    for value in values:
        s = build(label, **{param: value})
        with pytest.raises(ConfigError) as err:
            s.validate()
        assert str(err.value) == f"strategy {s.name!r}: {param} must be {constraint_text(constraints)}, got {value!r}"


@pytest.mark.parametrize(("label", "param"), CASES)
def test_every_constraint_takes_its_valid_values(label, param):
    constraints = CLASSES[label].param_constraints()[param]
    values = [v for c in constraints if c is not None for v in c.valid()] + ([None] if None in constraints else [])
    assert values
    for value in values:
        s = build(label, **{param: value})
        s.validate()  # no error
        assert getattr(s, param) == value


def test_the_one_wording():
    with pytest.raises(ConfigError) as err:
        get_strategy("semantic", overlap=True).validate()
    assert str(err.value) == "strategy 'semantic': overlap must be an int in [0, inf), got True"
    with pytest.raises(ConfigError, match=r"^strategy 'fixed': min_tokens must be an int in \[0, inf\), got None$"):
        get_strategy("fixed", min_tokens=None).validate()
    with pytest.raises(ConfigError, match=r"^strategy 'maxmin': init_constant must be a number in \(0, inf\), got 0$"):
        get_strategy("maxmin", init_constant=0).validate()
    with pytest.raises(
        ConfigError, match="a preset \\('prose', 'markdown', 'code', 'docstring'\\) or a non-empty list of strings"
    ):
        get_strategy("recursive", separators="poetry").validate()


def test_relations_between_parameters_name_the_strategy():
    with pytest.raises(ConfigError, match=r"^strategy 'sentence': overlap \(10\) must be smaller than max_tokens"):
        get_strategy("sentence", max_tokens=10, overlap=10).validate()
    with pytest.raises(ConfigError, match=r"^strategy 'cohesion': min_tokens \(20\) must not exceed max_tokens"):
        get_strategy("cohesion", max_tokens=10, min_tokens=20).validate()
    with pytest.raises(
        ConfigError, match=r"threshold_amount must be a number in \[0, 2\] for threshold_type='absolute'"
    ):
        get_strategy("semantic", threshold_type="absolute", threshold_amount=3).validate()
    get_strategy("semantic", threshold_type="standard_deviation", threshold_amount=7).validate()  # unbounded there
    with pytest.raises(ConfigError, match="^strategy 'semantic': give n_chunks or avg_tokens, not both$"):
        get_strategy("semantic", n_chunks=2, avg_tokens=40).validate()


def test_constructors_only_store():
    s = get_strategy("fixed", max_tokens=-3, overlap=True)  # scikit-learn's rule: checked when used
    assert s.max_tokens == -3 and s.overlap is True
    with pytest.raises(ConfigError, match="max_tokens"):
        s.chunk("some text")


def test_a_custom_strategy_inherits_the_shared_declarations():
    class Halves(Strategy):
        name = "halves"

        def __init__(self, max_tokens: int = 8, parts: int = 2):
            super().__init__(max_tokens=max_tokens, tokenizer="words")
            self.parts = parts

        def split(self, doc, start, end, tokenizer):
            return [(start, end)]

    assert "parts" not in Halves.param_constraints() and "max_tokens" in Halves.param_constraints()
    Halves(parts="anything").validate()  # undeclared: its own business
    with pytest.raises(ConfigError, match="^strategy 'halves': max_tokens must be an int in"):
        Halves(max_tokens=1.5).validate()


def test_interval_edges():
    closed, open_ = Interval(float, 0, 1), Interval(float, 0, 1, closed="neither")
    assert closed.satisfied_by(0) and closed.satisfied_by(1) and not closed.satisfied_by(math.nan)
    assert not open_.satisfied_by(0) and not open_.satisfied_by(1) and open_.satisfied_by(0.5)
    assert str(open_) == "a number in (0, 1)" and str(Interval(int, None, 3)) == "an int in (-inf, 3]"
    assert not Interval(int, 0, None).satisfied_by(True) and not Interval(int, 0, None).satisfied_by(2.0)
    assert Options("a").satisfied_by("a") and not Options("a").satisfied_by(["a"])
    assert StrList().satisfied_by(("\n", "")) and not StrList().satisfied_by("\n")


def test_listings_are_generated_from_the_declarations(capsys):
    assert main(["strategies", "maxmin"]) == 0
    out = capsys.readouterr().out
    assert "takes a number in (0, inf)" in out and "takes a number in [-1, 1]" in out
    with pytest.raises(SystemExit):
        main(["chunk", "--help"])
    epilog = capsys.readouterr().out.split("strategy parameters")[1]
    for name in STRATEGY_NAMES:
        for d in describe(strategy_class(name)):
            assert f"{d.name}=" in epilog, (name, d.name)
    assert "penalty=0.5" in epilog and "a number in [0, inf): cost of each extra chunk" in " ".join(epilog.split())
