"""Issue 20, failure 7: Milvus Lite's embedded engine is reachable only by the user running chunkwise.

pymilvus alone serves a ``.db`` on an unauthenticated 127.0.0.1 TCP port for the whole run; chunkwise
serves it on a unix socket in a 0700 folder instead (store/lite.py).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from hostile import NOBODY, can_drop_privileges

from chunkwise.document import Document
from chunkwise.retrieval.index import Index


def listening_tcp_sockets_of_this_process() -> list[str]:
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as fh:
            next(fh)
            for line in fh:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:  # state LISTEN, owned by us
                    found.append(cols[1])
    return found


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc")
def test_no_tcp_port_and_a_private_socket(tmp_path, fake_embedder):
    before = set(listening_tcp_sockets_of_this_process())  # other tests' servers may be listening
    with Index(db=tmp_path / "x.db", embedder=fake_embedder) as index:
        index.add(
            [Document("The keeper lit the lamp. The ships were safe.", source="a.txt")], params={"max_tokens": 32}
        )
        assert set(listening_tcp_sockets_of_this_process()) - before == set()
        engine = index.store._engine
        assert engine is not None and engine.uri.startswith("unix:")
        path = engine.uri[len("unix:") :]
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(tmp_path / "x.db").st_mode) == 0o700
        if can_drop_privileges():
            probe = (
                "import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    print('refused')\n"
                "else:\n    print('connected')\n"
            )
            done = subprocess.run(
                [
                    "setpriv",
                    f"--reuid={NOBODY}",
                    f"--regid={NOBODY}",
                    "--clear-groups",
                    sys.executable,
                    "-c",
                    probe,
                    path,
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.stdout.strip() == "refused", done.stderr
    assert not os.path.exists(os.path.dirname(path))  # the socket folder is removed on close
    with Index(db=tmp_path / "x.db", embedder=fake_embedder) as index:  # and the database opens again
        assert index.count() >= 1
