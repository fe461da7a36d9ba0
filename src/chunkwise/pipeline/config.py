"""The run configuration: one type for how documents are chunked, embedded and retrieved.

A :class:`PipelineConfig` is what ``chunkwise tune`` writes, what every ``--config`` reads (``index``,
``search``, ``ask``, ``eval``, ``chunk``), what an evaluation run is (``RunSpec`` is this class) and what
``Index.add``/``Index.search``/``Index.ask`` run with (``config=``; their keyword arguments override it
through :func:`run_config`). Each setting is declared once, as a field made by :func:`setting`, with its
default, its check, its help, the stage that takes it and its command-line flag; :meth:`PipelineConfig.
validate` is the one place they are checked, so a tuned ``rrf_k`` means the same to ``eval`` and to
``search``.

The file is JSON, ``{"strategy": NAME, "params": {...}, "run": {...}}`` plus what ``tune`` records about
how it chose (``"tuned"``, kept as it is). ``run`` holds the settings below; a file written by
:meth:`PipelineConfig.save` always spells out the retrieval settings. A missing key takes the default; an
unknown key is an error naming the valid ones.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..context import CONTEXT_MODE, CONTEXT_MODES
from ..deprecation import renamed, renames_for
from ..errors import ConfigError
from ..strategies import DEFAULT_STRATEGY, STRATEGY_NAMES
from ..validation import Constraint, InstanceOf, Interval, MappingOf, Options, check, constrained, is_number
from .rerank_spec import RERANK_DEPTH, RERANK_KINDS, _rerank, _rerank_depth, parse_rerank

#: how a chunk's vector is made: its text embedded, or pooled from the sentence vectors a semantic strategy
#: already computed
VECTOR_MODES = ("text", "pool")
#: options of late chunking (``chunkwise.context.late_chunk_vectors``)
LATE_OPTIONS = ("late_window", "overlap", "macro")
#: how hybrid retrieval fuses the vector and BM25 rankings (``chunkwise.retrieval.fusion``)
FUSION_MODES = ("rrf", "zscore")
#: the constant of reciprocal rank fusion (Cormack et al.); larger values flatten the difference between ranks
RRF_K = 60
#: weight of the vector scores in z-score fusion (BM25 gets ``1 - DENSE_WEIGHT``). 0.8 measured best over
#: transcripts, code Q&A and Chroma's corpora together (benchmarks/bench_retrieval.py, docs/evaluation.md):
#: 0.7 gains as much on prose but loses significantly to vectors alone on code, whose identifiers BM25 reads
#: poorly; at 0.8 no set is significantly worse than dense
DENSE_WEIGHT = 0.8
#: how search, ask and eval retrieve unless told otherwise: BM25 and vectors fused by z-scores, chosen by
#: measurement on public sets of different kinds (benchmarks/bench_retrieval.py, docs/evaluation.md,
#: "Dense or hybrid"); ``hybrid=False`` / ``--dense`` is plain vector search
DEFAULT_HYBRID = True
DEFAULT_FUSION = "zscore"
#: old spellings of run keys, still read (with a deprecation warning)
OLD_RUN_KEYS = renames_for("configuration")


#: how a bool may be spelled where text is all there is (an environment variable, a ``key=value`` run spec)
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _bool_text(value: Any) -> Any:
    """A bool's text spelling (``"yes"``, ``"off"``...) as the bool it means; anything else as it is."""
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    return value


_bool = constrained(InstanceOf(bool, "true or false"), before=_bool_text)


def _choice(options: tuple[str, ...]) -> Callable[[str, Any], Any]:
    return constrained(Options(*options))


#: a context mode, ``None`` or ``"none"`` (kept as ``None``: no context)
_context = constrained(*CONTEXT_MODE, convert=lambda value: None if value == "none" else value)
#: a mapping of names to values (``params``, ``context_options``...), ``None`` for an empty one
_mapping = constrained(MappingOf(), None, convert=lambda value: {} if value is None else dict(value))


def _late_options(name: str, value: Any) -> dict[str, Any]:
    options = renamed(_mapping(name, value), renames_for("late_options"), name)
    unknown = sorted(set(options) - set(LATE_OPTIONS))
    if unknown:
        raise ConfigError(f"late chunking has no option {', '.join(unknown)}; valid: {', '.join(LATE_OPTIONS)}")
    return options


