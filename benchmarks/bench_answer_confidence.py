"""Is ``ask``'s ``confident`` right? Precision of confident answers and the share hedged, on public sets with
questions the corpus answers and questions it does not, split into sets the thresholds are calibrated on and
sets held out from that calibration.

Sets (every one indexed alone with the defaults: MiniLM, the default chunking, hybrid search, k = 5; ``ask``
with the offline extractive reader). An answer is *right* when its first cited passage (else its first
passage) lies in the gold span; a confident answer to an unanswerable question is wrong.

calibration:
    ``changelogs``  five projects' changelogs (benchmarks/bench_sections.py: httpx, pydantic, black, rich,
                    starlette, newest 20 versions each), 100 version questions (gold: the version's section),
                    20 versions that do not exist, 8 absent topics
    ``sotu``        Chroma's state_of_the_union (github.com/brandonstarxel/chunking_evaluation, MIT): its 76
                    questions (gold: the reference spans); unanswerable: the first 19 of each other corpus
held out:
    ``uvicorn``     encode/uvicorn ``docs/release-notes.md`` (BSD-3), a page that never names its product,
                    indexed as ``release-notes.md``: its newest 30 versions asked as the changelogs are, 4
                    versions that do not exist, the 8 absent topics
    ``fastapi``     fastapi/fastapi ``docs/en/docs/tutorial`` and ``advanced`` (MIT, 85 pages): 42 how-to
                    questions written before reading the chunks (gold: the page(s) that answer them) and
                    12 questions the pages do not answer
    ``chatlogs``    Chroma's chatlogs: its 56 questions; unanswerable: the first 14 of each other corpus
    ``wikitexts``   Chroma's wikitexts: its first 60 questions; unanswerable: the first 15 of each other corpus

Every row keeps the retrieval evidence (:class:`chunkwise.llm.evidence.Evidence`: keys, words, the two
retrievers' agreement, the margin over the next section), so ``--rows FILE`` recomputes the tables (and a
rule's precision) without retrieving again:

    python benchmarks/bench_answer_confidence.py --repos /work/.mirror --chroma ../shared/data/chroma-eval \\
        --out /tmp/confidence.json
    python benchmarks/bench_answer_confidence.py --rows /tmp/confidence.json
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

CALIBRATION = ("changelogs", "sotu")
HELD_OUT = ("uvicorn", "fastapi", "chatlogs", "wikitexts")

FASTAPI_ANSWERABLE = [
    ("How do I enable CORS so a JavaScript frontend on another origin can call my API?", "tutorial/cors"),
    (
        "How can I run a task after returning a response, like sending an email notification?",
        "tutorial/background-tasks",
    ),
    ("How do I split my application into multiple files with APIRouter?", "tutorial/bigger-applications"),
    ("How do I set a maximum length for a query parameter string?", "tutorial/query-params-str-validations"),
    (
        "How do I declare that a path parameter must be greater than or equal to 1?",
        "tutorial/path-params-numeric-validations",
    ),
    ("How do I receive an uploaded file in an endpoint?", "tutorial/request-files tutorial/request-forms-and-files"),
    ("How do I read form fields instead of JSON in a request?", "tutorial/request-forms tutorial/request-form-models"),
    ("How do I return an HTTP error with a status code and a detail message?", "tutorial/handling-errors"),
    ("How do I override a dependency during tests?", "advanced/testing-dependencies"),
    ("How do I test my app with TestClient?", "tutorial/testing"),
    ("How do I hash passwords and create JWT tokens for authentication?", "tutorial/security/oauth2-jwt"),
    ("How do I serve static files such as images and CSS from a directory?", "tutorial/static-files"),
    ("How do I run startup and shutdown code with a lifespan function?", "advanced/events advanced/testing-events"),
    ("How do I set a cookie in the response?", "advanced/response-cookies"),
    ("How do I add custom headers to a response?", "advanced/response-headers"),
    ("How do I return an HTML response?", "advanced/custom-response advanced/templates"),
    ("How do I use Jinja2 templates to render pages?", "advanced/templates"),
    ("How do I mount a Flask or other WSGI application inside FastAPI?", "advanced/wsgi"),
    ("How do I handle WebSocket connections?", "advanced/websockets advanced/testing-websockets"),
    ("How do I run the app behind a proxy that adds a path prefix like /api/v1?", "advanced/behind-a-proxy"),
    ("How do I read settings from environment variables with Pydantic Settings?", "advanced/settings"),
    (
        "How do I keep the password out of the returned data with an output model?",
        "tutorial/response-model tutorial/extra-models",
    ),
    (
        "How do I make a path operation return status code 201 Created?",
        "tutorial/response-status-code advanced/response-change-status-code",
    ),
    ("How do I add an example to the JSON schema of a request body?", "tutorial/schema-extra-example"),
    ("How do I connect to a SQL database with SQLModel?", "tutorial/sql-databases"),
    ("How do I update only some fields of an item with a PATCH request?", "tutorial/body-updates"),
    ("How do I convert a Pydantic model to a JSON-compatible dict?", "tutorial/encoder"),
    (
        "How do I add a middleware that measures the processing time of each request?",
        "tutorial/middleware advanced/middleware",
    ),
    (
        "How do I add tags and a description to the OpenAPI docs?",
        "tutorial/metadata tutorial/path-operation-configuration",
    ),
    ("How do I use a class as a dependency?", "tutorial/dependencies/classes-as-dependencies"),
    (
        "How do I close a database session after the response in a dependency with yield?",
        "tutorial/dependencies/dependencies-with-yield",
    ),
    (
        "How do I apply a dependency to every path operation of the application?",
        "tutorial/dependencies/global-dependencies tutorial/dependencies/dependencies-in-path-operation-decorators tutorial/bigger-applications",
    ),
    ("How do I require OAuth2 scopes for some endpoints?", "advanced/security/oauth2-scopes"),
    ("How do I use HTTP Basic authentication?", "advanced/security/http-basic-auth"),
    (
        "How do I read a header such as User-Agent in a path operation?",
        "tutorial/header-params tutorial/header-param-models",
    ),
    ("How do I declare a nested model with a list of sub-models in a request body?", "tutorial/body-nested-models"),
    ("How do I access the Request object directly?", "advanced/using-request-directly"),
    ("How do I generate a TypeScript client from the OpenAPI schema?", "advanced/generate-clients"),
    ("How do I run my app from Python code so I can debug it in my editor?", "tutorial/debugging"),
    ("How do I restrict a path parameter to predefined values with an Enum?", "tutorial/path-params"),
    ("How do I stream a large file in the response?", "advanced/custom-response advanced/stream-data"),
    (
        "How do I get the current user from the token in a dependency?",
        "tutorial/security/get-current-user tutorial/security/simple-oauth2 tutorial/security/oauth2-jwt",
    ),
]
FASTAPI_UNANSWERABLE = [
    "How do I bake sourdough bread?",
    "What is the capital of Australia?",
    "How do I configure the Django admin site?",
    "How do I create a React component with hooks?",
    "How do I configure horizontal pod autoscaling in Kubernetes?",
    "How do I write a Rust macro?",
    "How do I set up streaming replication in PostgreSQL?",
    "How do I train a neural network with PyTorch?",
    "How do I send SMS messages with Twilio?",
    "How do I deploy FastAPI with a Helm chart?",
    "How do I cache responses in Redis?",
    "How do I limit the number of requests per client IP address?",
]


class Question:
    def __init__(self, text: str, answerable: bool, right: Callable[[object], bool] | None = None):
        self.text, self.answerable, self.right = text, answerable, right


def _git_show(repos: Path, repo: str, path: str) -> str:
    git = repos / repo.replace("/", "+") / "repo"
    return subprocess.run(
        ["git", "-C", str(git), "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
    ).stdout


def _in_span(source_name: str, spans: list[tuple[int, int]]):
    def right(p) -> bool:
        return (
            Path(str(p.source)).name == source_name
            and p.start is not None
            and any(p.start < b and p.end > a for a, b in spans)
        )

    return right


def versioned(name: str, product: str, text: str, full: str, corpus: Path, versions: int) -> list[Question]:
    from bench_sections import cut, questions_for

    text, sections = cut(text, versions)
    (corpus / name).write_text(text, encoding="utf-8")
    out = []
    for q in questions_for(product, full, text, sections):
        gold = [q.gold] if q.gold else []
        out.append(Question(q.text, q.gold is not None, _in_span(name, gold) if gold else None))
    return out


def set_changelogs(args, corpus: Path) -> list[Question]:
    from bench_sections import ABSENT_TOPICS, SOURCES

    out = []
    for product, (repo, path) in SOURCES.items():
        full = _git_show(args.repos, repo, path)
        out += versioned(f"{product}-changelog.md", product, full, full, corpus, 20)
    return out + [Question(t, False) for t in ABSENT_TOPICS]


def set_uvicorn(args, corpus: Path) -> list[Question]:
    from bench_sections import ABSENT_TOPICS

    full = _git_show(args.repos, "encode/uvicorn", "docs/release-notes.md")
    return versioned("release-notes.md", "uvicorn", full, full, corpus, 30) + [
        Question(t, False) for t in ABSENT_TOPICS
    ]


def set_fastapi(args, corpus: Path) -> list[Question]:
    git = args.repos / "fastapi+fastapi" / "repo"
    names = subprocess.run(
        [
            "git",
            "-C",
            str(git),
            "ls-tree",
            "-r",
            "--name-only",
            "HEAD",
            "docs/en/docs/tutorial",
            "docs/en/docs/advanced",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for n in names:
        rel = n.removeprefix("docs/en/docs/")
        dest = corpus / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(_git_show(args.repos, "fastapi/fastapi", n), encoding="utf-8")

    def gold_pages(pages: str):
        wanted = {str(corpus / f"{p}.md") for p in pages.split()}
        return lambda p: str(p.source) in wanted

    return [Question(q, True, gold_pages(pages)) for q, pages in FASTAPI_ANSWERABLE] + [
        Question(q, False) for q in FASTAPI_UNANSWERABLE
    ]


def chroma_set(name: str, own: int | None, per_other: int):
    def make(args, corpus: Path) -> list[Question]:
        rows = list(csv.DictReader((args.chroma / "questions_df.csv").open(encoding="utf-8")))
        (corpus / f"{name}.md").write_text(
            (args.chroma / "corpora" / f"{name}.md").read_text(encoding="utf-8"), encoding="utf-8"
        )
        mine = [r for r in rows if r["corpus_id"] == name][:own]
        out = [
            Question(
                r["question"],
                True,
                _in_span(f"{name}.md", [(x["start_index"], x["end_index"]) for x in json.loads(r["references"])]),
            )
            for r in mine
        ]
        for other in sorted({r["corpus_id"] for r in rows} - {name}):
            out += [Question(r["question"], False) for r in rows if r["corpus_id"] == other][:per_other]
        return out

    return make


SETS = {
    "changelogs": set_changelogs,
    "sotu": chroma_set("state_of_the_union", None, 19),
    "uvicorn": set_uvicorn,
    "fastapi": set_fastapi,
    "chatlogs": chroma_set("chatlogs", None, 14),
    "wikitexts": chroma_set("wikitexts", 60, 15),
}


def run_set(name: str, args) -> list[dict]:
    from chunkwise import Index

    work = Path(tempfile.mkdtemp(prefix=f"chunkwise-confidence-{name}-"))
    corpus = work / "corpus"
    corpus.mkdir()
    qs = SETS[name](args, corpus)
    rows = []
    import chunkwise.llm.answer as answer_mod

    seen: dict = {}
    relevance = answer_mod.relevance

    def spy(index, question, hits, rescored):  # every retrieved hit with its cosine, kept for the rows
        sims = relevance(index, question, hits, rescored)
        seen["hits"] = [
            {
                "id": h.chunk.id,
                "source": Path(str(h.source)).name,
                "section": list(h.section),
                "start": h.start,
                "sim": round(float(s), 4),
                "score": round(float(h.score), 4),
                "vrank": h.vector_rank,
                "brank": h.bm25_rank,
            }
            for h, s in zip(hits, sims)
        ]
        return sims

    answer_mod.relevance = spy
    with Index(work / "index.db") as index:
        t0 = time.perf_counter()
        index.add(str(corpus))
        print(f"{name}: indexed {index.count()} chunks in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        for q in qs:
            ans = index.ask(q.text)
            cited = ans.cited_passages or ans.passages[:1]
            right = bool(q.answerable and cited and q.right is not None and q.right(cited[0]))
            d = ans.to_dict()
            rows.append(
                {
                    "set": name,
                    "question": q.text,
                    "answerable": q.answerable,
                    "right": right,
                    "confident": ans.confident,
                    "best": ans.best_score,
                    "evidence": d["evidence"],
                    "hits": seen.pop("hits", []),
                    "given": [getattr(p.origin, "chunk", p.origin).id for p in ans.passages if p.origin is not None],
                    "cited": ans.citations,
                    "answer": ans.text[:160],
                }
            )
    return rows


# -- calibration and tables --------------------------------------------------------------------------------


def calibration_half(row: dict) -> bool:
    """Half the questions of every set calibrate the thresholds (a stable hash of the set and the question);
    the other half is what the report is made of."""
    return int(hashlib.sha1(f"{row['set']}|{row['question']}".encode()).hexdigest(), 16) % 2 == 0


def rule(min_agreement=None, min_margin=None) -> Callable[[dict], bool]:
    """``ask``'s own decision (:func:`chunkwise.llm.answer.is_confident`) on a row's evidence, with these
    thresholds (None: the signal is not used; both None: the keys, words and cosine alone)."""
    from chunkwise.llm.answer import is_confident
    from chunkwise.llm.evidence import Evidence

    def confident(r: dict) -> bool:
        ev = Evidence.from_dict(r["evidence"])
        return ev is not None and is_confident(r["best"], ev, min_agreement=min_agreement, min_margin=min_margin)

    return confident


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def scores(rows: list[dict], confident: Callable[[dict], bool]) -> dict:
    conf = [r for r in rows if confident(r)]
    good = sum(r["answerable"] and r["right"] for r in conf)
    ans = [r for r in rows if r["answerable"]]
    un = [r for r in rows if not r["answerable"]]
    hedged_ans = sum(not confident(r) for r in ans)
    return {
        "n": len(rows),
        "answerable": len(ans),
        "unanswerable": len(un),
        "confident": len(conf),
        "precision": good / len(conf) if conf else math.nan,
        "precision_ci": wilson(good, len(conf)),
        "hedged": 1 - len(conf) / len(rows) if rows else math.nan,
        "hedged_ci": wilson(len(rows) - len(conf), len(rows)),
        "hedged_answerable": hedged_ans / len(ans) if ans else math.nan,
        "confident_wrong_answerable": sum(confident(r) and not r["right"] for r in ans),
        "confident_unanswerable": sum(confident(r) for r in un),
    }


def paired_delta(
    rows, before, after, reps: int = 2000, seed: int = 0, pick: Callable[[dict, int], bool] | None = None
) -> dict[str, tuple[float, float, float]]:
    """after - before (precision of confident; share of answerable questions hedged), each with a 95 %
    bootstrap interval over questions, resampled in pairs. ``pick(row, 0 or 1)``: whether the answer of
    the code after (0) or before (1) is right, when the two codes answered differently (default: the row's
    one ``right``)."""
    rng = random.Random(seed)
    right = pick or (lambda r, which: r["right"])

    def both(rs):
        out = []
        for which, f in ((1, before), (0, after)):
            c = [r for r in rs if f(r)]
            ans = [r for r in rs if r["answerable"]]
            out.append(
                (
                    sum(r["answerable"] and right(r, which) for r in c) / len(c) if c else math.nan,
                    sum(not f(r) for r in ans) / len(ans) if ans else math.nan,
                )
            )
        return out[1][0] - out[0][0], out[1][1] - out[0][1]

    point = both(rows)
    draws = [both([rows[rng.randrange(len(rows))] for _ in rows]) for _ in range(reps)]
    res = {}
    for i, name in enumerate(("precision", "hedged_answerable")):
        ds = sorted(d[i] for d in draws if not math.isnan(d[i]))
        res[name] = (point[i], ds[int(0.025 * len(ds))], ds[int(0.975 * len(ds)) - 1])
    return res


def calibrate(rows: list[dict]) -> str:
    """Precision and answerable-hedged share on the calibration half for each threshold."""
    part = [r for r in rows if calibration_half(r)]
    lines = [
        "| min agreement | min margin | confident | precision of confident | answerable hedged | confident, unanswerable |",
        "|---|---|---|---|---|---|",
    ]
    for a in (None, 1 / 10, 1 / 5, 1 / 4, 1 / 3, 1 / 2, 1.0):
        for m in (None, -0.05, 0.0, 0.03):
            s = scores(part, rule(a, m))
            lines.append(
                f"| {'-' if a is None else f'{a:.2f}'} | {'-' if m is None else m} | {s['confident']} | "
                f"{s['precision']:.3f} | {s['hedged_answerable']:.3f} | {s['confident_unanswerable']} |"
            )
    return "\n".join(lines)


def table(rows: list[dict], rules: dict[str, Callable[[dict], bool]]) -> str:
    out = [
        "| set | rule | precision of confident [95 %] (n confident) | hedged, all [95 %] | answerable hedged | confident & wrong, answerable | confident, unanswerable |",
        "|---|---|---|---|---|---|---|",
    ]
    names = [n for n in [*CALIBRATION, *HELD_OUT] if any(r["set"] == n for r in rows)]
    for name in [*names, "all"]:
        rs = [r for r in rows if r["set"] == name or name == "all"]
        for label, f in rules.items():
            s = scores(rs, f)
            lo, hi = s["precision_ci"]
            hlo, hhi = s["hedged_ci"]
            out.append(
                f"| {name} | {label} | {s['precision']:.2f} [{lo:.2f}, {hi:.2f}] ({s['confident']}) | "
                f"{s['hedged']:.2f} [{hlo:.2f}, {hhi:.2f}] | {s['hedged_answerable']:.2f} | "
                f"{s['confident_wrong_answerable']} of {s['answerable']} | {s['confident_unanswerable']} of {s['unanswerable']} |"
            )
    return "\n".join(out)


def report(rows: list[dict], before: list[dict] | None = None) -> str:
    from chunkwise.llm.answer import MIN_AGREEMENT, MIN_MARGIN

    rules = {"keys + words + cosine": rule(None, None), "+ agreement (shipped)": rule(MIN_AGREEMENT, MIN_MARGIN)}
    held = [r for r in rows if not calibration_half(r)]
    parts = [
        "## Calibration half: thresholds\n",
        calibrate(rows),
        "\n## Held-out half, per set\n",
        table(held, rules),
        "\n## Margin (not adopted), held-out half\n",
        table(held, {"margin >= 0": rule(None, 0.0), "margin >= -0.05": rule(None, -0.05)}),
    ]
    if before is not None:
        parts += [
            "\n## Held-out half: the code before this work (its recorded answers), beside the shipped rule\n",
            side_by_side(before, held, rules["+ agreement (shipped)"]),
        ]
    parts += ["\n## Every question (both halves; the calibration half is in-sample)\n", table(rows, rules)]
    d = paired_delta(held, *rules.values())
    parts.append(
        "\nheld-out half, all sets, shipped - before (paired bootstrap, 95 %): "
        + "; ".join(f"{k} {p:+.3f} [{lo:+.3f}, {hi:+.3f}]" for k, (p, lo, hi) in d.items())
    )
    for label, f in rules.items():
        mism = sum(r["confident"] != f(r) for r in rows)
        parts.append(f"\nrows whose recorded `confident` differs from rule '{label}' recomputed: {mism} of {len(rows)}")
    return "\n".join(parts)


def side_by_side(before: list[dict], held: list[dict], shipped: Callable[[dict], bool]) -> str:
    """The held-out half as the code before this work answered it (``--before`` rows, their own
    ``confident`` and ``right``) and as the shipped code does."""
    old = [r for r in before if not calibration_half(r)]
    out = [
        "| set | code | precision of confident [95 %] (n confident) | hedged, all [95 %] | answerable hedged | confident & wrong, answerable | confident, unanswerable |",
        "|---|---|---|---|---|---|---|",
    ]
    names = [n for n in [*CALIBRATION, *HELD_OUT] if any(r["set"] == n for r in held)]
    for name in [*names, "all"]:
        for label, rs, f in (
            ("before", [r for r in old if name in (r["set"], "all")], lambda r: r["confident"]),
            ("shipped", [r for r in held if name in (r["set"], "all")], shipped),
        ):
            s = scores(rs, f)
            lo, hi = s["precision_ci"]
            hlo, hhi = s["hedged_ci"]
            out.append(
                f"| {name} | {label} | {s['precision']:.2f} [{lo:.2f}, {hi:.2f}] ({s['confident']}) | "
                f"{s['hedged']:.2f} [{hlo:.2f}, {hhi:.2f}] | {s['hedged_answerable']:.2f} | "
                f"{s['confident_wrong_answerable']} of {s['answerable']} | {s['confident_unanswerable']} of {s['unanswerable']} |"
            )
    pairs = {(r["set"], r["question"]): r for r in old}
    both = [
        dict(r, old_confident=pairs[k]["confident"], old_right=pairs[k]["right"])
        for r in held
        if (k := (r["set"], r["question"])) in pairs
    ]
    # the two codes' answers side by side: "right" is each code's own
    d = paired_delta(
        [dict(r, right=(r["right"], r["old_right"])) for r in both],
        lambda r: r["old_confident"],
        shipped,
        pick=lambda r, which: r["right"][which],
    )
    out.append(
        f"\nheld-out half, all sets, shipped - before, paired bootstrap over the {len(both)} questions (95 %): "
        + "; ".join(f"{k} {p:+.3f} [{lo:+.3f}, {hi:+.3f}]" for k, (p, lo, hi) in d.items())
    )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--repos", type=Path, help="folder of bare clones <owner>+<name>/repo (changelogs, uvicorn, fastapi)"
    )
    ap.add_argument("--chroma", type=Path, help="Chroma's chunking-evaluation folder (corpora/, questions_df.csv)")
    ap.add_argument("--set", action="append", choices=list(SETS), help="sets to run (default: all)")
    ap.add_argument("--rows", type=Path, help="recompute the tables from a previous --out instead of running")
    ap.add_argument("--out", type=Path, help="write every row here (JSON)")
    ap.add_argument(
        "--before", type=Path, help="rows an earlier version of the code wrote: compared on the held-out half"
    )
    args = ap.parse_args()
    if args.rows:
        rows = json.loads(args.rows.read_text(encoding="utf-8"))["rows"]
    else:
        rows = []
        chroma = {"sotu", "chatlogs", "wikitexts"}
        given = [n for n in SETS if (n in chroma and args.chroma) or (n not in chroma and args.repos)]
        names = args.set or given
        if not names or (
            args.set and any((n in chroma and not args.chroma) or (n not in chroma and not args.repos) for n in names)
        ):
            ap.error(
                "the changelogs, uvicorn and fastapi sets need --repos; sotu, chatlogs and wikitexts need --chroma"
            )
        for name in names:
            rows += run_set(name, args)
            if args.out:
                args.out.write_text(json.dumps({"rows": rows}, indent=1), encoding="utf-8")
    before = json.loads(args.before.read_text(encoding="utf-8"))["rows"] if args.before else None
    print(report(rows, before))


if __name__ == "__main__":
    main()
