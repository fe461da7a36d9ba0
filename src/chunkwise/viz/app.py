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
"""

import asyncio
import contextlib
import hmac
import ipaddress
import json
import re
import threading
from functools import lru_cache
from pathlib import PurePath
from typing import Any
from urllib.parse import parse_qs

from ..errors import ChunkwiseError, ConfigError, InputError
from ..strategies import DEFAULT_STRATEGY

#: default upload limit (bytes): a 100-page PDF is a few MB
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
#: longest pasted text (characters)
MAX_TEXT_CHARS = 2_000_000
#: bytes of a request besides its document (JSON keys, parameters, multipart headers)
BODY_SLACK = 64 * 1024
#: the body limit of every route not named in :func:`body_limits` (``/search``'s query is 2,000 characters)
SMALL_BODY_BYTES = BODY_SLACK
#: seconds a client may take to send a request's head, and to send each piece of its body
READ_TIMEOUT = 10.0
#: seconds a whole body may take, however steadily it drips in
BODY_TIMEOUT = 120.0
#: seconds an idle keep-alive connection is kept open
KEEP_ALIVE_TIMEOUT = 5
#: largest request head (request line and headers) h11 buffers
MAX_HEAD_BYTES = 16 * 1024
#: the names a loopback server answers to (``Host`` header; IPv6 literals keep their brackets)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: the cookie the page's first load with ``?token=`` sets
TOKEN_COOKIE = "chunkwise_token"
#: accepted upload extensions (or none); anything else is refused before it is read
UPLOAD_TYPES = (".txt", ".text", ".md", ".markdown", ".html", ".htm", ".pdf", ".vtt", ".srt", "")
FORBIDDEN_PARAMS = ("embedder",)


class RequestError(Exception):
    """A request the server refuses: ``status`` and a message for the person who sent it."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _models() -> tuple[Any, Any, Any, Any]:
    """The request bodies. Unknown fields are refused (422 naming them): a misplaced ``max_tokens`` at the
    top level used to be ignored in silence, chunking at the default size."""
    from pydantic import BaseModel, ConfigDict, Field

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
        k: int = Field(5, ge=1, le=100)
        hybrid: bool = True  # as `chunkwise search`: BM25 + vectors unless the request says false
        # how hybrid retrieval fuses (None: Index.search's defaults), so `search --server` retrieves as locally
        fusion: str | None = None
        rrf_k: int | None = Field(None, ge=1)
        dense_weight: float | None = None

        def options(self) -> dict[str, Any]:
            given = {"fusion": self.fusion, "rrf_k": self.rrf_k, "dense_weight": self.dense_weight}
            return {"k": self.k, "hybrid": self.hybrid, **{n: v for n, v in given.items() if v is not None}}

    class SearchRequest(Retrieval):
        query: str = Field(..., min_length=1, max_length=2000)

    class AskRequest(Retrieval):
        question: str = Field(..., min_length=1, max_length=2000)
        min_score: float | None = Field(None, description="cosine threshold (default: ask's, 0.15)")

    return StrategySpec, ChunkRequest, SearchRequest, AskRequest


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
        from starlette.middleware.gzip import GZipMiddleware
        from starlette.middleware.trustedhost import TrustedHostMiddleware
    except ImportError:
        raise ConfigError("chunkwise serve needs the serve extra: pip install 'chunkwise[serve]'") from None
    from .. import __version__

    searchable = bool(db or uri)
    opener = IndexOpener(dict(db=db, uri=uri, collection=collection, embedder=embedder))

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        warm = threading.Thread(target=opener.preload, args=(searchable,), name="chunkwise-preload", daemon=True)
        if preload:
            warm.start()
        yield
        if warm.is_alive():
            await asyncio.to_thread(warm.join)
        opener.close()  # release the Milvus Lite database on shutdown

    app = FastAPI(
        title="chunkwise",
        version=__version__,
        lifespan=lifespan,
        description="Chunk text and see where each strategy cuts; search an index.",
    )
    _add_error_handlers(app)
    _add_pages(app, searchable=searchable)
    _add_chunk_api(app, embedder, max_upload_bytes, searchable=searchable, opener=opener)
    _add_search_api(app, opener, searchable)
    # outermost last: Host check, then the token, then the body guard, then compression
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
    return app