#: an int is an int, as every int parameter of the validation module (``rrf_k: 60.0`` is refused, as a
#: strategy's ``max_tokens: 60.0`` is, by the API, every ``--config`` file and the web API alike)
#: the declaration of ``rrf_k`` (also what :func:`~chunkwise.retrieval.fusion.reciprocal_rank_fusion` takes)
RRF_K_VALUES = Interval(int, 0, None)
_non_negative_int = constrained(RRF_K_VALUES)


_unit_interval = constrained(Interval(float, 0, 1), convert=float)


#: how search results are widened before a reader sees them (``chunkwise.retrieval.expand``)
EXPAND_MODES = ("neighbors:N", "section", "parent:TOKENS", "auto")
#: the expansion a reader gets under a token budget when none is asked for: by document kind
#: (``auto``: neighbours for text without headings or pages, the hit alone elsewhere; measured in
#: benchmarks/results/defaults-matrix.md)
BUDGET_EXPAND = "auto"
#: the ``N`` of a bare ``neighbors`` and the ``TOKENS`` of a bare ``parent``
EXPAND_DEFAULTS = {"neighbors": 1, "parent": 512}


def parse_expand(value: Any) -> tuple[str, int | None] | None:
    """``"neighbors:2"`` -> ``("neighbors", 2)``, ``"section"`` -> ``("section", None)``, ``"parent:512"``
    -> ``("parent", 512)``; ``None``/``"none"`` -> ``None``. Here, below the retrieval layer, so a
    configuration file's ``expand`` is checked when it is read, not when a search first uses it."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    problem = f"expand must be one of none, {', '.join(EXPAND_MODES)}, got {value!r}"
    if not isinstance(value, str):
        raise ConfigError(problem)
    kind, sep, number = value.strip().lower().partition(":")
    if kind in ("section", "auto") and not sep:
        return (kind, None)
    if kind not in EXPAND_DEFAULTS:
        raise ConfigError(problem)
    if not sep:
        return (kind, EXPAND_DEFAULTS[kind])
    try:
        n = int(number)
    except ValueError:
        raise ConfigError(problem) from None
    if n < (0 if kind == "neighbors" else 1):
        raise ConfigError(f"{problem} ({'N must be >= 0' if kind == 'neighbors' else 'TOKENS must be >= 1'})")
    return (kind, n)


def parse_budget(value: Any) -> int | None:
    """A token budget: a positive integer, or ``"2k"`` for 2000; ``None`` for no budget."""
    if value is None:
        return None
    problem = f"budget must be a positive number of tokens (e.g. 2000 or 2k), got {value!r}"
    if isinstance(value, str):
        text = value.strip().lower()
        scale = 1000 if text.endswith("k") else 1
        try:
            value = float(text[:-1] if scale > 1 else text) * scale
        except ValueError:
            raise ConfigError(problem) from None
    if not is_number(value) or not math.isfinite(value) or value < 1 or int(value) != value:
        raise ConfigError(problem)
    return int(value)


class ChunkSizes(Constraint):
    """Chunk sizes (``max_tokens``) whose rankings an evaluation run fuses: two or more distinct positive
    integers."""

    def satisfied_by(self, value: Any) -> bool:
        size = Interval(int, 1, None)
        return isinstance(value, (list, tuple)) and all(map(size.satisfied_by, value)) and len(set(value)) >= 2

    def __str__(self) -> str:
        return "two or more chunk sizes (max_tokens), e.g. [128, 512]"

    def invalid(self) -> list[Any]:
        return [[128], [128, 128], [128, True], 128, "128,512"]

    def valid(self) -> list[Any]:
        return [[128, 512]]


#: the sizes kept in increasing order; ``None`` (or an empty list) for one size, the strategy's own
_granularities = constrained(
    ChunkSizes(),
    None,
    before=lambda value: None if isinstance(value, (list, tuple)) and not value else value,
    convert=lambda value: None if value is None else sorted(set(value)),
)


def reader_expand(expand: str | None, budget: int | str | None) -> str | None:
    """The expansion a reader gets: ``expand`` as given (``"none"``: the hits alone); not given, with a
    ``budget``, :data:`BUDGET_EXPAND`; neither: ``None`` (the hits alone, no budget)."""
    return BUDGET_EXPAND if expand is None and budget is not None else expand


def _expand(name: str, value: Any) -> str | None:
    parsed = parse_expand(value)
    if parsed is None:  # "none" is kept: it turns the expansion a budget would bring off
        return "none" if isinstance(value, str) and value.strip().lower() == "none" else None
    return parsed[0] if parsed[1] is None else f"{parsed[0]}:{parsed[1]}"


def _budget(name: str, value: Any) -> int | None:
    return parse_budget(value)


#: a configuration's name in reports (``""``: none)
_label = constrained(InstanceOf(str), None, convert=lambda value: value or None)


@dataclass(frozen=True)
class Setting:
    """One run setting: its default, the function that checks and normalises a value, and its help."""

    default: Any
    check: Callable[[str, Any], Any]
    help: str
    #: who takes it: ``"index"`` (``Index.add``), ``"search"`` (``Index.search``/``ask``), ``"expand"``
    #: (``Index.expand``/``ask``), ``"eval"`` (evaluation runs only) or ``"report"`` (names, changes nothing)
    stage: str = "eval"
    #: the command line: the value's placeholder in ``--help`` (``None``: no value, a switch, or no flag)
    metavar: str | None = None
    #: the values the flag offers (``None``: any, checked by :attr:`check`)
    choices: tuple[str, ...] | None = None
    #: the flag's spelling: ``--NAME`` with dashes by default; a switch that turns a setting whose default
    #: is true off names itself (``hybrid``: ``--dense``); ``""``: no flag of its own (a mapping, say)
    flag: str | None = None
    #: the switch setting this one applies under (``fusion``: ``"hybrid"``): given while the switch is off,
    #: it is refused by every front end with one wording (:func:`check_combinations`)
    requires: str | None = None

    @property
    def switch(self) -> bool:
        """An on/off setting (its declared default is ``True`` or ``False``): its flag takes no value."""
        return type(self.default) is bool

    def field_help(self) -> str:
        """A JSON field's description (the web API's request bodies): the help and the default as JSON
        writes it (``true`` means on; a flag's help may name the switch that turns it off instead)."""
        return f"{self.help} (default: {json.dumps(self.default)})"

    def flag_name(self, name: str) -> str:
        """The command-line flag of setting ``name`` (``""``: none)."""
        return self.flag if self.flag is not None else "--" + name.replace("_", "-")

    def flag_help(self, name: str) -> str:
        """``--help``'s line for the flag of setting ``name``: this help and the default, both from the
        declaration."""
        if self.switch and self.flag:  # a switch that turns the setting off
            return f"{name} {'off' if self.default else 'on'} ({self.help}; default: {'on' if self.default else 'off'})"
        if self.switch:
            return f"{self.help} (default: {'on' if self.default else 'off'})"
        shown = "none" if self.default is None else self.default
        return f"{self.help} (default: {shown})"


def setting(
    default: Any,
    check: Callable[[str, Any], Any],
    help: str,
    stage: str,
    *,
    metavar: str | None = None,
    choices: tuple[str, ...] | None = None,
    flag: str | None = None,
    requires: str | None = None,
) -> Any:
    """A field of :class:`PipelineConfig` that is a run setting: the default, the check, the help, the
    stage that takes it and its command-line flag are declared here once, and :data:`SETTINGS`, the keyword
    arguments each stage gets (:meth:`PipelineConfig.index_options`, ...) and the CLI's flags
    (``chunkwise.cli.options.add_setting_flags``) are read off the fields (a mapping default is copied per
    instance)."""
    meta = {"setting": Setting(default, check, help, stage, metavar, choices, flag, requires)}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


#: the keys of a configuration file
FILE_KEYS = ("strategy", "params", "run", "tuned")


@dataclass
class PipelineConfig:
    """A chunking strategy with its parameters, how chunk vectors are made, and how retrieval fuses.

    ``late_options``/``context_options`` hold options of late chunking and of the context mode;
    ``hybrid``/``fusion``/``rrf_k``/``dense_weight`` are what ``Index.search`` takes. Build one from a
    file or mapping (:meth:`load`, :meth:`from_mapping`); :meth:`validate` checks and normalises it. Every
    field made by :func:`setting` is a setting of the file's ``run`` mapping.
    """

    strategy: str = DEFAULT_STRATEGY
    params: dict[str, Any] = field(default_factory=dict)
    vectors: str = setting(
        "text",
        _choice(VECTOR_MODES),
        "chunk vectors: text embeds each chunk; pool mean-pools the sentence vectors a semantic strategy "
        "computed while chunking (no second embedding pass)",
        "index",
        choices=VECTOR_MODES,
    )
    late: bool = setting(
        False, _bool, "late chunking: chunk vectors pooled from token vectors of the whole document", "index"
    )
    late_options: dict[str, Any] = setting(
        {}, _late_options, f"late chunking options ({', '.join(LATE_OPTIONS)})", "index", flag=""
    )
    context: str | None = setting(
        None,
        _context,
        f"contextual chunk text embedded and BM25-indexed beside each chunk: {' | '.join(CONTEXT_MODES)}",
        "index",
        metavar="MODE",
    )
    context_options: dict[str, Any] = setting({}, _mapping, "options of the context mode", "index", flag="")
    hybrid: bool = setting(
        DEFAULT_HYBRID,
        _bool,
        "hybrid retrieval: BM25 and vectors fused, else vectors alone",
        "search",
        flag="--dense",
    )
    fusion: str = setting(
        DEFAULT_FUSION,
        _choice(FUSION_MODES),
        "how hybrid retrieval fuses BM25 and vectors: zscore (per-query z-scores, dense_weight x vector + the "
        "rest x BM25) or rrf (reciprocal rank fusion)",
        "search",
        choices=FUSION_MODES,
        requires="hybrid",
    )
    rrf_k: int = setting(
        RRF_K, _non_negative_int, "the constant of rrf fusion", "search", metavar="K", requires="hybrid"
    )
    dense_weight: float = setting(
        DENSE_WEIGHT,
        _unit_interval,
        "weight of the vector scores in zscore fusion, in [0, 1]",
        "search",
        metavar="W",
        requires="hybrid",
    )
    #: a first pass over structure: a query naming a key (``3.8.13``, ``max_tokens``) gets the chunks of the
    #: sections holding it first (``chunkwise.retrieval.sections``); ``search --no-sections`` turns it off
    sections: bool = setting(
        True,
        _bool,
        "rank the chunks of the sections that hold the query's keys (3.8.13, max_tokens) first",
        "search",
        flag="--no-sections",
    )
    #: what the reader sees around each hit (``ask``, ``search --expand``; ``eval``'s span recall at a budget)
    expand: str | None = setting(
        None,
        _expand,
        "the context handed on around each hit: neighbors:N (N chunks each side), section (the hit's "
        "section), parent:TOKENS (about TOKENS tokens around it), auto (neighbors:1 in text without headings "
        "or pages, the hit alone elsewhere; what a budget without a mode gets); hits that meet are merged into "
        "one passage; none: the hits alone",
        "expand",
        metavar="MODE",
    )
    budget: int | None = setting(
        None,
        _budget,
        "tokens (cl100k) of context handed on at most, e.g. 2000 or 2k; none: no limit",
        "expand",
        metavar="TOKENS",
    )
    #: a second stage over the first stage's ``rerank_depth`` candidates (``chunkwise.retrieval.rerank``)
    rerank: str | None = setting(
        None,
        _rerank,
        f"re-order the first stage's candidates: {', '.join(RERANK_KINDS)} (MaxSim over the embedder's token "
        "vectors, W its weight against the first-stage score; the chat endpoint of $CHUNKWISE_LLM_BASE_URL; a "
        "local sentence-transformers cross-encoder, torch extra) or none",
        "search",
        metavar="SPEC",
    )
    rerank_depth: int = setting(
        RERANK_DEPTH, _rerank_depth, "first-stage candidates the reranker re-orders", "search", metavar="N"
    )
    #: evaluation only: the run's strategy at each of these ``max_tokens``, rankings fused by RRF
    granularities: list[int] | None = setting(
        None, _granularities, "evaluation only: chunk sizes whose rankings are fused (one size when unset)", "eval"
    )
    #: a name for the configuration in reports (not written to files: it names a run, it changes nothing)
    label: str | None = field(
        default=None,
        compare=False,
        metadata={"setting": Setting(None, _label, "a name for the configuration in reports", "report")},
    )
    #: how ``tune`` chose this configuration (metric, scores, interval...): kept, never interpreted
    tuned: dict[str, Any] | None = field(default=None, compare=False)

    def validate(self) -> PipelineConfig:
        """This configuration with every setting checked and normalised (one :class:`ConfigError` naming the
        first bad one)."""
        return check_combinations(self._checked(), ())

    def _checked(self) -> PipelineConfig:
        """Every setting checked and normalised on its own (:meth:`validate` then checks how they combine)."""
        if not isinstance(self.strategy, str) or self.strategy not in STRATEGY_NAMES:
            raise ConfigError(f"unknown strategy {self.strategy!r}; choose one of {', '.join(STRATEGY_NAMES)}")
        values = {name: setting.check(name, getattr(self, name)) for name, setting in SETTINGS.items()}
        for name in ("late_options", "context_options"):
            values[name] = values[name] or {}
        return replace(self, params=_mapping("params", self.params), **values)

    # -- files and mappings ------------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, data: Any, source: str | None = None) -> PipelineConfig:
        """A configuration from the file layout ``{"strategy", "params", "run", "tuned"}`` (checked)."""
        where = {"source": source} if source else {}
        if not isinstance(data, Mapping):
            raise ConfigError('expected {"strategy": NAME, "params": {...}, "run": {...}}', **where)
        unknown = sorted(set(data) - set(FILE_KEYS))
        if unknown:
            raise ConfigError(f"unknown key {', '.join(unknown)}; a configuration has {', '.join(FILE_KEYS)}", **where)
        run = renamed(_mapping("run", data.get("run")), OLD_RUN_KEYS, "configuration")
        unknown = sorted(set(run) - set(SETTINGS))
        if unknown:
            raise ConfigError(f"unknown run setting {', '.join(unknown)}; valid: {', '.join(SETTINGS)}", **where)
        tuned = data.get("tuned")
        try:
            return cls(
                strategy=data.get("strategy") or DEFAULT_STRATEGY,
                params=_mapping("params", data.get("params")),
                tuned=dict(tuned) if isinstance(tuned, Mapping) else None,
                **{
                    k: (SETTINGS[k].default if v is None and k not in ("context", "label") else v)
                    for k, v in run.items()
                },
            ).validate()
        except ConfigError as exc:
            raise ConfigError(str(exc), **where) from None

    def to_mapping(self) -> dict[str, Any]:
        """The file layout. The retrieval settings are always written out (``hybrid``, ``fusion`` and the
        fusion's own parameter), as is anything that differs from its default: a file means the same
        whatever a later release's defaults are for the settings that decide retrieval."""
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "params": {k: v for k, v in self.params.items() if k != "embedder"},
        }
        run: dict[str, Any] = {"hybrid": self.hybrid}
        if self.hybrid:
            run["fusion"] = self.fusion
            run["dense_weight" if self.fusion == "zscore" else "rrf_k"] = getattr(
                self, "dense_weight" if self.fusion == "zscore" else "rrf_k"
            )
        for name, setting in SETTINGS.items():
            value = getattr(self, name)
            if name != "label" and name not in run and value != setting.default:
                run[name] = (
                    dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value
                )
        out["run"] = run
        if self.tuned is not None:
            out["tuned"] = self.tuned
        return out

    def fusion_options(self) -> dict[str, Any]:
        """The fusion settings that differ from the defaults (``{}`` for z-score fusion at the default
        weight): what a run's name shows."""
        out: dict[str, Any] = {}
        if self.fusion != DEFAULT_FUSION:
            out["fusion"] = self.fusion
        if self.fusion == "zscore" and self.dense_weight != DENSE_WEIGHT:
            out["dense_weight"] = self.dense_weight
        if self.fusion == "rrf" and self.rrf_k != RRF_K:
            out["rrf_k"] = self.rrf_k
        return out

    @property
    def name(self) -> str:
        """The label, or a readable summary: strategy, parameters, context, late, retrieval, vectors."""
        if self.label:
            return self.label
        parts = [self.strategy]
        for k, v in self.params.items():
            if k == "embedder":
                continue
            parts.append(f"{k}={json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}")
        if self.context:
            parts.append(f"context={self.context}")
        if self.late:
            parts.append("late")
        if self.hybrid:
            parts.extend(f"{k}={v}" for k, v in self.fusion_options().items())
        else:
            parts.append("dense")
        if not self.sections:
            parts.append("no-sections")
        if self.vectors != "text":
            parts.append(f"vectors={self.vectors}")
        if self.expand:
            parts.append(f"expand={self.expand}")
        if self.budget:
            parts.append(f"budget={self.budget}")
        if self.rerank:
            depth = f"@{self.rerank_depth}" if self.rerank_depth != RERANK_DEPTH else ""
            parts.append(f"rerank={self.rerank}{depth}")
        if self.granularities:
            parts.append("granularities=" + "+".join(str(n) for n in self.granularities))
        return " ".join(parts)

    @classmethod
    def load(cls, path: str | os.PathLike) -> PipelineConfig:
        """Read a configuration file (one :class:`ConfigError` naming the file on any problem)."""
        from ..security import MAX_CONFIG_BYTES, loads_bounded

        p = Path(path)
        try:
            if p.is_file() and p.stat().st_size > MAX_CONFIG_BYTES:
                raise ValueError(f"{p.stat().st_size:,} bytes; a configuration has at most {MAX_CONFIG_BYTES:,}")
            data = loads_bounded(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError("configuration file not found", source=str(path)) from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"not a readable JSON configuration ({exc})", source=str(path)) from None
        run = data.get("run") if isinstance(data, Mapping) else None
        for name, value in (run or {}).items() if isinstance(run, Mapping) else ():
            if (
                SETTINGS.get(name) is not None
                and SETTINGS[name].check is _bool
                and value is not True
                and value is not False
            ):
                raise ConfigError(f"{name} must be true or false (a JSON boolean), got {value!r}", source=str(path))
        return cls.from_mapping(data, source=str(path))

    def save(self, path: str | os.PathLike) -> None:
        """Write the configuration atomically (a reader never sees half a file)."""
        p = Path(path)
        text = json.dumps(self.to_mapping(), indent=2, ensure_ascii=False, default=str) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent if str(p.parent) else ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # -- what the front ends hand on -----------------------------------------------------------------------
    def stage_options(self, stage: str) -> dict[str, Any]:
        """The settings ``stage`` takes (see :attr:`Setting.stage`), as keyword arguments (copies of
        mappings, so a caller cannot change this configuration through them); a setting whose switch is
        off (:attr:`Setting.requires`: ``fusion`` with hybrid off) is left out, as a caller would."""
        return {
            name: (dict(v) if isinstance(v, dict) else v)
            for name, st in SETTINGS.items()
            if st.stage == stage and (st.requires is None or getattr(self, st.requires))
            for v in (getattr(self, name),)
        }

    def index_options(self) -> dict[str, Any]:
        """Keyword arguments of ``Index.add``: the strategy, its parameters, and the ``"index"`` settings.
        An index holds one chunk size, so a configuration with ``granularities`` (an evaluation setting that
        did not win on the public sets, docs/evaluation.md) is refused rather than indexed at one size."""
        if self.granularities:
            raise ConfigError(
                "granularities is an evaluation setting (eval, tune); an index holds one chunk size: drop it"
            )
        return {"strategy": self.strategy, "params": dict(self.params), **self.stage_options("index")}

    def search_options(self) -> dict[str, Any]:
        """Keyword arguments of ``Index.search``/``Index.ask``: how retrieval fuses, and the reranker."""
        return self.stage_options("search")

    def expand_options(self) -> dict[str, Any]:
        """Keyword arguments of ``Index.expand``/``Index.ask``: the context around each hit and its budget."""
        return self.stage_options("expand")

    def overridden(self, stages: tuple[str, ...], settings: Mapping[str, Any], caller: str) -> PipelineConfig:
        """A copy with the settings of ``stages`` given as keyword arguments to ``caller`` replaced (``None``
        included: ``context=None`` means no context), the settings of ``stages`` checked. The one path from keyword arguments to a
        configuration: ``Index.search(q, hybrid=False)`` is ``Index.search(q, config=PipelineConfig(hybrid=
        False))``. A keyword that is no setting of ``stages`` is a :class:`TypeError`, as Python's own."""
        valid = stage_names(*stages)
        unknown = sorted(set(settings) - set(valid))
        if unknown:
            raise TypeError(
                f"{caller}() got an unexpected keyword argument {', '.join(map(repr, unknown))}; "
                f"its settings: {', '.join(valid)}"
            )
        merged = {name: settings.get(name, getattr(self, name)) for name in valid}
        # only the settings of these stages are checked (a search does not read the strategy): every search
        # pays for six checks, not all of them
        checked = replace(self, **{name: SETTINGS[name].check(name, value) for name, value in merged.items()})
        return check_combinations(checked, settings)

    def with_settings(self, *, flags: bool = False, **settings: Any) -> PipelineConfig:
        """A copy with some settings replaced (``None`` values left as they are), checked: how command-line
        flags override a ``--config`` file (``flags``: a refusal names them as flags, ``--rrf-k``)."""
        given = {k: v for k, v in settings.items() if v is not None}
        unknown = sorted(set(given) - {f.name for f in fields(self)})
        if unknown:
            raise ConfigError(f"unknown setting {', '.join(unknown)}")
        return check_combinations(replace(self, **given)._checked(), given, flags=flags)


