"""``chunkwise serve``: the report's view, live, plus search and a JSON API (FastAPI, extra ``serve``).

Routes: ``GET /`` the page (paste text or upload a file, pick strategies and parameters, see the cuts;
search the index with highlighted hits), ``POST /view`` (the page's columns for a text or an upload),
``POST /chunk`` and ``POST /search`` (JSON API), ``GET /health``; ``/docs`` and ``/openapi.json`` describe
them. Safety: requests never name files on this machine (text and uploads are read from the request; the
index is the one given on the command line; ``embedder`` and ``hf:`` tokenizer paths are refused), uploads
have a size limit and a type check, and every error is JSON ``{"error": message}`` with a 4xx status, never
a traceback (an unexpected failure is a 500 naming only the exception type).

The server is a trust boundary even on loopback: any web page the user opens can send requests to it, and
with DNS rebinding read the answers. So, outside the routes: a Host check (only the names this server is
reached by), an optional token (required when it listens beyond loopback), a body limit counted as the
bytes arrive (``Content-Length`` is only a claim; chunked bodies have none), and deadlines for a request's
head (:func:`serve`'s protocol) and for each piece of its body (:class:`BodyGuard`).

Where each part lives: the request bodies, limits and checks in :mod:`.request_checks`, the middlewares
(:class:`BodyGuard`, :class:`TokenGate`) in :mod:`.middleware`, uvicorn and the ``Host`` names in
:mod:`.server`; this module builds the app and its routes, and keeps every name importable from here.
"""

import asyncio
import contextlib
import logging
import re
import threading
from functools import lru_cache
from typing import Any

from ..errors import ChunkwiseError, ConfigError
from ..security import redact
from ..strategies import DEFAULT_STRATEGY
from .middleware import BODY_TIMEOUT, READ_TIMEOUT, TOKEN_COOKIE, BodyGuard, TokenGate
from .request_checks import (
    BODY_SLACK,
    DEFAULT_SPECS,
    FORBIDDEN_PARAMS,
    MAX_TEXT_CHARS,
    MAX_UPLOAD_BYTES,
    SMALL_BODY_BYTES,
    UPLOAD_TYPES,
    RequestError,
    body_limits,
    check_params,
    check_text_length,
    make_strategies,
    pasted_document,
    read_form,
    request_models,
    upload_document,
    validation_message,
    view_specs,
)
from .server import (
    KEEP_ALIVE_TIMEOUT,
    LOOPBACK_HOSTS,
    MAX_HEAD_BYTES,
    head_deadline_protocol,
    host_names,
    is_loopback,
    serve,
)

#: words not worth marking in a hit
STOPWORDS = frozenset(
    "the and for are but not you all any can had her was one our out has how its may who "
    "did get him his she too use that with have this will your from they what when which "
    "there their about would these other into more some than then them were been does".split()
)


def highlights(text: str, query: str) -> list[list[int]]:
    """Character spans of the query's words (3+ letters, not stop words; a word also marks its longer
    forms: "feed" marks "feeding") in ``text``, for ``<mark>`` in the page."""
    words = sorted({w.lower() for w in re.findall(r"\w{3,}", query)} - STOPWORDS, key=len, reverse=True)
    if not words:
        return []
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\w*", re.IGNORECASE)
    return [[m.start(), m.end()] for m in pattern.finditer(text)]


