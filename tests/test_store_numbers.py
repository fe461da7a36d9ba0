"""The writer's copies number each chunk id once between them (store/numbers.py): ``RowOf`` over a shared
``ChunkNumbers`` behaves as a dict ``id -> row`` per copy, and a build's four copies share one numbering."""

from __future__ import annotations

import pytest
from conftest import FakeEmbedder
from hypothesis import given, settings
from hypothesis import strategies as st
from index_data import lines

from chunkwise import Document
from chunkwise.retrieval import Index
from chunkwise.store.numbers import ChunkNumbers, RowOf

IDS = st.sampled_from([f"c{i}" for i in range(12)])
OPS = st.lists(
    st.tuples(st.sampled_from(["set", "pop", "del"]), st.integers(0, 1), IDS, st.integers(0, 2**31 - 1)),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_rows_over_a_shared_numbering_behave_as_one_dict_per_copy(ops):
    numbers = ChunkNumbers()
    copies = [RowOf(numbers), RowOf(numbers)]
    models: list[dict[str, int]] = [{}, {}]
    for op, which, chunk_id, row in ops:
        copy, model = copies[which], models[which]
        if op == "set":
            copy[chunk_id] = row
            model[chunk_id] = row
        elif op == "pop":
            assert copy.pop(chunk_id, None) == model.pop(chunk_id, None)
        elif chunk_id in model:
            del copy[chunk_id]
            del model[chunk_id]
        else:
            with pytest.raises(KeyError):
                del copy[chunk_id]
        for c, m in zip(copies, models):
            assert len(c) == len(m)
            assert dict(c.items()) == m and sorted(c) == sorted(m)
            for i in (f"c{k}" for k in range(12)):
                assert (i in c) == (i in m) and c.get(i) == m.get(i)
    seen = {chunk_id for op, _, chunk_id, _ in ops if op == "set"}
    assert sorted(numbers.ids) == sorted(seen) and len(set(numbers.ids)) == len(numbers.ids)


@settings(max_examples=100, deadline=None)
@given(st.lists(IDS, unique=True), OPS)
def test_rows_built_in_order_are_the_rows_set_one_by_one(ids, ops):
    """A copy taken over from saved files (:meth:`RowOf.in_order`) then written to behaves as one filled id by
    id."""
    bulk, one_by_one = RowOf.in_order(ids), RowOf()
    for n, chunk_id in enumerate(ids):
        one_by_one[chunk_id] = n
    for op, _, chunk_id, row in ops:
        for rows in (bulk, one_by_one):
            if op == "set":
                rows[chunk_id] = row
            else:
                rows.pop(chunk_id, None)
        assert dict(bulk.items()) == dict(one_by_one.items()) and len(bulk) == len(one_by_one)
        assert bulk.numbers.ids == one_by_one.numbers.ids and len(bulk.numbers) == len(one_by_one.numbers)


def test_rows_in_order_refuse_a_repeated_id():
    with pytest.raises(ValueError, match="repeats"):
        RowOf.in_order(["a", "b", "a"])


@pytest.mark.parametrize("row", [-1, 2**31])
def test_a_row_out_of_range_is_refused(row):
    rows = RowOf()
    with pytest.raises(ValueError):
        rows["a"] = row
    assert "a" not in rows and len(rows) == 0


def test_a_build_numbers_each_chunk_once_for_all_its_copies(tmp_path):
    documents = [Document(f"lamp keeper {i}\nstorm night {i}\nrope signal {i}", source=f"kb/{i}.txt") for i in range(9)]
    with Index(tmp_path / "t.db", embedder=FakeEmbedder()) as ix:
        ix.add(documents, strategy=lines())
        store = ix.store
        maps = [store._bm25._number, store._vectors._index_of, store._places._row, store._rows.ids]
        assert all(isinstance(m, RowOf) for m in maps)
        assert len({id(m.numbers) for m in maps}) == 1
        count = ix.count()
        assert len(maps[0].numbers) == count and all(len(m) == count for m in maps)
        ix.add(documents[:3], strategy=lines())  # the same chunks again: no new numbers
        assert len(maps[0].numbers) == count and all(len(m) == count for m in maps)
