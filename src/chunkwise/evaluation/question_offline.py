"""The offline question generators of :mod:`.questions`: ``concepts`` (two key phrases of a passage asked
about in words of the generator's own), ``heldout`` and ``cloze`` (a sentence of a passage as the query),
``heading`` (a Markdown heading for its section) and ``keyphrase`` (a passage's most distinctive words).
Each offers its questions to the shared filter and stops at ``n`` kept."""

from __future__ import annotations

import bisect
import math
import random
import re
from collections import Counter
from collections.abc import Callable

from ..document import Document
from .question_sampling import Passage, Question, QuestionFilter, words

#: sentences that can be a query: this many words at least and at most
MIN_QUERY_WORDS, MAX_QUERY_WORDS = 5, 40
#: keyphrase queries: this many terms
KEYPHRASE_TERMS = 4
#: the heading generator references at most this much of a section's text
HEADING_REFERENCE_CHARS = 2000

_STOP = frozenset(
    "a an the and or but if then of in on at to for from by with without as is are was were be been being it "
    "its this that these those there here which who whom whose what when where why how not no nor do does did "
    "done can could should would may might must will shall have has had having i you he she we they them his "
    "her our their your my me us him than so such also into over under about after before between during "
    "through each other some any all most more many much very only own same just both few while up down out "
    "off again further once because until against above below s t one two new use used using".split()
)


def _query_sentence(text: str, p: Passage, rng: random.Random, inner: bool) -> tuple[int, int] | None:
    """A sentence of ``p`` fit to be a query (``inner``: with a neighbour on both sides)."""
    idx = list(range(1, len(p.sentences) - 1)) if inner else list(range(len(p.sentences)))
    rng.shuffle(idx)
    for i in idx:
        s, e = p.sentences[i]
        if MIN_QUERY_WORDS <= len(words(text[s:e])) <= MAX_QUERY_WORDS:
            return s, e
    return None


def heldout_questions(
    docs: dict[str, Document], order: list[Passage], n: int, flt: QuestionFilter, rng: random.Random, mask: bool
) -> dict[str, str]:
    """``heldout`` (``mask``: the query sentence cut out of the written text) and ``cloze`` (left in, the
    reference its neighbours). Returns the written texts."""
    cut: dict[str, list[tuple[int, int]]] = {}
    pending: list[tuple[Question, Passage, tuple[int, int]]] = []
    for p in order:
        if len(flt.kept) >= n:
            break
        text = docs[p.doc].text
        if len(p.sentences) < 3:
            flt.rejected["passage under 3 sentences"] += 1
            continue
        sent = _query_sentence(text, p, rng, inner=True)
        if sent is None:
            flt.rejected["no sentence of 5-40 words"] += 1
            continue
        query = " ".join(text[sent[0] : sent[1]].split())
        # the reference: the passage without the sentence (its neighbours on both sides)
        rest = text[p.start : sent[0]] + " " + text[sent[1] : p.end]
        # cloze: the sentence and the whitespace around it are left out of the reference's two pieces
        a, b = sent
        while a > p.start and text[a - 1].isspace():
            a -= 1
        while b < p.end and text[b].isspace():
            b += 1
        q = Question(query, p.doc, p.start, p.end, "heldout" if mask else "cloze", exclude=None if mask else (a, b))
        if flt.offer(q, rest):
            pending.append((q, p, sent))
            cut.setdefault(p.doc, []).append(sent)
    texts = {d: doc.text for d, doc in docs.items()}
    if not mask:
        return texts
    for doc_id, spans in cut.items():
        texts[doc_id], shift = _remove(docs[doc_id].text, spans)
        for q, p, _ in pending:
            if q.doc == doc_id:
                q.start, q.end = shift(p.start), shift(p.end)
    return texts


def _remove(text: str, spans: list[tuple[int, int]]) -> tuple[str, Callable[[int], int]]:
    """``text`` without ``spans`` (each with the whitespace after it, so no double spaces are left) and a
    map from old offsets to new ones."""
    spans = sorted(spans)
    pieces, pos, cuts = [], 0, []
    for s, e in spans:
        while e < len(text) and text[e] in " \t":
            e += 1
        pieces.append(text[pos:s])
        cuts.append((s, e))
        pos = e
    pieces.append(text[pos:])
    starts = [s for s, _ in cuts]
    removed = [0]
    for s, e in cuts:
        removed.append(removed[-1] + e - s)

    def shift(i: int) -> int:
        k = bisect.bisect_right(starts, i)
        if k and i < cuts[k - 1][1]:  # inside a removed span: where it was
            return cuts[k - 1][0] - removed[k - 1]
        return i - removed[k]

    return "".join(pieces), shift


