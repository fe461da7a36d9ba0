"""The one parameter system: what values a public callable's parameters take, checked in one place with one
wording.

A parameter is declared with a list of :class:`Constraint` objects, any one of which a value must satisfy
(scikit-learn's ``_parameter_constraints`` convention: ``Interval(int, 1, None)``, ``Options("rrf",
"zscore")``, ``None``...); the constraints that know a later layer's types (a tokenizer, a
strategy) are in :mod:`chunkwise.strategies.params`. :func:`check` is the one check; every refusal reads ``OWNER: NAME must be
WHAT, got VALUE`` (``strategy 'semantic': overlap must be an int in [0, inf), got True``). Who uses it:

- :func:`validated` on public functions and constructors (``chunk_text``, the LangChain/LlamaIndex
  adapters, ``OpenAILLM``...): the declared parameters are checked before the body runs;
- strategies declare ``_parameter_constraints`` per class (:mod:`chunkwise.strategies.params`);
- the run settings of :class:`~chunkwise.pipeline.config.PipelineConfig` declare theirs per field (what
  ``Index.add``/``Index.search`` and every ``--config`` take);
- hand-written checks elsewhere call :func:`check` with a constraint, never an ``isinstance`` chain.

Every constraint can name values it rejects (:meth:`Constraint.invalid`), so ``tests/test_validation.py``
tries an invalid value for every constraint of every registered callable (:data:`VALIDATED`).
"""

from __future__ import annotations

import functools
import inspect
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


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
    """A non-empty list (or tuple) of strings (``empty=True``: an empty one too)."""

    def __init__(self, empty: bool = False):
        self.empty = empty

    def satisfied_by(self, value: Any) -> bool:
        return (
            isinstance(value, Sequence)
            and not isinstance(value, str)
            and (self.empty or len(value) > 0)
            and all(isinstance(s, str) for s in value)
        )

    def __str__(self) -> str:
        return "a list of strings" if self.empty else "a non-empty list of strings"

    def invalid(self) -> list[Any]:
        return [["\n", 3], 3, "*.md"] + ([] if self.empty else [[]])

    def valid(self) -> list[Any]:
        return [["\n\n", " ", ""]]


class ListOf(Constraint):
    """A list (or tuple) whose items are all instances of ``kind`` (``passages``: a list of Passages);
    ``text`` names it in messages."""

    def __init__(self, kind: type, text: str):
        self.kind, self.text = kind, text

    def satisfied_by(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(isinstance(item, self.kind) for item in value)

    def __str__(self) -> str:
        return self.text

    def invalid(self) -> list[Any]:
        return [3, "text", [3]]

    def valid(self) -> list[Any]:
        return [[]]


class Function(Constraint):
    """Something to call (``on_token``, ``progress``): a function, a bound method, a class with
    ``__call__``."""

    def satisfied_by(self, value: Any) -> bool:
        return callable(value)

    def __str__(self) -> str:
        return "a function"

    def invalid(self) -> list[Any]:
        return [1, "print"]

    def valid(self) -> list[Any]:
        return [print]


def is_number(value: Any) -> bool:
    """An int or float that is not a bool (the one place that tells ``True`` from ``1``)."""
    return _is_number(value)


def is_scalar(value: Any) -> bool:
    """A JSON scalar: a string, number, bool or ``None`` (what a record or a metadata field keeps as it is)."""
    return value is None or isinstance(value, (str, int, float))


class PathSpec(Constraint):
    """A file path: a non-empty string or an ``os.PathLike``."""

    def satisfied_by(self, value: Any) -> bool:
        return isinstance(value, os.PathLike) or (isinstance(value, str) and bool(value))

    def __str__(self) -> str:
        return "a path"

    def invalid(self) -> list[Any]:
        return [3, "", ["a.md"]]

    def valid(self) -> list[Any]:
        return ["a.md"]


class MappingOf(Constraint):
    """A mapping with string keys and finite values (``params``, ``context_options``...)."""

    def satisfied_by(self, value: Any) -> bool:
        return (
            isinstance(value, Mapping)
            and all(isinstance(k, str) for k in value)
            and not any(isinstance(v, float) and not math.isfinite(v) for v in value.values())
        )

    def __str__(self) -> str:
        return "a mapping of names to values (numbers finite)"

    def invalid(self) -> list[Any]:
        return [[1], {1: 2}, {"a": float("nan")}]

    def valid(self) -> list[Any]:
        return [{}]


class Named(Constraint):
    """The name of something registered in :mod:`chunkwise.registry` under ``kind`` (``"tokenizer"``,
    ``"embedder"``...): a string, which the registry then resolves (an unknown name is its error, listing the
    valid ones); the message lists them too (the registry is imported only to say so)."""

    def __init__(self, kind: str):
        self.kind = kind

    def satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str)

    def __str__(self) -> str:
        from . import registry

        return f"a {self.kind} name ({', '.join(registry.names(self.kind))})"

    def invalid(self) -> list[Any]:
        return [3, True, ["x"]]

    def valid(self) -> list[Any]:
        from . import registry

        return list(registry.builtin(self.kind))[:1]


