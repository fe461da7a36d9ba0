"""Every core dependency is used by the package: each one's modules are imported (or looked up by name, for
the packages that only ship data files) somewhere under ``src/``. A dependency that only another one needs is
that one's business, not a line of ``pyproject.toml`` — except where that one fails without it and does not say
so in its metadata (:data:`NEEDED_BY_ANOTHER`, each with the reason)."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: core dependencies nothing under src/ imports, kept because another one fails without them
NEEDED_BY_ANOTHER = {
    # jusText (trafilatura's) imports lxml.html.clean, which lxml >= 5.2 ships as this separate package; a
    # fresh install of the wheel without it fails on the first HTML file (tests/test_packaging.py)
    "lxml_html_clean": "trafilatura",
}


def core_dependencies() -> list[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0] for spec in data["project"]["dependencies"]]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def modules_of(dist: str) -> set[str]:
    """The top-level modules a distribution installs (from the environment's metadata)."""
    return {m for m, dists in importlib.metadata.packages_distributions().items() if _norm(dist) in map(_norm, dists)}


def used(modules: set[str], source: str) -> bool:
    return any(
        re.search(rf"^\s*(import|from)\s+{re.escape(m)}\b|[\"']{re.escape(m)}[\"'.]", source, re.MULTILINE)
        for m in modules
    )


def test_every_core_dependency_is_used_by_the_package():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src" / "chunkwise").rglob("*.py"))
    deps = core_dependencies()
    assert len(deps) > 10
    unused = [
        d for d in deps if d not in NEEDED_BY_ANOTHER and not used(modules_of(d) or {d.replace("-", "_")}, source)
    ]
    assert unused == [], f"core dependencies nothing under src/ imports: {unused}"


def test_the_check_sees_an_unused_one():
    assert used({"numpy"}, "import numpy as np\n") and used({"bpe_openai"}, 'find_spec("bpe_openai")')
    assert not used({"lxml_html_clean"}, "import lxml\nfrom trafilatura import extract\n")


def test_what_another_dependency_needs_is_declared_beside_it():
    deps = core_dependencies()
    assert all(dep in deps and needer in deps for dep, needer in NEEDED_BY_ANOTHER.items())
