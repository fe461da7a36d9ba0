"""What a ``chunkwise serve`` request may ask, checked before any work: the request bodies (pydantic
models that refuse unknown fields), the size limits of text, uploads and bodies, the parameters that would
make the server read files, and the ``/view`` form. Every refusal is a :class:`RequestError` with its
status; :mod:`.app` turns it into ``{"error": message}``."""

import json
from pathlib import PurePath
from typing import Any

from ..errors import InputError
from ..strategies import DEFAULT_STRATEGY

#: default upload limit (bytes): a 100-page PDF is a few MB
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
#: longest pasted text (characters)
MAX_TEXT_CHARS = 2_000_000
#: bytes of a request besides its document (JSON keys, parameters, multipart headers)
BODY_SLACK = 64 * 1024
#: the body limit of every route not named in :func:`body_limits` (``/search``'s query is 2,000 characters)
SMALL_BODY_BYTES = BODY_SLACK
#: accepted upload extensions (or none); anything else is refused before it is read
UPLOAD_TYPES = (".txt", ".text", ".md", ".markdown", ".html", ".htm", ".pdf", ".vtt", ".srt", "")
FORBIDDEN_PARAMS = ("embedder",)


class RequestError(Exception):
    """A request the server refuses: ``status`` and a message for the person who sent it."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def request_models() -> tuple[Any, Any, Any, Any]:
    """The request bodies. Unknown fields are refused (422 naming them): a misplaced ``max_tokens`` at the
    top level used to be ignored in silence, chunking at the default size."""
    from pydantic import BaseModel, ConfigDict, Field, create_model

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")

    class StrategySpec(Strict):
        strategy: str = Field(DEFAULT_STRATEGY, description="a strategy name (see GET /health for the list)")
        params: dict[str, Any] = Field(
            default_factory=dict, description='strategy parameters, e.g. {"max_tokens": 128}'
        )

    class ChunkRequest(Strict):
        # the length is checked by the route, for chunkwise's own 413 message; the schema still says it
        text: str = Field(..., description="the document text", json_schema_extra={"maxLength": MAX_TEXT_CHARS})
        strategy: str = DEFAULT_STRATEGY
        params: dict[str, Any] = Field(default_factory=dict, description="strategy parameters (max_tokens, ...)")
        compare: list[StrategySpec] = Field(
            default_factory=list, max_length=3, description="more strategies, side by side (up to 3)"
        )
        explain: bool = Field(False, description="include the per-sentence rows of semantic strategies")

    class Retrieval(Strict):
        k: int = Field(5, ge=1, le=100, strict=True)  # an int, as Index.search takes it (not 5.0, not true)

        def options(self) -> dict[str, Any]:
            """``k`` and the retrieval settings the request gives, each checked by its declaration and
            together by the combination rules (400 naming it, in ``Index.search``'s and the CLI's words); the
            ones it leaves out take ``Index.search``'s defaults, as ``chunkwise search``."""
            from ..errors import ConfigError
            from ..pipeline.config import SETTINGS, PipelineConfig, stage_names

            if (getattr(self, "rerank", None) or "").strip().startswith("cross:"):
                raise RequestError(400, "rerank 'cross:PATH' names a file; only maxsim or llm over HTTP")
            given = {n: getattr(self, n) for n in stage_names("search") if getattr(self, n) is not None}
            try:
                checked = {n: SETTINGS[n].check(n, v) for n, v in given.items()}
                PipelineConfig().overridden(("search",), checked, "search")  # how they combine: fusion needs hybrid
            except ConfigError as exc:
                raise RequestError(400, str(exc)) from None
            return {"k": self.k, **checked}

    Retrieval = create_model("Retrieval", __base__=Retrieval, **retrieval_fields())  # type: ignore[misc]

    class SearchRequest(Retrieval):
        query: str = Field(..., min_length=1, max_length=2000)

    class AskRequest(Retrieval):
        question: str = Field(..., min_length=1, max_length=2000)
        min_score: float | None = Field(None, strict=True, description="cosine threshold (default: ask's, 0.15)")

    return StrategySpec, ChunkRequest, SearchRequest, AskRequest


#: what a request may ask of a retrieval setting beyond its declaration's check: the server's own limits
#: (a client cannot make it rerank more than 100 candidates, or send a 1 MB reranker name)
HTTP_LIMITS: dict[str, dict[str, Any]] = {
    "rerank": {"max_length": 100},
    "rerank_depth": {"ge": 1, "le": 100},
}


def retrieval_fields() -> dict[str, Any]:
    """A request field for every retrieval setting (stage ``"search"`` of :class:`~chunkwise.pipeline.
    PipelineConfig`): typed by its declared default, described by its help, ``None`` when not given (the
    declaration's default then holds), bounded by :data:`HTTP_LIMITS`; a setting declared for ``search``
    reaches ``/search`` and ``/ask`` with nothing written here."""
    from pydantic import Field

    from ..pipeline.config import SETTINGS, stage_names

    out: dict[str, Any] = {}
    for name in stage_names("search"):
        st = SETTINGS[name]
        kind = str if st.default is None else type(st.default)
        limits: dict[str, Any] = dict(HTTP_LIMITS.get(name, {}))
        if st.switch or kind in (int, float):
            # a JSON true or false, not "yes"; an int, not 60.0 or true (refused by the setting's check
            # through every other front end); a number, not true
            limits["strict"] = True
        field = Field(None, description=st.field_help(), **limits)
        out[name] = (kind | None, field)
    return out


