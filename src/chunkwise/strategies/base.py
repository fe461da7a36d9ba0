"""What every strategy shares: parameters, validation, regions, and turning spans into chunks.

A strategy only decides *where to cut*: ``split(doc, start, end, tokenizer)`` returns character spans inside
one region of the text. Everything else is common and lives here, so it is right once for all strategies:
parameter checks, cutting the document into regions that must not be crossed (``respect_sections``), exact
slices, token counts, deterministic ids, and page/section/time provenance.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from ..deprecation import renames_for
from ..document import Chunk, ChunkIds, Document, stable_hash
from ..errors import ConfigError, InputError
from ..segmentation.tokenizers import Tokenizer, resolve_tokenizer
from ..validation import Constraints, Interval
from .params import TokenizerSpec, strategy_label, validate_params

Span = tuple[int, int]

#: A chunk never holds more than this many characters per token of ``max_tokens``. Token caps alone do not
#: bound size: MiniLM's WordPiece maps any word longer than 100 characters to one ``[UNK]`` token, and the
#: ``words`` tokenizer counts a 5 MB run without spaces as one word. 16 is about three times the characters
#: per token of real prose in every tokenizer, so the bound only ever bites on pathological input.
MAX_CHARS_PER_TOKEN = 16


def max_chars_for(max_tokens: int) -> int:
    """The character bound that goes with a token cap (see :data:`MAX_CHARS_PER_TOKEN`)."""
    return max(1, max_tokens * MAX_CHARS_PER_TOKEN)


#: peak bytes of memory per character while one document is cut in one piece (token offsets, spans, chunk
#: texts): 43 measured with the default tokenizer on 5 and 20 MB single-line texts (benchmarks/results/
#: trust.md), rounded up
BYTES_PER_CHAR = 48
#: below this estimate the check costs nothing (no /proc read)
_CHEAP = 256 << 20


def available_memory() -> int | None:
    """Bytes of memory the system can give without swapping (``MemAvailable``), ``None`` where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(doc: Document) -> None:
    """Refuse, with the reason, a document whose cutting would need more memory than is available (a 200 MB
    single line once peaked at 1.5 GB and more), instead of letting the system run out."""
    need = len(doc.text) * BYTES_PER_CHAR
    if need < _CHEAP:
        return
    free = available_memory()
    if free is not None and need > free:
        raise InputError(
            f"cutting this {len(doc.text) / 1e6:,.0f}-million-character document in one piece needs about "
            f"{need / 2**30:.1f} GiB of memory ({BYTES_PER_CHAR} bytes a character) and {free / 2**30:.1f} GiB "
            "is available: refused; split the file into smaller ones",
            source=doc.source,
        )


def takes_old_names(init: Callable[..., None]) -> Callable[..., None]:
    """A strategy constructor that also takes the old names of its class's ``renamed_params`` (each with the
    one deprecation warning; an old name beside its new one set to another value than its default is a
    :class:`ConfigError`), so the constructor itself declares only the new names."""
    defaults = {n: p.default for n, p in inspect.signature(init).parameters.items()}

    @functools.wraps(init)
    def __init__(self: Strategy, *args: Any, **kwargs: Any) -> None:
        for old, new in self.renamed_params.items():
            if old in kwargs:
                current = kwargs.get(new, defaults.get(new))
                kwargs[new] = self.old_keyword(old, kwargs.pop(old), current)
        init(self, *args, **kwargs)

    return __init__


