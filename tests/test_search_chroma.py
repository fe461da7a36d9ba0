"""Acceptance: index Chroma's evaluation corpora with the real MiniLM embedder and find the reference excerpts.

Two of the five corpora (state_of_the_union and chatlogs, the ones the chosen questions are about) are
indexed once for the module, from a temporary copy so one file can be edited. The full five-corpus run is
``benchmarks/bench_index.py``.
"""

from __future__ import annotations

import csv
import json
import shutil

import pytest
from conftest import CHROMA

pytestmark = [
    pytest.mark.slow,
    pytest.mark.chroma,
    pytest.mark.timeout(900),  # whole Chroma corpora indexed with the real model on a loaded 2-core machine
]

CORPORA = ("state_of_the_union", "chatlogs")
QUESTIONS = (
    "What does President Biden propose to cap the monthly cost of insulin at for every American who needs it?",
    "What days is the Viktor Wynd Museum closed?",
    "What is the CarbFix project in Reykjavik about?",
)


def questions() -> list[dict]:
    with open(CHROMA / "questions_df.csv", encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["corpus_id"] in CORPORA]
    for r in rows:
        r["references"] = json.loads(r["references"])
    return rows


def found(hits, q) -> bool:
    """Every reference excerpt overlaps a retrieved chunk of its corpus (offsets are exact, so overlap is
    checked on character spans, and the excerpt text is checked to be in that chunk's document span)."""
    for ref in q["references"]:
        if not any(
            h.source.endswith(f"{q['corpus_id']}.md") and h.start < ref["end_index"] and ref["start_index"] < h.end
            for h in hits
        ):
            return False
    return True


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from chunkwise.embeddings import get_embedder
    from chunkwise.retrieval import Index

    tmp = tmp_path_factory.mktemp("chroma")
    folder = tmp / "corpora"
    folder.mkdir()
    for name in CORPORA:
        shutil.copy(CHROMA / "corpora" / f"{name}.md", folder / f"{name}.md")
    embedder = get_embedder("minilm", cache=True, cache_dir=tmp / "cache")
    index = Index(tmp / "chroma.db", embedder=embedder)
    report = index.add([str(folder)])
    yield index, embedder, folder, report
    index.close()


def test_expected_excerpts_are_in_the_top_5(built):
    index, _, _, report = built
    assert report.indexed == 2 and not report.failed and report.chunks == index.count() > 50
    by_question = {q["question"]: q for q in questions()}
    for text in QUESTIONS:
        q = by_question[text]
        hits = index.search(text, k=5)
        assert found(hits, q), (text, [(h.source, h.start, h.end) for h in hits])
        for ref in q["references"]:  # the reference is an exact slice of what the index returned
            hit = next(h for h in hits if h.start <= ref["start_index"] and ref["end_index"] <= h.end)
            assert ref["content"] in hit.text
    hybrid = index.search(QUESTIONS[1], k=5, hybrid=True)
    assert found(hybrid, by_question[QUESTIONS[1]])


def test_recall_over_all_questions_of_these_corpora(built):
    index = built[0]
    qs = questions()
    hit = sum(found(index.search(q["question"], k=5), q) for q in qs)
    # measured: 126 of 132 (95%) with the default recursive strategy, 256 MiniLM tokens
    assert hit / len(qs) >= 0.85, f"{hit}/{len(qs)}"


def test_rerun_embeds_nothing_and_an_edit_replaces_only_that_file(built):
    index, embedder, folder, _ = built
    before = {r["id"]: (r["source"], r["text"]) for r in index.store.scan_chunks(["id", "source", "text"])}
    count = index.count()
    start = embedder.texts_embedded
    report = index.add([str(folder)])
    assert (report.skipped, report.indexed, report.chunks) == (2, 0, 0)
    assert embedder.texts_embedded == start and index.count() == count

    path = folder / "chatlogs.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n\nThe museum cat is called Viktor.\n", encoding="utf-8")
    report = index.add([str(folder)])
    assert (report.indexed, report.skipped) == (1, 1)
    after = {r["id"]: (r["source"], r["text"]) for r in index.store.scan_chunks(["id", "source", "text"])}
    sotu = {i: v for i, v in before.items() if v[0].endswith("state_of_the_union.md")}
    assert {i: v for i, v in after.items() if v[0].endswith("state_of_the_union.md")} == sotu
    from chunkwise import load
    from chunkwise.strategies import get_strategy

    fresh = get_strategy("auto").chunk(load(path))  # the index default
    assert {i: v[1] for i, v in after.items() if v[0] == str(path)} == {c.id: c.text for c in fresh}
    # the embedding cache means only the changed chunk texts reached the model
    assert embedder.texts_embedded - start <= 2
    assert index.search("What is the museum cat called?", k=5)[0].text.endswith("The museum cat is called Viktor.")
