"""Evaluation datasets: documents, queries with exact relevant spans, and optional gold segment boundaries.

Two layouts are read, both as folders:

**Chroma's chunking-evaluation layout** (``corpora/`` + ``questions_df.csv``), as published with
"Evaluating Chunking Strategies for Retrieval" (Smith & Troynikov, 2024). ``questions_df.csv`` has the
columns ``question, references, corpus_id``; ``references`` is a JSON list of
``{"content", "start_index", "end_index"}`` character offsets into the corpus file; ``corpus_id`` names a
file in ``corpora/`` (``corpora/<id>``, or ``corpora/<id>.md``/``.txt``, or the file name of a path).

**The neutral layout** (``docs/`` + ``queries.jsonl`` [+ ``boundaries.jsonl``]):

- ``docs/``: one document per file, any depth; a document's id is its path relative to ``docs/`` with
  ``/`` separators (``guides/install.md``). Text and Markdown files are read verbatim; PDF, HTML, WebVTT
  and SRT files through the loader of ``chunkwise chunk`` (with the same loader options), and their
  references are offsets into that loaded text (``chunkwise.load(path).text``).
- ``queries.jsonl``: one JSON object a line, ``{"query": str, "references": [{"doc": id, "start": int,
  "end": int}, ...]}``; ``start``/``end`` omitted means the whole document is relevant. An optional
  ``"id"`` names the query in reports, and an optional ``"content"`` per reference is checked against the
  text like Chroma's.
- ``boundaries.jsonl`` (optional): ``{"doc": id, "boundaries": [char offsets where a gold segment starts],
  "units": [[start, end], ...]}``; ``units`` are the gold sentence spans over which Pk and WindowDiff are
  counted (without them, the sentences found by chunkwise's splitter are used).

Offsets are character offsets into the file read as UTF-8 text with universal newlines (``\\r\\n`` read as
``\\n``), i.e. what Python's ``open(path, encoding="utf-8").read()`` returns; that is how Chroma's offsets
were made.

Nothing is dropped silently: a reference whose offsets fall outside its document, or whose ``content``
differs from the text at its offsets, is skipped and listed in :attr:`Dataset.problems`; a query left
with no references is skipped and listed too.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..document import Document
from ..errors import InputError

CHROMA_QUESTIONS = "questions_df.csv"
CHROMA_CORPORA = "corpora"
NEUTRAL_DOCS = "docs"
NEUTRAL_QUERIES = "queries.jsonl"
NEUTRAL_BOUNDARIES = "boundaries.jsonl"


@dataclass(frozen=True)
class Reference:
    """A relevant span ``[start, end)`` of the document ``doc``."""

    doc: str
    start: int
    end: int


@dataclass
class Query:
    """A question and the spans that answer it (over one or several documents)."""

    id: str
    text: str
    references: list[Reference]

    @property
    def docs(self) -> list[str]:
        """Relevant document ids, in first-reference order, without repeats."""
        seen: list[str] = []
        for r in self.references:
            if r.doc not in seen:
                seen.append(r.doc)
        return seen


@dataclass
class Boundaries:
    """Gold segmentation of one document: where segments start, and the units Pk/WindowDiff count over."""

    doc: str
    boundaries: list[int]
    units: list[tuple[int, int]] | None = None


@dataclass
class Dataset:
    """Documents by id, the queries that can be scored, optional gold boundaries, and what was skipped."""

    path: str
    layout: str
    documents: dict[str, Document]
    queries: list[Query]
    boundaries: dict[str, Boundaries] = field(default_factory=dict)
    #: one line per skipped reference or query, naming the file, the query and the reason
    problems: list[str] = field(default_factory=list)
    skipped_references: int = 0
    skipped_queries: int = 0

    def subset(self, docs: Iterable[str] | None = None, limit: int | None = None) -> Dataset:
        """The same dataset restricted to some documents (and the queries about only them) and/or the
        first ``limit`` queries; used for quick checks and tests."""
        keep = set(self.documents) if docs is None else set(docs)
        unknown = sorted(keep - set(self.documents))
        if unknown:
            raise InputError(
                f"unknown document(s) {', '.join(unknown)}; the dataset has {', '.join(sorted(self.documents))}",
                source=self.path,
            )
        queries = [q for q in self.queries if all(r.doc in keep for r in q.references)]
        if limit is not None:
            queries = queries[:limit]
        return Dataset(
            path=self.path,
            layout=self.layout,
            documents={k: v for k, v in self.documents.items() if k in keep},
            queries=queries,
            boundaries={k: v for k, v in self.boundaries.items() if k in keep},
            problems=list(self.problems),
            skipped_references=self.skipped_references,
            skipped_queries=self.skipped_queries,
        )

    def summary(self) -> str:
        chars = sum(len(d.text) for d in self.documents.values())
        s = (
            f"{self.path}: {self.layout} layout, {len(self.documents)} documents ({chars:,} characters), "
            f"{len(self.queries)} queries"
        )
        if self.boundaries:
            s += f", gold boundaries for {len(self.boundaries)} documents"
        if self.skipped_references or self.skipped_queries:
            s += (
                f"; skipped {self.skipped_references} reference(s) and {self.skipped_queries} query(ies) (see problems)"
            )
        return s


# -- detection ----------------------------------------------------------------------------------------


def detect_layout(path: str | Path) -> str:
    """``"chroma"`` or ``"neutral"``; a folder in neither layout is an :class:`InputError` saying what is
    expected."""
    p = Path(path)
    if not p.exists():
        raise InputError("dataset folder not found", source=str(path))
    if not p.is_dir():
        raise InputError(
            "a dataset is a folder (Chroma's corpora/ + questions_df.csv, or docs/ + queries.jsonl)", source=str(path)
        )
    if (p / CHROMA_QUESTIONS).is_file():
        return "chroma"
    if (p / NEUTRAL_QUERIES).is_file():
        return "neutral"
    found = ", ".join(sorted(x.name for x in p.iterdir())[:8]) or "nothing"
    raise InputError(
        "not an evaluation dataset: expected either Chroma's layout (corpora/ and questions_df.csv) or "
        f"the neutral layout (docs/ and queries.jsonl); found {found}",
        source=str(path),
    )


def load_dataset(path: str | Path, **load_options: Any) -> Dataset:
    """Read a dataset folder in either layout (see the module docstring). ``load_options`` are the
    keyword options of :func:`chunkwise.formats.load` (``password``, ``encoding``, ``html_mode``,
    ``clean``...) for the neutral layout's PDF, HTML and subtitle documents."""
    layout = detect_layout(path)
    return load_chroma(path) if layout == "chroma" else load_neutral(path, **load_options)


