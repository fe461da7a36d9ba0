"""The ``llm`` question generator of :mod:`.questions`: a chat model writes a question and the excerpt that
answers it, in rotating styles, and the excerpt is located in its passage (:func:`locate`: exact, then
normalised, then a fuzzy alignment); a question whose excerpt cannot be found is rejected."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..document import Document
from .question_sampling import Passage, Question, QuestionFilter

#: question styles the LLM generator rotates through
STYLES = {
    "factoid": "a short factual question (who, what, when, where, how many)",
    "why": "a why or how question",
    "multi": "a question whose answer needs two or more sentences of the passage together",
}
#: passages given to the LLM are longer (it picks its own excerpt inside)
LLM_PASSAGE_CHARS = 1500

PROMPT = (
    'Passage from the document {doc!r}:\n"""\n{passage}\n"""\n\n'
    "Write {style} that a user of these documents would type into a search box and that this passage "
    "answers. Use your own words; do not copy phrases from the passage, and do not mention 'the passage'. "
    "Then copy, character for character, the shortest excerpt of the passage (whole sentences) that "
    'answers it.\nAnswer with JSON only: {{"question": "...", "excerpt": "..."}}'
)
SYSTEM = "You write evaluation questions for a search engine over a collection of documents."


def _norm_map(text: str) -> tuple[str, list[int]]:
    """``text`` case-folded with whitespace runs as one space, and each output character's input offset."""
    out, idx = [], []
    prev_space = True
    for i, ch in enumerate(text):
        if ch.isspace():
            if not prev_space:
                out.append(" ")
                idx.append(i)
            prev_space = True
            continue
        for c in ch.casefold():
            out.append(c)
            idx.append(i)
        prev_space = False
    return "".join(out), idx


def locate(excerpt: str, text: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
    """Where ``excerpt`` lies in ``text[start:end]``: exactly; else case- and whitespace-normalised; else
    the span of a fuzzy alignment (difflib) that matches at least 90 % of the excerpt's characters and is
    at most 20 % longer than it. ``None`` when none of the three finds it."""
    end = len(text) if end is None else end
    excerpt = excerpt.strip()
    if not excerpt:
        return None
    i = text.find(excerpt, start, end)
    if i >= 0:
        return i, i + len(excerpt)
    hay, idx = _norm_map(text[start:end])
    needle, _ = _norm_map(excerpt)
    needle = needle.strip()
    if not needle or not hay:
        return None
    j = hay.find(needle)
    if j >= 0:
        return start + idx[j], start + idx[j + len(needle) - 1] + 1
    sm = difflib.SequenceMatcher(None, hay, needle, autojunk=False)
    blocks = [b for b in sm.get_matching_blocks() if b.size >= 3]
    if not blocks:
        return None
    matched = sum(b.size for b in blocks)
    a, z = blocks[0].a, blocks[-1].a + blocks[-1].size
    if matched < 0.9 * len(needle) or z - a > 1.2 * len(needle):
        return None
    return start + idx[a], start + idx[z - 1] + 1


def _parse_answer(answer: str) -> tuple[str, str] | None:
    m = re.search(r"\{.*\}", answer, re.S)
    if not m:
        return None
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    q, ex = obj.get("question"), obj.get("excerpt")
    if not isinstance(q, str) or not isinstance(ex, str) or not q.strip() or not ex.strip():
        return None
    return " ".join(q.split()), ex


def llm_questions(
    docs: dict[str, Document],
    order: list[Passage],
    n: int,
    flt: QuestionFilter,
    client: Any,
    styles: Sequence[str],
    concurrency: int,
    progress: Callable[[str], None],
) -> None:
    def ask(item: tuple[Passage, str]) -> str:
        p, style = item
        prompt = PROMPT.format(doc=p.doc, passage=docs[p.doc].text[p.start : p.end], style=STYLES[style])
        return client.complete(
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
            answer_tokens=400,
            temperature=0.0,
        )

    items = [(p, styles[i % len(styles)]) for i, p in enumerate(order)]
    pos = 0
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        while pos < len(items) and len(flt.kept) < n:
            batch = items[pos : pos + max(concurrency, n - len(flt.kept))]
            pos += len(batch)
            for (p, style), answer in zip(batch, pool.map(ask, batch)):  # an endpoint failure raises here
                if len(flt.kept) >= n:
                    break
                parsed = _parse_answer(answer)
                if parsed is None:
                    flt.offer(None, "", "answer not JSON with a question and an excerpt")
                    continue
                query, excerpt = parsed
                span = locate(excerpt, docs[p.doc].text, p.start, p.end)
                if span is None:
                    flt.offer(None, "", "excerpt not found in the passage")
                    continue
                text = docs[p.doc].text
                flt.offer(Question(query, p.doc, span[0], span[1], "llm", style), text[span[0] : span[1]])
            progress(f"questions: {len(flt.kept)}/{n} kept after {pos} passages")
