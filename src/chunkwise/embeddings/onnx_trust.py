"""Trusting a rewritten graph read back from the cache: its record (SHA-256, size, canary) and the canary.

See :mod:`.onnx_graph` for why nothing read back is trusted. A graph is used when its bytes match its
record (:func:`damage`; a full hash is skipped while the file provably has not changed since one, see
:func:`_unchanged`) and, once per session, when its vector of :data:`CANARY_TEXT` equals the shipped
graph's recorded one (:func:`canary_problem`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

#: the text whose vector checks a rewritten graph (any fixed text works; this one has common and rare words)
CANARY_TEXT = "The lighthouse keeper trims the wick and polishes the XR-12 lens before every winter storm."
#: largest difference allowed between the canary vector of the rewritten graph and the shipped one's (unit
#: vectors; the rewrite is within 2e-7 on real text, a damaged graph is off by ~0.1 in some component)
CANARY_TOLERANCE = 1e-4
NO_RECORD = "has no checksum record"
#: a graph unchanged since its last full hash is hashed again after this many seconds anyway
CHECK_EVERY_S = 24 * 3600
#: graphs whose bytes were checked against their record in this process: path -> signature
_verified: dict[str, list[int]] = {}


def record_path(graph: Path) -> Path:
    """The record beside a rewritten graph: its SHA-256, size and canary vector."""
    return graph.with_suffix(".json")


def weights_path(graph: Path) -> Path:
    """The file beside a rewritten graph that holds its weights (onnxruntime's external initializers): a
    session maps it instead of parsing 90 MB of weights out of the graph's protobuf (0.21 -> 0.08 CPU-s per
    load, the same vectors)."""
    return graph.with_suffix(".weights")


def graph_parts(graph: Path) -> list[Path]:
    """The files whose bytes make ``graph``: the graph, and its weights file where it has one. Its record's
    SHA-256 and size are those of their bytes in this order (:func:`file_sha256`)."""
    weights = weights_path(graph)
    return [graph, weights] if weights.exists() else [graph]


def read_record(graph: str | Path) -> dict[str, Any] | None:
    """The record of ``graph``, or ``None`` when it is missing or not a record."""
    try:
        record = json.loads(record_path(Path(graph)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(record, dict) and isinstance(record.get("sha256"), str) and isinstance(record.get("size"), int)
    return record if ok else None


def damage(graph: Path) -> str | None:
    """Why the bytes of ``graph`` cannot be trusted (no record, another size or SHA-256), or ``None``.

    Hashing ~90 MB costs 0.26-0.5 s of CPU, more than anything else a short run does before loading the
    session; it is done when the file's identity changed since its last full check (see :func:`_unchanged`),
    else at most once a day, and once per process and file."""
    try:
        infos = [part.stat() for part in graph_parts(graph)]
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    signature = [n for info in infos for n in _signature(info)]
    size = sum(info.st_size for info in infos)
    if _verified.get(str(graph)) == signature:
        return None
    if not record_path(graph).exists():
        return NO_RECORD
    record = read_record(graph)
    if record is None:
        return "has an unreadable checksum record"
    if record["size"] != size:
        return f"is {size} bytes, its record says {record['size']}"
    if not _unchanged(graph, signature, record["sha256"]):
        try:
            sha256, _ = file_sha256(*graph_parts(graph))
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        if sha256 != record["sha256"]:
            return "does not match its recorded SHA-256"
        _write_check(graph, signature, record["sha256"])
    _verified[str(graph)] = signature
    return None


def file_sha256(*paths: str | Path) -> tuple[str, int]:
    """The SHA-256 (hex) and size of the bytes of the files at ``paths``, one after the other, read in
    blocks."""
    digest, size = hashlib.sha256(), 0
    for path in paths:
        with open(path, "rb") as f:
            while block := f.read(1 << 22):
                digest.update(block)
                size += len(block)
    return digest.hexdigest(), size


def check_path(graph: Path) -> Path:
    """The note of the last full hash of ``graph``: the file's identity then and the hash it matched."""
    return graph.with_suffix(".checked")


def _signature(info: os.stat_result) -> list[int]:
    """What changes whenever the file's bytes are changed through the file system: size, modification and
    change times (nanoseconds), inode and device (a graph with a weights file: both files', one after the
    other)."""
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]


