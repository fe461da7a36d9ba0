"""``chunkwise serve``: the report's view, live, plus search and a JSON API (FastAPI, extra ``serve``).

Routes: ``GET /`` the page (paste text or upload a file, pick strategies and parameters, see the cuts;
search the index with highlighted hits), ``POST /view`` (the page's columns for a text or an upload),
``POST /chunk`` and ``POST /search`` (JSON API), ``GET /health``; ``/docs`` and ``/openapi.json`` describe
them. Safety: requests never name files on this machine (text and uploads are read from the request; the
index is the one given on the command line; ``embedder`` and ``hf:`` tokenizer paths are refused), uploads
have a size limit and a type check, and every error is JSON ``{"error": message}`` with a 4xx status, never
a traceback (an unexpected failure is a 500 naming only the exception type).
"""


import contextlib
import json
import re
from pathlib import PurePath
from typing import Any

from ..errors import ChunkwiseError, ConfigError, InputError

#: default upload limit (bytes): a 100-page PDF is a few MB
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
#: longest pasted text (characters)
MAX_TEXT_CHARS = 2_000_000
#: accepted upload extensions (or none); anything else is refused before it is read
UPLOAD_TYPES = (".txt", ".text", ".md", ".markdown", ".html", ".htm", ".pdf", ".vtt", ".srt", "")
FORBIDDEN_PARAMS = ("embedder",)


