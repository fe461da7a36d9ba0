"""Does the embedder read the documents' language? Detect it per document and warn once per run.

Why: the default embedder (all-MiniLM-L6-v2) is an English model. Given German or Spanish text it still
returns vectors, so semantic boundaries and retrieval quietly get worse and nothing says why. Commands
that embed documents (``chunk`` with a semantic strategy, ``index``, ``eval``) feed every document to a
:class:`LanguageCheck` as soon as it is loaded, before any of its text is embedded: a warning printed after
the work (6.6 minutes of embedding a German PDF with the English model) came too late to act on. The first
document in a language the embedder does not read is said at once (``notify``)::

    chunkwise: warning: skript.pdf looks German; the embedder minilm is English-only - try --embedder
    use-multilingual

and, when there were several, one line at the end of the run gives the totals::

    chunkwise: warning: 12 documents look German, 3 Spanish; the embedder minilm is English-only —
    try --embedder use-multilingual

Detection uses ``py3langid`` (a maintained fork of langid.py: a small naive-Bayes model shipped in the
wheel, numpy only, offline, 97 languages) on the first :data:`SAMPLE_CHARS` characters of a document. A
document with fewer than :data:`MIN_LETTERS` letters, or whose best guess is below :data:`MIN_CONFIDENCE`,
is not counted either way. Unmistakable English (:func:`looks_english`: English function words, no foreign
ones) is answered before the model is loaded, so an English-only run never pays for loading it.
"""

from __future__ import annotations

import functools
import re
import sys
import warnings
from collections import Counter
from collections.abc import Callable
from typing import TextIO

#: characters of a document that are classified (enough for a confident guess, cheap on huge files)
SAMPLE_CHARS = 4000
#: documents with fewer letters than this are too short to classify reliably
MIN_LETTERS = 40
#: normalised probability below which a guess is ignored
MIN_CONFIDENCE = 0.9

#: the English screen (:func:`looks_english`): English function words that are not words of another language
#: written in Latin letters (no "a", "in", "is", "of" (Dutch), "was" (German), "are" (Romanian), "at" (Danish,
#: Tagalog), "as" (Portuguese), "for" (Danish), "or" (French), "be" (Hungarian), "by", "it", "his", "her", ...)
ENGLISH_WORDS = frozenset(
    "the and that with this which from have has were would could should there their they them what its but "
    "not you your our she him who whom whose when where while if into than then these those does did about "
    "after before because how only other some such each very out up shall being between through without "
    "upon".split()
)
#: frequent words of other languages that are not English words (nor parts of them: no "ve" of "I've", "et"
#: of "et al.", "os" or "ng" of a paper): a few of them in a sample mean it is not English only
FOREIGN_WORDS = frozenset(
    "der das und ist nicht ein eine einer zu sich von auf für werden wird sind dem des van het een zijn voor "
    "niet aan ook deze wordt worden naar bij nie la le les du une qui dans sur sont elle il ils el los las del "
    "por como su más não uma pelo pela og och att det på ikke inte är ett som ang mga yang dari ini itu untuk "
    "dengan kaj estas sunt quae quod atque eius enim che della sono nel gli anche jest oraz je egy hogy nem ja "
    "että ovat bir ile için sau pentru și în yn mae ei kwa dey wey dem dis wetin".split()
)
#: the screen's thresholds, measured by benchmarks/bench_language_screen.py (its docstring has the table):
#: with them no sample of ~20,000 (UDHR in ~460 languages, translated and English docs, web pages, code,
#: English/other mixtures) is screened English unless py3langid calls it English too; the closest others
#: have a share of 0.135 (a book list py3langid is unsure of) and 0.134 (Latin after English: Latin)
SCREEN_MIN_SHARE = 0.15  # share of the sample's words that are ENGLISH_WORDS (English prose: about 0.2)
SCREEN_MIN_DISTINCT = 4  # different ENGLISH_WORDS, "the" among them (code has "from", "if", "and", "not")
SCREEN_MAX_FOREIGN = 0.01  # share of the words that are FOREIGN_WORDS (mixtures with another language)
SCREEN_MIN_WORDS = 30  # shorter samples go to py3langid
SCREEN_MIN_ASCII = 0.97  # share of the letters that are in words of ASCII letters only
_WORD = re.compile(r"[^\W\d_]+")

