"""Memory of :class:`~chunkwise.store.places.ChunkPlaces` holding 70,000 chunks (500 documents of 140, 16-hex
ids made beforehand, as the index run's rows bring them), by tracemalloc: what the places hold, and what their
save allocates above that.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_places_memory.py
"""

from __future__ import annotations

import gc
import hashlib
import tempfile
import tracemalloc
from pathlib import Path

from chunkwise.store.places import ChunkPlaces


def main(n_docs: int = 500, per_doc: int = 140) -> None:
    docs = [hashlib.sha256(f"d{d}".encode()).hexdigest()[:16] for d in range(n_docs)]
    items = [
        (hashlib.sha256(f"{d}:{i}".encode()).hexdigest()[:16], docs[d], i)
        for d in range(n_docs)
        for i in range(per_doc)
    ]
    gc.collect()
    tracemalloc.start()
    places = ChunkPlaces(items)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    print(f"{len(places)} chunks: held {held / 1e6:.2f} MB ({held / len(places):.0f} B per chunk)")
    with tempfile.TemporaryDirectory() as tmp:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        places.save(Path(tmp) / "places")
        print(f"save: peak {(tracemalloc.get_traced_memory()[1] - before) / 1e6:.2f} MB above the held places")
        tracemalloc.stop()
        assert ChunkPlaces.load(Path(tmp) / "places").rows() == places.rows()


if __name__ == "__main__":
    main()