def read_document(path: Path, doc_id: str, **load_options: Any) -> Document:
    """A neutral-layout document: text and Markdown verbatim (offsets into the file text, as Chroma's),
    every other format (PDF, HTML, WebVTT, SRT) through the same loader as ``chunkwise chunk``, so its
    references are offsets into the loaded text (what ``chunkwise.load(path).text`` returns)."""
    from ..formats import detect_format, load

    try:
        with path.open("rb") as fh:
            head = fh.read(8192)
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", source=str(path)) from None
    fmt = load_options.get("format") or detect_format(head, path.name)
    if fmt in ("text", "markdown"):
        return make_document(read_text(path, load_options.get("encoding")), doc_id, path)
    doc = load(path, **load_options)
    doc.source = doc_id
    doc.title = doc.title or Path(doc_id).stem
    return doc


def make_document(text: str, doc_id: str, path: Path) -> Document:
    """A :class:`Document` over the exact file text; Markdown files also get their heading sections (the
    text is unchanged, so reference offsets stay valid and ``respect_sections``/``--context headings``
    work)."""
    doc = Document(text, source=doc_id, title=Path(doc_id).stem)
    if path.suffix.lower() in (".md", ".markdown"):
        try:
            from ..formats.markdown import markdown_sections
        except ImportError:  # pragma: no cover - formats is part of the package
            return doc
        doc.sections = markdown_sections(text)
    return doc


