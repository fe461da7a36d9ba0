"""Does the English screen (``language.looks_english``) ever say "en" where py3langid would not?

``detect_language`` answers "en" without loading py3langid (about 0.6 s of CPU) when the screen says a
sample is unmistakably English. That is only safe if, on every sample the screen passes, py3langid with the
same rules (first ``SAMPLE_CHARS`` characters, ``MIN_CONFIDENCE``) says "en" too. This script counts, per
set of public documents, the samples screened English and, among them, those py3langid calls something else
(``other``: must be 0, it would lose a warning) or is unsure about (``unsure``: should be 0, it would add an
"English" vote to ``--embedder auto``), and the CPU the screen costs and saves.

Data (read offline from bare git mirrors, never copied into this repository; set ``CHUNKWISE_MIRROR`` to the
folder holding them, default ``/work/.mirror/<owner>+<name>/repo``; make one with
``git clone --bare https://github.com/<owner>/<name> <owner>+<name>/repo``):

- ``unicode-org/udhr``: the Universal Declaration of Human Rights in ~460 languages and scripts
  (``data/udhr/udhr_*.xml``), cut into samples of ``SAMPLE_CHARS`` and of 400 characters;
- ``fastapi/fastapi``: its Markdown docs, English (``docs/en``) and translated (``docs/de`` ... ``docs/uk``),
  prose with code blocks; and its Python sources (``fastapi/``, ``docs_src/``) as code;
- ``adbar/trafilatura``: real web pages in many languages (``tests/cache``, ``tests/eval``), read with
  chunkwise's own HTML loader as ``chunkwise index`` reads them;
- Chroma's evaluation corpora (web text, chat logs, finance, PubMed, a speech; ``../shared/data/chroma-eval``,
  see its README) cut into samples, and this repository's ``examples/``;
- mixtures: an English sample followed by (or following) a UDHR sample in a language close to English, at
  10 % ... 90 % English.

Run: ``python benchmarks/bench_language_screen.py`` (about a minute, most of it py3langid on ~10,000 samples).

Measured (SCREEN_MIN_SHARE 0.15, SCREEN_MIN_DISTINCT 4, SCREEN_MAX_FOREIGN 0.01, SCREEN_MIN_WORDS 30,
SCREEN_MIN_ASCII 0.97; mirrors: udhr 91daa23, fastapi c3f316b, trafilatura e90b0ef; 2 shared cores)::

    set                                    docs  screened  other  unsure  py3langid ms  screen ms
    udhr English                             30        28      0       0            12        1.3
    udhr Scots (py3langid: English)          31         9      0       0             9        1.1
    udhr 28 close languages (nld afr fri dan nob nno swe deu ltz fra spa por cat ita ind tgl lat epo ron
      pcm bis tpi pis glv gle cym fao isl)  1207         0      0       0           340         35
    udhr ~430 other languages             13072         2      0       0          3824        397
    fastapi docs en (md)                    155       117      0       0           121       21.6
    fastapi docs de es fr pt tr uk ru (md)  868         0      0       0           854        110
    fastapi python code                     509         5      0       0            63       10.3
    trafilatura web pages (many languages)  991       154      0       0          1044        126
    chroma chatlogs                         110        79      0       0            28        4.0
    chroma finance                          485       314      0       0           245       36.7
    chroma pubmed                           425       247      0       0           200       28.6
    chroma state_of_the_union               134       101      0       0            37        5.5
    chroma wikitexts                        326       247      0       0            86       12.1
    examples/                                 6         6      0       0             4        0.7
    mixed English + close language         1872       232      0       0          2374        293

py3langid's model load: 440-690 ms CPU, avoided when every document of a run is screened (``examples/``);
the screen costs about 0.1 ms a sample against py3langid's 0.3-1 ms. The two UDHR samples "of other
languages" screened are English passages inside the Ao Naga file (py3langid: English). With ``--margins``:
the highest share among samples meeting the other conditions that py3langid does not call English is 0.135
(a WikiText book list, py3langid unsure), then 0.134 (Latin after English, py3langid: Latin), against the
threshold 0.15; 1541 of the 1982 py3langid-English samples meeting the other conditions are kept.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

from chunkwise.embeddings import language
from chunkwise.embeddings.language import MIN_CONFIDENCE, MIN_LETTERS, SAMPLE_CHARS, looks_english

ROOT = Path(__file__).resolve().parent.parent
MIRROR = Path(os.environ.get("CHUNKWISE_MIRROR", "/work/.mirror"))
CHROMA = ROOT.parent / "shared" / "data" / "chroma-eval" / "corpora"
#: UDHR codes of languages close to English in spelling or vocabulary (and English-based creoles)
CLOSE = (
    "nld afr fri sco dan nob nno swe deu ltz fra spa por cat ita ind zlm tgl lat epo ron pcm bis tpi pis glv gle "
    "cym fao isl"
).split()
FASTAPI_LANGS = ("de", "es", "fr", "pt", "tr", "uk", "ru")


def git(repo: str, *args: str) -> str:
    path = MIRROR / repo.replace("/", "+") / "repo"
    out = subprocess.run(["git", "-C", str(path), *args], capture_output=True, check=False)
    return out.stdout.decode("utf-8", "replace")


def files(repo: str, under: str) -> list[str]:
    return [p for p in git(repo, "ls-tree", "-r", "--name-only", "HEAD", under).splitlines() if p]


def show(repo: str, path: str) -> str:
    return git(repo, "show", f"HEAD:{path}")


def windows(text: str, size: int = SAMPLE_CHARS, limit: int = 1000) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)][:limit]


def udhr() -> dict[str, str]:
    """UDHR code (``eng``, ``deu_1996``...) -> its titles and paragraphs, one paragraph a line."""
    out = {}
    for path in files("unicode-org/udhr", "data/udhr"):
        name = Path(path).name
        if not (name.startswith("udhr_") and name.endswith(".xml")):
            continue
        try:
            root = ET.fromstring(show("unicode-org/udhr", path))
        except ET.ParseError:
            continue
        paras = [
            " ".join("".join(e.itertext()).split())
            for e in root.iter()
            if e.tag.rsplit("}", 1)[-1] in ("title", "para")
        ]
        out[name[5:-4]] = "\n".join(p for p in paras if p)
    return out


def loaded(named: dict[str, bytes]) -> list[str]:
    """Texts of documents (name -> bytes) as chunkwise's loaders read them (HTML, Markdown...)."""
    from chunkwise.formats import iter_documents

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (name, data) in enumerate(named.items()):
            (Path(tmp) / f"{i:05d}-{Path(name).name}").write_bytes(data)
        return [d.text for _s, d in iter_documents([tmp]) if isinstance(getattr(d, "text", None), str)]


