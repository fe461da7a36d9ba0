"""docs/ARCHITECTURE.md describes the tree as it is: every module under src/chunkwise is named in it, and every
module or test file it names exists (`python scripts/module_map.py --write` regenerates its module map)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "chunkwise"
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def named_paths(text: str) -> set[str]:
    """Every `x.py` or `a/b.py` written in backticks (a module path, or a test/script path)."""
    return set(re.findall(r"`([\w./-]+\.py)\b", text))


def resolves(name: str, modules: list[str]) -> bool:
    """A named path exists: a path under the repository (tests/, scripts/), a module path relative to
    src/chunkwise, or a file name that is unambiguous within its mention (the tail of a module path)."""
    if (ROOT / name).is_file() or (PACKAGE / name).is_file():
        return True
    return any(m == name or m.endswith("/" + name) for m in modules)


def test_every_module_is_named_and_every_named_module_exists():
    modules = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))
    named = named_paths(DOC.read_text(encoding="utf-8"))
    assert [m for m in modules if m not in named] == [], "modules missing from docs/ARCHITECTURE.md"
    assert sorted(n for n in named if not resolves(n, modules)) == [], "named in docs/ARCHITECTURE.md, not in the tree"


def test_the_check_sees_a_missing_and_a_stale_name():
    modules = ["store/lite.py", "api.py"]
    assert named_paths("see `store/lite.py` and `gone.py`, not lite.py") == {"store/lite.py", "gone.py"}
    assert resolves("lite.py", modules) and resolves("tests/test_architecture_doc.py", modules)
    assert not resolves("gone.py", modules)