def read_text(path: Path, encoding: str | None = None) -> str:
    """A document as UTF-8 text (or ``encoding``) with universal newlines (how both layouts' offsets are
    defined)."""
    try:
        return path.read_text(encoding=encoding or "utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not {encoding or 'UTF-8'} text ({exc.reason} at byte {exc.start}; see --encoding)", source=str(path)
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", source=str(path)) from None


# -- checking references ------------------------------------------------------------------------------


class _Collector:
    """Accumulates queries, skipping and recording bad references and empty queries."""

    def __init__(self, source: str, documents: dict[str, Document]):
        self.source = source
        self.documents = documents
        self.queries: list[Query] = []
        self.problems: list[str] = []
        self.skipped_references = 0
        self.skipped_queries = 0

    def check(self, where: str, doc: str, start: Any, end: Any, content: str | None) -> Reference | None:
        """A valid :class:`Reference`, or ``None`` with the reason recorded."""
        text = self.documents.get(doc)
        if text is None:
            return self._skip(where, f"unknown document {doc!r}")
        n = len(text.text)
        if start is None and end is None:
            start, end = 0, n
        try:
            start, end = int(start), int(end)
        except (TypeError, ValueError):
            return self._skip(where, f"offsets must be integers, got start={start!r} end={end!r}")
        if not 0 <= start < end <= n:
            return self._skip(where, f"offsets [{start}:{end}] outside {doc!r} ({n} characters)")
        if content is not None and text.text[start:end] != content:
            found = text.text.find(content)
            hint = f"; the content occurs at [{found}:{found + len(content)}]" if found >= 0 else ""
            return self._skip(where, f"content does not match {doc!r}[{start}:{end}]{hint}")
        return Reference(doc, start, end)

    def _skip(self, where: str, why: str) -> Reference | None:
        """Record why a reference is skipped; ``None`` (so ``return self._skip(...)`` reads as the check's answer)."""
        self.skipped_references += 1
        self.problems.append(f"{self.source}: {where}: reference skipped: {why}")
        return None

    def add(self, qid: str, text: Any, refs: list[Reference | None], where: str) -> None:
        """Keep the query when ``text`` is a non-empty string with a valid reference; else record why not."""
        good = [r for r in refs if r is not None]
        if not isinstance(text, str) or not text.strip():
            self.skipped_queries += 1
            self.problems.append(f"{self.source}: {where}: query skipped: empty query text")
            return
        if not good:
            self.skipped_queries += 1
            reason = "no valid references" if refs else "no references"
            self.problems.append(f"{self.source}: {where}: query skipped: {reason}")
            return
        self.queries.append(Query(qid, text, good))


# -- Chroma's layout ----------------------------------------------------------------------------------


def _chroma_corpus_file(root: Path, corpus_id: str) -> Path | None:
    corpora = root / CHROMA_CORPORA
    name = Path(corpus_id).name
    for cand in (
        corpora / corpus_id,
        corpora / f"{corpus_id}.md",
        corpora / f"{corpus_id}.txt",
        corpora / name,
        root / corpus_id,
    ):
        if cand.is_file():
            return cand
    return None


def load_chroma(path: str | Path) -> Dataset:
    root = Path(path)
    qfile = root / CHROMA_QUESTIONS
    csv.field_size_limit(1 << 30)
    try:
        with qfile.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read questions ({exc})", source=str(qfile)) from None
    if rows and not {"question", "references", "corpus_id"} <= set(rows[0]):
        raise InputError(
            f"expected the columns question, references, corpus_id; found {', '.join(rows[0])}", source=str(qfile)
        )
    documents: dict[str, Document] = {}
    missing: set[str] = set()
    for row in rows:
        cid = row.get("corpus_id") or ""
        if cid in documents or cid in missing:
            continue
        f = _chroma_corpus_file(root, cid)
        if f is None:
            missing.add(cid)
            continue
        documents[cid] = make_document(read_text(f), cid, f)
    if not documents:
        raise InputError(
            f"no corpus files found under {root / CHROMA_CORPORA} for the corpus ids in {CHROMA_QUESTIONS}",
            source=str(root),
        )
    col = _Collector(str(qfile), documents)
    for i, row in enumerate(rows):
        where = f"row {i + 2} (question {i})"
        cid = row.get("corpus_id") or ""
        try:
            refs_json = json.loads(row.get("references") or "[]")
        except json.JSONDecodeError as exc:
            col.add(str(i), row.get("question", ""), [None], where)
            col.problems[-1] = f"{qfile}: {where}: query skipped: references are not JSON ({exc.msg})"
            continue
        if not isinstance(refs_json, list):
            refs_json = [refs_json]
        refs: list[Reference | None] = []
        for j, r in enumerate(refs_json):
            if not isinstance(r, dict):
                refs.append(col._skip(f"{where} reference {j}", "not an object"))
                continue
            refs.append(
                col.check(f"{where} reference {j}", cid, r.get("start_index"), r.get("end_index"), r.get("content"))
            )
        col.add(str(i), row.get("question", ""), refs, where)
    return Dataset(
        str(root), "chroma", documents, col.queries, {}, col.problems, col.skipped_references, col.skipped_queries
    )


# -- the neutral layout -------------------------------------------------------------------------------


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read ({exc})", source=str(path)) from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"line {n} is not JSON ({exc.msg})", source=str(path)) from None
    return out


def load_neutral(path: str | Path, **load_options: Any) -> Dataset:
    root = Path(path)
    docs_dir = root / NEUTRAL_DOCS
    if not docs_dir.is_dir():
        raise InputError(
            f"the neutral layout needs a {NEUTRAL_DOCS}/ folder beside {NEUTRAL_QUERIES}", source=str(root)
        )
    documents: dict[str, Document] = {}
    for f in sorted(docs_dir.rglob("*")):
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(docs_dir).parts):
            doc_id = f.relative_to(docs_dir).as_posix()
            documents[doc_id] = read_document(f, doc_id, **load_options)
    if not documents:
        raise InputError("no documents", source=str(docs_dir))
    qfile = root / NEUTRAL_QUERIES
    col = _Collector(str(qfile), documents)
    for line, obj in _read_jsonl(qfile):
        where = f"line {line}"
        if not isinstance(obj, dict) or "query" not in obj:
            col.add(str(line), "", [], where)
            col.problems[-1] = f'{qfile}: {where}: query skipped: expected {{"query": ..., "references": [...]}}'
            continue
        refs_json = obj.get("references") or []
        if not isinstance(refs_json, list):
            refs_json = [refs_json]
        refs: list[Reference | None] = []
        for j, r in enumerate(refs_json):
            rw = f"{where} reference {j}"
            if isinstance(r, str):  # a bare document id: the whole document is relevant
                r = {"doc": r}
            if not isinstance(r, dict) or "doc" not in r:
                refs.append(col._skip(rw, 'expected {"doc": ID, "start": INT, "end": INT}'))
                continue
            if ("start" in r) != ("end" in r):
                refs.append(col._skip(rw, "give both start and end, or neither (whole document)"))
                continue
            refs.append(col.check(rw, str(r["doc"]), r.get("start"), r.get("end"), r.get("content")))
        col.add(str(obj.get("id", line)), obj.get("query"), refs, where)
    boundaries: dict[str, Boundaries] = {}
    bfile = root / NEUTRAL_BOUNDARIES
    if bfile.is_file():
        boundaries = _load_boundaries(bfile, documents)
    return Dataset(
        str(root),
        "neutral",
        documents,
        col.queries,
        boundaries,
        col.problems,
        col.skipped_references,
        col.skipped_queries,
    )