def heading_questions(docs: dict[str, Document], n: int, flt: QuestionFilter, rng: random.Random) -> None:
    cands = []
    for doc_id in sorted(docs):
        doc = docs[doc_id]
        for i, s in enumerate(doc.sections):
            if s.heading_end <= s.heading_start or not s.path:
                continue
            body_start = s.heading_end
            text = doc.text
            while body_start < s.end and text[body_start].isspace():
                body_start += 1
            body_end = min(s.end, body_start + HEADING_REFERENCE_CHARS)
            body_end = len(text[:body_end].rstrip())
            if body_end - body_start < 80:
                continue
            title = s.path[-1].strip()
            if len(words(title)) < 2 and len(s.path) > 1:
                title = f"{s.path[-2].strip()}: {title}"
            cands.append((doc_id, i, Question(title, doc_id, body_start, body_end, "heading")))
    by_doc: dict[str, list[Question]] = {}
    for doc_id, _, q in cands:
        by_doc.setdefault(doc_id, []).append(q)
    lanes = [rng.sample(v, len(v)) for _, v in sorted(by_doc.items())]
    rng.shuffle(lanes)
    order = [lane[i] for i in range(max(map(len, lanes), default=0)) for lane in lanes if i < len(lane)]
    if not order:
        flt.rejected["no heading with a section under it"] += 1
    for q in order:
        if len(flt.kept) >= n:
            break
        if len(words(q.query)) < 1:
            flt.rejected["empty heading"] += 1
            continue
        flt.offer(q, "")  # the heading is part of the section: only duplicates are filtered


def keyphrase_questions(docs: dict[str, Document], order: list[Passage], n: int, flt: QuestionFilter) -> None:
    df: Counter = Counter()
    terms_of: dict[int, Counter] = {}
    for i, p in enumerate(order):
        c = Counter(
            w for w in words(docs[p.doc].text[p.start : p.end]) if w not in _STOP and len(w) > 2 and not w.isdigit()
        )
        terms_of[i] = c
        df.update(c.keys())
    total = len(order)
    for i, p in enumerate(order):
        if len(flt.kept) >= n:
            break
        c = terms_of[i]
        scored = sorted(c, key=lambda w: (-c[w] * math.log((1 + total) / (1 + df[w])), w))
        terms = [w for w in scored if df[w] < total][:KEYPHRASE_TERMS]
        if len(terms) < 2:
            flt.rejected["passage with under 2 distinctive words"] += 1
            continue
        flt.offer(Question(" ".join(terms), p.doc, p.start, p.end, "keyphrase"), "")


# -- concepts: questions about a passage's key phrases, in words of their own ----------------------------

#: what is cut out of a sentence before its phrases are read: URLs, {disfluency} tokens, inline code and
#: roles, link targets and tags, Markdown/reStructuredText link syntax
_NOISE = re.compile(
    r"https?://\S+|www\.\S+|\{[^{}\s]*\}|``[^`]*``|`[^`]*`_*|:[\w.-]+:|<[^<>]*>|\[[^\]]*\]\([^)]*\)|\|[^|]*\||\S+@\S+"
)
#: a word of a phrase: letters only (an apostrophe or hyphen inside), so no markup or identifier survives
_LETTERS = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
#: spoken fillers and vague words: never a key phrase
_FILLERS = frozenset(
    "um uh uhm mm hmm mhm yeah yep okay ok oh ah er like gonna wanna right well so just know think really actually "
    "kind sort thing things stuff lot lots going get got go let lets yes maybe probably say said see mean means "
    "want need make made way good great also still even something anything everything nothing someone "
    "anyone everyone bit little quite pretty sure yes no hello hi thanks thank please sorry bye alright "
    "example instance case cases following anyway welcome".split()
)
#: words a phrase may hold, and the phrases a question names
CONCEPT_PHRASE_WORDS, CONCEPT_MIN_WORDS = 3, 6
#: a phrase whose words are all in more than this share of the passages is too common to ask about
CONCEPT_COMMON = 0.25
#: the question forms, rotated by the seed: none repeats the passage's own wording
CONCEPT_TEMPLATES = (
    "What is said about {a} and {b}?",
    "How does {a} relate to {b}?",
    "What is the connection between {a} and {b}?",
    "What role does {a} play with regard to {b}?",
    "Why does {a} matter for {b}?",
    "What do we learn about {b} in connection with {a}?",
)


#: a sentence that reads as code, not prose: its phrases are not concepts
_CODE = re.compile(r"\b(def|import|return|self|lambda|elif|var|const|function)\b|[=;{}]|\w\(|\)\s*:|^\s{4}|>>>|\$ ")


#: a transcript's speaker label ("Project Manager: "), not part of what is said
_SPEAKER = re.compile(r"^\s*[A-Z][\w .'-]{0,30}:\s+")


