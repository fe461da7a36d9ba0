"""Clients racing to create the same new collection with different configurations.

Two clients of one Milvus engine (Milvus Lite's, served over gRPC like a server) start at the
same moment: exactly one creates the collection, the other is refused with a clear message (no raw errno
text), and the winner's collection is never replaced. With the same configuration, both succeed.
"""

from __future__ import annotations

import threading

import pytest
from conftest import FakeEmbedder

from chunkwise.document import Document
from chunkwise.errors import ChunkwiseError
from chunkwise.retrieval.index import Index

DOCS = [
    Document(f"The keeper {k} lit the lamp. Ships passed the harbour in the storm. Bees came back.", source=f"d{k}.txt")
    for k in range(3)
]


@pytest.fixture
def server(tmp_path):
    """Milvus Lite's engine served in this process as pymilvus serves a ``.db`` path (gRPC on loopback)."""
    from milvus_lite.server_manager import server_manager_instance

    path = str(tmp_path / "server.db")
    uri = server_manager_instance.start_and_get_uri(path)
    if not uri:
        pytest.skip("this milvus-lite cannot serve a database")
    yield uri if "://" in uri else "http://" + uri
    server_manager_instance.release_server(path)


def race(uri: str, params: list[dict], collection: str) -> list[object]:
    barrier = threading.Barrier(len(params))
    results: list[object] = [None] * len(params)

    def client(i: int) -> None:
        try:
            with Index(uri=uri, collection=collection, embedder=FakeEmbedder()) as index:
                barrier.wait()
                results[i] = index.add(DOCS, params=params[i])
        except ChunkwiseError as exc:
            results[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(params))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


@pytest.mark.parametrize("trial", range(4))
def test_racing_creators_with_different_configurations(server, trial):
    name = f"race{trial}"
    results = race(server, [{"max_tokens": 16}, {"max_tokens": 24}], name)
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(errors) == 1, results
    message = str(errors[0])
    assert "Errno" not in message and ("at the same time" in message or "was built with" in message), message
    winner = 0 if errors[0] is results[1] else 1
    with Index(uri=server, collection=name, embedder=FakeEmbedder()) as index:
        assert index.config["strategy"]["params"]["max_tokens"] == [16, 24][winner]
        assert len(index.documents()) == len(DOCS)


def test_racing_creators_with_the_same_configuration_both_succeed(server):
    results = race(server, [{"max_tokens": 16}, {"max_tokens": 16}], "same")
    assert not any(isinstance(r, Exception) for r in results), results