#: every setting of the ``run`` mapping, in the order of the fields that declare them
SETTINGS: dict[str, Setting] = {
    f.name: f.metadata["setting"] for f in fields(PipelineConfig) if "setting" in f.metadata
}


def check_combinations(config: PipelineConfig, given: Collection[str], *, flags: bool = False) -> PipelineConfig:
    """The one check of how settings combine (:attr:`Setting.requires`), for every front end: a setting that
    applies only while a switch is on (``fusion``, ``rrf_k``, ``dense_weight`` under ``hybrid``) is refused
    when the switch is off and its value is not its default, where it was ``given`` (keyword arguments, flags,
    a request's JSON fields) or the switch was not (a file, a run). A default spelled out is no conflict:
    code that forwards every setting of a configuration keeps working. Left over from ``config`` when
    ``given`` turns the switch off (``--dense`` over a file with ``"fusion": "rrf"``), it goes back to its
    default. The refusal names the settings as the front end does: ``flags`` for the command line's
    (``--rrf-k``, ``--dense``), else Python's, the files' and the web API's (``rrf_k``, ``hybrid=false``)."""
    offending: dict[str, list[str]] = {}
    resets: dict[str, Any] = {}
    for name, st in SETTINGS.items():
        switch = st.requires
        if switch is None or getattr(config, switch) or getattr(config, name) == st.default:
            continue
        if name in given or switch not in given:
            offending.setdefault(switch, []).append(name)
        else:
            resets[name] = st.default
    for switch, names in offending.items():
        spelled = [SETTINGS[n].flag_name(n) if flags else n for n in names]
        off = SETTINGS[switch].flag_name(switch) if flags else f"{switch}=false"
        verb = "applies" if len(names) == 1 else "apply"
        listed = spelled[0] if len(spelled) == 1 else f"{', '.join(spelled[:-1])} and {spelled[-1]}"
        raise ConfigError(f"{listed} {verb} only with {switch} on, and {switch} is off ({off}): drop one or the other")
    return replace(config, **resets) if resets else config


