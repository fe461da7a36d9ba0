"""Builders for hostile inputs, a runner for the real CLI in a child process, and the shared_dir fixture
(a module, not a conftest.py: tests/conftest.py is imported by name as `conftest` by other test files)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

GOOD = (
    "The lighthouse keeper climbed the stairs every evening. He trimmed the wick and polished the lens. "
    "Ships passed the harbour safely through the winter storms.\n\n"
    "In spring the keeper planted roses beside the tower. The bees came back to the garden."
)
#: the CLI in a child that reports its own peak RSS on its last stderr line (``peak_rss_kb=N``): Linux's
#: ``VmHWM`` (the peak of this program's own memory; ``ru_maxrss`` keeps the parent's resident size from
#: before ``exec``, so a test process holding a model made every child look 1 GB big), else ``ru_maxrss``
CODE = (
    "import atexit, resource, sys\n"
    "def peak():\n"
    "    try:\n"
    "        with open('/proc/self/status') as f:\n"
    "            return int(next(l for l in f if l.startswith('VmHWM:')).split()[1])\n"
    "    except (OSError, StopIteration, ValueError):\n"
    "        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "atexit.register(lambda: sys.stderr.write('\\npeak_rss_kb=%d\\n' % peak()))\n"
    "from chunkwise.cli import main; sys.exit(main(sys.argv[1:]))"
)
NOBODY = 65534


@functools.cache
def can_drop_privileges() -> bool:
    """Root with setpriv, and this interpreter runs as ``nobody`` (an interpreter under a private home,
    e.g. a pyenv build in a 0700 /root, cannot load its shared library as another user)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    probe = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c", "pass"],
        capture_output=True,
        timeout=60,
    )
    return probe.returncode == 0


def run_cli(args: list[str], user: int | None = None, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """``chunkwise ARGS`` in a child process (as uid ``user`` through ``setpriv`` when given)."""
    cmd = [sys.executable, "-c", CODE, *[os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args]]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    env = dict(os.environ, PYTHONWARNINGS="default", CHUNKWISE_CACHE_DIR=kw.pop("cache_dir", "/nonexistent"))
    done = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env, **kw)
    done.out = done.stdout.decode("utf-8", "replace")
    done.err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in done.err, done.err
    peak = [line for line in done.err.splitlines() if line.startswith("peak_rss_kb=")]
    done.peak_mb = int(peak[-1].split("=")[1]) / 1024 if peak else None
    done.err = "\n".join(line for line in done.err.splitlines() if not line.startswith("peak_rss_kb=")).strip()
    return done


@pytest.fixture
def shared_dir():
    """A folder every user can enter (pytest's tmp_path is root-only), removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="chunkwise-hostile-"))
    os.chmod(d, 0o777)
    yield d
    for root, dirs, _ in os.walk(d):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    shutil.rmtree(d, ignore_errors=True)
