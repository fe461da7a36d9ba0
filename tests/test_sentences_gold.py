"""Boundary F1 of the sentence back-ends on the hand-written gold set in tests/data/sentences/.

The gold documents are lists of sentences; the text is their join, so the gold boundaries are exact
offsets. A predicted boundary is the end offset of every span but the last; precision, recall and F1 are
computed on those offsets (a boundary one character off counts as wrong).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkwise.segmentation.sentences import split_sentences

GOLD_DIR = Path(__file__).parent / "data" / "sentences"
LANGUAGES = ("en", "de", "zh", "ja")


def load_gold(lang: str) -> list[tuple[str, str, set[int]]]:
    """``(doc id, text, gold boundary offsets)`` for every document of ``lang``."""
    docs = json.loads((GOLD_DIR / f"{lang}.json").read_text(encoding="utf-8"))
    out = []
    for doc in docs:
        sentences = doc["sentences"]
        default = " " if lang in ("en", "de") else ""
        seps = doc.get("seps") or [doc.get("sep", default)] * (len(sentences) - 1)
        text, gold = "", set()
        for i, sentence in enumerate(sentences):
            text += sentence
            if i < len(sentences) - 1:
                gold.add(len(text))
                text += seps[i]
        out.append((doc["id"], text, gold))
    return out


def score(backend: str, lang: str) -> tuple[int, int, int]:
    """True positives, false positives and false negatives of ``backend`` on ``lang``."""
    tp = fp = fn = 0
    for _, text, gold in load_gold(lang):
        pred = {end for _, end in split_sentences(text, backend=backend, language=lang)[:-1]}
        tp += len(pred & gold)
        fp += len(pred - gold)
        fn += len(gold - pred)
    return tp, fp, fn


def f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def test_gold_set_is_big_enough_and_consistent():
    total = 0
    for lang in LANGUAGES:
        docs = load_gold(lang)
        ids = [d for d, _, _ in docs]
        assert len(ids) == len(set(ids)), f"duplicate document ids in {lang}"
        n = sum(len(g) for _, _, g in docs)
        assert n >= 75, f"{lang}: only {n} gold boundaries"
        total += n
        for doc_id, text, gold in docs:
            for b in gold:  # a gold sentence never ends in whitespace and never starts with it
                assert not text[b - 1].isspace(), doc_id
    assert total >= 300


@pytest.mark.parametrize("lang", LANGUAGES)
def test_chunkwise_f1_per_language(lang):
    tp, fp, fn = score("chunkwise", lang)
    assert f1(tp, fp, fn) >= 0.97, (lang, tp, fp, fn)


def test_chunkwise_f1_overall_and_not_worse_than_peers():
    totals = {}
    for backend in ("chunkwise", "pysbd", "blingfire"):
        tp = fp = fn = 0
        for lang in LANGUAGES:
            a, b, c = score(backend, lang)
            tp, fp, fn = tp + a, fp + b, fn + c
        totals[backend] = f1(tp, fp, fn)
    assert totals["chunkwise"] >= 0.97, totals
    assert totals["chunkwise"] >= max(totals["pysbd"], totals["blingfire"]), totals


def test_gold_spans_are_exact_for_every_backend():
    """Peers rewrite whitespace; their aligned spans must still be exact, trimmed slices that cover the text."""
    for backend in ("pysbd", "blingfire"):
        for lang in LANGUAGES:
            for doc_id, text, _ in load_gold(lang):
                spans = split_sentences(text, backend=backend, language=lang)
                covered = "".join(text[a:b] for a, b in spans)
                assert "".join(covered.split()) == "".join(text.split()), (backend, doc_id)
                assert all(text[a:b] == text[a:b].strip() and b > a for a, b in spans), (backend, doc_id)