def stage_names(*stages: str) -> tuple[str, ...]:
    """The settings ``stages`` take (:attr:`Setting.stage`), in declaration order."""
    return tuple(name for name, st in SETTINGS.items() if st.stage in stages)


def run_config(
    config: PipelineConfig | None, settings: Mapping[str, Any], stages: tuple[str, ...], caller: str
) -> PipelineConfig:
    """The configuration a public entry point runs with: ``config`` (default: every setting's default) with
    the keyword arguments ``settings`` overriding it (:meth:`PipelineConfig.overridden`), checked."""
    if config is None:
        config = PipelineConfig()
    check(config, InstanceOf(PipelineConfig, "a PipelineConfig"), "config", caller)
    return config.overridden(stages, settings, caller)


__all__ = [
    "PipelineConfig",
    "Setting",
    "SETTINGS",
    "setting",
    "stage_names",
    "run_config",
    "check_combinations",
    "FILE_KEYS",
    "VECTOR_MODES",
    "LATE_OPTIONS",
    "FUSION_MODES",
    "RRF_K",
    "DENSE_WEIGHT",
    "DEFAULT_HYBRID",
    "DEFAULT_FUSION",
    "OLD_RUN_KEYS",
    "EXPAND_MODES",
    "parse_expand",
    "reader_expand",
    "BUDGET_EXPAND",
    "parse_budget",
    "RERANK_KINDS",
    "RERANK_DEPTH",
    "parse_rerank",
]
