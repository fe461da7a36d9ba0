"""The package stays readable: no module over 500 lines, no function over 60.

Long modules and functions are where two concepts hide in one home; the limits make a split happen when a
feature lands instead of in a later clean-up. The check reads the source with ``ast`` (a function's length
runs from its ``def`` to its last line, decorators and docstring included).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "chunkwise"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
MODULES = sorted(PACKAGE.rglob("*.py"))


def long_functions(source: str) -> list[tuple[str, int]]:
    """``(name, lines)`` of every function or method in ``source`` longer than the limit."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
            if lines > MAX_FUNCTION_LINES:
                out.append((f"{node.name} (line {node.lineno})", lines))
    return out


def test_the_check_finds_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def f():\n{body}\n") == [("f (line 1)", MAX_FUNCTION_LINES + 1)]
    assert long_functions("def g():\n    return 1\n") == []


def test_the_package_has_modules():
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_shape(path: Path):
    source = path.read_text(encoding="utf-8")
    lines = source.count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.name} has {lines} lines (at most {MAX_MODULE_LINES}): split it by concept"
    assert long_functions(source) == [], f"functions over {MAX_FUNCTION_LINES} lines in {path.name}"