def create_app(
    db: str | None = None,
    *,
    uri: str | None = None,
    collection: str | None = None,
    embedder=None,
    max_upload_bytes: int = MAX_UPLOAD_BYTES,
    allowed_hosts: list[str] | None = None,
    token: str | None = None,
    preload: bool = True,
    read_timeout: float = READ_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
):
    """The FastAPI application. ``db``/``uri`` name the index for ``/search`` (none: search says so);
    ``embedder`` is used by semantic strategies (default: the strategies' own default).

    ``allowed_hosts``: the ``Host`` names answered (default :data:`LOOPBACK_HOSTS`; ``["*"]`` any), so a
    page on another site cannot reach the app through DNS rebinding. ``token``: required by every route but
    ``/health`` and ``/static/`` (``Authorization: Bearer TOKEN``, or the cookie ``/?token=TOKEN`` sets).
    ``preload``: open the index and load its embedding model when the app starts, in a thread, so the port
    answers at once and the first search only waits for what is left. ``read_timeout``/``body_timeout``:
    seconds a body may pause between pieces, and may take in all."""
    try:
        from fastapi import FastAPI
    except ImportError:
        raise ConfigError("chunkwise serve needs the serve extra: pip install 'chunkwise[serve]'") from None
    from .. import __version__

    searchable = bool(db or uri)
    opener = IndexOpener(dict(db=db, uri=uri, collection=collection, embedder=embedder))
    app = FastAPI(
        title="chunkwise",
        version=__version__,
        lifespan=_lifespan(opener, searchable, preload, embedder),
        description="Chunk text and see where each strategy cuts; search an index.",
    )
    _add_error_handlers(app)
    _add_pages(app, searchable=searchable)
    _add_chunk_api(app, embedder, max_upload_bytes, searchable=searchable, opener=opener)
    _add_search_api(app, opener, searchable)
    _add_guards(app, max_upload_bytes, allowed_hosts, token, read_timeout, body_timeout)
    return app


def _lifespan(opener: "IndexOpener", searchable: bool, preload: bool, embedder=None):
    """The app's start and shutdown, apart so :func:`create_app` reads as the list of what the app is made
    of: the preload thread starts with the app, and shutdown waits for it and closes the index."""

    def warm_up() -> None:  # the page's first chunk view first: it is what a visitor waits for
        warm_view(embedder)
        opener.preload(searchable)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        warm = threading.Thread(target=warm_up, name="chunkwise-preload", daemon=True)
        if preload:
            warm.start()
        yield
        if warm.is_alive():
            await asyncio.to_thread(warm.join)
        opener.close()  # release the Milvus Lite database on shutdown

    return lifespan


def _add_guards(
    app,
    max_upload_bytes: int,
    allowed_hosts: list[str] | None,
    token: str | None,
    read_timeout: float,
    body_timeout: float,
) -> None:
    """The middlewares, in one place because their order is the trust boundary: a middleware added later
    runs first, so the Host check is outermost, then the token, then the body guard, then compression."""
    from starlette.middleware.gzip import GZipMiddleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    app.add_middleware(GZipMiddleware, minimum_size=1024, compresslevel=6)
    app.add_middleware(
        BodyGuard,
        limits=body_limits(max_upload_bytes),
        default=SMALL_BODY_BYTES,
        max_upload_bytes=max_upload_bytes,
        read_timeout=read_timeout,
        body_timeout=body_timeout,
    )
    if token:
        app.add_middleware(TokenGate, token=token)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts or LOOPBACK_HOSTS))


#: what a client is told when the server's language model (or embedding) endpoint fails; the details
#: (URL, status, the endpoint's own message) go to the server's log only
UPSTREAM_FAILED = "the server's language model endpoint failed; the details are in the server's log"
_log = logging.getLogger("chunkwise.serve")


def _error(status: int, message: str, **extra: Any):
    from fastapi.responses import JSONResponse

    return JSONResponse({"error": message, **extra}, status_code=status)


