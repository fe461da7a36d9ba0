"""The import direction of docs/ARCHITECTURE.md, checked: a layer imports only from the layers before it.

Every relative import inside ``src/chunkwise`` is resolved to its top-level package; an import from a later
layer fails the test, with no exceptions: where an earlier layer needs a later one's code (formats loading a
video file), the later one registers it by name in ``chunkwise.registry``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import chunkwise

ROOT = Path(chunkwise.__file__).resolve().parent
#: the pipeline order of docs/ARCHITECTURE.md ("Layers"); top-level modules beside the packages included
ORDER = [
    "security",
    "errors",
    "validation",
    "document",
    "records",
    "deprecation",
    "registry",
    "timefmt",
    "progress",
    "http",
    "formats",
    "segmentation",
    "embeddings",
    "strategies",
    "api",
    "llm",
    "context",
    "video",
    "store",
    "pipeline",
    "retrieval",
    "evaluation",
    "viz",
    "integrations",
    "cli",
]


def _imports(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).with_suffix("").parts
    package = list(rel[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package[: len(package) - (node.level - 1)]
            target = base + (node.module.split(".") if node.module else [])
            out.extend([".".join(target)] if target else [])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("chunkwise."):
            out.append(node.module.removeprefix("chunkwise."))
    return out


def test_every_import_runs_to_an_earlier_layer():
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        layer = path.relative_to(ROOT).with_suffix("").parts[0]
        if layer not in ORDER:
            continue
        for target in _imports(path):
            top = target.split(".")[0]
            if top in ORDER and ORDER.index(top) > ORDER.index(layer):
                wrong.append(f"{path.relative_to(ROOT)} -> {target}")
    assert wrong == []


def test_the_layer_list_covers_every_package():
    tops = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    tops |= {p.stem for p in ROOT.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert tops - set(ORDER) <= {"models"}, tops - set(ORDER)
