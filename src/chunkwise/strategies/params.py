"""Strategy parameters, declared once: what values each takes (constraints) and what it means (help).

Each strategy class declares ``_parameter_constraints`` (scikit-learn's convention): parameter name -> a
list of constraints, any one of which a value must satisfy (``Interval(int, 1, None)``, ``Options(...)``,
``None``, ``TokenizerSpec()``...). Subclasses override their bases' entries; :meth:`Strategy.param_constraints`
merges them. :func:`validate_params` is the one check of single parameters, with one wording for every
strategy (``strategy 'semantic': overlap must be an int in [0, inf), got True``); what relates two
parameters (``overlap`` below ``max_tokens``) stays with the class that has both.

Parameter *names* are shared across strategies (``max_tokens`` is the chunk cap everywhere), so their
meanings are a single table, :data:`PARAM_HELP`, rather than per-class docstrings that could drift apart.
Defaults are read from the constructors, so they cannot drift either. ``chunkwise strategies`` and
``chunk --help`` are generated from these (:func:`describe`); ``tests/test_strategy_params.py`` fails when a
constructor parameter has no constraint or no help line, and tries an invalid value for every constraint.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from .base import Strategy

PARAM_HELP: dict[str, str] = {
    # shared by every strategy
    "max_tokens": "hard cap on every chunk, counted with `tokenizer`",
    "min_tokens": "merge chunks smaller than this into a neighbour where the cap allows",
    "overlap": "tokens repeated between consecutive chunks (whole sentences for sentence packing)",
    "tokenizer": "what a token is: minilm (the embedding model's), cl100k, chars, words or hf:PATH",
    "respect_sections": "never let a chunk cross a heading of this level or higher (1 = `#`; 0 or none: may cross)",
    # the semantic strategies
    "embedder": "embedding back-end that places the cuts (minilm, static, st:PATH, openai:MODEL, ...)",
    "penalty": "cost of each extra chunk in the cohesion objective: higher gives fewer, larger chunks",
    "break_distance": "semantic: distance added at a paragraph break, list end or heading (times its strength) "
    "before the threshold; formerly `structure_bonus` (0: layout ignored)",
    "break_similarity": "maxmin: extra similarity a sentence needs to join across a paragraph break, list end or "
    "heading (times its strength); formerly `structure_bonus` (0: layout ignored)",
    "break_reward": "cohesion: reward of a chunk that starts at a paragraph break, list end or heading, in the "
    "objective's units; formerly `structure_bonus` (0: layout ignored)",
    "buffer_size": "neighbouring sentences on each side pooled into a sentence's buffer",
    "threshold_type": "breakpoint rule: percentile, standard_deviation, interquartile, gradient, absolute",
    "threshold_amount": "the rule's amount (default per type: 95, 3, 1.5, 95, 0.25; percentile and gradient "
    "in [0, 100], absolute in [0, 2])",
    "n_chunks": "ask for this many chunks per region instead of a threshold",
    "avg_tokens": "ask for this mean chunk size instead of a threshold (measured after the cap)",
    "buffer_vectors": "pool (buffer vectors pooled from sentence vectors) or text (buffers embedded, LangChain "
    "parity); formerly `window`",
    "fixed_threshold": "similarity floor every join must beat (Max-Min)",
    "c": "scale of the size-adjusted minimum similarity (Max-Min)",
    "init_constant": "multiplier of the first pair's similarity when a chunk has one sentence (Max-Min)",
    # classic strategies
    "separators": "prose, markdown, code, or a list of literal separators, coarsest first",
    "keep_separator": "end (separator stays with the piece before it) or start (with the piece after)",
    "sentence_backend": "sentence segmenter: chunkwise, pysbd or blingfire",
    "language": "language hint for sentence splitting (en, de, es, fr, it, nl, pt, zh, ja, ...)",
}


# -- constraints ----------------------------------------------------------------------------------------
class Constraint:
    """What one kind of value looks like. ``invalid``/``valid`` give examples (for the tests that try an
    invalid value of every declared constraint): a constraint class that cannot name them cannot be tested."""

    def satisfied_by(self, value: Any) -> bool:
        raise NotImplementedError

    def __str__(self) -> str:
        raise NotImplementedError

    def invalid(self) -> list[Any]:
        """Values this constraint rejects: a wrong type, a bool where a number goes, out of range..."""
        raise NotImplementedError

    def valid(self) -> list[Any]:
        raise NotImplementedError


def _is_number(value: Any) -> bool:
    """An int or float, never a bool (``True`` is an int to Python, not a token count to a person)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Interval(Constraint):
    """A number of ``kind`` (``int``, or ``float`` which takes ints too) in ``[low, high]``; ``None`` is
    unbounded; ``closed`` says which ends belong (``"both"``, ``"left"``, ``"right"``, ``"neither"``)."""

    def __init__(self, kind: type, low: float | None, high: float | None, closed: str = "both"):
        if kind not in (int, float) or closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"bad Interval({kind!r}, closed={closed!r})")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def satisfied_by(self, value: Any) -> bool:
        if not _is_number(value) or (self.kind is int and not isinstance(value, int)) or math.isnan(value):
            return False
        left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
        if self.low is not None and (value < self.low if left else value <= self.low):
            return False
        return self.high is None or (value <= self.high if right else value < self.high)

    def __str__(self) -> str:
        kind = "an int" if self.kind is int else "a number"
        if self.low is None and self.high is None:
            return kind
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        return f"{kind} in {left}{lo}, {hi}{right}"

    def invalid(self) -> list[Any]:
        out: list[Any] = [True, "1", float("nan")]
        if self.kind is int:
            out.append(1.5)
        if self.low is not None:
            out += [self.low - 1, self.low] if self.closed in ("right", "neither") else [self.low - 1]
        if self.high is not None:
            out += [self.high + 1, self.high] if self.closed in ("left", "neither") else [self.high + 1]
        return out

    def valid(self) -> list[Any]:
        """The low end (when it belongs) and a value inside."""
        lo = -1 if self.low is None else self.low
        hi = lo + 8 if self.high is None else self.high
        inside = self.kind((lo + hi) / 2) if self.kind is float else lo + (hi - lo) // 2
        edge = [self.kind(lo)] if self.low is not None and self.closed in ("both", "left") else []
        return edge + [inside]


