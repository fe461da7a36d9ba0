"""The configuration a collection records when it is created, and the check that a later run matches it.

One collection holds one vector space built one way: the embedder, the chunking strategy and its
parameters, the vector mode, late chunking and the context mode. :func:`build_config` writes that record;
:func:`differences` names, in words a person can act on, what a run would change, so that
:meth:`~chunkwise.retrieval.index.Index.add` refuses it instead of silently mixing vector spaces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..deprecation import renames_for
from ..document import Document
from ..embeddings.base import Embedder
from ..pipeline.config import PipelineConfig, stage_names
from ..store.rows import jsonable
from ..strategies import Strategy
from ..validation import is_scalar

#: context options that say how to reach or pace the LLM, not what the context is: never recorded
_UNRECORDED_CONTEXT_OPTIONS = frozenset(
    ("api_key", "base_url", "cache", "cache_dir", "contextualizer", "concurrency", "timeout", "retries", "backoff")
)


def printable(value: Any) -> Any:
    """A parameter as the record keeps it: an embedder by its model id, a named object by its name."""
    if hasattr(value, "model_id"):
        return value.model_id
    if hasattr(value, "name") and not is_scalar(value):
        return value.name
    return jsonable(value)


def check_add_options(run: PipelineConfig) -> None:
    """Refuse bad options of ``run``'s context mode before the collection is touched (the configuration's
    own check has refused a bad vector mode, context mode or late-chunking option name), and a late-chunking
    value that is out of range (``late_window`` 0): a collection records what it was built with, so a run
    that would fail at its first document must fail before the record is written."""
    if run.late:
        from ..context.late import check_late_options

        check_late_options(run.late_options)
    if run.context is not None and run.context != "llm":  # check the options now, not at the first document
        from ..context import contextualize

        contextualize(Document(""), [], run.context, **run.context_options)


def build_config(
    strategy: Strategy,
    embedder: Embedder,
    run: PipelineConfig,
    *,
    name: str | None,
    backend: str | None,
    schema: int,
) -> dict[str, Any]:
    """The record of a new collection made as ``run`` says (its ``"index"`` settings); ``name``/``backend``:
    the embedder as it was asked for (the model id when it was given as an object without a name),
    ``schema`` the store's schema version."""
    ctx_opts = {
        k: printable(v)
        for k, v in sorted(run.context_options.items())
        if v is not None and k not in _UNRECORDED_CONTEXT_OPTIONS
    }
    return {
        "schema": schema,
        "embedder": {
            "name": name or embedder.model_id,
            "model_id": embedder.model_id,
            "dim": int(embedder.dim),
            **({"backend": backend} if backend else {}),
        },
        "strategy": {
            "name": strategy.name,
            "config": strategy.config_id(),
            "params": {k: printable(v) for k, v in strategy.get_params().items()},
        },
        **{name: getattr(run, name) for name in stage_names("index")},  # every index setting, as set; then
        "late": bool(run.late),  # the ones recorded in a normal form
        "late_options": {k: v for k, v in sorted(run.late_options.items()) if v is not None} if run.late else {},
        "context_options": ctx_opts if run.context else {},
        "bm25": None,
    }


def checked_config(
    recorded: dict[str, Any] | None, strategy: Strategy, record: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """A run's record (``record()``, its :func:`build_config`) and what it changes in ``recorded`` (``None``:
    a new collection), with ``strategy``'s parameters validated unless they are exactly the recorded ones.

    Those were validated when the collection was made, and chunking validates them again before the first
    document it cuts; a re-index that chunks nothing then loads no tokenizer and, for a semantic strategy,
    makes no embedder to check its window against."""
    try:
        new = record()
    except Exception:
        strategy.validate()  # a parameter that cannot be recorded is one validation names
        raise
    diffs = differences(recorded, new) if recorded is not None else []
    if recorded is None or diffs:
        strategy.validate()
    return new, diffs


def _strategy_difference(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    if old["strategy"].get("config") == new["strategy"]["config"]:
        return None
    changed = sorted(
        k
        for k in set(old["strategy"].get("params", {})) | set(new["strategy"]["params"])
        if old["strategy"].get("params", {}).get(k) != new["strategy"]["params"].get(k)
    )
    what = f"strategy {old['strategy'].get('name')!r}"
    if old["strategy"].get("name") == new["strategy"]["name"] and changed:
        return (
            what
            + " with "
            + ", ".join(
                f"{k}={old['strategy']['params'].get(k)!r} (now {new['strategy']['params'].get(k)!r})" for k in changed
            )
        )
    return what + f" (now {new['strategy']['name']!r})"


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What ``new`` (a run's :func:`build_config`) changes in ``old`` (the recorded one), one phrase each;
    empty when the run may write to the collection."""
    diffs = []
    if old.get("schema") != new["schema"]:
        diffs.append(f"schema version {old.get('schema')} (this chunkwise writes {new['schema']})")
    if (old["embedder"].get("model_id"), old["embedder"].get("dim")) != (
        new["embedder"]["model_id"],
        new["embedder"]["dim"],
    ):
        diffs.append(f"embedder {old['embedder'].get('model_id')!r} (now {new['embedder']['model_id']!r})")
    strategy = _strategy_difference(old, new)
    if strategy:
        diffs.append(strategy)
    # recorded before the renames (late chunking's window, the llm context's max_tokens): the same thing
    for key, was, now in (
        (options, was, now)
        for options in ("late_options", "context_options")
        for was, now in renames_for(options).items()
    ):
        if was in (old.get(key) or {}):
            opts = dict(old[key])
            opts[now] = opts.pop(was)
            old = {**old, key: dict(sorted(opts.items()))}
    for key in stage_names("index"):
        if old.get(key) != new[key]:
            diffs.append(f"{key}={old.get(key)!r} (now {new[key]!r})")
    return diffs


__all__ = ["build_config", "check_add_options", "checked_config", "differences", "printable"]
