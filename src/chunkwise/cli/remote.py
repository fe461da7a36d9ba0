"""``search``/``ask --server URL``: send the query to a running ``chunkwise serve`` instead of opening the index.

A command-line query pays a cold start every time (imports, opening Milvus Lite, loading the embedding
model: seconds), while a server that already holds the index answers in a fraction of a second. So
``--server URL`` (or ``$CHUNKWISE_SERVER``) posts the query to the app's ``/search`` or ``/ask`` and prints
what the local path prints, from the same ``SearchResult``/``Answer`` fields. Requests go through the
project's one HTTP client (:mod:`chunkwise.http`): no redirects, a deadline, a size cap; the app's token
comes from ``$CHUNKWISE_SERVE_TOKEN``, the variable ``chunkwise serve --token`` defaults to.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import ConfigError

SERVER_ENV = "CHUNKWISE_SERVER"
TOKEN_ENV = "CHUNKWISE_SERVE_TOKEN"
#: seconds to connect or wait between reads, and for a whole request (an answer from a chat model the
#: server calls can take a while)
TIMEOUT = 60.0
DEADLINE = 300.0


def add_server_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="send the query to a running `chunkwise serve` (e.g. http://127.0.0.1:8000; default "
        f"${SERVER_ENV}): no cold start; its token from ${TOKEN_ENV}",
    )


def server_url(args: argparse.Namespace) -> str | None:
    """The server to ask: ``--server``, else ``$CHUNKWISE_SERVER`` unless the command names a local index
    (``--db``/``--uri`` given on the command line win over the environment)."""
    url = getattr(args, "server", None)
    if url:
        if getattr(args, "db", None) or getattr(args, "uri", None):
            raise ConfigError("--server searches the server's own index: drop --db/--uri (or --server)")
        return url
    if getattr(args, "db", None) or getattr(args, "uri", None):
        return None
    return os.environ.get(SERVER_ENV) or None


def _refuse_local_only(args: argparse.Namespace, flags: dict[str, bool]) -> None:
    given = [name for name, on in flags.items() if on]
    if given:
        raise ConfigError(
            f"{', '.join(given)} cannot be sent to a server (it uses its own); "
            "drop them or search locally without --server"
        )


def post(url: str, route: str, payload: dict[str, Any]) -> Any:
    """POST ``payload`` to ``url + route`` and return the JSON answer; every failure is one line naming
    the server."""
    from ..http import Endpoint, EndpointError, JSONClient

    endpoint = Endpoint(
        base_url=url,
        model="chunkwise",
        route=route,
        key_envs=(TOKEN_ENV,),
        timeout=TIMEOUT,
        deadline=DEADLINE,
        retries=1,
        label="chunkwise server",
    )
    try:
        return JSONClient(endpoint, key_hint=f"set ${TOKEN_ENV} to the server's token").post(payload)
    except EndpointError as exc:
        # the client's 404 hint is about OpenAI-style base URLs ending in /v1, not this app
        raise ConfigError(
            exc.problem.replace(" (is the base URL right? it usually ends in /v1)", ""),
            source=exc.source or endpoint.url,
        ) from None


def search(args: argparse.Namespace, url: str, settings: dict[str, Any]) -> list:
    """The server's results as :class:`~chunkwise.retrieval.index.SearchResult` objects, as ``Index.search``
    returns them locally."""
    from ..retrieval.index import SearchResult

    _refuse_local_only(args, {"--filter": bool(args.filter)})
    body = post(url, "/search", {"query": args.query, "k": args.k, **settings})
    return [SearchResult.from_dict(d) for d in body.get("results", [])]


def ask(args: argparse.Namespace, url: str, settings: dict[str, Any]):
    """The server's :class:`~chunkwise.llm.answer.Answer` to ``args.question`` (its index, its model)."""
    from ..llm.answer import Answer

    _refuse_local_only(
        args,
        {"--filter": bool(args.filter), "--llm-base-url": bool(args.llm_base_url), "--llm-model": bool(args.llm_model)},
    )
    payload: dict[str, Any] = {"question": args.question, "k": args.k, **settings}
    if args.min_score is not None:
        payload["min_score"] = args.min_score
    return Answer.from_dict(post(url, "/ask", payload))


__all__ = ["add_server_option", "server_url", "search", "ask", "SERVER_ENV", "TOKEN_ENV"]
