"""The sentence splitter's word lists and patterns (:mod:`.sentences` for how they are used).

Word lists are lower-case and compared with the lower-cased word before a period. Every pattern is a plain
character-class run or anchored at a fixed character, so the scan stays linear on any input.
"""

from __future__ import annotations

import re

from ..registry import lazy_regex

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
_CJK_CHAR_RE = lazy_regex(_CJK_CLASS)
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
_CJK_RUN_RE = lazy_regex(rf"[{_CJK_TERMS}．][{_ALL_TERMS}]*+{_CLOSE}")
_LATIN_RUN_RE = lazy_regex(rf"{_LATIN_START}[{_LATIN_TERMS}]*+{_CLOSE}{_SPACED}(?!{_LOWER_NEXT})")
#: The same without the lower-case filter, for lower-cased stretches of text.
_LATIN_RUN_ANY_RE = lazy_regex(rf"{_LATIN_START}[{_LATIN_TERMS}]*+{_CLOSE}{_SPACED}")
_EXCLAMATIONS = frozenset("!?‼⁇⁈⁉؟۔।॥።፧")  # terminators with no abbreviations to rule out
#: Stretches of 600+ characters without a capital letter: lower-cased text, judged without the filter.
_UPPER = "A-ZÀ-ÖØ-ÞА-ЯΑ-Ω"
_CASELESS_RE = lazy_regex(rf"[{_UPPER}]([^{_UPPER}]{{600,}}+)")  # after a capital (in C: linear)
_UPPER_RE = lazy_regex(rf"[{_UPPER}]")
_CASELESS_START_RE = lazy_regex(rf"[^{_UPPER}]{{600,}}+")  # at the very start of the text
_NEXT_WORD_RE = lazy_regex(rf"(?:[\s{re.escape(_OPENERS)}]|{_ESCAPED_BREAK}){{0,64}}+([^\W_][\w'’\-]{{0,64}}|\S)")
_NUMBER_RE = lazy_regex(r"\d[\d.,]*")
_DOTTED_ABBR_RE = lazy_regex(r"(?:[^\W\d_]{1,3}\.)+[^\W\d_]{1,3}")
_LOWER_WORD_RE = lazy_regex(r"[a-zß-öø-ÿа-яα-ω]{2,}")
_LIST_ITEM_RE = lazy_regex(r"(?:[-*+•·▪◦‣–—]\s|\d{1,3}[.)]\s|[a-zA-Z][)]\s|\(\d{1,3}\)\s|#{1,6}\s|>|\||```|~~~)")
_RULE_LINE_RE = lazy_regex(r"[-=*_~#+.]{3,}")
_URLISH_RE = lazy_regex(r"(?:://|www\.|@)")
#: A spaced ellipsis ". . ." (three or more periods, one space apart) with the closers after it.
_SPACED_ELLIPSIS_RE = lazy_regex(rf"\.(?:[ \u00a0]\.){{2,}}+{_CLOSE}")
_BULLETS = "•⁃▪◦‣·*-"
#: A list item at the start of a line: "1. ", "1) ", "1.) ", "a. ", "• 9. ", "⁃9. ".
_LIST_MARKER = rf"[ \t]*+(?:[{re.escape(_BULLETS)}][ \t]?)?(\d{{1,2}}|[a-z])(\.\)|[.)])[ \t]"
_LIST_START_RE = lazy_regex(_LIST_MARKER)  # matched at the start of the text
_LIST_LINE_RE = lazy_regex("\n" + _LIST_MARKER)  # starts with a literal: the engine skips ahead fast
#: Any letter or digit, of any script: a sentence must hold one (see :func:`_attach_bare_punctuation`).
_ALNUM_RE = lazy_regex(r"[^\W_]")

_LOOKBACK = 64  # characters inspected before a period: enough for any abbreviation, bounded on hostile text
