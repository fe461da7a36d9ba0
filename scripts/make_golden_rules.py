"""Regenerate tests/data/golden_rules/*.json from pySBD's test files (run once; the tests never fetch).

    python scripts/make_golden_rules.py PYSBD_GIT_DIR [--commit REV]

PYSBD_GIT_DIR is a clone (or bare mirror) of https://github.com/nipunsadvilkar/pySBD (MIT licence; its
notice is copied to tests/data/golden_rules/LICENSE-pySBD). The case lists ("Golden Rules" of the Pragmatic
Segmenter and pySBD's extra cases) are read from ``tests/lang/test_<language>.py`` with :mod:`ast` -- the
files are parsed, never imported or executed -- and written as JSON, one file per language:

    {"source": "...", "commit": "...", "suites": [{"name": "GOLDEN_EN_RULES_TEST_CASES", "clean": false,
     "cases": [{"text": "...", "sentences": ["...", ...]}, ...]}, ...]}

``clean`` marks lists that pySBD tests with ``clean=True`` (it rewrites whitespace, e.g. joins wrapped
lines); tests/test_sentences_golden.py compares those ignoring whitespace, the others exactly.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "golden_rules"

#: language code -> pySBD test file. Portuguese has no test file in pySBD (nor in the Pragmatic Segmenter).
FILES = {
    "en": "test_english.py",
    "de": "test_deutsch.py",
    "es": "test_spanish.py",
    "fr": "test_french.py",
    "it": "test_italian.py",
    "nl": "test_dutch.py",
    "zh": "test_chinese.py",
    "ja": "test_japanese.py",
}


def git_show(repo: str, rev: str, path: str) -> str:
    """One file of the pySBD repository at ``rev`` (works on bare mirrors too)."""
    return subprocess.run(
        ["git", "-C", repo, "show", f"{rev}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def case_lists(source: str) -> list[tuple[str, list]]:
    """``(name, cases)`` for every module-level ``NAME = [...]`` list of ``(text, [sentences])`` pairs.

    ``pytest.param(text, sentences, marks=...)`` entries are unwrapped; their marks are dropped (pySBD marks
    one English case xfail -- for pySBD itself).
    """
    found = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.List)):
            continue
        cases = []
        for elt in node.value.elts:
            if isinstance(elt, ast.Call):  # pytest.param(text, expected, marks=...)
                elt = ast.Tuple(elts=elt.args[:2], ctx=ast.Load())
            text, expected = ast.literal_eval(elt)
            cases.append({"text": text, "sentences": list(expected)})
        found.append((node.targets[0].id, cases))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", help="git directory of a pySBD clone or mirror")
    ap.add_argument("--commit", default="HEAD")
    args = ap.parse_args()
    commit = subprocess.run(
        ["git", "-C", args.repo, "rev-parse", args.commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "LICENSE-pySBD").write_text(git_show(args.repo, commit, "LICENSE"), encoding="utf-8")
    for lang, name in FILES.items():
        path = f"tests/lang/{name}"
        suites = [
            {"name": list_name, "clean": "CLEAN" in list_name or "PDF" in list_name, "cases": cases}
            for list_name, cases in case_lists(git_show(args.repo, commit, path))
        ]
        doc = {
            "source": f"https://github.com/nipunsadvilkar/pySBD/blob/{commit}/{path}",
            "commit": commit,
            "licence": "MIT, Copyright (c) 2019 Nipun Sadvilkar (see LICENSE-pySBD)",
            "suites": suites,
        }
        (OUT / f"{lang}.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(lang, ", ".join(f"{s['name']} {len(s['cases'])}" for s in suites))


if __name__ == "__main__":
    main()
