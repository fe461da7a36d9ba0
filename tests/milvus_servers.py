"""Real Milvus servers for the integration tests, started on loopback and killed by PID.

Two kinds, both installed by ``make install`` (the ``dev`` extra):

- ``milvus-2.3.5``: ``milvus-server`` from ``pip install milvus==2.3.5``, a Milvus 2.3.5 standalone with an
  embedded etcd (no BM25 functions, no nullable fields), started with authentication on so a wrong token
  can be tested. It needs ~30 s to come up, its ``milvus`` child ignores SIGTERM, and its embedded etcd
  always binds 127.0.0.1:2379/2380 (so only one can run per machine).
- ``milvus-lite``: ``milvus-lite server --host 127.0.0.1``, the server mode of the current engine (BM25).

Each is started once per test session in a temporary data directory, every port a free loopback one; a
server that cannot start on this machine makes its tests skip with the reason (and its log tail).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from chunkwise.store.milvus import MilvusStore
from chunkwise.store.milvus_connection import KEEPALIVE

ROOT = Path(__file__).resolve().parents[1]

#: milvus-server options that take a port (all set, so nothing collides with a default 19530 server)
_PORT_OPTIONS = (
    "proxy-port",
    "etcd-port",
    "root-coord-port",
    "proxy-internal-port",
    "query-coord-port",
    "query-node-port",
    "index-coord-port",
    "index-node-port",
    "data-coord-port",
    "data-node-port",
)
ROOT_TOKEN = "root:Milvus"


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


#: a pymilvus client's own connection (closed with it; pymilvus shares one per URI and token otherwise, so a
#: "fresh" client would get the old channel back) with chunkwise's keepalive (the test servers keep gRPC's
#: default ping policy, and pymilvus's 10 s pings between calls are answered with GOAWAY too_many_pings)
OWN_CONNECTION = {"dedicated": True, "grpc_options": KEEPALIVE}


def tool(name: str) -> str | None:
    """A console script of this virtual environment (or on PATH)."""
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else shutil.which(name)


@dataclass
class Server:
    """A running server: ``uri``/``token`` to connect, ``bm25`` whether it computes BM25 itself."""

    kind: str
    uri: str
    token: str
    bm25: bool
    proc: subprocess.Popen
    log: Path
    cmd: list[str]
    data: Path

    @property
    def port(self) -> int:
        return int(self.uri.rsplit(":", 1)[1])

    def kill(self) -> None:
        """SIGKILL the server's whole process group (it was started as a session leader), by its PID."""
        kill_tree(self.proc)

    def restart(self, timeout: float = 120.0) -> None:
        """Start the same command on the same data directory and port again (after :meth:`kill`)."""
        self.proc = _spawn(self.cmd, self.log)
        _wait_healthy(self, timeout)


def kill_tree(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=30)


def _spawn(cmd: list[str], log: Path) -> subprocess.Popen:
    with open(log, "ab") as fh:
        return subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=log.parent
        )


def _wait_healthy(server: Server, timeout: float) -> None:
    """Until a client can list collections; raises RuntimeError (with the log tail) when it cannot."""
    from pymilvus import MilvusClient

    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            break
        if port_in_use(server.port):
            client = None
            try:
                client = MilvusClient(uri=server.uri, token=server.token, timeout=5, **OWN_CONNECTION)
                client.list_collections()
                return
            except Exception as exc:  # noqa: BLE001 - still starting
                last = str(exc)
            finally:
                if client is not None:
                    client.close()
        time.sleep(1.0)
    tail = server.log.read_text(errors="replace")[-800:] if server.log.exists() else ""
    kill_tree(server.proc)
    raise RuntimeError(
        f"{server.kind} did not become healthy in {timeout:.0f} s "
        f"(exit code {server.proc.poll()}; last error {last!r}); log tail: {tail}"
    )


def start_milvus_235(data: Path, timeout: float = 150.0) -> Server:
    """Milvus 2.3.5 standalone (``milvus-server`` of the PyPI ``milvus`` package) with auth enabled."""
    exe = tool("milvus-server")
    if exe is None:
        raise FileNotFoundError("milvus-server is not installed (pip install milvus==2.3.5; `make install` does)")
    busy = [p for p in (2379, 2380) if port_in_use(p)]
    if busy:
        raise RuntimeError(f"port(s) {busy} in use: Milvus 2.3.5's embedded etcd always binds 2379/2380")
    ports = free_ports(len(_PORT_OPTIONS))
    cmd = [exe, "--data", str(data)]
    for opt, port in zip(_PORT_OPTIONS, ports):
        cmd += [f"--{opt}", str(port)]
    cmd += ["--authorization-enabled", "true"]
    data.mkdir(parents=True, exist_ok=True)
    log = data / "server.log"
    server = Server("milvus-2.3.5", f"http://127.0.0.1:{ports[0]}", ROOT_TOKEN, False, _spawn(cmd, log), log, cmd, data)
    _wait_healthy(server, timeout)
    return server


