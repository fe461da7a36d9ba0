"""The evaluation runner and grid search, with the fake embedder (logic, not model quality)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import FakeEmbedder
from eval_data import TOPICS, write_neutral

from chunkwise.cli.options import load_config
from chunkwise.errors import ConfigError
from chunkwise.evaluation import Evaluator, evaluate, load_dataset, parse_grid, parse_run_spec, tune
from chunkwise.evaluation.runner import MemoEmbedder, RunSpec, split_top_level


def test_retrieval_is_exact_and_scores_make_sense(dataset):
    ev = Evaluator(dataset, FakeEmbedder(), k=5)
    res = ev.run(parse_run_spec("fixed:max_tokens=6,overlap=0,tokenizer=words"))
    # every query shares words with its answer only: the fake bag-of-words retriever finds them
    assert res.scores["doc_recall@5"] == 1.0 and res.scores["mrr"] == 1.0
    assert res.scores["recall@5"] > 0.9 and 0 < res.scores["iou@5"] <= res.scores["precision@5"] + 1e-9
    assert res.stats["chunks"] == sum(len(t.split()) // 6 + (len(t.split()) % 6 > 0) for t in TOPICS.values())
    assert res.scores["min_n"] >= 1
    # Pk / WindowDiff appear because boundaries.jsonl exists
    assert 0 <= res.scores["pk"] <= 1 and 0 <= res.scores["window_diff"] <= 1
    # the curve: tokens retrieved grow with n
    toks = [res.curve[n][0] for n in sorted(res.curve)]
    assert toks == sorted(toks) and res.curve[1][0] > 0


def test_same_run_twice_is_identical_and_embeds_nothing_new(dataset):
    fake = FakeEmbedder()
    ev = Evaluator(dataset, fake)
    spec = parse_run_spec("fixed:max_tokens=8,tokenizer=words")
    a = ev.run(spec)
    n = fake.texts_embedded
    b = ev.run(spec)
    assert fake.texts_embedded == n  # all from the memo
    assert b.stats["texts_embedded"] == 0
    for k, v in a.per_query.items():
        np.testing.assert_array_equal(v, b.per_query[k])


def test_top_chunk_is_the_argmax(dataset):
    fake = FakeEmbedder()
    ev = Evaluator(dataset, fake)
    spec = parse_run_spec("fixed:max_tokens=5,tokenizer=words")
    res = ev.run(spec)
    by_doc, _ = ev.chunk_all(spec)
    chunks = [c for d in ev.doc_ids for c in by_doc[d]]
    sims = fake.embed([q.text for q in dataset.queries]) @ fake.embed([c.text for c in chunks]).T
    for qi, q in enumerate(dataset.queries):
        best = chunks[int(np.argmax(sims[qi]))]
        ref = q.references[0]
        hit = best.source == ref.doc and best.start < ref.end and best.end > ref.start
        assert res.per_query["recall@5"][qi] > 0 or not hit


def test_memo_embedder_embeds_each_text_once():
    fake = FakeEmbedder()
    memo = MemoEmbedder(fake)
    v1 = memo.embed(["a b", "c d", "a b"])
    v2 = memo.embed(["c d", "e f"])
    assert fake.texts_embedded == 3
    np.testing.assert_array_equal(v1[1], v2[0])
    assert memo.tokenizer is fake.tokenizer and memo.model_id == fake.model_id
    calls = []
    original = fake.embed_tokens
    fake.embed_tokens = lambda text: calls.append(text) or original(text)
    (a, sa), (b, sb) = memo.embed_tokens("one two three"), memo.embed_tokens("one two three")
    assert calls == ["one two three"] and sa == sb == [(0, 3), (4, 7), (8, 13)]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, original("one two three")[0], atol=1e-3)


def test_context_and_late_options_reach_the_context_module(dataset):
    fake = FakeEmbedder()
    ev = Evaluator(dataset, fake)
    plain = ev.run(parse_run_spec("fixed:max_tokens=6,tokenizer=words"))
    ctx = ev.run(parse_run_spec("fixed:max_tokens=6,tokenizer=words,context=headings"))
    sent = [t for call in fake.calls for t in call]
    # headings context: the document title precedes every chunk text that is embedded
    assert any(t.startswith("cats\n\nCats purr") for t in sent)
    assert ctx.stats["chunks"] == plain.stats["chunks"]
    tokens_before = fake.texts_embedded
    windows = []
    original = fake.embed_tokens
    fake.embed_tokens = lambda text: windows.append(text) or original(text)
    late = ev.run(parse_run_spec("fixed:max_tokens=6,tokenizer=words,late=true"))
    assert late.spec.late and late.stats["chunks"] == plain.stats["chunks"]
    assert fake.texts_embedded == tokens_before  # late vectors come from token vectors, not embed()
    assert sorted(windows) == sorted(TOPICS.values())  # one window per (short) document
    with pytest.raises(ConfigError, match="^context must be one of .*, got .bogus.$"):
        ev.run(parse_run_spec("fixed:max_tokens=6,tokenizer=words,context=bogus"))


def test_compare_marks_significance(dataset):
    rep = evaluate(
        dataset,
        ["small=fixed:max_tokens=4,tokenizer=words", "big=fixed:max_tokens=30,tokenizer=words"],
        embedder=FakeEmbedder(),
        n_boot=200,
    )
    c = rep.comparison("small", "big", "iou@5")
    assert c is not None and c.lo <= c.diff <= c.hi
    assert {r.name for r in rep.runs} == {"small", "big"}
    with pytest.raises(ConfigError, match="same name"):
        evaluate(dataset, ["fixed:max_tokens=4", "fixed:max_tokens=4"], embedder=FakeEmbedder())


def test_run_spec_parsing():
    s = parse_run_spec('r=recursive:max_tokens=200,overlap=0,separators=["\\n\\n", ".", " ", ""],tokenizer=cl100k')
    assert s.label == "r" and s.strategy == "recursive"
    assert s.params == {"max_tokens": 200, "overlap": 0, "separators": ["\n\n", ".", " ", ""], "tokenizer": "cl100k"}
    assert parse_run_spec("fixed").params == {}
    assert split_top_level('a=1,b=[1,2],c="x,y"') == ["a=1", "b=[1,2]", 'c="x,y"']
    with pytest.raises(ConfigError, match="unknown strategy"):
        parse_run_spec("nope:max_tokens=3")
    with pytest.raises(ConfigError, match="key=value"):
        parse_run_spec("fixed:max_tokens")


def test_grid_parsing():
    assert parse_grid(["max_tokens=100,200", "overlap=0"]) == {"max_tokens": [100, 200], "overlap": [0]}
    assert parse_grid(['separators=[["\\n", " "], [" ", ""]]']) == {"separators": [["\n", " "], [" ", ""]]}
    with pytest.raises(ConfigError):
        parse_grid(["max_tokens"])


def test_tune_finds_best_and_writes_a_config_chunk_accepts(dataset, tmp_path):
    fake = FakeEmbedder()
    ev = Evaluator(dataset, fake, k=5)
    grid = {"max_tokens": [3, 6, 12, 40], "overlap": [0, 2]}
    # the grid's own mechanics: no default baseline (tests/test_questions.py tests the decision against it)
    result = tune(ev, "fixed", grid, metric="iou@5", fixed={"tokenizer": "words"}, baseline=False)
    scored = [r for r in result.rows if r.score is not None]
    assert len(result.rows) == 8 and len(scored) == 8
    assert [r.score for r in scored] == sorted((r.score for r in scored), reverse=True)
    assert result.best is scored[0]
    # each distinct text (chunk or query) went to the embedder at most once over the whole search
    sent = [t for call in fake.calls for t in call]
    assert len(sent) == len(set(sent))
    cfg = result.best_config(dataset="x", embedder=fake.model_id)
    path = tmp_path / "best.json"
    path.write_text(json.dumps(cfg))
    name, params, _ = load_config(str(path))
    assert (
        name == "fixed" and params["tokenizer"] == "words" and params["max_tokens"] == result.best.params["max_tokens"]
    )
    # the token budget excludes configurations from winning
    small = tune(
        ev, "fixed", grid, metric="recall@5", fixed={"tokenizer": "words"}, max_tokens_retrieved=20, baseline=False
    )
    assert small.best is None or small.best.result.scores["tokens_retrieved@5"] <= 20
    assert any(r.over_budget for r in small.rows)


def test_tune_rejects_unknown_parameters_and_reports_invalid_points(dataset):
    ev = Evaluator(dataset, FakeEmbedder())
    with pytest.raises(ConfigError, match="no parameter chunk_size; valid: max_tokens, min_tokens, overlap"):
        tune(ev, "fixed", {"chunk_size": [1, 2]})
    with pytest.raises(ConfigError, match="unknown metric"):
        tune(ev, "fixed", {"max_tokens": [5]}, metric="f1@5")
    res = tune(ev, "fixed", {"max_tokens": [5, 10], "overlap": [7]}, fixed={"tokenizer": "words"}, baseline=False)
    errors = [r for r in res.rows if r.error]
    assert len(errors) == 1 and "overlap (7) must be smaller than max_tokens (5)" in errors[0].error
    assert res.best.params["max_tokens"] == 10


def test_no_queries_is_a_config_error(dataset):
    empty = dataset.subset(limit=0)
    with pytest.raises(ConfigError, match="no queries"):
        Evaluator(empty, FakeEmbedder())
    assert RunSpec("fixed", {"max_tokens": 5}).name == "fixed max_tokens=5"


class ConstantEmbedder(FakeEmbedder):
    """Every text gets the same vector: dense retrieval is blind, only BM25 can find anything."""

    def embed(self, texts):
        texts = list(texts)
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 1.0
        return out


def test_hybrid_retrieval_uses_bm25(dataset):
    ev = Evaluator(dataset, ConstantEmbedder())
    dense = ev.run(parse_run_spec("fixed:max_tokens=5,tokenizer=words,hybrid=false"))
    hybrid = ev.run(parse_run_spec("fixed:max_tokens=5,tokenizer=words,hybrid=true,fusion=rrf"))
    assert not dense.spec.hybrid and dense.name.endswith("dense")
    assert hybrid.spec.hybrid and hybrid.name.endswith("fusion=rrf")
    assert hybrid.curve[1][1] > dense.curve[1][1]  # recall with one retrieved chunk
    assert hybrid.curve[1][1] > 0.5 and hybrid.scores["mrr"] == 1.0


def test_default_run_is_hybrid_zscore(dataset):
    """Evaluation retrieves as `search` does by default: BM25 + vectors, z-score fusion. With blind
    vectors only BM25 can find the answer, so the default run finds it and a dense run does not."""
    ev = Evaluator(dataset, ConstantEmbedder())
    default = ev.run(parse_run_spec("fixed:max_tokens=5,tokenizer=words"))
    dense = ev.run(parse_run_spec("fixed:max_tokens=5,tokenizer=words,hybrid=false"))
    assert (default.spec.hybrid, default.spec.fusion, default.spec.dense_weight) == (True, "zscore", 0.8)
    assert default.name == "fixed max_tokens=5 tokenizer=words"
    assert default.scores["mrr"] == 1.0 and default.curve[1][1] > dense.curve[1][1]
    assert default.spec.to_mapping()["run"] == {"hybrid": True, "fusion": "zscore", "dense_weight": 0.8}
    assert dense.spec.to_mapping()["run"] == {"hybrid": False}


def test_pooled_vectors_reuse_what_the_strategy_embedded(dataset):
    fake = FakeEmbedder()
    ev = Evaluator(dataset, fake)
    spec = parse_run_spec("semantic:max_tokens=12,tokenizer=words,vectors=pool")
    res = ev.run(spec)
    sent = [t for call in fake.calls for t in call]
    by_doc, _ = ev.chunk_all(spec)
    chunk_texts = {c.text for cs in by_doc.values() for c in cs if c.text.count(".") > 1}
    assert chunk_texts and not chunk_texts & set(sent)  # multi-sentence chunks were never embedded as a whole
    assert res.spec.to_mapping()["run"] == {"hybrid": True, "fusion": "zscore", "dense_weight": 0.8, "vectors": "pool"}
    with pytest.raises(ConfigError, match="vectors must be one of"):
        parse_run_spec("fixed:vectors=bogus")


def test_tune_requirements_keep_failing_points_from_winning(dataset):
    from chunkwise.evaluation.tune import parse_requirement

    ev = Evaluator(dataset, FakeEmbedder())
    grid = {"max_tokens": [3, 6, 40]}
    free = tune(ev, "fixed", grid, metric="recall@5", fixed={"tokenizer": "words"}, baseline=False)
    floor = free.best.result.scores["iou@5"] + 1e-9
    res = tune(
        ev, "fixed", grid, metric="recall@5", fixed={"tokenizer": "words"}, require=[f"iou@5>={floor}"], baseline=False
    )
    passing = [r for r in res.rows if r.score is not None and r.result.scores["iou@5"] >= floor]
    assert passing and res.best is max(passing, key=lambda r: r.score)
    assert res.best is not free.best and free.best.failed == []
    assert all(r.failed == [f"iou@5>={floor:g}"] for r in res.rows if r.score is not None and r not in passing)
    assert parse_requirement("iou@5 >= 0.072") == ("iou@5", ">=", 0.072)
    with pytest.raises(ConfigError, match="METRIC>=VALUE"):
        parse_requirement("iou@5 ~ 3")
    impossible = tune(ev, "fixed", grid, fixed={"tokenizer": "words"}, require=["recall@5>1.5"], baseline=False)
    with pytest.raises(ConfigError, match="that meets recall@5>1.5"):
        impossible.best_config()


def test_boundaries_without_units_use_the_sentence_splitter(tmp_path):
    text = TOPICS["ships.txt"] + " " + TOPICS["bread.txt"]
    cut = len(TOPICS["ships.txt"]) + 1
    root = write_neutral(
        tmp_path,
        [{"query": "yeast bread", "references": [{"doc": "d.txt"}]}],
        docs={"d.txt": text},
        boundaries=[{"doc": "d.txt", "boundaries": [cut]}],
    )
    ev = Evaluator(load_dataset(root), FakeEmbedder())
    perfect = ev.run(parse_run_spec("sentence:max_tokens=30,tokenizer=words"))
    one_chunk = ev.run(parse_run_spec("fixed:max_tokens=200,tokenizer=words"))
    assert one_chunk.scores["pk"] > 0  # misses the gold boundary
    assert perfect.boundary_scores["d.txt"]["window_diff"] <= one_chunk.boundary_scores["d.txt"]["window_diff"]


def test_zscore_fusion_arithmetic():
    from chunkwise.evaluation.runner import fuse_zscore, zscore

    z = zscore(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]))
    assert z[0] == pytest.approx([-1.2247449, 0.0, 1.2247449])
    assert (z[1] == 0).all()  # no spread: no information, not a division by zero
    dense = np.array([[0.9, 0.1, 0.5]])
    bm25 = np.array([[0.0, 10.0, 0.0]])
    assert fuse_zscore(dense, bm25, 1.0).argmax() == 0  # dense only
    assert fuse_zscore(dense, bm25, 0.0).argmax() == 1  # BM25 only
    fused = fuse_zscore(dense, bm25, 0.5)
    assert fused[0] == pytest.approx(0.5 * zscore(dense)[0] + 0.5 * zscore(bm25)[0])


def test_hybrid_fusion_options(dataset):
    ev = Evaluator(dataset, ConstantEmbedder())
    dense = ev.run(parse_run_spec("fixed:max_tokens=5,tokenizer=words,hybrid=false"))
    z = ev.run(parse_run_spec("fixed:max_tokens=5,tokenizer=words,hybrid=true,fusion=zscore"))
    assert z.name == "fixed max_tokens=5 tokenizer=words"  # the default retrieval adds nothing to the name
    assert z.spec.to_mapping()["run"] == {"hybrid": True, "fusion": "zscore", "dense_weight": 0.8}
    assert z.curve[1][1] > dense.curve[1][1] and z.scores["mrr"] == 1.0  # BM25 finds what dense cannot
    # all weight on the (blind) vectors: no better than dense retrieval
    blind = ev.run(parse_run_spec("fixed:max_tokens=5,tokenizer=words,hybrid=true,fusion=zscore,dense_weight=1"))
    assert blind.curve[1][1] <= dense.curve[1][1] + 1e-9
    assert blind.name.endswith("dense_weight=1.0")
    k10 = ev.run(parse_run_spec("fixed:max_tokens=5,tokenizer=words,hybrid=true,fusion=rrf,rrf_k=10"))
    assert k10.name.endswith("fusion=rrf rrf_k=10")
    assert k10.spec.to_mapping()["run"] == {"hybrid": True, "fusion": "rrf", "rrf_k": 10}
    assert k10.scores["mrr"] == 1.0
    # round trip through a config: the same spec comes back
    cfg = z.spec.to_mapping()
    from chunkwise.evaluation.runner import spec_from_params

    again = spec_from_params(cfg["strategy"], cfg["params"], run=cfg["run"])
    assert (again.fusion, again.dense_weight, again.hybrid) == ("zscore", 0.8, True)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("fixed:hybrid=true,fusion=bogus", "fusion must be one of"),
        ("fixed:hybrid=true,fusion=zscore,dense_weight=2", "dense_weight must be"),
        ("fixed:hybrid=true,rrf_k=-1", "rrf_k must be"),
        ("fixed:hybrid=true,rrf_k=1.5", "rrf_k must be"),
    ],
)
def test_bad_fusion_options(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_run_spec(spec)


def test_fusion_without_hybrid_is_an_error(dataset):
    ev = Evaluator(dataset, FakeEmbedder())
    with pytest.raises(ConfigError, match="fusion applies only with hybrid on"):
        ev.run(parse_run_spec("fixed:max_tokens=5,tokenizer=words,hybrid=false,fusion=rrf"))
