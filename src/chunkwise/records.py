"""A result's fields as a JSON record: :func:`pick` names them once, in the order the record shows them.

Answers, summaries, passages, evidence, evaluation results and tuning verdicts are written as JSON by
``--json`` and the reports; each ``to_dict`` lists its keys with :func:`pick` (``"answer=text"`` where the
key differs from the attribute) and adds only what is computed.
"""

from __future__ import annotations

from typing import Any


def pick(obj: Any, names: str) -> dict[str, Any]:
    """``{"a": obj.a, "b": obj.c}`` for ``"a b=c"``: the attributes named, in that order, under their keys."""
    out: dict[str, Any] = {}
    for name in names.split():
        key, _, attr = name.partition("=")
        out[key] = getattr(obj, attr or key)
    return out


__all__ = ["pick"]
