"""BM25 over chunk texts with ``bm25s``, set up once for every caller.

Milvus scores BM25 itself wherever it can (a BM25 function over ``indexed_text``). Everything else that
ranks chunks by BM25 uses this module: :class:`~chunkwise.store.milvus.MilvusStore` on servers without BM25
functions, the in-memory store and therefore evaluation. One set-up means ``chunkwise eval`` measures the
BM25 that ``chunkwise search --hybrid`` runs: the terms of :mod:`chunkwise.segmentation.lexical` (identifiers such
as ``3.8.13`` or ``max_tokens`` whole, words lower-cased and in the singular, English stop words removed), Lucene's BM25 with
``k1=1.5, b=0.75``, the same variant Milvus uses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..security import replace_folder
from ..segmentation.lexical import TOKENIZER_VERSION, lexical_terms
from .numbers import ChunkNumbers, RowOf

#: Lucene BM25 parameters (Milvus's defaults too)
K1 = 1.5
B = 0.75
#: the stop word list bm25s removes from texts and queries
STOPWORDS = "en"


def document_terms(text: str) -> list[str]:
    """A document's terms, as every BM25 copy indexes them: identifiers whole, and their parts; words in the
    singular (:func:`~chunkwise.segmentation.lexical.lexical_terms`)."""
    return lexical_terms(text, fold=True)


def bm25_index(texts: Sequence[str]):
    """A ``bm25s.BM25`` retriever over ``texts`` (at least one), positions in ``texts`` being its ids."""
    import bm25s

    retriever = bm25s.BM25(k1=K1, b=B)
    retriever.index([document_terms(t) for t in texts], show_progress=False)
    return retriever


def bm25_query(query: str) -> list[list[str]] | None:
    """``query``'s terms, identifiers whole and without their parts, words in the singular (``None`` when
    nothing but stop words is left): a query identifier matches the same identifier, never a piece of a
    longer one."""
    tokens = lexical_terms(query, parts=False, fold=True)
    return [tokens] if tokens else None


class BM25Fallback:
    """An in-memory BM25 index over ``(id, text)`` pairs, for stores without built-in BM25."""

    def __init__(self, items: Iterable[tuple[str, str]]):
        pairs = list(items)
        self.ids = [i for i, _ in pairs]
        self._index_of = {doc: n for n, doc in enumerate(self.ids)}
        self._retriever = bm25_index([t for _, t in pairs]) if pairs else None

    def __len__(self) -> int:
        return len(self.ids)

    def save(self, folder: str | os.PathLike) -> None:
        """Write the index to ``folder`` (replaced whole: written beside it, then renamed), so that a later
        process loads it in milliseconds instead of reading every text back and indexing it again."""

        def fill(tmp: Path) -> None:
            (tmp / "ids.json").write_text(json.dumps(self.ids), encoding="utf-8")
            (tmp / "tokenizer.txt").write_text(TOKENIZER_VERSION, encoding="utf-8")
            if self._retriever is not None:
                self._retriever.save(str(tmp), show_progress=False)

        replace_folder(folder, fill)

    @classmethod
    def load(cls, folder: str | os.PathLike) -> BM25Fallback:
        """An index written by :meth:`save` (``OSError``/``ValueError`` when there is none, it is damaged or
        its terms were made by another :data:`~chunkwise.segmentation.lexical.TOKENIZER_VERSION`)."""
        import bm25s

        folder = Path(folder)
        if (folder / "tokenizer.txt").read_text(encoding="utf-8").strip() != TOKENIZER_VERSION:
            raise ValueError("the saved BM25 index was made with other terms")
        out = cls(())
        out.ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
        out._index_of = {doc: n for n, doc in enumerate(out.ids)}
        if out.ids:
            out._retriever = bm25s.BM25.load(str(folder), show_progress=False)
        return out

    def search(self, query: str, limit: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """The ``limit`` best ``(id, score)`` pairs with a positive score, restricted to ``allowed`` ids."""
        if self._retriever is None or limit <= 0:
            return []
        q = bm25_query(query)
        if q is None:
            return []
        mask = None
        if allowed is not None:
            mask = np.zeros(len(self.ids), dtype=np.float32)
            for doc in allowed:
                n = self._index_of.get(doc)
                if n is not None:
                    mask[n] = 1.0
            if not mask.any():
                return []
        limit = min(limit, len(self.ids))
        try:
            docs, scores = self._retriever.retrieve(q, k=limit, show_progress=False, weight_mask=mask)
        except (ValueError, KeyError):  # every query token is unknown to the vocabulary
            return []
        keep = scores[0] > 0  # filtered in numpy: a search for every chunk returns mostly zeros
        return [(self.ids[n], s) for n, s in zip(docs[0][keep].tolist(), scores[0][keep].tolist())]


class BM25Postings:
    """BM25 over ``(id, text)`` pairs that a writer updates in place: appends and deletes cost what the
    changed texts cost, not a rebuild.

    bm25s stores each (document, term) pair's *score*, which depends on the number of documents, a term's
    document frequency and the average length: one new document changes them all, so bm25s can only be
    rebuilt. Here the postings hold term *frequencies* (one ``array('i')`` of documents and one of counts
    per term, appended to) and the scores are computed at query time for the query's terms only, with the
    collection's statistics as they are then (Lucene's BM25, bm25s's default: ``idf = ln(1 + (N - df + 0.5)
    / (df + 0.5))``, ``tf / (tf + k1 (1 - b + b len / avg len))``). Texts have the terms :func:`bm25_index`
    gives them and queries those of :func:`bm25_query` (:mod:`chunkwise.segmentation.lexical`). A delete marks the document dead (its postings
    are skipped, the statistics count live documents only); dead entries are dropped when they outnumber
    the live ones. Ties rank by id, so the answer of an updated copy is that of one built from the same
    pairs at once (:meth:`canonical` compares them).
    """

    def __init__(self, items: Iterable[tuple[str, str]] = ()):
        from array import array

        self._array = array
        self.ids: list[str] = []
        self._number: dict[str, int] = {}  # live id -> document number
        self._live = bytearray()
        self._lengths = array("i")
        self._docs: dict[str, array] = {}  # term -> document numbers
        self._tfs: dict[str, array] = {}  # term -> counts, in step with _docs
        self._df: dict[str, int] = {}  # term -> live documents holding it
        self._total = 0  # summed length of live documents
        #: each document's distinct terms (what a delete takes from the statistics); None until needed
        self._terms: list[tuple[str, ...]] | None = []
        self.upsert(items)

    def __len__(self) -> int:
        return len(self._number)

    @staticmethod
    def tokenize(texts: Sequence[str]) -> list[list[str]]:
        """A document's terms, as :func:`bm25_index` indexes them (identifiers whole, and their parts; words
        in the singular)."""
        return [document_terms(t) for t in texts]

    def upsert(self, items: Iterable[tuple[str, str]]) -> None:
        """Add texts by id (an id already held is replaced; the last text of an id given twice wins)."""
        pairs = list(dict(items).items())
        if not pairs:
            return
        self.remove([i for i, _ in pairs])
        for chunk_id, text in pairs:  # one text's terms at a time: a whole batch's lists held at once is
            self._add(chunk_id, self.tokenize([text])[0])  # ~15 MB per MB of text, kept by the allocator

    def _add(self, chunk_id: str, tokens: list[str]) -> None:
        from collections import Counter
        from sys import intern

        n = len(self.ids)
        self.ids.append(chunk_id)
        self._number[chunk_id] = n
        self._live.append(1)
        self._lengths.append(len(tokens))
        self._total += len(tokens)
        # one string object per term, shared by every document that holds it: the per-document tuples of
        # distinct terms otherwise kept each document's own copies alive (about 9 MB per MB of text)
        counts = Counter(map(intern, tokens))
        if self._terms is not None:
            self._terms.append(tuple(counts))
        for term, tf in counts.items():
            docs = self._docs.get(term)
            if docs is None:
                docs = self._docs[term] = self._array("i")
                self._tfs[term] = self._array("i")
            docs.append(n)
            self._tfs[term].append(tf)
            self._df[term] = self._df.get(term, 0) + 1

    def remove(self, ids: Iterable[str]) -> None:
        """Forget texts by id (unknown ids are ignored)."""
        gone = [n for n in (self._number.pop(i, None) for i in ids) if n is not None]
        if not gone:
            return
        terms = self._doc_terms()
        for n in gone:
            self._live[n] = 0
            self._total -= self._lengths[n]
            for term in terms[n]:  # the live document frequencies
                self._df[term] -= 1
            terms[n] = ()
        if len(self.ids) > 2 * len(self._number) + 64:
            self._compact()

    def _doc_terms(self) -> list[tuple[str, ...]]:
        """Each document's distinct terms, made from the postings the first time a loaded copy deletes
        (a process that only searches or adds never needs them)."""
        if self._terms is None:
            held: list[list[str]] = [[] for _ in self.ids]
            for term, docs in self._docs.items():
                for d in docs:
                    held[d].append(term)
            self._terms = [tuple(t) for t in held]
        return self._terms

    def _compact(self) -> None:
        """Drop dead documents and their postings, renumbering the live ones in their order."""
        keep = np.frombuffer(bytes(self._live), dtype=np.uint8).astype(bool)
        renumber = np.cumsum(keep) - 1
        self.ids = [i for i, k in zip(self.ids, keep.tolist()) if k]
        self._terms = [t for t, k in zip(self._doc_terms(), keep.tolist()) if k]
        self._number = {i: n for n, i in enumerate(self.ids)}
        self._live = bytearray(b"\x01" * len(self.ids))
        self._lengths = self._array("i", np.frombuffer(self._lengths, dtype=np.int32)[keep].tolist())
        for term in list(self._docs):
            docs = np.frombuffer(self._docs[term], dtype=np.int32)
            alive = keep[docs]
            if not alive.any():
                del self._docs[term], self._tfs[term], self._df[term]
                continue
            self._docs[term] = self._array("i", renumber[docs[alive]].astype(np.int32).tolist())
            self._tfs[term] = self._array("i", np.frombuffer(self._tfs[term], dtype=np.int32)[alive].tolist())

    def canonical(self) -> dict[str, tuple[int, list[tuple[str, int]]]]:
        """``id -> (length, sorted (term, count) pairs)`` of every live text: what two copies must agree on."""
        out: dict[str, tuple[int, list[tuple[str, int]]]] = {i: (self._lengths[n], []) for i, n in self._number.items()}
        for term, docs in self._docs.items():
            for d, tf in zip(docs, self._tfs[term]):
                if self._live[d]:
                    out[self.ids[d]][1].append((term, tf))
        return {i: (length, sorted(pairs)) for i, (length, pairs) in out.items()}

    def search(self, query: str, limit: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """The ``limit`` best ``(id, score)`` pairs with a positive score (ties by id), within ``allowed``."""
        n_live = len(self._number)
        if not n_live or limit <= 0:
            return []
        q = bm25_query(query)
        if q is None:
            return []
        avg = self._total / n_live if self._total else 1.0
        lengths = np.frombuffer(self._lengths, dtype=np.int32)
        scores = np.zeros(len(self.ids), dtype=np.float64)
        for term in q[0]:
            docs = self._docs.get(term)
            if docs is None or not self._df.get(term):
                continue
            d = np.frombuffer(docs, dtype=np.int32)
            tf = np.frombuffer(self._tfs[term], dtype=np.int32).astype(np.float64)
            df = self._df[term]
            idf = np.log(1.0 + (n_live - df + 0.5) / (df + 0.5))
            scores[d] += idf * tf / (tf + K1 * (1.0 - B + B * lengths[d] / avg))
        live = np.frombuffer(bytes(self._live), dtype=np.uint8).astype(bool)
        if allowed is not None:
            keep = np.zeros(len(self.ids), dtype=bool)
            keep[[n for n in map(self._number.get, allowed) if n is not None]] = True
            live &= keep
        scores[~live] = 0.0
        positive = np.flatnonzero(scores > 0)
        if len(positive) > limit:
            kth = np.partition(scores[positive], len(positive) - limit)[len(positive) - limit]
            positive = positive[scores[positive] >= kth]  # ties at the k-th score all kept, cut by id below
        ranked = sorted((-float(scores[n]), self.ids[n]) for n in positive.tolist())[:limit]
        return [(i, -s) for s, i in ranked]

    def save(self, folder: str | os.PathLike) -> None:
        """Write the postings to ``folder`` (replaced whole), compacted."""
        if len(self.ids) != len(self._number):
            self._compact()
        terms = sorted(self._docs)
        sizes = np.array([len(self._docs[t]) for t in terms], dtype=np.int64)

        def fill(tmp: Path) -> None:
            head = {"ids": self.ids, "terms": terms, "tokenizer": TOKENIZER_VERSION}
            (tmp / "postings.json").write_text(json.dumps(head), encoding="utf-8")
            empty = np.zeros(0, dtype=np.int32)
            np.savez(
                tmp / "postings.npz",
                sizes=sizes,
                docs=np.concatenate([np.frombuffer(self._docs[t], dtype=np.int32) for t in terms]) if terms else empty,
                tfs=np.concatenate([np.frombuffer(self._tfs[t], dtype=np.int32) for t in terms]) if terms else empty,
                lengths=np.frombuffer(self._lengths, dtype=np.int32),
            )

        replace_folder(folder, fill)

    @classmethod
    def load(cls, folder: str | os.PathLike) -> BM25Postings:
        """Postings written by :meth:`save` (``OSError``/``ValueError`` when there are none or they are damaged)."""
        folder = Path(folder)
        head = json.loads((folder / "postings.json").read_text(encoding="utf-8"))
        with np.load(folder / "postings.npz", allow_pickle=False) as z:
            sizes, docs, tfs, lengths = z["sizes"], z["docs"], z["tfs"], z["lengths"]
        ids, terms = head["ids"], head["terms"]
        if head.get("tokenizer") != TOKENIZER_VERSION:
            raise ValueError("the saved postings were made with other terms")
        if len(sizes) != len(terms) or int(sizes.sum()) != len(docs) != len(tfs) or len(lengths) != len(ids):
            raise ValueError("the saved postings do not match their ids and terms")
        if len(docs) and (docs.min() < 0 or docs.max() >= len(ids)):
            raise ValueError("the saved postings name documents that do not exist")
        out = cls()
        out.ids = list(ids)
        out._number = {i: n for n, i in enumerate(out.ids)}
        out._live = bytearray(b"\x01" * len(out.ids))
        out._lengths = out._array("i", lengths.astype(np.int32).tolist())
        out._total = int(lengths.sum())
        ends = np.cumsum(sizes)
        docs, tfs = docs.astype(np.int32), tfs.astype(np.int32)
        for term, end, size in zip(terms, ends.tolist(), sizes.tolist()):
            out._docs[term] = out._array("i", docs[end - size : end].tobytes())
            out._tfs[term] = out._array("i", tfs[end - size : end].tobytes())
            out._df[term] = size
        out._terms = None
        return out


class SpooledPostings:
    """The BM25 postings of a run that fills a new collection, appended to a file in the database directory as
    texts are written (``(term number, document, count)`` triples, int32), so the run holds only the ids, the
    lengths and the vocabulary, not the postings. :meth:`save` writes :class:`BM25Postings`'s folder from the
    file: the postings split by term into files of about :attr:`PASS` entries, each then sorted and written
    out in order, so saving holds one of them at a time. Replaced or removed texts are marked dead and left out
    when saving (the saved copy is what :class:`BM25Postings` over the live texts would save)."""

    #: postings per bucket when saving (one bucket's triples are held at once)
    PASS = 1 << 19

    def __init__(self, folder: str | os.PathLike, numbers: ChunkNumbers | None = None):
        import tempfile
        from array import array

        folder = Path(folder)
        self.folder = Path(tempfile.mkdtemp(prefix=folder.name + ".spool-", dir=folder.parent))
        self.path = self.folder / "postings.i32"
        self.ids: list[str] = []
        self._number = RowOf(numbers)  # live id -> document number (numbered with the connection's other copies)
        self._live = bytearray()
        self._lengths = array("i")
        self._term_of: dict[str, int] = {}
        self.terms: list[str] = []
        self._array = array
        self._file = open(self.path, "wb")  # noqa: SIM115 - appended to until saved or discarded

    def __len__(self) -> int:
        return len(self._number)

    def upsert(self, items: Iterable[tuple[str, str]]) -> None:
        """Add texts by id (an id already held is replaced: the old text is marked dead)."""
        from collections import Counter

        pairs = list(items)
        if not pairs:
            return
        self.remove([i for i, _ in pairs])
        rows = self._array("i")  # the batch's triples, int32 as they are written
        for chunk_id, text in pairs:
            n = len(self.ids)
            if chunk_id in self._number:  # twice in one batch: the last text wins
                self._live[self._number[chunk_id]] = 0
            self.ids.append(chunk_id)
            self._number[chunk_id] = n
            self._live.append(1)
            tokens = document_terms(text)
            self._lengths.append(len(tokens))
            for term, tf in Counter(tokens).items():
                t = self._term_of.get(term)
                if t is None:
                    t = self._term_of[term] = len(self.terms)
                    self.terms.append(term)
                rows.extend((t, n, tf))
        self._file.write(rows.tobytes())

    def remove(self, ids: Iterable[str]) -> None:
        """Forget texts by id (unknown ids are ignored)."""
        for chunk_id in ids:
            n = self._number.pop(chunk_id, None)
            if n is not None:
                self._live[n] = 0

    def _triples(self, step: int = 1 << 16) -> Iterable[np.ndarray]:
        """The file's triples of live documents, ``step`` at a time, read (not mapped: mapped pages count as
        the process's memory)."""
        self._file.flush()
        live = np.frombuffer(bytes(self._live), dtype=np.uint8).astype(bool)
        with open(self.path, "rb") as fh:
            while True:
                part = np.fromfile(fh, dtype=np.int32, count=3 * step).reshape(-1, 3)
                if not len(part):
                    return
                yield part[live[part[:, 1]]]

    def _buckets(self, rank: np.ndarray, renumber: np.ndarray, sizes: np.ndarray) -> list[Path]:
        """Each live posting, as (term rank, document, count), into the bucket file of its term: buckets of
        about PASS postings (a term starts in one and stays there), so that each is then sorted alone."""
        ends = np.cumsum(sizes)
        bucket_of = (ends - sizes) // self.PASS if len(sizes) else np.zeros(0, dtype=np.int64)
        buckets = [self.folder / f"bucket-{k}.i32" for k in range(int(bucket_of[-1]) + 1 if len(sizes) else 0)]
        outs = [open(b, "wb") for b in buckets]  # noqa: SIM115 - closed below
        try:
            for part in self._triples():
                r = rank[part[:, 0]]
                rows = np.stack([r, renumber[part[:, 1]], part[:, 2]], axis=1)
                bk = bucket_of[r]
                by_bucket = np.argsort(bk, kind="stable")
                rows, bk = rows[by_bucket], bk[by_bucket]
                for piece in np.split(rows, np.flatnonzero(np.diff(bk)) + 1):
                    if len(piece):
                        outs[int(bucket_of[piece[0, 0]])].write(np.ascontiguousarray(piece).data)
        finally:
            for fh in outs:
                fh.close()
        return buckets

    def save(self, folder: str | os.PathLike, discard: bool = True) -> None:
        """Write :class:`BM25Postings`'s folder (what it would save over the live texts), then discard the
        spool (unless not ``discard``)."""
        import zipfile

        live = np.frombuffer(bytes(self._live), dtype=np.uint8).astype(bool)
        renumber = (np.cumsum(live) - 1).astype(np.int32)
        counts = np.zeros(len(self.terms), dtype=np.int64)
        for part in self._triples():
            counts += np.bincount(part[:, 0], minlength=len(self.terms))
        order = sorted((t for t in range(len(self.terms)) if counts[t]), key=self.terms.__getitem__)
        sizes = counts[order] if order else np.zeros(0, dtype=np.int64)
        rank = np.full(len(self.terms), -1, dtype=np.int32)
        rank[order] = np.arange(len(order), dtype=np.int32)
        ids = [i for i, k in zip(self.ids, live.tolist()) if k]
        lengths = np.frombuffer(self._lengths, dtype=np.int32)[live]
        total = int(sizes.sum())

        def member(zf: zipfile.ZipFile, name: str, chunks: Iterable[np.ndarray], length: int, dtype) -> None:
            with zf.open(name + ".npy", "w", force_zip64=True) as out:
                np.lib.format.write_array_header_1_0(
                    out, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": (length,)}
                )
                for c in chunks:
                    out.write(np.ascontiguousarray(c, dtype=dtype).data)  # no bytes copy

        buckets = self._buckets(rank, renumber, sizes)

        def passes(column: int) -> Iterable[np.ndarray]:
            """Column 1 (documents) or 2 (counts) of every posting, in term then document order: one
            bucket at a time, sorted by term (documents stay in file order)."""
            for bucket in buckets:
                got = np.fromfile(bucket, dtype=np.int32).reshape(-1, 3)
                yield got[np.argsort(got[:, 0], kind="stable"), column]
                del got

        def fill(tmp: Path) -> None:
            head = {"ids": ids, "terms": [self.terms[t] for t in order], "tokenizer": TOKENIZER_VERSION}
            (tmp / "postings.json").write_text(json.dumps(head), encoding="utf-8")
            with zipfile.ZipFile(tmp / "postings.npz", "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                member(zf, "sizes", [sizes], len(sizes), np.int64)
                member(zf, "docs", passes(1), total, np.int32)
                member(zf, "tfs", passes(2), total, np.int32)
                member(zf, "lengths", [lengths], len(lengths), np.int32)

        try:
            replace_folder(folder, fill)
        finally:
            for bucket in buckets:
                bucket.unlink(missing_ok=True)
        if discard:
            self.discard()

    def postings(self) -> BM25Postings:
        """The postings in memory, as the copy a search ranks with (saved beside the spool, loaded back)."""
        self.save(self.folder / "postings", discard=False)
        return BM25Postings.load(self.folder / "postings")

    def discard(self) -> None:
        """Close and remove the spool."""
        import shutil

        if not self._file.closed:
            self._file.close()
        shutil.rmtree(self.folder, ignore_errors=True)


__all__ = ["BM25Fallback", "BM25Postings", "SpooledPostings", "bm25_index", "bm25_query", "K1", "B", "STOPWORDS"]
