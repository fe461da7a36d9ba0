"""Sentence segmentation with exact character offsets: English, German, Spanish, French, Italian, Dutch,
Portuguese, Chinese and Japanese text (tested on our gold set and on pySBD's public "Golden Rules").

Why a splitter of our own: the common ones either return *strings* (so offsets have to be guessed back, and
they change whitespace), break on "Dr.", "e.g.", "z. B." or "3.5", or never split Chinese and Japanese, whose
sentences end in 。！？ with no space after them. Strategies need spans, so this module returns spans.

The ``chunkwise`` back-end is one linear scan:

1. **Line breaks** (:func:`_line_cuts`). A blank line always ends a sentence. A single line break ends one
   only when the next line starts a block of its own (list item, heading, table row, quote, code fence,
   rule) or the line itself is a heading, table row, fence or rule, or a short title line that opens a
   paragraph. Otherwise a line break is a wrapped line and the sentence goes on; a line that ends with a
   terminator ends the sentence by the terminator rules below, exactly as if the break were a space.
2. **Terminators** (:func:`_terminator_cuts`). Every run of ``. ! ? …`` (Latin) or ``。！？｡．`` (CJK), with
   the closing quotes and brackets right after it, is a candidate. A CJK terminator ends the sentence at
   once (closing 」』）” stay with it). A Latin one needs whitespace after it (so ``3.5``, ``v2.4.13``, URLs,
   e-mails and ``z.B.`` never split) and a next word that may start a sentence; a single period also needs
   the word before it not to be an abbreviation, an initial, a list number or a German ordinal.
3. The text is cut at those positions and every piece is trimmed of whitespace (:func:`_spans_from_cuts`),
   so spans are exact, ordered, non-overlapping, never empty, and cover every non-whitespace character.
4. A piece without a letter or digit (a lone ``.``, ``. . .``, ``”``) is attached to its neighbour
   (:func:`_attach_bare_punctuation`), for every back-end.

``pysbd`` and ``blingfire`` can be chosen instead; their sentences are aligned back onto the text.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Callable, Iterable

from ..errors import ConfigError, MissingDependencyError

Span = tuple[int, int]

SENTENCE_BACKENDS = ("chunkwise", "pysbd", "blingfire")

# --------------------------------------------------------------------------------------------------------
# Word lists. Lower-case; compared to the lower-cased word before the period.
# --------------------------------------------------------------------------------------------------------

#: Abbreviations that (almost) never end a sentence: titles before names, "e.g.", "z. B.", "bzw."...
NEVER_FINAL = frozenset(
    """
    dr mr mrs ms mx prof st gen gov sen rep capt col lt sgt cpt cmdr adm maj rev hon pres supt insp
    hr hrn fr frl dipl ing med phil rer nat jur habil mag
    e.g eg i.e ie cf vs viz approx ca resp incl excl esp ibid op
    z.b z.t d.h u.a o.ä s.o s.u v.a i.d.r u.u z.zt i.a bzw vgl ggf evtl inkl zzgl sog bspw usf allg
    nr abb bd kap abs tab anm hrsg str insbes fig figs vol vols eq eqs ref refs sect ch chap pp kath
    mt ft messrs mme mlle univ dept tsd bzgl ggü geb gest verh a.k.a
    """.split()
)
#: Abbreviations that normally take a number ("No. 5", "p. 12", "Art. 3"): no split when a digit follows.
NUMBER_TAKING = frozenset(
    """no nos art sec p s n tel ex ext par para chap mo di mi do sa so mon tue tues wed thu thur thurs fri sat sun
    n° nº núm num pág págs párr párrf cra cl nr no°""".split()
)
#: Abbreviations that may end a sentence; split only when the next word is a usual sentence opener.
MAY_BE_FINAL = frozenset(
    """
    u.s u.k u.n e.u u.s.a d.c a.m p.m b.c a.d ph.d jr sr inc ltd co corp bros plc gmbh al jh mio mrd
    ave blvd rd hbf
    jan feb febr mar apr jun jul aug sep sept oct okt nov dec dez
    ene abr dic giu lug ott janv févr avr juil déc lun mié jue vie sáb
    """.split()
)
#: Abbreviations of Spanish, French, Italian, Dutch and Portuguese that never end a sentence. Used for every
#: ``language`` (and ``None``), since none of them is a common word that ends a sentence in another
#: language; :data:`LANGUAGE_NEVER_FINAL` holds the ones that are (Spanish "es" is "is").
ROMANCE_DUTCH_NEVER_FINAL = frozenset(
    """
    sra srta sres sras lic lda ldo dra arq abg admón adm avda dña ud uds vd vds ej p.ej excmo excma ilmo
    ilma mons ee uu aa cía mme mlle pr env av hab éd
    sig sig.ra sig.na sigg avv dott dott.ssa dr.ssa geom egr ill.mo spett pag psicol idraul meteor econ
    dhr mevr mw mej bijv d.w.z m.a.w o.a drs blz evt vnw aanw bv i.p.v t.a.v m.b.t
    exmo exma ilmos profa profª sr.ª sra.ª v.ex p.ex
    """.split()
)
#: Abbreviations that never end a sentence only in the given language (elsewhere they are words that do:
#: Spanish "es", English "me", "arch", Spanish "ir").
LANGUAGE_NEVER_FINAL = {
    "es": frozenset("sr núm pág págs párr párrf cap vol tel".split()),
    "it": frozenset("es sr sra dir amm arch rag".split()),
    "pt": frozenset("sr pág págs cap".split()),
    "fr": frozenset("me mm".split()),
    "nl": frozenset("mr ir".split()),
}
#: Months and weekdays that are words elsewhere ("two years ago. John"): may end a sentence only in the
#: given language, as :data:`MAY_BE_FINAL`.
LANGUAGE_MAY_BE_FINAL = {
    "es": frozenset("ago set dom".split()),
    "it": frozenset("ago set dom".split()),
    "pt": frozenset("ago set dom".split()),
}
#: Abbreviations that end a list: ``etc.`` before a capitalised word ends the sentence (our decision).
LIST_FINAL = frozenset("etc usw u.s.w. u.s.w usf ecc enz".split())

#: Words that usually open an English or German sentence (used after MAY_BE_FINAL abbreviations).
SENTENCE_OPENERS = frozenset(
    """
    the a an this that these those it its he she they we i you his her their our my your there here
    but and or so yet however then now in on at after before when while if as although though because
    since for to many most some all no yes what why how who where which also still thus today finally
    meanwhile next later instead such both each every one two three first second last once only even
    der die das den dem des ein eine einen einem einer er sie es wir ich ihr man dies diese dieser dieses
    aber und oder doch dann danach im am auf mit nach vor bei wenn als da deshalb außerdem auch zum zur
    heute später damit daher trotzdem jedoch seit bis um was wie wer wo warum nun hier dort viele alle
    beide jetzt zudem ebenso erst zuerst schließlich dabei dazu darauf dafür sein seine ihre unser unsere
    mein meine kein keine nicht nur noch immer oft vielleicht sogar leider
    """.split()
)
#: Months: "am 3. Oktober", "3. Oct." -- a number before a month is a day, not the end of a sentence.
MONTHS = frozenset(
    """
    januar jänner februar märz april mai juni juli august september oktober november dezember
    january february march may june july october december jan feb mar apr jun jul aug sep sept oct okt
    nov dec dez
    """.split()
)
#: Words before "3." that make it a German ordinal ("am 3.", "der 2.", "im 19.", "zum 5.").
ORDINAL_CUES = frozenset(
    """
    am im um vom zum zur beim bis ab seit der die das den dem des ein eine einem einer eines jeden jede
    jeder jedem ihr ihre ihrem ihren sein seine seinem seinen unser unsere am vom dieser diesem dieses
    zu für nach vor ihres seines bzw und oder
    """.split()
)

# --------------------------------------------------------------------------------------------------------
# Patterns. Every pattern is a plain character-class run or anchored at a fixed character, so the scan
# stays linear even on megabytes without spaces or punctuation (no nested quantifiers, no backtracking).
# --------------------------------------------------------------------------------------------------------

_CLOSERS = "\"'”’“‘»›)]}」』）】〕〉》〗〙〛］｝"
_OPENERS = "\"'“‘«‹„‚([{「『（【〔〈《〖〘〚［｛¿¡*_"
_CJK_TERMS = "。！？｡"
# Latin-style terminators (need a space after them), with Arabic ؟, Urdu ۔, Devanagari । ॥, Ethiopic ። ፧
_LATIN_TERMS = ".!?…‼⁇⁈⁉؟۔।॥።፧"
_CJK_CLASS = (  # radicals, kana, bopomofo, ideographs, hangul, compatibility ideographs, half-width kana
    r"[\u2e80-\u2fff\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    r"\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]"
)
_CJK_CHAR_RE = re.compile(_CJK_CLASS)
_CLOSE = rf"[{re.escape(_CLOSERS)}]*+"
_ESCAPED_BREAK = r"\\[nrt]"  # a literal "\n" as in JSON or Python reprs of chat logs: a line break in text
_LOWER_NEXT = rf"(?:\s|{_ESCAPED_BREAK})++[{re.escape(_OPENERS)}]*+[a-zß-öø-ÿ]"
_ALL_TERMS = f"{_LATIN_TERMS}{_CJK_TERMS}．"
_SPACED = rf"(?=\s|\Z|{_ESCAPED_BREAK}|{_CJK_CLASS})"
_LATIN_START = rf"[{_LATIN_TERMS}](?<![{_ALL_TERMS}][{_LATIN_TERMS}])"  # first of its run: no quadratic retries
#: Candidates, found in C (each pattern starts with a plain character class, so the engine skips ahead fast):
#: a run holding a CJK terminator (any follower); a Latin run followed by whitespace, the end or CJK text
#: (else it is inside a number, URL or "z.B.") and not by a lower-case word (which in cased text never
#: opens a sentence -- most periods in prose, filtered without a Python call).
_CJK_RUN_RE = re.compile(rf"[{_CJK_TERMS}．][{_ALL_TERMS}]*+{_CLOSE}")
_LATIN_RUN_RE = re.compile(rf"{_LATIN_START}[{_LATIN_TERMS}]*+{_CLOSE}{_SPACED}(?!{_LOWER_NEXT})")
#: The same without the lower-case filter, for lower-cased stretches of text.
_LATIN_RUN_ANY_RE = re.compile(rf"{_LATIN_START}[{_LATIN_TERMS}]*+{_CLOSE}{_SPACED}")
_EXCLAMATIONS = frozenset("!?‼⁇⁈⁉؟۔।॥።፧")  # terminators with no abbreviations to rule out
#: Stretches of 600+ characters without a capital letter: lower-cased text, judged without the filter.
_UPPER = "A-ZÀ-ÖØ-ÞА-ЯΑ-Ω"
_CASELESS_RE = re.compile(rf"[{_UPPER}]([^{_UPPER}]{{600,}}+)")  # after a capital (in C: linear)
_UPPER_RE = re.compile(rf"[{_UPPER}]")
_CASELESS_START_RE = re.compile(rf"[^{_UPPER}]{{600,}}+")  # at the very start of the text
_NEXT_WORD_RE = re.compile(rf"(?:[\s{re.escape(_OPENERS)}]|{_ESCAPED_BREAK}){{0,64}}+([^\W_][\w'’\-]{{0,64}}|\S)")
_NUMBER_RE = re.compile(r"\d[\d.,]*")
_DOTTED_ABBR_RE = re.compile(r"(?:[^\W\d_]{1,3}\.)+[^\W\d_]{1,3}")
_LOWER_WORD_RE = re.compile(r"[a-zß-öø-ÿа-яα-ω]{2,}")
_LIST_ITEM_RE = re.compile(r"(?:[-*+•·▪◦‣–—]\s|\d{1,3}[.)]\s|[a-zA-Z][)]\s|\(\d{1,3}\)\s|#{1,6}\s|>|\||```|~~~)")
_RULE_LINE_RE = re.compile(r"[-=*_~#+.]{3,}")
_URLISH_RE = re.compile(r"(?:://|www\.|@)")
#: A spaced ellipsis ". . ." (three or more periods, one space apart) with the closers after it.
_SPACED_ELLIPSIS_RE = re.compile(rf"\.(?:[ \u00a0]\.){{2,}}+{_CLOSE}")
_BULLETS = "•⁃▪◦‣·*-"
#: A list item at the start of a line: "1. ", "1) ", "1.) ", "a. ", "• 9. ", "⁃9. ".
_LIST_MARKER = rf"[ \t]*+(?:[{re.escape(_BULLETS)}][ \t]?)?(\d{{1,2}}|[a-z])(\.\)|[.)])[ \t]"
_LIST_START_RE = re.compile(_LIST_MARKER)  # matched at the start of the text
_LIST_LINE_RE = re.compile("\n" + _LIST_MARKER)  # starts with a literal: the engine skips ahead fast
#: Any letter or digit, of any script: a sentence must hold one (see :func:`_attach_bare_punctuation`).
_ALNUM_RE = re.compile(r"[^\W_]")

_LOOKBACK = 64  # characters inspected before a period: enough for any abbreviation, bounded on hostile text


# --------------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------------


def split_sentences(text: str, backend: str = "chunkwise", language: str | None = None) -> list[Span]:
    """Spans ``(start, end)`` of the sentences of ``text``: in order, non-overlapping, trimmed, never empty.

    Every non-whitespace character of ``text`` lies in exactly one span, and every span holds a letter or
    digit unless the text has none (then it is one span). ``language`` (``"en"``, ``"de"``, ``"es"``,
    ``"fr"``, ``"it"``, ``"nl"``, ``"pt"``, ``"zh"``, ``"ja"``...) is a hint: ``None`` handles mixed text;
    a language adds its abbreviations that are words elsewhere (Italian "ad es."); ``"en"`` turns off
    German ordinals; pysbd uses it to pick its rules.
    """
    return SentenceSplitter(backend, language).split(text)


class SentenceSplitter:
    """A configured sentence splitter; ``split(text)`` returns spans like :func:`split_sentences`.

    The back-end is checked when the splitter is built, so a typo or a missing extra fails before any work.
    """

    def __init__(self, backend: str = "chunkwise", language: str | None = None):
        self.backend = backend
        self.language = language
        self._split_block = _backend_function(backend, language)

    def split(self, text: str) -> list[Span]:
        """Sentence spans of ``text``."""
        if not isinstance(text, str):
            raise ConfigError(f"split_sentences needs a str, not {type(text).__name__}")
        if not text or text.isspace():
            return []
        if self.backend == "chunkwise":
            spans = _spans_from_cuts(text, _chunkwise_cuts(text, self.language))
        else:
            assert self._split_block is not None  # set for every backend but "chunkwise"
            spans = _spans_from_cuts(text, _external_cuts(text, self._split_block))
        return _attach_bare_punctuation(text, spans)

    def __repr__(self) -> str:
        return f"SentenceSplitter(backend={self.backend!r}, language={self.language!r})"


# --------------------------------------------------------------------------------------------------------
# Spans from cut positions
# --------------------------------------------------------------------------------------------------------


def _spans_from_cuts(text: str, cuts: Iterable[int]) -> list[Span]:
    """Cut ``text`` at ``cuts`` and trim each piece; whitespace-only pieces vanish.

    Doing every back-end's output through this one function is what makes the span invariants hold by
    construction, whatever the rules decided.
    """
    spans: list[Span] = []
    prev = 0
    n = len(text)
    for cut in sorted({c for c in cuts if 0 < c < n}) + [n]:
        piece = text[prev:cut]
        stripped = piece.lstrip()
        if stripped:
            start = prev + len(piece) - len(stripped)
            end = cut - (len(stripped) - len(stripped.rstrip()))
            spans.append((start, end))
        prev = cut
    return spans


def _attach_bare_punctuation(text: str, spans: list[Span]) -> list[Span]:
    """Merge every span without a letter or digit into its neighbour: the one before it, else the next.

    A lone ``.``, ``. . .`` or ``”`` is not a sentence (a semantic strategy would embed it, sentence packing
    could open a chunk with it). The rule, for every back-end: each span holds at least one character for
    which ``str.isalnum()`` is true (a letter or digit of any script); when the whole text holds none, the
    result is a single span from its first to its last non-whitespace character.
    """
    out: list[Span] = []
    pending = -1  # start of bare spans seen before the first span with a letter or digit
    for start, end in spans:
        if text[start].isalnum() or _ALNUM_RE.search(text, start, end):
            out.append((pending if pending >= 0 else start, end))
            pending = -1
        elif out:
            out[-1] = (out[-1][0], end)
        elif pending < 0:
            pending = start
    if pending >= 0:  # no letter or digit anywhere
        out = [(pending, spans[-1][1])]
    return out


# --------------------------------------------------------------------------------------------------------
# The chunkwise back-end
# --------------------------------------------------------------------------------------------------------


def _chunkwise_cuts(text: str, language: str | None) -> list[int]:
    """All cut positions: line-structure cuts and terminator cuts."""
    return _line_cuts(text) + _terminator_cuts(text, language)


def _line_cuts(text: str) -> list[int]:
    """Cuts at line breaks that end a sentence whatever the punctuation (see the module docstring)."""
    lines = text.splitlines(keepends=True)
    if len(lines) < 2:
        return []
    cuts = []
    offset = 0
    prev_blank = True
    body = lines[0].strip()
    for i in range(len(lines) - 1):
        offset += len(lines[i])
        nxt = lines[i + 1].strip()
        if not body:
            cuts.append(offset)
            prev_blank = True
        else:
            if (
                not nxt
                or _starts_block(nxt)
                or _is_block_line(body)
                or (prev_blank and _is_title(body, nxt))
                or _ends_list_item(body, lines[i + 1])
            ):
                cuts.append(offset)
            prev_blank = False
        body = nxt
    return cuts


_BLOCK_START = frozenset("-*+•·▪◦‣–—#>|`~(=_.")


def _starts_block(line: str) -> bool:
    """A stripped line that opens a block of its own: list item, heading, quote, table row, fence, rule."""
    first = line[0]
    if first not in _BLOCK_START and not first.isdigit() and line[1:2] != ")":
        return False  # the common case, decided without a regex
    return bool(_LIST_ITEM_RE.match(line)) or bool(_RULE_LINE_RE.fullmatch(line))


def _is_block_line(line: str) -> bool:
    """A stripped line that is complete in itself, so the break after it ends the sentence."""
    first = line[0]
    if first not in _BLOCK_START:
        return False
    return first in "#|" or line.startswith(("```", "~~~")) or bool(_RULE_LINE_RE.fullmatch(line))


def _ends_list_item(line: str, next_line: str) -> bool:
    """A list item followed by an unindented line that is not a continuation (not lower-case)."""
    return not next_line[:1].isspace() and not next_line[:1].islower() and _starts_block(line)


def _is_title(line: str, nxt: str) -> bool:
    """A short unpunctuated line that opens a paragraph and is followed by a longer line: a plain heading."""
    return (
        len(line) <= (20 if _CJK_CHAR_RE.search(line) else 60)
        and len(nxt) > len(line)
        and line[-1] not in ",;:-–(/&、，：；…" + ".!?" + _CJK_TERMS
        and not line[0].islower()
        and not nxt[0].islower()
    )


def _terminator_cuts(text: str, language: str | None) -> list[int]:
    """Cut positions after every terminator run that ends a sentence.

    Lower-cased text (some corpora are; the finance one is) has no capitals to go by, so inside stretches
    without any capital a lower-case word may open a sentence.
    """
    cuts: list[int | None] = (
        [
            end if text[end - 1] in _CJK_TERMS else _judge_terminator(text, start, end, language, False, True)
            for start, end in (m.span() for m in _CJK_RUN_RE.finditer(text))
        ]
        if _has_cjk_terminator(text)
        else []
    )  # a bare 。！？ ends the sentence at once; closers and "．" are judged
    if "《" in text:  # 《摔跤吧！爸爸》: a terminator inside a title does not end the sentence
        cuts = [c for c in cuts if c is None or not _inside_title(text, c)]
    covered: bytes | bytearray = b""  # a mask, 1 where a spaced ellipsis lies: those periods are judged on their own
    if ". . ." in text:
        ellipsis_cuts, covered = _spaced_ellipsis_cuts(text, language)
        cuts += ellipsis_cuts
    cuts += [
        _judge_terminator(text, m.start(), m.end(), language, False, False)
        for m in _LATIN_RUN_RE.finditer(text)
        if not covered or not covered[m.start()]
    ]
    for start, end in _caseless_stretches(text):
        cuts += [
            _judge_terminator(text, m.start(), m.end(), language, True, False)
            for m in _LATIN_RUN_ANY_RE.finditer(text, start, end)
            if not covered or not covered[m.start()]
        ]
    found = [c for c in cuts if c is not None]
    if _LIST_START_RE.match(text) or _LIST_LINE_RE.search(text):
        item_cuts, marker_ends = _list_item_cuts(text)
        found = [c for c in found if c not in marker_ends] + item_cuts
    return found


def _has_cjk_terminator(text: str) -> bool:
    """Any of 。！？｡． in ``text`` (plain substring tests: instant on ASCII text, which cannot hold them)."""
    return not text.isascii() and any(t in text for t in _CJK_TERMS + "．")


def _inside_title(text: str, pos: int) -> bool:
    """Whether ``pos`` lies inside a 《...》 title (looking back a bounded distance)."""
    begin = max(0, pos - _LOOKBACK)
    return text.rfind("《", begin, pos) > text.rfind("》", begin, pos)


def _spaced_ellipsis_cuts(text: str, language: str | None) -> tuple[list[int], bytearray]:
    """Cuts at spaced ellipses (". . ."), and a mask of the positions they cover (one byte per character;
    no other rule judges those periods).

    As in the style guides the Golden Rules follow: three spaced periods after a space mark an omission
    inside the sentence (``the thing is . . . I didn't``); four (`` . . . .``) are an ellipsis and a full
    stop, which end the sentence before a capital; ``word. . . .`` is a full stop followed by an ellipsis
    that opens the next sentence (``compounds. . . . The practice``), and ``word. . .`` an ellipsis.
    """
    cuts, covered = [], bytearray(len(text))
    for m in _SPACED_ELLIPSIS_RE.finditer(text):
        start, end = m.span()
        covered[start:end] = b"\x01" * (end - start)
        dots = text.count(".", start, end)
        nxt = _next_word(text, end)
        if not nxt or _starts_lower(nxt) or not _ALNUM_RE.match(nxt):
            continue
        attached = start > 0 and not text[start - 1].isspace()
        if attached and dots >= 4:
            if _period_ends_sentence(text, start, nxt, language):
                cuts.append(start + 1)
        elif (attached or dots >= 4) and not nxt[0].isdigit():
            cuts.append(end)
    return cuts, covered


def _list_item_cuts(text: str) -> tuple[list[int], set[int]]:
    """Cuts before the items of lists that start a line and run on in it, and the ends of all markers.

    ``1) The first item 2) The second item``, ``a. The first b. The second``, ``• 9. ... • 10. ...``: a
    marker at the start of a line opens a list; the next label (2 after 1, b after a) with the same
    punctuation, before a letter, on the same line, opens the next item. A marker's own period or
    bracket never ends a sentence.
    """
    cuts, ends = [], set()
    first = _LIST_START_RE.match(text)
    for m in ([first] if first else []) + list(_LIST_LINE_RE.finditer(text)):
        label, punct = m.group(1), m.group(2)
        if m.end(2) in ends:
            continue  # already an item of a list found before: its chain was followed then
        ends.add(m.end(2))
        if label.isalpha() and label != "a":
            continue  # a lettered list starts at "a"; a lone "c." is an initial
        pos = m.end()
        while True:
            label = str(int(label) + 1) if label.isdigit() else chr(ord(label) + 1)
            if label == "{":
                break
            limit = text.find("\n", pos, pos + 2000)  # items on later lines are line starts themselves
            found = _list_item_re(label, punct).search(text, pos, limit if limit >= 0 else pos + 2000)
            if not found:
                break
            cuts.append(found.start())
            ends.add(found.end())
            pos = found.end()
    return cuts, ends


@functools.lru_cache(maxsize=256)
def _list_item_re(label: str, punct: str) -> re.Pattern:
    """The marker of the list item labelled ``label`` ("2", "b") after a space, before a letter."""
    return re.compile(
        rf"(?<!\S)(?:[{re.escape(_BULLETS)}][ \t]?)?{re.escape(label)}{re.escape(punct)}(?=[ \t]++[^\W\d_])"
    )


def _caseless_stretches(text: str) -> list[Span]:
    """Stretches of 600+ characters with no capital letter but with words: lower-cased text."""
    if not _may_be_caseless(text):
        return []
    first = _CASELESS_START_RE.match(text)
    found = [first] if first else []
    found += (m for m in _CASELESS_RE.finditer(text) if not first or m.start() >= first.end())
    spans = [m.span(1) if m.re is _CASELESS_RE else m.span() for m in found]
    return [(a, b) for a, b in spans if _has_words(text[a : min(b, a + 2000)], 8)]


def _may_be_caseless(text: str) -> bool:
    """Whether some aligned window of 300 characters has no capital: necessary for a caseless stretch.

    A stretch of 600+ characters contains a whole window ``[k, k + 300)`` with ``k`` a multiple of 300, so
    text where every such window has a capital has no stretch. In prose a capital comes within a few
    dozen characters, so each window costs one short C-level search -- much cheaper than the full scan.
    """
    search = _UPPER_RE.search
    return any(search(text, k, k + 300) is None for k in range(0, len(text) - 299, 300))


def _judge_terminator(
    text: str, start: int, end: int, language: str | None, caseless_region: bool, has_cjk: bool
) -> int | None:
    """The cut position for the terminator run ``text[start:end]``, or None when it ends no sentence."""
    run = text[start:end].rstrip(_CLOSERS)
    closers = end - start - len(run)
    if has_cjk and (any(c in _CJK_TERMS for c in run) or not _between_digits(text, start, end)):
        end = start + len(run) + _cjk_closers(text[start + len(run) : end])
        return None if _japanese_quotative(text, end, end - start - len(run)) else end
    if end >= len(text):
        return None
    if not text[end].isspace() and not text.startswith(("\\n", "\\r", "\\t"), end):
        return end if _cjk_around(text, start, end) and run.strip(".…") else None
    nxt = _next_word(text, end)
    if not nxt:
        return None
    lower = _starts_lower(nxt)
    first = nxt[0]
    if first in "/,":  # "consuela. / [...]", ",,Das weiß": a verse line or a low quote goes on
        return None
    caseless = lower and caseless_region
    if lower and not caseless:
        return None
    if not _EXCLAMATIONS.isdisjoint(run):
        return None if caseless and closers else end
    if len(run) > 1 or "…" in run:  # an ellipsis ends a sentence only before a capital
        if start > 0 and text[start - 1] in "[(" and text[start + len(run) : start + len(run) + 1] in ("]", ")"):
            return None  # "[...]" marks an omission inside a quotation
        return end if not lower and not first.isdigit() else None
    if closers and not caseless:
        return end
    return end if _period_ends_sentence(text, start, nxt, language) else None


def _period_ends_sentence(text: str, dot: int, nxt: str, language: str | None) -> bool:
    """Whether the single period at ``dot`` ends a sentence, judging the word before it."""
    token = _word_before(text, dot)
    if not token:
        return True
    word = token.lower()
    if ("@" in token or "://" in token or "www." in word) and _URLISH_RE.search(token):
        return True  # (the plain "in" tests spare most words a regex call)
    number = token.lstrip("-–")  # "1. -3. Jahrhundert"
    if number[:1].isdigit() and _NUMBER_RE.fullmatch(number):
        return not (
            _is_list_number(text, dot, number)
            or _is_inline_list_number(text, dot, number)
            or _is_ordinal(text, dot - len(token) + len(number), number, nxt, language)
        )
    if len(token) == 1 and token.isalpha() and token <= "ÿ":
        if token == "I" and _previous_word(text, dot - 1)[:1].islower():
            return True  # the pronoun: "you and I. Did you..." (but "Albert I. Jones")
        # a unit after a number ("for 2 h.", "8–10 h.") may end a sentence; otherwise an initial
        # ("J. R. R. Tolkien") or one letter of "z. B.", "d. h." (a Greek "π." is neither)
        return token.islower() and _previous_word(text, dot - 1)[-1:].isdigit()
    # "Rechnungs-Nr.", "Dipl.-Ing.", Italian and French elision: "l'Ing.", "dell'Avv."
    if "-" in word:
        word = word.rsplit("-", 1)[-1]
    if "'" in word or "’" in word:
        word = word.rsplit("'", 1)[-1].rsplit("’", 1)[-1]
    if word.endswith(("str", "nr")) and nxt[0].isdigit():
        return False  # German compounds: "Hauptstr. 5", "Kundennr. 123"
    if word in LIST_FINAL:
        return True
    never_final = _NEVER_FINAL_FOR.get(language, _NEVER_FINAL_ANY)
    if word in never_final:
        return False
    if word in _SPACED_SECOND_PARTS:  # written with a space: "p. ej.", "p. ex."
        before = _previous_word(text, dot - len(token))
        if len(before) == 2 and before[1] == "." and before.lower() + word in never_final:
            return False
    if word in NUMBER_TAKING and token != "S" and (nxt[0].isdigit() or _is_roman(nxt)):
        return False
    if word in _MAY_BE_FINAL_FOR.get(language, MAY_BE_FINAL):
        return _opens_sentence(nxt)
    if "." in token and _DOTTED_ABBR_RE.fullmatch(token):
        return False  # an unlisted abbreviation such as "i.d.R." or "o.B."
    return True


#: One set per language (one lookup per period): the shared lists plus the language's own.
_NEVER_FINAL_ANY = NEVER_FINAL | ROMANCE_DUTCH_NEVER_FINAL
_NEVER_FINAL_FOR: dict[str | None, frozenset[str] | set[str]] = {
    lang: _NEVER_FINAL_ANY | words for lang, words in LANGUAGE_NEVER_FINAL.items()
}
_MAY_BE_FINAL_FOR: dict[str | None, frozenset[str] | set[str]] = {
    lang: MAY_BE_FINAL | words for lang, words in LANGUAGE_MAY_BE_FINAL.items()
}
#: Second parts of two-part abbreviations that may be written with a space ("ej" of "p. ej.").
_SPACED_SECOND_PARTS = frozenset(
    w.split(".")[1] for w in set().union(*_NEVER_FINAL_FOR.values()) if re.fullmatch(r"\w\.\w{2,}", w)
)


def _word_before(text: str, dot: int) -> str:
    """The non-space token just before ``dot``, without opening quotes or brackets (bounded lookback)."""
    begin = max(0, dot - _LOOKBACK)
    chunk = text[begin:dot]
    if not chunk or chunk[-1].isspace():
        return ""
    return chunk.rsplit(None, 1)[-1].rpartition("\\n")[2].lstrip(_OPENERS)


def _previous_word(text: str, pos: int) -> str:
    """The whitespace-separated word that ends before ``pos``, skipping the spaces just before it."""
    begin = max(0, pos - _LOOKBACK)
    parts = text[begin:pos].rsplit(None, 1)
    return parts[-1].lstrip(_OPENERS) if parts else ""


def _next_word(text: str, end: int) -> str:
    """The word (or first character) that follows the whitespace after ``end``, skipping opening quotes."""
    m = _NEXT_WORD_RE.match(text, end)
    return m.group(1) if m else ""


def _starts_lower(word: str) -> bool:
    """A word in lower case, which cannot open a sentence -- except Greek-letter names ("β-Catenin")."""
    if not word[0].islower():
        return False
    return not ("\u03b1" <= word[0] <= "\u03c9" and word[1:2] in ("-", ""))


def _opens_sentence(word: str) -> bool:
    """A capitalised word that commonly opens a sentence ("The", "It", "Der", "Sie"...)."""
    return word[0].isupper() and word.lower() in SENTENCE_OPENERS


def _is_list_number(text: str, dot: int, token: str) -> bool:
    """``1.`` or ``2.3.`` as the first thing on its line: a numbered list item, not a sentence end."""
    begin = max(0, dot - _LOOKBACK)
    escaped = text.rfind("\\n", begin, dot)
    line_start = max(text.rfind("\n", begin, dot) + 1, escaped + 2 if escaped >= 0 else 0)
    if line_start == 0 and begin > 0:
        return False
    return text[line_start:dot].strip(" \t>*-•⁃▪◦‣·") == token and len(token) <= 8


def _is_inline_list_number(text: str, dot: int, token: str) -> bool:
    """``... first step. 2. Second step`` -- a list flattened into one line: the number opens an item."""
    if not token.isdigit() or len(token) > 2:
        return False
    before = _previous_word(text, dot - len(token))
    if before[-1:] not in (".", "!", "?", ",", ";") and not (before[-1:] == ":" and token == "1"):
        return False  # after a colon only "1." opens a list ("Result: 42." ends a sentence)
    word = before[:-1].lower()  # "Sept. 30." and "No. 5." are dates and numbers, not list items
    return word not in MAY_BE_FINAL and word not in NEVER_FINAL and word not in NUMBER_TAKING


def _is_ordinal(text: str, dot: int, token: str, nxt: str, language: str | None) -> bool:
    """German ordinals: "am 3. Oktober", "der 2. Weltkrieg", "im 19. Jahrhundert"."""
    if not token.isdigit() or len(token) > 3:
        return False
    if nxt.lower().rstrip(".") in MONTHS:
        return True
    if language not in (None, "de") or nxt.lower() in SENTENCE_OPENERS:
        return False  # an ordinal is followed by a noun ("Platz"), not by "Die", "Er", "Dann"...
    before = _previous_word(text, dot - len(token)).lower()
    return before in ORDINAL_CUES or (before[-1:] == "." and before[:-1].isdigit())  # "dem 1. -3. Jh."


def _is_roman(word: str) -> bool:
    """A Roman numeral such as "IV" (after "Art." or "No.")."""
    return bool(word) and all(c in "IVXLCDM" for c in word)


def _has_words(text: str, n: int) -> bool:
    """At least ``n`` lower-case words of two letters or more (so a window of digits is not "lower-case")."""
    return any(i >= n - 1 for i, _ in zip(range(n), _LOWER_WORD_RE.finditer(text)))


def _between_digits(text: str, start: int, end: int) -> bool:
    """A fullwidth point inside a number (１．５), which is a decimal point, not a full stop."""
    return start > 0 and end < len(text) and text[start - 1].isdigit() and text[end].isdigit()


def _cjk_around(text: str, start: int, end: int) -> bool:
    """ASCII punctuation between CJK characters ("好!我们"): CJK text typed with a Latin keyboard."""
    return start > 0 and bool(_CJK_CHAR_RE.match(text[start - 1])) and bool(_CJK_CHAR_RE.match(text[end]))


def _cjk_closers(closers: str) -> int:
    """How many of the closers after a CJK terminator close it: “ and ‘ open the next sentence there."""
    for i, c in enumerate(closers):
        if c in "“‘":
            return i
    return len(closers)


def _japanese_quotative(text: str, end: int, closers: int) -> bool:
    """「はい。」と言った: a quote followed by the quotative particle と/って belongs to the sentence."""
    return closers > 0 and end < len(text) and (text[end] == "と" or text.startswith("って", end))


# --------------------------------------------------------------------------------------------------------
# pysbd and blingfire, aligned back onto the text
# --------------------------------------------------------------------------------------------------------


def _backend_function(backend: str, language: str | None) -> Callable[[str], list[str]] | None:
    """The function that splits one block of text into sentence strings (None for chunkwise)."""
    if backend == "chunkwise":
        return None
    if backend not in SENTENCE_BACKENDS:
        raise ConfigError(f"unknown sentence back-end {backend!r}; choose one of {', '.join(SENTENCE_BACKENDS)}")
    if importlib.util.find_spec(backend) is None:
        raise MissingDependencyError(f"the {backend} sentence back-end", "sentences", backend)
    if backend == "pysbd":
        return _pysbd_segmenter(language).segment
    import blingfire

    return lambda block: blingfire.text_to_sentences(block).split("\n")


@functools.lru_cache(maxsize=16)
def _pysbd_segmenter(language: str | None):
    """A pysbd Segmenter for ``language`` (English when the language is unknown to pysbd); built once."""
    import pysbd
    from pysbd.languages import LANGUAGE_CODES

    lang = language if language in LANGUAGE_CODES else "en"
    return pysbd.Segmenter(language=lang, clean=False)


def _external_cuts(text: str, split_block: Callable[[str], list[str]]) -> list[int]:
    """Cuts from an external splitter, run block by block (blank lines always end a sentence)."""
    cuts = []
    for start, end in _blocks(text):
        cuts.append(start)
        try:
            sentences = split_block(text[start:end])
        except Exception:  # a peer library failing on hostile text must not lose the text
            sentences = [text[start:end]]
        cuts.extend(_align(text, start, end, sentences))
    return cuts


#: Longest piece of text a peer sees in one call. pysbd's time grows with the square of the sentences per
#: call (6,000 short sentences take 13 s, 100,000 about an hour), so a longer paragraph is fed in pieces.
PEER_BLOCK_CHARS = 10_000


def _blocks(text: str) -> list[Span]:
    """Paragraph blocks of ``text`` (separated by blank lines), each at most ``PEER_BLOCK_CHARS`` long."""
    blocks = []
    for start, end in _spans_from_cuts(text, _blank_line_cuts(text)):
        while end - start > PEER_BLOCK_CHARS:
            cut = _block_cut(text, start, start + PEER_BLOCK_CHARS)
            blocks.append((start, cut))
            start = cut
        blocks.append((start, end))
    return blocks


def _block_cut(text: str, start: int, limit: int) -> int:
    """Where to end an over-long block: the last line break before ``limit``, else the last space, else
    ``limit`` itself (text without any whitespace)."""
    floor = start + PEER_BLOCK_CHARS // 2
    for sep in ("\n", " "):
        pos = text.rfind(sep, floor, limit)
        if pos != -1:
            return pos + 1
    return limit


def _blank_line_cuts(text: str) -> list[int]:
    """Positions inside every blank line."""
    cuts = []
    offset = 0
    for line in text.splitlines(keepends=True):
        offset += len(line)
        if line.isspace():
            cuts.append(offset)
    return cuts


def _align(text: str, start: int, end: int, sentences: list[str]) -> list[int]:
    """End offsets in ``text`` of each of ``sentences`` (strings from a splitter that may alter whitespace).

    Sentences are matched on their non-whitespace characters in order; a character the splitter changed or
    dropped is skipped after a short look-ahead, so one odd character cannot derail the rest.
    """
    cuts = []
    pos = start
    for sentence in sentences:
        body = sentence.strip()
        if not body:
            continue
        while pos < end and text[pos].isspace():
            pos += 1
        if text.startswith(body, pos) and pos + len(body) <= end:
            pos += len(body)
        else:
            pos = _align_chars(text, pos, end, body)
        cuts.append(pos)
    return cuts


def _align_chars(text: str, pos: int, end: int, body: str) -> int:
    """Character-by-character alignment of ``body`` from ``pos`` (the slow path for altered whitespace)."""
    for ch in body:
        if ch.isspace():
            continue
        while pos < end and text[pos].isspace():
            pos += 1
        if pos < end and text[pos] == ch:
            pos += 1
            continue
        found = text.find(ch, pos, min(end, pos + 16))
        if found != -1:
            pos = found + 1
    return pos
