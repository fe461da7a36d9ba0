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
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: milvus-server options that take a port (all set, so nothing collides with a default 19530 server)
_PORT_OPTIONS = ("proxy-port", "etcd-port", "root-coord-port", "proxy-internal-port", "query-coord-port",
                 "query-node-port", "index-coord-port", "index-node-port", "data-coord-port", "data-node-port")
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
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=log.parent)


def _wait_healthy(server: Server, timeout: float) -> None:
    """Until a client can list collections; raises RuntimeError (with the log tail) when it cannot."""
    from pymilvus import MilvusClient

    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            break
        if port_in_use(server.port):
            try:
                client = MilvusClient(uri=server.uri, token=server.token, timeout=5)
                client.list_collections()
                client.close()
                return
            except Exception as exc:  # noqa: BLE001 - still starting
                last = str(exc)
        time.sleep(1.0)
    tail = server.log.read_text(errors="replace")[-800:] if server.log.exists() else ""
    kill_tree(server.proc)
    raise RuntimeError(f"{server.kind} did not become healthy in {timeout:.0f} s "
                       f"(exit code {server.proc.poll()}; last error {last!r}); log tail: {tail}")


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
    server = Server("milvus-2.3.5", f"http://127.0.0.1:{ports[0]}", ROOT_TOKEN, False, _spawn(cmd, log), log,
                    cmd, data)
    _wait_healthy(server, timeout)
    return server


def start_milvus_lite(data: Path, port: int | None = None, timeout: float = 60.0) -> Server:
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
