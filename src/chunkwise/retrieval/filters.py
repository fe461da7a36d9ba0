"""Structured search filters: ``(field, operator, value)`` conditions turned into a safe Milvus expression.

``Index.search(query, where=[("page_start", ">=", 2), ("source", "like", "manuals/%")])`` is for
applications that build filters from input they do not trust: fields come from a fixed list, operators
from a fixed set, and values are type-checked and quoted, so a value such as ``x" or 1 == 1 or "`` is just
a string to compare with. Conditions are joined with ``and``; a mapping ``{"doc_id": "abc"}`` means
equality. (The raw ``filter=``/``--filter`` expression is passed to Milvus as it is: fine for the owner
of the database, never for untrusted input.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..document import CHUNK_FIELD_TABLE
from ..errors import ConfigError
from ..store.milvus import quote
from ..validation import is_number

#: how each kind of chunk field (:data:`~chunkwise.document.FIELD_KINDS`) compares: "list" is ARRAY<VARCHAR>,
#: and a heading path compares as its joined string
_FILTER_KINDS = {"str": "str", "path": "str", "int": "int", "float": "float", "strs": "list"}
#: field -> type of its values ("str", "int", "float", "list" for ARRAY<VARCHAR>): the chunk fields the
#: table marks ``filter`` (under their column names), and the row's provenance
FILTER_FIELDS = {
    **{spec.key: _FILTER_KINDS[spec.kind] for spec in CHUNK_FIELD_TABLE if spec.filter},
    "embedder": "str",
    "content_hash": "str",
}
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
#: operator -> field types it applies to
OPERATORS = {
    **dict.fromkeys(COMPARISONS, ("str", "int", "float")),
    "in": ("str", "int", "float"),
    "not in": ("str", "int", "float"),
    "like": ("str",),
    "contains": ("list",),
}
MAX_VALUES = 10_000


def _literal(field: str, kind: str, value: Any) -> str:
    """One value as a Milvus literal, checked against the field's type."""
    if kind in ("str", "list"):
        if not isinstance(value, str):
            raise ConfigError(f"filter on {field!r} needs a string value, got {type(value).__name__}")
        if "\x00" in value:
            raise ConfigError(f"filter value for {field!r} contains a NUL character")
        return quote(value)
    if not is_number(value):
        raise ConfigError(f"filter on {field!r} needs a number, got {type(value).__name__}")
    if kind == "int" and not (isinstance(value, int) or float(value).is_integer()):
        raise ConfigError(f"filter on {field!r} needs an integer, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"filter on {field!r} needs a finite number, got {value!r}")
    return str(int(value)) if kind == "int" else repr(float(value))


def condition(field: str, op: str, value: Any) -> str:
    """One ``(field, operator, value)`` condition as a Milvus expression."""
    if field not in FILTER_FIELDS:
        raise ConfigError(f"cannot filter on {field!r}; fields: {', '.join(sorted(FILTER_FIELDS))}")
    op = " ".join(str(op).lower().split())
    kind = FILTER_FIELDS[field]
    if op not in OPERATORS:
        raise ConfigError(f"unknown filter operator {op!r}; operators: {', '.join(OPERATORS)}")
    if kind not in OPERATORS[op]:
        allowed = [o for o, kinds in OPERATORS.items() if kind in kinds]
        raise ConfigError(f"operator {op!r} does not apply to {field!r}; use one of {', '.join(allowed)}")
    if op in ("in", "not in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise ConfigError(f"operator {op!r} needs a list of values for {field!r}")
        values = list(value)
        if len(values) > MAX_VALUES:
            raise ConfigError(f"at most {MAX_VALUES} values in one {op!r} filter")
        return f"{field} {op} [{', '.join(_literal(field, kind, v) for v in values)}]"
    if op == "contains":
        return f"array_contains({field}, {_literal(field, kind, value)})"
    return f"{field} {op} {_literal(field, kind, value)}"


def build_filter(where: Iterable[tuple[str, str, Any]] | Mapping[str, Any] | None) -> str | None:
    """A Milvus expression for ``where`` (conditions joined with ``and``), or ``None`` when empty."""
    if where is None:
        return None
    if isinstance(where, Mapping):
        items = [(k, "==", v) for k, v in where.items()]
    elif isinstance(where, (str, bytes)):
        raise ConfigError("where= takes (field, operator, value) tuples; a raw expression goes to filter=")
    else:
        items = []
        for item in where:
            if not isinstance(item, (tuple, list)) or len(item) != 3:
                raise ConfigError(f"each where= condition is a (field, operator, value) tuple, got {item!r}")
            items.append(tuple(item))
    parts = [condition(f, o, v) for f, o, v in items]
    return " and ".join(f"({p})" for p in parts) if parts else None


__all__ = ["build_filter", "condition", "FILTER_FIELDS", "OPERATORS"]
