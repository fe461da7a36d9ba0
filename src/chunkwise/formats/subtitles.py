"""Subtitles and transcripts: WebVTT, SRT and SubViewer (YouTube's ``.sbv``) as timed text.

The cue parser is chunkwise's own, because the files found in the wild are looser than either library:
webvtt-py refuses cues without text and miscounts yt-dlp/youtube_dl VTT (a timing line right after the
previous cue's text), pysrt (GPL-3.0, so not a dependency) drops whatever it cannot parse without a word.
chunkwise reads every file either library accepts (``benchmarks/bench_real_documents.py`` checks this on
both libraries' test files) and says in a warning which lines it skipped: cues without text, cues with a
broken timestamp or ending before they start, text blocks without a timing line. A file with no readable
cue at all is an error that names the first problems.

A subtitle file has no paragraphs; its natural units are sentences spoken by one person. Cues are cut
wherever the screen was full, often mid-sentence, so consecutive cues of one speaker are first merged until
a sentence ends (or the speaker changes, a pause of more than :data:`MAX_GAP` seconds falls, or the unit
grows past :data:`MAX_UNIT_CHARS`). Each merged unit is one line of the document text, prefixed with
``Speaker:`` when the speaker changes.

- ``doc.cues`` holds every original cue as a span of the text with its times and speaker, so any chunk
  gets ``start_time``/``end_time``/``speakers`` from exactly the cues it overlaps;
- ``doc.metadata["units"]`` holds the ``[start, end]`` spans of the merged units: the semantic strategies
  use them as their sentences, so a meeting is cut into topics between whole utterances.

SubViewer (``.sbv``, what YouTube Studio exports) is the same cue list with a different timing line,
``0:00:01.000,0:00:03.500`` (start and end separated by a comma, no ``-->``, no cue numbers); read as plain
text, those timing lines would be chunked as words and no chunk would have a time.

Speakers come from WebVTT voice tags (``<v Alice>``) or from ``NAME:`` prefixes (also after YouTube's
``>>`` speaker-change mark) (a prefix counts as a
speaker when it is in capitals or occurs at least twice, so "Note: ..." is not taken for a name).

"""

from __future__ import annotations

import html
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

_TS = r"(?:(\d+):)?(\d\d?):([0-5]\d)(?:[.,](\d{1,3}))?"
_TIMING = re.compile(rf"^\s*{_TS}\s*-->\s*{_TS}(?:[ \t].*)?$")
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*$")
_SPEAKER = re.compile(
    r"^(?:(?:[-\u2013]|>>)\s*)?([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}|[A-Z][A-Z0-9 .'-]{1,30})\s*:\s+(\S.*)$"
)
_VOICE = re.compile(r"<v(?:\.[\w.-]+)?\s+([^>]+)>")
_TAGS = re.compile(r"<[^>]*>|\{\\[^}]*\}")
_SBV_TS = r"(?:(\d+):)?(\d\d?):([0-5]\d)(?:\.(\d{1,3}))?"
_SBV_TIMING = re.compile(rf"^\s*{_SBV_TS}\s*,\s*{_SBV_TS}\s*$")
#: a line that starts like an SBV timing line (a broken one is reported, not read as text)
_SBV_HINT = re.compile(r"^\s*\d+:\d\d(?::\d\d)?(?:\.\d*)?\s*,\s*\d")
_VTT_BLOCKS = ("NOTE", "STYLE", "REGION")


@dataclass
class _RawCue:
    start: float
    end: float
    text: str
    speaker: str | None
    line: int = 0


def _seconds(groups: tuple) -> float:
    h, m, s, frac = groups
    return int(h or 0) * 3600 + int(m) * 60 + int(s) + int((frac or "0").ljust(3, "0")) / 1000


def _lines_list(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:5])
    return f"line{'s' if len(numbers) > 1 else ''} {shown}{', ...' if len(numbers) > 5 else ''}"


