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


def _fake_clients(monkeypatch, fail_with: int | None = None):
    """pymilvus clients that record how they were made (and whether closed); ``fail_with``: the code of the
    MilvusException their first call raises."""
    import pymilvus
    from pymilvus.exceptions import MilvusException

    made = []

    class Client:
        def __init__(self, uri, token, timeout, **kwargs):
            self.kwargs, self.closed = kwargs, False
            made.append(self)

        def list_collections(self, timeout):
            if fail_with is not None:
                raise MilvusException(code=fail_with, message="Fail connecting to server on 127.0.0.1")
            return []

        def get_server_version(self, timeout):
            return "v2.5.4"

        def close(self):
            self.closed = True

    monkeypatch.setattr(pymilvus, "MilvusClient", Client)
    return made


#: gRPC's default server policy (what ``milvus-lite server`` keeps): while a call runs, a ping at most every
#: 5 minutes (GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS); between calls none
#: (GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS = 0); a client that pings more is sent GOAWAY too_many_pings
GRPC_SERVER_MIN_PING_MS = 300_000


def test_each_client_has_a_connection_of_its_own_that_keeps_to_the_servers_ping_policy(monkeypatch):
    """pymilvus shares one connection per URI and token unless asked, with the settings and connect deadline
    of whoever opened it first, and pings every 10 s, between calls too: a Milvus Lite server sent GOAWAY
    too_many_pings under load, and the next client of the shared connection failed to connect."""
    made = _fake_clients(monkeypatch)
    with _Server() as uri:
        first, caps = connect_server(uri, None, timeout=10.0)
        second, _ = connect_server(uri, None, timeout=10.0)
    assert made == [first, second] and caps.version == "v2.5.4"
    for client in made:
        assert client.kwargs["dedicated"] is True
        opts = client.kwargs["grpc_options"]
        assert opts["grpc.keepalive_time_ms"] >= GRPC_SERVER_MIN_PING_MS
        assert not opts["grpc.keepalive_permit_without_calls"]


def test_a_failed_first_call_closes_the_connection_and_is_one_line(monkeypatch):
    from pymilvus.client.types import Status

    made = _fake_clients(monkeypatch, fail_with=Status.CONNECT_FAILED)
    with _Server() as uri, pytest.raises(ChunkwiseError, match="cannot reach the Milvus server within 10 s"):
        connect_server(uri, None, timeout=10.0)
    assert len(made) == 1 and made[0].closed  # once, not a loop, and not left open


def test_the_keepalive_settings_reach_pymilvus_grpc_channel(tmp_path):
    """Against a real (in-process) Milvus Lite server: the options are the channel's, not dropped for a
    shared connection that an earlier client opened with pymilvus's defaults."""
    pymilvus = pytest.importorskip("pymilvus")
    server_mod = pytest.importorskip("milvus_lite.adapter.grpc.server")
    server, db, port = server_mod.start_server_in_thread(str(tmp_path / "lite"))
    uri = f"http://127.0.0.1:{port}"
    try:
        earlier = pymilvus.MilvusClient(uri=uri, timeout=30)  # the shared connection, pymilvus's defaults
        client, _ = connect_server(uri, None, timeout=30.0)
        try:
            handler = client._handler
            assert handler is not earlier._handler
            assert handler._grpc_options["grpc.keepalive_time_ms"] >= GRPC_SERVER_MIN_PING_MS
            assert client.list_collections() == []
        finally:
            client.close()
            earlier.close()
        assert handler._channel is None  # closing the client closed its connection
    finally:
        server.stop(grace=1)
        db.close()