def _weak(phrase: str) -> bool:
    """A one-word phrase that names no concept: a verb or adverb form, or a short word (not a name)."""
    if " " in phrase or phrase[:1].isupper():
        return False
    return len(phrase) < 5 or phrase.endswith(("ed", "ing", "ly"))


def _phrases(sentence: str) -> list[str]:
    """Runs of up to :data:`CONCEPT_PHRASE_WORDS` content words inside ``sentence`` (split at punctuation,
    stop words and fillers), after the noise (:data:`_NOISE`) is cut out; a capitalised word keeps its
    case (a name) unless it starts the sentence. Code-like sentences and weak one-word phrases give none."""
    if _CODE.search(sentence):
        return []
    clean = _NOISE.sub(" , ", _SPEAKER.sub("", sentence))
    out: list[str] = []
    for seg in re.split(r"[^\w\s'’-]|_|\d", clean):
        run: list[str] = []
        for m in _LETTERS.finditer(seg):
            w = m.group()
            low = w.lower()
            if low in _STOP or low in _FILLERS or len(low) < 3:
                if run:
                    out.append(" ".join(run))
                run = []
                continue
            first = not out and not run and m.start() == len(seg) - len(seg.lstrip())
            run.append(
                w if (w[:1].isupper() and not first and not w.isupper()) or (w.isupper() and len(w) > 1) else low
            )
            if len(run) == CONCEPT_PHRASE_WORDS:
                out.append(" ".join(run))
                run = []
        if run:
            out.append(" ".join(run))
    return [x for x in out if not _weak(x)]


def concept_questions(
    docs: dict[str, Document], order: list[Passage], n: int, flt: QuestionFilter, rng: random.Random
) -> None:
    """``concepts``: two key phrases of a passage, from two of its sentences where it has several, asked
    about in a question form of the generator's own (:data:`CONCEPT_TEMPLATES`); the reference is the
    passage, so the question is answered across its sentences. A phrase is scored by the mean inverse
    passage frequency of its words; a phrase with a word found in one passage only comes last (the
    question should not be one rare word away from its answer). Sentences whose phrases are all
    common (context-free: "So what do we need?") give no question."""
    df: Counter = Counter()
    phrases_of: list[list[list[str]]] = []
    for p in order:
        text = docs[p.doc].text
        per_sentence = [_phrases(text[s:e]) for s, e in p.sentences]
        phrases_of.append(per_sentence)
        df.update({w.lower() for ph in per_sentence for x in ph for w in x.split()})
    total = max(1, len(order))

    def score(phrase: str) -> float:
        ws = [w.lower() for w in phrase.split()]
        idf = [math.log((1 + total) / (1 + df[w])) for w in ws]
        # a word of one passage only makes the question a string match: such phrases come last
        return sum(idf) / len(idf) + 0.25 * (len(ws) - 1) - (10.0 if any(df[w] <= 1 for w in ws) else 0.0)

    def rarest(phrase: str) -> float:
        return max(math.log((1 + total) / (1 + df[w.lower()])) for w in phrase.split())

    # a word in over a quarter of the passages (and at least 3) names no one passage: too common to ask about
    floor = math.log((1 + total) / (1 + max(3.0, CONCEPT_COMMON * total)))
    for i, p in enumerate(order):
        if len(flt.kept) >= n:
            break
        text = docs[p.doc].text
        if len(words(text[p.start : p.end])) < CONCEPT_MIN_WORDS:
            flt.rejected["passage under 6 words"] += 1
            continue
        best = []
        for ph in phrases_of[i]:
            good = sorted((x for x in ph if rarest(x) >= floor), key=lambda x: (-score(x), x))
            best.append(good)
        picks: list[str] = []
        lanes = sorted(range(len(best)), key=lambda j: -score(best[j][0]) if best[j] else 0.0)
        for j in lanes:  # one phrase from each of the two best sentences, then more from the best
            if best[j] and len(picks) < 2:
                picks.append(best[j][0])
        for j in lanes:
            for x in best[j][1:]:
                if len(picks) < 2 and not set(x.lower().split()) & {w.lower() for y in picks for w in y.split()}:
                    picks.append(x)
        if len(picks) < 2 or set(picks[0].lower().split()) & set(picks[1].lower().split()):
            flt.rejected["context-free passage (under 2 distinctive phrases)"] += 1
            continue
        a, b = picks if rng.random() < 0.5 else picks[::-1]
        query = rng.choice(CONCEPT_TEMPLATES).format(a=a, b=b)
        query = query[0].upper() + query[1:]
        flt.offer(Question(query, p.doc, p.start, p.end, "concepts"), text[p.start : p.end])