#: languages each known embedder was trained on (model_id prefix -> ISO 639-1 codes)
EMBEDDER_LANGUAGES: dict[str, frozenset[str]] = {
    "minilm": frozenset({"en"}),
    "static": frozenset({"en"}),  # distilled from MiniLM
    "use-multilingual": frozenset(
        {"ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh"}
    ),
}
#: the languages of XLM-R's training data (CC-100), which multilingual-e5-small starts from
XLMR_LANGUAGES = frozenset(
    "af am ar as az be bg bn br bs ca cs cy da de el en eo es et eu fa fi fr fy ga gd gl gu ha he hi hr hu hy "
    "id is it ja jv ka kk km kn ko ku ky la lo lt lv mg mk ml mn mr ms my ne nl no om or pa pl ps pt ro ru sa "
    "sd si sk sl so sq sr su sv sw ta te th tl tr ug uk ur uz vi xh yi zh".split()
)
EMBEDDER_LANGUAGES["e5-small-q4"] = XLMR_LANGUAGES
#: the measured-best multilingual embedder (docs/embeddings.md, German retrieval: nDCG@10 and hit@1 above
#: use-multilingual and minilm); ``--embedder auto`` picks it for documents that are not English
MULTILINGUAL_EMBEDDER = "e5"
#: what to suggest when a document is in a language the embedder does not read
MULTILINGUAL_HINT = f"try --embedder {MULTILINGUAL_EMBEDDER} (extra e5) or --embedder auto"
#: documents ``--embedder auto`` classifies before it picks (the first ones of the input)
AUTO_SAMPLE = 20

LANGUAGE_NAMES = {
    "ar": "Arabic",
    "bg": "Bulgarian",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "et": "Estonian",
    "fa": "Persian",
    "fi": "Finnish",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "hu": "Hungarian",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "nl": "Dutch",
    "no": "Norwegian",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sk": "Slovak",
    "sl": "Slovenian",
    "sv": "Swedish",
    "th": "Thai",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "vi": "Vietnamese",
    "zh": "Chinese",
}


