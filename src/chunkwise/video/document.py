"""Clips as chunks: a video becomes a :class:`VideoDocument` whose text is its clips' descriptions.

Each clip is one :class:`~chunkwise.document.Chunk` (``strategy="video"``) over an exact span of that text
(``doc.text[c.start:c.end] == c.text`` holds as for every chunk) with ``start_time``/``end_time``,
``start_frame``/``end_frame``, ``track_ids`` and ``classes``. ``chunkwise index`` stores these chunks as
they are instead of running a text strategy over the document.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..document import Chunk, ChunkIds, Cue, Document, stable_hash
from .rule import Clip
from .text import describe

SEPARATOR = "\n\n"
#: part of every video's content key: raised when the tracker or the clip text changes in a way that
#: changes the clips, so an index re-tracks each video once instead of keeping clips made the old way
ANALYSIS_VERSION = "motion-3"


@dataclass
class VideoDocument(Document):
    """A video as text (one paragraph per clip) with its clip chunks ready-made in ``chunks``;
    ``problems`` lists what went wrong while reading it (a truncated file...)."""

    chunks: list[Chunk] = field(default_factory=list, repr=False)
    problems: list[str] = field(default_factory=list)
    #: the content key (:func:`content_key`): the file's bytes, the side files read and the settings
    file_key: str | None = None

    @property
    def content_hash(self) -> str:
        """The content key when the video was read from a file: it is computable from the bytes alone, so
        an index recognises an unchanged video before decoding or tracking it (the text hash otherwise)."""
        return self.file_key or stable_hash(self.text)


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes, streamed (hashing is far cheaper than decoding and tracking)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _digest_or_none(path: str | os.PathLike) -> str | None:
    """A side file that cannot be read is reported by its reader; the key only has to differ."""
    try:
        return file_digest(path)
    except OSError:
        return None


def content_key(
    video: str | os.PathLike,
    tracker: str,
    rule: Mapping[str, Any],
    side_files: Iterable[str | os.PathLike | None] = (),
    tokenizer: Any = "minilm",
) -> str:
    """What a video's clips depend on, as one hash: the video's bytes, every side file that was read
    (tracks, subtitles) by content and name, the tracker and its settings, the clip rule and the
    tokenizer, and :data:`ANALYSIS_VERSION`. Equal keys mean equal clips, so nothing needs re-tracking."""
    sides = [(Path(s).name, _digest_or_none(s)) for s in side_files if s is not None]
    tok = tokenizer if isinstance(tokenizer, str) else type(tokenizer).__name__
    return stable_hash(
        "video",
        ANALYSIS_VERSION,
        file_digest(video),
        tracker,
        json.dumps(dict(rule), sort_keys=True, default=str),
        json.dumps(sides),
        tok,
    )


def unchanged_video(path: str | os.PathLike, markers: Mapping[str, Any]) -> VideoDocument | None:
    """An empty stand-in :class:`VideoDocument` for a video file whose recorded marker (``markers``: doc id
    -> an object with ``content_hash`` and ``complete``) matches its content key under the defaults
    ``chunkwise index`` uses; ``None`` when the video must be read (new, changed, incomplete, not a video,
    unreadable). Only the file is hashed: nothing is decoded or tracked."""
    from .frames import VIDEO_EXTENSIONS

    source = os.fspath(Path(path))
    if os.path.splitext(source)[1].lower() not in VIDEO_EXTENSIONS:
        return None
    stub = VideoDocument(text="", source=source)
    marker = markers.get(stub.id)
    if marker is None or not getattr(marker, "complete", True):
        return None
    try:
        if not stat.S_ISREG(os.stat(source).st_mode):
            return None  # a FIFO would block the hash; the real load refuses it with a message
        stub.file_key = default_key(source)
    except OSError:
        return None  # the real load reports the problem
    return stub if stub.file_key == marker.content_hash else None


def default_key(source: str) -> str:
    """:func:`content_key` of ``load_video(source)`` with every option at its default."""
    from . import RULE_DEFAULTS
    from .text import subtitles_beside
    from .trackers import get_tracker

    tracker = get_tracker("auto", video=source)
    return content_key(source, tracker.fingerprint(), RULE_DEFAULTS, [*tracker.side_files(), subtitles_beside(source)])


def build_document(
    clips: list[Clip],
    source: str,
    subtitles: Document | None = None,
    tokenizer: Any = "minilm",
    metadata: dict[str, Any] | None = None,
) -> VideoDocument:
    """The document and its chunks for ``clips`` of the video ``source``."""
    from ..segmentation.tokenizers import resolve_tokenizer

    meta = metadata or {}
    frame_size = (meta["width"], meta["height"]) if meta.get("width") and meta.get("height") else None
    texts = [describe(c, source, subtitles, frame_size) for c in clips]
    text = SEPARATOR.join(texts)
    name = os.path.basename(source) if source and not source.startswith("<") else None
    doc = VideoDocument(text=text, source=source, metadata=dict(metadata or {}), title=name)
    tok = resolve_tokenizer(tokenizer)
    counts = tok.count_batch(texts) if texts else []
    pos = 0
    cues = []
    ids = ChunkIds(doc.id, "video")
    for i, (clip, t, n) in enumerate(zip(clips, texts, counts)):
        start, end = pos, pos + len(t)
        pos = end + len(SEPARATOR)
        cues.append(Cue(start, end, clip.start_time, clip.end_time))
        doc.chunks.append(
            Chunk(
                text=t,
                start=start,
                end=end,
                index=i,
                id=ids(clip.start_frame, clip.end_frame, i),
                doc_id=doc.id,
                source=source,
                token_count=int(n),
                strategy="video",
                start_time=round(clip.start_time, 6),
                end_time=round(clip.end_time, 6),
                start_frame=clip.start_frame,
                end_frame=clip.end_frame,
                track_ids=clip.track_ids,
                classes=clip.classes,
            )
        )
    doc.cues = cues
    return doc


__all__ = ["VideoDocument", "build_document"]
