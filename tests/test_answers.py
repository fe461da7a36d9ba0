"""Answers with citations and map-reduce summaries, against a local OpenAI-compatible server (tests/fake_openai.py)
and offline (the extractive fallback) on the examples."""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, prompt_tokens
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkwise
from chunkwise.cli import main
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.llm import ChatClient, ExtractiveLLM, FatalLLMError, LLMError, OpenAILLM, Passage
from chunkwise.llm.base import check_citations, parse_citations, passages_from, provenance
from chunkwise.llm.mapreduce import summarize

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DEMO = "What should the keeper do before cleaning the lens on foggy days?"
SECRET = "sk-test-DO-NOT-PRINT-4242"


@pytest.fixture
def chat(fake_openai):
    return fake_openai


@pytest.fixture(scope="module")
def examples_db(tmp_path_factory):
    """examples/ indexed once (MiniLM, the default configuration) for the whole module."""
    db = tmp_path_factory.mktemp("askdb") / "chunkwise.db"
    cwd = os.getcwd()
    os.chdir(ROOT)  # sources recorded as examples/..., as in the README
    try:
        with chunkwise.Index(db=str(db)) as ix:
            ix.add(["examples"])
    finally:
        os.chdir(cwd)
    return str(db)


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch):
    for var in ("CHUNKWISE_LLM_BASE_URL", "CHUNKWISE_LLM_MODEL", "CHUNKWISE_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def llm_for(chat, tmp_path, **kw):
    kw.setdefault("backoff", 0.01)
    kw.setdefault("cache_dir", tmp_path)
    return OpenAILLM(chat.url, "test-model", **kw)


def ask(db, *args):
    return main(["ask", *args, "--db", db])


# -- citations and provenance --------------------------------------------------------------------------


def test_parse_citations_forms():
    assert parse_citations("Open the vents [1]. Dry glass [2, 3] and [4-6]; see [passage 7] [1].") == [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
    ]
    assert parse_citations("no citations, a list [a] or [ ] here") == []
    assert check_citations("x [1] y [9] z [2]", [1, 2, 3]) == ([1, 2], [9])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 500), min_size=1, max_size=8, unique=True), st.text(alphabet="ab .,\n", max_size=20))
def test_every_written_citation_is_parsed(nums, filler):
    text = filler.join(f"claim [{n}]" for n in nums)
    assert parse_citations(text) == nums


def test_provenance_labels():
    class Hit:
        source, page_start, page_end, section = "manual.pdf", 2, 3, ["2 Lamp and Lens", "2.1 Cleaning the Lens"]
        text = "Open the vents."
        start_time = end_time = None

    class Cue:
        source, page_start, page_end, section = "meeting.vtt", None, None, []
        start_time, end_time, speakers = 65.0, 3725.4, ["Ana", "Ben"]

    assert provenance(Hit()) == "manual.pdf p.2-3 §2.1 Cleaning the Lens"
    assert provenance(Cue()) == "meeting.vtt 1:05-1:02:05 (Ana, Ben)"
    assert passages_from([Hit()])[0].header() == "[1] manual.pdf p.2-3 §2.1 Cleaning the Lens"


# -- the client: streaming, retries, timeouts, malformed answers ----------------------------------------


def test_streaming_answer_with_numbered_provenance_and_checked_citations(chat, tmp_path, examples_db):
    pieces = []
    with chunkwise.Index(db=examples_db) as ix:
        ans = ix.ask(DEMO, k=3, llm=llm_for(chat, tmp_path), on_token=pieces.append)
    body = chat.requests[-1]
    assert body["stream"] is True and body["model"] == "test-model" and body["max_tokens"] == 512
    user = body["messages"][-1]["content"]
    # the page range depends on the default strategy's cut; the provenance format does not
    assert (
        re.search(r"\[1\] examples/lighthouse-manual\.pdf p\.2(-3)? §2\.1 Cleaning the Lens\n", user) and DEMO in user
    )
    assert len(pieces) > 3 and "".join(pieces).strip() == ans.text  # streamed piece by piece
    assert ans.citations == [1] and ans.invalid_citations == [] and ans.given == [1, 2, 3][: len(ans.given)]
    assert "Open the vents" in ans.cited_passages[0].text


