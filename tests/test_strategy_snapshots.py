"""Every strategy's output over a fixed corpus, as a reviewable snapshot: one ``[start, end, token_count]``
row per chunk, per strategy and document, in ``tests/data/snapshots/strategies.json``.

A change that moves one cut or one count fails here naming the strategy, the document and the first row
that differs. When the change is meant, rewrite the file and review its diff with the change:

    CHUNKWISE_UPDATE_SNAPSHOTS=1 pytest tests/test_strategy_snapshots.py

The semantic strategies embed with the tests' hashed bag-of-words embedder (deterministic, no model), so
their rows pin the packing and the breakpoint logic, not a model's numbers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import FakeEmbedder

from chunkwise import load
from chunkwise.document import Document
from chunkwise.strategies import STRATEGY_NAMES
from chunkwise.strategies.factory import make_strategy

DATA = Path(__file__).parent / "data"
SNAPSHOT = DATA / "snapshots" / "strategies.json"
#: the corpus: prose with hard sentence cases, Markdown with headings, reStructuredText, source code
FILES = {
    "changelog.md": DATA / "changelog" / "httpx-CHANGELOG.md",
    "guide.rst": DATA / "rst" / "guide.rst",
    "shapes.py": DATA / "code" / "shapes.py",
}
PARAMS = {"max_tokens": 64}
UPDATE = os.environ.get("CHUNKWISE_UPDATE_SNAPSHOTS") == "1"
#: the code strategy says, for the prose documents, that it found no grammar: expected here
pytestmark = pytest.mark.filterwarnings("ignore:code strategy:UserWarning")


def documents() -> dict[str, Document]:
    rules = json.loads((DATA / "golden_rules" / "en.json").read_text(encoding="utf-8"))
    text = "\n\n".join(case["text"] for suite in rules["suites"] for case in suite["cases"])
    docs = {"golden-rules-en.txt": Document(text, source="golden-rules-en.txt")}
    docs.update({name: load(path) for name, path in FILES.items()})
    return docs


def rows(strategy: str, doc: Document) -> list[list[int]]:
    chunks = make_strategy(strategy, dict(PARAMS), FakeEmbedder()).chunk(doc)
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
    return [[c.start, c.end, c.token_count] for c in chunks]


def render(snapshot: dict[str, list[list[int]]]) -> str:
    """The snapshot as JSON with one chunk a line, so a diff shows the rows that moved."""
    blocks = []
    for key in sorted(snapshot):
        lines = ",\n".join(f"  {json.dumps(row)}" for row in snapshot[key])
        blocks.append(f"{json.dumps(key)}: [\n{lines}\n]")
    return "{\n" + ",\n".join(blocks) + "\n}\n"


@pytest.fixture(scope="module")
def current() -> dict[str, list[list[int]]]:
    docs = documents()
    return {f"{s}/{name}": rows(s, doc) for s in STRATEGY_NAMES for name, doc in docs.items()}


def test_every_strategy_matches_its_snapshot(current):
    if UPDATE:
        SNAPSHOT.write_text(render(current), encoding="utf-8")
    stored = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert set(stored) == set(current), "a strategy or document was added or removed: update the snapshot"
    for key in sorted(current):
        got, want = current[key], stored[key]
        if got != want:
            at = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
            pytest.fail(
                f"{key}: row {at} is {got[at] if at < len(got) else 'missing'}, the snapshot has "
                f"{want[at] if at < len(want) else 'none'} ({len(got)} chunks, snapshot {len(want)}); "
                "if meant: CHUNKWISE_UPDATE_SNAPSHOTS=1 and review the diff"
            )


def test_the_snapshot_covers_every_strategy_with_several_chunks():
    stored = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert {key.split("/")[0] for key in stored} == set(STRATEGY_NAMES)
    assert all(len(stored[f"{s}/changelog.md"]) > 3 for s in STRATEGY_NAMES)