def blob(repo: str, path: str) -> bytes:
    out = subprocess.run(
        ["git", "-C", str(MIRROR / repo.replace("/", "+") / "repo"), "show", f"HEAD:{path}"], capture_output=True
    )
    return out.stdout


def sets() -> dict[str, list[str]]:
    """Set name -> document texts (each is classified on its first SAMPLE_CHARS characters)."""
    out: dict[str, list[str]] = {}
    u = udhr()
    english = [t for k, t in u.items() if k.startswith("eng")]
    out["udhr English"] = [w for t in english for w in windows(t) + windows(t, 400)]
    for code in CLOSE:
        texts = [t for k, t in u.items() if k == code or k.startswith(code + "_")]
        if texts:
            out[f"udhr {code}"] = [w for t in texts for w in windows(t) + windows(t, 400)]
    rest = [t for k, t in u.items() if not k.startswith("eng") and k.split("_")[0] not in CLOSE]
    out["udhr ~430 other languages"] = [w for t in rest for w in windows(t) + windows(t, 400)]
    fa = "fastapi/fastapi"
    out["fastapi docs en (md)"] = loaded({p: blob(fa, p) for p in files(fa, "docs/en/docs") if p.endswith(".md")})
    for lang in FASTAPI_LANGS:
        docs = {p: blob(fa, p) for p in files(fa, f"docs/{lang}/docs") if p.endswith(".md")}
        out[f"fastapi docs {lang} (md)"] = loaded(docs)
    code = [p for p in files(fa, "fastapi") + files(fa, "docs_src") if p.endswith(".py")]
    out["fastapi python code"] = [show(fa, p) for p in code[:600]]
    tr = "adbar/trafilatura"
    pages = {p: blob(tr, p) for p in files(tr, "tests/cache") + files(tr, "tests/eval") if p.endswith(".html")}
    out["trafilatura web pages (many languages)"] = loaded(pages)
    for corpus in sorted(CHROMA.glob("*.md")):
        text = corpus.read_text(encoding="utf-8")
        out[f"chroma {corpus.stem}"] = windows(text) + windows(text, 400, 300)
    out["examples/"] = loaded({str(p): p.read_bytes() for p in sorted((ROOT / "examples").iterdir())})
    out["mixed English + close language"] = mixtures(english[0], out["chroma wikitexts"][:3], u)
    return out


