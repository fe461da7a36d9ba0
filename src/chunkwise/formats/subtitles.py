"""Subtitles and transcripts: WebVTT and SRT as timed text (both read with webvtt-py, MIT-licensed; pysrt
would be GPL-3.0 in the default install).

A subtitle file has no paragraphs; its natural units are sentences spoken by one person. Cues are cut
wherever the screen was full, often mid-sentence, so consecutive cues of one speaker are first merged until
a sentence ends (or the speaker changes, a pause of more than :data:`MAX_GAP` seconds falls, or the unit
grows past :data:`MAX_UNIT_CHARS`). Each merged unit is one line of the document text, prefixed with
``Speaker:`` when the speaker changes.

- ``doc.cues`` holds every original cue as a span of the text with its times and speaker, so any chunk
  gets ``start_time``/``end_time``/``speakers`` from exactly the cues it overlaps;
- ``doc.metadata["units"]`` holds the ``[start, end]`` spans of the merged units: the semantic strategies
  use them as their sentences, so a meeting is cut into topics between whole utterances.

Speakers come from WebVTT voice tags (``<v Alice>``) or from ``NAME:`` prefixes (a prefix counts as a
speaker when it is in capitals or occurs at least twice, so "Note: ..." is not taken for a name).

The libraries skip cues they cannot parse; chunkwise checks every timing line itself first, so a broken
timestamp is an :class:`~chunkwise.errors.InputError` naming the line, never silently lost text.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..document import Cue, Document
from ..errors import InputError
from .sourcemap import SourceMap
from .text import check_text, decode, decode_source, emit_warnings

#: longest pause (seconds) inside one merged unit
MAX_GAP = 2.0
#: merged units are not grown past this many characters
MAX_UNIT_CHARS = 400

_TS = r"(?:(\d+):)?([0-5]\d):([0-5]\d)[.,](\d{1,3})"
_VTT_TIMING = re.compile(rf"^\s*{_TS}\s+-->\s+{_TS}(?:\s+.*)?$")
_SRT_TIMING = re.compile(rf"^\s*{_TS}\s*-->\s*{_TS}(?:\s+.*)?$")
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*$")
_SPEAKER = re.compile(r"^(?:[-\u2013]\s*)?([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}|[A-Z][A-Z0-9 .'-]{1,30})\s*:\s+(\S.*)$")
_TAGS = re.compile(r"<[^>]*>|\{\\[^}]*\}")


@dataclass
class _RawCue:
    start: float
    end: float
    text: str
    speaker: str | None


def _seconds(groups: tuple) -> float:
    h, m, s, frac = groups
    return int(h or 0) * 3600 + int(m) * 60 + int(s) + int(frac.ljust(3, "0")) / 1000


def _blocks(text: str) -> list[tuple[int, list[str]]]:
    """Blocks of non-blank lines with the 1-based line number of their first line."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    first = 0
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            if not current:
                first = number
            current.append(line)
        elif current:
            blocks.append((first, current))
            current = []
    if current:
        blocks.append((first, current))
    return blocks


def _check_timings(text: str, source: str, kind: str) -> list[tuple[float, float]]:
    """Validate the timing line of every cue block; returns (start, end) of each cue in file order."""
    pattern = _VTT_TIMING if kind == "vtt" else _SRT_TIMING
    timings = []
    blocks = _blocks(text)
    if kind == "vtt":
        blocks = [b for b in blocks[1:] if not b[1][0].lstrip().startswith(("NOTE", "STYLE", "REGION"))]
    for first, lines in blocks:
        k = 0 if "-->" in lines[0] or len(lines) == 1 else 1
        line = lines[k]
        number = first + k
        if "-->" not in line:
            raise InputError(f"cue on line {first} has no timing line ('start --> end')", source=source)
        m = pattern.match(line)
        if not m:
            raise InputError(f"broken timestamp on line {number}: {line.strip()[:80]!r}", source=source)
        start, end = _seconds(m.groups()[:4]), _seconds(m.groups()[4:])
        if end < start:
            raise InputError(f"cue on line {number} ends before it starts: {line.strip()[:80]!r}", source=source)
        timings.append((start, end))
    if not timings:
        raise InputError("no subtitle cues found", source=source)
    return timings


def _vtt_cues(text: str, source: str) -> list[_RawCue]:
    import webvtt

    if not text.lstrip("\ufeff").startswith("WEBVTT"):
        raise InputError("not a WebVTT file: it must start with 'WEBVTT'", source=source)
    timings = _check_timings(text, source, "vtt")
    try:
        captions = list(webvtt.from_string(text))
    except Exception as exc:
        raise InputError(f"invalid WebVTT ({exc})", source=source) from None
    if len(captions) != len(timings):
        raise InputError(f"invalid WebVTT: {len(timings)} timing lines but {len(captions)} readable cues",
                         source=source)
    cues = []
    for (start, end), cap in zip(timings, captions):
        body = " ".join(_TAGS.sub("", cap.text or "").split())
        cues.append(_RawCue(start, end, body, (cap.voice or "").strip() or None))
    return cues