class Options(Constraint):
    """One of a fixed set of strings; ``what`` names the set in messages (``a preset ('prose', ...)``)."""

    def __init__(self, *options: str, what: str = ""):
        self.options = tuple(options)
        self.what = what

    def satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.options

    def __str__(self) -> str:
        names = ", ".join(map(repr, self.options))
        return f"{self.what} ({names})" if self.what else f"one of {names}"

    def invalid(self) -> list[Any]:
        return ["no-such-option", 1, True]

    def valid(self) -> list[Any]:
        return list(self.options)


class InstanceOf(Constraint):
    """Any instance of ``kind`` (``str``, ``bool``); an ``int`` constraint would be :class:`Interval`."""

    def __init__(self, kind: type, text: str | None = None):
        self.kind, self.text = kind, text

    def satisfied_by(self, value: Any) -> bool:
        return isinstance(value, self.kind)

    def __str__(self) -> str:
        return self.text or f"a {self.kind.__name__}"

    def invalid(self) -> list[Any]:
        return [1.5] if self.kind is bool else [1, True]

    def valid(self) -> list[Any]:
        return [True, False] if self.kind is bool else ["en"]


class StrList(Constraint):
    """A non-empty list (or tuple) of strings."""

    def satisfied_by(self, value: Any) -> bool:
        return (
            isinstance(value, Sequence)
            and not isinstance(value, str)
            and len(value) > 0
            and all(isinstance(s, str) for s in value)
        )

    def __str__(self) -> str:
        return "a non-empty list of strings"

    def invalid(self) -> list[Any]:
        return [[], ["\n", 3], 3]

    def valid(self) -> list[Any]:
        return [["\n\n", " ", ""]]


