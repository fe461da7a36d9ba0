"""Small evaluation datasets written on the fly: three topics, four queries with exact answer spans.

Several test modules evaluate, tune or answer over the same tiny dataset; it lives here (and its fixture,
``dataset``, in ``conftest.py``) so that no test module imports another.
"""

from __future__ import annotations

import json
from pathlib import Path

TOPICS = {
    "cats.txt": "Cats purr when content. A cat sleeps sixteen hours. Kittens chase yarn. "
    "Felines groom their fur. Whiskers sense the air.",
    "ships.txt": "Ships carry cargo across oceans. Sailors navigate by stars. Harbours shelter vessels. "
    "Anchors hold boats in storms. Hulls are made of steel.",
    "bread.txt": "Bakers knead dough at dawn. Yeast makes bread rise. Ovens bake loaves golden. "
    "Flour comes from milled wheat. Crusts crackle as they cool.",
}
QUERIES = [
    ("why does bread rise yeast", "bread.txt", "Yeast makes bread rise."),
    ("how do sailors navigate stars", "ships.txt", "Sailors navigate by stars."),
    ("how long does a cat sleep hours", "cats.txt", "A cat sleeps sixteen hours."),
    ("what holds boats in storms anchors", "ships.txt", "Anchors hold boats in storms."),
]


def write_neutral(root: Path, queries, docs=None, boundaries=None) -> Path:
    """A dataset in the neutral layout ``eval`` reads: ``docs/``, ``queries.jsonl``, optional ``boundaries.jsonl``."""
    docs = docs or {"a.md": "# Cats\n\nCats purr. Cats sleep a lot.\n", "sub/b.txt": "Dogs bark loudly."}
    for name, text in docs.items():
        p = root / "docs" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n", encoding="utf-8")
    if boundaries is not None:
        (root / "boundaries.jsonl").write_text("\n".join(json.dumps(b) for b in boundaries), encoding="utf-8")
    return root


def topic_queries() -> list[dict]:
    """The four QUERIES as ``queries.jsonl`` rows with exact reference offsets into TOPICS."""
    rows = []
    for q, doc, sentence in QUERIES:
        start = TOPICS[doc].index(sentence)
        rows.append({"query": q, "references": [{"doc": doc, "start": start, "end": start + len(sentence)}]})
    return rows


def write_topics(root: Path) -> Path:
    """The topics dataset, with a boundaries file for ``cats.txt`` (one topic boundary after two sentences)."""
    units = []
    text = TOPICS["cats.txt"]
    pos = 0
    for s in text.split(". "):
        start = text.index(s, pos)
        units.append([start, start + len(s) + (1 if not s.endswith(".") else 0)])
        pos = start + len(s)
    return write_neutral(
        root,
        topic_queries(),
        docs=TOPICS,
        boundaries=[{"doc": "cats.txt", "boundaries": [units[2][0]], "units": units}],
    )
