"""``auto``: the strategy that suits the document's format, chosen per document (the default).

One rule per format, from what the loader found (``Document.metadata["format"]`` and ``sections``):

=========================== ===================================================================
document                    resolved strategy
=========================== ===================================================================
Markdown, Jupyter notebook, ``markdown`` (split at headings, fences and tables whole)
Word, PowerPoint
table (CSV, TSV)            ``sentence`` packing the loader's rows (whole rows; the header row is
                            each later chunk's ``context``)
HTML or PDF with headings   ``recursive`` with ``respect_sections`` = :data:`SECTION_LEVEL` (a
                            chunk never crosses a heading of level 1-2; an explicit
                            ``respect_sections`` wins)
subtitles (SRT, VTT)        ``sentence`` packing the loader's cue-merged sentences (a chunk never
                            ends mid-cue), cut first where the topic shifts (:func:`topic_cuts`)
anything else (plain text)  ``recursive``
=========================== ===================================================================

A document without a format (a string given to ``chunk_text``, the LangChain and LlamaIndex adapters, the
web app) is Markdown when its source name ends in ``.md`` or its text reads as Markdown
(:func:`chunkwise.formats.sniff.looks_like_markdown`, the rule the file loader uses for extension-less
files), so the same Markdown gets the same chunks however it comes in.

Why topic cuts for transcripts: a meeting or a podcast has no headings, and whole sentences packed to
``max_tokens`` put the end of one agenda item and the start of the next in one chunk (the three topics of
``examples/team-meeting.vtt`` were one 237-token chunk). The cut points come from the words alone
(lexical cohesion, as TextTiling): no model, a few milliseconds for an hour of speech.

Every chunk records what was used as ``strategy="auto:<name>"`` (``auto:markdown``, ``auto:recursive``,
``auto:sentence``). Chunk ids hash the ``auto`` configuration (its own parameters), the document and the
span, so they are deterministic and differ from the ids an explicit ``--strategy markdown`` gives; index and
eval record ``auto`` and its parameters as the configuration, and the per-document choice follows from the
document, so re-indexing the same files gives the same chunks.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Sequence

from ..document import Chunk, Document, stable_hash
from ..segmentation.tokenizers import Tokenizer
from .base import Span, Strategy
from .sentence import SentenceChunker

#: heading level that HTML and PDF chunks never cross under ``auto`` (1 = ``<h1>``/top outline entries)
SECTION_LEVEL = 2
SUBTITLE_FORMATS = ("srt", "vtt", "subtitles", "webvtt")

#: topic words on each side of a gap that are compared (TextTiling's block; a short transcript uses a sixth
#: of its words, at least :data:`TOPIC_WINDOW_MIN`): tuned on QMSum's validation meetings
TOPIC_WINDOW = 200
TOPIC_WINDOW_MIN = 12
#: a gap is a topic shift when its depth (how far the word overlap across it drops below the peaks on
#: either side; 0 to 2) is at least this, and at least one standard deviation over the mean depth
TOPIC_DEPTH = 0.2
#: fewest utterances a transcript needs before it is cut at all
TOPIC_MIN_UNITS = 2

_WORD = re.compile(r"[^\W\d_]{4,}")
#: frequent words of four letters or more that carry no topic (English, German); shorter ones never count
_STOP = frozenset(
    """that this with have will then they there what when were from your about would could should
