"""Evaluation questions for a folder of documents that has none: ``chunkwise questions DOCS -o DATASET``.

Most users have documents and no labelled queries, so ``eval`` and ``tune`` had nothing to measure. This
module writes a dataset in the neutral layout :mod:`.datasets` reads (``docs/`` + ``queries.jsonl`` with
exact reference offsets) plus a ``questions.json`` manifest saying how it was made (generator, prompt,
model, seed, filters, how many questions were kept and why the others were rejected).

Generators (``method``):

- ``concepts`` (the offline default): two key phrases of a passage (the phrases of its words rarest across
  the corpus's passages, from two different sentences where it has several; URLs, markup, code and
  ``{disfluency}`` tokens cut out first) asked about in a question form of the generator's own ("How does
  A relate to B?"); the reference is the whole passage, answered across its sentences. No sentence of the
  text is copied into the question, and passages without two distinctive phrases (context-free talk)
  give none.
- ``heldout`` (inverse cloze task): a sentence of a passage is the query and is
  *removed from the written document*; the reference is the passage it came from, so the query never
  matches its answer word for word and retrieval has to find the context it was taken out of.
- ``cloze``: the same sentence as the query, left in the document; the reference is
  its neighbours (the sentence itself excluded), so a chunking scores when it keeps a sentence together with
  its context. The written documents are the originals, so the dataset's corpus is the one users index.
- ``heading``: a Markdown heading is the query for its section's text (documents without headings give
  none).
- ``keyphrase``: the passage's most distinctive words (TF-IDF over the corpus's passages) as a keyword
  query for that passage.
- ``llm``: a chat model (:class:`~chunkwise.llm.client.ChatClient`, cached per endpoint) writes a question
  a user would ask plus the exact supporting excerpt, in rotating styles (factoid, why/how,
  multi-sentence); the excerpt is located in the passage (exact, then case- and whitespace-normalised,
  then a fuzzy alignment) and the question is rejected when it cannot be found.

Passages are sampled stratified across documents and their sections (seeded round robin), so a long
document does not supply every question. Two filters apply to every generator and are counted in the
manifest: *near-duplicates* (word-set Jaccard with an already kept question at or above
``max_jaccard``) and *trivially lexical* questions (the fraction of the question's word trigrams found
verbatim in its reference above ``max_overlap``: a question copied out of its answer measures string
matching, not retrieval).

Known bias: every offline generator draws its questions from the text, so it favours lexical matching
(BM25) more than people do; ``heldout`` removes the exact sentence but keeps its vocabulary neighbours,
``keyphrase`` is lexical by construction, ``heading`` only works on documents with headings. See
docs/evaluation.md ("Generated questions") for how well each ranks pipelines like human questions do.

The shared parts (a question, passages, the filters) are :mod:`.question_sampling`; the offline generators
:mod:`.question_offline`; the LLM generator and :func:`locate` :mod:`.question_llm`. This module is the entry
points, and every public name stays importable from here.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..document import Document
from ..errors import ConfigError, InputError
from ..validation import Interval, check
from .question_llm import LLM_PASSAGE_CHARS, PROMPT, STYLES, SYSTEM, llm_questions, locate
from .question_offline import concept_questions, heading_questions, heldout_questions, keyphrase_questions
from .question_sampling import (
    PASSAGE_CHARS,
    Question,
    QuestionFilter,
    QuestionSet,
    jaccard,
    lexical_overlap,
    passages,
    stratified,
    text_measures,
)

#: the generators, offline ones first
OFFLINE_METHODS = ("concepts", "heldout", "cloze", "heading", "keyphrase")
METHODS = (*OFFLINE_METHODS, "llm")
#: what ``questions`` uses without an LLM endpoint: the one offline proxy whose questions copy no run of 8
#: words from the corpus (``cloze`` copied one in 72-99 % of its questions on the public sets, and carried
#: markup in up to 37 %: benchmarks/results/tuning.md)
DEFAULT_OFFLINE_METHOD = "concepts"


def generate_questions(
    documents: Mapping[str, Document | str],
    method: str = DEFAULT_OFFLINE_METHOD,
    n: int = 100,
    seed: int = 0,
    client: Any = None,
    styles: Sequence[str] = tuple(STYLES),
    max_overlap: float = 0.5,
    max_jaccard: float = 0.8,
    concurrency: int = 4,
    progress: Callable[[str], None] | None = None,
) -> QuestionSet:
    """Up to ``n`` questions over ``documents`` (id -> :class:`Document` or text), deterministic for a
    ``seed`` (the ``llm`` method: for a seed and a deterministic endpoint; answers are cached per endpoint).

    ``client`` is a :class:`~chunkwise.llm.client.ChatClient` (``method="llm"`` only). The filters:
    ``max_overlap`` (trivially lexical: word-trigram overlap of question and reference above it) and
    ``max_jaccard`` (near-duplicate of a kept question at or above it).
    """
    _check_arguments(method, n, styles, max_overlap, max_jaccard, client)
    docs = {k: (v if isinstance(v, Document) else Document(v, source=k)) for k, v in documents.items()}
    for k, d in docs.items():
        d.source = k
    if not docs:
        raise InputError("no documents to write questions about")
    progress = progress or (lambda msg: None)
    rng = random.Random(seed)
    size = LLM_PASSAGE_CHARS if method == "llm" else PASSAGE_CHARS
    order = stratified({k: passages(d, size) for k, d in docs.items()}, rng)
    flt = QuestionFilter(max_overlap, max_jaccard)
    texts = {k: d.text for k, d in docs.items()}
    if method in ("heldout", "cloze"):
        texts = heldout_questions(docs, order, n, flt, rng, mask=method == "heldout")
    elif method == "concepts":
        concept_questions(docs, order, n, flt, rng)
    elif method == "heading":
        heading_questions(docs, n, flt, rng)
    elif method == "keyphrase":
        keyphrase_questions(docs, order, n, flt)
    else:
        llm_questions(docs, order, n, flt, client, list(styles), concurrency, progress)
    manifest = _manifest(method, seed, n, flt, len(order), len(docs), size, max_overlap, max_jaccard)
    manifest["measures"] = text_measures(flt.kept, texts)
    originals = _originals(docs, texts)
    texts, kept = _rename_rewritten(texts, flt.kept, {k: d.text for k, d in docs.items()})
    if method == "llm":
        manifest.update(
            {
                "prompt": PROMPT,
                "system": SYSTEM,
                "styles": list(styles),
                "model": getattr(client, "model", None),
                "endpoint": getattr(client, "url", None),
            }
        )
    manifest["documents_copied"] = len(originals)
    return QuestionSet(texts, kept, manifest, flt.rejected, originals)


def _originals(docs: Mapping[str, Document], texts: Mapping[str, str]) -> dict[str, str]:
    """The documents written as byte-identical copies: those read from a file and not rewritten."""
    return {
        k: str(d.metadata["original"])
        for k, d in docs.items()
        if texts.get(k) == d.text and isinstance(d.metadata, dict) and d.metadata.get("original")
    }


def _rename_rewritten(
    texts: dict[str, str], questions: list[Question], read: Mapping[str, str]
) -> tuple[dict[str, str], list[Question]]:
    """Documents whose text was rewritten (``heldout``) and that are not text or Markdown files get
    ``.txt`` added to their id, so ``eval`` reads the written text as text (not as the PDF it came from)."""
    rename = {k: doc_id_for(k) for k in texts if texts[k] != read.get(k) and doc_id_for(k) != k}
    if not rename:
        return texts, questions
    for q in questions:
        q.doc = rename.get(q.doc, q.doc)
    return {rename.get(k, k): v for k, v in texts.items()}, questions


def _check_arguments(
    method: str, n: int, styles: Sequence[str], max_overlap: float, max_jaccard: float, client: Any
) -> None:
    """Every bad argument of :func:`generate_questions` as one :class:`ConfigError`, before any document is
    read, so a mistyped method or style costs nothing."""
    if method not in METHODS:
        raise ConfigError(f"unknown question method {method!r}; choose one of {', '.join(METHODS)}")
    check(n, Interval(int, 1, None), "n", "generate_questions")
    for name, v in (("max_overlap", max_overlap), ("max_jaccard", max_jaccard)):
        check(v, Interval(float, 0, 1), name, "generate_questions")
    bad = [s for s in styles if s not in STYLES]
    if bad or not styles:
        raise ConfigError(f"unknown question style {', '.join(bad) or '(none)'}; choose from {', '.join(STYLES)}")
    if method == "llm" and client is None:
        raise ConfigError("the llm question method needs an endpoint: --llm-base-url URL and --llm-model NAME")


def _manifest(
    method: str,
    seed: int,
    n: int,
    flt: QuestionFilter,
    n_passages: int,
    n_docs: int,
    size: int,
    max_overlap: float,
    max_jaccard: float,
) -> dict[str, Any]:
    """How the questions were made (``questions.json``), apart from the generation so
    :func:`generate_questions` reads as the steps it takes."""
    manifest: dict[str, Any] = {
        "generator": f"chunkwise questions --method {method}",
        "method": method,
        "seed": seed,
        "requested": n,
        "kept": len(flt.kept),
        "rejected": dict(sorted(flt.rejected.items())),
        "passages": n_passages,
        "documents": n_docs,
        "filters": {"max_lexical_overlap": max_overlap, "lexical_ngram": 3, "near_duplicate_jaccard": max_jaccard},
        "sampling": "passages of whole sentences inside one section (<= "
        f"{size} characters), seeded round robin over documents and their sections",
    }
    manifest["bias"] = (
        "questions are drawn from the text itself, so they favour lexical (BM25) matching more "
        "than people's questions; use them to compare pipelines, not as absolute scores"
    )
    if method == "heldout":
        manifest["masked_sentences"] = len(flt.kept)
        manifest["note"] = "each query sentence is removed from the written document; the reference is its passage"
    return manifest


def doc_id_for(name: str) -> str:
    """The id a document's *rewritten* text gets in ``docs/`` (``heldout`` changes the text): its relative
    path, with ``.txt`` added unless it is already a text or Markdown file."""
    return name if Path(name).suffix.lower() in (".md", ".markdown", ".txt") else f"{name}.txt"


def load_documents(paths: Sequence[str | os.PathLike], **options: Any) -> dict[str, Document]:
    """The documents under ``paths`` (files and folders, as ``chunkwise chunk`` reads them: the same walk,
    globs and loader options), keyed by the id they get in ``docs/``: the path relative to the folder given
    (a file given alone: its name). Each is read as ``eval`` will read its byte-identical copy
    (:func:`~.datasets.read_document`): text and Markdown verbatim (no clean-up), other formats (PDF, HTML,
    subtitles) through the loader. The original's path is ``doc.metadata["original"]``. ``options``: what
    :func:`~chunkwise.formats.iter_documents` takes (``include``/``exclude`` globs, ``all_files``, ``code``,
    the loaders' options)."""
    from ..formats import iter_documents
    from .datasets import make_document, read_text

    out: dict[str, Document] = {}
    roots = [Path(p) for p in paths]
    for source, doc in iter_documents([str(p) for p in paths], **options):
        if isinstance(doc, InputError):
            raise doc
        rel = None
        for r in roots:
            try:
                rel = Path(source).resolve().relative_to(r.resolve()).as_posix() if r.is_dir() else None
            except ValueError:
                continue
            if rel:
                break
        doc_id = rel or Path(source).name
        if doc_id in out:
            raise InputError(f"two documents would both be written as docs/{doc_id}", source=source)
        fmt = (doc.metadata or {}).get("format")
        if fmt in ("text", "markdown"):
            kept = make_document(read_text(Path(source), options.get("encoding")), doc_id, Path(doc_id))
        else:
            kept = doc
            kept.source = doc_id
        kept.metadata = {**(doc.metadata or {}), "original": str(source)}
        if kept.text.strip():
            out[doc_id] = kept
    if not out:
        raise InputError("no documents with text", source=", ".join(map(str, paths)))
    return out


def write_question_set(qs: QuestionSet, out: str | os.PathLike, force: bool = False) -> Path:
    """Write ``docs/``, ``queries.jsonl`` and ``questions.json`` into a temporary folder beside ``out``,
    check that :func:`~.datasets.load_dataset` reads every question back unchanged, then rename it to
    ``out``: a failed or interrupted run never leaves a partial dataset that looks complete."""
    from .datasets import load_dataset

    if not qs.questions:
        reasons = ", ".join(f"{k}: {v}" for k, v in qs.rejected.most_common()) or "no passages"
        raise ConfigError(f"no question could be generated ({reasons})")
    target = Path(out)
    if target.exists() and not (target.is_dir() and not any(target.iterdir())) and not force:
        raise ConfigError("already exists; choose another folder or pass --force to replace it", source=str(target))
    parent = target.parent if str(target.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = parent / f".{target.name}.partial-{os.getpid()}-{int(time.time() * 1000)}"
        tmp.mkdir()
    except OSError as exc:
        raise ConfigError(f"cannot create the dataset folder ({exc.strerror})", source=str(target)) from None
    try:
        for doc_id, text in qs.texts.items():
            p = tmp / "docs" / doc_id
            p.parent.mkdir(parents=True, exist_ok=True)
            original = qs.originals.get(doc_id)
            if original is not None:
                shutil.copyfile(original, p)  # byte-identical: eval reads it as the questions were made
            else:
                p.write_text(text, encoding="utf-8", newline="")
        rows = [q.to_row(f"q{i:04d}", qs.texts[q.doc]) for i, q in enumerate(qs.questions, 1)]
        (tmp / "queries.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
        manifest = {**qs.manifest, "queries": len(rows), "kinds": dict(Counter(q.kind for q in qs.questions))}
        (tmp / "questions.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        ds = load_dataset(tmp)
        if ds.problems or len(ds.queries) != len(rows):
            raise ConfigError(f"the written dataset does not read back: {ds.problems[:1]}")
        if target.exists():
            old = parent / f".{target.name}.old-{os.getpid()}"
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ConfigError(f"cannot write the dataset ({exc.strerror or exc})", source=str(target)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def make_questions(
    paths: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    method: str | None = None,
    n: int = 100,
    seed: int = 0,
    client: Any = None,
    force: bool = False,
    load_options: Mapping[str, Any] | None = None,
    **kw: Any,
) -> QuestionSet:
    """Python API of ``chunkwise questions``: load ``paths``, generate, write ``out`` (see
    :func:`generate_questions` and :func:`write_question_set`). ``method`` defaults to ``llm`` with a
    ``client``, else :data:`DEFAULT_OFFLINE_METHOD`."""
    method = method or ("llm" if client is not None else DEFAULT_OFFLINE_METHOD)
    docs = load_documents(list(paths), **dict(load_options or {}))
    qs = generate_questions(docs, method=method, n=n, seed=seed, client=client, **kw)
    write_question_set(qs, out, force=force)
    return qs


__all__ = [
    "generate_questions",
    "make_questions",
    "write_question_set",
    "load_documents",
    "locate",
    "lexical_overlap",
    "jaccard",
    "passages",
    "stratified",
    "Question",
    "QuestionSet",
    "METHODS",
    "OFFLINE_METHODS",
    "DEFAULT_OFFLINE_METHOD",
    "STYLES",
    "PROMPT",
]
