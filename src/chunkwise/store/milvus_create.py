"""Creating an index's collections in Milvus, safely when two clients race to create the same index.

The state collection is created with the configuration's fingerprint as a collection property (and in its
description, for servers that drop unknown properties). Milvus creates a collection atomically, so when two
clients race, every one of them reads back the same winner's fingerprint and the loser is refused with a
clear message instead of replacing the winner's collections. Nothing existing is dropped unless the caller
asks to replace it, or it is the leftover of a creation killed before its config row was written (no row
appears for a while): the config row is written last, and no chunk is written before it exists.

Functions here take the store; :meth:`~chunkwise.store.milvus.MilvusStore.create` calls :func:`create`.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from . import milvus_search
from .lite import LiteClient
from .milvus_connection import ServerCapabilities, failures, message
from .milvus_schema import (
    CONFIG_ID,
    CONFIG_PROPERTY,
    OUTPUT_FIELDS,
    CollectionSpec,
    IndexSpec,
    chunk_index_params,
    pymilvus_index_params,
    stable_config_hash,
    state_row,
)

if TYPE_CHECKING:
    from .milvus import MilvusStore


def schema(store: MilvusStore, spec: CollectionSpec):
    """``spec`` in the types of the store's client (the in-process one takes it as it is)."""
    return spec if isinstance(store.connect(), LiteClient) else spec.to_pymilvus()


def index_params(store: MilvusStore, spec: IndexSpec):
    return spec if isinstance(store.connect(), LiteClient) else pymilvus_index_params(spec)


def read_config(store: MilvusStore) -> dict[str, Any] | None:
    """The recorded configuration, or ``None`` for an index that does not exist (yet).

    Read once per connection (an index's configuration changes only when this store recreates it);
    "does not exist" is asked again every time, since another client may create the index meanwhile."""
    milvus_search.follow_runs(store)  # copies held from a run finished since: forgotten, read again
    if store._config is not None:
        return dict(store._config)
    client = store.connect()
    with store._errors("read the index configuration"):
        if not client.has_collection(store.state_collection):
            if client.has_collection(store.collection):
                raise ConfigError(
                    f"collection {store.collection!r} exists but was not made by chunkwise "
                    "(no state collection); choose another --collection",
                    source=store.location,
                )
            return None
        store._load(store.state_collection)
        rows = client.get(store.state_collection, ids=[CONFIG_ID], output_fields=["data"])
    if not rows:
        return None
    store._config = dict(rows[0]["data"])
    return dict(store._config)


def create(store: MilvusStore, config: dict[str, Any], dim: int, replace: bool = False) -> None:
    """Create the index and record ``config``, unless another client just did (create-if-absent)."""
    client = store._writer()
    store._forget()
    fingerprint = "chunkwise-config:" + stable_config_hash(config)
    with store._errors("create the index"):
        if replace:
            drop_all(store)
        _claim_state_collection(store, fingerprint)
        try:
            client.create_index(store.state_collection, index_params(store, store._state_index()), sync=False)
        except failures():  # the racing winner made it already
            pass
        if not client.has_collection(store.collection):
            try:
                store._create_chunks(dim)
            except failures():  # a racing client with the same configuration won
                if not appears(store, store.collection):
                    raise
        store._load(store.state_collection)
        client.upsert(store.state_collection, [state_row(CONFIG_ID, "config", "", "", 0, config)])


def _claim_state_collection(store: MilvusStore, fingerprint: str) -> None:
    """The state collection exists with this configuration's fingerprint, or a clear refusal."""
    for attempt in range(2):
        create_if_absent(store, store.state_collection, fingerprint)
        found = description(store, store.state_collection)
        if fingerprint in found:
            return
        if not found.startswith("chunkwise-config:") and attempt == 0 and config_row(store) is None:
            drop_all(store)  # a state collection of an older chunkwise, never completed: start over
            continue
        if wait_for_config_row(store) is None and attempt == 0:
            drop_all(store)  # a creation killed half-way (no config row ever came): start over
            continue
        raise ConfigError(
            f"another client created collection {store.collection!r} at the same time with a different "
            "configuration; run again to see what it records, or use another --collection",
            source=store.location,
        )


