"""``openai:MODEL`` against a local OpenAI-compatible HTTP server started by the tests (no internet)."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from chunkwise.embeddings import get_embedder
from chunkwise.embeddings.openai import EndpointError, OpenAIEmbedder
from chunkwise.errors import ConfigError, InputError

DIM = 8


def fake_vector(text: str) -> list[float]:
    h = hashlib.sha256(text.encode()).digest()
    return [b - 128.0 for b in h[:DIM]]


class Server:
    """A scripted /v1/embeddings: ``script`` is a list of status codes to answer before succeeding."""

    def __init__(self):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.script: list[int] = []
        self.key: str | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": "no such route"}})
                if server.key and self.headers.get("Authorization") != f"Bearer {server.key}":
                    return self._send(401, {"error": {"message": "Incorrect API key provided"}})
                if server.script:
                    code = server.script.pop(0)
                    return self._send(code, {"error": {"message": f"scripted {code}"}},
                                      {"Retry-After": "0"} if code == 429 else {})
                inputs = body["input"]
                if any(not isinstance(t, str) or t == "" for t in inputs):
                    return self._send(400, {"error": {"message": "'$.input' is invalid"}})
                data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)}
                        for i, t in reversed(list(enumerate(inputs)))]  # out of order on purpose
                self._send(200, {"object": "list", "data": data, "model": body["model"]})

            def _send(self, code, doc, headers=None):
                raw = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def make(server, **kw) -> OpenAIEmbedder:
    kw.setdefault("backoff", 0.001)
    kw.setdefault("timeout", 5)
    return OpenAIEmbedder("test-embed", base_url=server.url, **kw)


def expected(texts):
    v = np.array([fake_vector(t) for t in texts], dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_success_order_and_normalisation(server):
    emb = make(server)
    texts = ["first text", "second", "third one here"]
    v = emb.embed(texts)
    np.testing.assert_allclose(v, expected(texts), rtol=1e-6)
    assert emb.dim == DIM and emb.texts_embedded == 3 and emb.requests == 1
    assert server.requests[0]["model"] == "test-embed"
    assert emb.model_id == "openai:test-embed"


def test_batching_by_count_and_tokens(server):
    emb = make(server, batch_size=3, max_batch_tokens=12)
    texts = [f"word {i}" for i in range(7)] + ["many words " * 5]  # 2 tokens each, then 10 tokens
    v = emb.embed(texts)
    sizes = [len(r["input"]) for r in server.requests]
    assert sum(sizes) == 8 and max(sizes) <= 3
    for r in server.requests:
        assert sum(emb.tokenizer.count(t) for t in r["input"]) <= 12
    np.testing.assert_allclose(v, expected(texts), rtol=1e-6)


def test_429_then_success_is_retried(server):
    server.script = [429, 503]
    emb = make(server)
    v = emb.embed(["retry me"])
    np.testing.assert_allclose(v, expected(["retry me"]), rtol=1e-6)
    assert emb.requests == 3


def test_persistent_5xx_gives_up_with_a_clear_error(server):
    server.script = [500] * 10
    emb = make(server, max_retries=2)
    with pytest.raises(EndpointError) as err:
        emb.embed(["x"])
    assert "HTTP 500" in str(err.value) and "3 attempts" in str(err.value) and server.url in str(err.value)
    assert emb.requests == 3


def test_auth_failure_is_immediate_and_names_the_variable(server, monkeypatch):
    server.key = "right"
    monkeypatch.setenv("MY_EMBED_KEY", "wrong")
    emb = make(server, api_key_env="MY_EMBED_KEY")
    with pytest.raises(EndpointError) as err:
        emb.embed(["x"])
    assert "401" in str(err.value) and "$MY_EMBED_KEY" in str(err.value)
    assert emb.requests == 1  # no retries on auth failure
    monkeypatch.setenv("MY_EMBED_KEY", "right")
    assert emb.embed(["x"]).shape == (1, DIM)
    assert server.headers[-1]["Authorization"] == "Bearer right"


def test_unreachable_endpoint(monkeypatch):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    emb = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, backoff=0.001, timeout=2)
    with pytest.raises(EndpointError) as err:
        emb.embed(["x"])
    assert "cannot reach" in str(err.value) and "3 attempts" in str(err.value)


def test_wrong_route_hints_at_base_url(server):
    emb = OpenAIEmbedder("m", base_url=server.url[:-3], backoff=0.001)  # without /v1
    with pytest.raises(EndpointError) as err:
        emb.embed(["x"])
    assert "404" in str(err.value) and "/v1" in str(err.value)


def test_empty_and_long_inputs(server):
    emb = make(server, model_window=5)
    v = emb.embed(["", "   ", "one two three four five six seven eight"])
    assert v.shape == (3, DIM)
    sent = server.requests[0]["input"]
    assert sent[0] == " " and sent[1] == " "
    assert emb.tokenizer.count(sent[2]) == 5 and emb.truncated == 1
    with pytest.raises(InputError):
        emb.embed([b"bytes"])


def test_bad_configuration():
    with pytest.raises(ConfigError):
        OpenAIEmbedder("m", base_url="ftp://example")
    with pytest.raises(ConfigError):
        OpenAIEmbedder("m", batch_size=0)


def test_through_get_embedder_with_cache(server, tmp_path):
    emb = get_embedder("openai:test-embed", base_url=server.url, cache_dir=tmp_path, backoff=0.001)
    emb.embed(["a", "b", "a"])
    emb.embed(["b", "c"])
    assert [r["input"] for r in server.requests] == [["a", "b"], ["c"]]
    assert emb.texts_embedded == 3 and emb.dim == DIM
    # the same model name on another server is another cache namespace
    other = get_embedder("openai:test-embed", base_url=server.url + "/", cache_dir=tmp_path)
    assert other.cache_key == emb.cache_key
    assert "127.0.0.1" in emb.cache_key