def check_text_length(text: str) -> None:
    """The documented paste limit, with its own message (not a parser's part-size error)."""
    if len(text) > MAX_TEXT_CHARS:
        raise RequestError(413, f"text too long ({len(text):,} characters; the limit is {MAX_TEXT_CHARS:,})")


def body_limits(max_upload_bytes: int) -> dict[str, int]:
    """Largest body per route, in bytes: ``/view`` takes a file and the longest text (4 UTF-8 bytes a
    character, as a form sends it), ``/chunk`` the longest text as JSON (6 bytes a character: ``\\uXXXX``
    escapes); everything else :data:`SMALL_BODY_BYTES`."""
    return {
        "/view": max_upload_bytes + 4 * MAX_TEXT_CHARS + BODY_SLACK,
        "/chunk": 6 * MAX_TEXT_CHARS + BODY_SLACK,
    }


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    """Refuse parameters that would make the server read files (``embedder``, ``tokenizer="hf:PATH"``)."""
    for key in params:
        if key in FORBIDDEN_PARAMS:
            raise RequestError(400, f"parameter {key!r} cannot be set over HTTP (the server chooses it)")
    tok = params.get("tokenizer")
    if isinstance(tok, str) and tok.startswith("hf:"):
        raise RequestError(400, "tokenizer 'hf:PATH' names a file; only built-in tokenizers over HTTP")
    return params


def make_strategies(specs: list[tuple[str, dict[str, Any]]], embedder=None) -> list:
    """Validated strategies from ``(name, params)``; the server's embedder for the semantic ones."""
    from ..strategies.factory import make_strategy

    if not 1 <= len(specs) <= 4:
        raise RequestError(400, f"give 1 to 4 strategies, got {len(specs)}")
    out = []
    for name, params in specs:
        if not isinstance(params, dict):
            raise RequestError(400, "params must be an object")
        out.append(make_strategy(str(name), check_params(params), embedder))
    return out


def upload_document(data: bytes, filename: str | None, limit: int):
    """A document from uploaded bytes: type and size checked, the name used only as a label."""
    from ..formats import load_bytes

    name = PurePath(filename or "upload.txt").name or "upload.txt"
    suffix = PurePath(name).suffix.lower()
    if suffix not in UPLOAD_TYPES:
        raise RequestError(
            415, f"{name}: unsupported file type {suffix!r}; upload {', '.join(t for t in UPLOAD_TYPES if t)}"
        )
    if len(data) > limit:
        raise RequestError(413, f"{name}: file too large ({len(data):,} bytes; the limit is {limit:,})")
    try:
        return load_bytes(data, source=name, name=name, max_bytes=limit)
    except InputError as exc:
        status = 415 if "binary" in str(exc) else 400
        raise RequestError(status, str(exc)) from None


def validation_message(errors, path: str = "") -> str:
    """pydantic's errors as one line, an unknown field named as such (with where a strategy parameter
    belongs, for ``/chunk`` and ``/view``)."""
    parts = []
    for e in list(errors)[:5]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        if e.get("type") == "extra_forbidden":
            hint = ' (strategy parameters go in "params")' if path in ("/chunk", "/view") else ""
            parts.append(f"unknown field {loc!r}{hint}")
        else:
            parts.append(f"{loc or 'body'}: {e.get('msg', 'invalid')}")
    return "; ".join(parts)


#: the page's default column
DEFAULT_SPECS = json.dumps([{"strategy": DEFAULT_STRATEGY}])


async def read_form(request):
    """The ``/view`` form, its text field allowed the paste limit in UTF-8 (Starlette's default part limit,
    1 MB, cut pastes at about half the documented length with a parser's message)."""
    from starlette.exceptions import HTTPException as StarletteHTTPException

    try:
        return await request.form(max_files=1, max_fields=8, max_part_size=4 * MAX_TEXT_CHARS + 16)
    except StarletteHTTPException as exc:
        if "maximum size" in str(exc.detail):
            raise RequestError(413, f"text too long (the limit is {MAX_TEXT_CHARS:,} characters)") from None
        raise RequestError(400, f"invalid form: {exc.detail}") from None


def view_specs(strategies: str, spec_model) -> list[tuple[str, dict[str, Any]]]:
    """The ``strategies`` field as ``(name, params)`` pairs, each checked like ``/chunk``'s ``compare``."""
    from pydantic import ValidationError

    try:
        raw = json.loads(strategies)
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, list):
        raise RequestError(400, 'strategies must be a JSON list of {"strategy": NAME, "params": {...}}')
    out = []
    for n, item in enumerate(raw):
        try:
            spec = spec_model.model_validate(item)
        except ValidationError as exc:
            errors = [{**e, "loc": (f"strategies[{n}]", *e.get("loc", ()))} for e in exc.errors()]
            raise RequestError(422, "invalid request: " + validation_message(errors, "/view")) from None
        out.append((spec.strategy, spec.params))
    return out


def pasted_document(text: str):
    """The ``/view`` form's pasted text as a document: refused when empty or over the paste limit."""
    from ..document import Document

    if not text.strip():
        raise RequestError(400, "paste some text or choose a file")
    check_text_length(text)
    # browsers send form text with CRLF line breaks (multipart/form-data rules): undo that
    return Document(text.replace("\r\n", "\n"), source="<pasted>")