class Strategy:
    """Base class. Subclasses store their parameters in ``__init__`` (nothing else), declare what each takes
    in ``_parameter_constraints`` (checked by :meth:`validate`; see :mod:`.params`) and implement ``split``.

    Shared parameters, with the same names in every strategy:

    - ``max_tokens``: hard cap on every chunk, counted with ``tokenizer``.
    - ``min_tokens``: chunks smaller than this are merged with a neighbour where the cap allows.
    - ``overlap``: tokens (or whole sentences' worth of tokens) repeated between consecutive chunks.
    - ``tokenizer``: ``minilm`` (the default embedding model's own), ``cl100k``, ``chars``, ``words``.
    - ``respect_sections``: never let a chunk cross a heading of this level or higher (1 = ``#``; 0 or
      ``None``: headings may be crossed).
    """

    #: registry name, also recorded on every chunk
    name: str = ""
    #: the shared chunk rules (:mod:`chunkwise.strategies.tidy`) apply; a custom strategy whose spans must
    #: come out exactly as it made them (a test fixture) may set this to False
    apply_rules: bool = True
    #: :meth:`param_names`' cache, set per class (read through ``cls.__dict__``, never inherited)
    _param_names_cache: ClassVar[tuple[str, ...]]
    #: old parameter name -> new name: still accepted (with a deprecation warning; a constructor takes
    #: them through :func:`takes_old_names`), left out of :meth:`param_names`, and used in :meth:`config_id`
    #: so chunk ids do not change with the rename. Set per class from the entries of
    #: :data:`chunkwise.deprecation.RENAMES` owned by ``strategy '<name>'``, added to the base's
    renamed_params: ClassVar[dict[str, str]] = {}
    #: parameter name -> the constraints a value must meet (any one of them; see :mod:`.params`). A
    #: subclass declares the parameters it adds or takes differently; :meth:`param_constraints` merges
    _parameter_constraints: ClassVar[dict[str, Constraints]] = {
        "max_tokens": [Interval(int, 1, None)],
        "min_tokens": [Interval(int, 0, None)],
        "overlap": [Interval(int, 0, None)],
        "tokenizer": [TokenizerSpec(), None],
        "respect_sections": [Interval(int, 0, None), None],
    }
    _param_constraints_cache: ClassVar[dict[str, Constraints]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = renames_for(f"strategy {cls.name!r}") if cls.name else {}
        if own and "renamed_params" not in vars(cls):
            cls.renamed_params = {**cls.renamed_params, **own}

    def __init__(
        self,
        max_tokens: int = 256,
        min_tokens: int | None = 0,
        overlap: int = 0,
        tokenizer: str | Tokenizer | None = "minilm",
        respect_sections: int | None = None,
    ):
        self.max_tokens = max_tokens
        self.min_tokens = min_tokens
        self.overlap = overlap
        self.tokenizer = tokenizer
        self.respect_sections = respect_sections

    # -- scikit-learn style parameter access -----------------------------------------------------------
    @classmethod
    def param_names(cls) -> list[str]:
        """Constructor parameter names, collected over the class hierarchy (cached per class: every
        ``chunk`` call needs them for the chunk ids, and ``inspect.signature`` is slow)."""
        cached = cls.__dict__.get("_param_names_cache")
        if cached is None:
            cached = tuple(cls._collect_param_names())
            cls._param_names_cache = cached
        return list(cached)

    @classmethod
    def _collect_param_names(cls) -> list[str]:
        """Own parameters first, then the bases' new ones; a constructor that hands the shared parameters
        on as ``**shared`` (the semantic strategies) lists its base's first, as if it had spelled them."""
        inits = [vars(k)["__init__"] for k in cls.__mro__ if k is not object and "__init__" in vars(k)]

        def names(i: int) -> list[str]:
            if i == len(inits):
                return []
            params = inspect.signature(inits[i]).parameters.values()
            own = [
                p.name
                for p in params
                if p.name != "self"
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and p.name not in cls.renamed_params
            ]
            rest = [n for n in names(i + 1) if n not in own]
            return rest + own if any(p.kind is p.VAR_KEYWORD for p in params) else own + rest

        return names(0)

    @classmethod
    def param_constraints(cls) -> dict[str, Constraints]:
        """Every declared parameter's constraints, merged over the class hierarchy (a subclass's entry
        replaces its base's), in declaration order; cached per class."""
        cached = cls.__dict__.get("_param_constraints_cache")
        if cached is None:
            cached = {}
            for klass in reversed(cls.__mro__):
                cached.update(vars(klass).get("_parameter_constraints", {}))
            cls._param_constraints_cache = cached
        return dict(cached)

    def get_params(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in self.param_names() if hasattr(self, n)}

    def old_keyword(self, old: str, value: Any, current: Any) -> Any:
        """``current``, or the value given under ``old``, a deprecated constructor keyword of
        :attr:`renamed_params` (with the one deprecation warning): how :func:`takes_old_names` takes it."""
        if value is None:
            return current
        from ..deprecation import warn_renamed

        new, where = self.renamed_params[old], f"strategy {self.name!r}"
        declared = inspect.signature(type(self).__init__).parameters.get(new)
        if declared is not None and current != declared.default:  # both names given: as in ``renamed``
            raise ConfigError(f"{where}: give {new!r} only ({old!r} is its old name)")
        warn_renamed(old, new, where, stacklevel=4)
        return value

    def config_params(self) -> dict[str, Any]:
        """The parameters :meth:`config_id` fingerprints: all of them, unless a strategy says otherwise."""
        return self.get_params()

    def config_id(self) -> str:
        """Fingerprint of the strategy and its parameters: part of every chunk id."""
        params = {}
        old_names = {new: old for old, new in self.renamed_params.items()}
        for k, v in sorted(self.config_params().items()):
            k = old_names.get(k, k)  # the fingerprint keeps the old name: same chunk ids as before
            if isinstance(v, Tokenizer):
                v = v.name
            elif hasattr(v, "model_id"):
                v = v.model_id
            params[k] = v
        return stable_hash(self.name, params)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- the work ----------------------------------------------------------------------------------------
    def validate(self) -> None:
        """Reject parameters that cannot work, with a message a person can act on: every declared
        constraint (:func:`~.params.validate_params`), then what relates parameters to each other, then
        the tokenizer's name (an unknown one is a configuration error, found before any input)."""
        validate_params(self)
        who = strategy_label(self)
        mt = self.max_tokens
        if self.min_tokens is not None and self.min_tokens > mt:
            raise ConfigError(f"{who}: min_tokens ({self.min_tokens}) must not exceed max_tokens ({mt})")
        if self.overlap >= mt:
            raise ConfigError(f"{who}: overlap ({self.overlap}) must be smaller than max_tokens ({mt})")
        if isinstance(self.tokenizer, str):
            resolve_tokenizer(self.tokenizer)

    def chunk(self, doc: Document | str) -> list[Chunk]:
        """Cut ``doc`` into chunks (a plain string is wrapped in a :class:`Document`); a document too large
        for the memory available is refused (:func:`check_memory`)."""
        if isinstance(doc, str):
            doc = Document(doc)
        self.validate()
        check_memory(doc)
        tokenizer = resolve_tokenizer(self.tokenizer)
        doc = self.prepare_document(doc)
        spans: list[Span] = []
        counts: list[int] | None = []
        bounds = regions(doc, self.respect_sections)
        for start, end in bounds:
            region_spans, region_counts = self.split_with_counts(doc, start, end, tokenizer)
            check_aligned(region_spans, region_counts, f"strategy {self.name!r}")
            spans.extend(region_spans)
            if counts is not None and region_counts is not None:
                counts.extend(region_counts)
            else:
                counts = None
        if self.apply_rules:
            spans, counts = tidy(doc, spans, counts, tokenizer, self.max_tokens, bounds)
        return build_chunks(doc, spans, tokenizer, self, counts)

    def prepare_document(self, doc: Document) -> Document:
        """Hook: a strategy may add structure the document lacks (the Markdown one adds sections)."""
        return doc

    def split(self, doc: Document, start: int, end: int, tokenizer: Tokenizer) -> list[Span]:
        """Spans ``(a, b)`` with ``start <= a < b <= end`` covering every non-whitespace character of
        ``doc.text[start:end]``, each within ``max_tokens``: what a strategy implements (one that counts
        while it packs implements :meth:`split_with_counts` instead, see :class:`CountingStrategy`)."""
        raise NotImplementedError

    def split_with_counts(
        self, doc: Document, start: int, end: int, tokenizer: Tokenizer
    ) -> tuple[list[Span], list[int] | None]:
        """What :meth:`chunk` calls: the spans of :meth:`split`, and no counts (:func:`build_chunks`
        counts them). A strategy that has the exact count of each span already (it counted to verify the
        cap) returns them, one per span in the same order, so nothing is tokenised a second time; anything
        else is an error, never guessed at."""
        return self.split(doc, start, end, tokenizer), None


class CountingStrategy(Strategy):
    """A strategy that counts while it packs (the classic ones, through :mod:`.packing`): it implements
    :meth:`split_with_counts`, and :meth:`split` is the adapter that drops the counts."""

    def split(self, doc: Document, start: int, end: int, tokenizer: Tokenizer) -> list[Span]:
        return self.split_with_counts(doc, start, end, tokenizer)[0]

    def split_with_counts(
        self, doc: Document, start: int, end: int, tokenizer: Tokenizer
    ) -> tuple[list[Span], list[int] | None]:
        raise NotImplementedError


def check_aligned(spans: list[Span], counts: list[int] | None, who: str) -> None:
    """Raise when ``counts`` is neither ``None`` nor one count per span: a mismatch is a bug in ``who``,
    and guessing which counts belong to which spans could pass a wrong count (and a chunk over the cap)."""
    if counts is not None and len(counts) != len(spans):
        raise RuntimeError(f"internal error: {who} gave {len(counts)} token counts for {len(spans)} spans")


def regions(doc: Document, level: int | None) -> list[Span]:
    """The parts of the document a chunk must not cross: split at every heading of ``level`` or higher.

    A heading with no body of its own (``# Guide`` directly over ``## Install``) is not a region by
    itself: it stays with the section that follows, so it never becomes a heading-only chunk.
    """
    n = len(doc.text)
    if not level or not doc.sections:
        return [(0, n)] if n else []
    from .packing import keep_headings_with_bodies

    text = doc.text
    head_end = {s.start: s.heading_end for s in doc.sections if s.heading_end >= s.start}
    bounds = [0, *sorted({s.start for s in doc.sections if s.level <= level and 0 < s.start < n}), n]

    def heading_only(a: int, b: int) -> bool:
        return a in head_end and not text[head_end[a] : b].strip()

    parts = keep_headings_with_bodies(list(zip(bounds, bounds[1:])), heading_only)
    return [(a, b) for a, b in parts if b > a]


def tidy(
    doc: Document,
    spans: list[Span],
    counts: list[int] | None,
    tokenizer: Tokenizer,
    max_tokens: int,
    bounds: list[Span],
    cuts: list[int] | None = None,
) -> tuple[list[Span], list[int]]:
    """The rules every strategy keeps (:mod:`chunkwise.strategies.tidy`) on sorted, non-empty spans."""
    from .tidy import tidy_spans

    check_aligned(spans, counts, "tidy")
    given: list[int | None] = list(counts) if counts is not None else [None] * len(spans)
    pairs = sorted((s, n) for s, n in zip(spans, given) if s[1] > s[0] and not doc.text[s[0] : s[1]].isspace())
    spans = [s for s, _ in pairs]
    if any(n is None for _, n in pairs):
        counts = tokenizer.count_batch([doc.text[a:b] for a, b in spans])
    else:
        counts = [n for _, n in pairs if n is not None]  # all given
    return tidy_spans(doc, spans, counts, tokenizer, max_tokens, bounds, cuts)


def trim_span(text: str, start: int, end: int) -> Span:
    """Shrink ``[start, end)`` so it neither starts nor ends with whitespace (may become empty)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def build_chunks(
    doc: Document,
    spans: list[Span],
    tokenizer: Tokenizer,
    strategy: Strategy,
    token_counts: list[int] | None = None,
) -> list[Chunk]:
    """Turn spans into :class:`Chunk` objects: exact text, token count, deterministic id, provenance.

    ``token_counts`` is ``None`` (count here) or one exact count per span, in the same order. Whitespace-only
    spans are dropped. The cap is checked here for every strategy: a chunk over ``max_tokens`` is a bug in
    the strategy, reported as such rather than passed on to the user.
    """
    check_aligned(spans, token_counts, f"strategy {strategy.name!r}")
    kept, texts, counts = _kept(doc.text, spans, token_counts, tokenizer)
    config = strategy.config_id()
    doc_id = doc.id
    ids = ChunkIds(doc_id, config)
    has_pages, has_cues, has_sections = bool(doc.pages), bool(doc.cues), bool(doc.sections)
    has_tables = bool(doc.tables)
    source_map = doc.source_map
    chunks: list[Chunk] = []
    for i, ((a, b), text, n) in enumerate(zip(kept, texts, counts)):
        if n > strategy.max_tokens:
            raise RuntimeError(
                f"internal error: strategy {strategy.name!r} produced a chunk of {n} tokens "
                f"(max_tokens={strategy.max_tokens}) at {doc.source}[{a}:{b}]"
            )
        page_start, page_end = doc.page_span(a, b) if has_pages else (None, None)
        t0, t1, speakers = doc.time_span(a, b) if has_cues else (None, None, [])
        source_start, source_end = source_map.span(a, b) if source_map is not None else (None, None)
        chunks.append(
            Chunk(
                text=text,
                start=a,
                end=b,
                index=i,
                id=ids.span(a, b),
                doc_id=doc_id,
                source=doc.source,
                token_count=n,
                strategy=strategy.name,
                page_start=page_start,
                page_end=page_end,
                section=doc.section_at(a, b) if has_sections else [],
                start_time=t0,
                end_time=t1,
                speakers=speakers,
                source_start=source_start,
                source_end=source_end,
                context=doc.table_header(a, b) if has_tables else None,
            )
        )
    return chunks


def _kept(
    text_all: str, spans: list[Span], token_counts: list[int] | None, tokenizer: Tokenizer
) -> tuple[list[Span], list[str], list[int]]:
    """The non-empty, not only whitespace spans, sorted, with their texts and exact counts (the given ones
    when every kept span has one, else all counted in one batch)."""
    aligned: list[int | None] = list(token_counts) if token_counts is not None else [None] * len(spans)
    kept: list[Span] = []
    texts: list[str] = []
    given: list[int | None] = []
    for (a, b), n in sorted(zip(spans, aligned)):
        if b > a:
            text = text_all[a:b]
            if not text.isspace():
                kept.append((a, b))
                texts.append(text)
                given.append(n)
    known = [n for n in given if n is not None]
    return kept, texts, known if len(known) == len(given) else tokenizer.count_batch(texts)
