"""Dataset loading: both layouts, and bad input reported (never silently dropped)."""

from __future__ import annotations

import json

import pytest
from conftest import CHROMA
from eval_data import write_neutral

from chunkwise.errors import InputError
from chunkwise.evaluation.datasets import detect_layout, load_dataset


def write_chroma(root, corpora, rows):
    (root / "corpora").mkdir(parents=True)
    for name, text in corpora.items():
        (root / "corpora" / f"{name}.md").write_text(text, encoding="utf-8")
    import csv

    with (root / "questions_df.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "references", "corpus_id"])
        for q, refs, cid in rows:
            w.writerow([q, json.dumps(refs), cid])
    return root


def test_neutral_layout_ids_whole_document_and_boundaries(tmp_path):
    text_a = "# Cats\n\nCats purr. Cats sleep a lot.\n"
    ds = load_dataset(
        write_neutral(
            tmp_path,
            [
                {
                    "query": "what do cats do",
                    "references": [{"doc": "a.md", "start": 8, "end": 18, "content": "Cats purr."}],
                },
                {"id": "dogs", "query": "who barks", "references": [{"doc": "sub/b.txt"}]},
            ],
            boundaries=[{"doc": "a.md", "boundaries": [8, 19], "units": [[0, 6], [8, 18], [19, 36]]}],
        )
    )
    assert ds.layout == "neutral"
    assert sorted(ds.documents) == ["a.md", "sub/b.txt"]
    assert ds.documents["a.md"].text == text_a
    # markdown documents get their heading sections without any change to the text
    assert ds.documents["a.md"].sections and ds.documents["a.md"].sections[0].path == ("Cats",)
    q0, q1 = ds.queries
    assert (q0.references[0].start, q0.references[0].end) == (8, 18)
    assert q1.id == "dogs" and (q1.references[0].start, q1.references[0].end) == (0, len("Dogs bark loudly."))
    assert ds.boundaries["a.md"].boundaries == [8, 19]
    assert ds.boundaries["a.md"].units == [(0, 6), (8, 18), (19, 36)]
    assert not ds.problems


def test_bad_references_and_empty_queries_are_reported_not_silent(tmp_path):
    ds = load_dataset(
        write_neutral(
            tmp_path,
            [
                {
                    "query": "ok",
                    "references": [
                        {"doc": "a.md", "start": 8, "end": 18},
                        {"doc": "a.md", "start": 8, "end": 18, "content": "Dogs bark."},
                        {"doc": "a.md", "start": 30, "end": 999},
                        {"doc": "nope.md", "start": 0, "end": 1},
                    ],
                },
                {"query": "no refs", "references": []},
                {"query": "all bad", "references": [{"doc": "a.md", "start": 5, "end": 2}]},
            ],
        )
    )
    assert len(ds.queries) == 1 and len(ds.queries[0].references) == 1
    assert ds.skipped_references == 4
    assert ds.skipped_queries == 2
    text = "\n".join(ds.problems)
    assert "line 1 reference 1" in text and "content does not match" in text
    assert "outside 'a.md'" in text and "unknown document 'nope.md'" in text
    assert "line 2: query skipped: no references" in text
    assert "line 3: query skipped: no valid references" in text
    assert "skipped 4 reference(s) and 2 query(ies)" in ds.summary()


def test_chroma_layout_and_offset_mismatch(tmp_path):
    corpus = "Alpha beta gamma. Delta epsilon."
    root = write_chroma(
        tmp_path,
        {"c1": corpus},
        [
            ("q ok", [{"content": "Alpha beta", "start_index": 0, "end_index": 10}], "c1"),
            ("q shifted", [{"content": "Delta", "start_index": 17, "end_index": 22}], "c1"),
        ],
    )
    ds = load_dataset(root)
    assert ds.layout == "chroma" and list(ds.documents) == ["c1"]
    assert [q.text for q in ds.queries] == ["q ok"]
    assert ds.skipped_references == 1 and ds.skipped_queries == 1
    assert "the content occurs at [18:23]" in ds.problems[0]


def test_folder_in_neither_layout(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="corpora/ and questions_df.csv.*docs/ and queries.jsonl"):
        load_dataset(tmp_path)
    with pytest.raises(InputError, match="not found"):
        load_dataset(tmp_path / "missing")
    with pytest.raises(InputError, match="is a folder"):
        detect_layout(tmp_path / "notes.txt")


def test_bad_boundaries_file_names_the_line(tmp_path):
    write_neutral(
        tmp_path, [{"query": "q", "references": [{"doc": "a.md"}]}], boundaries=[{"doc": "a.md", "boundaries": [5000]}]
    )
    with pytest.raises(InputError, match="line 1: a boundary lies outside"):
        load_dataset(tmp_path)


@pytest.mark.chroma
def test_chroma_eval_data_loads_every_reference():
    ds = load_dataset(CHROMA)
    assert ds.layout == "chroma" and len(ds.documents) == 5
    assert len(ds.queries) == 472 and not ds.problems
    assert sum(len(q.references) for q in ds.queries) == 790
    sotu = ds.subset(["state_of_the_union"])
    assert len(sotu.queries) == 76 and list(sotu.documents) == ["state_of_the_union"]