def _load_boundaries(path: Path, documents: dict[str, Document]) -> dict[str, Boundaries]:
    out: dict[str, Boundaries] = {}
    for line, obj in _read_jsonl(path):
        if not isinstance(obj, dict) or "doc" not in obj or not isinstance(obj.get("boundaries"), list):
            raise InputError(
                f'line {line}: expected {{"doc": ID, "boundaries": [...], "units": [...]}}', source=str(path)
            )
        doc = str(obj["doc"])
        if doc not in documents:
            raise InputError(f"line {line}: unknown document {doc!r}", source=str(path))
        n = len(documents[doc].text)
        try:
            bounds = sorted({int(b) for b in obj["boundaries"]})
            units = obj.get("units")
            units = [(int(a), int(b)) for a, b in units] if units is not None else None
        except (TypeError, ValueError):
            raise InputError(
                f"line {line}: boundaries must be integers and units [start, end] pairs", source=str(path)
            ) from None
        if any(not 0 <= b <= n for b in bounds):
            raise InputError(f"line {line}: a boundary lies outside {doc!r} ({n} characters)", source=str(path))
        if units is not None and any(not 0 <= a < b <= n for a, b in units):
            raise InputError(f"line {line}: a unit lies outside {doc!r} ({n} characters) or is empty", source=str(path))
        out[doc] = Boundaries(doc, bounds, sorted(units) if units is not None else None)
    return out
