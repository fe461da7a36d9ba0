"""A local Ray cluster that chunkwise starts for ``--engine ray`` without ``--address``: how it is exposed.

Whoever can reach a Ray cluster's ports can run code in it. Ray (2.x, checked with 2.60) has no setting that
binds its gRPC servers (GCS, raylet, workers) to loopback only, so the cluster chunkwise starts gets what Ray
does offer: its node on the loopback address, and token authentication.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

#: where a local cluster that chunkwise starts says its node is (workers and the driver talk over loopback)
LOCAL_NODE_IP = "127.0.0.1"


def local_cluster_options() -> dict[str, Any]:
    """``ray.init`` options for a local cluster chunkwise starts (no ``--address``): its node on the loopback
    address, and Ray's token authentication on (``RAY_AUTH_MODE=token``, a token created in
    ``~/.ray/auth_token`` when none exists) unless the user set ``RAY_AUTH_MODE`` themselves, with a warning
    when they turned it off. Ray's own gRPC servers (GCS, raylet, workers) listen on every interface
    whatever the node address; the token is what keeps another machine from running code in them."""
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode is None:
        if "ray" not in sys.modules:  # read once, when Ray is imported (Ray 2.5x+ turns it on itself then)
            os.environ["RAY_AUTH_MODE"] = "token"
    elif mode.lower() != "token":
        warnings.warn(
            f"RAY_AUTH_MODE={mode}: the local Ray cluster starts without token authentication; its ports "
            "listen on every interface, so anyone who can reach this machine can run code in it",
            RuntimeWarning,
            stacklevel=3,
        )
    return {"_node_ip_address": LOCAL_NODE_IP}


__all__ = ["LOCAL_NODE_IP", "local_cluster_options"]
