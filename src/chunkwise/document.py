"""The data model: a :class:`Document` to be chunked and the :class:`Chunk` objects cut from it.

Offsets are the contract everything else rests on: a chunk's ``start``/``end`` are character offsets into
``Document.text`` and ``doc.text[chunk.start:chunk.end] == chunk.text`` always holds. Structure that loaders
find (PDF pages, heading sections, subtitle cues) is kept as character spans over the same text, so every
strategy can attach provenance to every chunk without knowing where the document came from.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .validation import Options, check


def _feed(h: Any, part: Any) -> None:
    """Feed one part into a sha256 so that no two part sequences feed the same bytes: each part is
    length-prefixed, and a non-string part is its canonical JSON."""
    if not isinstance(part, (str, bytes)):
        part = json.dumps(part, sort_keys=True, ensure_ascii=False, default=str)
    if isinstance(part, str):
        part = part.encode("utf-8", "surrogatepass")
    h.update(len(part).to_bytes(8, "little"))
    h.update(part)


def stable_hash(*parts: Any, length: int = 16) -> str:
    """A short hex digest of ``parts`` that is the same on every run, machine and Python version."""
    h = hashlib.sha256()
    for part in parts:
        _feed(h, part)
    return h.hexdigest()[:length]


class ChunkIds:
    """The one formula for chunk ids: ``stable_hash("chunk", doc_id, config, *key)``.

    ``config`` names what cut the chunk (a strategy's config id, or ``"video"``) and ``key`` where the chunk
    lies (``"start:end"`` for text, frames and index for a clip). Ids key the store and the embedding cache,
    so a change of this formula re-embeds every index: ``tests/test_chunk_ids.py`` pins literal ids. The
    common prefix is hashed once per document, since a document yields thousands of ids.
    """

    def __init__(self, doc_id: str, config: str) -> None:
        self._prefix = hashlib.sha256()
        for part in ("chunk", doc_id, config):
            _feed(self._prefix, part)

    def __call__(self, *key: Any) -> str:
        h = self._prefix.copy()
        for part in key:
            _feed(h, part)
        return h.hexdigest()[:16]

    def span(self, start: int, end: int) -> str:
        """The id of the text chunk ``[start, end)``."""
        return self(f"{start}:{end}")


@dataclass(frozen=True)
class Page:
    """A page of the source (1-based ``number``) as the span ``[start, end)`` of the document text."""

    number: int
    start: int
    end: int


@dataclass(frozen=True)
class Section:
    """A heading's section: the span it governs and its heading path, e.g. ``("Guide", "Install")``.

    ``level`` is the heading level (1 for ``#``/``<h1>``/a top-level PDF outline entry). ``heading_start`` and
    ``heading_end`` locate the heading line itself inside the span (equal to ``start`` when there is none).
    """

    start: int
    end: int
    path: tuple[str, ...]
    level: int
    heading_start: int = -1
    heading_end: int = -1


@dataclass(frozen=True)
class Cue:
    """A timed unit of a transcript (a subtitle cue, or several merged into one sentence)."""

    start: int
    end: int
    start_time: float
    end_time: float
    speaker: str | None = None


@dataclass(frozen=True)
class Table:
    """A table in the text: the span ``[start, end)`` of the whole table and ``[header_start, header_end)``
    of its header row(s). A chunk that starts inside the table's body without its header carries the header
    as its :attr:`Chunk.context` (see :meth:`Document.table_header`), so every piece of a table is read with
    its column names while the chunk text stays an exact slice."""

    start: int
    end: int
    header_start: int
    header_end: int


@dataclass
class Document:
    """A text to chunk plus the structure found by its loader.

    ``pages``, ``sections`` and ``cues`` are sorted by ``start``; sections may nest (a level-2 section lies
    inside its level-1 parent) and the innermost one gives a chunk its ``section`` path.
    """

    text: str
    source: str = "<text>"
    metadata: dict[str, Any] = field(default_factory=dict)
    pages: list[Page] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    cues: list[Cue] = field(default_factory=list)
    #: tables found by the loader (CSV/TSV files, Markdown and notebook tables), sorted by ``start``
    tables: list[Table] = field(default_factory=list)
    title: str | None = None
    #: maps spans of ``text`` back into the source (a :class:`chunkwise.formats.sourcemap.SourceMap`); set
    #: by the loaders of files, ``None`` for a text given directly or where no exact map exists
    source_map: Any = field(default=None, repr=False, compare=False)

    @property
    def content_hash(self) -> str:
        """Hash of the text alone: unchanged content means nothing to re-index."""
        return stable_hash(self.text)

    @property
    def id(self) -> str:
        """Deterministic document id: from the source when it names a file, else from the content."""
        if self.source and not self.source.startswith("<"):
            return stable_hash("doc", self.source)
        return stable_hash("doc", self.source, self.text)

    # -- provenance look-ups, used by every strategy -------------------------------------------------
    def page_span(self, start: int, end: int) -> tuple[int | None, int | None]:
        """First and last page that ``[start, end)`` touches, or ``(None, None)`` without pages."""
        if not self.pages:
            return None, None
        starts = [p.start for p in self.pages]
        first = max(0, bisect.bisect_right(starts, start) - 1)
        last = max(0, bisect.bisect_right(starts, max(start, end - 1)) - 1)
        return self.pages[first].number, self.pages[last].number

    def section_at(self, start: int, end: int | None = None) -> list[str]:
        """Heading path of the innermost section containing ``start`` (a chunk belongs where it begins).

        A chunk that starts on whitespace before a heading belongs to the section of its first
        non-whitespace character.
        """
        if not self.sections:
            return []
        pos = start
        stop = len(self.text) if end is None else end
        while pos < stop and self.text[pos].isspace():
            pos += 1
        best: Section | None = None
        for s in self.sections:
            if s.start > pos:
                break
            if s.start <= pos < s.end and (best is None or s.level >= best.level):
                best = s
        return list(best.path) if best else []

    def table_header(self, start: int, end: int) -> str | None:
        """The header row(s) of the table ``[start, end)`` begins in, when the span does not hold that header
        itself (a piece of a table cut between rows); ``None`` otherwise."""
        for t in self.tables:
            if t.start > start:
                break
            if t.header_end <= start < t.end and not (start <= t.header_start and t.header_end <= end):
                header = self.text[t.header_start : t.header_end].strip("\n")
                return header or None
        return None

    def time_span(self, start: int, end: int) -> tuple[float | None, float | None, list[str]]:
        """Start time, end time and speakers of the cues that ``[start, end)`` overlaps."""
        if not self.cues:
            return None, None, []
        hit = [c for c in self.cues if c.start < end and c.end > start]
        if not hit:
            return None, None, []
        speakers: list[str] = []
        for c in hit:
            if c.speaker and c.speaker not in speakers:
                speakers.append(c.speaker)
        return min(c.start_time for c in hit), max(c.end_time for c in hit), speakers


def page_label(source: str | None) -> str:
    """What a chunk's ``page_start``/``page_end`` count for its source: ``"cell "`` for a Jupyter notebook
    (its cells, numbered from 1), ``"slide "`` for a presentation, ``"p"`` (pages) for everything else."""
    name = str(source or "").lower()
    return "cell " if name.endswith(".ipynb") else "slide " if name.endswith(".pptx") else "p"


#: Milvus VARCHAR limit (bytes): the cap of a free-text chunk field's column
MAX_VARCHAR = 65535
#: how a heading path (``section``) is joined where a list cannot go: a Milvus column, adapter metadata
PATH_SEPARATOR = " > "
#: what a field's values are: ``str``, ``int``, ``float``, ``path`` (a list of headings, stored joined by
#: :data:`PATH_SEPARATOR`), ``strs``/``ints`` (lists)
FIELD_KINDS = ("str", "int", "float", "path", "strs", "ints")


@dataclass(frozen=True)
class FieldSpec:
    """One field of a chunk: every fact about it that the JSON, the store's rows, the Milvus schema, search
    results, filters and adapters need. Each of them derives what it does from :data:`CHUNK_FIELD_TABLE`, so
    a new field is one row there (``chunkwise.store.milvus_schema`` turns a kind into a column type)."""

    name: str
    kind: str
    #: UTF-8 bytes a value (``str``, ``path``) or each item (``strs``) may take in its column
    max_bytes: int | None = None
    #: items a list (``strs``) may hold in its column
    max_items: int | None = None
    #: ``None`` allowed: how a server without nullable fields stores it (real values never equal it); a
    #: value equal to it is stored as null. ``None``: the column is NOT NULL
    null: Any = None
    #: the column's name, and the key in a search result's JSON (default: the field's name)
    column: str | None = None
    #: every stored row has it (a collection made by an older version may lack the others)
    required: bool = False
    #: the primary key
    primary: bool = False
    #: a value over ``max_bytes``/``max_items`` is cut to fit when stored (else it is stored as it is)
    clip: bool = False
    #: ``Index.search(where=...)`` may compare it
    filter: bool = False
    #: kept in the row's ``metadata["video"]`` instead of a column of its own (only clips have them)
    video: bool = False
    #: an adapter hands it on as metadata (the chunk's text and context are the chunk, not metadata)
    metadata: bool = True

    def __post_init__(self) -> None:
        check(self.kind, Options(*FIELD_KINDS), "kind", f"chunk field {self.name!r}")

    @property
    def key(self) -> str:
        """The column, and the search result's JSON key."""
        return self.column or self.name

    @property
    def nullable(self) -> bool:
        return self.null is not None or self.video

    @property
    def is_list(self) -> bool:
        return self.kind in ("path", "strs", "ints")

    def empty(self) -> Any:
        """A chunk's value when none is given (and a stored row's when its column is missing)."""
        if self.nullable:
            return None
        return [] if self.is_list else {"str": "", "int": 0, "float": 0.0}[self.kind]

    def copy(self, value: Any) -> Any:
        """``value`` as JSON holds it: a list copied (so a caller cannot change the chunk through it)."""
        return list(value) if self.is_list and value is not None else value


#: The chunk field table: the fields written to JSONL and stored in an index, in this order, each with what
#: storing and writing it needs. Adding a chunk field is adding a row here.
CHUNK_FIELD_TABLE: tuple[FieldSpec, ...] = (
    FieldSpec("id", "str", max_bytes=64, required=True, primary=True, filter=True),
    FieldSpec("doc_id", "str", max_bytes=64, required=True, filter=True),
    FieldSpec("source", "str", max_bytes=MAX_VARCHAR, required=True, clip=True, filter=True),
    FieldSpec("index", "int", column="chunk_index", required=True, filter=True),
    FieldSpec("start", "int", required=True, filter=True),
    FieldSpec("end", "int", required=True, filter=True),
    FieldSpec("text", "str", max_bytes=MAX_VARCHAR, required=True, metadata=False),
    FieldSpec("token_count", "int", required=True, filter=True),
    FieldSpec("page_start", "int", null=-1, filter=True),
    FieldSpec("page_end", "int", null=-1, filter=True),
    FieldSpec("section", "path", max_bytes=8192, filter=True),
    FieldSpec("strategy", "str", max_bytes=64, filter=True),
    FieldSpec("start_time", "float", null=-1.0, filter=True),
    FieldSpec("end_time", "float", null=-1.0, filter=True),
    FieldSpec("speakers", "strs", max_bytes=256, max_items=64, clip=True, filter=True),
    FieldSpec("context", "str", max_bytes=MAX_VARCHAR, null="", clip=True, metadata=False),
    FieldSpec("start_frame", "int", video=True),
    FieldSpec("end_frame", "int", video=True),
    FieldSpec("track_ids", "ints", video=True),
    FieldSpec("classes", "strs", video=True),
    FieldSpec("source_start", "int", null=-1),
    FieldSpec("source_end", "int", null=-1),
    # a new chunk field goes above this line
)
#: The names of the chunk fields, in table order.
CHUNK_FIELDS = tuple(f.name for f in CHUNK_FIELD_TABLE)


def _table_fields(cls: type) -> type:
    """Declare on ``cls`` every field of :data:`CHUNK_FIELD_TABLE` its body does not (keyword-only, with the
    field's empty value): a new row of the table is a ``Chunk`` attribute with nothing else written. (The
    fields declared in the body are the typed API; ``tests/test_field_table.py`` checks they agree.)"""
    annotations = cls.__dict__["__annotations__"]  # the body declares some, so the dict exists
    for spec in CHUNK_FIELD_TABLE:
        if spec.name not in annotations:
            annotations[spec.name] = "Any"
            if spec.is_list and not spec.nullable:
                setattr(cls, spec.name, field(default_factory=list, kw_only=True))
            else:
                setattr(cls, spec.name, field(default=spec.empty(), kw_only=True))
    return cls


@dataclass
@_table_fields
class Chunk:
    """A piece of a document: an exact slice ``doc.text[start:end]`` plus where it came from.

    ``context`` is the optional contextual text (headings, neighbours or an LLM's situating sentence) that
    is embedded and indexed beside ``text``; it never replaces it. ``vector`` and ``sentence_vectors`` keep
    embeddings made while chunking so nothing is embedded twice; they are not serialised.
    """

    text: str
    start: int
    end: int
    index: int
    id: str
    doc_id: str
    source: str
    token_count: int
    strategy: str
    page_start: int | None = None
    page_end: int | None = None
    section: list[str] = field(default_factory=list)
    start_time: float | None = None
    end_time: float | None = None
    speakers: list[str] = field(default_factory=list)
    context: str | None = None
    vector: Any = field(default=None, repr=False, compare=False)
    sentence_vectors: Any = field(default=None, repr=False, compare=False)
    sentence_spans: list[tuple[int, int]] | None = field(default=None, repr=False, compare=False)
    # video clips (chunkwise.video): frames [start_frame, end_frame] and the tracked objects in them
    start_frame: int | None = None
    end_frame: int | None = None
    track_ids: list[int] | None = None
    classes: list[str] | None = None
    #: where the chunk came from in the source: character offsets into the decoded file (text formats) or,
    #: for PDF, into the extracted text of page ``page_start`` (start) and ``page_end`` (end); ``None``
    #: when the document has no source map (see :mod:`chunkwise.formats.sourcemap`)
    source_start: int | None = None
    source_end: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The serialisable fields (see :data:`CHUNK_FIELD_TABLE`), lists copied."""
        return {spec.name: spec.copy(getattr(self, spec.name)) for spec in CHUNK_FIELD_TABLE}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], by_column: bool = False) -> Chunk:
        """The chunk :meth:`to_dict` wrote, or with ``by_column`` the one a search result's JSON holds (its
        keys are the columns: ``chunk_index``); a list field given as ``null``, or an optional field missing
        (JSON written before it existed), is empty."""
        values = {}
        for spec in CHUNK_FIELD_TABLE:
            key = spec.key if by_column else spec.name
            value = data[key] if spec.required else data.get(key)
            values[spec.name] = spec.empty() if value is None and not spec.nullable else spec.copy(value)
        return cls(**values)

    @property
    def embed_text(self) -> str:
        """The text to embed and index for BM25: the contextual text when present, else the chunk text."""
        return f"{self.context}\n\n{self.text}" if self.context else self.text
