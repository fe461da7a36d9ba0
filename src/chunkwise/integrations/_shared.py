"""What both adapters need: a strategy built once from a name or object, and a chunk's metadata.

Metadata is what the frameworks hand on to vector stores, and most of those (Chroma, Pinecone, FAISS's
docstores through JSON, Milvus's dynamic fields) accept only scalar values and refuse ``None``: a chunk's
metadata therefore leaves out the fields it does not have (a text chunk's frames, a PDF-less chunk's
pages) and joins its lists into strings (``section`` with ``" > "``, ``speakers``/``classes``/``track_ids``
with ``", "``). ``list_metadata="keep"`` keeps the lists for stores that take them.
"""

from __future__ import annotations

from typing import Any

from ..document import CHUNK_FIELD_TABLE, PATH_SEPARATOR, Chunk, Document
from ..errors import ConfigError, MissingDependencyError
from ..strategies import Strategy
from ..strategies.factory import make_strategy
from ..strategies.params import StrategySpec
from ..validation import Options, check

#: the chunk fields an adapter may put into metadata: bookkeeping, kept out of embedded and LLM text (the
#: field table says which: not the text and context, which are the chunk itself)
METADATA_KEYS = tuple(spec.name for spec in CHUNK_FIELD_TABLE if spec.metadata)
#: how a list-valued field is joined into one string (a heading path as everywhere else)
_JOINERS = {spec.name: PATH_SEPARATOR for spec in CHUNK_FIELD_TABLE if spec.kind == "path"}
LIST_METADATA = ("join", "keep")
#: the frameworks' own names for the chunk size and overlap, and chunkwise's
ECOSYSTEM_NAMES = {"chunk_size": "max_tokens", "chunk_overlap": "overlap"}


def ecosystem_params(params: dict[str, Any]) -> dict[str, Any]:
    """``chunk_size``/``chunk_overlap`` (LangChain's and LlamaIndex's names) as ``max_tokens``/``overlap``,
    counted in the strategy's tokenizer; giving both spellings of one parameter is an error."""
    out = dict(params)
    for theirs, ours in ECOSYSTEM_NAMES.items():
        if theirs in out:
            if ours in out:
                raise ConfigError(f"give {theirs} or {ours}, not both")
            out[ours] = out.pop(theirs)
    return out


#: the constraints every adapter declares on its own parameters
ADAPTER_CONSTRAINTS = {"strategy": StrategySpec(), "list_metadata": Options(*LIST_METADATA)}


def check_list_metadata(value: str) -> str:
    return check(value, ADAPTER_CONSTRAINTS["list_metadata"], "list_metadata")


def build_strategy(strategy: str | Strategy, params: dict[str, Any]) -> Strategy:
    """A strategy object: the given one, or one built by name (``make_strategy``'s errors)."""
    return make_strategy(strategy, params)


def chunk_metadata(chunk: Chunk, list_metadata: str = "join") -> dict[str, Any]:
    """The chunk's provenance under its own field names (``start``, ``end``, ``page_start``, ...): no
    ``None`` values, and lists joined into strings unless ``list_metadata="keep"`` (empty lists left out)."""
    d = chunk.to_dict()
    out: dict[str, Any] = {}
    for k in METADATA_KEYS:
        v = d.get(k)
        if v is None or (isinstance(v, list) and not v):
            continue
        if isinstance(v, list) and list_metadata == "join":
            v = _JOINERS.get(k, ", ").join(str(x) for x in v)
        out[k] = v
    return out


def chunks_of(strategy: Strategy, text: str, source: str | None = None) -> list[Chunk]:
    """Chunk a plain text as a :class:`Document` (offsets index into ``text`` itself).

    ``source`` (the framework document's file path or id) makes chunk ids differ between documents
    that happen to share a text; without it the id comes from the text alone.
    """
    return strategy.chunk(Document(text, source=str(source) if source else "<text>"))


def require(module: str, extra: str, what: str):
    """Import ``module`` or raise the one-line error naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(what, extra) from None
