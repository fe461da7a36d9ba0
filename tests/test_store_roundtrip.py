"""Every chunk comes back from a store as it went in: MemoryStore and Milvus Lite, property-tested.

Chunks are drawn with hostile sections (headings containing the column's ``" > "`` separator, unicode,
empty headings, deep paths), ``None`` and present optional fields, video fields, contexts and source
offsets; each is upserted and fetched back, and the fetched chunk must equal the written one field by
field, and its search JSON must carry every chunk field.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise.document import CHUNK_FIELDS, Chunk, Document
from chunkwise.retrieval.results import RESULT_FIELDS, SearchResult
from chunkwise.store.base import Hit
from chunkwise.store.memory import MemoryStore
from chunkwise.store.milvus import MilvusStore
from chunkwise.store.rows import SECTION_SEPARATOR, chunk_from_row, chunk_rows, section_column

DIM = 4
_ids = itertools.count()
# text as documents hold it: any character but lone surrogates (decoders never produce them)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
HEADING = st.one_of(TEXT, st.sampled_from(["Input > Output", " > ", ">", "A >B", "", "Ünïcødé — 見出し"]))
OPT_INT = st.one_of(st.none(), st.integers(0, 10_000))
OPT_TIME = st.one_of(st.none(), st.floats(0, 1e5, allow_nan=False, allow_infinity=False))


@st.composite
def chunks(draw) -> tuple[Document, Chunk]:
    body = draw(TEXT)
    prefix = draw(st.text(max_size=5))
    doc = Document(text=prefix + body + draw(st.text(max_size=5)), source=f"docs/{next(_ids)}-{draw(TEXT)}")
    video = draw(st.booleans())
    chunk = Chunk(
        text=body,
        start=len(prefix),
        end=len(prefix) + len(body),
        index=draw(st.integers(0, 1000)),
        id=f"c{next(_ids)}",
        doc_id=doc.id,
        source=doc.source,
        token_count=draw(st.integers(1, 512)),
        strategy=draw(st.sampled_from(["fixed", "semantic", "video"])),
        page_start=draw(OPT_INT),
        page_end=draw(OPT_INT),
        section=draw(st.lists(HEADING, max_size=6)),
        start_time=draw(OPT_TIME),
        end_time=draw(OPT_TIME),
        speakers=draw(st.lists(TEXT, max_size=3, unique=True)),
        context=draw(st.one_of(st.none(), TEXT)),
        start_frame=draw(st.integers(0, 10**6)) if video else None,
        end_frame=draw(st.integers(0, 10**6)) if video else None,
        track_ids=draw(st.lists(st.integers(0, 10**6), max_size=5)) if video else None,
        classes=draw(st.lists(st.sampled_from(["person", "car"]), max_size=2)) if video else None,
        source_start=draw(OPT_INT),
        source_end=draw(OPT_INT),
    )
    return doc, chunk


def vector() -> np.ndarray:
    v = np.ones((1, DIM), dtype=np.float32)
    return v / np.linalg.norm(v)


def check(written: Chunk, hit: Hit) -> None:
    got = hit.chunk
    assert got is not None
    assert {name: getattr(got, name) for name in CHUNK_FIELDS} == {
        name: getattr(written, name) for name in CHUNK_FIELDS
    }
    out = SearchResult.from_hit(1, 0.5, hit).to_dict()
    assert list(out) == list(RESULT_FIELDS)
    assert out["section"] == written.section and out["chunk_index"] == written.index
    assert out["track_ids"] == written.track_ids and out["start_frame"] == written.start_frame
    assert "section_path" not in out["metadata"]  # bookkeeping of the row, not the user's metadata


@pytest.fixture(scope="module")
def lite(tmp_path_factory):
    store = MilvusStore(db=tmp_path_factory.mktemp("roundtrip") / "rt.db", collection="roundtrip")
    store.create({"embedder": "test", "dim": DIM}, dim=DIM)
    store.open()
    yield store
    store.close()


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(chunks())
def test_memory_store_round_trip(item):
    doc, chunk = item
    store = MemoryStore()
    store.create({"embedder": "test"}, dim=DIM)
    store.upsert([(doc, [chunk], vector())], "test")
    [hit] = store.fetch([chunk.id])
    check(chunk, hit)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(item=chunks())
def test_milvus_lite_round_trip(lite, item):
    doc, chunk = item
    lite.upsert([(doc, [chunk], vector())], "test")
    lite.flush()
    [hit] = lite.fetch([chunk.id])
    check(chunk, hit)


def test_a_heading_with_the_separator_comes_back_whole():
    """The case that used to split: ``Input > Output`` is one heading, not two levels."""
    doc = Document(text="Body text.", source="a.md")
    chunk = Chunk(
        text="Body text.",
        start=0,
        end=10,
        index=0,
        id="x",
        doc_id=doc.id,
        source="a.md",
        token_count=2,
        strategy="fixed",
        section=["Guide", "Input > Output"],
    )
    [row] = chunk_rows(doc, [chunk], vector(), "test")
    assert row["section"] == "Guide > Input > Output"  # the column keeps the readable path for filters
    assert chunk_from_row(row)[0].section == ["Guide", "Input > Output"]
    assert section_column(["Guide", "Setup"]) == ("Guide" + SECTION_SEPARATOR + "Setup", None)  # no extra copy
