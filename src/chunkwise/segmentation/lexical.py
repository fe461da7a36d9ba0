"""The words BM25 indexes and searches: identifiers kept whole.

Why not a plain word tokenizer: release notes, API docs and logs are found by their identifiers, and a
``\\w\\w+`` tokenizer turns ``3.8.13`` into ``13`` (single characters dropped), so ``3.8.1``, ``3.8.13`` and
``0.13`` all look alike and BM25 cannot tell sibling version sections apart. Here an identifier — a
version (``3.8.13``, ``v1.2.0-rc.1``; a leading ``v`` before a digit is dropped, so ``v3.8.13`` and
``3.8.13`` are one term), a number with its unit (``200ms``), a status code, a dotted, snake_case or
camelCase name (``os.path.join``, ``max_tokens``, ``getUserName``) — is one lower-cased term.

A document also indexes the alphabetic parts of its names (``os``, ``path``, ``join``; ``get``, ``user``,
``name``), so a question in words still finds ``max_tokens``; a query keeps its identifiers whole, so a
query term only ever matches the same identifier or a word, never a piece of a longer identifier: ``3.8.1``
does not match ``3.8.13``, ``max_tokens`` does not match ``max_tokens_total``. Numeric parts are never
indexed on their own. Plain words are lower-cased, English stop words dropped (bm25s's list), one-letter
words dropped as bm25s does; a hyphen between plain words (``real-time``) separates them.

BM25 also folds number (``fold=True``: :func:`singular`): a plain word or an identifier's part loses its
plural ending, so "tokens to ids" finds ``def strids2ids(tokens)`` and "print nodes" finds ``node.item``.
Only number, never the word's kind: a Snowball stemmer also made ``designer`` ``design`` and ``discussion``
``discuss``, and lost on meeting transcripts where the role "Industrial Designer" is what is asked about
(benchmarks/results/defaults-matrix.md). Whole identifiers are never folded.
"""

from __future__ import annotations

import re

#: bumped whenever the tokens change: a saved BM25 index made with other tokens is rebuilt
TOKENIZER_VERSION = "identifiers-2-singular"

# A run of letters/digits, joined to the next run by one of . _ - + (the joiner must sit between two
# alphanumerics, so a sentence's full stop or a trailing hyphen is not part of the word). Leading
# underscores (``__init__``) belong to the name. The quantifiers are possessive (no backtracking): each run
# is followed by a character it cannot hold (a letter/digit run by a joiner or ``_``, a joiner run by a
# letter/digit), so they match what ``_*[^\W_]+(?:[._+\-]+[^\W_]+)*_*`` matches, about 15% sooner.
_TERM = re.compile(r"_*+[^\W_]++(?:[._+\-]++[^\W_]++)*+_*+", re.UNICODE)
_JOINER = re.compile(r"[._+\-]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[^\W\d_]+")
_ABBREVIATION = re.compile(r"^(?:[^\W\d_]\.)+[^\W\d_]$")
_VERSION_V = re.compile(r"^[vV](?=\d+(?:\.\d+)+)")


#: bm25s's English stop words (``bm25s.stopwords.STOPWORDS_EN``, the list chunkwise's BM25 always removed),
#: kept here: importing bm25s for them imported scipy.sparse too, about a quarter of a cold search's CPU
_STOPWORDS_EN = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)


def stopwords() -> frozenset[str]:
    """The English stop words BM25 drops (bm25s's list)."""
    return _STOPWORDS_EN


def _is_identifier(raw: str) -> bool:
    """A term kept whole: it has a digit, a ``.``/``_``/``+`` joiner, or a capital after a lower-case letter."""
    if any(ch.isdigit() for ch in raw) or any(ch in "._+" for ch in raw):
        return True
    return any(a.islower() and b.isupper() for a, b in zip(raw, raw[1:]))


def _parts(raw: str) -> list[str]:
    """The alphabetic words inside an identifier (never its numbers), lower-cased."""
    out = []
    for piece in _JOINER.split(raw.strip("_")):
        out += [w.lower() for w in _CAMEL.findall(piece) if not any(ch.isdigit() for ch in w)]
    return out