def test_citation_to_a_passage_not_given_is_flagged(chat, tmp_path, examples_db, capsys):
    chat.answer = lambda body: "Open the vents [1], dry the glass [7]."
    rc = ask(examples_db, DEMO, "-k", "2", "--llm-base-url", chat.url, "--llm-model", "m", "--cache-dir", str(tmp_path))
    out = capsys.readouterr().out
    assert rc == 0 and "Open the vents [1], dry the glass [7]." in out
    assert re.search(r"Sources:\n  \[1\] examples/lighthouse-manual\.pdf p\.2(-3)? §2\.1 Cleaning the Lens", out)
    assert "! [7] is cited but no passage [7] was given" in out
    rc = ask(
        examples_db,
        DEMO,
        "-k",
        "2",
        "--llm-base-url",
        chat.url,
        "--llm-model",
        "m",
        "--format",
        "json",
        "--cache-dir",
        str(tmp_path),
    )
    data = json.loads(capsys.readouterr().out)
    assert data["citations"] == [1] and data["invalid_citations"] == [7] and len(data["passages"]) == 2


def test_retries_on_429_and_5xx(chat, tmp_path):
    client = ChatClient(chat.url, "m", backoff=0.01, cache=False)
    chat.fail_first, chat.fail_status = 2, 503
    assert client.complete([{"role": "user", "content": "Question: q"}], 50).startswith("Open the vents")
    assert client.requests_sent == len(chat.requests) == 3
    chat.requests.clear()
    chat.fail_first, chat.fail_status = 1, 429
    pieces = []
    client.stream([{"role": "user", "content": "Question: q"}], 50, on_token=pieces.append)
    assert len(chat.requests) == 2 and len(pieces) > 1  # a stream is retried before its first token
    chat.requests.clear()
    chat.always_status = 500
    with pytest.raises(LLMError, match="HTTP 500: scripted 500; gave up after 3 attempts"):
        ChatClient(chat.url, "m", backoff=0.01, retries=2, cache=False).complete([{"role": "user", "content": "x"}])
    assert len(chat.requests) == 3


@pytest.mark.timeout(60)  # a client that waits out the delay on every retry hangs: the timeout fails it
def test_timeout_is_an_error_not_a_hang(chat, tmp_path):
    chat.delay = 1.5
    with pytest.raises(LLMError, match=r"timed out \(nothing received for 0.2 s\); gave up after 2 attempts"):
        ChatClient(chat.url, "m", timeout=0.2, retries=1, backoff=0.01, cache=False).complete(
            [{"role": "user", "content": "x"}]
        )


def test_malformed_answers_fail_at_once(chat, tmp_path):
    client = ChatClient(chat.url, "m", backoff=0.01, cache=False)
    for body in ("this is not json", json.dumps({"choices": []}), json.dumps({"choices": [{"message": {}}]})):
        chat.requests.clear()
        chat.malformed = body
        with pytest.raises(FatalLLMError, match="malformed answer"):
            client.complete([{"role": "user", "content": "x"}])
        assert len(chat.requests) == 1  # not retried
    chat.malformed = None
    for event in ("{not json", json.dumps({"choices": [{"delta": {"content": 42}}]}), json.dumps({"id": 1})):
        chat.bad_event = event
        with pytest.raises(FatalLLMError, match="malformed stream event"):
            client.stream([{"role": "user", "content": "x"}])


def test_a_stream_that_breaks_off_is_an_error(chat, tmp_path):
    chat.break_stream_after = 3
    got = []
    with pytest.raises(LLMError, match="broke off"):
        ChatClient(chat.url, "m", cache=False).stream([{"role": "user", "content": "Question: q"}], on_token=got.append)
    assert 0 < len(got) <= 3


def test_answers_are_cached(chat, tmp_path):
    llm = llm_for(chat, tmp_path)
    ps = [Passage(1, "Open the vents before cleaning.", "manual.pdf")]
    a = llm.answer("What first?", ps).text
    b = llm.answer("What first?", ps, on_token=lambda t: None).text
    assert a == b and len(chat.requests) == 1 and llm.client.cache_hits == 1


# -- the context window ---------------------------------------------------------------------------------