@functools.lru_cache(maxsize=1)
def _identifier():
    """The py3langid model with normalised probabilities (loaded once; about 0.2 s)."""
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError:  # a core dependency; without it the check is skipped, never fatal
        return None
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def looks_english(sample: str) -> bool:
    """True when ``sample`` is unmistakably English prose, decided without loading py3langid.

    Why: loading py3langid's model costs about 0.6 s of CPU (an LZMA-compressed 68 MB table), a large part of
    indexing a few English files, while the answer for ordinary English prose is certain. Function words are
    a language's most frequent words, and those in :data:`ENGLISH_WORDS` are common words of no other
    language written in Latin letters: they make about 0.2 of the words of English prose and near 0 elsewhere
    (Scots, which py3langid calls English too, 0.16; Nigerian Pidgin, which it does not, 0.07). A sample must
    also have hardly any :data:`FOREIGN_WORDS` (English mixed with another language goes to py3langid),
    several different English words with "the", the commonest, among them (code's keywords "from", "if",
    "and", "not" are not enough), and hardly any accented words. The thresholds are measured so that every
    sample screened English is one py3langid calls English too: the screen never changes an answer, it only
    skips the model (and says English even where py3langid is not installed).
    """
    words = _WORD.findall(sample.lower())
    if len(words) < SCREEN_MIN_WORDS:
        return False
    hits = [word for word in words if word in ENGLISH_WORDS]
    if len(hits) < SCREEN_MIN_SHARE * len(words) or len(set(hits)) < SCREEN_MIN_DISTINCT or "the" not in hits:
        return False
    if sum(word in FOREIGN_WORDS for word in words) > SCREEN_MAX_FOREIGN * len(words):
        return False
    letters = sum(map(len, words))
    return sum(len(word) for word in words if word.isascii()) >= SCREEN_MIN_ASCII * letters


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code of the language ``text`` is most likely in, or ``None`` when unsure (too few
    letters, a low-confidence guess, or the detector not installed). Unmistakable English
    (:func:`looks_english`) is answered without the detector."""
    sample = text[:SAMPLE_CHARS]
    if sum(ch.isalpha() for ch in sample) < MIN_LETTERS:
        return None
    if looks_english(sample):
        return "en"
    ident = _identifier()
    if ident is None:
        return None
    code, prob = ident.classify(sample)
    return str(code) if prob >= MIN_CONFIDENCE else None


def embedder_languages(embedder) -> frozenset[str] | None:
    """The languages ``embedder`` (an Embedder or a model id) was trained on, ``None`` if not known."""
    model_id = embedder if isinstance(embedder, str) else str(getattr(embedder, "model_id", "") or "")
    for prefix, langs in EMBEDDER_LANGUAGES.items():
        if model_id == prefix or model_id.startswith(prefix + "-"):
            return langs
    return None


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


class LanguageCheck:
    """Counts documents in languages the embedder does not read; :meth:`warn` prints one line for the run.

    Inactive (free) when the embedder's languages are unknown (``st:``, ``openai:`` models). ``notify(line)``
    is called once, with the first such document (:meth:`first_message`), when :meth:`add` meets it: call
    :meth:`add` before embedding a document and the warning comes before the work.
    """

    def __init__(self, embedder, notify: Callable[[str], None] | None = None):
        self.model_id = embedder if isinstance(embedder, str) else str(getattr(embedder, "model_id", "") or "")
        self.languages = embedder_languages(embedder)
        self.foreign: Counter[str] = Counter()
        self.notify = notify
        self.notified = False

    @property
    def active(self) -> bool:
        return self.languages is not None

    def add(self, text: str, source: str | None = None) -> str | None:
        """Classify one document's text; returns its language code when the embedder does not read it.
        The first such document is passed to ``notify`` at once (named by ``source``)."""
        if self.languages is None or not isinstance(text, str):
            return None
        code = detect_language(text)
        if code is None or code in self.languages:
            return None
        self.foreign[code] += 1
        if self.notify is not None and not self.notified:
            self.notified = True
            self.notify(self.first_message(code, source))
        return code

    def first_message(self, code: str, source: str | None = None) -> str:
        """The line said as soon as one document (``source``) looks like ``code``."""
        what = f"{source} looks {language_name(code)}" if source else f"a document looks {language_name(code)}"
        if self.languages == frozenset({"en"}):
            return f"{what}; the embedder {self.model_id} is English-only - {MULTILINGUAL_HINT}"
        return (
            f"{what}; the embedder {self.model_id} was not trained on that language: expect weaker "
            "boundaries and retrieval there"
        )

    def final_message(self) -> str | None:
        """:meth:`message`, unless the line said at once (``notify``) already said all of it (one document)."""
        if self.notified and sum(self.foreign.values()) == 1:
            return None
        return self.message()

    def message(self) -> str | None:
        """The one warning line for the run, or ``None`` when every document looked fine."""
        if not self.foreign:
            return None
        total = sum(self.foreign.values())
        parts = [f"{n} {language_name(c)}" for c, n in self.foreign.most_common(4)]
        if len(self.foreign) > 4:
            parts.append("...")
        if len(self.foreign) == 1:
            what = language_name(next(iter(self.foreign)))
        else:
            what = "like other languages (" + ", ".join(parts) + ")"
        head = f"{total} document{'s' if total != 1 else ''} look{'s' if total == 1 else ''} {what}"
        if self.languages == frozenset({"en"}):
            return f"{head}; the embedder {self.model_id} is English-only - {MULTILINGUAL_HINT}"
        return (
            f"{head}; the embedder {self.model_id} was not trained on "
            f"{'that language' if len(self.foreign) == 1 else 'those languages'}: expect weaker boundaries "
            "and retrieval there"
        )

    def warn(self, file: TextIO | None = None) -> bool:
        """Print the warning (once) to stderr, unless ``notify`` already said it all; True when printed."""
        msg = self.final_message()
        if msg is None:
            return False
        print(f"chunkwise: warning: {msg}", file=file or sys.stderr)
        self.foreign.clear()
        return True


def choose_embedder(texts, default: str = "minilm") -> str:
    """The embedder ``--embedder auto`` stands for, given some documents' texts: :data:`MULTILINGUAL_EMBEDDER`
    when more of them look like a language other than English than look English, else ``default``.

    Why a majority and not "any": MiniLM is measured better on English (nDCG@10 0.803 against e5's 0.791 on
    scientific abstracts, at a fifth of the CPU), so one German file among English ones does not move a
    whole index to the slower model; documents too short or too unsure to classify do not vote.
    """
    langs = [detect_language(t) for t in texts if isinstance(t, str)]
    english = sum(code == "en" for code in langs)
    other = sum(code is not None and code != "en" for code in langs)
    return MULTILINGUAL_EMBEDDER if other > english else default


def sample_texts(paths, limit: int = AUTO_SAMPLE) -> list[str]:
    """The first :data:`SAMPLE_CHARS` characters of up to ``limit`` documents under ``paths`` (files and
    folders; standard input is not read, so the command still gets it whole). Unreadable inputs are skipped
    here: the command itself reports them."""
    from ..errors import ChunkwiseError
    from ..formats import iter_documents

    files = [p for p in paths if isinstance(p, str) and p != "-"]
    if not files:
        return []
    out: list[str] = []
    with warnings.catch_warnings():  # skipped files are said by the command's own walk, once
        warnings.simplefilter("ignore")
        try:
            for _source, doc in iter_documents(files):
                text = getattr(doc, "text", None)
                if isinstance(text, str):
                    out.append(text[:SAMPLE_CHARS])
                if len(out) >= limit:
                    break
        except (ChunkwiseError, OSError):
            pass
    return out


def resolve_auto(args, file: TextIO | None = None) -> str | None:
    """``--embedder auto`` on the command line: the name it stands for, from the command's inputs (``paths``
    or ``texts``), said in one line unless ``--quiet``. ``None`` when there is nothing to classify (``search``
    on an index: the index reopens with the embedder it was built with)."""
    texts = list(getattr(args, "texts", None) or []) or sample_texts(getattr(args, "paths", None) or [])
    if not texts:
        return None
    name = choose_embedder(texts)
    if not getattr(args, "quiet", False):
        langs = Counter(c for c in map(detect_language, texts) if c)
        seen = ", ".join(f"{n} {language_name(c)}" for c, n in langs.most_common(3)) or "none classified"
        print(f"chunkwise: --embedder auto: {name} ({len(texts)} documents sampled: {seen})", file=file or sys.stderr)
    return name


__all__ = [
    "choose_embedder",
    "resolve_auto",
    "sample_texts",
    "MULTILINGUAL_EMBEDDER",
    "LanguageCheck",
    "detect_language",
    "looks_english",
    "embedder_languages",
    "language_name",
    "EMBEDDER_LANGUAGES",
]