which their them these those been being into also just only some than very more most such like here over
well even back much many must does done make made want wants going know think yeah okay right really thing
things every everyone good morning agreed thanks thank sure maybe because where while after before other
dass eine einer eines einem einen nicht sich auch oder aber wenn dann noch schon sind wird werden haben kann
""".split()
)
_SPEAKER = re.compile(r"([^:\n]{1,40}):\s")


def _bag(text: str, speakers: set[str]) -> Counter[str]:
    """The topic words of one utterance: words of four letters or more but stop words, cut to their first
    five letters (a crude stem: "crashes" and "crash" agree), without the ``Name:`` prefix."""
    m = _SPEAKER.match(text)
    if m and m.group(1) in speakers:
        text = text[m.end() :]
    return Counter(w[:5] for w in _WORD.findall(text.lower()) if w not in _STOP)


def _remove(total: Counter[str], bag: Counter[str]) -> None:
    """Take ``bag``'s counts out of ``total``, dropping words that reach 0."""
    for k, n in bag.items():
        left = total[k] - n
        if left > 0:
            total[k] = left
        else:
            del total[k]


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    num = sum(n * b[k] for k, n in a.items() if k in b)
    den = math.sqrt(sum(n * n for n in a.values()) * sum(n * n for n in b.values()))
    return num / den if den else 0.0