def test_prompt_is_trimmed_to_the_window_never_sent_over_it(chat, tmp_path):
    chat.context_tokens = 400
    llm = llm_for(chat, tmp_path, context_tokens=400, answer_tokens=100)
    long = " ".join(["The lamp room must be kept dry and clean at all times."] * 12)  # ~160 tokens each
    passages = [Passage(n, f"{long} ({n})", f"doc{n}.txt") for n in range(1, 6)]
    comp = llm.answer("How is the lamp room kept?", passages)
    assert chat.overflows == [] and prompt_tokens(chat.requests[-1]) + 100 <= 400
    assert comp.prompt_tokens == prompt_tokens(chat.requests[-1])
    assert 1 <= len(comp.given) < 5 and comp.left_out == 5 - len(comp.given)
    # one passage alone longer than the window: cut at a token boundary, still within the limit
    huge = Passage(1, " ".join(["Salt crust forms on the seals every winter."] * 200), "big.txt")
    comp = llm.answer("What forms on the seals?", [huge])
    assert chat.overflows == [] and comp.cut == 1 and comp.given[0].text.endswith(" …")
    assert huge.text.startswith(comp.given[0].text[:-2])
    assert prompt_tokens(chat.requests[-1]) + 100 <= 400
    with pytest.raises(ConfigError, match="context_tokens"):
        llm_for(chat, tmp_path, context_tokens=100, answer_tokens=90)


def test_ask_reports_passages_left_out(chat, tmp_path, examples_db, capsys):
    chat.context_tokens = 700
    rc = ask(
        examples_db,
        DEMO,
        "-k",
        "5",
        "--llm-base-url",
        chat.url,
        "--llm-model",
        "m",
        "--context-tokens",
        "700",
        "--answer-tokens",
        "100",
        "--format",
        "json",
        "--min-score",
        "-1",
        "--cache-dir",
        str(tmp_path),
    )
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and chat.overflows == [] and data["left_out"] >= 1 and "did not fit" in data["note"]


# -- map-reduce -------------------------------------------------------------------------------------------


def test_map_reduce_depth_for_a_document_20x_the_context(chat, tmp_path):
    context, answer = 1024, 128
    chat.context_tokens = context
    sentences = [
        f"Section {i} explains how the keeper inspects part number {i} of the light every week." for i in range(1200)
    ]
    doc = Document(" ".join(sentences), source="long.txt")
    llm = llm_for(chat, tmp_path, context_tokens=context, answer_tokens=answer)
    assert llm.tokenizer.count(doc.text) >= 20 * context
    stages = []
    result = summarize(
        doc,
        llm,
        strategy="fixed",
        max_tokens=200,
        tokenizer="cl100k",
        concurrency=3,
        progress=lambda stage, done, total: stages.append((stage, done, total)),
    )
    n = len(result.passages)
    assert chat.overflows == [] and max(chat.prompt_sizes) + answer <= context
    assert result.levels[0] == n and result.levels[-1] == 1 and result.depth >= 4
    assert all(a > b for a, b in zip(result.levels, result.levels[1:]))
    assert result.calls == len(chat.requests) and chat.max_in_flight <= 3
    assert result.citations and set(result.citations) <= set(range(1, n + 1)) and not result.invalid_citations
    assert ("map", n, n) in stages and ("final", 1, 1) in stages and any(s.startswith("reduce 2") for s, _, _ in stages)


def test_a_document_that_fits_is_summarised_in_one_call(chat, tmp_path):
    doc = chunkwise.load(EXAMPLES / "lighthouse-manual.pdf")
    result = summarize(doc, llm_for(chat, tmp_path), style="paragraph")
    assert result.levels == [1] and len(chat.requests) == 1
    assert "one paragraph" in chat.requests[0]["messages"][-1]["content"]


# -- offline: the extractive fallback ------------------------------------------------------------------