def singular(word: str) -> str:
    """``word`` (lower-case letters) with its plural ending removed: Harman's S-stemmer ("How effective is
    suffixing?", 1991): ``-ies`` -> ``-y`` (not ``-eies``, ``-aies``), ``-es`` -> ``-e`` (not ``-aes``, ``-ees``,
    ``-oes``), ``-s`` -> ``-`` (not ``-us``, ``-ss``); words of three letters or fewer (``has``, ``its``,
    ``bus``) are kept."""
    if len(word) <= 3 or not word.endswith("s"):
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith(("us", "ss")):
        return word
    return word[:-1]


def lexical_terms(text: str, parts: bool = True, fold: bool = False) -> list[str]:
    """The BM25 terms of ``text``, in order: identifiers whole (and, with ``parts``, their alphabetic parts
    after them: documents), plain words lower-cased, stop words and one-letter words dropped; with ``fold``,
    plain words and parts in the singular (:func:`singular`; what BM25 indexes and searches)."""
    key = (bool(parts), bool(fold))
    memo = _MEMOS[key]
    out: list[str] = []
    for raw in _TERM.findall(text):
        terms = memo.get(raw)
        if terms is None:
            terms = _raw_terms(raw, parts, fold)
            if len(raw) <= _MEMO_KEY_CHARS:
                _remember(key, raw, terms)
        out += terms
    return out


#: the terms of one matched word are a pure function of the word (and the two flags), and word frequencies
#: follow Zipf's law, so most words of a corpus were seen before: a memo per flag pair saves the
#: per-character checks. It is bounded by the strings it holds (a word and each of its terms count one;
#: emptied when the next word would pass ``_MEMO_STRINGS``), and words longer than ``_MEMO_KEY_CHARS``
#: (hashes, base64: seldom repeated) are never kept, so it holds a few MB at most.
_MEMO_STRINGS = 1 << 16
_MEMO_KEY_CHARS = 32
_MEMOS: dict[tuple[bool, bool], dict[str, tuple[str, ...]]] = {(p, f): {} for p in (False, True) for f in (False, True)}
_HELD: dict[tuple[bool, bool], int] = dict.fromkeys(_MEMOS, 0)


def _remember(key: tuple[bool, bool], raw: str, terms: tuple[str, ...]) -> None:
    memo, cost = _MEMOS[key], 1 + len(terms)
    held = _HELD[key]
    if held + cost > _MEMO_STRINGS:
        memo.clear()
        held = 0
    memo[raw] = terms
    _HELD[key] = held + cost


def _raw_terms(raw: str, parts: bool, fold: bool) -> tuple[str, ...]:
    """The terms of one :data:`_TERM` match (see :func:`lexical_terms`)."""
    stop = _STOPWORDS_EN
    num = singular if fold else _same
    identifier = _is_identifier(raw)
    if identifier:
        whole = _VERSION_V.sub("", raw).lower()
        if not parts:
            return (whole,)
        return (whole, *[num(w) for w in _parts(raw) if len(w) > 1 and w not in stop and w != whole])
    words = [w for w in raw.split("-") if w] if "-" in raw else [raw]  # real-time: two words
    out = []
    for w in words:
        w = w.lower()
        if len(w) > 1 and w not in stop:
            out.append(num(w))
    return tuple(out)


def _same(word: str) -> str:
    return word


def key_terms(text: str) -> list[str]:
    """The identifiers of ``text`` (versions, numbers, dotted/snake/camel names), lower-cased, first
    occurrence order: the terms a passage must contain to be about what the question names."""
    seen: dict[str, None] = {}
    for m in _TERM.finditer(text):
        raw = m.group()
        if _ABBREVIATION.match(raw):  # e.g., i.e., U.S.: not a name
            continue
        if _is_identifier(raw):
            seen.setdefault(_VERSION_V.sub("", raw).lower(), None)
    return list(seen)


def strong_keys(text: str) -> list[str]:
    """The keys of ``text`` that name one thing: :func:`key_terms` less numbers of one or two digits
    ("top 3", "2 workers")."""
    return [k for k in key_terms(text) if not (k.isdigit() and len(k) < 3)]


def contains_term(text: str, term: str) -> bool:
    """Whether ``text`` holds ``term`` as a whole term (as :func:`lexical_terms` would index it)."""
    return term in lexical_terms(text, parts=False)


__all__ = ["TOKENIZER_VERSION", "lexical_terms", "singular", "key_terms", "strong_keys", "contains_term", "stopwords"]
