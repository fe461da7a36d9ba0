"""A flaky LLM or embedding endpoint never leaves a permanent hole, never leaks a key.

The fake server (tests/fake_openai.py) answers 401, 429, 500, hangs past the timeout, or returns truncated JSON;
the index run with it must record the documents as incomplete (LLM context) or fail before marking them
(embeddings), and a later run with a working endpoint must complete the job without ``--recreate``.
"""

from __future__ import annotations

import json
import warnings

import pytest
from fake_openai import FakeOpenAI
from hostile import GOOD

from chunkwise.context.llm import LLMContextualizer
from chunkwise.embeddings.openai import OpenAIEmbedder
from chunkwise.errors import ChunkwiseError
from chunkwise.retrieval.index import Index
from chunkwise.security import PlainHTTPWarning, redact, warn_plain_http

KEY = "sk-test-1234567890abcdef"
FAULTS = ["401", "429", "500", "timeout", "truncated"]


def set_fault(server: FakeOpenAI, fault: str) -> None:
    """``ok`` or one of :data:`FAULTS`: a status, an answer slower than the 1 s timeout, or half an answer."""
    server.always_status = int(fault) if fault.isdigit() else 500 if fault == "timeout" else None
    server.delay = 1.5 if fault == "timeout" else 0.0
    server.truncate = fault == "truncated"


@pytest.fixture(scope="module")
def endpoint():
    e = FakeOpenAI()
    e.answer = lambda body: "Context: about the keeper."
    yield e
    e.close()


def _corpus(folder, n=2):
    folder.mkdir()
    for k in range(n):
        (folder / f"d{k}.txt").write_text(GOOD.replace("keeper", f"keeper {k}"), encoding="utf-8")


def _llm(endpoint):
    return {"base_url": endpoint.url, "model": "m", "api_key": KEY, "retries": 1, "backoff": 0.01,
            "timeout": 1.0, "cache": False}


@pytest.mark.parametrize("fault", FAULTS)
def test_failed_llm_context_is_retried_by_the_next_run(tmp_path, endpoint, fake_embedder, fault):
    _corpus(tmp_path / "in")
    db = tmp_path / "x.db"
    set_fault(endpoint, fault)
    with Index(db=db, embedder=fake_embedder) as index:
        report = index.add([tmp_path / "in"], params={"max_tokens": 32}, context="llm",
                           context_options=_llm(endpoint))
    assert report.indexed == 2 and report.incomplete == 2
    assert any("marked incomplete" in m for _, m in report.warnings)
    assert all(KEY not in m for _, m in report.warnings)
    set_fault(endpoint, "ok")
    with Index(db=db, embedder=fake_embedder) as index:
        report = index.add([tmp_path / "in"], params={"max_tokens": 32}, context="llm",
                           context_options=_llm(endpoint))
        assert report.indexed == 2 and report.skipped == 0 and report.incomplete == 0
        rows = list(index.store.scan_chunks(["id", "context"]))
        assert rows and all(r["context"] == "Context: about the keeper." for r in rows)
        report = index.add([tmp_path / "in"], params={"max_tokens": 32}, context="llm",
                           context_options=_llm(endpoint))
        assert report.skipped == 2  # complete now: nothing redone


@pytest.mark.parametrize("fault", FAULTS)
def test_failed_embedding_endpoint_then_working_one_completes(tmp_path, endpoint, monkeypatch, fault):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    _corpus(tmp_path / "in", n=3)
    db = tmp_path / "x.db"
    set_fault(endpoint, fault)
    endpoint.echo_headers = True
    emb = OpenAIEmbedder("fake-model", base_url=endpoint.url, dimensions=8, max_retries=1, backoff=0.01,
                         timeout=1.0)
    try:
        with Index(db=db, embedder=emb, cache=False) as index, pytest.raises(ChunkwiseError) as err:
            index.add([tmp_path / "in"], params={"max_tokens": 32})
        assert KEY not in str(err.value) and "Bearer" not in str(err.value).replace("Bearer [redacted]", "")
    finally:
        endpoint.echo_headers = False
    set_fault(endpoint, "ok")
    with Index(db=db, embedder=emb, cache=False) as index:
        report = index.add([tmp_path / "in"], params={"max_tokens": 32})
        assert report.indexed == 3 and not report.failed
        assert {m.source.rsplit("/", 1)[-1] for m in index.documents()} == {"d0.txt", "d1.txt", "d2.txt"}


def test_keys_stay_secret(endpoint):
    ctx = LLMContextualizer(base_url=endpoint.url, model="m", api_key=KEY, cache=False)
    assert KEY not in repr(ctx)
    echoed = json.dumps({"headers": {"Authorization": f"Bearer {KEY}", "X-Api-Key": KEY}})
    assert KEY not in redact(echoed) and KEY not in redact(f"token={KEY}", KEY)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        LLMContextualizer(base_url="http://10.1.2.3:8000/v1", model="m", api_key=KEY, cache=False)
        LLMContextualizer(base_url="http://127.0.0.1:8000/v1", model="m", api_key=KEY, cache=False)
        LLMContextualizer(base_url="https://10.1.2.3/v1", model="m", api_key=KEY, cache=False)
    assert [type(w.message) for w in caught] == [PlainHTTPWarning]
    assert not warn_plain_http("http://10.1.2.3:9/v1", False)


def test_caches_and_databases_are_private(tmp_path, monkeypatch, fake_embedder):
    import os
    import stat

    from chunkwise.embeddings.cache import CachedEmbedder, EmbeddingCache

    old = os.umask(0o022)  # the usual umask: files would be 644 without the fix
    try:
        cache = CachedEmbedder(fake_embedder, EmbeddingCache(tmp_path / "cache"))
        cache.embed(["hello"])
        ctx = LLMContextualizer(base_url="http://127.0.0.1:1/v1", model="m", cache_dir=tmp_path / "llm")
        ctx.client._conn()  # the shared chat client opens the answer cache
        ctx.close()
        with Index(db=tmp_path / "x.db", embedder=fake_embedder) as index:
            index.add([], params={"max_tokens": 32})
    finally:
        os.umask(old)
    for folder in (tmp_path / "cache", tmp_path / "llm", tmp_path / "x.db"):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder
    for f in [*(tmp_path / "cache").iterdir(), *(tmp_path / "llm").iterdir()]:
        if f.is_file():
            assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f
