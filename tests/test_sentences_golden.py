"""pySBD's "Golden Rules" (a public suite nobody here wrote) against the chunkwise back-end.

The case lists are vendored in tests/data/golden_rules/ (MIT, see LICENSE-pySBD there; regenerate with
scripts/make_golden_rules.py). A case passes when the sentences are exactly the expected ones, compared as
pySBD's own tests compare them (each stripped). Lists that pySBD runs with ``clean=True`` (it rewrites
whitespace, e.g. joins wrapped lines) are compared ignoring whitespace, since our spans keep the text as it
is. Every known miss is listed in KNOWN_MISSES, with its reason in docs/sentences.md; it is a strict xfail,
so a case that starts to pass (or a new miss) fails the suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkwise.segmentation.sentences import split_sentences

GOLDEN_DIR = Path(__file__).parent / "data" / "golden_rules"
LANGUAGES = ("en", "de", "es", "fr", "it", "nl", "zh", "ja")

#: (language, list name, index) -> why it is missed (docs/sentences.md explains each in full).
KNOWN_MISSES = {
    ("en", "GOLDEN_EN_RULES_TEST_CASES", 17): "'a.m. Mr.' goes on but 'P.M. Mr.' ends (pySBD misses it too)",
    ("de", "DE_CLEAN_RULES_TEST_CASES", 20): "a line break without punctuation before 'Urheberrecht' is a wrapped line",
    ("de", "DE_PDF_CLEAN_RULES_TEST_CASES", 2): "'Andere' alone on the first line is read as a title",
    ("es", "ES_CLEAN_TEST_CASES", 0): "'Señores:' + line break + capitals is a wrapped line",
    ("es", "ES_CLEAN_TEST_CASES", 2): "a rule line '_____' has no letter: attached to its neighbour, by design",
    ("it", "IT_MORE_TEST_CASES", 17): "'\"Ei fu. Siccome ...' (a quoted verse) ends at 'fu.' for us",
}


def load_cases() -> list[tuple[str, str, int, bool, str, list[str]]]:
    """``(language, list name, index, clean, text, expected sentences)`` for every vendored case."""
    out = []
    for lang in LANGUAGES:
        doc = json.loads((GOLDEN_DIR / f"{lang}.json").read_text(encoding="utf-8"))
        for suite in doc["suites"]:
            for i, case in enumerate(suite["cases"]):
                out.append((lang, suite["name"], i, suite["clean"], case["text"], case["sentences"]))
    return out


def passes(text: str, expected: list[str], clean: bool, language: str, backend: str = "chunkwise") -> bool:
    """Whether ``backend`` reproduces ``expected`` (ignoring whitespace for ``clean`` lists)."""
    got = [text[a:b] for a, b in split_sentences(text, backend=backend, language=language)]
    if clean:
        return ["".join(s.split()) for s in got] == ["".join(s.split()) for s in expected]
    return got == [s.strip() for s in expected]


CASES = load_cases()


def _param(case):
    lang, name, i, clean, text, expected = case
    reason = KNOWN_MISSES.get((lang, name, i))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(lang, clean, text, expected, id=f"{lang}-{name}-{i}", marks=marks)


@pytest.mark.parametrize("lang,clean,text,expected", [_param(c) for c in CASES])
def test_golden_rule(lang, clean, text, expected):
    got = [text[a:b] for a, b in split_sentences(text, language=lang)]
    assert passes(text, expected, clean, lang), got


def test_vendored_suite_is_complete():
    """The files hold pySBD's lists as released (48 English cases, one pySBD itself marks xfail)."""
    counts = {}
    for lang, _name, *_ in CASES:
        counts[lang] = counts.get(lang, 0) + 1
    assert counts == {"en": 48, "de": 35, "es": 36, "fr": 5, "it": 36, "nl": 3, "zh": 2, "ja": 5}
    assert "MIT License" in (GOLDEN_DIR / "LICENSE-pySBD").read_text(encoding="utf-8")
    assert all(key in {(c[0], c[1], c[2]) for c in CASES} for key in KNOWN_MISSES)


def test_english_acceptance():
    """Issue 21: at least 45 of the English Golden Rules exactly."""
    english = [c for c in CASES if c[0] == "en"]
    assert sum(passes(text, exp, clean, "en") for _, _, _, clean, text, exp in english) >= 45
