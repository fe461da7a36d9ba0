"""Every slow test carries its own timeout: the default bound (pyproject's 240 s) is sized for the fast tier,
and slow tests under load (a wheel build and install, a Ray or Milvus start) were cut by it mid-fixture."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _marks(node: ast.AST) -> set[str]:
    """The ``pytest.mark.NAME`` names used anywhere in ``node`` (a decorator, a list, a ``pytest.param``)."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
            out.add(sub.attr)
    return out


def _unbounded(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            module = _marks(node.value)
    if "slow" in module:
        return [] if "timeout" in module else [f"{path.name} (pytestmark)"]
    wrong = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize":
                    for param in ast.walk(deco):  # pytest.param(..., marks=[slow, timeout(N)])
                        if isinstance(param, ast.Call) and getattr(param.func, "attr", "") == "param":
                            marks = _marks(param)
                            if "slow" in marks and "timeout" not in marks and "timeout" not in _marks(node):
                                wrong.append(f"{path.name}::{node.name} (a slow param)")
            marks = set().union(*(_marks(d) for d in node.decorator_list if "param" not in ast.dump(d)))
            if "slow" in marks and "timeout" not in marks:
                wrong.append(f"{path.name}::{node.name}")
    return wrong


def test_every_slow_test_has_its_own_timeout():
    wrong = [w for p in sorted(TESTS.glob("test_*.py")) for w in _unbounded(p)]
    assert wrong == []
