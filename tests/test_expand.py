"""Context beyond one chunk (retrieval/expand.py): windows around hits, merged, within a token budget, with
exact offsets; through an index over a MemoryStore, the CLI's ``search``/``ask --expand`` and ``eval``'s span
recall at a token budget."""

from __future__ import annotations

import json

import pytest
from conftest import FakeEmbedder, Paragraphs
from eval_data import write_neutral
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkwise.embeddings
from chunkwise.cli import main
from chunkwise.document import Document
from chunkwise.errors import ConfigError
from chunkwise.evaluation import Evaluator, load_dataset, parse_run_spec
from chunkwise.evaluation.metrics import set_span_scores
from chunkwise.retrieval import Index
from chunkwise.retrieval.expand import GAP, expand_chunks, store_chunks
from chunkwise.segmentation.tokens import get_tokenizer
from chunkwise.store.memory import MemoryStore
from chunkwise.strategies.base import Strategy

CL100K = get_tokenizer("cl100k")
WORDS = ["lamp", "lens", "keeper", "tide", "harbour", "rope", "signal", "storm", "light", "night"]


class GivenSpans(Strategy):
    """Chunks exactly where the test says: overlapping, touching or leaving gaps."""

    name = "given-spans"
    apply_rules = False

    def __init__(self, spans: tuple = (), **kw):
        super().__init__(**kw)
        self.spans = spans

    def split(self, doc, start, end, tokenizer):
        return [(a, b) for a, b in self.spans if start <= a < b <= end]


def index_of(docs: list[Document], strategy: Strategy) -> Index:
    index = Index(store=MemoryStore(), embedder=FakeEmbedder())
    index.add(docs, strategy=strategy, progress=False)
    return index


@st.composite
def chunked_text(draw):
    words = draw(st.lists(st.sampled_from(WORDS), min_size=4, max_size=60))
    seps = draw(st.lists(st.sampled_from([" ", " ", "\n", "\n\n", ", "]), min_size=len(words), max_size=len(words)))
    text = "".join(w + s for w, s in zip(words, seps)).rstrip()
    starts = sorted(draw(st.sets(st.integers(0, len(text) - 1), min_size=1, max_size=12)))
    spans = []
    for i, a in enumerate(starts):
        nxt = starts[i + 1] if i + 1 < len(starts) else len(text)
        b = min(len(text), max(a + 1, nxt + draw(st.integers(-3, 12))))  # gap, touching or overlapping
        spans.append((a, b))
    return text, tuple(spans)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=chunked_text(),
    mode=st.sampled_from(
        [None, "neighbors:0", "neighbors:1", "neighbors:3", "section", "parent:8", "parent:40", "auto"]
    ),
    budget=st.one_of(st.none(), st.integers(1, 120)),
    k=st.integers(1, 8),
    query=st.sampled_from(WORDS),
)
def test_passages_are_exact_disjoint_and_within_budget(data, mode, budget, k, query):
    text, spans = data
    doc = Document(text, source="doc.txt")
    index = index_of([doc], GivenSpans(spans=spans, max_tokens=100_000, tokenizer="words"))
    results = index.search(query, k=k, hybrid=False)
    passages = index.expand(results, mode, budget)
    if budget is not None:
        assert sum(p.token_count for p in passages) <= budget
    covered: list[tuple[int, int]] = []
    seen_hits: list[int] = []
    for p in passages:
        assert p.token_count == CL100K.count(p.text) and p.tokenizer == "cl100k"
        assert p.text == GAP.join(text[a:b] for a, b in p.pieces)  # exact slices of the document
        assert (p.start, p.end) == (p.pieces[0][0], p.pieces[-1][1])
        if len(p.pieces) == 1:
            assert p.text == text[p.start : p.end]
        for r in p.hits:  # every hit it names lies inside it
            hit = results[r - 1]
            assert any(a <= hit.start and hit.end <= b for a, b in p.pieces)
        covered.extend(p.pieces)
        seen_hits.extend(p.hits)
    covered.sort()
    assert all(b <= a2 for (_, b), (a2, _) in zip(covered, covered[1:]))  # no character twice
    assert len(seen_hits) == len(set(seen_hits))
    assert [p.hits[0] for p in passages] == sorted(p.hits[0] for p in passages)  # rank order
    if budget is None:
        assert sorted(seen_hits) == list(range(1, len(results) + 1))  # no budget: every hit is handed on


PARAS = [
    "Alpha keeps the lamp.",
    "Bravo trims the wick.",
    "Charlie rows the boat.",
    "Delta ties the rope.",
    "Echo reads the tide.",
    "Foxtrot paints the hull.",
]


