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


class _Server:
    """A listening socket, so the TCP probe passes and the connection reaches (a fake) pymilvus."""

    def __enter__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *exc):
        self.sock.close()


def _fake_clients(monkeypatch, failing: set[bool], code: int):
    """pymilvus clients that fail with ``code`` when their ``dedicated`` flag is in ``failing``."""
    import pymilvus
    from pymilvus.exceptions import MilvusException

    made = []

    class Client:
        def __init__(self, uri, token, timeout, dedicated=False):
            made.append(dedicated)
            self.dedicated = dedicated

        def list_collections(self, timeout):
            if self.dedicated in failing:
                raise MilvusException(code=code, message="Fail connecting to server on 127.0.0.1")
            return []

        def get_server_version(self, timeout):
            return "v2.5.4"

    monkeypatch.setattr(pymilvus, "MilvusClient", Client)
    return made


def test_a_broken_shared_connection_is_tried_again_on_a_connection_of_its_own(monkeypatch):
    from pymilvus.client.types import Status

    made = _fake_clients(monkeypatch, failing={False}, code=Status.CONNECT_FAILED)
    with _Server() as uri:
        client, caps = connect_server(uri, None, timeout=10.0)
    assert made == [False, True] and client.dedicated
    assert caps is not None


def test_other_failures_and_a_second_failure_are_not_retried(monkeypatch):
    from pymilvus.client.types import Status

    made = _fake_clients(monkeypatch, failing={False, True}, code=Status.CONNECT_FAILED)
    with _Server() as uri, pytest.raises(ChunkwiseError, match="cannot reach the Milvus server"):
        connect_server(uri, None, timeout=10.0)
    assert made == [False, True]  # once more, not a loop
    made = _fake_clients(monkeypatch, failing={False}, code=Status.UNEXPECTED_ERROR)
    with _Server() as uri, pytest.raises(ChunkwiseError):
        connect_server(uri, None, timeout=10.0)
    assert made == [False]