def test_offline_answer_to_the_readme_question_cites_the_vents_chunk(examples_db, capsys):
    rc = ask(examples_db, DEMO)
    captured = capsys.readouterr()
    assert rc == 0
    answer, _, sources = captured.out.partition("\nSources:\n")
    assert "Open the vents for ten minutes before cleaning" in answer
    first = sources.splitlines()[0]
    assert re.match(r"\[1\] examples/lighthouse-manual\.pdf p\.2(-3)? §2\.1 Cleaning the Lens", first.strip())
    assert "Open the vents" in answer.split("[1]")[0]  # the vents sentence carries citation [1]
    assert "--llm-base-url" in captured.err and captured.err.count("\n") == 1  # one note on plugging in an LLM


def test_offline_python_api_and_show_context(examples_db, capsys):
    with chunkwise.Index(db=examples_db) as ix:
        ans = ix.ask(DEMO, k=3)
    assert ans.extractive and ans.citations and not ans.invalid_citations
    assert any("Open the vents" in p.text for p in ans.cited_passages)
    rc = ask(examples_db, DEMO, "-k", "2", "--show-context")
    out = capsys.readouterr().out
    assert rc == 0 and out.index("[2] examples/") < out.rindex(
        "Open the vents for ten minutes before cleaning so"
    )  # context, then answer


