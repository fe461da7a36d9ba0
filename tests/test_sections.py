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
from chunkwise.retrieval.sections import glued, key_members, sections_first
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


def test_glued_keys_are_words_glued_to_numbers():
    assert [k for k in strong_keys("python3 2d utf8 200ms 0.27.1 max_redirects KeyError 404") if glued(k)] == [
        "python3",
        "2d",
        "utf8",
        "200ms",
    ]


PLAIN = {
    "convert.txt": "Convert a string to bytes with encode, and bytes back with decode.",
    "setup.txt": "This deployment script needs python3 installed on the server first.",
}


@pytest.fixture(scope="module")
def plain_index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plain")
    for name, text in PLAIN.items():
        (folder / name).write_text(text, encoding="utf-8")
    index = Index(store=MemoryStore(), embedder=FakeEmbedder())
    index.add(str(folder))
    yield index
    index.close()


def test_a_glued_key_in_a_body_moves_nothing(plain_index):
    query = "python3 encode decode bytes"
    assert key_members(plain_index.store, query) == []  # setup.txt holds python3, but no heading names it
    for hybrid in (True, False):
        on = plain_index.search(query, k=2, hybrid=hybrid)
        off = plain_index.search(query, k=2, hybrid=hybrid, sections=False)
        assert [h.source for h in on] == [h.source for h in off]
        assert on[0].source.endswith("convert.txt")


def test_a_glued_key_still_finds_the_section_whose_heading_names_it(plain_index, tmp_path):
    index = Index(store=MemoryStore(), embedder=FakeEmbedder())
    for name, text in {**PLAIN, "notes.md": "# Python3 support\n\nThe interpreter of the tools.\n"}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    index.add(str(tmp_path))
    members = [index.store.rows[i].chunk for i in key_members(index.store, "python3 encode decode bytes")]
    assert members and all(c.source.endswith("notes.md") for c in members)
    assert index.search("python3 encode decode bytes", k=1)[0].source.endswith("notes.md")
    # a name (not glued) found in a body still counts: KeyError in the text of a chunk without headings
    (tmp_path / "errors.txt").write_text("Reading a missing key raises KeyError at once.", encoding="utf-8")
    index.add(str(tmp_path / "errors.txt"))
    named = [index.store.rows[i].chunk.source for i in key_members(index.store, "when is KeyError raised")]
    assert named and all(s.endswith("errors.txt") for s in named)
    index.close()


def test_cli_search_ranks_a_glued_key_as_the_python_api_does(tmp_path, monkeypatch, capsys):
    import json

    import chunkwise.embeddings
    from chunkwise.cli import main

    monkeypatch.setattr(chunkwise.embeddings, "get_embedder", lambda name=None, **kw: FakeEmbedder())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb").mkdir()
    for name, text in PLAIN.items():
        (tmp_path / "kb" / name).write_text(text, encoding="utf-8")
    assert main(["index", "kb", "--strategy", "recursive", "-q"]) == 0
    capsys.readouterr()
    assert main(["search", "python3 encode decode bytes", "-k", "1", "--format", "jsonl"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["source"].endswith("convert.txt")