def _add_error_handlers(app) -> None:
    """Every error is ``{"error": message}``, never a traceback."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(RequestError)
    async def _request_error(_: Request, exc: RequestError):
        return _error(exc.status, exc.message)

    @app.exception_handler(ChunkwiseError)
    async def _chunkwise_error(_: Request, exc: ChunkwiseError):
        from ..http import EndpointError

        if isinstance(exc, EndpointError):  # the server's own upstream: what failed is for its log, not clients
            _log.warning("upstream endpoint failed: %s", redact(str(exc)))
            return _error(502, UPSTREAM_FAILED)
        return _error(400, redact(str(exc)))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        return _error(422, "invalid request: " + validation_message(exc.errors(), request.url.path))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception):  # never a traceback over HTTP
        return _error(500, f"internal error ({type(exc).__name__})")


class IndexOpener:
    """The server's one index, opened once: by the preload thread at start, or by the first search, which
    waits for a preload under way instead of loading the model a second time. A Milvus Lite index is read
    from a private copy of its last finished run (``snapshot_reads``), never held open: ``chunkwise index``
    may write it meanwhile, and the first request after that run finished reads the new one."""

    def __init__(self, where_index: dict[str, Any]):
        self.where = where_index
        self.index: Any = None
        self.lock = threading.Lock()
        #: how often the index was opened (and its model loaded): once per server, however many queries
        self.opens = 0
        #: requests reading the index now (:meth:`use`)
        self.users = 0

    def get(self):
        with self.lock:
            return self._open()

    @contextlib.contextmanager
    def use(self):
        """The index, for one request: it is not moved to a later run while a request reads it."""
        with self.lock:
            index = self._open()
            self.users += 1
        try:
            yield index
        finally:
            with self.lock:
                self.users -= 1

    def _open(self):
        """(Under :attr:`lock`.) The index, opened if it is not; moved to a later finished run when no
        request is reading it."""
        if self.index is not None and self.users == 0 and getattr(self.index.store, "refresh", None) is not None:
            self.index.store.refresh()  # a later run finished: the next search reads it
        if self.index is None:
            from ..retrieval.index import Index
            from ..store.milvus import MilvusStore

            w = self.where
            kw: dict[str, Any] = {"collection": w["collection"]} if w["collection"] else {}
            if w["embedder"] is not None:
                kw["embedder"] = w["embedder"]
            if w["uri"] is None:  # never held open: writers are not locked out
                where = {"collection": kw.pop("collection")} if "collection" in kw else {}
                kw["store"] = MilvusStore(db=w["db"], snapshot_reads=True, **where)
            index = Index(db=w["db"], uri=w["uri"], **kw)
            self.opens += 1
            try:
                index.search("chunkwise", k=1)  # opens the collection, loads and runs the model
            except BaseException:
                index.close()
                raise
            self.index = index
        return self.index

    def preload(self, searchable: bool) -> None:
        """Compress plotly.js for the page, open the index and load the model; a failure is left for the
        first search to report (it tries again and answers with the message)."""
        with contextlib.suppress(Exception):
            plotly_js_gzip()
        if searchable:
            with contextlib.suppress(Exception):
                self.get()

    def close(self) -> None:
        with self.lock:
            if self.index is not None:
                self.index.close()
                self.index = None


def warm_view(embedder=None) -> None:
    """Build the page's default view once on a short text, so the first ``/view`` finds the strategy
    modules imported and the tokenizer loaded (half a second on a 2-core machine); a failure is left
    for that request to report."""
    from . import build_views
    from .html import render_columns

    with contextlib.suppress(Exception):
        doc = pasted_document("A warm-up.\n\nTwo short paragraphs.")
        render_columns(doc, build_views(doc, make_strategies(view_specs(DEFAULT_SPECS, request_models()[0]), embedder)))


@lru_cache(maxsize=1)
def plotly_js_gzip() -> bytes:
    """plotly.min.js gzip-compressed once (4.8 MB -> about 1.5 MB), served as it is to browsers that accept
    gzip: compressing it per request would cost a second of CPU each time."""
    import gzip

    from .plots import plotly_js_path

    return gzip.compress(plotly_js_path().read_bytes(), compresslevel=9, mtime=0)


def _add_pages(app, searchable: bool) -> None:
    """The page and its static assets (plotly.min.js comes from the installed plotly package, sent
    gzip-compressed to every browser that accepts it: 4.8 MB became about 1.5 MB)."""
    from fastapi import Request
    from fastapi.responses import FileResponse, HTMLResponse, Response

    from ..strategies import STRATEGY_NAMES
    from .html import asset
    from .plots import plotly_js_path

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index_page():
        options = "".join(f'<option value="{n}">{n}</option>' for n in STRATEGY_NAMES)
        main = options.replace(f'value="{DEFAULT_STRATEGY}"', f'value="{DEFAULT_STRATEGY}" selected')
        page = asset("app.html").replace("{{STRATEGIES}}", main, 1).replace("{{STRATEGIES}}", options)
        page = page.replace("{{CSS}}", asset("viz.css"))
        return HTMLResponse(page.replace("{{SEARCH}}", "" if searchable else "hidden"))

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_asset(request: Request):
        cache = {"cache-control": "public, max-age=86400", "vary": "Accept-Encoding"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            return Response(
                plotly_js_gzip(), media_type="application/javascript", headers={**cache, "content-encoding": "gzip"}
            )
        return FileResponse(plotly_js_path(), media_type="application/javascript", headers=cache)

    @app.get("/static/viz.js", include_in_schema=False)
    def viz_js():
        return Response(asset("viz.js"), media_type="application/javascript")

    @app.get("/static/app.js", include_in_schema=False)
    def app_js():
        return Response(asset("app.js"), media_type="application/javascript")


#: the ``/view`` form as OpenAPI describes it (the route reads the form itself, so FastAPI cannot infer it)
VIEW_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "maxLength": MAX_TEXT_CHARS, "default": ""},
                        "strategies": {
                            "type": "string",
                            "default": DEFAULT_SPECS,
                            "description": 'JSON list of {"strategy": NAME, "params": {...}}',
                        },
                        "file": {"type": "string", "format": "binary"},
                    },
                }
            }
        },
    }
}


def _add_chunk_api(app, embedder, max_upload_bytes: int, searchable: bool, opener: IndexOpener) -> None:
    """``/health``, ``/chunk`` (JSON) and ``/view`` (the page's columns for pasted text or an upload)."""
    _add_health(app, max_upload_bytes, searchable, opener)
    _add_chunk_route(app, embedder)
    _add_view_route(app, embedder, max_upload_bytes)


def _add_health(app, max_upload_bytes: int, searchable: bool, opener: IndexOpener) -> None:
    """``/health``, its own route so the chunking routes below read without it (it is what the token gate
    lets through, and what ``serve`` polls at start)."""
    from .. import __version__
    from ..strategies import STRATEGY_NAMES

    @app.get("/health")
    def health() -> dict[str, Any]:
        """Liveness, version, the strategies and whether an index is configured."""
        return {
            "status": "ok",
            "version": __version__,
            "strategies": list(STRATEGY_NAMES),
            "index": searchable,
            "index_opens": opener.opens,
            "max_upload_bytes": max_upload_bytes,
        }


def _add_chunk_route(app, embedder) -> None:
    """``/chunk``, the JSON API: apart from ``/view`` because it takes a JSON body, not a form."""
    from ..document import Document
    from . import build_views

    _, ChunkRequest, _, _ = request_models()

    @app.post("/chunk")
    def chunk(req: ChunkRequest) -> dict[str, Any]:
        """Chunk ``text`` with ``strategy`` (and up to 3 ``compare`` strategies): chunks with provenance and
        the cause of every cut; ``explain`` adds the per-sentence distances of semantic strategies."""
        check_text_length(req.text)
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


def _add_view_route(app, embedder, max_upload_bytes: int) -> None:
    """``/view``, the page's route: apart because it reads a form (a pasted text or an upload) and
    chunks in a thread."""
    from fastapi import Request

    from . import build_views
    from .html import render_columns

    StrategySpec, _, _, _ = request_models()

    @app.post("/view", openapi_extra=VIEW_FORM)
    async def view(request: Request) -> dict[str, Any]:
        """The page's columns (HTML) and chart data for pasted ``text`` or an uploaded ``file``;
        ``strategies`` is a JSON list of ``{"strategy": NAME, "params": {...}}``."""
        form = await read_form(request)
        try:
            text, strategies, file = form.get("text", ""), form.get("strategies", DEFAULT_SPECS), form.get("file")
            if not isinstance(text, str) or not isinstance(strategies, str):
                raise RequestError(400, "text and strategies are form fields, not files")
            specs = view_specs(strategies, StrategySpec)
            raw, name = None, None
            if file is not None and not isinstance(file, str) and file.filename:
                raw, name = await file.read(max_upload_bytes + 1), file.filename
        finally:
            await form.close()

        def work() -> dict[str, Any]:  # in a thread: chunking a long text must not stall every connection
            built = make_strategies(specs, embedder)
            doc = upload_document(raw, name, max_upload_bytes) if raw is not None else pasted_document(text)
            body, data = render_columns(doc, build_views(doc, built))
            return {"source": doc.source, "html": body, "data": data}

        return await asyncio.to_thread(work)


def _add_search_api(app, opener: IndexOpener, searchable: bool) -> None:
    """``/search`` and ``/ask``: the server's own index (opened at start or on first use, closed on shutdown),
    with highlights; ``/ask`` answers through ``Index.ask`` as ``chunkwise ask`` does."""
    from .model import where

    _, _, SearchRequest, AskRequest = request_models()
    no_index = "no index: start the server with --db PATH.db (built by `chunkwise index`)"

    @app.post("/search")
    def search(req: SearchRequest) -> dict[str, Any]:
        """Retrieve the ``k`` chunks closest to ``query`` from the server's index, with ``highlights``
        (character spans of the query words in each hit's text)."""
        if not searchable:
            raise RequestError(404, no_index)
        if not req.query.strip():
            raise RequestError(400, "the query is empty")
        with opener.use() as index:
            results = index.search(req.query, **req.options())
        out = []
        for r in results:
            d = r.to_dict()
            d["highlights"] = highlights(r.text, req.query)
            d["where"] = where(r.chunk)
            out.append(d)
        return {"query": req.query, "results": out}

    @app.post("/ask")
    def ask(req: AskRequest) -> dict[str, Any]:
        """Answer ``question`` from the ``k`` best chunks of the server's index, citing them (``Answer``'s
        JSON, as ``chunkwise ask --format json`` prints it). The model is the server's: the chat endpoint of
        ``$CHUNKWISE_LLM_BASE_URL``/``$CHUNKWISE_LLM_MODEL`` where it runs, else the extractive answer."""
        from ..llm import get_llm

        if not searchable:
            raise RequestError(404, no_index)
        if not req.question.strip():
            raise RequestError(400, "the question is empty")
        options = req.options()
        try:
            llm = get_llm(stream=False)
        except ChunkwiseError as exc:  # the server's configuration: its log says what, clients only that
            _log.warning("the language model is misconfigured: %s", redact(str(exc)))
            raise RequestError(500, "the server's language model is misconfigured; see the server's log") from None
        try:
            with opener.use() as index:
                answer = index.ask(req.question, options.pop("k"), llm=llm, min_score=req.min_score, **options)
        finally:
            llm.close()
        return answer.to_dict()


__all__ = [
    "create_app",
    "serve",
    "host_names",
    "is_loopback",
    "highlights",
    "RequestError",
    "MAX_UPLOAD_BYTES",
    "MAX_TEXT_CHARS",
    "BODY_SLACK",
    "SMALL_BODY_BYTES",
    "READ_TIMEOUT",
    "BODY_TIMEOUT",
    "KEEP_ALIVE_TIMEOUT",
    "MAX_HEAD_BYTES",
    "LOOPBACK_HOSTS",
    "TOKEN_COOKIE",
    "UPLOAD_TYPES",
    "FORBIDDEN_PARAMS",
    "DEFAULT_SPECS",
    "BodyGuard",
    "TokenGate",
    "IndexOpener",
    "body_limits",
    "check_params",
    "check_text_length",
    "make_strategies",
    "upload_document",
    "validation_message",
    "head_deadline_protocol",
    "plotly_js_gzip",
]
