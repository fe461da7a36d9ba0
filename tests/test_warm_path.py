"""``search``/``ask --server URL``: the CLI through a real ``chunkwise serve`` subprocess on 127.0.0.1 prints
what the local path prints, and the server opens its index (and loads its model) once for many queries."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import chunkwise
from chunkwise.cli import main

pytest.importorskip("uvicorn")

ROOT = Path(__file__).resolve().parents[1]
DEMO = "What should the keeper do before cleaning the lens on foggy days?"
TOKEN = "warm-path-test-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _health(url: str) -> dict:
    with urllib.request.urlopen(url + "/health", timeout=5) as r:
        return json.loads(r.read())


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture(scope="module")
def examples_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("warm") / "chunkwise.db"
    cwd = os.getcwd()
    os.chdir(ROOT)  # sources recorded as examples/...
    try:
        with chunkwise.Index(db=str(db)) as ix:
            ix.add(["examples"], progress=False)
    finally:
        os.chdir(cwd)
    return str(db)


def _server(db: str, port: int):
    env = {**os.environ, "CHUNKWISE_SERVE_TOKEN": TOKEN}
    env.pop("CHUNKWISE_SERVER", None)
    code = "import sys; from chunkwise.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--db", db, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )


QUERIES = {
    "search-table": ["search", "feeding the sourdough starter", "-k", "3"],
    "search-jsonl": ["search", "payment screen crash", "-k", "4", "--format", "jsonl"],
    "search-rrf": ["search", "rooftop garden water", "--fusion", "rrf", "--format", "jsonl"],
    "ask-text": ["ask", DEMO, "-k", "3"],
    "ask-json": ["ask", DEMO, "--format", "json"],
    "ask-hedged": ["ask", "Which planet has the most moons?"],
}


@pytest.mark.slow  # indexes examples/ with MiniLM and starts a server that loads it (10-30 s on 2 cores)
@pytest.mark.timeout(300)
def test_server_answers_as_the_local_path_and_loads_once(examples_db, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("CHUNKWISE_SERVER", raising=False)
    for var in ("CHUNKWISE_LLM_BASE_URL", "CHUNKWISE_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    local = {}
    for name, argv in QUERIES.items():
        local[name] = _run(capsys, *argv, "--db", examples_db)
    assert (
        local["ask-hedged"][1].count("Caution: the passages hold few of the question's words (missing: planet, moons)")
        == 1
    )

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _server(examples_db, port)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if _health(url)["index_opens"] >= 1:
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "server exited"
            time.sleep(0.2)
        # without the app's token the server refuses, in one line naming it
        rc, out, err = _run(capsys, "search", "lens", "--server", url)
        assert rc == 2 and not out and "401" in err and "CHUNKWISE_SERVE_TOKEN" in err

        monkeypatch.setenv("CHUNKWISE_SERVE_TOKEN", TOKEN)
        opened = []
        monkeypatch.setattr(chunkwise.Index, "__init__", lambda *a, **k: opened.append(a) or 1 / 0)
        for name, argv in QUERIES.items():
            remote = _run(capsys, *argv, "--server", url)
            assert remote == local[name], name
        monkeypatch.setenv("CHUNKWISE_SERVER", url)  # the variable instead of the flag
        assert _run(capsys, *QUERIES["ask-json"]) == local["ask-json"]
        assert opened == []  # no query opened an index here
        assert _health(url)["index_opens"] == 1  # seven queries, one model load on the server
    finally:
        proc.terminate()
        proc.wait(20)
    ask_json = json.loads(local["ask-json"][1])
    assert ask_json["confident"] is True and ask_json["hedge"] is None


def test_server_flag_refuses_what_it_cannot_send(capsys, monkeypatch):
    """--filter (a raw Milvus expression) and a local index or LLM are not sent to a server."""
    monkeypatch.delenv("CHUNKWISE_SERVER", raising=False)
    url = "http://127.0.0.1:9"
    assert main(["search", "lens", "--server", url, "--filter", "page_start >= 2"]) == 2
    assert "--filter cannot be sent to a server" in capsys.readouterr().err
    assert main(["ask", "lens?", "--server", url, "--db", "x.db"]) == 2
    assert "drop --db/--uri" in capsys.readouterr().err
    assert main(["ask", "lens?", "--server", url, "--llm-model", "m"]) == 2
    assert "--llm-model cannot be sent" in capsys.readouterr().err


@pytest.mark.timeout(60)  # one refused connection and one retry: a hang fails here
def test_an_unreachable_server_is_one_line_naming_it_once(capsys, monkeypatch):
    monkeypatch.delenv("CHUNKWISE_SERVER", raising=False)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    assert main(["search", "lamp", "--server", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "endpoint unreachable" in err
    assert err.count(f"{url}/search") == 1, err
