"""The second retrieval stage's settings as text: ``rerank`` specs (``maxsim[:W]``, ``llm``, ``cross:PATH``)
and ``rerank_depth``. Here, below the retrieval layer, so a configuration file's values are checked when it
is read; :mod:`chunkwise.pipeline.config` declares them as run settings.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ConfigError
from ..validation import Interval, constrained

#: the rerankers ``Index.search(rerank=...)`` and evaluation runs take (``chunkwise.retrieval.rerank``)
RERANK_KINDS = ("maxsim[:W]", "llm", "cross:PATH")
#: candidates a reranker re-orders unless told otherwise (the first stage returns ``max(k, depth)``)
RERANK_DEPTH = 30
#: the most candidates a reranker may be asked to re-order (each is scored by a model: more is a mistake)
MAX_RERANK_DEPTH = 1000


def parse_rerank(value: Any) -> tuple[str, str | float | None] | None:
    """``"maxsim"`` -> ``("maxsim", 1.0)``, ``"maxsim:0.5"`` -> ``("maxsim", 0.5)`` (MaxSim's weight against
    the first-stage score), ``"llm"`` -> ``("llm", None)``, ``"cross:PATH"`` -> ``("cross", PATH)``, ``None``
    or ``"none"`` -> ``None``. Here, below the retrieval layer, so a configuration file's ``rerank`` is checked
    when it is read; a model is loaded by the first search."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    problem = f"rerank must be one of none, {', '.join(RERANK_KINDS)}, got {value!r}"
    kind, sep, arg = value.strip().partition(":") if isinstance(value, str) else ("", "", "")
    if kind.lower() == "llm" and not sep:
        return ("llm", None)
    if kind.lower() == "cross" and arg.strip():
        return ("cross", arg.strip())
    if kind.lower() != "maxsim":
        raise ConfigError(problem)
    try:
        weight = float(arg) if sep else 1.0
    except ValueError:
        raise ConfigError(problem) from None
    if not (math.isfinite(weight) and 0.0 <= weight <= 1.0):
        raise ConfigError(f"{problem} (W, the weight of MaxSim, is a number in [0, 1])")
    return ("maxsim", weight)


def _rerank(name: str, value: Any) -> str | None:
    parsed = parse_rerank(value)
    if parsed is None:
        return None
    kind, arg = parsed
    if kind == "maxsim":
        return "maxsim" if arg == 1.0 else f"maxsim:{arg:g}"
    return kind if arg is None else f"{kind}:{arg}"


#: the check of ``rerank_depth`` (a run setting)
_rerank_depth = constrained(Interval(int, 1, MAX_RERANK_DEPTH))


__all__ = ["RERANK_KINDS", "RERANK_DEPTH", "MAX_RERANK_DEPTH", "parse_rerank"]