def topic_cuts(texts: Sequence[str], speakers: Sequence[str] = ()) -> list[int]:
    """Indices ``i`` of the utterances ``texts`` that start a new topic (never 0), by lexical cohesion.

    TextTiling (Hearst 1997) on utterances: the topic words of a window before each gap (whole utterances
    back to :data:`TOPIC_WINDOW` words, a sixth of the transcript's words when that is less) are compared
    with those of a window after it (cosine of word counts); a gap is a shift where that similarity falls
    into a valley at least :data:`TOPIC_DEPTH` deep and one standard deviation deeper than the mean
    valley. Deepest first, each cut at least one window's words away from the others and from either end.
    """
    m = len(texts)
    if m < 2 * TOPIC_MIN_UNITS:
        return []
    names = set(speakers)
    bags = [_bag(t, names) for t in texts]
    sizes = [sum(b.values()) for b in bags]
    cum = [0]
    for n in sizes:
        cum.append(cum[-1] + n)
    w = min(TOPIC_WINDOW, max(TOPIC_WINDOW_MIN, cum[-1] // 6))
    # sliding windows: left holds utterances [lo, g) (back while fewer than w words were taken), right
    # holds [g, hi) (on while fewer than w words were taken)
    sim = []
    left: Counter[str] = Counter()
    right: Counter[str] = Counter()
    lo, hi = 0, 0
    for g in range(1, m):
        left.update(bags[g - 1])
        while cum[g] - cum[lo + 1] >= w:
            _remove(left, bags[lo])
            lo += 1
        if g == 1:
            hi = 1
        else:  # utterance g - 1 crosses over to the left
            _remove(right, bags[g - 1])
        while hi < m and cum[hi] - cum[g] < w:
            right.update(bags[hi])
            hi += 1
        sim.append(_cosine(left, right))
    # the peak reached climbing from each gap to the left and to the right (linear: a climb from i that
    # takes its first step continues as the climb from its neighbour)
    n = len(sim)
    lpeak, rpeak = list(sim), list(sim)
    for i in range(1, n):
        if sim[i - 1] >= sim[i]:
            lpeak[i] = lpeak[i - 1]
    for i in range(n - 2, -1, -1):
        if sim[i + 1] >= sim[i]:
            rpeak[i] = rpeak[i + 1]
    depth = [lpeak[i] + rpeak[i] - 2 * sim[i] for i in range(n)]
    floor = max(TOPIC_DEPTH, statistics.fmean(depth) + statistics.pstdev(depth))
    cuts: list[int] = []
    for i in sorted(range(len(depth)), key=lambda k: (-depth[k], k)):
        if depth[i] < floor:
            break
        g = i + 1  # the gap before utterance g
        if cum[g] < w or cum[m] - cum[g] < w or g < TOPIC_MIN_UNITS or m - g < TOPIC_MIN_UNITS:
            continue
        if all(abs(cum[g] - cum[c]) >= w for c in cuts):
            cuts.append(g)
    return sorted(cuts)


class TranscriptChunker(SentenceChunker):
    """``sentence`` packing of a transcript's utterances, cut first at topic shifts (:func:`topic_cuts`).

    Each topic is packed on its own, so a chunk never holds the end of one topic and the start of the next;
    a topic longer than ``max_tokens`` is packed into several chunks as before. Overlap stays inside a topic.
    """

    name = "sentence"

    def split_with_counts(self, doc: Document, start: int, end: int, tokenizer: Tokenizer):
        from .units import sentence_spans

        given = doc.metadata.get("units")
        units = sentence_spans(doc.text, start, end, given) if given else []
        speakers = [str(s) for s in doc.metadata.get("speakers") or []]
        cuts = [units[i][0] for i in topic_cuts([doc.text[a:b] for a, b in units], speakers)]
        spans: list[Span] = []
        counts: list[int] = []
        for a, b in zip([start, *cuts], [*cuts, end]):
            part, part_counts = super().split_with_counts(doc, a, b, tokenizer)
            spans += part
            counts += part_counts
        return spans, counts


def _format_of_text(doc: Document) -> str:
    """The format of a text no loader read (``chunk_text``, the adapters, the web app): ``markdown`` when
    its name or text says Markdown, ``rst`` when its titles say so, ``code`` when patterns of one language
    agree (:func:`_text_format`), else ``""``."""
    if doc.cues or doc.pages:
        return ""
    from ..formats.sniff import looks_like_markdown

    return "markdown" if looks_like_markdown(doc.text, doc.source) else _text_format(doc.text)


def _text_format(text: str) -> str:
    """``rst`` when a text's titles say so, ``code`` when two or more patterns of one language agree (three
    before rst's titles), else nothing."""
    from ..formats.code import GRAMMARS, guess_language
    from ..formats.rst import MARKDOWN_FENCE, looks_like_rst

    if guess_language(text, min_votes=3) in GRAMMARS:  # source whose docstrings are rst is still source
        return "code"
    if MARKDOWN_FENCE.search(text, 0, 20000):  # Markdown with a code fence is not code
        return ""
    if looks_like_rst(text):
        return "rst"
    return "code" if guess_language(text, min_votes=2) in GRAMMARS else ""


class AutoChunker(Strategy):
    """Pick ``markdown``, heading-aware ``recursive``, cue-aware ``sentence`` or ``recursive`` by format.

    Takes the shared parameters only (``max_tokens``, ``min_tokens``, ``overlap``, ``tokenizer``,
    ``respect_sections``) and passes them on to the strategy it resolves to.
    """

    name = "auto"

    def resolve(self, doc: Document) -> Strategy:
        """The strategy for ``doc`` (a new object; ``self`` is never changed)."""
        from . import get_strategy

        fmt = str(doc.metadata.get("format") or "").lower() or _format_of_text(doc)
        params = self.get_params()
        if fmt in ("markdown", "notebook", "docx", "pptx"):
            return get_strategy("markdown", **params)
        if fmt in ("rst", "code"):
            return get_strategy(fmt, **params)
        if fmt == "table" and doc.metadata.get("units"):
            return get_strategy("sentence", **params)
        if fmt in SUBTITLE_FORMATS or doc.cues:
            return TranscriptChunker(**params)
        if fmt in ("html", "pdf") and doc.sections and params.get("respect_sections") is None:
            params["respect_sections"] = SECTION_LEVEL
        return get_strategy("recursive", **params)

    def chunk(self, doc: Document | str) -> list[Chunk]:
        """Chunks of ``doc`` by the resolved strategy, labelled ``auto:<name>`` with ``auto``'s ids."""
        if isinstance(doc, str):
            doc = Document(doc)
        self.validate()
        inner = self.resolve(doc)
        chunks = inner.chunk(doc)
        label, config = f"{self.name}:{inner.name}", self.config_id()
        for c in chunks:
            c.strategy = label
            c.id = stable_hash("chunk", c.doc_id, config, f"{c.start}:{c.end}")
        return chunks

    def split(self, doc: Document, start: int, end: int, tokenizer: Tokenizer) -> list[Span]:
        return self.resolve(doc).split(doc, start, end, tokenizer)


__all__ = ["AutoChunker", "SECTION_LEVEL", "TranscriptChunker", "topic_cuts"]
