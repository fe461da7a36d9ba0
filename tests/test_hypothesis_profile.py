"""CI's verdict does not depend on Hypothesis's draw: with ``CHUNKWISE_CI=1`` (what ``.ci/run`` sets) the suite's
profile draws the same examples on every run and keeps no example database (``tests/conftest.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PROBE = (
    f"import sys; sys.path.insert(0, {str(TESTS)!r}); import conftest\n"
    "from hypothesis import settings\n"
    "print(settings.default.derandomize, settings.default.database is None, settings.default.deadline)"
)


def test_a_ci_run_draws_fixed_examples_without_a_database():
    env = {**os.environ, "CHUNKWISE_CI": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "None"]


def test_the_ci_run_sets_it():
    assert "export CHUNKWISE_CI=1" in (TESTS.parent / ".ci" / "run").read_text(encoding="utf-8")
