"""Whether a terminator ends a sentence: the period rules of :mod:`.sentences` (abbreviations, initials,
list numbers, ordinals, numbers, CJK context), judged on the words around it.
"""

from __future__ import annotations

import re

from .sentence_rules import (
    _CJK_CHAR_RE,
    _CJK_TERMS,
    _CLOSERS,
    _DOTTED_ABBR_RE,
    _EXCLAMATIONS,
    _LOOKBACK,
    _LOWER_WORD_RE,
    _NEXT_WORD_RE,
    _NUMBER_RE,
    _OPENERS,
    _URLISH_RE,
    LANGUAGE_MAY_BE_FINAL,
    LANGUAGE_NEVER_FINAL,
    LIST_FINAL,
    MAY_BE_FINAL,
    MONTHS,
    NEVER_FINAL,
    NUMBER_TAKING,
    ORDINAL_CUES,
    ROMANCE_DUTCH_NEVER_FINAL,
    SENTENCE_OPENERS,
)


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
    return _word_ends_sentence(text, dot, token, word, nxt, language)


def _word_ends_sentence(text: str, dot: int, token: str, word: str, nxt: str, language: str | None) -> bool:
    """The lists' verdict on a word of two letters or more before the period at ``dot`` (``word`` is
    ``token`` lower-cased): abbreviations that never end a sentence, those that may, list markers."""
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