def test_adjacent_hits_merge_into_one_passage_and_overlap_is_stitched_once():
    text = "\n\n".join(PARAS)
    doc = Document(text, source="crew.txt")
    index = index_of([doc], Paragraphs(max_tokens=100, tokenizer="words"))
    results = index.search("Charlie rows boat Delta ties rope", k=2, hybrid=False)
    assert sorted(r.chunk_index for r in results) == [2, 3]
    (passage,) = index.expand(results)  # no mode: the hits alone, but the two neighbours become one passage
    assert passage.hits == [1, 2] and passage.chunks == [2, 3]
    # the chunks leave the blank line between paragraphs out: it is not stored, so a gap stands there
    assert passage.text == "Charlie rows the boat.\nDelta ties the rope." and passage.pieces == [
        (text.index("Charlie"), text.index("Charlie") + 22),
        (text.index("Delta"), text.index("Delta") + 20),
    ]
    wide = index.expand(results, "neighbors:1")
    assert [(p.chunks, p.hits) for p in wide] == [([1, 2, 3, 4], [1, 2])]
    # overlapping chunks: the shared words appear once
    spans = ((0, 30), (20, 50), (40, len(text)))
    index = index_of([doc], GivenSpans(spans=spans, max_tokens=100_000, tokenizer="words"))
    hits = index.search("Alpha lamp Bravo Charlie", k=3, hybrid=False)
    (whole,) = index.expand(hits)
    assert whole.text == text and whole.pieces == [(0, len(text))] and whole.hits == [1, 2, 3]


def test_budget_shrinks_the_window_then_leaves_hits_out():
    text = "\n\n".join(PARAS)
    doc = Document(text, source="crew.txt")
    index = index_of([doc], Paragraphs(max_tokens=100, tokenizer="words"))
    results = index.search("Charlie rows the boat", k=1, hybrid=False)
    full = index.expand(results, "neighbors:2")[0]
    assert full.chunks == [0, 1, 2, 3, 4]
    tight = index.expand(results, "neighbors:2", budget=full.token_count - 1)[0]
    assert tight.chunks == [1, 2, 3] and tight.token_count <= full.token_count - 1
    alone = CL100K.count("Charlie rows the boat.")
    assert [p.chunks for p in index.expand(results, "neighbors:2", budget=alone)] == [[2]]
    assert index.expand(results, "neighbors:2", budget=alone - 1) == []  # not even the hit fits


MANUAL = """# Lamp manual

Read this first.

## Install

Mount the lamp on the wall.

Connect the red wire.

## Clean

Wipe the lens with a cloth.

Polish the brass ring.
"""


def test_section_mode_hands_on_the_hits_whole_section(tmp_path):
    path = tmp_path / "manual.md"
    path.write_text(MANUAL, encoding="utf-8")
    index = Index(store=MemoryStore(), embedder=FakeEmbedder())
    index.add([path], strategy=Paragraphs(max_tokens=100, tokenizer="words"), progress=False)
    results = index.search("connect red wire", k=1, hybrid=False)
    assert "red wire" in results[0].text
    (passage,) = index.expand(results, "section")
    doc_text = MANUAL
    # the Install section: its heading and both paragraphs, nothing of Clean
    assert passage.start == doc_text.index("## Install") and passage.end == doc_text.index("wire.") + 5
    assert "Mount the lamp" in passage.text and "Wipe" not in passage.text and "Read this" not in passage.text
    assert passage.section == ["Lamp manual", "Install"]
    assert all(doc_text[a:b] in passage.text for a, b in passage.pieces)


def test_a_hit_in_the_introduction_gets_the_introduction_not_the_page(tmp_path):
    """The introduction's section path is the title alone, which every chunk shares: its section is the
    introduction (title and first paragraph), not the whole manual."""
    path = tmp_path / "manual.md"
    path.write_text(MANUAL, encoding="utf-8")
    index = Index(store=MemoryStore(), embedder=FakeEmbedder())
    index.add([path], strategy=Paragraphs(max_tokens=100, tokenizer="words"), progress=False)
    results = index.search("read this first", k=1, hybrid=False)
    assert results[0].section == ["Lamp manual"]
    (passage,) = index.expand(results, "section")
    assert "Read this first" in passage.text and "Mount" not in passage.text and "Wipe" not in passage.text
    assert passage.end <= MANUAL.index("## Install") and all(MANUAL[a:b] in passage.text for a, b in passage.pieces)


