"""One ``Endpoint`` for every use: chat, answers, contextual text, ``rerank=llm`` and embeddings take the same
object and hold the server to the same settings; the old keyword spellings still work with a warning."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from chunkwise.context.llm import LLMContextualizer
from chunkwise.deprecation import ChunkwiseDeprecationWarning
from chunkwise.embeddings import get_embedder
from chunkwise.embeddings.openai import OpenAIEmbedder
from chunkwise.errors import ConfigError
from chunkwise.http import Endpoint
from chunkwise.llm import get_llm
from chunkwise.llm.client import ChatClient, command_endpoint
from chunkwise.llm.openai import OpenAILLM
from chunkwise.retrieval.rerank import llm_scores


@pytest.fixture
def endpoint(fake_openai):
    return Endpoint(fake_openai.url, "one-model", api_key="k-123", timeout=5, deadline=20, retries=2, backoff=0.001)


def _connection(ep: Endpoint) -> tuple:
    return (ep.base_url, ep.model, ep.key(), ep.timeout, ep.deadline, ep.retries, ep.backoff)


def test_every_use_takes_the_same_endpoint_and_keeps_its_settings(endpoint, tmp_path):
    chat = ChatClient(endpoint=endpoint, cache=False)
    llm = OpenAILLM(endpoint=endpoint, cache=False)
    ctx = LLMContextualizer(endpoint=endpoint, cache_dir=tmp_path)
    emb = OpenAIEmbedder(endpoint=replace_model(endpoint, "embed-model"))
    for client in (chat, llm.client, ctx.client):
        assert _connection(client.endpoint) == _connection(endpoint)
        assert client.url == endpoint.base_url + "/chat/completions"
    assert _connection(emb.endpoint)[2:] == _connection(endpoint)[2:]
    assert emb.url == endpoint.base_url + "/embeddings" and emb.model == "embed-model"
    assert isinstance(get_llm(endpoint=endpoint, cache=False), OpenAILLM)


def replace_model(ep: Endpoint, model: str) -> Endpoint:
    from dataclasses import replace

    return replace(ep, model=model)


def test_the_endpoint_reaches_the_server_with_its_key_and_model(endpoint, fake_openai, tmp_path):
    chat = ChatClient(endpoint=endpoint, cache=False)
    assert chat.complete([{"role": "user", "content": "hi"}])
    emb = OpenAIEmbedder("embed-model", endpoint=endpoint)
    assert emb.embed(["a text"]).shape[0] == 1
    assert [b["model"] for b in fake_openai.requests] == ["one-model", "embed-model"]
    assert fake_openai.authorizations() == ["Bearer k-123", "Bearer k-123"]


def test_rerank_llm_takes_an_endpoint(endpoint, fake_openai):
    fake_openai.answer = lambda body: "[2] > [1] > [3]"
    scores = llm_scores("which?", ["one", "two", "three"], client=endpoint)
    assert np.argsort(-scores).tolist() == [1, 0, 2]
    assert fake_openai.requests[-1]["model"] == "one-model"


def test_retries_mean_the_same_for_chat_and_embeddings(endpoint, fake_openai):
    for make in (lambda: ChatClient(endpoint=endpoint, cache=False), lambda: OpenAIEmbedder(endpoint=endpoint)):
        fake_openai.requests.clear()
        fake_openai.script = [500] * 10
        client = make()
        with pytest.raises(Exception, match="3 attempts"):
            (
                client.complete([{"role": "user", "content": "x"}])
                if isinstance(client, ChatClient)
                else client.embed(["x"])
            )
        assert len(fake_openai.requests) == endpoint.retries + 1
        fake_openai.script = []


def test_endpoint_and_loose_url_together_is_one_config_error(endpoint):
    with pytest.raises(ConfigError, match="not both"):
        ChatClient(base_url="http://localhost:1/v1", endpoint=endpoint)
    with pytest.raises(ConfigError, match="Endpoint"):
        ChatClient(endpoint="http://localhost:1/v1")
    with pytest.raises(ConfigError, match="Endpoint"):
        OpenAIEmbedder("m", endpoint={"base_url": "http://localhost:1/v1"})


def test_an_explicit_endpoint_wins_over_the_command_flags(endpoint):
    with command_endpoint(base_url="http://127.0.0.1:9/v1", model="other", timeout=1.0, retries=0):
        chat = ChatClient(endpoint=endpoint, cache=False)
        loose = ChatClient(cache=False)
    assert _connection(chat.endpoint) == _connection(endpoint)
    assert (loose.model, loose.retries, loose.timeout) == ("other", 0, 1.0)


def test_old_embedder_keywords_are_deprecated_sugar(fake_openai, monkeypatch):
    monkeypatch.setenv("MY_KEY", "secret")
    with pytest.warns(ChunkwiseDeprecationWarning, match="'max_retries' is deprecated, use 'retries'"):
        emb = OpenAIEmbedder("m", base_url=fake_openai.url, max_retries=1)
    assert emb.retries == emb.endpoint.retries == 1
    with pytest.warns(ChunkwiseDeprecationWarning, match="'api_key_env' is deprecated, use 'key_envs'"):
        emb = get_embedder("openai:m", base_url=fake_openai.url, api_key_env="MY_KEY", cache=False)
    assert emb.key_envs == ("MY_KEY",) and emb.endpoint.key() == "secret"
    with pytest.raises(ConfigError, match="only"):
        OpenAIEmbedder("m", base_url=fake_openai.url, max_retries=1, retries=2)
    with pytest.warns(ChunkwiseDeprecationWarning):
        assert emb.max_retries == emb.retries


def test_the_cli_flags_build_one_endpoint(monkeypatch):
    from chunkwise.cli.answers import endpoint_from_args

    monkeypatch.delenv("CHUNKWISE_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("CHUNKWISE_LLM_MODEL", raising=False)
    names = ("llm_base_url", "llm_model", "llm_timeout", "llm_deadline", "llm_retries")
    args = argparse.Namespace(**dict(zip(names, ("http://127.0.0.1:8/v1/", "m", 7.0, None, 1))))
    ep = endpoint_from_args(args)
    assert isinstance(ep, Endpoint)
    assert (ep.base_url, ep.model, ep.timeout, ep.deadline, ep.retries) == ("http://127.0.0.1:8/v1", "m", 7.0, 300.0, 1)
    args.llm_model = None
    assert endpoint_from_args(args) is None  # no model yet: the command that needs one says so
    monkeypatch.setenv("CHUNKWISE_LLM_MODEL", "env-model")
    assert endpoint_from_args(args).model == "env-model"
    args.llm_retries = -1
    with pytest.raises(ConfigError, match="retries"):
        endpoint_from_args(args)


def test_the_key_is_not_shown(endpoint):
    assert "k-123" not in repr(endpoint) and "k-123" not in repr(ChatClient(endpoint=endpoint, cache=False))
