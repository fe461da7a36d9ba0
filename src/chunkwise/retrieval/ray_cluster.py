"""A local Ray cluster that chunkwise starts for ``--engine ray`` without ``--address``: how it is exposed.

Whoever can reach a Ray cluster's ports can run code in it. Ray's servers (GCS, raylet, workers, the
runtime-env agent) listen on the node's address, and Ray makes a node address of ``127.0.0.1`` the
machine's external one (``ray.init(_node_ip_address="127.0.0.1")`` alone is overridden: its
``resolve_ip_for_localhost``) unless it is told the cluster is a single machine's, which it reads from
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (checked with Ray 2.60: then every listener of the cluster and of the
driver is on ``127.0.0.1``). So the cluster chunkwise starts gets that, its node on the loopback address, and
token authentication besides.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

#: where a local cluster that chunkwise starts says its node is (workers and the driver talk over loopback)
LOCAL_NODE_IP = "127.0.0.1"
#: read by Ray when imported: "0" makes it take a node address of loopback as it is (no multi-machine cluster)
SINGLE_MACHINE_VARIABLE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def local_cluster_options() -> dict[str, Any]:
    """``ray.init`` options for a local cluster chunkwise starts (no ``--address``): its node, and so every
    server of the cluster, on the loopback address (:data:`SINGLE_MACHINE_VARIABLE` ``=0`` unless the user
    set it), and Ray's token authentication on (``RAY_AUTH_MODE=token``, a token created in
    ``~/.ray/auth_token`` when none exists) unless the user set ``RAY_AUTH_MODE`` themselves; a warning
    for either turned off by the user. Both are read when Ray is imported: in a process that imported it
    before (not ``chunkwise index``), they apply to its next import only."""
    mode = os.environ.get("RAY_AUTH_MODE")
    imported = "ray" in sys.modules  # Ray reads both variables once, when it is imported
    if mode is None:
        if not imported:  # (Ray 2.5x+ turns token authentication on itself then)
            os.environ["RAY_AUTH_MODE"] = "token"
    elif mode.lower() != "token":
        warnings.warn(
            f"RAY_AUTH_MODE={mode}: the local Ray cluster starts without token authentication; anyone who can "
            "reach its ports can run code in it",
            RuntimeWarning,
            stacklevel=3,
        )
    single = os.environ.setdefault(SINGLE_MACHINE_VARIABLE, "0")
    if single.strip().lower() not in ("0", "false", "no", "off"):
        warnings.warn(
            f"{SINGLE_MACHINE_VARIABLE}={single}: the local Ray cluster listens on this machine's network "
            "address, not on loopback only",
            RuntimeWarning,
            stacklevel=3,
        )
    return {"_node_ip_address": LOCAL_NODE_IP}


__all__ = ["LOCAL_NODE_IP", "SINGLE_MACHINE_VARIABLE", "local_cluster_options"]
