"""A local Ray cluster that chunkwise starts (``--engine ray`` without ``--address``): its node, and every
listener of the cluster, on the loopback address, and Ray's token authentication on, unless the user chose
otherwise (then a warning). The fast tests replace ``ray.init`` by a recorder; the slow one starts a cluster
and reads which addresses its processes listen on."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from chunkwise.retrieval import ray_cluster, ray_engine


class FakeRay(types.SimpleNamespace):
    def __init__(self):
        super().__init__(calls=[], env=[], single=[])

    def is_initialized(self):
        return False

    def init(self, **kw):
        import os

        self.calls.append(kw)
        self.env.append(os.environ.get("RAY_AUTH_MODE"))
        self.single.append(os.environ.get(ray_cluster.SINGLE_MACHINE_VARIABLE))


@pytest.fixture
def fake_ray(monkeypatch):
    fake = FakeRay()
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv(ray_cluster.SINGLE_MACHINE_VARIABLE, raising=False)
    monkeypatch.delitem(sys.modules, "ray", raising=False)  # as in a fresh `chunkwise index --engine ray`
    monkeypatch.setattr(ray_engine, "import_ray", lambda: fake)
    return fake


def test_a_local_cluster_binds_its_node_to_loopback_with_token_auth(fake_ray):
    ingest = ray_engine.RayIngest.__new__(ray_engine.RayIngest)
    ingest.address = None
    ingest._init_ray()
    [kw] = fake_ray.calls
    assert kw["_node_ip_address"] == "127.0.0.1" and kw["address"] is None
    assert fake_ray.env == ["token"]  # set before Ray read it
    assert fake_ray.single == ["0"]  # a loopback node address taken as it is, not made the external one


def test_joining_a_users_cluster_changes_nothing_of_theirs(fake_ray):
    ingest = ray_engine.RayIngest.__new__(ray_engine.RayIngest)
    ingest.address = "ray://head:10001"
    ingest._init_ray()
    [kw] = fake_ray.calls
    assert "_node_ip_address" not in kw and fake_ray.env == [None] and fake_ray.single == [None]


def test_token_auth_turned_off_by_the_user_is_warned_about(fake_ray, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with pytest.warns(RuntimeWarning, match="without token authentication"):
        opts = ray_engine.local_cluster_options()
    assert opts == {"_node_ip_address": "127.0.0.1"}
    import os

    assert os.environ["RAY_AUTH_MODE"] == "disabled"  # the user's choice stands


def test_a_single_machine_cluster_turned_off_by_the_user_is_warned_about(fake_ray, monkeypatch):
    monkeypatch.setenv(ray_cluster.SINGLE_MACHINE_VARIABLE, "1")
    with pytest.warns(RuntimeWarning, match="not on loopback only"):
        ray_engine.local_cluster_options()
    import os

    assert os.environ[ray_cluster.SINGLE_MACHINE_VARIABLE] == "1"


#: run in a fresh process (Ray reads its settings when imported): start the local cluster chunkwise starts,
#: run a task, print the addresses every process of the tree (driver, GCS, raylet, workers) listens on
LISTENERS = r"""
import json, os, sys
from pathlib import Path
from chunkwise.retrieval.ray_cluster import local_cluster_options

def tree(root):
    kids = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo.extend(kids.get(pid, []))
    return out

def listening(pids):
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            pass
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # LISTEN
                found.append(f[1].split(":")[0])
    return found

opts = local_cluster_options()
import ray
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, **opts)
ray.get(ray.remote(lambda: 1).remote())
print(json.dumps(listening(tree(os.getpid()))))
ray.shutdown()
"""

#: /proc/net/tcp{,6} addresses (hex, in the kernel's byte order) of 127.0.0.1 and of ::1 / ::ffff:127.0.0.1
LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_listener_of_a_local_cluster_is_on_loopback(tmp_path):
    pytest.importorskip("ray")
    import json
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", ray_cluster.SINGLE_MACHINE_VARIABLE)}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parent.parent / "src"), env.get("PYTHONPATH", "")]
    )
    env["RAY_gcs_server_port_wait_time_s"] = "120"
    r = subprocess.run(
        [sys.executable, "-c", LISTENERS], capture_output=True, text=True, timeout=540, env=env, cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr[-2000:]
    addresses = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(addresses) >= 3  # the GCS, the raylet and a worker at least: the reading saw the cluster
    assert set(addresses) <= LOOPBACK, addresses
