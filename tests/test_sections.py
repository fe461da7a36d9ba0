"""Section-first retrieval: a question naming a version (or another exact key) gets the chunks of the
section that names it, not those of its siblings (``0.27.1`` vs ``0.27.0`` vs ``0.17.1``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FakeEmbedder
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise import Index
from chunkwise.retrieval.sections import key_members, sections_first
from chunkwise.segmentation.lexical import strong_keys
from chunkwise.store.memory import MemoryStore

CHANGELOG = Path(__file__).parent / "data" / "changelog" / "httpx-CHANGELOG.md"


def _sections(text: str) -> dict[str, tuple[int, int]]:
    heads = [(m.group(1), m.start()) for m in re.finditer(r"^## (\d+\.\d+\.\d+)", text, re.M)]
    return {v: (a, heads[n + 1][1] if n + 1 < len(heads) else len(text)) for n, (v, a) in enumerate(heads)}


@pytest.fixture(scope="module")
def changelog_index():
    index = Index(store=MemoryStore(), embedder=FakeEmbedder())
    index.add(str(CHANGELOG))
    yield index
    index.close()


@pytest.mark.parametrize("hybrid", [True, False])
def test_a_question_about_one_version_gets_that_versions_section(changelog_index, hybrid):
    text = CHANGELOG.read_text(encoding="utf-8")
    sections = _sections(text)
    assert len(sections) == 11
    for version, (a, b) in sections.items():
        hits = changelog_index.search(f"What new features were introduced in httpx {version}?", k=5, hybrid=hybrid)
        inside = [a <= h.start and h.end <= b for h in hits]
        assert inside[0], (version, [h.section for h in hits])
        # the other places in the top 5 go to this version too, as far as its section has chunks
        n_section = sum(1 for c in changelog_index.store.rows.values() if a <= c.chunk.start and c.chunk.end <= b)
        assert sum(inside) == min(5, n_section), version


def test_sections_first_can_be_turned_off(changelog_index):
    counts = {True: 0, False: 0}
    for version, (a, b) in _sections(CHANGELOG.read_text(encoding="utf-8")).items():
        for on in (True, False):
            hits = changelog_index.search(f"What was fixed in httpx {version}?", k=5, sections=on)
            counts[on] += sum(a <= h.start < b for h in hits)
    assert counts[True] > counts[False]  # the siblings' words are alike: without the key pass they mix


def test_key_members_hold_the_key_whole(changelog_index):
    store = changelog_index.store
    sections = _sections(CHANGELOG.read_text(encoding="utf-8"))
    a, b = sections["0.27.1"]
    members = key_members(store, "features in 0.27.1")
    chunks = [store.rows[i].chunk for i in members]
    assert chunks and all(a <= c.start < b for c in chunks)
    assert key_members(store, "features in 0.27.13") == []  # a version that is not there names nothing
    assert key_members(store, "features in 0.27") == []  # nor does the prefix of one
    assert key_members(store, "How do I bake sourdough bread?") == []


def test_small_numbers_are_not_keys():
    assert strong_keys("the top 3 changes in 0.27.1 with max_redirects and 404") == ["0.27.1", "max_redirects", "404"]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 40), unique=True, max_size=20),
    st.lists(st.integers(0, 60), unique=True, max_size=8),
)
def test_sections_first_moves_members_ahead_and_keeps_everything(ranked_ids, member_ids):
    ranked = [(str(i), float(-n)) for n, i in enumerate(ranked_ids)]
    members = [str(i) for i in member_ids]
    out = sections_first(ranked, members)
    ids = [i for i, _ in out]
    assert len(ids) == len(set(ids)) and set(ids) == {i for i, _ in ranked} | set(members)
    assert ids[: len(members)] == [i for i, _ in ranked if i in set(members)] + [
        i for i in members if i not in {j for j, _ in ranked}
    ]
    if not members:
        assert out == ranked
