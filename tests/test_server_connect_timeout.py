"""``--uri`` to a server that is down fails at the TCP connection, within a stated bound (3 s, or
``--timeout`` if shorter), with one line; pymilvus's own retries are never entered."""

from __future__ import annotations

import socket

import pytest

from chunkwise.cli import main
from chunkwise.errors import ChunkwiseError
from chunkwise.store import milvus_connection
from chunkwise.store.milvus_connection import CONNECT_TIMEOUT, connect_server

pytest.importorskip("pymilvus")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def no_pymilvus_client(monkeypatch):
    """Fails the test if the connection gets as far as pymilvus (which retries for seconds)."""
    import pymilvus

    def refuse(*a, **k):
        raise AssertionError("pymilvus was asked to connect to a closed port")

    monkeypatch.setattr(pymilvus, "MilvusClient", refuse)


def test_a_closed_loopback_port_fails_at_once_with_the_bound_stated(no_pymilvus_client):
    port = _closed_port()
    with pytest.raises(ChunkwiseError) as err:
        connect_server(f"http://127.0.0.1:{port}", None, timeout=10.0)
    text = str(err.value)
    assert "cannot reach the Milvus server" in text and f"127.0.0.1:{port}" in text
    assert f"within {CONNECT_TIMEOUT:g} s" in text


def test_the_connect_bound_is_the_shorter_of_3_s_and_timeout(monkeypatch):
    seen = []

    def silent(address, timeout):
        seen.append((address, timeout))
        raise TimeoutError

    monkeypatch.setattr(socket, "create_connection", silent)
    for timeout, bound in ((10.0, CONNECT_TIMEOUT), (1.5, 1.5)):
        with pytest.raises(ChunkwiseError, match=f"no answer from milvus.example:19530 within {bound:g} s"):
            milvus_connection.connect_server("http://milvus.example", None, timeout=timeout)
    assert seen == [(("milvus.example", 19530), CONNECT_TIMEOUT), (("milvus.example", 19530), 1.5)]


def test_the_command_line_says_it_in_one_line(capsys, no_pymilvus_client, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    port = _closed_port()
    assert main(["search", "anything", "--uri", f"http://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("chunkwise: error: ") and "gave up within 3 s" in err[0], err
    assert list(tmp_path.iterdir()) == []
