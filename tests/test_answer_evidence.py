"""Answers that know what they did not find: the question's keys (a version, a name) and most of its words
must be in the passages, else the answer is "not found in the indexed documents" and not confident."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FakeEmbedder

from chunkwise import Index
from chunkwise.llm.answer import NOT_FOUND, Answer
from chunkwise.llm.evidence import weigh
from chunkwise.llm.extractive import strip_markdown
from chunkwise.store.memory import MemoryStore

CHANGELOG = Path(__file__).parent / "data" / "changelog" / "httpx-CHANGELOG.md"


@pytest.fixture(scope="module")
def index():
    ix = Index(store=MemoryStore(), embedder=FakeEmbedder())
    ix.add(str(CHANGELOG))
    yield ix
    ix.close()


def _section(version: str) -> tuple[int, int]:
    text = CHANGELOG.read_text(encoding="utf-8")
    a = text.index(f"\n## {version} ")
    return a, text.index("\n## ", a + 1)


def test_a_version_that_is_not_there_is_not_found(index):
    ans = index.ask("What new features were introduced in httpx 0.27.13?", min_score=None)
    assert ans.text.startswith(f"{NOT_FOUND}: the closest passages are about ")
    assert not ans.confident and ans.evidence.missing == ["0.27.13"] and ans.citations == []
    assert ans.hedge.startswith("no passage mentions 0.27.13")
    assert ans.passages  # the closest passages are still shown
    back = Answer.from_dict(ans.to_dict())
    assert back.to_dict() == ans.to_dict() and back.evidence.missing == ["0.27.13"]


def test_a_topic_that_is_not_there_is_not_found(index):
    ans = index.ask("How do I bake sourdough bread?", min_score=None)
    assert ans.text.startswith(NOT_FOUND) and not ans.confident
    assert ans.evidence.unmatched == ["bake", "sourdough", "bread"]


def test_a_version_that_is_there_is_answered_from_its_own_section_without_markup(index):
    for version in ("0.27.1", "0.25.0", "0.24.1"):
        a, b = _section(version)
        ans = index.ask(f"What new features were introduced in httpx {version}?", min_score=None)
        assert not ans.text.startswith(NOT_FOUND) and ans.evidence.supported, version
        # passages about other versions are not handed to the reader: every one lies in the section
        assert ans.passages and all(a <= p.start < b for p in ans.passages), version
        assert ans.citations and not re.search(r"`|\*\*|^#|\]\(", ans.text), ans.text


def test_evidence_reads_heading_paths_and_file_names():
    class Hit:
        def __init__(self, text, section, source):
            self.text, self.section, self.source, self.context = text, section, source, None

    hit = Hit("* Support for `zstd` decoding.", ["Changelog", "0.27.1 (27th August, 2024)", "Added"], "x/httpx.md")
    ev = weigh("What new features were introduced in httpx 0.27.1?", [hit])
    assert ev.keys == ["0.27.1"] and not ev.missing and ev.words == ["httpx"] and ev.supported
    assert weigh("What new features were introduced in httpx 0.27.10?", [hit]).missing == ["0.27.10"]
    assert weigh("Which decoders does requests support?", [hit]).unmatched == ["requests"]  # 2 of 3: enough
    assert not weigh("How does requests handle cookies?", [hit]).supported


def test_markdown_markup_is_dropped_and_the_words_stay():
    md = "## Fixed\n* Use **bold**, `os.path` and [the docs](https://x.y) for max_tokens_x and _this_ <!-- note -->"
    assert " ".join(strip_markdown(md).split()) == "Fixed * Use bold, os.path and the docs for max_tokens_x and this"
    html = 'a password hashing library and <abbr title="JSON Web Tokens">JWT</abbr> tokens, see <https://x.y/a>'
    assert strip_markdown(html) == "a password hashing library and JWT tokens, see https://x.y/a"
    assert strip_markdown("a <br/> b <SPAN class='k'>c</SPAN>") == "a  b c"
    assert strip_markdown("HTML forms (<form></form>) and 3 < 4 > 2") == "HTML forms (<form></form>) and 3 < 4 > 2"


def test_cli_search_and_ask_on_a_changelog(tmp_path, capsys):
    """End to end with the defaults (MiniLM, Milvus Lite, hybrid): the version's own section comes first,
    a version that does not exist is "not found", and ``--no-sections`` is the plain fused ranking."""
    import json

    from chunkwise.cli import main

    db = str(tmp_path / "chunkwise.db")
    assert main(["index", str(CHANGELOG), "--db", db]) == 0
    capsys.readouterr()
    a, b = _section("0.25.1")
    question = "What new features were introduced in httpx 0.25.1?"
    assert main(["search", question, "--db", db, "-k", "3", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and a <= rows[0]["start"] < b  # the section may hold fewer than 3 chunks
    assert main(["search", question, "--db", db, "-k", "3", "--no-sections", "--format", "jsonl"]) == 0
    assert capsys.readouterr().out.strip()
    assert main(["ask", "What new features were introduced in httpx 0.25.13?", "--db", db, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answer"].startswith(NOT_FOUND) and out["confident"] is False
    assert out["evidence"]["missing_keys"] == ["0.25.13"]
    # the closest passages are named by their versions, not by "Added"/"Fixed"
    named = out["answer"].split("the closest passages are about ")[1]
    assert re.fullmatch(r"\d+\.\d+\.\d+(, \d+\.\d+\.\d+)*( and \d+\.\d+\.\d+)?", named), named
    # an answered question: the JSON says why it is trusted (keys held, both retrievers' ranks, margin)
    assert main(["ask", question, "--db", db, "--format", "json"]) == 0
    ev = json.loads(capsys.readouterr().out)["evidence"]
    assert ev["keys"] == ["0.25.1"] and ev["missing_keys"] == []
    ranks = [tuple(r) for r in ev["ranks"]]
    assert ranks and all(len(r) == 2 for r in ranks)
    shared = [max(v, b) for v, b in ranks if v and b]
    assert ev["agreement"] == (round(1 / min(shared), 3) if shared else 0.0)
    assert ev["margin"] is None or isinstance(ev["margin"], float)
    assert main(["ask", "What new features were introduced in httpx 0.25.13?", "--db", db]) == 0
    text = capsys.readouterr().out
    assert "Caution: no passage mentions 0.25.13" in text
    assert "Closest passages:\n  [1] " in text and "§" in text.split("Closest passages:")[1]


def test_a_heading_is_never_an_answer_sentence():
    from chunkwise.llm import ExtractiveLLM, Passage

    text = "## 0.27.1 (27th August, 2024)\n\n### Added\n\n* Support for `zstd` content decoding is added. (#3139)"
    sentences = [t for _, t, _ in ExtractiveLLM.sentences([Passage(1, text)])]
    assert sentences and not any(t.startswith("0.27.1") for t in sentences)
    assert any("Support for zstd content decoding is added." in t for t in sentences)


def test_a_key_held_whole_lowers_the_cosine_bar(index):
    """The passages holding the question's version is evidence a cosine cannot see: with a cosine bar above
    the best hit, the keyed question stays confident (bar KEYED_SCORE), a question without keys does not."""
    from chunkwise.llm.answer import KEYED_SCORE, ask_index

    keyed = ask_index(index, "What new features were introduced in httpx 0.27.1?", min_score=None, confident_score=0.99)
    assert KEYED_SCORE <= keyed.best_score < 0.99 and keyed.confident
    plain = ask_index(index, "Which content decoding was added for zstd?", min_score=None, confident_score=0.99)
    assert plain.evidence.supported and not plain.evidence.keys and not plain.confident


def test_a_held_version_forgives_one_word_the_page_never_says():
    """Release notes rarely name their own product: "What changed in uvicorn 0.34.1?" over a page whose
    section is "0.34.1" holds the key but not "uvicorn". One such word is forgiven when every key is held;
    two are not, and without a key the share of words decides as before."""
    from chunkwise.llm.evidence import Evidence

    assert Evidence(keys=["0.34.1"], words=["uvicorn"], unmatched=["uvicorn"]).supported
    assert not Evidence(keys=["0.34.1"], missing=["0.34.1"], words=["uvicorn"], unmatched=["uvicorn"]).supported
    assert not Evidence(
        keys=["0.34.1"], words=["uvicorn", "bake", "bread"], unmatched=["uvicorn", "bake", "bread"]
    ).supported
    assert not Evidence(keys=[], words=["uvicorn"], unmatched=["uvicorn"]).supported
    assert Evidence(keys=[], words=["starter", "feed"], unmatched=["feed"]).supported


def test_feeding_answers_a_question_about_feed():
    from chunkwise.llm.evidence import weigh

    class Passage:
        text = "Feeding Schedule. Feed it once a day at room temperature."
        source = "guide.md"

    ev = weigh("How often do I feed the starter?", [Passage()])
    assert "feed" not in ev.unmatched and "often" not in ev.words and ev.unmatched == ["starter"]


class _Hit:
    """A search result as the evidence reads it: text, heading path, source, offsets, the two ranks."""

    def __init__(self, section, vrank=None, brank=None, source="notes.md", start=0, text=""):
        self.text, self.section, self.source, self.context = text, section, source, None
        self.start, self.end = start, start + 10
        self.vector_rank, self.bm25_rank = vrank, brank


def test_agreement_is_the_best_rank_both_retrievers_share():
    from chunkwise.llm.evidence import agreement

    assert agreement([_Hit([], 1, 1)]) == 1.0
    # one hit is 1st by vectors but 9th by BM25, the other 3rd and 2nd: they agree at rank 3
    assert agreement([_Hit([], 1, 9), _Hit([], 3, 2)]) == pytest.approx(1 / 3)
    # a hit only one retriever ranked (fusion lifted it) is no agreement at all
    assert agreement([_Hit([], 1, None), _Hit([], None, 1)]) == 0.0
    assert agreement([]) == 0.0


def test_margin_is_over_the_next_section_not_the_next_chunk():
    from chunkwise.llm.evidence import margin, section_key

    v1 = ["Changelog", "0.27.1", "Added"]
    v1_fixed = ["Changelog", "0.27.1", "Fixed"]
    v0 = ["Changelog", "0.27.0", "Added"]
    hits = [_Hit(v1), _Hit(v1_fixed, start=20), _Hit(v0, start=40)]
    assert section_key(hits[0]) == section_key(hits[1]) != section_key(hits[2])
    # the answer's version section (two subsections) at 0.61 against 0.27.0's best 0.55
    assert margin(hits, [0.50, 0.61, 0.55], hits[0]) == pytest.approx(0.06)
    # an answer from the section that scores below another one has a negative margin
    assert margin(hits, [0.50, 0.52, 0.70], hits[0]) == pytest.approx(-0.18)
    # every retrieved chunk in the answer's section: no next section, no margin
    assert margin(hits[:2], [0.5, 0.6], hits[0]) is None
    # a page without headings: each chunk is its own section
    flat = [_Hit([], start=0), _Hit([], start=500)]
    assert margin(flat, [0.7, 0.4], flat[0]) == pytest.approx(0.3)


def _evidence(**kw):
    from chunkwise.llm.evidence import Evidence

    return Evidence(**{"words": ["cors", "origin"], **kw})


def test_retrievers_that_disagree_hedge_a_question_without_keys():
    """Without a key, a passage neither retriever ranks in its top 4 is not a confident answer; with vectors
    alone (agreement not measured) the cosine decides as before; a held key makes agreement moot."""
    from chunkwise.llm.answer import MIN_AGREEMENT, is_confident

    assert MIN_AGREEMENT == pytest.approx(1 / 4)
    assert is_confident(0.6, _evidence(agreement=1 / 4))
    assert not is_confident(0.6, _evidence(agreement=1 / 5))
    assert not is_confident(0.6, _evidence(agreement=0.0))
    assert is_confident(0.6, _evidence(agreement=None))  # vectors alone
    assert not is_confident(0.2, _evidence(agreement=1.0))  # the cosine bar still holds
    assert is_confident(0.2, _evidence(keys=["0.27.1"], agreement=0.0))  # the key is the evidence
    assert not is_confident(0.6, _evidence(keys=["0.27.1"], missing=["0.27.1"], agreement=1.0))
    # the margin is measured but required only when asked for
    assert is_confident(0.6, _evidence(agreement=1.0, margin=-0.2))
    assert not is_confident(0.6, _evidence(agreement=1.0, margin=-0.2), min_margin=0.0)
    assert is_confident(0.6, _evidence(agreement=1.0, margin=0.05), min_margin=0.0)


def test_a_hedge_says_the_retrievers_disagree():
    from chunkwise.llm import Passage
    from chunkwise.llm.answer import Answer

    ans = Answer(
        "How do I enable CORS?", "x [1]", [Passage(1, "x")], best_score=0.6, evidence=_evidence(agreement=1 / 7)
    )
    assert ans.hedge.startswith("vectors and BM25 agree on no passage in their top 4 (best shared rank 7)")
    ans.evidence = _evidence(agreement=0.0)
    assert "(none in both lists)" in ans.hedge
    back = Answer.from_dict(ans.to_dict())
    assert back.evidence.agreement == 0.0 and back.hedge == ans.hedge


def test_not_found_names_the_closest_versions_as_their_headings_spell_them():
    from chunkwise.llm.evidence import about

    hits = [
        _Hit(["Release notes", "v3.8.1 (2024-05-02)", "Features"]),
        _Hit(["Release notes", "v3.8.10 (2024-09-12)", "Bug fixes"]),
        _Hit(["Release notes", "v3.8.1 (2024-05-02)", "Bug fixes"]),
    ]
    assert about(hits, keys=["3.8.13"]) == "v3.8.1 and v3.8.10"
    # a question without keys: the headings below the shared title
    assert (
        about(hits)
        == "v3.8.1 (2024-05-02) > Features, v3.8.10 (2024-09-12) > Bug fixes and v3.8.1 (2024-05-02) > Bug fixes"
    )
    # a page without a title (release notes starting at the first version): nothing is dropped
    untitled = [_Hit(["0.24.0 (November 4, 2023)", "Deprecated"]), _Hit(["0.31.0 (September 27, 2024)", "Fixed"])]
    assert about(untitled) == "0.24.0 (November 4, 2023) > Deprecated and 0.31.0 (September 27, 2024) > Fixed"
    assert about(untitled, keys=["0.35.37"]) == "0.24.0 and 0.31.0"


def test_the_ranks_reach_the_evidence_through_expanded_passages(index):
    """With ``expand`` the reader gets windows around the hits; the ranks are still those of the search
    results each window holds, and the agreement is computed from them."""
    from chunkwise.llm.evidence import agreement

    plain = index.ask("Which content decoding was added for zstd?", min_score=None)
    wide = index.ask("Which content decoding was added for zstd?", min_score=None, expand="neighbors:1")
    assert plain.evidence.ranks and wide.evidence.ranks
    held = [r for p in wide.passages for r in p.origin.results]
    assert wide.evidence.ranks == [(r.vector_rank, r.bm25_rank) for r in held]
    assert wide.evidence.agreement == agreement(held)
    assert set(wide.evidence.ranks) <= {
        (h.vector_rank, h.bm25_rank) for h in index.search("Which content decoding was added for zstd?")
    }
    dense = index.ask("Which content decoding was added for zstd?", min_score=None, hybrid=False)
    assert dense.evidence.agreement is None and all(b is None for _, b in dense.evidence.ranks)


def test_a_section_named_by_the_key_is_preferred_to_a_passage_that_mentions_it():
    """ "What bugs were fixed in httpx 0.27.0?" over httpx's and starlette's notes: starlette's "Bump the
    minimum httpx version to 0.27.0" holds the key in its text only; httpx's ``## 0.27.0`` section names it."""
    from chunkwise.llm.answer import keyed_items

    bump = _Hit(
        ["Release Notes", "0.37.2", "Changed"], source="starlette.md", text="Bump the minimum httpx version to 0.27.0."
    )
    own = _Hit(["Changelog", "0.27.0 (21st February, 2024)", "Fixed"], source="httpx.md", text="Fix a redirect bug.")
    other = _Hit(["Changelog", "0.26.0", "Fixed"], source="httpx.md", text="Fix a proxy bug.")
    items, ev = keyed_items("What bugs were fixed in httpx 0.27.0?", [bump, own, other])
    assert items == [own] and ev.supported
    # with no section named by the key, the passages that mention it are kept
    items, _ = keyed_items("What bugs were fixed in httpx 0.27.0?", [bump, other])
    assert items == [bump]


def test_a_name_key_does_not_pick_sections_by_their_headings():
    from chunkwise.llm.answer import keyed_items

    page = _Hit(
        ["WebSockets", "Handling disconnections"], source="websockets.md", text="Use a WebSocket to handle connections."
    )
    named = _Hit(["WebSockets", "Testing WebSockets"], source="websockets.md", text="The TestClient opens a WebSocket.")
    items, _ = keyed_items("How do I handle WebSocket connections?", [page, named])
    assert items == [page, named]
