"""Clips as chunks: a video becomes a :class:`VideoDocument` whose text is its clips' descriptions.

Each clip is one :class:`~chunkwise.document.Chunk` (``strategy="video"``) over an exact span of that text
(``doc.text[c.start:c.end] == c.text`` holds as for every chunk) with ``start_time``/``end_time``,
``start_frame``/``end_frame``, ``track_ids`` and ``classes``. ``chunkwise index`` stores these chunks as
they are instead of running a text strategy over the document.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..document import Chunk, Cue, Document, stable_hash
from .rule import Clip
from .text import describe

SEPARATOR = "\n\n"


@dataclass
class VideoDocument(Document):
    """A video as text (one paragraph per clip) with its clip chunks ready-made in ``chunks``;
    ``problems`` lists what went wrong while reading it (a truncated file...)."""

    chunks: list[Chunk] = field(default_factory=list, repr=False)
    problems: list[str] = field(default_factory=list)


def build_document(clips: list[Clip], source: str, subtitles: Document | None = None, tokenizer: Any = "minilm",
                   metadata: dict[str, Any] | None = None) -> VideoDocument:
    """The document and its chunks for ``clips`` of the video ``source``."""
    from ..segmentation.tokenizers import resolve_tokenizer

    texts = [describe(c, source, subtitles) for c in clips]
    text = SEPARATOR.join(texts)
    name = os.path.basename(source) if source and not source.startswith("<") else None
    doc = VideoDocument(text=text, source=source, metadata=dict(metadata or {}), title=name)
    tok = resolve_tokenizer(tokenizer)
    counts = tok.count_batch(texts) if texts else []
    pos = 0
    cues = []
    for i, (clip, t, n) in enumerate(zip(clips, texts, counts)):
        start, end = pos, pos + len(t)
        pos = end + len(SEPARATOR)
        cues.append(Cue(start, end, clip.start_time, clip.end_time))
        doc.chunks.append(Chunk(
            text=t, start=start, end=end, index=i,
            id=stable_hash("chunk", doc.id, "video", clip.start_frame, clip.end_frame, i),
            doc_id=doc.id, source=source, token_count=int(n), strategy="video",
            start_time=round(clip.start_time, 6), end_time=round(clip.end_time, 6),
            start_frame=clip.start_frame, end_frame=clip.end_frame, track_ids=clip.track_ids,
            classes=clip.classes))
    doc.cues = cues
    return doc


__all__ = ["VideoDocument", "build_document"]