class _CueParser:
    """Cue blocks from subtitle text, as leniently as webvtt-py and pysrt read them, with a record of what
    was skipped: a timing line always starts a cue (yt-dlp/youtube_dl VTT puts one right after the previous
    cue's text), a number or identifier line before it is not text, cues without text are skipped, and a
    block without a usable timing line is skipped with its line number instead of failing the file."""

    def __init__(self, text: str, kind: str):
        self.lines = text.split("\n")
        self.kind = kind
        self.cues: list[tuple[int, tuple[float, float], list[str]]] = []  # (line, times, text lines)
        self.empty: list[int] = []
        self.broken: list[int] = []
        self.backwards: list[int] = []
        self.orphans: list[int] = []

    def _looks_timing(self, line: str) -> bool:
        return bool(_SBV_HINT.match(line)) if self.kind == "sbv" else "-->" in line

    def _timing(self, k: int):
        if k >= len(self.lines) or not self._looks_timing(self.lines[k]):
            return None
        return (_SBV_TIMING if self.kind == "sbv" else _TIMING).match(self.lines[k])

    def parse(self) -> None:
        lines = self.lines
        k = 0
        if self.kind == "vtt":  # the header block: WEBVTT and metadata lines up to the first blank line
            while k < len(lines) and lines[k].strip():
                k += 1
        current: list[str] | None = None
        skipping = False
        while k < len(lines):
            line = lines[k].strip()
            if not line:
                current, skipping = None, False
                k += 1
                continue
            block_start = current is None and not skipping
            m = self._timing(k)
            if m is None and self._looks_timing(line):
                self.broken.append(k + 1)
                current, skipping = None, True
            elif m is not None:
                start, end = _seconds(m.groups()[:4]), _seconds(m.groups()[4:])
                if end < start:
                    self.backwards.append(k + 1)
                    current, skipping = None, True
                else:
                    current, skipping = [], False
                    self.cues.append((k + 1, (start, end), current))
            elif skipping:
                pass
            elif (block_start or line.isdigit()) and self._timing(k + 1) is not None:
                pass  # a cue number (SRT) or identifier (WebVTT)
            elif block_start and self.kind == "vtt" and line.split(" ", 1)[0].split("\t", 1)[0] in _VTT_BLOCKS:
                skipping = True
            elif current is None:
                self.orphans.append(k + 1)
                skipping = True
            else:
                current.append(lines[k])
            k += 1

    def warnings(self) -> list[str]:
        """One line per kind of thing skipped, naming the lines."""
        out = []
        if self.empty:
            out.append(f"skipped {len(self.empty)} cue(s) without text ({_lines_list(self.empty)})")
        if self.broken:
            out.append(f"skipped {len(self.broken)} cue(s) with a broken timestamp ({_lines_list(self.broken)})")
        if self.backwards:
            out.append(
                f"skipped {len(self.backwards)} cue(s) that end before they start ({_lines_list(self.backwards)})"
            )
        if self.orphans:
            out.append(f"skipped {len(self.orphans)} text block(s) without a timing line ({_lines_list(self.orphans)})")
        return out


def _cues(text: str, source: str, kind: str) -> tuple[list[_RawCue], list[str]]:
    """The cues of a WebVTT or SRT text, and warnings for what was skipped; an error when none is left."""
    parser = _CueParser(text, kind)
    parser.parse()
    cues = []
    for line, (start, end), body_lines in parser.cues:
        body = "\n".join(body_lines)
        voice = _VOICE.search(body)
        clean = _TAGS.sub("", body)
        clean = " ".join((html.unescape(clean) if kind == "vtt" else clean).split())
        if not clean.strip():
            parser.empty.append(line)
            continue
        cues.append(_RawCue(start, end, clean, voice.group(1).strip() if voice else None, line))
    warns = parser.warnings()
    if not cues:
        problem = "; ".join(warns) if warns else "no cues"
        raise InputError(f"no readable subtitle cues ({problem})", source=source)
    return cues, warns


def _format_cues(text: str, source: str, fmt: str) -> tuple[list[_RawCue], list[str]]:
    """The cues of a subtitle text in format ``fmt``; WebVTT must start with its ``WEBVTT`` header."""
    text = text.lstrip("\ufeff")
    if fmt == "vtt" and not text.startswith("WEBVTT"):
        raise InputError("not a WebVTT file: it must start with 'WEBVTT'", source=source)
    return _cues(text, source, fmt)


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
            if (
                punctuated
                and not _SENTENCE_END.search(last.text)
                and cue.speaker == last.speaker
                and cue.start - last.end <= MAX_GAP
                and size + len(cue.text) <= MAX_UNIT_CHARS
            ):
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
    return Document(
        text,
        source=source,
        cues=doc_cues,
        metadata={
            "format": fmt,
            "units": spans,
            "warnings": warns,
            "speakers": speakers,
            "duration": max(c.end_time for c in doc_cues),
            "cue_count": len(cues),
        },
    )


def _load(data: bytes, source: str, fmt: str, options: dict) -> Document:
    """What every subtitle format shares: decode, parse the cues, take speaker prefixes, build, align."""
    text, warns = decode(data, source, options.get("encoding"))
    check_text(text, source)
    cues, skipped = _format_cues(text, source, fmt)
    warns = warns + skipped
    _assign_prefix_speakers(cues)
    emit_warnings(source, warns)
    doc = _build(cues, source, fmt, warns)
    doc.source_map = SourceMap.align(doc.text, decode_source(data, source, options.get("encoding"))[0])
    if fmt == "vtt":  # the text after WEBVTT on the header line is the title
        doc.title = text.lstrip("\ufeff").split("\n", 1)[0][6:].strip(" \t-") or None
    return doc


def load_vtt(data: bytes, source: str, **options) -> Document:
    return _load(data, source, "vtt", options)


def load_srt(data: bytes, source: str, **options) -> Document:
    return _load(data, source, "srt", options)


def load_sbv(data: bytes, source: str, **options) -> Document:
    """A SubViewer file (YouTube's ``.sbv``): cues with ``H:MM:SS.mmm,H:MM:SS.mmm`` timing lines."""
    return _load(data, source, "sbv", options)
