"""No package reads another package's private members.

A class's ``_``-prefixed members are its own business and its package's; a module of another package that
reaches into them couples the two behind the public interface's back (the Ray engine once drove ``Index``
through its privates). The check reads the package with ``ast``: it collects the private members each
package's classes define (methods, and attributes assigned on ``self``), then flags every ``obj._name`` read
outside ``self``/``cls`` whose ``_name`` only classes of other packages define.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "chunkwise"


def _package(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_privates(trees: dict[Path, ast.AST]) -> dict[str, set[str]]:
    """Package -> the private member names its classes define."""
    out: dict[str, set[str]] = defaultdict(set)
    for path, tree in trees.items():
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for node in ast.walk(cls):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(node.name):
                    out[_package(path)].add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
                    if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                        out[_package(path)].add(node.attr)
                elif isinstance(node, (ast.AnnAssign, ast.Assign)) and node in cls.body:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    out[_package(path)].update(t.id for t in targets if isinstance(t, ast.Name) and _private(t.id))
    return out


def foreign_reads(trees: dict[Path, ast.AST]) -> list[str]:
    """``path:line obj._name`` for every read of a private member that only other packages' classes define."""
    owners = defined_privates(trees)
    problems = []
    for path, tree in trees.items():
        pkg = _package(path)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr in owners.get(pkg, set()):
                continue
            if any(node.attr in names for other, names in owners.items() if other != pkg):
                problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
    return sorted(problems)


def _trees(sources: dict[str, str]) -> dict[Path, ast.AST]:
    return {PACKAGE / name: ast.parse(text) for name, text in sources.items()}


def test_the_check_finds_a_foreign_read():
    trees = _trees(
        {
            "store/s.py": "class S:\n    def __init__(self):\n        self._rows = []\n    def _load(self):\n        pass\n",
            "retrieval/r.py": "def f(s):\n    s._load()\n    return s._rows\n",
            "store/t.py": "def g(s):\n    return s._rows\n",
        }
    )
    assert foreign_reads(trees) == ["retrieval/r.py:2 s._load", "retrieval/r.py:3 s._rows"]


def test_no_package_reads_another_packages_privates():
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}
    assert len(trees) > 50
    assert foreign_reads(trees) == []


def foreign_imports(trees: dict[Path, ast.AST]) -> list[str]:
    """``path:line module.name`` for every ``from ..other import _name`` (a private module-level name of
    another package, or a name from another package's private module)."""
    problems = []
    for path, tree in trees.items():
        here = path.relative_to(PACKAGE).parent.parts
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and node.level > 0):
                continue
            base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
            target = [*base, *(node.module or "").split(".")]
            target = [t for t in target if t]
            if not target or target[0] == _package(path):
                continue
            private_module = any(_private(t) for t in target)
            for alias in node.names:
                if private_module or _private(alias.name):
                    problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {'.'.join(target)}.{alias.name}")
    return sorted(problems)


def test_the_check_finds_a_foreign_private_import():
    trees = _trees(
        {
            "segmentation/t.py": "def _helper():\n    pass\n",
            "embeddings/e.py": "from ..segmentation.t import _helper\nfrom ..integrations._shared import x\n",
            "segmentation/u.py": "from .t import _helper\n",
        }
    )
    assert foreign_imports(trees) == [
        "embeddings/e.py:1 segmentation.t._helper",
        "embeddings/e.py:2 integrations._shared.x",
    ]


def test_no_package_imports_another_packages_private_names():
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}
    assert foreign_imports(trees) == []
