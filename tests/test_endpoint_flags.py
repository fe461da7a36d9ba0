"""Every command that calls a chat endpoint takes the same endpoint flags, and a dripping endpoint ends in
bounded time: ``index --context llm`` and ``search --rerank llm`` against a server that sends one byte at a
time, with a short ``--llm-deadline``. Nothing here is timed: the bound is the number of requests sent."""

from __future__ import annotations

import pytest
from fake_openai import FakeOpenAI

from chunkwise.cli import build_parser, main

ENV = ("CHUNKWISE_LLM_BASE_URL", "CHUNKWISE_LLM_MODEL", "CHUNKWISE_LLM_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")
FLAGS = ("--llm-base-url", "--llm-model", "--llm-timeout", "--llm-deadline", "--llm-retries")
DOC = "# Part {n}\n\n" + "\n\n".join(f"Paragraph {{n}}.{i} says something about topic {i}." for i in range(6))


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch):
    for var in ENV:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def servers():
    emb, chat = FakeOpenAI(), FakeOpenAI()
    chat.drip = 0.05  # a byte every 50 ms: never silent long enough for a read timeout
    yield emb, chat
    emb.close()
    chat.close()


@pytest.mark.parametrize("command", ["index", "search", "ask", "summarize", "questions", "serve", "eval"])
def test_every_endpoint_command_takes_the_endpoint_flags(command):
    parser = build_parser(command)
    sub = next(a for a in parser._subparsers._group_actions if a.choices).choices[command]
    options = {s for a in sub._actions for s in a.option_strings}
    assert set(FLAGS) <= options, set(FLAGS) - options


def _docs(tmp_path, n):
    for i in range(n):
        (tmp_path / f"d{i}.md").write_text(DOC.format(n=i), encoding="utf-8")
    return [str(tmp_path / f"d{i}.md") for i in range(n)]


def _embed_flags(emb, tmp_path):
    return ["--cache-dir", str(tmp_path / "cache")]  # the offline default embedder


@pytest.mark.timeout(600)  # the slow tier's own bound: far above its time on a loaded 2-core machine
@pytest.mark.slow  # the default embedder's start and one 1 s deadline: about 10 s under load
def test_index_context_llm_stops_at_the_first_missed_deadline(servers, tmp_path, capsys):
    emb, chat = servers
    docs = _docs(tmp_path, 3)
    code = main(
        [
            *_embed_flags(emb, tmp_path),
            "index",
            *docs,
            "--db",
            str(tmp_path / "x.db"),
            "--strategy",
            "recursive",
            "--max-tokens",
            "16",
            "--context",
            "llm",
            "--llm-base-url",
            chat.url,
            "--llm-model",
            "m",
            "--llm-deadline",
            "1",
            "--llm-retries",
            "0",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    # one wave of concurrent requests (4 at most) missed the deadline; no later chunk or document was sent
    assert 1 <= len(chat.requests) <= 4, len(chat.requests)
    assert "1 s deadline" in err and "--llm-deadline" in err and "deadline=," not in err


def test_search_rerank_llm_honours_the_deadline_flag(servers, tmp_path, capsys):
    emb, chat = servers
    docs = _docs(tmp_path, 1)
    db = str(tmp_path / "x.db")
    assert (
        main(
            [
                *_embed_flags(emb, tmp_path),
                "index",
                *docs,
                "--db",
                db,
                "-q",
                "--strategy",
                "recursive",
                "--max-tokens",
                "16",
            ]
        )
        == 0
    )
    capsys.readouterr()
    code = main(
        [
            *_embed_flags(emb, tmp_path),
            "search",
            "topic 3",
            "--db",
            db,
            "--rerank",
            "llm",
            "--llm-base-url",
            chat.url,
            "--llm-model",
            "m",
            "--llm-deadline",
            "1",
            "--llm-retries",
            "0",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(chat.requests) == 1
    lines = [ln for ln in err.splitlines() if ln.startswith("chunkwise: error")]
    assert len(lines) == 1 and "1 s deadline" in lines[0] and "--llm-deadline" in lines[0]
    assert "deadline=," not in err