#: what an embedder has (every :class:`~chunkwise.embeddings.base.Embedder` does)
_EMBEDDER_API = ("embed", "tokenizer")


class EmbedderSpec(Constraint):
    """An embedder name (``minilm``, ``st:PATH``...) or an object with ``embed`` and ``tokenizer`` (every
    :class:`~chunkwise.embeddings.base.Embedder` has both; told by what it does, so this layer imports no
    embedding code)."""

    def satisfied_by(self, value: Any) -> bool:
        if isinstance(value, str):
            return True
        if value is None:
            return False
        # looked up without running them: a lazy embedder's ``tokenizer`` property would load the model; an
        # object that delegates through ``__getattr__`` (a proxy, a wrapper) is asked, as it has no other way
        if all(inspect.getattr_static(value, a, None) is not None for a in _EMBEDDER_API):
            return True
        return inspect.getattr_static(type(value), "__getattr__", None) is not None and all(
            hasattr(value, a) for a in _EMBEDDER_API
        )

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


def _as_list(constraints: Constraint | Constraints | None) -> list[Constraint | None]:
    if constraints is None or isinstance(constraints, Constraint):
        return [constraints]
    return list(constraints)


def check(value: Any, constraints: Constraint | Constraints | None, name: str, owner: str = "") -> Any:
    """``value`` unchanged when it satisfies one of ``constraints``; else the one :class:`ConfigError`:
    ``OWNER: NAME must be WHAT, got VALUE``."""
    declared = _as_list(constraints)
    if not satisfies(value, declared):
        where = f"{owner}: " if owner else ""
        raise ConfigError(f"{where}{name} must be {constraint_text(declared)}, got {value!r}")
    return value


def check_flag(value: Any, flag: str, constraints: Constraint | Constraints | None) -> Any:
    """A command-line flag's value checked against the constraints of the parameter it feeds (the
    declaration's own object, e.g. ``retrieval.index.TOP_K``), named as it is typed: ``-k must be an int
    in [1, inf), got 0`` (one line, no usage text)."""
    return check(value, constraints, flag)


def check_arguments(owner: str, declared: Mapping[str, Constraints], given: Mapping[str, Any]) -> None:
    """Every argument in ``given`` that ``declared`` names, checked (the others are left alone)."""
    for name, value in given.items():
        if name in declared:
            check(value, declared[name], name, owner)


def constrained(
    *constraints: Constraint | None,
    before: Callable[[Any], Any] | None = None,
    convert: Callable[[Any], Any] | None = None,
) -> Callable[[str, Any], Any]:
    """A ``check(name, value)`` function from constraints (how the run settings of
    :class:`~chunkwise.pipeline.config.PipelineConfig` declare theirs): ``before`` normalises the value
    first (an int constraint refuses ``60.0``: a whole float is not turned into an int), the constraints check it with the one wording, ``convert`` turns
    it into what is kept. The function carries ``constraints`` (what the tests try invalid values of)."""

    def check_setting(name: str, value: Any) -> Any:
        value = value if before is None else before(value)
        check(value, constraints, name)
        return value if convert is None else convert(value)

    check_setting.constraints = constraints  # type: ignore[attr-defined]
    return check_setting


#: every callable made by :func:`validated`, by its qualified name (what the tests walk)
VALIDATED: dict[str, Callable[..., Any]] = {}


def validated(owner: str | None = None, **declared: Constraint | Constraints | None) -> Callable[[F], F]:
    """Declare and check the parameters of a public callable (a function or a constructor):

    >>> @validated(k=Interval(int, 1, None))
    ... def top(k=5): ...

    Each keyword names a parameter and its constraints; the arguments given are checked before the body
    runs (defaults are the callable's own business). ``owner`` names the callable in messages (default its
    qualified name). The wrapper carries ``param_constraints`` and ``check_arguments(**given)`` and is
    registered in :data:`VALIDATED`."""
    spec = {name: _as_list(c) for name, c in declared.items()}

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)
        unknown = sorted(set(spec) - set(sig.parameters))
        if unknown:
            raise TypeError(f"{fn.__qualname__} has no parameter {', '.join(unknown)} to validate")
        label = owner or fn.__qualname__.replace(".__init__", "")

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            check_arguments(label, spec, sig.bind_partial(*args, **kwargs).arguments)
            return fn(*args, **kwargs)

        inner.param_constraints = spec  # type: ignore[attr-defined]
        inner.check_arguments = lambda **given: check_arguments(label, spec, given)  # type: ignore[attr-defined]
        VALIDATED[f"{fn.__module__}.{fn.__qualname__}"] = inner
        return inner  # type: ignore[return-value]

    return wrap


__all__ = [
    "Constraint",
    "Constraints",
    "Interval",
    "Options",
    "InstanceOf",
    "StrList",
    "ListOf",
    "Function",
    "PathSpec",
    "MappingOf",
    "Named",
    "EmbedderSpec",
    "is_number",
    "is_scalar",
    "satisfies",
    "constraint_text",
    "check",
    "check_flag",
    "check_arguments",
    "constrained",
    "validated",
    "VALIDATED",
]
