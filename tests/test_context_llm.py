"""LLM context (contextual retrieval) against the local OpenAI-compatible fake (tests/fake_openai.py)."""

from __future__ import annotations

import pytest
from conftest import Paragraphs
from fake_openai import FakeOpenAI

from chunkwise.context import contextualize
from chunkwise.context.llm import ContextWarning, LLMContextualizer
from chunkwise.document import Document
from chunkwise.errors import ConfigError

REPORT = """Harbor Lights Ltd. annual report 2024.

Revenue rose 12 percent to 48 million euros, driven by the new ferry routes.

The company opened two terminals in Rotterdam and hired 140 people.

It expects margins to improve next year as fuel contracts are renegotiated."""


def situate(body: dict) -> str:
    """The fake's answer: names the report and quotes the start of the chunk it was asked about."""
    chunk = body["messages"][-1]["content"].split("<chunk>\n")[1].split("\n</chunk>")[0]
    return f"From the Harbor Lights report: {chunk[:20]}"


@pytest.fixture
def llm(fake_openai):
    fake_openai.answer = situate
    return fake_openai


@pytest.fixture
def doc_chunks():
    doc = Document(REPORT, source="reports/harbor-2024.txt")
    return doc, Paragraphs(max_tokens=100).chunk(doc)


def make(llm, tmp_path, **kw):
    kw.setdefault("backoff", 0.01)
    return LLMContextualizer(base_url=llm.url, model="test-model", cache_dir=tmp_path, **kw)


def test_context_is_written_and_the_prompt_prefix_is_shared(llm, tmp_path, doc_chunks):
    doc, chunks = doc_chunks
    texts = [c.text for c in chunks]
    ctx = make(llm, tmp_path)
    ctx.contextualize(doc, chunks)
    assert ctx.requested == len(chunks) == len(llm.requests) == 4 and ctx.failures == 0
    assert [c.text for c in chunks] == texts
    for c in chunks:
        assert c.context == f"From the Harbor Lights report: {c.text[:20]}"
        assert c.embed_text.startswith(c.context) and c.embed_text.endswith(c.text)
    # the system message and the document part are byte-identical for every chunk; the chunk comes last
    prefixes = set()
    for body in llm.requests:
        assert body["model"] == "test-model" and [m["role"] for m in body["messages"]] == ["system", "user"]
        user = body["messages"][-1]["content"]
        head, tail = user.split("Here is the chunk", 1)
        prefixes.add((body["messages"][0]["content"], head))
        assert REPORT in head and "<chunk>" not in head
        assert tail.rstrip().endswith("nothing else.")  # the chunk part is the last thing in the prompt
    assert len(prefixes) == 1
    chunk_parts = {b["messages"][-1]["content"].split("<chunk>\n")[1].split("\n</chunk>")[0] for b in llm.requests}
    assert chunk_parts == set(texts)


def test_cache_avoids_a_second_call(llm, tmp_path, doc_chunks):
    doc, chunks = doc_chunks
    make(llm, tmp_path).contextualize(doc, chunks)
    first = [c.context for c in chunks]
    fresh = Paragraphs(max_tokens=100).chunk(doc)
    again = make(llm, tmp_path)
    again.contextualize(doc, fresh)
    assert len(llm.requests) == 4 and again.cached == 4 and again.requested == 0
    assert [c.context for c in fresh] == first
    # another model is another cache key
    other = LLMContextualizer(base_url=llm.url, model="other-model", cache_dir=tmp_path)
    other.contextualize(doc, Paragraphs(max_tokens=100).chunk(doc))
    assert len(llm.requests) == 8 and other.requested == 4
    # and so is a changed document
    changed = Document(REPORT.replace("48", "49"), source=doc.source)
    make(llm, tmp_path).contextualize(changed, Paragraphs(max_tokens=100).chunk(changed))
    assert len(llm.requests) == 12


def test_retries_on_503_and_429(llm, tmp_path, doc_chunks):
    doc, chunks = doc_chunks
    llm.fail_first = 2
    ctx = make(llm, tmp_path, concurrency=1)
    ctx.contextualize(doc, chunks)
    assert ctx.failures == 0 and all(c.context for c in chunks)
    assert ctx.requests_sent == len(llm.requests) == 6
    llm.requests.clear()
    llm.fail_first, llm.fail_status = 1, 429
    doc2 = Document(REPORT + "\n\nA new paragraph.", source="reports/other.txt")
    ctx2 = make(llm, tmp_path, concurrency=1)
    ctx2.contextualize(doc2, Paragraphs(max_tokens=100).chunk(doc2))
    assert ctx2.failures == 0 and ctx2.requests_sent == 6


