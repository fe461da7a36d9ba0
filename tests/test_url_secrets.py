"""Secrets in URLs: no password or key in a URL reaches a terminal, a log or a web client.

A base URL may carry ``user:password@`` or a query credential (``?api-key=``, ``?sig=``): every URL shown
passes one redaction (:func:`chunkwise.security.redact_url`), userinfo is refused with one line (it would be
neither sent nor hidden), a query string keeps its place after the route, and ``serve`` answers a failing
upstream with a generic message, the details going to its log only.
"""

from __future__ import annotations

import itertools
import logging
import os
import warnings

import pytest
from conftest import FakeEmbedder
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from chunkwise.cli import main
from chunkwise.errors import ConfigError
from chunkwise.http import Endpoint, EndpointError, JSONClient
from chunkwise.security import REDACTED, redact, redact_url, redact_urls, warn_plain_http

SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$*+,"
secret = st.text(SAFE, min_size=8, max_size=24).filter(lambda s: s not in f"http://127.0.0.1 {REDACTED} chunkwise")
_urls = itertools.count()
ENV = ("CHUNKWISE_LLM_BASE_URL", "CHUNKWISE_LLM_MODEL", "CHUNKWISE_LLM_API_KEY", "OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch):
    for var in ENV:
        monkeypatch.delenv(var, raising=False)


def test_redact_url_hides_userinfo_and_query_credentials():
    shown = redact_url("https://me:s3cretpw@api.example/openai/d?api-version=2024-06-01&api-key=K3Y&sig=S1G#f")
    assert "s3cretpw" not in shown and "me:" not in shown and "K3Y" not in shown and "S1G" not in shown
    assert shown.startswith(f"https://{REDACTED}@api.example/openai/d?api-version=2024-06-01&")
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"  # nothing secret: unchanged
    # a password with a "/" in it (not a valid URL, still a password)
    assert "p/ss" not in redact_url("http://u:p/ss@host/v1")


def test_userinfo_in_a_base_url_is_refused_in_one_line_without_the_password():
    with pytest.raises(ConfigError) as err:
        Endpoint("http://user:s3cretpw@127.0.0.1:9/v1", "m", route="/chat/completions", label="llm")
    text = str(err.value)
    assert "s3cretpw" not in text and "\n" not in text
    assert "user name or password" in text


def test_a_query_string_stays_after_the_route(fake_openai):
    ep = Endpoint(fake_openai.url + "?api-version=2024-06-01", "m", route="/chat/completions", label="llm")
    assert ep.url == fake_openai.url + "/chat/completions?api-version=2024-06-01"
    JSONClient(ep).post({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
    assert fake_openai.seen[-1] == ("POST", "/v1/chat/completions?api-version=2024-06-01")


def test_the_cli_error_line_does_not_print_the_password(tmp_path, capsys):
    code = main(["ask", "what?", "--db", str(tmp_path / "x.db"), "--llm-base-url", "http://u:s3cretpw@h/v1"])
    err = capsys.readouterr().err
    assert code == 2 and "s3cretpw" not in err and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def serve_client(tmp_path_factory):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from chunkwise.retrieval.index import Index
    from chunkwise.viz.app import create_app

    root = tmp_path_factory.mktemp("urls")
    doc = root / "guide.md"
    doc.write_text("# Bread\n\nThe starter doubles in six hours when fed twice a day.\n", encoding="utf-8")
    with Index(root / "s.db", embedder=FakeEmbedder()) as ix:
        ix.add([doc], strategy="recursive", params={"max_tokens": 32})
    app = create_app(str(root / "s.db"), embedder=FakeEmbedder())
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


def _ask(client, base_url: str):
    os.environ["CHUNKWISE_LLM_BASE_URL"], os.environ["CHUNKWISE_LLM_MODEL"] = base_url, "m"
    try:
        return client.post(
            "/ask",
            json={
                "question": "in how many hours does the starter double when fed twice a day?",
                "k": 2,
                "min_score": -1,
            },
        )
    finally:
        del os.environ["CHUNKWISE_LLM_BASE_URL"], os.environ["CHUNKWISE_LLM_MODEL"]


def test_serve_hides_a_misconfigured_endpoint_from_clients(serve_client, caplog):
    with caplog.at_level(logging.WARNING, logger="chunkwise.serve"):
        r = _ask(serve_client, "http://user:s3cretpw@127.0.0.1:9/v1")
    assert r.status_code == 500 and "s3cretpw" not in r.text and "127.0.0.1:9" not in r.text
    assert "user name or password" in caplog.text and "s3cretpw" not in caplog.text


def test_serve_answers_upstream_failures_generically_and_logs_them(serve_client, fake_openai, caplog):
    fake_openai.always_status, fake_openai.echo_headers = 400, True
    with caplog.at_level(logging.WARNING, logger="chunkwise.serve"):
        r = _ask(serve_client, fake_openai.url + "?api-key=K3YVALUE99")
    assert r.status_code == 502, r.text
    assert "K3YVALUE99" not in r.text and fake_openai.origin not in r.text
    assert "scripted 400" in caplog.text and "K3YVALUE99" not in caplog.text  # the details, redacted, server-side


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=secret, pw=secret, key=secret, sig=secret)
def test_no_url_header_or_error_body_shows_userinfo_or_a_key(fake_openai, serve_client, user, pw, key, sig):
    """Whatever the secrets, no text chunkwise prints, logs or serves contains one of them."""
    secrets = (pw, key, sig)
    assume(not any(a in b for a in secrets for b in (user, *secrets) if a is not b))  # each findable alone
    query = f"?api-version=1&api-key={key}&sig={sig}"
    shown: list[str] = [redact_urls(f"see http://{user}:{pw}@example.org/v1{query} now")]
    # userinfo: refused, in one line without it
    try:
        Endpoint(f"http://{user}:{pw}@127.0.0.1:9/v1{query}", "m", route="/chat/completions", label="llm")
    except ConfigError as exc:
        shown.append(str(exc))
    else:
        raise AssertionError("userinfo accepted")
    # a server that echoes the request's URL and headers (the bearer key among them) in its error body
    fake_openai.always_status, fake_openai.echo_headers = 400, True
    ep = Endpoint(fake_openai.url + query, "m", route="/chat/completions", api_key=pw, label="llm")
    try:
        JSONClient(ep).post({"model": "m", "messages": [], "max_tokens": 1})
    except EndpointError as exc:
        shown += [str(exc), exc.source or ""]
    # the plain-http warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_plain_http(f"http://192.0.2.7/v1{query}&n={next(_urls)}", True)  # a new URL: warned once each
    shown += [str(w.message) for w in caught]
    # what serve returns to a web client
    shown.append(_ask(serve_client, f"http://{user}:{pw}@127.0.0.1:9/v1{query}").text)
    shown.append(_ask(serve_client, fake_openai.url + query).text)
    shown.append(redact(f"Authorization: Bearer {pw}"))
    for text in shown:
        for s in secrets:
            assert s not in text, (s, text)


def test_cache_stats_shows_no_key_of_an_embedding_endpoint(fake_openai, tmp_path, capsys):
    url = fake_openai.url + "?api-key=K3YVALUE99"
    assert main(["--embedder", "openai:test-embed", "--base-url", url, "--cache-dir", str(tmp_path), "embed", "x"]) == 0
    capsys.readouterr()
    assert main(["--cache-dir", str(tmp_path), "cache", "stats"]) == 0
    assert main(["--cache-dir", str(tmp_path), "cache", "stats", "--json"]) == 0
    out = capsys.readouterr().out
    assert "K3YVALUE99" not in out and out.count("openai:test-embed@") == 2  # the entry is listed, redacted
