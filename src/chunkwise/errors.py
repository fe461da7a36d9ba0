"""Errors a user can act on.

Every error that reaches the command line is a :class:`ChunkwiseError`: the CLI prints its message as one
line (``chunkwise: error: <source>: <problem>``) and exits non-zero, with no traceback. Anything else that
escapes is a bug.
"""

from __future__ import annotations


class ChunkwiseError(Exception):
    """A problem with the input or the configuration, described for a person."""

    def __init__(self, message: str, source: str | None = None):
        if "://" in f"{message}{source}":  # a URL's password or key is never shown (chunkwise.security)
            from .security import redact_urls

            message = redact_urls(message)
            source = redact_urls(source) if source else source
        self.source = source
        self.problem = message
        super().__init__(f"{source}: {message}" if source else message)


class InputError(ChunkwiseError):
    """An input file or text that cannot be read or chunked (missing, binary, corrupt, too large...)."""


class ConfigError(ChunkwiseError):
    """Invalid parameters: max_tokens < 1, overlap >= max_tokens, an unknown strategy or back-end..."""


class MissingDependencyError(ConfigError):
    """An optional feature whose extra is not installed; the message names the extra."""

    def __init__(self, feature: str, extra: str, package: str | None = None):
        pkg = f" ({package})" if package else ""
        super().__init__(f"{feature} needs the '{extra}' extra{pkg}: pip install 'chunkwise[{extra}]'")
