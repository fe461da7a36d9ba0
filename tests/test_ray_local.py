"""A local Ray cluster that chunkwise starts (``--engine ray`` without ``--address``): its node on the
loopback address and Ray's token authentication on, unless the user chose otherwise (then a warning).
No cluster is started here: ``ray.init`` is replaced by a recorder."""

from __future__ import annotations

import sys
import types

import pytest

from chunkwise.retrieval import ray_engine


class FakeRay(types.SimpleNamespace):
    def __init__(self):
        super().__init__(calls=[], env=[])

    def is_initialized(self):
        return False

    def init(self, **kw):
        import os

        self.calls.append(kw)
        self.env.append(os.environ.get("RAY_AUTH_MODE"))


@pytest.fixture
def fake_ray(monkeypatch):
    fake = FakeRay()
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
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


def test_joining_a_users_cluster_changes_nothing_of_theirs(fake_ray):
    ingest = ray_engine.RayIngest.__new__(ray_engine.RayIngest)
    ingest.address = "ray://head:10001"
    ingest._init_ray()
    [kw] = fake_ray.calls
    assert "_node_ip_address" not in kw and fake_ray.env == [None]


def test_token_auth_turned_off_by_the_user_is_warned_about(fake_ray, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with pytest.warns(RuntimeWarning, match="without token authentication"):
        opts = ray_engine.local_cluster_options()
    assert opts == {"_node_ip_address": "127.0.0.1"}
    import os

    assert os.environ["RAY_AUTH_MODE"] == "disabled"  # the user's choice stands