def mixtures(udhr_en: str, wiki: list[str], u: dict[str, str]) -> list[str]:
    """English then another language (and the other way round), at 10 % ... 90 % English by characters."""
    out = []
    for en in [udhr_en[:SAMPLE_CHARS], *wiki]:
        for code in CLOSE:
            other = u.get(code, "")[:SAMPLE_CHARS]
            if not other:
                continue
            for pct in range(10, 100, 10):
                cut = SAMPLE_CHARS * pct // 100
                out.append(en[:cut] + "\n" + other[: SAMPLE_CHARS - cut])
                out.append(other[: SAMPLE_CHARS - cut] + "\n" + en[:cut])
    return out


def reference(sample: str) -> str | None:
    """What detect_language said before the screen: py3langid with the same rules."""
    if sum(ch.isalpha() for ch in sample) < MIN_LETTERS:
        return None
    code, prob = language._identifier().classify(sample)
    return str(code) if prob >= MIN_CONFIDENCE else None


def measure(texts: list[str]) -> tuple[int, int, int, float, float, list[str]]:
    samples = [t[:SAMPLE_CHARS] for t in texts]
    t0 = time.process_time()
    screened = [looks_english(s) for s in samples]
    t1 = time.process_time()
    refs = [reference(s) for s in samples]
    t2 = time.process_time()
    other = [s for s, ok, r in zip(samples, screened, refs) if ok and r not in ("en", None)]
    unsure = sum(ok and r is None for ok, r in zip(screened, refs))
    return sum(screened), len(other), unsure, (t2 - t1) * 1000, (t1 - t0) * 1000, other


def share(sample: str) -> float | None:
    """The share of ENGLISH_WORDS in ``sample`` if it meets the screen's other conditions, else ``None``."""
    words = language._WORD.findall(sample.lower())
    hits = [w for w in words if w in language.ENGLISH_WORDS]
    letters = sum(map(len, words)) or 1
    if (
        len(words) < language.SCREEN_MIN_WORDS
        or len(set(hits)) < language.SCREEN_MIN_DISTINCT
        or "the" not in hits
        or sum(w in language.FOREIGN_WORDS for w in words) > language.SCREEN_MAX_FOREIGN * len(words)
        or sum(len(w) for w in words if w.isascii()) < language.SCREEN_MIN_ASCII * letters
    ):
        return None
    return len(hits) / len(words)


def margins(data: dict[str, list[str]]) -> None:
    """How close the share threshold is: the highest shares among samples that meet the other conditions
    but that py3langid does not call English, and how many py3langid-English samples the share keeps."""
    worst: list[tuple[float, str, str, str]] = []
    kept = total = 0
    for name, texts in data.items():
        for t in texts:
            s = t[:SAMPLE_CHARS]
            f = share(s)
            if f is None:
                continue
            r = reference(s)
            if r == "en":
                total += 1
                kept += f >= language.SCREEN_MIN_SHARE
            else:
                worst.append((f, name, str(r), s[:90]))
    worst.sort(reverse=True)
    print(f"py3langid-English samples meeting the other conditions, kept by the share: {kept}/{total}")
    for f, name, r, s in worst[:6]:
        print(f"  not English to py3langid ({r}): share {f:.3f} in {name}: {s!r}")


def main() -> int:
    t = time.process_time()
    language._identifier()
    load_ms = (time.process_time() - t) * 1000
    data = sets()
    print(f"py3langid model load: {load_ms:.0f} ms CPU (avoided when every document of a run is screened)")
    print(f"{'set':38} {'docs':>5} {'screened':>8} {'other':>5} {'unsure':>6} {'py3langid ms':>12} {'screen ms':>9}")
    bad = 0
    for name, texts in data.items():
        n, other, unsure, ref_ms, screen_ms, wrong = measure(texts)
        bad += other + unsure
        print(f"{name:38} {len(texts):5d} {n:8d} {other:5d} {unsure:6d} {ref_ms:12.0f} {screen_ms:9.1f}")
        for s in wrong[:3]:
            print("    other:", reference(s), repr(s[:160]))
    if "--margins" in sys.argv:
        margins(data)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
