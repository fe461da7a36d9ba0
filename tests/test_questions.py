"""``chunkwise questions`` (generated evaluation datasets) and ``tune``'s significance decision and search."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeEmbedder

import chunkwise.embeddings
from chunkwise.cli import main
from chunkwise.errors import ConfigError
from chunkwise.evaluation import Evaluator, load_dataset, tune
from chunkwise.evaluation.datasets import make_document
from chunkwise.evaluation.questions import (
    generate_questions,
    jaccard,
    lexical_overlap,
    load_documents,
    locate,
    make_questions,
    write_question_set,
)
from chunkwise.evaluation.results import RunResult
from chunkwise.evaluation.spec import RunSpec
from chunkwise.evaluation.tune import NO_WINNER, SIGNIFICANT, SearchSpace, TuneRow, decide, search, split_queries
from chunkwise.evaluation.tune_decide import KEEP_DEFAULT, saturation

TOPICS = {
    "bees": "honey nectar hive queen eggs summer wax comb pollen swarm drone worker",
    "lights": "lamp lens dusk cloth keeper beacon tower fog signal shore rocks night",
    "trains": "conductor tickets midnight platform carriage rails engine station whistle timetable",
    "bread": "dough yeast oven flour crust loaf knead bakery rye sourdough starter",
    "ships": "sail harbour anchor storm hull deck mast captain cargo tide voyage",
}


def write_kb(root: Path, seed: int = 1) -> Path:
    """Six Markdown documents with headed sections of five sentences each, and one plain text file."""
    rng = random.Random(seed)
    kb = root / "kb"
    (kb / "more").mkdir(parents=True)
    for topic, vocab in TOPICS.items():
        words = vocab.split()
        parts = []
        for h in range(3):
            sents = [
                " ".join(rng.choice(words) for _ in range(rng.randint(7, 14))).capitalize() + "." for _ in range(5)
            ]
            parts.append(f"## {topic.title()} care and history part {h}\n\n" + " ".join(sents))
        (kb / f"{topic}.md").write_text(f"# {topic.title()}\n\n" + "\n\n".join(parts) + "\n", encoding="utf-8")
    sents = [" ".join(rng.choice(TOPICS["bees"].split()) for _ in range(9)).capitalize() + "." for _ in range(9)]
    (kb / "more" / "notes.txt").write_text(" ".join(sents) + "\n", encoding="utf-8")
    return kb


@pytest.fixture
def kb(tmp_path):
    return write_kb(tmp_path)


@pytest.fixture
def fake(monkeypatch):
    emb = FakeEmbedder()
    monkeypatch.setattr(chunkwise.embeddings, "embedder_from_args", lambda args, **kw: emb)
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: emb)
    return emb


# -- the generators -----------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["concepts", "heldout", "cloze", "heading", "keyphrase"])
def test_offline_methods_write_a_dataset_eval_reads_back_exactly(kb, tmp_path, method):
    out = tmp_path / "ds"
    qs = make_questions([kb], out, method=method, n=12, seed=3)
    ds = load_dataset(out)
    assert ds.problems == [] and len(ds.queries) == len(qs.questions) > 0
    rows = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    assert {r["kind"] for r in rows} == {method}
    for row in rows:  # every reference's content is the written text at its offsets (the loader checks it)
        for ref in row["references"]:
            text = (out / "docs" / ref["doc"]).read_text(encoding="utf-8")
            assert text[ref["start"] : ref["end"]] == ref["content"] != ""
    manifest = json.loads((out / "questions.json").read_text())
    assert manifest["method"] == method and manifest["seed"] == 3 and manifest["kept"] == len(rows)
    assert set(manifest["filters"]) == {"max_lexical_overlap", "lexical_ngram", "near_duplicate_jaccard"}
    assert sorted(p.relative_to(out / "docs").as_posix() for p in (out / "docs").rglob("*.*")) == [
        "bees.md",
        "bread.md",
        "lights.md",
        "more/notes.txt",
        "ships.md",
        "trains.md",
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ds")]  # no temporary folder left


def test_heldout_removes_the_query_sentence_and_cloze_excludes_it_from_the_reference(kb, tmp_path):
    docs = load_documents([kb])
    held = generate_questions(docs, method="heldout", n=10, seed=0)
    for q in held.questions:
        assert q.query in docs[q.doc].text  # taken from the original ...
        assert q.query not in held.texts[q.doc]  # ... and no longer in the written document
        assert len(held.texts[q.doc]) < len(docs[q.doc].text)
    cloze = generate_questions(docs, method="cloze", n=10, seed=0)
    for q in cloze.questions:
        text = cloze.texts[q.doc]
        assert text == docs[q.doc].text and q.query in text
        refs = q.spans()
        assert len(refs) == 2 and all(q.query not in text[a:b] for a, b in refs)
        assert text[refs[0][1] : refs[1][0]].strip() == q.query


def test_sampling_is_seeded_and_spread_over_documents_and_sections(kb):
    docs = load_documents([kb])
    a = generate_questions(docs, method="heldout", n=12, seed=7)
    b = generate_questions(docs, method="heldout", n=12, seed=7)
    c = generate_questions(docs, method="heldout", n=12, seed=8)
    assert [q.query for q in a.questions] == [q.query for q in b.questions]
    assert [q.query for q in a.questions] != [q.query for q in c.questions]
    per_doc: dict[str, int] = {}
    for q in a.questions:
        per_doc[q.doc] = per_doc.get(q.doc, 0) + 1
    # 12 questions over 6 documents: about two each (a rejected passage's turn goes to the next document),
    # not all from the first documents
    assert len(per_doc) == 6 and max(per_doc.values()) <= 3
    written = {d: make_document(t, d, Path(d)) for d, t in a.texts.items()}
    sections = {
        (q.doc, tuple(written[q.doc].section_at(q.start, q.start + 1))) for q in a.questions if q.doc.endswith(".md")
    }
    assert len(sections) == sum(v for d, v in per_doc.items() if d.endswith(".md"))  # no section twice


def test_filters_reject_copied_and_near_duplicate_questions():
    assert lexical_overlap("the queen lays eggs all summer", "The queen lays eggs all summer long.") == 1.0
    assert lexical_overlap("when does the colony breed", "The queen lays eggs all summer long.") == 0.0
    assert jaccard("Eggs queen summer", "summer, queen eggs!") == 1.0
    doc = "Alpha beta gamma delta epsilon zeta. " * 3
    text = "\n\n".join([doc] * 4)
    qs = generate_questions({"d.txt": text}, method="cloze", n=5, seed=0)
    # every passage repeats the same sentences: the held-out sentence is also in its neighbours (copied),
    # or the same question again (near-duplicate); both are counted, nothing is kept
    assert qs.questions == [] and set(qs.rejected) == {"trivially lexical"}
    with pytest.raises(ConfigError, match="no question could be generated .*trivially lexical"):
        write_question_set(qs, "unused")
    body = "Run the installer and follow the prompts until the tool reports that it is ready for use.\n"
    docs = {
        f"{d}.md": make_document(f"# Guide {d}\n\n## Install the tool\n\n{body}", f"{d}.md", Path(f"{d}.md"))
        for d in ("a", "b")
    }
    heads = generate_questions(docs, method="heading", n=5, seed=0)
    # "Install the tool" twice: the second is a near-duplicate (each "Guide" heading governs its subsection)
    assert sorted(q.query for q in heads.questions) == ["Guide a", "Guide b", "Install the tool"]
    assert heads.rejected == {"near-duplicate": 1}


def test_locate_exact_then_normalised_then_fuzzy():
    text = "Intro.  The Queen lays\n eggs all summer long. Then winter comes."
    assert locate("Then winter comes.", text) == (text.index("Then"), len(text))
    a, b = locate("the  queen LAYS eggs all summer long.", text)
    assert text[a:b] == "The Queen lays\n eggs all summer long."
    a, b = locate("The Queen lays eggs al summer long.", text)  # a typo: the fuzzy alignment
    assert text[a:b] == "The Queen lays\n eggs all summer long."
    assert locate("Bees dance to show the way to flowers.", text) is None
    assert locate("winter", text, 0, 20) is None  # only inside the given passage


def test_bad_arguments_are_one_line(kb, tmp_path, capsys):
    assert main(["questions", str(tmp_path / "missing"), "-o", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["questions", str(kb), "-o", str(tmp_path / "o"), "-n", "0"]) == 2
    assert "n must be an int in [1, inf), got 0" in capsys.readouterr().err
    assert main(["questions", str(kb), "-o", str(tmp_path / "o"), "-n", "3"]) == 0
    capsys.readouterr()
    assert main(["questions", str(kb), "-o", str(tmp_path / "o"), "-n", "3"]) == 2
    assert "already exists; choose another folder or pass --force" in capsys.readouterr().err
    assert main(["questions", str(kb), "-o", str(tmp_path / "o"), "-n", "4", "--force"]) == 0
    assert len(load_dataset(tmp_path / "o").queries) == 4


# -- the LLM generator, against the fake OpenAI-compatible server ------------------------------------


def _llm_answer(body: dict) -> str:
    """Per passage: a JSON question with its excerpt copied (even passages), re-cased and re-spaced (1 mod 4),
    an excerpt that is not in the passage (3 mod 4); passages of bees.md get prose, not JSON."""
    user = body["messages"][-1]["content"]
    passage = user.split('"""\n', 1)[1].split('\n"""', 1)[0]
    first = passage.split(". ")[0] + "."
    n = sum(map(ord, passage)) % 4
    if "'bees.md'" in user.split('"""')[0]:
        return "Here is a question about bees!"
    if n == 3:
        return json.dumps({"question": f"what about {n}?", "excerpt": "Nothing like this is in the text."})
    excerpt = first if n % 2 == 0 else "  ".join(first.upper().split())
    return (
        "```json\n"
        + json.dumps({"question": f"Which words open part {sum(map(ord, first))}?", "excerpt": excerpt})
        + "\n```"
    )


