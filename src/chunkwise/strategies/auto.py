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
plain text without layout   ``semantic`` (embedding breakpoints; :func:`without_layout`)
anything else (plain text)  ``recursive``
=========================== ===================================================================

Plain text *without layout* (:func:`without_layout`) is a document of format ``text`` (or none, and not
sniffed as Markdown, rst or code) with no sections, pages, cues or loader units, whose text has no blank
line between its first and last character and more than one sentence or line: one paragraph, or lines with
no paragraph break (a pasted note, a transcript written one utterance a line, text whose paragraphs were
lost). ``recursive`` has nothing but
sentence ends to cut such text at, so it packs unrelated sentences into one chunk (the pump and cafeteria
notices of five sentences were one chunk); ``semantic`` cuts where the meaning of neighbouring sentences
changes. Why ``semantic`` and not ``cohesion`` or ``maxmin``: it retrieved as well as ``recursive`` on QMSum
transcripts and Chroma's corpora, where ``cohesion`` lost on transcripts (docs/semantic.md); measured for
this rule in benchmarks/results/auto-prose.md. Text with paragraph breaks keeps ``recursive`` (its
paragraphs are the author's own topic boundaries, found without a model) and its chunk ids.

A document without a format (a string given to ``chunk_text``, the LangChain and LlamaIndex adapters, the
web app) is Markdown when its source name ends in ``.md`` or its text reads as Markdown
(:func:`chunkwise.formats.sniff.looks_like_markdown`, the rule the file loader uses for extension-less
files), so the same Markdown gets the same chunks however it comes in.

Why topic cuts for transcripts: a meeting or a podcast has no headings, and whole sentences packed to
``max_tokens`` put the end of one agenda item and the start of the next in one chunk (the three topics of
``examples/team-meeting.vtt`` were one 237-token chunk). The cut points come from the words alone
(lexical cohesion, as TextTiling): no model, a few milliseconds for an hour of speech.

Only that branch embeds, so the embedder is made there, at its first use: ``auto`` takes the run's
``embedder`` (a name, an embedder, or ``None`` for the default) but is not one of the strategies that embed
while chunking (:func:`chunkwise.strategies.semantic_strategies`), so ``chunkwise chunk notes.md`` loads no
model. Its ``min_tokens`` of 0 (the default: the layout strategies merge nothing) leaves ``semantic`` its own
default there.

Every chunk records what was used as ``strategy="auto:<name>"`` (``auto:markdown``, ``auto:recursive``,
``auto:sentence``, ``auto:semantic``). Chunk ids hash the ``auto`` configuration (its own parameters, the
embedder left out), the document and the span (and for ``auto:semantic`` the ``semantic`` configuration
with its embedder, since the embedder decides those cuts), so they are deterministic and differ from the ids
an explicit ``--strategy markdown`` gives; index and eval record ``auto`` and its parameters as the
configuration, and the per-document choice follows from the document, so re-indexing the same files gives
the same chunks.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..document import Chunk, ChunkIds, Document, stable_hash
from ..registry import lazy_regex
from ..segmentation.tokenizers import Tokenizer
from .base import Span, Strategy
from .params import EmbedderSpec
from .sentence import SentenceChunker

if TYPE_CHECKING:
    from ..embeddings.base import Embedder

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

_WORD = lazy_regex(r"[^\W\d_]{4,}")
#: frequent words of four letters or more that carry no topic (English, German); shorter ones never count
_STOP = frozenset(
    """that this with have will then they there what when were from your about would could should
which their them these those been being into also just only some than very more most such like here over
well even back much many must does done make made want wants going know think yeah okay right really thing
things every everyone good morning agreed thanks thank sure maybe because where while after before other
dass eine einer eines einem einen nicht sich auch oder aber wenn dann noch schon sind wird werden haben kann
""".split()
)
_SPEAKER = lazy_regex(r"([^:\n]{1,40}):\s")
#: a paragraph break: a line that is empty or whitespace only
_BLANK_LINE = lazy_regex(r"\n[^\S\n]*\n")
#: where one sentence or line ends and another starts: text without one has nothing for a model to decide
_SECOND_UNIT = lazy_regex(r"[.!?\u2026\u3002\uff01\uff1f][\"'\u2019\u201d)\]]*\s+\S|\n\s*\S")
#: formats that are plain text (``""``: no loader read it and it reads as none other)
PLAIN_FORMATS = ("", "text", "txt", "plain")


def without_layout(doc: Document, fmt: str) -> bool:
    """Whether ``doc`` (of format ``fmt``) is plain text without layout: a plain format, no sections, pages,
    cues or loader units, no blank line inside its text (leading and trailing whitespace aside), and more
    than one sentence or line (one sentence has no topic change to find, and needs no model)."""
    if fmt not in PLAIN_FORMATS or doc.sections or doc.pages or doc.cues or doc.metadata.get("units"):
        return False
    text = doc.text.strip()
    return _BLANK_LINE.search(text) is None and _SECOND_UNIT.search(text) is not None


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
    import statistics  # here: plain text never reaches it, and its import costs more than the rest

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


def _code_or_recursive(doc: Document, params: dict[str, Any]) -> Strategy:
    """``code`` when the document's language can be parsed, else ``recursive`` with the code separators
    (what ``code`` itself falls back to, said once per language), so the chunks are labelled by what cut
    them (``auto:recursive``, not ``auto:code``)."""
    from ..formats.code import parse_code, warn_no_grammar
    from . import get_strategy
    from .code import CodeChunker

    code = CodeChunker(**params)
    language = code.language_of(doc)
    if parse_code(doc.text, language) is not None:  # cached: the code strategy's own parse reuses it
        return code
    warn_no_grammar(language)
    return get_strategy("recursive", **params, separators="code")


class AutoChunker(Strategy):
    """Pick ``markdown``, heading-aware ``recursive``, cue-aware ``sentence``, ``semantic`` for plain text
    without layout, or ``recursive`` by format.

    Takes the shared parameters (``max_tokens``, ``min_tokens``, ``overlap``, ``tokenizer``,
    ``respect_sections``) and passes them on to the strategy it resolves to; ``embedder`` (a name, an
    :class:`~chunkwise.embeddings.base.Embedder`, ``None`` for the default) is used, and made, only when a
    document resolves to ``semantic``.
    """

    name = "auto"
    #: embeds only documents without layout, making its embedder there: not a semantic strategy for the
    #: front ends, which therefore load no model for it (:func:`~chunkwise.strategies.semantic_strategies`)
    embeds_on_demand = True
    _parameter_constraints = {**Strategy._parameter_constraints, "embedder": [EmbedderSpec(), None]}

    def __init__(self, *, embedder: str | Embedder | None = None, **shared: Any):
        super().__init__(**shared)
        self.embedder = embedder

    def config_params(self) -> dict[str, Any]:
        """The parameters every resolved strategy takes (all but ``embedder``): what the chunk ids of
        ``auto`` fingerprint, so text with layout keeps the ids it had before ``auto`` took an embedder (the
        ``semantic`` branch adds its own configuration, see :meth:`chunk`)."""
        return {k: v for k, v in self.get_params().items() if k != "embedder"}

    def resolve(self, doc: Document) -> Strategy:
        """The strategy for ``doc`` (a new object; ``self`` is never changed)."""
        from . import get_strategy

        fmt = str(doc.metadata.get("format") or "").lower() or _format_of_text(doc)
        params = self.config_params()
        if without_layout(doc, fmt):
            return get_strategy(
                "semantic", **{**params, "min_tokens": params["min_tokens"] or None}, embedder=self.embedder
            )
        if fmt in ("markdown", "notebook", "docx", "pptx"):
            return get_strategy("markdown", **params)
        if fmt == "code":
            return _code_or_recursive(doc, params)
        if fmt == "rst":
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
        if inner.name == "semantic":  # cut by the embedder: its configuration (and model) is in the id
            config = stable_hash(config, inner.config_id())
        ids = ChunkIds(doc.id, config)
        for c in chunks:
            c.strategy = label
            c.id = ids.span(c.start, c.end)
        return chunks

    def split(self, doc: Document, start: int, end: int, tokenizer: Tokenizer) -> list[Span]:
        return self.resolve(doc).split(doc, start, end, tokenizer)


__all__ = ["AutoChunker", "PLAIN_FORMATS", "SECTION_LEVEL", "TranscriptChunker", "topic_cuts", "without_layout"]
