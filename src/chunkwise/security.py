"""Keeping secrets secret: redacted error text, a warning for keys sent in clear, private files.

- :func:`redact` removes API keys (and anything shaped like an ``Authorization`` header or a bearer token)
  from text that came back from a server before it is shown: a server that echoes the request headers in
  its error body must not get the key printed to a terminal or a CI log.
- :func:`redact_url` is the one redaction of a URL shown to anyone (printed, logged, returned by ``serve``):
  a user name and password (``user:pw@``) and the values of query parameters that carry secrets
  (``api-key``, ``key``, ``token``, ``sig``...) become ``[redacted]``; :func:`redact_urls` applies it to
  every URL in a text, and every :class:`~chunkwise.errors.ChunkwiseError` message passes through it.
- :func:`warn_plain_http` warns (once per URL) when a key is about to travel over plain ``http://`` to a
  host that is not this machine.
- :func:`private_dir` / :func:`private_file` create caches and databases readable by their owner only
  (0700 / 0600): cached LLM answers and chunk text are copies of the user's documents.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REDACTED = "[redacted]"
_HEADER = re.compile(
    r"(?i)\b(authorization|proxy-authorization|x-api-key|api-key|api_key|cookie)"
    r"(\"?\s*[:=]\s*\"?)((?:(?:bearer|basic)\s+)?[^\s\"}]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[^\s\"'<>]{6,}")
_KEYLIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}")
_warned: set[str] = set()
#: query parameters whose value is a credential (Azure ``api-key``/``sig``, Google ``key``, ``token``...)
SECRET_PARAMS = frozenset(
    {
        "api-key",
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "auth",
        "authorization",
        "sig",
        "signature",
        "secret",
        "client_secret",
        "password",
        "pass",
        "pwd",
        "code",
        "x-api-key",
        "session",
        "credential",
        "credentials",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
    }
)
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,15}://[^\s\"'<>`]+")
_SECRET_NAME = re.compile(r"(?i)(key|token|secret|passw|sig|auth|credential)")


class PlainHTTPWarning(UserWarning):
    """An API key is sent over unencrypted HTTP to another machine."""


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every given secret, header value and bearer token replaced by ``[redacted]``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    text = redact_urls(text)
    text = _HEADER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + " " + REDACTED, text)
    return _KEYLIKE.sub(REDACTED, text)


def redact_url(url: str) -> str:
    """``url`` with its user name/password and secret query values replaced by ``[redacted]``: the form in
    which a URL is printed, logged or returned (``http://[redacted]@host/v1?api-key=[redacted]``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    head = min((i for i in (rest.find(c) for c in "?#") if i >= 0), default=len(rest))
    at = rest.rfind("@", 0, head)
    if at >= 0 and (at < cut or ":" in rest[:at]):  # user:pw@ (a password with a "/" in it too)
        cut = at + 1 + min((i for i in (rest[at + 1 :].find(c) for c in "/?#") if i >= 0), default=len(rest))
        netloc = REDACTED + rest[at:cut]
    else:
        netloc = rest[:cut]
    tail = rest[cut:]
    if "?" in tail or "#" in tail:
        tail = re.sub(r"([?&#;])([^=&#;]*)=([^&#;]*)", _param, tail)
    return f"{scheme}://{netloc}{tail}"


def _param(m: re.Match) -> str:
    name = m.group(2)
    secret = name.lower() in SECRET_PARAMS or _SECRET_NAME.search(name)
    return f"{m.group(1)}{name}={REDACTED if secret and m.group(3) else m.group(3)}"


def redact_urls(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


#: the most a configuration file may hold, and how deeply its values may nest (real ones: kilobytes, depth 4)
MAX_CONFIG_BYTES = 1 << 20
MAX_CONFIG_DEPTH = 32


def loads_bounded(text: str, what: str = "configuration") -> Any:
    """``json.loads`` for text a user or a file supplies, bounded: at most :data:`MAX_CONFIG_BYTES`, nesting
    at most :data:`MAX_CONFIG_DEPTH` deep (checked before parsing, so a 100,000-deep file is one
    ``ValueError``, not a ``RecursionError``), and no ``NaN``/``Infinity`` (not numbers a setting can hold).
    Raises ``ValueError`` with the reason (callers add the file's name)."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ValueError(f"{what} is {len(text):,} characters; the limit is {MAX_CONFIG_BYTES:,}")
    depth = _nesting(text)
    if depth > MAX_CONFIG_DEPTH:
        raise ValueError(f"{what} nests {depth} levels deep; the limit is {MAX_CONFIG_DEPTH}")
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a setting can hold")


def _finite(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is out of range for a number a setting can hold")
    return value


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _nesting(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings (a linear scan; stops counting past the limit)."""
    depth = deepest = 0
    for m in _BRACKETS.finditer(text):
        c = m.group(0)
        if c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_CONFIG_DEPTH:
                    return deepest
        elif c in "]}":
            depth -= 1
    return deepest


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def warn_plain_http(url: str, has_key: bool) -> bool:
    """Warn once when ``has_key`` and ``url`` is ``http://`` to a non-loopback host; True when it warned."""
    parts = urlsplit(url)
    if not has_key or parts.scheme != "http" or is_loopback(parts.hostname) or url in _warned:
        return False
    _warned.add(url)
    warnings.warn(
        f"{redact_url(url)}: the API key is sent over plain http:// to another machine, readable by anyone on "
        "the way; use https://",
        PlainHTTPWarning,
        stacklevel=3,
    )
    return True


def private_dir(path: str | os.PathLike) -> Path:
    """Create ``path`` (and parents) with the last folder 0700; an existing folder is left as it is."""
    p = Path(path)
    if not p.exists():
        p.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(p, 0o700)  # mkdir's mode is filtered by the umask; this one is meant
    return p


def private_file(path: str | os.PathLike) -> Path:
    """Create an empty ``path`` 0600 when it does not exist (SQLite gives its -wal/-shm files the same mode)."""
    p = Path(path)
    if not p.exists():
        fd = os.open(p, os.O_CREAT | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600)
        os.close(fd)
        os.chmod(p, 0o600)
    return p


def replace_folder(folder: str | os.PathLike, fill: Callable[[Path], None]) -> None:
    """Write a folder whole: ``fill(tmp)`` writes into a fresh private folder beside ``folder``, which then
    replaces it by a rename. A reader sees the old folder or the new one, never half of one, and a
    process killed while filling leaves only the temporary folder (removed when it can be)."""
    target = Path(folder)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        fill(tmp)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


__all__ = [
    "redact",
    "redact_url",
    "loads_bounded",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "redact_urls",
    "SECRET_PARAMS",
    "warn_plain_http",
    "private_dir",
    "private_file",
    "replace_folder",
    "is_loopback",
    "PlainHTTPWarning",
]