def _srt_cues(text: str, source: str) -> list[_RawCue]:
    import io

    import webvtt

    timings = _check_timings(text, source, "srt")
    # cue numbers are optional in the wild but required by the parser: number the blocks that lack one
    blocks = [lines if "-->" not in lines[0] else [str(k), *lines] for k, (_, lines) in enumerate(_blocks(text), 1)]
    normalized = "\n\n".join("\n".join(lines) for lines in blocks) + "\n"
    try:
        captions = list(webvtt.from_buffer(io.StringIO(normalized), format="srt"))
    except Exception as exc:
        raise InputError(f"invalid SRT ({exc})", source=source) from None
    if len(captions) != len(timings):
        raise InputError(f"invalid SRT: {len(timings)} timing lines but {len(captions)} readable cues",
                         source=source)
    return [_RawCue(start, end, " ".join(_TAGS.sub("", cap.text or "").split()), None)
            for (start, end), cap in zip(timings, captions)]


def _assign_prefix_speakers(cues: list[_RawCue]) -> None:
    """Take ``NAME: text`` prefixes as speakers; a cue without one keeps the previous speaker."""
    found = [(_SPEAKER.match(c.text) if not c.speaker else None) for c in cues]
    counts = Counter(m.group(1) for m in found if m)
    current = None
    labelled = any(c.speaker for c in cues)
    for cue, m in zip(cues, found):
        if m and (counts[m.group(1)] >= 2 or m.group(1).isupper()):
            cue.speaker, cue.text = m.group(1).strip(), m.group(2).strip()
            labelled = True
        if cue.speaker:
            current = cue.speaker
        elif labelled and current:
            cue.speaker = current


def _merge(cues: list[_RawCue]) -> list[list[_RawCue]]:
    """Group cues into sentence units (see the module docstring)."""
    with_text = [c for c in cues if c.text]
    punctuated = sum(1 for c in with_text if _SENTENCE_END.search(c.text)) >= 0.2 * max(1, len(with_text))
    units: list[list[_RawCue]] = []
    for cue in with_text:
        if units:
            last = units[-1][-1]
            size = sum(len(c.text) + 1 for c in units[-1])
            if (punctuated and not _SENTENCE_END.search(last.text) and cue.speaker == last.speaker
                    and cue.start - last.end <= MAX_GAP and size + len(cue.text) <= MAX_UNIT_CHARS):
                units[-1].append(cue)
                continue
        units.append([cue])
    return units


def _build(cues: list[_RawCue], source: str, fmt: str, warns: list[str]) -> Document:
    units = _merge(cues)
    if not units:
        raise InputError("no text in any subtitle cue", source=source)
    parts: list[str] = []
    doc_cues: list[Cue] = []
    spans: list[list[int]] = []
    pos = 0
    previous_speaker = None
    for k, unit in enumerate(units):
        if k:
            parts.append("\n")
            pos += 1
        line_start = pos
        speaker = unit[0].speaker
        if speaker and speaker != previous_speaker:
            prefix = f"{speaker}: "
            parts.append(prefix)
            pos += len(prefix)
        previous_speaker = speaker
        for i, cue in enumerate(unit):
            if i:
                parts.append(" ")
                pos += 1
            cue_start = line_start if i == 0 else pos
            parts.append(cue.text)
            pos += len(cue.text)
            doc_cues.append(Cue(cue_start, pos, cue.start, cue.end, cue.speaker))
        spans.append([line_start, pos])
    text = "".join(parts) + "\n"
    check_text(text, source)
    speakers = list(dict.fromkeys(c.speaker for c in doc_cues if c.speaker))
    return Document(text, source=source, cues=doc_cues, metadata={
        "format": fmt, "units": spans, "warnings": warns, "speakers": speakers,
        "duration": max(c.end_time for c in doc_cues), "cue_count": len(cues),
    })


def load_vtt(data: bytes, source: str, **options) -> Document:
    text, warns = decode(data, source, options.get("encoding"))
    check_text(text, source)
    cues = _vtt_cues(text, source)
    _assign_prefix_speakers(cues)
    emit_warnings(source, warns)
    doc = _build(cues, source, "vtt", warns)
    doc.source_map = SourceMap.align(doc.text, decode_source(data, source, options.get("encoding"))[0])
    header = text.lstrip("\ufeff").split("\n", 1)[0][6:].strip(" \t-")
    doc.title = header or None
    return doc


def load_srt(data: bytes, source: str, **options) -> Document:
    text, warns = decode(data, source, options.get("encoding"))
    check_text(text, source)
    cues = _srt_cues(text, source)
    _assign_prefix_speakers(cues)
    emit_warnings(source, warns)
    doc = _build(cues, source, "srt", warns)
    doc.source_map = SourceMap.align(doc.text, decode_source(data, source, options.get("encoding"))[0])
    return doc
