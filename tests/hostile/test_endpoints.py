"""Issue 20, failures 4 and 10: a flaky LLM or embedding endpoint never leaves a permanent hole, never leaks a key.

A local HTTP server on 127.0.0.1 answers 401, 429, 500, hangs past the timeout, or returns truncated JSON;
the index run with it must record the documents as incomplete (LLM context) or fail before marking them
(embeddings), and a later run with a working endpoint must complete the job without ``--recreate``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hostile import GOOD

from chunkwise.context.llm import LLMContextualizer
from chunkwise.embeddings.openai import OpenAIEmbedder
from chunkwise.errors import ChunkwiseError
from chunkwise.retrieval.index import Index
from chunkwise.security import PlainHTTPWarning, redact, warn_plain_http

KEY = "sk-test-1234567890abcdef"
FAULTS = ["401", "429", "500", "timeout", "truncated"]


class Endpoint:
    """An OpenAI-compatible fake: ``mode`` is ``ok`` or one of :data:`FAULTS`; ``echo`` puts the request
    headers in error bodies (like some proxies do)."""

    def __init__(self):
        self.mode = "ok"
        self.echo = False
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                outer.calls += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                mode = outer.mode
                if mode == "timeout":
                    time.sleep(1.5)
                    mode = "500"
                if mode in ("401", "429", "500"):
                    text = json.dumps({"error": {"message": "nope", "headers": dict(self.headers)}}) \
                        if outer.echo else '{"error": {"message": "nope"}}'
                    self._send(int(mode), text.encode())
                    return
                if self.path.endswith("/embeddings"):
                    data = [{"index": i, "embedding": _vec(t)} for i, t in enumerate(body["input"])]
                    out = json.dumps({"data": data}).encode()
                else:
                    out = json.dumps({"choices": [{"message": {"content": "Context: about the keeper."}}]}).encode()
                self._send(200, out[: len(out) // 2] if mode == "truncated" else out)

            def _send(self, code, data):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def _vec(text: str) -> list[float]:
    h = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 + 0.01 for b in h[:8]]


@pytest.fixture(scope="module")
def endpoint():
    e = Endpoint()
    yield e
    e.server.shutdown()


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
    endpoint.mode = fault
    with Index(db=db, embedder=fake_embedder) as index:
        report = index.add([tmp_path / "in"], params={"max_tokens": 32}, context="llm",
                           context_options=_llm(endpoint))
    assert report.indexed == 2 and report.incomplete == 2
    assert any("marked incomplete" in m for _, m in report.warnings)
    assert all(KEY not in m for _, m in report.warnings)
    endpoint.mode = "ok"
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
    endpoint.mode = fault
    endpoint.echo = True
    emb = OpenAIEmbedder("fake-model", base_url=endpoint.url, dimensions=8, max_retries=1, backoff=0.01,
                         timeout=1.0)
    try:
        with Index(db=db, embedder=emb, cache=False) as index, pytest.raises(ChunkwiseError) as err:
            index.add([tmp_path / "in"], params={"max_tokens": 32})
        assert KEY not in str(err.value) and "Bearer" not in str(err.value).replace("Bearer [redacted]", "")
    finally:
        endpoint.echo = False
    endpoint.mode = "ok"
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
        ctx.client._conn()
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