def test_failing_endpoint_keeps_plain_text_counts_failures_and_finishes(llm, tmp_path, doc_chunks):
    doc, chunks = doc_chunks
    llm.always_status = 500
    ctx = make(llm, tmp_path, retries=2)
    with pytest.warns(
        ContextWarning, match=r"failed for 4 of 4 chunks \(HTTP 500: scripted 500; gave up after 3 attempts\)"
    ):
        out = ctx.contextualize(doc, chunks)
    assert ctx.failures == 4 and ctx.requested == 0
    assert all(c.context is None and c.embed_text == c.text for c in out)
    assert len(llm.requests) == 4 * 3  # every chunk tried 1 + 2 retries
    # failures are not cached: once the endpoint recovers, the chunks get context
    llm.always_status = None
    ctx.contextualize(doc, chunks)
    assert ctx.failures == 4 and ctx.requested == 4 and all(c.context for c in chunks)


@pytest.mark.timeout(60)  # a client that waits out the delay on every retry hangs: the timeout fails it
def test_timeouts_are_failures_not_hangs(llm, tmp_path, doc_chunks):
    doc, chunks = doc_chunks
    llm.delay = 1.5
    ctx = make(llm, tmp_path, timeout=0.2, retries=1, concurrency=4)
    with pytest.warns(ContextWarning, match="timed out"):
        ctx.contextualize(doc, chunks)
    assert ctx.failures == 4 and all(c.context is None for c in chunks)


def test_hopeless_errors_are_not_retried(llm, tmp_path, doc_chunks):
    doc, chunks = doc_chunks
    llm.always_status = 401
    ctx = make(llm, tmp_path, retries=5, concurrency=1)
    with pytest.warns(ContextWarning, match="HTTP 401"):
        ctx.contextualize(doc, chunks)
    assert ctx.failures == 4 and len(llm.requests) == 1  # the rest of the document fails fast


def test_unreachable_endpoint_and_empty_answers(llm, tmp_path, doc_chunks):
    doc, chunks = doc_chunks
    url = llm.url
    llm.close()
    ctx = LLMContextualizer(base_url=url, model="m", cache_dir=tmp_path, retries=1, backoff=0.01)
    with pytest.warns(ContextWarning, match="unreachable"):
        ctx.contextualize(doc, chunks)
    assert ctx.failures == 4

    server = FakeOpenAI()
    try:
        server.answer = lambda body: "<think>hmm</think>   "
        ctx = LLMContextualizer(base_url=server.url, model="m", cache_dir=tmp_path, backoff=0.01)
        with pytest.warns(ContextWarning, match="empty answer"):
            ctx.contextualize(doc, chunks)
        assert ctx.failures == 4 and len(server.requests) == 4  # not fatal: every chunk was tried
    finally:
        server.close()


def test_api_key_from_environment_and_contextualize_entry_point(llm, tmp_path, doc_chunks, monkeypatch):
    doc, chunks = doc_chunks
    monkeypatch.setenv("CHUNKWISE_LLM_API_KEY", "sk-test-123")
    monkeypatch.setenv("CHUNKWISE_CACHE_DIR", str(tmp_path))
    out = contextualize(doc, chunks, "llm", base_url=llm.url + "/", model="test-model", concurrency=2)
    assert all(c.context for c in out)
    assert all(h.get("Authorization") == "Bearer sk-test-123" for h in llm.headers)
    assert (tmp_path / "llm_context.sqlite3").exists()


def test_configuration_errors(monkeypatch):
    for var in ("CHUNKWISE_LLM_BASE_URL", "CHUNKWISE_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match="--llm-base-url"):
        LLMContextualizer(model="m")
    with pytest.raises(ConfigError, match="--llm-model"):
        LLMContextualizer(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="http"):
        LLMContextualizer(base_url="ftp://x", model="m")
    with pytest.raises(ConfigError, match="concurrency"):
        LLMContextualizer(base_url="http://127.0.0.1:9/v1", model="m", concurrency=0)
    monkeypatch.setenv("CHUNKWISE_LLM_BASE_URL", "http://127.0.0.1:9/v1/chat/completions")
    monkeypatch.setenv("CHUNKWISE_LLM_MODEL", "env-model")
    ctx = LLMContextualizer()
    assert ctx.url == "http://127.0.0.1:9/v1/chat/completions" and ctx.model == "env-model"