def start_milvus_lite(data: Path, port: int | None = None, timeout: float = 150.0) -> Server:
    """The Milvus Lite engine as a gRPC server on loopback (it accepts any token)."""
    exe = tool("milvus-lite")
    if exe is None:
        raise FileNotFoundError("milvus-lite is not installed")
    port = port or free_ports(1)[0]
    data.mkdir(parents=True, exist_ok=True)
    cmd = [exe, "server", "--data-dir", str(data / "lite"), "--host", "127.0.0.1", "--port", str(port)]
    log = data / "server.log"
    server = Server("milvus-lite", f"http://127.0.0.1:{port}", "", True, _spawn(cmd, log), log, cmd, data)
    _wait_healthy(server, timeout)
    return server


# -- what the server tests (Milvus servers, Ray) share ----------------------------------------------------
WORDS = (
    "river stone lamp keeper harbor winter bread oven flour garden rose train ticket night bee honey wax "
    "queen storm fog lens glass tower bell copper salt anchor rope sail gull"
).split()
PARAMS = {"max_tokens": 48}
CLI = "import sys; from chunkwise.cli import main; sys.exit(main(sys.argv[1:]))"
#: the real CLI with the test embedder in place of the ONNX model (what is under test is Milvus, not MiniLM)
FAST_CLI = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); import conftest, chunkwise.embeddings as e; "
    "e.get_embedder = lambda *a, **k: conftest.FakeEmbedder(); " + CLI.split("; ", 1)[1]
)


def write_corpus(folder: Path, seed: int, names: list[str]) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        paras = [
            " ".join(
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
                for _ in range(rng.randint(3, 6))
            )
            for _ in range(rng.randint(4, 7))
        ]
        (folder / name).write_text("\n\n".join(paras), encoding="utf-8")


def new_collection() -> str:
    return "t_" + uuid.uuid4().hex[:12]


def contents(server: Server, collection: str) -> tuple[set[tuple[str, str]], dict[str, str]]:
    """(id, text) of every chunk and source -> content hash of every marker.

    A loaded server can drop a connection (gRPC ``GOAWAY``, ``UNAVAILABLE``): such a read is retried on a
    new connection a few times; what it reads is compared, so a retry cannot hide a wrong result."""
    for attempt in range(5):
        store = MilvusStore(uri=server.uri, token=server.token, collection=collection, timeout=60)
        try:
            store.open()
            rows = {(r["id"], r["text"]) for r in store.scan_chunks(["id", "text"])}
            return rows, {m.source: m.content_hash for m in store.markers().values()}
        except Exception as exc:  # noqa: BLE001 - only transport errors are retried
            if attempt == 4 or not _transient(exc):
                raise
            time.sleep(2.0 * (attempt + 1))  # a loaded server may take a while to take connections again
        finally:
            store.close()
    raise AssertionError("unreachable")


def _transient(exc: BaseException) -> bool:
    """A dropped or refused connection, not an answer: worth a new connection."""
    text = f"{type(exc).__name__} {exc}".lower()
    return any(
        s in text
        for s in (
            "goaway",
            "unavailable",  # also pymilvus's "Fail connecting to server ... or server unavailable"
            "fail connecting to server",  # (seen under load, after a GOAWAY too_many_pings on the old channel)
            "too_many_pings",
            "connection reset",
            "socket closed",
            "connection refused",
            "deadline exceeded",
            "deadline_exceeded",
        )
    )


def cli_cmd(server: Server, *args: str, collection: str, fast: bool = False) -> list[str]:
    """``chunkwise ARGS --uri ... --collection ...``; ``fast``: with the test embedder."""
    code = [FAST_CLI, str(ROOT / "tests")] if fast else [CLI]
    cmd = [sys.executable, "-c", *code, "--no-cache", *args, "--uri", server.uri, "--collection", collection]
    return cmd + (["--token", server.token] if server.token else [])


def cli(
    server: Server, *args: str, collection: str, fast: bool = False, timeout: float = 180
) -> subprocess.CompletedProcess:
    return subprocess.run(
        cli_cmd(server, *args, collection=collection, fast=fast), capture_output=True, text=True, timeout=timeout
    )


def wait_for_chunks(server: Server, collection: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until ``proc`` has written some chunks into ``collection`` (or has ended): the moment to kill.

    Polls on a fresh connection after any error (a dropped channel would poll until the deadline)."""
    from pymilvus import MilvusClient

    deadline = time.monotonic() + timeout
    client = None
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                client = client or MilvusClient(uri=server.uri, token=server.token, timeout=60, **OWN_CONNECTION)
                if client.has_collection(collection + "__state") and client.has_collection(collection):
                    rows = client.query(collection, filter="", output_fields=["count(*)"])
                    if rows and rows[0]["count(*)"] > 0:
                        return
            except Exception:  # noqa: BLE001 - not created or not loaded yet, or the channel dropped
                if client is not None:
                    client.close()
                client = None
            time.sleep(0.5)
    finally:
        if client is not None:
            client.close()
