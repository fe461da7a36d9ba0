"""Strategy parameters described for the help: each one's name, default, meaning and accepted values.

``chunkwise strategies`` and the strategies' part of ``chunk --help`` print them; the declarations they are
read from are in :mod:`.params`.

Kept apart from :mod:`.params`, which every strategy imports, so a run that prints no help does not create
these descriptions' class."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..validation import constraint_text
from .params import PARAM_HELP

if TYPE_CHECKING:
    from .base import Strategy


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


__all__ = ["ParamDoc", "describe", "format_default"]