def parts_signature(graph: Path) -> list[int]:
    """:func:`_signature` of every file of ``graph`` (:func:`graph_parts`), one after the other."""
    return [n for part in graph_parts(graph) for n in _signature(part.stat())]


def _unchanged(graph: Path, signature: list[int], sha256: str) -> bool:
    """``graph`` is the very file that matched ``sha256`` in a full hash less than a day ago.

    The trust argument: every write to a file (in place, same size included), truncation or replacement
    through the file system changes its change time (``st_ctime``, which no user call can set back: ``touch``
    and ``os.utime`` set the modification time and so change ``st_ctime`` to now) or its inode, so a file
    whose signature equals the noted one holds the bytes that were hashed, unless it was damaged beneath the
    file system (a bad sector, a disk written to directly) or by someone who can set the clock back. The
    daily full hash bounds how long such damage goes unseen by the checksum; the canary (one forward pass,
    once per session, :func:`canary_problem`) is checked anyway. The note lives in the same private folder
    as the graph: whoever can forge it can replace the graph and its record too."""
    try:
        note = json.loads(check_path(graph).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(note, dict):
        return False
    fresh = isinstance(note.get("at"), (int, float)) and 0 <= time.time() - note["at"] < CHECK_EVERY_S
    return fresh and note.get("signature") == signature and note.get("sha256") == sha256


def note_checked(graph: Path, sha256: str) -> None:
    """Note that ``graph`` as it is now has the SHA-256 ``sha256`` (its maker just hashed the bytes it wrote)."""
    try:
        _write_check(graph, parts_signature(graph), sha256)
    except OSError:
        pass


def _write_check(graph: Path, signature: list[int], sha256: str) -> None:
    """Note a full hash of ``graph`` that matched (best effort: without the note the next process hashes)."""
    note = json.dumps({"signature": signature, "sha256": sha256, "at": time.time()}).encode()
    fd, tmp = -1, ""
    try:
        fd, tmp = tempfile.mkstemp(dir=graph.parent, prefix=".minilm-graph-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(note)
        os.replace(tmp, check_path(graph))
    except OSError:
        pass
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


def discard(graph: str | Path) -> None:
    """Remove a rewritten graph, its weights file and its record (all are made again when needed)."""
    graph = Path(graph)
    _verified.pop(str(graph), None)
    for path in (check_path(graph), record_path(graph), graph, weights_path(graph)):
        with contextlib.suppress(OSError):
            path.unlink()


def canary_ids() -> list[int]:
    """Token ids of :data:`CANARY_TEXT` with ``[CLS]``/``[SEP]``, as MiniLMEmbedder feeds them."""
    from ..segmentation.tokenizers import HFTokenizer, get_tokenizer

    tokenizer = get_tokenizer("minilm")
    assert isinstance(tokenizer, HFTokenizer)
    return list(tokenizer.hf.encode(CANARY_TEXT, add_special_tokens=True).ids)


def canary_vector(session, ids: list[int]) -> np.ndarray:
    """The mean-pooled, L2-normalised vector of one unpadded text, as MiniLMEmbedder computes it."""
    input_ids = np.asarray([ids], dtype=np.int64)
    feeds = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids)}
    if "token_type_ids" in {i.name for i in session.get_inputs()}:
        feeds["token_type_ids"] = np.zeros_like(input_ids)
    pooled = np.asarray(session.run(None, feeds)[0], dtype=np.float32)[0].mean(axis=0)
    return pooled / max(float(np.linalg.norm(pooled)), 1e-12)


def canary_problem(session, graph: str | Path) -> str | None:
    """Why ``session`` (on the rewritten ``graph``) cannot be trusted: its canary vector differs from the
    shipped graph's in the record by more than :data:`CANARY_TOLERANCE`; ``None`` when it agrees."""
    record = read_record(graph)
    canary = (record or {}).get("canary")
    if not isinstance(canary, dict) or not canary.get("ids") or not canary.get("vector"):
        return "has no recorded canary vector"
    try:
        got = canary_vector(session, [int(i) for i in canary["ids"]])
        diff = float(np.abs(got - np.asarray(canary["vector"], dtype=np.float32)).max())
    except Exception as exc:  # noqa: BLE001 - a graph that cannot run the canary cannot run texts either
        return f"cannot embed the canary text ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    if not diff <= CANARY_TOLERANCE:  # NaN included
        return f"gives a wrong canary vector (max difference {diff:.3g} to the shipped graph's)"
    return None