def test_offline_summary_same_shape_as_llm_summary(chat, tmp_path, capsys):
    pdf = str(EXAMPLES / "lighthouse-manual.pdf")
    assert main(["summarize", pdf, "--format", "json"]) == 0
    offline = json.loads(capsys.readouterr().out)
    assert (
        main(
            [
                "summarize",
                pdf,
                "--format",
                "json",
                "--llm-base-url",
                chat.url,
                "--llm-model",
                "m",
                "--cache-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    online = json.loads(capsys.readouterr().out)
    assert set(offline) == set(online) and offline["extractive"] and not online["extractive"]
    assert offline["citations"] and offline["summary"].startswith("- ") and offline["levels"] == [1]
    assert main(["summarize", pdf, str(tmp_path / "missing.txt")]) == 1
    captured = capsys.readouterr()
    assert "Sources:" in captured.out and "missing.txt" in captured.err


def test_extractive_summary_reuses_semantic_sentence_vectors():
    class Counting:
        def __init__(self):
            from chunkwise.embeddings import get_embedder

            self.inner, self.texts = get_embedder("minilm"), 0

        def embed(self, texts):
            self.texts += len(texts)
            return self.inner.embed(texts)

    emb = Counting()
    chunks = chunkwise.get_strategy("cohesion", max_tokens=120, embedder=emb.inner).chunk(
        chunkwise.load(EXAMPLES / "night-trains.txt")
    )
    s = summarize(chunks, ExtractiveLLM(embedder=emb), style="paragraph")
    assert emb.texts == 0 and s.text and s.citations  # no sentence embedded twice


class _CountingEmbedder:
    """MiniLM, counting the texts it is asked to embed (the question apart)."""

    def __init__(self, question: str):
        from chunkwise.embeddings import get_embedder

        self.inner, self.question, self.texts = get_embedder("minilm"), question, []
        # a memo of its own: id(self) can be reused once an earlier embedder is freed, a fresh uuid cannot
        self.model_id, self.dim = f"counting-{uuid.uuid4().hex}", self.inner.dim

    def embed(self, texts):
        self.texts += [t for t in texts if t != self.question]
        return self.inner.embed(texts)


def _lighthouse_passages() -> list[Passage]:
    filler = [
        f"The keeper wrote entry {n} of the log in the evening, as every keeper before him had done." for n in range(12)
    ]
    answer = "On foggy days the keeper must close the vents before cleaning the lens with a dry cloth."
    texts = [" ".join(filler[:6]), " ".join(filler[6:9] + [answer] + filler[9:])]
    return [Passage(n + 1, t, source=f"log-{n}.txt") for n, t in enumerate(texts)]


def test_extractive_answer_embeds_only_its_shortlist_and_still_finds_the_sentence():
    question = "What must the keeper do with the vents on foggy days?"
    passages = _lighthouse_passages()
    emb = _CountingEmbedder(question)
    everything = ExtractiveLLM(embedder=emb, shortlist=None).answer(question, passages)
    every_text = len(emb.texts)
    emb.texts.clear()
    emb.model_id += "-b"  # not from the memo of the first run
    short = ExtractiveLLM(embedder=emb, shortlist=4).answer(question, passages)
    assert every_text > 20 and len(emb.texts) == 4  # the shortlist alone was embedded
    assert "close the vents" in short.text and short.text.split(" [")[0] == everything.text.split(" [")[0]
    assert short.text.split(" [")[1].startswith("2]")  # the second passage's sentence, cited as [2]


def test_extractive_answer_memoises_candidate_vectors_for_the_next_question():
    question = "What must the keeper do with the vents on foggy days?"
    emb = _CountingEmbedder(question)
    llm = ExtractiveLLM(embedder=emb)
    first = llm.answer(question, _lighthouse_passages())
    assert emb.texts
    emb.texts.clear()
    again = ExtractiveLLM(embedder=emb).answer(question, _lighthouse_passages())  # a new reader, same process
    assert emb.texts == [] and again.text == first.text


def test_shortlist_ranks_sentences_by_the_questions_rare_words():
    from chunkwise.llm.extractive import shortlist

    texts = [
        "The keeper lit the lamp at dusk.",
        "The keeper ate dinner in the kitchen.",
        "Fog rolled in and the keeper closed the vents.",
        "The keeper slept until dawn.",
    ]
    cands = [(0,), (1,), (2,), (3,), (0, 1), (1, 2), (2, 3)]
    picked = shortlist("When did the keeper close the vents?", texts, cands, 3)
    assert picked == [(2,), (1, 2), (2, 3)]  # the sentence with "vents"/"closed", then its pairs
    assert shortlist("Nothing matches here at all?", texts, cands, 2) == [(0,), (0, 1)]  # passage order


def test_a_question_is_embedded_once_by_search_relevance_and_reader():
    import numpy as np

    from chunkwise.embeddings.vectors import query_vectors

    class Counting:
        def __init__(self):
            self.calls: list[list[str]] = []

        def embed_queries(self, texts):
            self.calls.append(list(texts))
            return np.ones((len(texts), 4), dtype=np.float32) * len(self.calls)

    emb = Counting()
    a, b = query_vectors(emb, ["lamp?"]), query_vectors(emb, ["lamp?"])
    a[0, 0] = -1  # a caller's copy: the memo is not changed through it
    assert emb.calls == [["lamp?"]] and b[0, 0] == 1 and query_vectors(emb, ["lamp?"])[0, 0] == 1
    query_vectors(emb, ["lens?"])
    query_vectors(emb, ["lamp?", "lens?"])  # many queries (evaluation) are embedded as asked
    assert emb.calls == [["lamp?"], ["lens?"], ["lamp?", "lens?"]]


def test_extractive_shortlist_is_validated():
    with pytest.raises(ConfigError, match="shortlist"):
        ExtractiveLLM(shortlist=0)
    assert ExtractiveLLM(shortlist=None).shortlist is None


# -- bad input ------------------------------------------------------------------------------------------


def test_no_relevant_passages_is_an_answer(examples_db, capsys):
    rc = ask(examples_db, "What is the capital of Mongolia?")
    assert rc == 0 and capsys.readouterr().out.strip() == "no relevant passages found"


def test_an_answer_from_a_weak_best_match_is_hedged(examples_db, capsys):
    """examples/ answers the README question (best cosine well above the calibrated 0.30): no hedge; it
    has nothing on planets, yet a podcast chunk passes the 0.15 threshold: the answer says it is unsure."""
    from chunkwise.llm.answer import CONFIDENT_SCORE

    with chunkwise.Index(db=examples_db) as ix:
        sure = ix.ask(DEMO)
        unsure = ix.ask("Which planet has the most moons?")
    assert sure.confident and sure.best_score >= CONFIDENT_SCORE and sure.hedge is None
    assert unsure.found and not unsure.confident and 0.15 <= unsure.best_score < CONFIDENT_SCORE
    # nothing in examples/ mentions planets or moons: the answer says so instead of quoting a podcast
    assert unsure.text.startswith("not found in the indexed documents: the closest passages are about ")
    assert unsure.evidence.unmatched == ["planet", "moons"]
    assert unsure.hedge == (
        "the passages hold few of the question's words (missing: planet, moons): "
        "the question may be about something not indexed"
    )
    assert ask(examples_db, "Which planet has the most moons?") == 0
    out = capsys.readouterr().out
    answer, _, sources = out.partition("\nClosest passages:")  # a not-found answer lists what it saw
    assert answer.rstrip().splitlines()[-1] == f"Caution: {unsure.hedge}" and sources
    assert ask(examples_db, DEMO) == 0 and "Caution" not in capsys.readouterr().out
    assert ask(examples_db, "Which planet has the most moons?", "--format", "json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["confident"] is False and data["hedge"] == unsure.hedge and data["best_score"] == unsure.best_score
    assert chunkwise.llm.answer.Answer.from_dict(unsure.to_dict()).to_dict() == unsure.to_dict()


def test_interactive_asks_many_questions_over_one_opened_index(examples_db, capsys, monkeypatch):
    """``ask --interactive``: the first question from the argument, then one per input line until an empty
    one; the index (and its model) is opened once."""
    import io

    opened = []
    real = chunkwise.Index.__init__
    monkeypatch.setattr(chunkwise.Index, "__init__", lambda self, *a, **k: opened.append(1) or real(self, *a, **k))
    monkeypatch.setattr("sys.stdin", io.StringIO("Which planet has the most moons?\nHow much honey do bees need?\n\n"))
    assert ask(examples_db, DEMO, "--interactive", "--format", "json") == 0
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [a["question"] for a in answers] == [
        DEMO,
        "Which planet has the most moons?",
        "How much honey do bees need?",
    ]
    assert [a["confident"] for a in answers] == [True, False, True] and opened == [1]


def test_empty_index_and_missing_database(tmp_path, capsys):
    db = str(tmp_path / "empty.db")
    doc = tmp_path / "one.txt"
    doc.write_text("A single short document about lighthouses and their lamps.", encoding="utf-8")
    with chunkwise.Index(db=db) as ix:
        ix.add([str(doc)])
        ix.delete(str(doc))
    assert ask(db, "lamps?") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the index is empty" in err
    assert ask(str(tmp_path / "nothing.db"), "lamps?") == 2
    assert "run `chunkwise index` first" in capsys.readouterr().err


def test_endpoint_down_is_one_line_naming_the_url(examples_db, capsys):
    server = FakeOpenAI()
    url = server.url
    server.close()
    rc = ask(examples_db, DEMO, "--llm-base-url", url, "--llm-model", "m", "--llm-retries", "1", "--no-cache")
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert err.startswith(f"chunkwise: error: {url}/chat/completions: endpoint unreachable")


def test_api_key_is_never_printed(chat, examples_db, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CHUNKWISE_LLM_API_KEY", SECRET)
    chat.always_status, chat.echo_auth = 401, True
    rc = ask(examples_db, DEMO, "--llm-base-url", chat.url, "--llm-model", "m", "--cache-dir", str(tmp_path))
    captured = capsys.readouterr()
    assert rc == 2 and "HTTP 401" in captured.err and "[redacted]" in captured.err
    assert SECRET not in captured.err + captured.out
    assert chat.headers[-1]["Authorization"] == f"Bearer {SECRET}"  # it was sent, only to the server
    llm = OpenAILLM(chat.url, "m", cache_dir=tmp_path)
    assert SECRET not in repr(llm.client) and SECRET not in repr(vars(llm))
    chat.always_status = None
    rc = ask(
        examples_db,
        DEMO,
        "--llm-base-url",
        chat.url,
        "--llm-model",
        "m",
        "--format",
        "json",
        "--cache-dir",
        str(tmp_path),
    )
    assert rc == 0 and SECRET not in capsys.readouterr().out


def test_configuration_errors(tmp_path, examples_db, capsys):
    with pytest.raises(ConfigError, match="--llm-base-url"):
        chunkwise.llm.get_llm(None, "model-without-endpoint")
    assert isinstance(chunkwise.llm.get_llm(), ExtractiveLLM)
    with pytest.raises(ConfigError, match="style"):
        summarize(Document("Some text here. More text there."), style="haiku")
    assert ask(examples_db, "  ") == 2 and "question is empty" in capsys.readouterr().err


# -- eval --answers -------------------------------------------------------------------------------------


def test_eval_answers_reports_citation_recall(chat, tmp_path, capsys, monkeypatch):
    from conftest import FakeEmbedder
    from eval_data import QUERIES, TOPICS, write_neutral

    import chunkwise.embeddings

    fake = FakeEmbedder()
    monkeypatch.setattr(chunkwise.embeddings, "embedder_from_args", lambda args, **kw: fake)
    queries = []
    for q, doc, sentence in QUERIES:
        start = TOPICS[doc].index(sentence)
        queries.append({"query": q, "references": [{"doc": doc, "start": start, "end": start + len(sentence)}]})
    root = write_neutral(tmp_path / "ds", queries, docs=TOPICS)
    spec = "fixed:max_tokens=8,overlap=0,tokenizer=words"
    assert main(["eval", str(root), "--run", spec, "--answers", "--format", "json", "-q"]) == 0
    offline = json.loads(capsys.readouterr().out)["runs"][0]["scores"]
    assert 0 < offline["citation_recall"] <= 1 and offline["answer_cites"] == 1.0
    chat.answer = lambda body: "It is in the first passage [1], not in [99]."
    assert (
        main(
            [
                "eval",
                str(root),
                "--run",
                spec,
                "--answers",
                "--llm-base-url",
                chat.url,
                "--llm-model",
                "m",
                "--cache-dir",
                str(tmp_path),
                "-q",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "citation recall" in out and len(chat.requests) == len(queries)
    assert main(["eval", str(root), "--run", spec, "--llm-model", "m", "-q"]) == 2


def test_a_server_that_counts_the_prompt_longer_gets_a_hint(chat, tmp_path):
    chat.context_tokens = 300  # the server's window is smaller than the one chunkwise was told
    llm = llm_for(chat, tmp_path, context_tokens=2000, answer_tokens=100)
    with pytest.raises(FatalLLMError, match=r"HTTP 400.*context length exceeded.*--llm-tokenizer hf:PATH"):
        llm.answer("What?", [Passage(1, " ".join(["Long text about lamps."] * 200), "a.txt")])


@settings(max_examples=40, deadline=None)
@given(
    st.integers(150, 1500),
    st.integers(8, 80),
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=3000),
        min_size=1,
        max_size=6,
    ),
    st.text(max_size=200),
)
def test_fitted_prompts_never_exceed_the_window(context, answer, texts, question):
    llm = OpenAILLM(
        "http://127.0.0.1:9/v1", "m", context_tokens=context + answer + 64, answer_tokens=answer, cache=False
    )
    passages = [Passage(n, t, f"doc{n}.txt") for n, t in enumerate(texts, start=1)]
    try:
        messages, given_, cut = llm.fit(lambda ps: llm.answer_messages(question, ps), passages)
    except ConfigError:  # the question alone does not fit: refused, never sent
        assert llm.prompt_tokens(llm.answer_messages(question, [])) > llm.budget
        return
    assert llm.prompt_tokens(messages) <= llm.budget and cut <= 1
    assert [p.number for p in given_] == sorted(p.number for p in given_)
    for p in given_:  # every passage given is the original text or a prefix of it
        original = texts[p.number - 1]
        assert p.text == original or (p.text.endswith(" …") and original.startswith(p.text[:-2]))


def test_relevance_of_hybrid_hits_reads_the_vectors_the_index_holds(tmp_path):
    """A warm question does not embed its hits again: their cosines come from the index's in-process
    vector copy, and equal the cosines of the texts embedded afresh."""
    from conftest import FakeEmbedder
    from index_data import docs, lines

    from chunkwise.llm.answer import relevance
    from chunkwise.retrieval import Index

    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(docs(), strategy=lines())
        hits = ix.search("conductor tickets", k=3)
        emb = ix.embedder()
        calls = []
        embed = emb.embed

        def counted(texts):
            calls.append(list(texts))
            return embed(texts)

        emb.embed = counted
        got = relevance(ix, "conductor tickets", hits, rescored=True)
        emb.embed = embed
        fresh = embed([h.text for h in hits]) @ embed(["conductor tickets"])[0]
        assert not any(h.text in texts for texts in calls for h in hits), calls
        assert got == pytest.approx([float(x) for x in fresh], abs=1e-5)
