"""Strategy parameters, declared once: what values each takes (constraints) and what it means (help).

Each strategy class declares ``_parameter_constraints`` (scikit-learn's convention, with the constraint types
of :mod:`chunkwise.validation`, the one parameter system): parameter name -> a
list of constraints, any one of which a value must satisfy (``Interval(int, 1, None)``, ``Options(...)``,
``None``, ``TokenizerSpec()``...). Subclasses override their bases' entries; :meth:`Strategy.param_constraints`
merges them. :func:`validate_params` is the one check of single parameters, with one wording for every
strategy (``strategy 'semantic': overlap must be an int in [0, inf), got True``); what relates two
parameters (``overlap`` below ``max_tokens``) stays with the class that has both.

Parameter *names* are shared across strategies (``max_tokens`` is the chunk cap everywhere), so their
meanings are a single table, :data:`PARAM_HELP`, rather than per-class docstrings that could drift apart.
Defaults are read from the constructors, so they cannot drift either. ``chunkwise strategies`` and
``chunk --help`` are generated from these (:func:`.param_docs.describe`); ``tests/test_strategy_params.py``
fails when a constructor parameter has no constraint or no help line, and tries an invalid value for every
constraint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# the one parameter system (the constraint types the strategies declare with live there)
from ..validation import (  # EmbedderSpec: re-exported, with the other constraints strategies declare
    Constraint,
    EmbedderSpec,  # noqa: F401
    check,
)

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


# -- constraints that know the strategies' own types --------------------------------------------------
class NameOr(Constraint):
    """A name (a string, resolved by its factory, which names the valid ones) or an object of the type
    ``load()`` returns (imported on first use: a name needs no model package)."""

    def __init__(self, what: str, load: Any, valid: list[str]):
        self.what, self.load, self._valid = what, load, valid

    def satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str) or isinstance(value, self.load())

    def __str__(self) -> str:
        return f"a {self.what} name (or {self.load().__name__})"

    def invalid(self) -> list[Any]:
        return [3, True, [self._valid[0]]]

    def valid(self) -> list[Any]:
        return list(self._valid)


def _tokenizer_type() -> type:
    from ..segmentation.tokenizers import Tokenizer

    return Tokenizer


def _strategy_type() -> type:
    from .base import Strategy

    return Strategy


def TokenizerSpec() -> NameOr:  # noqa: N802  (used like the other constraint classes)
    """A tokenizer name (checked against the known ones by ``validate``) or a ``Tokenizer``."""
    return NameOr("tokenizer", _tokenizer_type, ["chars", "words"])


def StrategySpec() -> NameOr:  # noqa: N802
    """A strategy: a registered name (``auto``, ``semantic``...) or a ``Strategy`` object."""
    return NameOr("strategy", _strategy_type, ["recursive"])


def strategy_label(strategy: Strategy) -> str:
    """``strategy 'semantic'``: how every message about a strategy's parameters names it."""
    return f"strategy {strategy.name or type(strategy).__name__!r}"


def validate_params(strategy: Strategy) -> None:
    """Check every declared parameter of ``strategy`` against its constraints: one :class:`ConfigError`
    line naming the strategy, the parameter, what it takes and what it got. Parameters a custom subclass
    added without declaring them are not checked here (its own ``validate`` may)."""
    for name, constraints in type(strategy).param_constraints().items():
        check(getattr(strategy, name, None), constraints, name, strategy_label(strategy))


__all__ = [
    "PARAM_HELP",
    "validate_params",
    "strategy_label",
]