def test_llm_questions_locate_excerpts_reject_the_rest_and_are_cached(kb, tmp_path, fake_openai, capsys):
    fake_openai.answer = _llm_answer
    url = fake_openai.url
    argv = [
        "--cache-dir",
        str(tmp_path / "cache"),
        "questions",
        str(kb),
        "-o",
        str(tmp_path / "ds"),
        "-n",
        "8",
        "--llm-base-url",
        url,
        "--llm-model",
        "m",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    manifest = json.loads((tmp_path / "ds" / "questions.json").read_text())
    assert manifest["method"] == "llm" and manifest["model"] == "m" and "{passage}" in manifest["prompt"]
    assert manifest["rejected"]["answer not JSON with a question and an excerpt"] >= 1
    assert manifest["rejected"]["excerpt not found in the passage"] >= 1
    measures = manifest["measures"]  # the LLM's questions are measured as the offline ones are
    assert 0.0 <= measures["copied_share"] <= 1.0 and measures["median_words"] > 0
    ds = load_dataset(tmp_path / "ds")
    rows = [json.loads(line) for line in (tmp_path / "ds" / "queries.jsonl").read_text().splitlines()]
    assert (
        ds.problems == [] and len(rows) == manifest["kept"] > 0 and f"{manifest['kept']} questions (method llm)" in out
    )
    assert {r["style"] for r in rows} <= {"factoid", "why", "multi"} and len({r["style"] for r in rows}) > 1
    for r in rows:  # re-cased, re-spaced excerpts were aligned back onto the exact text
        ref = r["references"][0]
        assert ref["content"][0].isupper() and not ref["content"].isupper()
    sent = len(fake_openai.requests)
    assert main([*argv, "--force"]) == 0
    assert len(fake_openai.requests) == sent  # every answer came from the cache (keyed on the endpoint)
    assert (tmp_path / "ds" / "queries.jsonl").read_text().splitlines() == [json.dumps(r) for r in rows]


NOISY = """Lighthouse keepers

.. _beacon-notes: https://example.org/lights

Um {disfmarker} Keeper: So what do we need ? Yeah , okay .
The Fresnel lens of the Skerryvore tower focused the lamp into a beam seen thirty miles out at sea.
See `the registry <https://example.org/registry>`_ and :class:`LampHouse` for **foggy** nights.
Keepers trimmed the wicks every four hours , and the fog signal sounded a double blast each minute.

Granite blocks were dovetailed so that Atlantic swells could not loosen the masonry of the tower.
Supply boats brought paraffin , bread and letters from the shore station every fortnight in summer.
Um {vocalsound} yeah .
The last resident keepers left in 1982 when the light was automated and monitored from the mainland.
"""


def test_concepts_questions_copy_no_run_of_the_text_and_carry_no_markup(tmp_path):
    from chunkwise.evaluation.question_sampling import copies_corpus, has_markup, word_grams

    rng = random.Random(4)
    docs = {"lights.rst": NOISY}
    for topic, vocab in TOPICS.items():  # more passages, so the lighthouse words are distinctive
        ws = vocab.split()
        docs[f"{topic}.txt"] = " ".join(
            " ".join(rng.choice(ws) for _ in range(12)).capitalize() + "." for _ in range(8)
        )
    qs = generate_questions(docs, method="concepts", n=40, seed=1)
    grams = set().union(*(word_grams(t) for t in docs.values()))
    assert qs.questions and all(q.kind == "concepts" for q in qs.questions)
    for q in qs.questions:
        assert not copies_corpus(q.query, grams) and not has_markup(q.query), q.query
        for bad in ("disfmarker", "vocalsound", "http", "example.org", "LampHouse", "class", "::", "`"):
            assert bad not in q.query, q.query
        assert q.query.endswith("?") and q.start < q.end
    assert qs.manifest["measures"]["copied_share"] == 0.0 and qs.manifest["measures"]["markup_share"] == 0.0
    # the filler line gives no question: no question names only its words
    fillers = {"um", "yeah", "okay", "keeper", "need"}
    assert all(set(w.lower() for w in q.query[:-1].split()) - fillers for q in qs.questions)
    lights = [q for q in qs.questions if q.doc == "lights.rst"]
    assert lights and all(NOISY[q.start : q.end].strip() for q in lights)


def test_copied_runs_and_markup_are_measured_as_the_issue_counts_them():
    from chunkwise.evaluation.question_sampling import copies_corpus, has_markup, word_grams

    grams = word_grams("the lamp was trimmed every four hours by the keeper on duty at night")
    assert copies_corpus("Why the lamp was trimmed every four hours by the keeper?", grams)
    assert not copies_corpus("How often did keepers trim the lamp at night?", grams)
    for marked in ("see https://x.org", "Um {disfmarker} what", "use ``flask run``", "**bold** claim", ".. note::"):
        assert has_markup(marked), marked
    assert not has_markup("How does the Fresnel lens relate to the beam?")


def test_a_failing_endpoint_fails_the_run_in_one_line_and_writes_nothing(kb, tmp_path, fake_openai, capsys):
    fake_openai.always_status = 500
    url = fake_openai.url
    rc = main(
        [
            "--no-cache",
            "questions",
            str(kb),
            "-o",
            str(tmp_path / "ds"),
            "--llm-base-url",
            url,
            "--llm-model",
            "m",
            "--llm-retries",
            "0",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "500" in err
    assert list(tmp_path.iterdir()) == [kb]


# -- tune: when it cannot tell -------------------------------------------------------------------------


def test_two_identical_configurations_give_no_significant_winner_and_the_default_is_kept(dataset):
    ev = Evaluator(dataset, FakeEmbedder())
    # documents of about 20 words: caps of 40 and 41 words give the same chunks, so the same scores
    res = tune(ev, "fixed", {"max_tokens": [40, 41]}, metric="recall@5", fixed={"tokenizer": "words"})
    default = [r for r in res.rows if r.is_default]
    a, b = (r.result for r in res.rows if not r.is_default)
    assert len(default) == 1 and default[0].result.spec.strategy == "auto"
    assert np.array_equal(a.per_query["recall@5"], b.per_query["recall@5"])
    assert res.decision.verdict == NO_WINNER and res.chosen is default[0]
    cfg = res.best_config()
    assert cfg["strategy"] == "auto" and cfg["tuned"]["decision"]["rule"].startswith(KEEP_DEFAULT)


def _row(name: str, scores: list[float], tokens: float, hybrid: bool = True, default: bool = False) -> TuneRow:
    per = np.array(scores, dtype=float)
    result = RunResult(
        RunSpec("fixed", {"max_tokens": len(name)}, hybrid=hybrid, label=name),
        {"recall@5": per},
        {"recall@5": float(per.mean()), "tokens_retrieved@5": tokens},
        {"chunks": 10},
        [],
        {},
    )
    return TuneRow({}, float(per.mean()), result, search_score=float(per.mean()), is_default=default)


EVERY = np.arange(40)


def test_a_saturated_set_keeps_the_default_instead_of_the_cheapest():
    # every configuration answers every question: the cheap dense one used to be written
    default = _row("default", [1.0] * 40, 700, default=True)
    cheap_dense = _row("cheap", [1.0] * 40, 150, hybrid=False)
    other = _row("other", [1.0] * 39 + [0.0], 400)
    chosen, d = decide([cheap_dense, default, other], "recall@5", EVERY, EVERY, "queries", 200, 0, default=default)
    assert chosen is default and d.verdict == NO_WINNER and d.against == "the default"
    assert d.summary("recall@5").endswith(KEEP_DEFAULT)
    sat = saturation([default, cheap_dense, other], "recall@5")
    assert sat.saturated and sat.best == 1.0 and sat.answered_by_all == pytest.approx(39 / 40)
    assert sat.warning() is not None and "\n" not in sat.warning()


def test_only_a_configuration_significantly_better_than_the_default_replaces_it():
    default = _row("default", [1.0] * 20 + [0.0] * 20, 700, default=True)
    lead = _row("lead", [1.0] * 22 + [0.0] * 18, 300)  # two queries ahead: noise
    chosen, d = decide([lead, default], "recall@5", EVERY, EVERY, "queries", 200, 0, default=default)
    assert chosen is default and d.lo <= 0 and d.rule == KEEP_DEFAULT
    strong = _row("strong", [1.0] * 38 + [0.0] * 2, 300)
    chosen, d = decide([strong, lead, default], "recall@5", EVERY, EVERY, "queries", 200, 0, default=default)
    assert chosen is strong and d.verdict == SIGNIFICANT and d.lo > 0


def test_ties_among_better_configurations_go_to_hybrid_then_the_larger_context_never_to_cost():
    default = _row("default", [0.0] * 40, 700, default=True)
    dense = _row("dense", [1.0] * 40, 100, hybrid=False)
    small = _row("small", [1.0] * 39 + [0.0], 200)
    large = _row("large", [1.0] * 39 + [0.0], 900)
    chosen, d = decide([dense, small, large, default], "recall@5", EVERY, EVERY, "q", 200, 0, default=default)
    assert chosen is large and d.verdict == SIGNIFICANT and "priors" in d.rule
    # without a default row the winner is compared with the runner-up, and a tie also goes to the priors
    lead = _row("lead", [1.0] * 32 + [0.0] * 8, 300, hybrid=False)
    close = _row("close", [1.0] * 31 + [0.0] * 9, 900)
    chosen, d = decide([lead, close], "recall@5", EVERY, EVERY, "queries", 200, 0)
    assert d.verdict == NO_WINNER and chosen is close and "cheapest" not in d.rule


def test_prefer_cheaper_takes_the_cheapest_not_significantly_worse():
    default = _row("default", [1.0] * 40, 700, default=True)
    cheap = _row("cheap", [1.0] * 39 + [0.0], 150, hybrid=False)
    worse = _row("worse", [0.0] * 40, 10)
    chosen, d = decide(
        [default, cheap, worse], "recall@5", EVERY, EVERY, "q", 200, 0, default=default, prefer="cheaper"
    )
    assert chosen is cheap and "--prefer cheaper" in d.summary("recall@5")
    with pytest.raises(ConfigError, match="prefer"):
        decide([default], "recall@5", EVERY, EVERY, "q", default=default, prefer="cheapest")


def test_without_optuna_tune_samples_at_random_and_says_so_in_its_help(kb, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "without Optuna (pip install 'chunkwise[tune]') the N points are a seeded random sample" in help_text
    monkeypatch.setitem(__import__("sys").modules, "optuna", None)  # import optuna fails as if not installed
    make_questions([kb], tmp_path / "ds", n=30, seed=0)
    ds = load_dataset(tmp_path / "ds")
    said: list[str] = []
    space = SearchSpace(max_tokens=[16, 32, 64], overlap=[0, 4])
    run = search(
        Evaluator(ds, FakeEmbedder()), space, trials=6, fixed={"tokenizer": "words"}, seed=5, progress=said.append
    )
    assert run.sampler == "random" and len(run.rows) == 7
    assert any("optuna is not installed" in line and "at random" in line for line in said)


def test_holdout_split_is_seeded_disjoint_and_refused_when_too_small():
    search_idx, held, how = split_queries(40, 0.3, 0)
    assert len(held) == 12 and len(search_idx) == 28 and not set(held) & set(search_idx)
    assert np.array_equal(held, split_queries(40, 0.3, 0)[1]) and not np.array_equal(held, split_queries(40, 0.3, 1)[1])
    assert "held-out" in how
    s, h, how = split_queries(20, 0.3, 0)
    assert len(s) == len(h) == 20 and "too few" in how
    with pytest.raises(ConfigError, match="holdout"):
        split_queries(10, 1.5, 0)


def test_search_evaluates_distinct_points_seeded(kb, tmp_path):
    make_questions([kb], tmp_path / "ds", n=30, seed=0)
    ds = load_dataset(tmp_path / "ds")
    space = SearchSpace(max_tokens=[16, 32, 64], overlap=[0, 4])
    assert len(space.points()) == 3 * 3 * 2 * 4  # strategies x sizes x overlaps x (dense, zscore, rrf at 2 k)
    runs = [
        search(Evaluator(ds, FakeEmbedder()), space, trials=6, fixed={"tokenizer": "words"}, seed=5) for _ in range(2)
    ]
    names = [[r.result.name for r in res.rows] for res in runs]
    assert names[0] == names[1] and len(set(names[0])) == 7 and runs[0].sampler == "optuna-tpe"  # 6 + the default
    searched = [r for r in runs[0].rows if not r.is_default]
    assert {r.params["strategy"] for r in searched} <= {"fixed", "sentence", "recursive"} and len(searched) == 6
    cfg = runs[0].best_config()
    assert cfg["tuned"]["sampler"] == "optuna-tpe" and cfg["tuned"]["decision"]["queries"] == len(ds.queries)
    small = SearchSpace(strategies=["fixed"], max_tokens=[8], overlap=[0], retrieval=["dense", "zscore"])
    whole = search(Evaluator(ds, FakeEmbedder()), small, trials=6, fixed={"tokenizer": "words"})
    assert whole.sampler == "grid" and len(whole.rows) == 3


# -- the acceptance path: documents -> questions -> tune -> index --config -> ask, offline -------------


def test_folder_to_questions_to_tune_to_index_to_ask(kb, tmp_path, fake, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["questions", "kb", "-o", "ds", "-n", "30"]) == 0
    assert main(["tune", "ds", "--trials", "4", "--tokenizer", "words", "--sizes", "16,32", "-o", "best.json"]) == 0
    out = capsys.readouterr().out
    cfg = json.loads(Path("best.json").read_text())
    assert cfg["tuned"]["decision"]["verdict"] in (SIGNIFICANT, NO_WINNER) and cfg["tuned"]["decision"]["chosen"]
    assert cfg["tuned"]["decision"]["verdict"] in out
    assert main(["index", "kb", "--config", "best.json", "--db", "kb.db"]) == 0
    # the fake embedder's cosines are hashed-word noise: every passage goes to the reader (--min-score 0), and
    # the evidence check must then find the question's words in the bees passages and cite them
    assert (
        main(
            [
                "ask",
                "Which queen lays eggs in the hive in summer?",
                "--db",
                "kb.db",
                "--format",
                "json",
                "--min-score",
                "0",
            ]
        )
        == 0
    )
    answer = json.loads(capsys.readouterr().out)
    assert answer["extractive"] is True and answer["citations"], answer["hedge"]
    cited = [p for p in answer["passages"] if p["number"] in answer["citations"]]
    assert cited and all("bees" in p["source"] or "notes" in p["source"] for p in cited), cited


def test_tune_cli_says_no_significant_winner_and_writes_it(dataset, tmp_path, fake, capsys):
    best = tmp_path / "best.json"
    rc = main(
        [
            "-q",
            "tune",
            dataset.path,
            "--strategy",
            "fixed",
            "--tokenizer",
            "words",
            "--grid",
            "max_tokens=40,41",
            "-o",
            str(best),
        ]
    )
    captured = capsys.readouterr()
    assert rc == 0 and KEEP_DEFAULT in captured.out
    cfg = json.loads(best.read_text())
    decision = cfg["tuned"]["decision"]
    assert decision["verdict"] == NO_WINNER and cfg["strategy"] == "auto" and "too few" in decision["split"]
    qset = cfg["tuned"]["question_set"]
    assert qset["configurations"] == 3
    # a saturated set (the topics' few queries are found by every configuration) says so in one warning
    # line with its figures, and once more as the reason the default is kept; nowhere else
    warnings = [line for line in captured.err.splitlines() if "saturated" in line]
    assert qset["saturated"] and qset["best"] == 1.0 and len(warnings) == 1 and "saturated" in decision["rule"]
    assert "best recall@5 1.000; 100% of 4 questions answered by all 3 configurations" in warnings[0]
    assert (captured.out + captured.err).count("saturated") == 2 and "question set:" not in captured.out


def test_tune_says_one_line_per_trial(dataset, tmp_path, fake, capsys):
    """Each configuration tried is one progress line, its chunk count and scores in it."""
    rc = main(
        ["tune", dataset.path, "--strategy", "fixed", "--tokenizer", "words", "--grid", "max_tokens=40,41"]
        + ["-o", str(tmp_path / "best.json")]
    )
    err = capsys.readouterr().err
    assert rc == 0
    trials = [line for line in err.splitlines() if "tokenizer=words" in line]
    assert len(trials) == 3, err  # the default and the two of the grid
    assert all("chunks, recall@5 = " in line for line in trials)


def test_eval_report_shows_generated_questions_beside_their_excerpts(kb, tmp_path, fake, capsys):
    import html

    out = tmp_path / "ds"
    qs = make_questions([kb], out, method="cloze", n=8, seed=5)
    report = tmp_path / "report.html"
    spec = "fixed:max_tokens=32,overlap=0,tokenizer=words"
    assert main(["eval", str(out), "--run", spec, "--report", str(report), "--format", "json", "-q"]) == 0
    page = report.read_text(encoding="utf-8")
    assert "Generated questions (method cloze, seed 5)" in page
    # the excerpt column wraps inside the page width (a fixed layout, no nowrap cells, no side-scroller)
    table = page[page.index("Generated questions (method cloze") :]
    assert table.index("<table class=wrap>") < table.index("<th>excerpt</th>")
    assert (
        "table.wrap{table-layout:fixed;width:100%}" in page
        and "white-space:normal" in page.split("table.wrap td")[1][:80]
    )
    ds = load_dataset(out)
    for q in ds.queries:
        ref = q.references[0]
        excerpt = ds.documents[ref.doc].text[ref.start : ref.end][:400]
        row = f"<tr><td>{html.escape(q.text)}</td><td>{html.escape(excerpt)}"
        assert row in page, q.text
    data = json.loads(capsys.readouterr().out)
    assert data["generated"]["total"] == len(qs.questions) and data["generated"]["manifest"]["seed"] == 5


# -- tune: a search a user can wait for ------------------------------------------------------------------


def test_duration_parsing_and_the_trials_file_beside_the_config():
    from chunkwise.cli.tune_search import journal_path, parse_duration

    assert parse_duration("10m") == 600.0 and parse_duration("90s") == 90.0 and parse_duration("2") == 2.0
    assert parse_duration("1.5h") == 5400.0
    for bad in ("ten", "-1m", "0"):
        with pytest.raises(ConfigError, match="--time"):
            parse_duration(bad)
    assert journal_path("out/best.json") == "out/best.trials.jsonl"


def test_a_spent_time_budget_starts_no_trial_and_says_so(kb, tmp_path):
    make_questions([kb], tmp_path / "ds", n=30, seed=0)
    ds = load_dataset(tmp_path / "ds")
    lines: list[str] = []
    res = search(
        Evaluator(ds, FakeEmbedder()),
        SearchSpace(max_tokens=[16, 32]),
        trials=6,
        fixed={"tokenizer": "words"},
        time_budget=1e-9,
        progress=lines.append,
    )
    assert [r.is_default for r in res.rows] == [True]  # only the default, evaluated before the budget counts
    assert res.chosen is res.rows[0] and "time budget" in res.stopped and res.best_config()["tuned"]["stopped"]
    assert any("time budget" in line for line in lines)
    with pytest.raises(ConfigError, match="--time"):
        search(Evaluator(ds, FakeEmbedder()), trials=2, time_budget=0)


class SlowEmbedder(FakeEmbedder):
    """A FakeEmbedder that takes ``delay`` seconds per call: a trial long enough for the progress line."""

    def __init__(self, delay: float):
        super().__init__()
        self.delay = delay

    def embed(self, texts):
        import time

        time.sleep(self.delay)
        return super().embed(texts)


def test_progress_lines_come_while_a_trial_runs_and_every_text_is_embedded_once(kb, tmp_path):
    make_questions([kb], tmp_path / "ds", n=20, seed=0)
    ds = load_dataset(tmp_path / "ds")
    lines: list[str] = []
    emb = SlowEmbedder(0.05)
    res = search(
        Evaluator(ds, emb),
        SearchSpace(strategies=["fixed", "sentence"], max_tokens=[16, 32], overlap=[0], retrieval=["dense", "zscore"]),
        trials=8,
        fixed={"tokenizer": "words"},
        progress=lines.append,
        heartbeat=0.01,
    )
    assert lines[0].startswith("tune: the default configuration, then up to 8 trials")
    beats = [line for line in lines[1:] if line.startswith("tune: ")]
    assert beats and all("trials done" in b and "left" in b for b in beats)
    assert any("best so far" in b for b in beats)  # after the default's score is known
    sent = [t for call in emb.calls for t in call]
    assert len(res.rows) == 9 and len(sent) == len(set(sent))  # dense and hybrid share chunks: embedded once


@pytest.mark.slow  # a real tune subprocess, killed once it has saved a trial
@pytest.mark.timeout(300)
def test_a_killed_search_keeps_the_trials_it_finished(kb, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    make_questions([kb], tmp_path / "ds", n=20, seed=0)
    journal = tmp_path / "best.trials.jsonl"
    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_questions import SlowEmbedder
from chunkwise.evaluation import Evaluator, load_dataset
from chunkwise.evaluation.tune import SearchSpace, search
ds = load_dataset({str(tmp_path / "ds")!r})
search(Evaluator(ds, SlowEmbedder(0.3)), SearchSpace(max_tokens=[16, 32, 64]), trials=30,
       fixed={{"tokenizer": "words"}}, journal={str(journal)!r})
"""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(chunkwise.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)
    try:
        for _ in range(1200):  # up to 2 minutes for the default and two trials
            if journal.exists() and journal.read_text().count("\n") >= 3 or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    assert len(rows) >= 3 and rows[0]["default"] is True and rows[0]["config"]["strategy"] == "auto"
    n = len(load_dataset(tmp_path / "ds").queries)
    assert all(len(r["per_query"]["recall@5"]) == n and "recall@5" in r["scores"] for r in rows)


# -- questions: the documents are copied as they are ----------------------------------------------------


def test_questions_copies_the_documents_byte_identical_and_references_read_back(tmp_path, fake):
    docs = tmp_path / "src"
    (docs / "code").mkdir(parents=True)
    (docs / "notes.txt").write_bytes(
        b"The harbour  pilot boards\r\nthe ship at the outer buoy.  Tugs take over at the breakwater.\r\n\r\n"
        b"Cargo manifests are checked by customs officers before the hatches open.   \r\n"
    )
    (docs / "guide.rst").write_bytes(
        b"Harbour guide\n=============\n\nThe lock keeper opens the sea gates at high water and\ncloses them "
        b"when the tide turns.  Pilots wait in\nthe lee of the breakwater for the signal.\n"
    )
    (docs / "code" / "tide.py").write_bytes(
        b'def tide(hour):\n\t"""The tide height at an hour, in metres."""\n\treturn 2.5 + hour * 0.1  \n'
    )
    (docs / "readme.md").write_bytes(
        "# Pilots\n\nA pilot knows the channel’s sandbanks and the wrecks marked on the chart.\n".encode()
    )
    for method in ("concepts", "keyphrase"):
        out = tmp_path / f"ds-{method}"
        assert main(["-q", "questions", str(docs), "-o", str(out), "-n", "20", "--method", method, "--all-files"]) == 0
        for f in docs.rglob("*"):
            if f.is_file():
                copy = out / "docs" / f.relative_to(docs)
                assert copy.read_bytes() == f.read_bytes(), f.name
        ds = load_dataset(out)
        assert ds.problems == []
        for row in map(json.loads, (out / "queries.jsonl").read_text().splitlines()):
            for ref in row["references"]:
                assert ds.documents[ref["doc"]].text[ref["start"] : ref["end"]] == ref["content"]
        assert json.loads((out / "questions.json").read_text())["documents_copied"] == 4


def test_prefer_cheaper_is_asked_for_on_the_command_line(dataset, tmp_path, fake, capsys):
    # 12-word chunks answer every topics query, as the default does, retrieving fewer tokens
    argv = ["-q", "tune", dataset.path, "--strategy", "fixed", "--tokenizer", "words", "--grid", "max_tokens=12,40"]
    written = {}
    for prefer in ("quality", "cheaper"):
        assert main([*argv, "-o", str(tmp_path / f"{prefer}.json"), "--prefer", prefer]) == 0
        written[prefer] = json.loads((tmp_path / f"{prefer}.json").read_text())["tuned"]
        assert ("--prefer cheaper" in capsys.readouterr().out) == (prefer == "cheaper")
    assert written["cheaper"]["decision"]["rule"].startswith("--prefer cheaper")
    assert not written["quality"]["decision"]["rule"].startswith("--prefer cheaper")
    tokens = {p: w["scores"]["tokens_retrieved@5"] for p, w in written.items()}
    assert tokens["cheaper"] < tokens["quality"] and written["quality"]["decision"]["chosen"].startswith("auto")