def open_collections(store: MilvusStore) -> None:
    """Load the collections for search and find out whether Milvus computes BM25 itself (once per
    connection: the schema of a collection does not change while it exists)."""
    if store._opened:  # set by this connection (or by a search that holds its copies: milvus_search.open_copies)
        return
    client = store.connect()
    with store._errors("open the index"):
        desc = client.describe_collection(store.collection)
        fields = {f.get("name"): f for f in desc.get("fields", [])}
        store.bm25_builtin = "sparse" in fields
        store.nullable = bool(fields.get("page_start", {}).get("nullable"))
        store.dim = int((fields.get("vector", {}).get("params") or {}).get("dim") or 0)
        # an index of schema 1 has no source offsets: it stays searchable (the hits lack them); adding
        # to it is refused by the configuration check ("built with schema version 1")
        store.output_fields = [f for f in OUTPUT_FIELDS if f in fields]
        for name in (store.collection, store.state_collection):
            store._load(name)
    store._opened = True


def drop_all(store: MilvusStore) -> None:
    client = store.connect()
    store._forget()
    for name in (store.collection, store.state_collection):
        if client.has_collection(name):
            client.drop_collection(name)
        store._loaded.discard(name)


def create_if_absent(store: MilvusStore, name: str, description: str) -> None:
    """Create the state collection; an error because it exists already (a racing client) is not one.
    (Servers answer a racing duplicate with different texts, raw errno ones included.)"""
    client = store.connect()
    try:
        client.create_collection(
            name,
            schema=schema(store, store._state_schema(description)),
            consistency_level="Strong",
            properties={CONFIG_PROPERTY: description},
        )
    except failures():
        if appears(store, name):
            return
        raise ConfigError(
            f"could not create collection {store.collection!r}, and no other client did "
            "either; is the server healthy? run again",
            source=store.location,
        ) from None


def appears(store: MilvusStore, name: str, seconds: float = 5.0) -> bool:
    """Does ``name`` exist, or appear within ``seconds``? A racing winner's collection can take a
    moment to register after the loser's create call has already failed."""
    deadline = time.monotonic() + seconds
    while not store.connect().has_collection(name):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def description(store: MilvusStore, name: str) -> str:
    """The fingerprint recorded at creation (a collection property; the description too, for servers
    that drop unknown properties)."""
    desc = store.connect().describe_collection(name)
    props = desc.get("properties") or {}
    return str(props.get(CONFIG_PROPERTY) or desc.get("description") or "")


def config_row(store: MilvusStore) -> dict | None:
    client = store.connect()
    try:
        store._load(store.state_collection)
        rows = client.get(store.state_collection, ids=[CONFIG_ID], output_fields=["data"])
    except Exception:  # noqa: BLE001 - not loadable yet (no index): no row
        return None
    return dict(rows[0]["data"]) if rows else None


def wait_for_config_row(store: MilvusStore, seconds: float = 3.0) -> dict | None:
    """The config row a racing creator is about to write, or ``None`` when none comes."""
    deadline = time.monotonic() + seconds
    while True:
        row = config_row(store)
        if row is not None or time.monotonic() > deadline:
            return row
        time.sleep(0.2)


def engine_bm25(store: MilvusStore) -> bool:
    """Whether a new chunk collection gets Milvus's BM25 function. Not on Milvus Lite in process, unless
    ``client_bm25=False`` asks for the engine's BM25: there hybrid search ranks with chunkwise's own postings
    (:attr:`~MilvusStore.uses_client_bm25`), and the engine's function would analyse every text written and
    hold its sparse vectors and their index in this process for nothing (measured in
    benchmarks/results/store.md)."""
    return store.db is None or store.client_bm25 is False


def create_chunks(store: MilvusStore, dim: int) -> None:
    """The chunk collection, with Milvus's BM25 where the server has it. A server older than Milvus 2.5
    refuses BM25 functions: then it is created without them, and hybrid search uses bm25s instead."""
    client = store.connect()
    caps = store.capabilities or ServerCapabilities("unknown")
    for bm25 in (True, False) if caps.bm25 and engine_bm25(store) else (False,):
        try:
            client.create_collection(
                store.collection,
                schema=schema(store, store._chunk_schema(dim, bm25, caps.nullable)),
                consistency_level="Strong",
            )
            client.create_index(store.collection, index_params(store, chunk_index_params(bm25)), sync=False)
            return
        except failures() as exc:
            if not bm25 or not re.search(
                r"function|bm25|analyzer|sparse|create index on \d+ field", message(exc), re.I
            ):
                raise
            if client.has_collection(store.collection):
                client.drop_collection(store.collection)


__all__ = ["read_config", "create", "open_collections", "drop_all", "create_chunks", "engine_bm25"]
