"""Old names that still work: one place that warns about them and maps them to the new ones.

Each public name means one thing (``max_tokens`` the chunk cap, ``model_window`` an embedding model's
input limit, ``answer_tokens`` an LLM answer's length, ``late_window`` late chunking's macro window; see
CHANGELOG "Renamed"). An old spelling keeps working and raises a :class:`ChunkwiseDeprecationWarning` that
names the new one and the release that removes the old one (:data:`REMOVED_IN`); the CLI prints these as
one ``chunkwise: warning: ...`` line. Every deprecation message is made by :func:`deprecation_message`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from .errors import ConfigError

#: the release that removes every old name deprecated so far (unless its entry says otherwise)
REMOVED_IN = "0.3.0"


class Rename:
    """One old name that still works: what it is now, the public entry points that accept it (each
    warning's prefix: ``"late chunking: 'window' is deprecated, ..."``) and the release that removes it.

    (A plain class: a dataclass costs ~1 CPU-ms to create on Python 3.11, and every command imports this
    module.)"""

    __slots__ = ("old", "new", "owners", "removed_in")

    def __init__(self, old: str, new: str, owners: tuple[str, ...], removed_in: str = REMOVED_IN) -> None:
        self.old = old
        self.new = new
        self.owners = owners
        self.removed_in = removed_in


#: every renamed parameter, attribute, setting, flag and name: the one table. The public entry point named
#: by an owner translates the old name (``renamed``/``warn_renamed``/``renamed_attribute``/the CLI's
#: ``DeprecatedFlag``); everything behind it sees the new one only. A deprecation message for a name not
#: listed here is a programming error (:func:`deprecation_message` raises ``LookupError``).
RENAMES: tuple[Rename, ...] = (
    # the embedding model's input limit (max_tokens is the chunk cap only)
    Rename("max_tokens", "model_window", ("embedder", "openai embedder", "static embedder")),
    Rename("window", "model_window", ("minilm embedder (model_window = window - 2)",)),
    Rename("--embed-window", "--model-window N-2", ("eval/tune",)),
    Rename("minilm-torch", "minilm", ("embedder name",)),
    # the length of the LLM contextualizer's answer
    Rename("max_tokens", "answer_tokens", ("LLMContextualizer", "context mode 'llm'", "context_options")),
    # late chunking's macro window
    Rename("window", "late_window", ("late chunking", "late_options")),
    # semantic's buffer of window vectors
    Rename("window", "buffer_vectors", ("strategy 'semantic'",)),
    # the keys of a configuration file's run mapping
    Rename("context_opts", "context_options", ("configuration",)),
    Rename("late_opts", "late_options", ("configuration",)),
    # one name per quantity of the structure prior (it meant three)
    Rename("structure_bonus", "break_distance", ("strategy 'semantic'",)),
    Rename("structure_bonus", "break_similarity", ("strategy 'maxmin'",)),
    Rename("structure_bonus", "break_reward", ("strategy 'cohesion'",)),
    # the openai embedder spells its connection settings as chat does (one Endpoint)
    Rename("max_retries", "retries", ("openai embedder",)),
    Rename("api_key_env", "key_envs", ("openai embedder", "get_embedder")),
)


def renames_for(owner: str) -> dict[str, str]:
    """The old -> new names ``owner`` (an entry point of :data:`RENAMES`) still accepts."""
    return {r.old: r.new for r in RENAMES if owner in r.owners}


#: old import paths: module -> {old name: "new.module:name"}; the name still imports from the old module,
#: with a warning (:func:`moved_getattr`), until the release in :data:`MOVED_REMOVED_IN`
MOVED: dict[str, dict[str, str]] = {
    "chunkwise.retrieval.hybrid": {
        "BM25Fallback": "chunkwise.store.bm25:BM25Fallback",
        "RRF_K": "chunkwise.retrieval.fusion:RRF_K",
        "reciprocal_rank_fusion": "chunkwise.retrieval.fusion:reciprocal_rank_fusion",
    },
    "chunkwise.retrieval.index": {
        "RESULT_FIELDS": "chunkwise.retrieval.results:RESULT_FIELDS",
        "AddSettings": "chunkwise.retrieval.add:AddSettings",
        "EMBED_BATCH": "chunkwise.retrieval.ingest:EMBED_BATCH",
    },
    "chunkwise.retrieval.progress": {
        name: f"chunkwise.progress:{name}"
        for name in (
            "Progress",
            "heartbeat_seconds",
            "format_eta",
            "HEARTBEAT_ENV",
            "DEFAULT_HEARTBEAT",
            "PHASES",
            "TTY_REFRESH",
            "RECENT_CALLS",
            "RECENT_WEIGHT",
        )
    },
    "chunkwise.context.late": {"DEFAULT_WINDOW": "chunkwise.context.late:DEFAULT_LATE_WINDOW"},
    "chunkwise.cli.evaluate": {"_add_common": "chunkwise.cli.eval_flags:add_common_options"},
    "chunkwise.segmentation.sentences": {
        "LANGUAGE_MAY_BE_FINAL": "chunkwise.segmentation.sentence_rules:LANGUAGE_MAY_BE_FINAL",
        "LANGUAGE_NEVER_FINAL": "chunkwise.segmentation.sentence_rules:LANGUAGE_NEVER_FINAL",
        "LIST_FINAL": "chunkwise.segmentation.sentence_rules:LIST_FINAL",
        "MAY_BE_FINAL": "chunkwise.segmentation.sentence_rules:MAY_BE_FINAL",
        "MONTHS": "chunkwise.segmentation.sentence_rules:MONTHS",
        "NEVER_FINAL": "chunkwise.segmentation.sentence_rules:NEVER_FINAL",
        "NUMBER_TAKING": "chunkwise.segmentation.sentence_rules:NUMBER_TAKING",
        "ORDINAL_CUES": "chunkwise.segmentation.sentence_rules:ORDINAL_CUES",
        "ROMANCE_DUTCH_NEVER_FINAL": "chunkwise.segmentation.sentence_rules:ROMANCE_DUTCH_NEVER_FINAL",
        "SENTENCE_OPENERS": "chunkwise.segmentation.sentence_rules:SENTENCE_OPENERS",
    },
}
#: the release that removes the old import paths of :data:`MOVED`
MOVED_REMOVED_IN = REMOVED_IN


def moved_getattr(module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``module`` that answers its old names (:data:`MOVED`) with the objects
    of their new homes, warning on each import; any other name is an ``AttributeError`` as usual."""
    table = MOVED[module]

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        from importlib import import_module

        home, _, attr = table[name].partition(":")
        warnings.warn(
            f"{module}.{name} is deprecated, use {home}.{attr} (removed in chunkwise {MOVED_REMOVED_IN})",
            ChunkwiseDeprecationWarning,
            stacklevel=2,
        )
        return getattr(import_module(home), attr)

    return __getattr__


class ChunkwiseDeprecationWarning(DeprecationWarning):
    """An old name or spelling that still works; the message says what to use instead and when it goes."""


def _rename(old: str, new: str) -> Rename:
    """The entry of :data:`RENAMES` that ``old``/``new`` (as a message shows them) name."""
    for r in RENAMES:
        if (old == r.old or f"'{r.old}'" in old) and (new.startswith((r.new, f"'{r.new}'"))):
            return r
    raise LookupError(f"{old} -> {new} is not in chunkwise.deprecation.RENAMES: add it there, with its removal release")


def deprecation_message(old: str, new: str) -> str:
    """``OLD is deprecated, use NEW (removed in chunkwise X)``: the one wording of every deprecation, with
    the removal release of its :data:`RENAMES` entry."""
    return f"{old} is deprecated, use {new} (removed in chunkwise {_rename(old, new).removed_in})"


def warn_renamed(old: str, new: str, where: str = "", stacklevel: int = 3) -> None:
    """Warn that ``old`` is now ``new`` (``where``: what the name belongs to, e.g. ``"minilm embedder"``)."""
    if where and where not in _rename(repr(old), repr(new)).owners:
        raise LookupError(f"{where!r} is not an owner of {old!r} in chunkwise.deprecation.RENAMES")
    owner = f"{where}: " if where else ""
    warnings.warn(owner + deprecation_message(repr(old), repr(new)), ChunkwiseDeprecationWarning, stacklevel=stacklevel)


def renamed_attribute(old: str, new: str, where: str = "") -> property:
    """A property ``old`` that reads and writes attribute ``new``, warning on each use: an old attribute name
    kept on instances (``embedder.max_tokens`` -> ``model_window``). A subclass that assigns ``old`` in its
    own body shadows the property and is not translated: a class attribute means what it says."""

    def get(self: Any) -> Any:
        warn_renamed(old, new, where)
        return getattr(self, new)

    def set_(self: Any, value: Any) -> None:
        warn_renamed(old, new, where)
        setattr(self, new, value)

    return property(get, set_, doc=f"Deprecated name of ``{new}`` (removed in chunkwise {REMOVED_IN}).")


def renamed(kw: dict[str, Any], renames: dict[str, str], where: str = "", stacklevel: int = 4) -> dict[str, Any]:
    """``kw`` with every old key of ``renames`` moved to its new name, warning once per old key.

    Giving both the old and the new name is a :class:`ConfigError` (which one was meant is unknowable).
    """
    out = dict(kw)
    for old, new in renames.items():
        if old not in out:
            continue
        if new in out:
            raise ConfigError(f"{where + ': ' if where else ''}give {new!r} only ({old!r} is its old name)")
        warn_renamed(old, new, where, stacklevel)
        out[new] = out.pop(old)
    return out


__all__ = [
    "ChunkwiseDeprecationWarning",
    "REMOVED_IN",
    "Rename",
    "RENAMES",
    "renames_for",
    "MOVED",
    "MOVED_REMOVED_IN",
    "moved_getattr",
    "deprecation_message",
    "warn_renamed",
    "renamed_attribute",
    "renamed",
]
