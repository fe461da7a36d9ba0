"""Milvus Lite's engine is reachable only by the process running chunkwise.

pymilvus alone serves a ``.db`` on an unauthenticated 127.0.0.1 TCP port for the whole run; chunkwise calls
the engine in process instead (store/lite.py): no port and no socket at all, and no pymilvus.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from chunkwise.document import Document
from chunkwise.retrieval.index import Index


def listening_sockets_of_this_process() -> list[str]:
    """The TCP and unix sockets this process listens on (by inode)."""
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
                    found.append("tcp " + cols[1])
    if os.path.exists("/proc/net/unix"):
        with open("/proc/net/unix") as fh:
            next(fh)
            for line in fh:
                cols = line.split()
                if int(cols[3], 16) & 0x10000 and cols[6] in inodes:  # __SO_ACCEPTCON: listening, owned by us
                    found.append("unix " + " ".join(cols[7:]))
    return found


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc")
def test_no_port_and_no_socket(tmp_path, fake_embedder):
    before = set(listening_sockets_of_this_process())  # other tests' servers may be listening
    with Index(db=tmp_path / "x.db", embedder=fake_embedder) as index:
        index.add(
            [Document("The keeper lit the lamp. The ships were safe.", source="a.txt")], params={"max_tokens": 32}
        )
        assert index.search("lamp keeper", k=1)
        assert set(listening_sockets_of_this_process()) - before == set()
        assert stat.S_IMODE(os.stat(tmp_path / "x.db").st_mode) == 0o700
    with Index(db=tmp_path / "x.db", embedder=fake_embedder) as index:  # the database opens again
        assert index.count() >= 1


def test_a_milvus_lite_index_runs_without_pymilvus_or_grpc(tmp_path):
    """Indexing into a ``.db`` and searching it never imports pymilvus (nor pandas through it), gRPC or
    protobuf: what the in-process client saves on every command."""
    script = (
        "import sys\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from conftest import FakeEmbedder\n"
        "from chunkwise.document import Document\n"
        "from chunkwise.retrieval.index import Index\n"
        "with Index(db=sys.argv[1], embedder=FakeEmbedder()) as index:\n"
        "    index.add([Document('The keeper lit the lamp. The ships were safe.', source='a.txt')])\n"
        "    assert index.search('lamp', k=1) and index.search('lamp', k=1, hybrid=False)\n"
        "print(sorted(m for m in ('pymilvus', 'grpc', 'google.protobuf') if m in sys.modules))\n"
    )
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "x.db"), tests], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