class RequestError(Exception):
    """A request the server refuses: ``status`` and a message for the person who sent it."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _models() -> tuple[Any, Any, Any]:
    from pydantic import BaseModel, Field

    class StrategySpec(BaseModel):
        strategy: str = Field("recursive", description="a strategy name (see GET /health for the list)")
        params: dict[str, Any] = Field(default_factory=dict,
                                       description="strategy parameters, e.g. {\"max_tokens\": 128}")

    class ChunkRequest(BaseModel):
        text: str = Field(..., max_length=MAX_TEXT_CHARS, description="the document text")
        strategy: str = "recursive"
        params: dict[str, Any] = Field(default_factory=dict)
        compare: list[StrategySpec] = Field(default_factory=list, max_length=3,
                                            description="more strategies, side by side (up to 3)")
        explain: bool = Field(False, description="include the per-sentence rows of semantic strategies")

    class SearchRequest(BaseModel):
        query: str = Field(..., min_length=1, max_length=2000)
        k: int = Field(5, ge=1, le=100)
        hybrid: bool = False

    return StrategySpec, ChunkRequest, SearchRequest


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
    from ..strategies import SEMANTIC_STRATEGIES, get_strategy

    if not 1 <= len(specs) <= 4:
        raise RequestError(400, f"give 1 to 4 strategies, got {len(specs)}")
    out = []
    for name, params in specs:
        if not isinstance(params, dict):
            raise RequestError(400, "params must be an object")
        params = dict(check_params(params))
        if name in SEMANTIC_STRATEGIES and embedder is not None:
            params["embedder"] = embedder
        strategy = get_strategy(str(name), **params)
        strategy.validate()
        out.append(strategy)
    return out


#: words not worth marking in a hit
STOPWORDS = frozenset("the and for are but not you all any can had her was one our out has how its may who "
                      "did get him his she too use that with have this will your from they what when which "
                      "there their about would these other into more some than then them were been does".split())


def highlights(text: str, query: str) -> list[list[int]]:
    """Character spans of the query's words (3+ letters, not stop words; a word also marks its longer
    forms: "feed" marks "feeding") in ``text``, for ``<mark>`` in the page."""
    words = sorted({w.lower() for w in re.findall(r"\w{3,}", query)} - STOPWORDS, key=len, reverse=True)
    if not words:
        return []
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\w*", re.IGNORECASE)
    return [[m.start(), m.end()] for m in pattern.finditer(text)]


def upload_document(data: bytes, filename: str | None, limit: int):
    """A document from uploaded bytes: type and size checked, the name used only as a label."""
    from ..formats import load_bytes

    name = PurePath(filename or "upload.txt").name or "upload.txt"
    suffix = PurePath(name).suffix.lower()
    if suffix not in UPLOAD_TYPES:
        raise RequestError(415, f"{name}: unsupported file type {suffix!r}; upload "
                                f"{', '.join(t for t in UPLOAD_TYPES if t)}")
    if len(data) > limit:
        raise RequestError(413, f"{name}: file too large ({len(data):,} bytes; the limit is {limit:,})")
    try:
        return load_bytes(data, source=name, name=name, max_bytes=limit)
    except InputError as exc:
        status = 415 if "binary" in str(exc) else 400
        raise RequestError(status, str(exc)) from None


def create_app(db: str | None = None, *, uri: str | None = None, collection: str | None = None,
               embedder=None, max_upload_bytes: int = MAX_UPLOAD_BYTES):
    """The FastAPI application. ``db``/``uri`` name the index for ``/search`` (none: search says so);
    ``embedder`` is used by semantic strategies (default: the strategies' own default)."""
    try:
        from fastapi import FastAPI
    except ImportError:
        raise ConfigError("chunkwise serve needs the serve extra: pip install 'chunkwise[serve]'") from None
    from .. import __version__

    state: dict[str, Any] = {"index": None}

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        if state["index"] is not None:  # release the Milvus Lite database on shutdown
            state["index"].close()

    app = FastAPI(title="chunkwise", version=__version__, lifespan=lifespan,
                  description="Chunk text and see where each strategy cuts; search an index.")
    _add_guards(app, max_upload_bytes)
    _add_pages(app, searchable=bool(db or uri))
    _add_chunk_api(app, embedder, max_upload_bytes, searchable=bool(db or uri))
    _add_search_api(app, state, dict(db=db, uri=uri, collection=collection, embedder=embedder))
    return app


def _error(status: int, message: str, **extra: Any):
    from fastapi.responses import JSONResponse

    return JSONResponse({"error": message, **extra}, status_code=status)


def _add_guards(app, max_upload_bytes: int) -> None:
    """The body-size limit and the error handlers: every error is ``{"error": message}``, never a traceback."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    body_limit = max_upload_bytes + 4 * MAX_TEXT_CHARS + 65536  # a file plus the longest text, in UTF-8

    @app.middleware("http")
    async def _limit_body(request: Request, call_next):
        """Refuse a body announced as too large before it is read (and spooled to disk)."""
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > body_limit:
            return _error(413, f"request too large ({int(length):,} bytes; uploads up to {max_upload_bytes:,} bytes)")
        return await call_next(request)

    @app.exception_handler(RequestError)
    async def _request_error(_: Request, exc: RequestError):
        return _error(exc.status, exc.message)

    @app.exception_handler(ChunkwiseError)
    async def _chunkwise_error(_: Request, exc: ChunkwiseError):
        return _error(400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError):
        parts = []
        for e in exc.errors()[:5]:
            loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
            parts.append(f"{loc or 'body'}: {e.get('msg', 'invalid')}")
        return _error(422, "invalid request: " + "; ".join(parts))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception):  # never a traceback over HTTP
        return _error(500, f"internal error ({type(exc).__name__})")


def _add_pages(app, searchable: bool) -> None:
    """The page and its static assets (plotly.min.js comes from the installed plotly package)."""
    from fastapi.responses import FileResponse, HTMLResponse, Response

    from ..strategies import STRATEGY_NAMES
    from .html import asset
    from .plots import plotly_js_path

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index_page():
        options = "".join(f'<option value="{n}">{n}</option>' for n in STRATEGY_NAMES)
        main = options.replace('value="recursive"', 'value="recursive" selected')
        page = asset("app.html").replace("{{STRATEGIES}}", main, 1).replace("{{STRATEGIES}}", options)
        page = page.replace("{{CSS}}", asset("viz.css"))
        return HTMLResponse(page.replace("{{SEARCH}}", "" if searchable else "hidden"))

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_asset():
        return FileResponse(plotly_js_path(), media_type="application/javascript")

    @app.get("/static/viz.js", include_in_schema=False)
    def viz_js():
        return Response(asset("viz.js"), media_type="application/javascript")

    @app.get("/static/app.js", include_in_schema=False)
    def app_js():
        return Response(asset("app.js"), media_type="application/javascript")


def _add_chunk_api(app, embedder, max_upload_bytes: int, searchable: bool) -> None:
    """``/health``, ``/chunk`` (JSON) and ``/view`` (the page's columns for pasted text or an upload)."""
    from fastapi import File, Form, UploadFile

    from .. import __version__
    from ..document import Document
    from ..strategies import STRATEGY_NAMES
    from . import build_views
    from .html import render_columns

    _, ChunkRequest, _ = _models()

    @app.get("/health")
    def health() -> dict[str, Any]:
        """Liveness, version, the strategies and whether an index is configured."""
        return {"status": "ok", "version": __version__, "strategies": list(STRATEGY_NAMES),
                "index": searchable, "max_upload_bytes": max_upload_bytes}

    @app.post("/chunk")
    def chunk(req: ChunkRequest) -> dict[str, Any]:
        """Chunk ``text`` with ``strategy`` (and up to 3 ``compare`` strategies): chunks with provenance and
        the cause of every cut; ``explain`` adds the per-sentence distances of semantic strategies."""
        if not req.text.strip():
            raise RequestError(400, "text is empty")
        specs = [(req.strategy, req.params)] + [(s.strategy, s.params) for s in req.compare]
        views = build_views(Document(req.text, source="<request>"), make_strategies(specs, embedder))
        out = []
        for v in views:
            d = v.to_dict()
            if not req.explain:
                d.pop("rows")
            out.append(d)
        return {"strategies": out}

    @app.post("/view")
    async def view(text: str = Form(""), strategies: str = Form('[{"strategy": "recursive"}]'),
                   file: UploadFile | None = File(None)) -> dict[str, Any]:
        """The page's columns (HTML) and chart data for pasted ``text`` or an uploaded ``file``;
        ``strategies`` is a JSON list of ``{"strategy": NAME, "params": {...}}``."""
        try:
            specs_raw = json.loads(strategies)
            specs = [(s.get("strategy", "recursive"), s.get("params") or {}) for s in specs_raw]
        except (json.JSONDecodeError, AttributeError, TypeError):
            raise RequestError(400, 'strategies must be a JSON list of {"strategy": NAME, "params": {...}}') from None
        built = make_strategies(specs, embedder)
        if file is not None and file.filename:
            raw = await file.read(max_upload_bytes + 1)
            doc = upload_document(raw, file.filename, max_upload_bytes)
        else:
            doc = _pasted_document(text)
        body, data = render_columns(doc, build_views(doc, built))
        return {"source": doc.source, "html": body, "data": data}


def _pasted_document(text: str):
    from ..document import Document

    if not text.strip():
        raise RequestError(400, "paste some text or choose a file")
    if len(text) > MAX_TEXT_CHARS:
        raise RequestError(413, f"text too long ({len(text):,} characters; the limit is {MAX_TEXT_CHARS:,})")
    # browsers send form text with CRLF line breaks (multipart/form-data rules): undo that
    return Document(text.replace("\r\n", "\n"), source="<pasted>")


def _add_search_api(app, state: dict[str, Any], where_index: dict[str, Any]) -> None:
    """``/search``: the server's own index (opened on first use, closed on shutdown), with highlights."""
    from .model import where

    _, _, SearchRequest = _models()
    db, uri = where_index["db"], where_index["uri"]

    @app.post("/search")
    def search(req: SearchRequest) -> dict[str, Any]:
        """Retrieve the ``k`` chunks closest to ``query`` from the server's index, with ``highlights``
        (character spans of the query words in each hit's text)."""
        if not (db or uri):
            raise RequestError(404, "no index: start the server with --db PATH.db (built by `chunkwise index`)")
        if not req.query.strip():
            raise RequestError(400, "the query is empty")
        if state["index"] is None:
            from ..retrieval.index import Index

            kw: dict[str, Any] = {"collection": where_index["collection"]} if where_index["collection"] else {}
            if where_index["embedder"] is not None:
                kw["embedder"] = where_index["embedder"]
            state["index"] = Index(db=db, uri=uri, **kw)
        results = state["index"].search(req.query, k=req.k, hybrid=req.hybrid)
        out = []
        for r in results:
            d = r.to_dict()
            d["highlights"] = highlights(r.text, req.query)
            d["where"] = where(r.chunk)
            out.append(d)
        return {"query": req.query, "results": out}


__all__ = ["create_app", "highlights", "RequestError", "MAX_UPLOAD_BYTES"]