def _error(status: int, message: str, **extra: Any):
    from fastapi.responses import JSONResponse

    return JSONResponse({"error": message, **extra}, status_code=status)


async def _send_error(send, status: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A JSON error straight onto the ASGI channel (the middlewares answer before the app runs)."""
    body = json.dumps({"error": message}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


class BodyGuard:
    """Counts a request's body bytes as they arrive and stops at the route's limit.

    ``Content-Length`` is only a claim and a chunked body has none, so a claim over the limit is refused
    before the app runs, and otherwise the bytes are counted as they arrive: at the limit the client gets
    413 and the app gets a disconnect, so nothing more is read, kept in memory or spooled to disk. A body
    that stalls for ``read_timeout`` seconds, or takes longer than ``body_timeout`` in all, gets 408 (uvicorn
    has no such deadline: a client sending one byte now and then held a connection and a worker forever).
    """

    def __init__(
        self,
        app,
        *,
        limits: dict[str, int],
        default: int,
        max_upload_bytes: int,
        read_timeout: float,
        body_timeout: float,
    ):
        self.app = app
        self.limits = limits
        self.default = default
        self.max_upload_bytes = max_upload_bytes
        self.read_timeout = read_timeout
        self.body_timeout = body_timeout

    def _too_large(self, method: str, path: str, limit: int) -> str:
        what = f" (a file up to {self.max_upload_bytes:,} bytes and text)" if path == "/view" else ""
        return f"request too large: {method} {path} takes at most {limit:,} bytes{what}"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        limit = self.limits.get(path, self.default)
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.strip().isdigit() and int(value) > limit:
                await _send_error(send, 413, self._too_large(method, path, limit), ((b"connection", b"close"),))
                return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout
        received = 0
        done = False  # the whole body has arrived: later receives only wait for a disconnect
        refused = False
        started = False

        async def refuse(status: int, message: str) -> dict[str, Any]:
            nonlocal refused
            if not started:
                await _send_error(send, status, message, ((b"connection", b"close"),))
            refused = True
            return {"type": "http.disconnect"}

        async def guarded_receive() -> dict[str, Any]:
            nonlocal received, done
            if refused:
                return {"type": "http.disconnect"}
            if done:
                return await receive()
            wait = min(self.read_timeout, deadline - loop.time())
            try:
                message = await asyncio.wait_for(receive(), timeout=max(wait, 0.001))
            except TimeoutError:
                return await refuse(
                    408,
                    f"request body not received in time (limit {self.read_timeout:g} s "
                    f"without data, {self.body_timeout:g} s in all)",
                )
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    return await refuse(413, self._too_large(method, path, limit))
                done = not message.get("more_body", False)
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            nonlocal started
            if refused:  # the client already has its 413/408; the app's answer to the disconnect goes nowhere
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except Exception:
            if not refused:  # the app failing over the disconnect it was given is expected
                raise


class TokenGate:
    """Every route but ``/health`` and ``/static/`` needs the token: ``Authorization: Bearer TOKEN`` or the
    cookie that ``GET /?token=TOKEN`` sets (then redirects to ``/``, so the token leaves the address bar).
    The cookie is ``HttpOnly`` and ``SameSite=Strict``: another site's page cannot send it along."""

    def __init__(self, app, *, token: str):
        self.app = app
        self.token = token.encode()

    def _good(self, value: str | bytes | None) -> bool:
        if value is None:
            return False
        raw = value.encode() if isinstance(value, str) else value
        return hmac.compare_digest(raw, self.token)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if path == "/health" or path.startswith("/static/"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        auth = headers.get(b"authorization", b"")
        if auth[:7].lower() == b"bearer " and self._good(auth[7:].strip()):
            await self.app(scope, receive, send)
            return
        from http.cookies import CookieError, SimpleCookie

        cookies: SimpleCookie = SimpleCookie()
        with contextlib.suppress(CookieError):
            cookies.load(headers.get(b"cookie", b"").decode("latin-1"))
        if TOKEN_COOKIE in cookies and self._good(cookies[TOKEN_COOKIE].value):
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if path == "/" and scope.get("method") == "GET" and self._good((query.get("token") or [None])[0]):
            cookie = f"{TOKEN_COOKIE}={self.token.decode()}; HttpOnly; SameSite=Strict; Path=/"
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [
                        (b"location", b"/"),
                        (b"set-cookie", cookie.encode()),
                        (b"cache-control", b"no-store"),
                        (b"content-length", b"0"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await _send_error(
            send,
            401,
            "this server needs its token: open the address printed when it started "
            "(/?token=...) or send 'Authorization: Bearer TOKEN'",
            ((b"www-authenticate", b"Bearer"),),
        )


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_names(host: str, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The ``Host`` names a server bound to ``host`` answers: the loopback names, ``host`` itself (not a
    wildcard address: nobody reaches a server by the name 0.0.0.0; this machine's name stands for it) and
    ``extra`` (``--allowed-host``). IPv6 literals get their brackets, as a ``Host`` header carries them."""

    def bracket(name: str) -> str:
        name = name.strip().lower()
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(name.strip("[]")).version == 6:
                return "[" + name.strip("[]") + "]"
        return name

    names = list(LOOPBACK_HOSTS)
    if host in ("0.0.0.0", "::", ""):
        import socket

        names.append(socket.gethostname().lower())
    else:
        names.append(bracket(host))
    names.extend(bracket(n) for n in extra)
    return list(dict.fromkeys(n for n in names if n))


def serve(app, host: str, port: int, *, read_timeout: float = READ_TIMEOUT) -> None:
    """Run ``app`` under uvicorn with deadlines: ``read_timeout`` seconds for each request's head (from
    the first byte, or from the connection's opening: uvicorn has no such timeout, so a connection that
    never finished its headers stayed open), keep-alive connections closed after
    :data:`KEEP_ALIVE_TIMEOUT` idle seconds, heads of at most :data:`MAX_HEAD_BYTES`."""
    import uvicorn

    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=head_deadline_protocol(read_timeout),
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )


def head_deadline_protocol(seconds: float):
    """uvicorn's h11 protocol with a deadline for every request head: armed when the connection opens and
    when a new request's first bytes arrive, disarmed once its headers are complete; at the deadline the
    connection is closed."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadDeadlineProtocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._arm()  # partway through a request head
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expired(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return HeadDeadlineProtocol


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
        return _error(400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        return _error(422, "invalid request: " + validation_message(exc.errors(), request.url.path))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception):  # never a traceback over HTTP
        return _error(500, f"internal error ({type(exc).__name__})")


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


class IndexOpener:
    """The server's one index, opened once: by the preload thread at start, or by the first search, which
    waits for a preload under way instead of loading the model a second time."""

    def __init__(self, where_index: dict[str, Any]):
        self.where = where_index
        self.index: Any = None
        self.lock = threading.Lock()
        #: how often the index was opened (and its model loaded): once per server, however many queries
        self.opens = 0

    def get(self):
        with self.lock:
            if self.index is None:
                from ..retrieval.index import Index

                w = self.where
                kw: dict[str, Any] = {"collection": w["collection"]} if w["collection"] else {}
                if w["embedder"] is not None:
                    kw["embedder"] = w["embedder"]
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


def _add_chunk_api(app, embedder, max_upload_bytes: int, searchable: bool, opener: IndexOpener) -> None:
    """``/health``, ``/chunk`` (JSON) and ``/view`` (the page's columns for pasted text or an upload)."""
    from fastapi import Request

    from .. import __version__
    from ..document import Document
    from ..strategies import STRATEGY_NAMES
    from . import build_views
    from .html import render_columns

    StrategySpec, ChunkRequest, _, _ = _models()

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

    view_form = {
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

    @app.post("/view", openapi_extra=view_form)
    async def view(request: Request) -> dict[str, Any]:
        """The page's columns (HTML) and chart data for pasted ``text`` or an uploaded ``file``;
        ``strategies`` is a JSON list of ``{"strategy": NAME, "params": {...}}``."""
        form = await _read_form(request)
        try:
            text, strategies, file = form.get("text", ""), form.get("strategies", DEFAULT_SPECS), form.get("file")
            if not isinstance(text, str) or not isinstance(strategies, str):
                raise RequestError(400, "text and strategies are form fields, not files")
            specs = _view_specs(strategies, StrategySpec)
            raw, name = None, None
            if file is not None and not isinstance(file, str) and file.filename:
                raw, name = await file.read(max_upload_bytes + 1), file.filename
        finally:
            await form.close()

        def work() -> dict[str, Any]:  # in a thread: chunking a long text must not stall every connection
            built = make_strategies(specs, embedder)
            doc = upload_document(raw, name, max_upload_bytes) if raw is not None else _pasted_document(text)
            body, data = render_columns(doc, build_views(doc, built))
            return {"source": doc.source, "html": body, "data": data}

        return await asyncio.to_thread(work)


#: the page's default column
DEFAULT_SPECS = json.dumps([{"strategy": DEFAULT_STRATEGY}])


async def _read_form(request):
    """The ``/view`` form, its text field allowed the paste limit in UTF-8 (Starlette's default part limit,
    1 MB, cut pastes at about half the documented length with a parser's message)."""
    from starlette.exceptions import HTTPException as StarletteHTTPException

    try:
        return await request.form(max_files=1, max_fields=8, max_part_size=4 * MAX_TEXT_CHARS + 16)
    except StarletteHTTPException as exc:
        if "maximum size" in str(exc.detail):
            raise RequestError(413, f"text too long (the limit is {MAX_TEXT_CHARS:,} characters)") from None
        raise RequestError(400, f"invalid form: {exc.detail}") from None


def _view_specs(strategies: str, spec_model) -> list[tuple[str, dict[str, Any]]]:
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


def _pasted_document(text: str):
    from ..document import Document

    if not text.strip():
        raise RequestError(400, "paste some text or choose a file")
    check_text_length(text)
    # browsers send form text with CRLF line breaks (multipart/form-data rules): undo that
    return Document(text.replace("\r\n", "\n"), source="<pasted>")


def _add_search_api(app, opener: IndexOpener, searchable: bool) -> None:
    """``/search`` and ``/ask``: the server's own index (opened at start or on first use, closed on shutdown),
    with highlights; ``/ask`` answers through ``Index.ask`` as ``chunkwise ask`` does."""
    from .model import where

    _, _, SearchRequest, AskRequest = _models()
    no_index = "no index: start the server with --db PATH.db (built by `chunkwise index`)"

    @app.post("/search")
    def search(req: SearchRequest) -> dict[str, Any]:
        """Retrieve the ``k`` chunks closest to ``query`` from the server's index, with ``highlights``
        (character spans of the query words in each hit's text)."""
        if not searchable:
            raise RequestError(404, no_index)
        if not req.query.strip():
            raise RequestError(400, "the query is empty")
        results = opener.get().search(req.query, **req.options())
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
        llm = get_llm(stream=False)
        try:
            answer = opener.get().ask(req.question, options.pop("k"), llm=llm, min_score=req.min_score, **options)
        finally:
            llm.close()
        return answer.to_dict()


__all__ = ["create_app", "serve", "host_names", "is_loopback", "highlights", "RequestError", "MAX_UPLOAD_BYTES"]
