"""ChunkPlaces (held as columns) against a plain-dict model: adds, moves, removes, save and load."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.store.places import ChunkPlaces


class DictPlaces:
    """The model: ``id -> (doc, index)`` and ``doc -> {index: id}`` (the latest id added at a place holds it)."""

    def __init__(self) -> None:
        self.place: dict[str, tuple[str, int]] = {}
        self.by_doc: dict[str, dict[int, str]] = {}

    def add(self, items) -> None:
        for chunk_id, doc_id, index in items:
            self.remove([chunk_id])
            self.place[chunk_id] = (doc_id, index)
            self.by_doc.setdefault(doc_id, {})[index] = chunk_id

    def remove(self, ids) -> None:
        for chunk_id in ids:
            where = self.place.pop(chunk_id, None)
            if where is None:
                continue
            held = self.by_doc.get(where[0], {})
            if held.get(where[1]) == chunk_id:
                del held[where[1]]
            if not held:
                self.by_doc.pop(where[0], None)

    def ids_at(self, wanted) -> list[str]:
        out: list[str] = []
        for doc_id in sorted(wanted):
            held = self.by_doc.get(doc_id, {})
            out.extend(held[i] for i in sorted(set(wanted[doc_id])) if i in held)
        return out


IDS = st.sampled_from([f"c{k}" for k in range(12)])
DOCS = st.sampled_from(["a", "b", "c", "d"])
INDEXES = st.integers(-2, 6) | st.integers(-(2**63), 2**63 - 1)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(st.tuples(IDS, DOCS, INDEXES), max_size=6)),
        st.tuples(st.just("remove"), st.lists(IDS, max_size=6)),
        st.tuples(st.just("reload"), st.none()),
    ),
    max_size=25,
)


def check(places: ChunkPlaces, model: DictPlaces) -> None:
    assert len(places) == len(model.place)
    assert places.rows() == [[i, d, n] for i, (d, n) in sorted(model.place.items())]
    docs = ["a", "b", "c", "d", "e"]
    expected = {d: {i for i, (doc, _) in model.place.items() if doc == d} for d in docs}
    assert places.ids_of(docs) == expected
    indexes = {n for _, n in model.place.values()} | {-1, 0, 7}
    wanted = {d: list(indexes) for d in docs}
    assert places.ids_at(wanted) == model.ids_at(wanted)
    for d in docs:
        for n in indexes:
            assert places.ids_at({d: [n]}) == model.ids_at({d: [n]})


@settings(max_examples=300, deadline=None)
@given(OPS, st.sampled_from([0, 1, 3, 1024]))
def test_places_match_a_dict_model(tmp_path_factory, ops, compact_after) -> None:
    folder = tmp_path_factory.mktemp("places") / "p"
    places, model = ChunkPlaces(), DictPlaces()
    places.compact_after = compact_after  # small values renumber the rows often
    for op, arg in ops:
        if op == "add":
            places.add(arg)
            model.add(arg)
        elif op == "remove":
            places.remove(arg)
            model.remove(arg)
        else:
            places.save(folder)
            assert json.loads((folder / "places.json").read_text()) == places.rows()
            places = ChunkPlaces.load(folder)
            places.compact_after = compact_after
            # the model saved and loaded the same way: its rows in id order, added in that order
            saved = [(i, d, n) for i, (d, n) in sorted(model.place.items())]
            model = DictPlaces()
            model.add(saved)
        check(places, model)