def test_bad_modes_and_budgets_are_one_clear_error():
    with pytest.raises(ConfigError, match="expand must be one of none, neighbors:N, section, parent:TOKENS"):
        expand_chunks([], lambda d: [], "window")
    with pytest.raises(ConfigError, match="budget must be a positive number of tokens"):
        expand_chunks([], lambda d: [], "section", budget=0)


def _indexed_kb(tmp_path, monkeypatch, name: str, text: str):
    """A folder ``kb`` holding ``name`` indexed from the command line with a fake embedder, as the cwd."""
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: FakeEmbedder())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / name).write_text(text, encoding="utf-8")
    assert main(["index", "kb", "--strategy", "recursive", "--max-tokens", "8", "--tokenizer", "words", "-q"]) == 0
    return tmp_path


@pytest.fixture
def kb(tmp_path, monkeypatch):
    return _indexed_kb(tmp_path, monkeypatch, "manual.md", MANUAL)


def test_cli_search_expand_prints_passages_with_their_offsets(kb, capsys):
    capsys.readouterr()
    assert main(["search", "connect red wire", "-k", "1", "--dense", "--expand", "section", "--format", "jsonl"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["source"] == "kb/manual.md" and row["hits"] == [1] and row["tokenizer"] == "cl100k"
    assert row["start"] == MANUAL.index("## Install") and "Mount the lamp" in row["text"]
    assert all(MANUAL[a:b] in row["text"] for a, b in row["pieces"])
    assert main(["search", "connect red wire", "-k", "1", "--dense", "--expand", "section", "--budget", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[1] ") and "chars" in out and "tokens (cl100k)" in out
    assert main(["search", "wire", "--expand", "window"]) == 2
    assert "expand must be one of none, neighbors:N, section, parent:TOKENS" in capsys.readouterr().err


def test_cli_ask_expand_cites_the_expanded_passage(kb, capsys):
    capsys.readouterr()
    assert (
        main(
            [
                "ask",
                "connect the red wire",
                "-k",
                "1",
                "--dense",
                "--expand",
                "section",
                "--format",
                "json",
                "--min-score",
                "0",
            ]
        )
        == 0
    )
    answer = json.loads(capsys.readouterr().out)
    (passage,) = answer["passages"]
    assert passage["start"] == MANUAL.index("## Install") and "Mount the lamp" in passage["text"]
    assert answer["citations"] == [1] and answer["given"] == [1]


def test_eval_reports_span_recall_at_token_budgets(dataset, tmp_path):
    ev = Evaluator(dataset, FakeEmbedder(), k=5)
    spec = parse_run_spec("fixed:max_tokens=4,overlap=0,tokenizer=words")
    plain = ev.run(spec)
    # the whole corpus is under 1k tokens: every chunk reaches the reader, so each gold span is held but for
    # the spaces no chunk holds (between two chunks)
    every = [(c.source, c.start, c.end) for cs in ev.chunk_all(spec)[0].values() for c in cs]
    held = [set_span_scores([(r.doc, r.start, r.end) for r in q.references], every)[1] for q in dataset.queries]
    assert plain.scores["span_recall@1k"] == plain.scores["span_recall@4k"] == pytest.approx(sum(held) / len(held))
    assert 0.9 < plain.scores["span_recall@1k"] < 1
    tiny = ev.run(parse_run_spec("fixed:max_tokens=4,overlap=0,tokenizer=words,budget=1"))
    assert tiny.scores["span_recall@1"] == 0.0  # no 4-word chunk is a single cl100k token
    # two-word chunks, 12 tokens: the chunks of a long gold sentence share few words with the question, another
    # document's many: without expansion the budget fills with those; neighbors:1 hands the reader the chunks on
    # each side of the top hit, which hold more of the sentence
    sentence = "Anchors hold boats steady through long winter storms on the northern sea."
    docs = {
        "sea.txt": f"Gulls circle the harbour at noon. {sentence} Nets dry on the quay.",
        "toys.txt": "Toy boats float. Boats hold toys. Anchors of toys. Hold the boats. Boats hold anchors.",
    }
    start = docs["sea.txt"].index(sentence)
    refs = [{"doc": "sea.txt", "start": start, "end": start + len(sentence)}]
    sea = load_dataset(write_neutral(tmp_path / "sea", [{"query": "anchors hold boats", "references": refs}], docs))
    one = Evaluator(sea, FakeEmbedder(), k=1)
    small = one.run(parse_run_spec("fixed:max_tokens=2,overlap=0,tokenizer=words,budget=12,expand=none"))
    wide = one.run(parse_run_spec("fixed:max_tokens=2,overlap=0,tokenizer=words,budget=12,expand=neighbors:1"))
    assert 0 < small.scores["span_recall@12"] < wide.scores["span_recall@12"] < 1
    # unset, a budget widens by document kind: these plain-text documents get neighbors:1
    by_kind = one.run(parse_run_spec("fixed:max_tokens=2,overlap=0,tokenizer=words,budget=12"))
    assert by_kind.per_query["span_recall@12"].tolist() == wide.per_query["span_recall@12"].tolist()


def test_eval_cli_expand_flag(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: FakeEmbedder())
    out = tmp_path / "r.json"
    code = main(
        [
            "eval",
            dataset.path,
            "--strategy",
            "fixed",
            "--max-tokens",
            "4",
            "--tokenizer",
            "words",
            "--expand",
            "neighbors:1",
            "-o",
            str(out),
            "-q",
        ]
    )
    assert code == 0, capsys.readouterr().err
    (run,) = json.loads(out.read_text())["runs"]
    assert "expand=neighbors:1" in run["name"]
    # the whole corpus fits 1k tokens: all but the spaces between chunks reaches the reader at every budget
    assert 0.9 < run["scores"]["span_recall@1k"] == run["scores"]["span_recall@2k"] == run["scores"]["span_recall@4k"]
    assert main(["eval", dataset.path, "--expand", "neighbours"]) == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.lists(chunked_text(), min_size=1, max_size=3),
    n=st.integers(0, 3),
    budget=st.one_of(st.none(), st.integers(1, 120)),
    picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=8),
)
def test_neighbour_windows_read_by_index_equal_the_whole_document_reader(data, n, budget, picks):
    """``neighbors:N`` reads only the windows' chunks from the store (``chunks_at``), and hands the reader
    exactly the passages that reading every chunk of each hit's document gives."""
    docs = [Document(text, source=f"doc{i}.txt") for i, (text, _) in enumerate(data)]
    store = MemoryStore()
    for doc, (_, spans) in zip(docs, data):
        cs = GivenSpans(spans=spans, max_tokens=100_000, tokenizer="words").chunk(doc)
        store.upsert([(doc, cs, FakeEmbedder().embed([c.text for c in cs]))], "fake")
    chunks = [row.chunk for row in store.rows.values()]
    hits = list(dict.fromkeys(chunks[p % len(chunks)].id for p in picks))
    by_id = {c.id: c for c in chunks}
    ranked = [by_id[i] for i in hits]

    def whole(doc_id):
        return [c for c in chunks if c.doc_id == doc_id]

    asked: list[dict] = []
    reader = store_chunks(store)
    real = store.chunks_at
    store.chunks_at = lambda wanted: asked.append({d: set(ix) for d, ix in wanted.items()}) or real(wanted)  # type: ignore[method-assign]
    got = expand_chunks(ranked, reader, f"neighbors:{n}", budget)
    want = expand_chunks(ranked, whole, f"neighbors:{n}", budget)
    assert [p.to_dict() for p in got] == [p.to_dict() for p in want]
    for d, ix in asked[0].items():  # the first read: only indexes within N of a hit of the same document
        assert all(any(abs(i - h.index) <= n for h in ranked if h.doc_id == d) for i in ix)
    # a later read only for chunks inside a passage (windows joined by overlapping characters)
    inside = {(p.doc_id, i) for p in got for i in p.chunks}
    assert all((d, i) in inside for later in asked[1:] for d, ix in later.items() for i in ix)
    assert reader.cache == {}  # no document was read whole


def test_neighbours_on_milvus_lite_read_only_the_window(tmp_path):
    """A hit in a long document: ``neighbors:1`` reads its two neighbours from Milvus Lite, not the whole
    document, and the passage is the one the whole document gives."""
    text = "\n\n".join(f"Paragraph {i} keeps word{i} and lamp{i}." for i in range(40))
    doc = Document(text, source="long.txt")
    with Index(str(tmp_path / "kb.db"), embedder=FakeEmbedder(), cache=False) as index:
        index.add([doc], strategy=Paragraphs(max_tokens=100, tokenizer="words"), progress=False)
        assert index.count() == 40
        results = index.search("Paragraph 17 keeps word17 and lamp17", k=1, hybrid=False)
        assert results[0].chunk_index == 17
        client = index.store.connect()
        rows_read = []
        for name in ("get", "query"):
            method = getattr(client, name)

            def counted(*args, _method=method, **kwargs):
                out = _method(*args, **kwargs)
                if "text" in (kwargs.get("output_fields") or []):  # whole chunks, not ids or a count
                    rows_read.append(len(out))
                return out

            setattr(client, name, counted)
        (passage,) = index.expand(results, "neighbors:1")
        assert passage.chunks == [16, 17, 18]
        assert passage.text == GAP.join(text[a:b] for a, b in passage.pieces)
        assert sum(rows_read) == 3  # the window, not the document's 40 chunks
        whole = [h.chunk for h in index.store.fetch(sorted(index.store.chunk_ids([doc.id])[doc.id]))]
        (same,) = expand_chunks(results, lambda d: whole, "neighbors:1")
        assert same.to_dict() == passage.to_dict()


def test_auto_widens_text_without_layout_and_leaves_sections_alone():
    """``auto``: a hit in plain text gets its neighbours, a hit under a heading stays alone; through a budget
    with no mode, ``ask``/``search`` get the same (``reader_expand``)."""
    from chunkwise.pipeline.config import reader_expand
    from chunkwise.retrieval.expand import by_kind

    plain = Document("Ropes coil. Tides turn. Lamps burn at night. Keepers watch. Storms pass.", source="log.txt")
    md = "# Guide\n\n## Lamps\n\nLamps burn oil.\n\n## Tides\n\nTides turn twice a day.\n\n## Ropes\n\nRopes coil.\n"
    marked = Document(md, source="guide.md")
    with Index(store=MemoryStore(), embedder=FakeEmbedder()) as index:
        index.add([plain, marked], strategy="markdown", params={"max_tokens": 4, "tokenizer": "words"}, progress=False)
        for source, query in (("log.txt", "lamps burn night"), ("guide.md", "lamps burn oil")):
            [hit] = [h for h in index.search(query, k=8, hybrid=False) if h.source == source][:1]
            [alone] = index.expand([hit], None, 10_000)
            [auto] = index.expand([hit], "auto", 10_000)
            [wide] = index.expand([hit], "neighbors:1", 10_000)
            assert alone.chunks == [hit.chunk_index]
            if source == "log.txt":
                assert by_kind(hit.chunk) == ("neighbors", 1) and auto.chunks == wide.chunks != alone.chunks
            else:
                assert by_kind(hit.chunk) is None and auto.chunks == alone.chunks != wide.chunks
            text = plain.text if source == "log.txt" else md
            assert GAP.join(text[a:b] for a, b in auto.pieces) == auto.text  # exact provenance
    assert reader_expand(None, 2000) == "auto" and reader_expand(None, None) is None
    assert reader_expand("none", 2000) == "none" and reader_expand("section", None) == "section"


PLAIN = " ".join(f"Line {i} says the lamp needs care number {i}." for i in range(40))


@pytest.fixture
def plain_kb(tmp_path, monkeypatch):
    """Plain text without headings or pages: what a budget without a mode widens by one chunk each side."""
    return _indexed_kb(tmp_path, monkeypatch, "notes.txt", PLAIN)


def _ask_passage(capsys, *flags: str) -> dict:
    capsys.readouterr()
    argv = ["ask", "care number 17", "-k", "1", "--dense", "--format", "json", "--min-score", "0", *flags]
    assert main(argv) == 0
    (passage,) = json.loads(capsys.readouterr().out)["passages"]
    return passage


def test_cli_ask_expand_none_keeps_the_hit_alone_under_a_budget(plain_kb, capsys):
    widened = _ask_passage(capsys, "--budget", "2k")  # by document kind: neighbors:1 in plain text
    alone = _ask_passage(capsys, "--budget", "2k", "--expand", "none")
    assert widened["end"] - widened["start"] > alone["end"] - alone["start"]
    assert PLAIN[alone["start"] : alone["end"]] == alone["text"]
    (plain_kb / "cfg.json").write_text(json.dumps({"run": {"budget": 2000}}), encoding="utf-8")
    assert _ask_passage(capsys, "--config", "cfg.json", "--expand", "none")["end"] == alone["end"]


def test_cli_budget_none_lifts_a_config_files_budget(plain_kb, capsys):
    (plain_kb / "cfg.json").write_text(json.dumps({"run": {"budget": 2000}}), encoding="utf-8")
    capsys.readouterr()
    assert main(["search", "care number 17", "-k", "1", "--dense", "--config", "cfg.json"]) == 0
    assert capsys.readouterr().out.startswith("[1] ")  # passages within the file's budget
    assert main(["search", "care number 17", "-k", "1", "--dense", "--config", "cfg.json", "--budget", "none"]) == 0
    assert capsys.readouterr().out.startswith("#1 ")  # the hits themselves: no budget, no expansion
