"""The data model: provenance look-ups, deterministic ids, serialisation."""

import json

from chunkwise.document import CHUNK_FIELDS, Chunk, Cue, Document, Page, Section, stable_hash


def test_stable_hash_is_deterministic_and_separates_parts():
    assert stable_hash("a", "bc") == stable_hash("a", "bc")
    assert stable_hash("a", "bc") != stable_hash("ab", "c")
    assert stable_hash({"b": 1, "a": 2}) == stable_hash({"a": 2, "b": 1})
    assert len(stable_hash("x")) == 16


def test_document_id_from_source_or_content():
    assert Document("one", source="a.txt").id == Document("two", source="a.txt").id
    assert Document("one").id != Document("two").id
    assert Document("one").content_hash != Document("two").content_hash


def test_page_span():
    doc = Document("p1 text\fp2 text\fp3", pages=[Page(1, 0, 8), Page(2, 8, 16), Page(3, 16, 18)])
    assert doc.page_span(0, 3) == (1, 1)
    assert doc.page_span(3, 10) == (1, 2)
    assert doc.page_span(8, 16) == (2, 2)
    assert doc.page_span(5, 18) == (1, 3)
    assert Document("x").page_span(0, 1) == (None, None)


def test_section_at_innermost_and_skips_leading_whitespace():
    text = "# A\nintro\n## B\nbody\n# C\nend"
    sections = [
        Section(0, 20, ("A",), 1, 0, 3),
        Section(10, 20, ("A", "B"), 2, 10, 14),
        Section(20, len(text), ("C",), 1, 20, 23),
    ]
    doc = Document(text, sections=sections)
    assert doc.section_at(4) == ["A"]
    assert doc.section_at(15) == ["A", "B"]
    assert doc.section_at(21) == ["C"]
    assert doc.section_at(9, 12) == ["A", "B"]  # the newline at 9 is skipped: the chunk begins in B
    assert Document("x").section_at(0) == []


def test_time_span():
    doc = Document("a b c", cues=[Cue(0, 1, 0.0, 1.5, "Ann"), Cue(2, 3, 1.5, 3.0, "Bo"), Cue(4, 5, 3.0, 4.0, "Ann")])
    assert doc.time_span(0, 3) == (0.0, 3.0, ["Ann", "Bo"])
    assert doc.time_span(4, 5) == (3.0, 4.0, ["Ann"])


def test_chunk_to_dict_has_exactly_the_documented_fields():
    c = Chunk(
        text="t", start=0, end=1, index=0, id="i", doc_id="d", source="s", token_count=1, strategy="fixed", vector=[1.0]
    )
    d = c.to_dict()
    assert tuple(d) == CHUNK_FIELDS
    json.dumps(d)
    assert c.embed_text == "t"
    c.context = "Doc > Sec"
    assert c.embed_text == "Doc > Sec\n\nt"
