"""Longer fuzzing of the loaders and the sentence splitter (the targets of tests/hostile/test_fuzz.py).

Usage: python scripts/fuzz.py [EXAMPLES]   (default 20000 per target; the test suite runs 150)
Random (not derandomized) each run: a failure prints the falsifying example to reproduce with
``@example(...)``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, CHUNKWISE_FUZZ_EXAMPLES=sys.argv[1] if len(sys.argv) > 1 else "20000")
    sys.exit(
        subprocess.call(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                str(root / "tests" / "hostile" / "test_fuzz.py"),
            ],
            env=env,
            cwd=root,
        )
    )