class TokenizerSpec(Constraint):
    """A tokenizer name (checked against the known ones by ``validate``) or a ``Tokenizer``."""

    def satisfied_by(self, value: Any) -> bool:
        from ..segmentation.tokenizers import Tokenizer

        return isinstance(value, (str, Tokenizer))

    def __str__(self) -> str:
        return "a tokenizer name (or Tokenizer)"

    def invalid(self) -> list[Any]:
        return [3, True, ["words"]]

    def valid(self) -> list[Any]:
        return ["chars", "words"]


class EmbedderSpec(Constraint):
    """An embedder name (``minilm``, ``st:PATH``...) or an object with ``embed`` and ``tokenizer``."""

    def satisfied_by(self, value: Any) -> bool:
        if value is None or isinstance(value, str):
            return value is not None  # (before the import: a name, or none, needs no embedding package)
        from ..embeddings.base import Embedder

        if isinstance(value, Embedder):
            return True
        return hasattr(value, "embed") and hasattr(value, "tokenizer")

    def __str__(self) -> str:
        return "an embedder name (or Embedder)"

    def invalid(self) -> list[Any]:
        return [3, True, ["minilm"]]

    def valid(self) -> list[Any]:
        return ["static"]


#: a declaration: the constraints of one parameter (``None`` in the list: ``None`` is allowed)
Constraints = Sequence["Constraint | None"]


def satisfies(value: Any, constraints: Constraints) -> bool:
    return any(value is None if c is None else c.satisfied_by(value) for c in constraints)


def constraint_text(constraints: Constraints) -> str:
    """``an int in [0, inf) or None``: the constraints as a person reads them."""
    parts = ["None" if c is None else str(c) for c in constraints]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def strategy_label(strategy: Strategy) -> str:
    """``strategy 'semantic'``: how every message about a strategy's parameters names it."""
    return f"strategy {strategy.name or type(strategy).__name__!r}"


def validate_params(strategy: Strategy) -> None:
    """Check every declared parameter of ``strategy`` against its constraints: one :class:`ConfigError`
    line naming the strategy, the parameter, what it takes and what it got. Parameters a custom subclass
    added without declaring them are not checked here (its own ``validate`` may)."""
    for name, constraints in type(strategy).param_constraints().items():
        value = getattr(strategy, name, None)
        if not satisfies(value, constraints):
            raise ConfigError(
                f"{strategy_label(strategy)}: {name} must be {constraint_text(constraints)}, got {value!r}"
            )


# -- descriptions ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParamDoc:
    """One constructor parameter of a strategy: its name, default, meaning and what values it takes."""

    name: str
    default: Any
    help: str
    constraint: str = ""


def describe(cls: type[Strategy]) -> list[ParamDoc]:
    """The parameters of a strategy class, shared ones first, with defaults from its constructors."""
    defaults: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):  # subclasses override their bases' defaults
        if "__init__" in vars(klass) and klass is not object:
            for p in inspect.signature(vars(klass)["__init__"]).parameters.values():
                if p.default is not inspect.Parameter.empty:
                    defaults[p.name] = p.default
    declared = cls.param_constraints()
    return [
        ParamDoc(n, defaults.get(n), PARAM_HELP.get(n, ""), constraint_text(declared[n]) if n in declared else "")
        for n in cls.param_names()
    ]


def format_default(value: Any) -> str:
    return "-" if value is None else str(value)


__all__ = [
    "PARAM_HELP",
    "Constraint",
    "Interval",
    "Options",
    "InstanceOf",
    "StrList",
    "TokenizerSpec",
    "EmbedderSpec",
    "satisfies",
    "constraint_text",
    "validate_params",
    "ParamDoc",
    "describe",
    "format_default",
]
