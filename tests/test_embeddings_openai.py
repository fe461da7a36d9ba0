"""``openai:MODEL`` against the local OpenAI-compatible fake (``tests/fake_openai.py``; no internet)."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest
from fake_openai import DIM, FakeOpenAI, fake_vector

from chunkwise.embeddings import get_embedder
from chunkwise.embeddings.openai import EndpointError, OpenAIEmbedder
from chunkwise.errors import ConfigError, InputError

#: the fake, under the name other test modules import it by
Server = FakeOpenAI


@pytest.fixture
def server(fake_openai):
    return fake_openai


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
    emb = make(server, retries=2)
    with pytest.raises(EndpointError) as err:
        emb.embed(["x"])
    assert "HTTP 500" in str(err.value) and "3 attempts" in str(err.value) and server.url in str(err.value)
    assert emb.requests == 3


def test_auth_failure_is_immediate_and_names_the_variable(server, monkeypatch):
    server.key = "right"
    monkeypatch.setenv("MY_EMBED_KEY", "wrong")
    emb = make(server, key_envs=("MY_EMBED_KEY",))
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
    emb = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", retries=2, backoff=0.001, timeout=2)
    with pytest.raises(EndpointError) as err:
        emb.embed(["x"])
    assert "endpoint unreachable" in str(err.value) and "3 attempts" in str(err.value)


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


# -- the trust policy (chunkwise.http), as the embedder sees it ------------------------------------------


def _bounded(fn, seconds: float):
    """``fn()``'s result or exception, failing the test if it has not returned within ``seconds``."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still waiting after {seconds} s"
    return out


def test_a_redirect_is_not_followed_and_the_key_stays_home(server, other_host, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-embed-secret-123456")
    for status in (301, 302, 307, 308):
        server.redirect_to(other_host, status)
        with pytest.raises(EndpointError) as err:
            make(server).embed(["x"])
        message = str(err.value)
        assert f"HTTP {status} redirect to {other_host.origin}" in message and "not followed" in message
        assert "\n" not in message and "sk-embed" not in message
    assert other_host.seen == []  # nothing, with or without the key, reached the other host
    assert server.authorizations() == ["Bearer sk-embed-secret-123456"] * 4


def test_retry_after_as_an_http_date_is_honoured(server, monkeypatch):
    import email.utils

    import chunkwise.http

    waits: list[float] = []
    monkeypatch.setattr(chunkwise.http, "_sleep", waits.append)
    server.script = [429, 503]
    server.retry_after = email.utils.formatdate(time.time() + 40, usegmt=True)
    emb = make(server, backoff=0.0)
    np.testing.assert_allclose(emb.embed(["later"]), expected(["later"]), rtol=1e-6)
    assert emb.requests == 3 and len(waits) == 2
    assert all(38 <= w <= 40 for w in waits), waits  # the date's distance, not the zero back-off
    server.script, server.retry_after = [503], "7"
    waits.clear()
    make(server, backoff=0.0).embed(["seconds"])
    assert waits == [7.0]
    assert chunkwise.http.parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 30) == 30
    assert [s for s in (408, 409, 425, 429, 500, 501, 503, 599, 400, 404) if chunkwise.http.retried(s)] == [
        408,
        409,
        429,
        500,
        501,
        503,
        599,
    ]


def test_a_dripping_answer_ends_at_the_deadline(server):
    server.drip = 0.05  # a byte every 50 ms: never silent for the 5 s timeout
    emb = make(server, timeout=5, deadline=1.5, retries=3)
    out = _bounded(lambda: emb.embed(["x"]), 30)
    err = out.get("error")
    assert isinstance(err, EndpointError) and "1.5 s deadline" in str(err), out
    assert emb.requests == 1  # the deadline covers the whole request: no fresh attempt after it


def test_an_answer_over_the_size_cap_is_refused(server):
    server.huge = 50 * 2**20
    emb = make(server, max_response_bytes=2**20)
    out = _bounded(lambda: emb.embed(["x"]), 60)
    err = out.get("error")
    assert isinstance(err, EndpointError) and "1,048,576-byte limit" in str(err), out
    assert emb.requests == 1  # refused, not retried
