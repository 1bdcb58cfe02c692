"""The store's embeddings (``store.index``): what a put embeds and how a search's ``query`` ranks, as LangGraph's
``InMemoryStore(index=...)`` does it.

At a put, the texts at the index's ``fields`` (or the put's own ``index`` paths) are embedded and kept with the item
(``{path: vector}``; a path that finds several texts gets ``path.0``, ``path.1``...). At a search with a ``query``,
each item the filter finds scores the best cosine similarity of its vectors; items are ranked by it, ``offset`` and
``limit`` cut the scored ones, and items without vectors fill what is left of the page, unscored.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from durabletask.extensions.langgraph._server.config_store import StoreIndexSettings, check_fields

VECTOR_FLOATS_MAX = 16384
"""The most numbers the vectors of one item may hold (its texts times ``dims``): about 330 KB of JSON, kept in the
item's entity beside a value of up to 512 KiB, under DTS's 1 MB payload cap."""


EMBED_TIMEOUT = 60.0
"""Seconds one call of ``store.index.embed`` may take before the put or search fails (500 naming it)."""
QUERY_MAX_CHARS = 4096
"""The longest ``query`` a search takes."""


class EmbeddingError(RuntimeError):
    """``store.index.embed`` could not be loaded, or gave vectors of the wrong shape; the message says which."""


def _load_function(settings: StoreIndexSettings) -> Any:
    kind, where, name = settings.embed
    if kind == "path":
        module_name = f"_lgs_store_embed_{abs(hash(where))}"
        spec = importlib.util.spec_from_file_location(module_name, where)
        if spec is None or spec.loader is None:
            raise EmbeddingError(f"store.index.embed: cannot load '{where}' as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            sys.modules.pop(module_name, None)
            raise EmbeddingError(f"store.index.embed: importing '{where}' failed: {error!r}") from None
    else:
        try:
            module = importlib.import_module(where)
        except Exception as error:
            raise EmbeddingError(f"store.index.embed: cannot import module '{where}': {error!r}") from None
    function = getattr(module, name, None)
    if function is None:
        raise EmbeddingError(f"store.index.embed: '{where}' has no attribute '{name}'")
    if isinstance(function, Embeddings):
        return function  # an Embeddings object is used as it is, as LangGraph's server does
    if not callable(function):
        raise EmbeddingError(f"store.index.embed: '{where}:{name}' is a {type(function).__name__}, not a function")
    return function


def _check_vectors(vectors: Any, count: int, dims: int) -> list[list[float]]:
    if not isinstance(vectors, (list, tuple)) or len(vectors) != count:
        got = f"{len(vectors)} vectors" if isinstance(vectors, (list, tuple)) else type(vectors).__name__
        raise EmbeddingError(f"store.index.embed returned {got} for {count} texts; it must return one vector per text")
    checked: list[list[float]] = []
    for vector in vectors:
        try:
            numbers = [float(x) for x in vector]
        except (TypeError, ValueError):
            raise EmbeddingError(
                f"store.index.embed returned a {type(vector).__name__} where a vector of {dims} numbers belongs"
            ) from None
        if len(numbers) != dims:
            raise EmbeddingError(
                f"store.index.embed returned a vector of {len(numbers)} numbers; store.index.dims is {dims}"
            )
        if not all(math.isfinite(x) for x in numbers):
            raise EmbeddingError("store.index.embed returned a vector holding NaN or infinity")
        checked.append(numbers)
    return checked


def cosine(query: Sequence[float], vector: Sequence[float]) -> float:
    """Cosine similarity, as LangGraph's in-memory store computes it (0 when either vector is zero)."""
    dot_product = sum(a * b for a, b in zip(query, vector, strict=False))
    norm1 = sum(a * a for a in query) ** 0.5
    norm2 = sum(a * a for a in vector) ** 0.5
    return dot_product / (norm1 * norm2) if norm1 > 0 and norm2 > 0 else 0.0


class StoreIndex:
    """``store.index`` loaded: the embeddings and the fields.

    Args:
        settings: ``store.index`` of ``langgraph.json``.

    Raises:
        EmbeddingError: The function cannot be imported or found, or (functions only) a probe text embeds to
            something other than one vector of ``dims`` numbers.
    """

    def __init__(self, settings: StoreIndexSettings) -> None:
        self.settings = settings
        self.dims = settings.dims
        self._fields = [(p, tokenize_path(p) if p != "$" else p) for p in settings.fields]
        if settings.embed[0] == "provider":
            try:
                self._embeddings = ensure_embeddings(settings.embed[1])
            except Exception as error:
                raise EmbeddingError(f"store.index.embed {settings.embed[1]!r}: {error}") from None
        else:
            target = _load_function(settings)
            self._embeddings = target if isinstance(target, Embeddings) else ensure_embeddings(target)
            self._probe()

    def _probe(self) -> None:
        try:
            vectors = _in_thread(self._call(self._embeddings.aembed_documents(["store.index probe"])))
        except EmbeddingError as error:
            raise EmbeddingError(f"{error} (on a probe text)") from None
        _check_vectors(vectors, 1, self.dims)

    def texts(self, value: Mapping[str, Any], index: Sequence[str] | None) -> list[tuple[str, str]]:
        """``(path, text)`` for each text a put of ``value`` embeds (``index``: the put's own paths, if any)."""
        if index is None:
            paths: list[tuple[str, Any]] = self._fields
        else:
            paths = [(p, tokenize_path(p)) for p in check_fields(list(index), "index")]
        found: list[tuple[str, str]] = []
        for path, tokens in paths:
            try:
                texts = get_text_at_path(dict(value), tokens)
            except (RecursionError, ValueError, TypeError, KeyError, IndexError) as error:
                raise ValueError(
                    f"the field path {path[:100]!r} cannot be read from the value: {error!r}"[:400]
                ) from None
            if len(texts) > 1:
                found.extend((f"{path}.{number}", text) for number, text in enumerate(texts))
            elif texts:
                found.append((path, texts[0]))
        return found

    async def embed_value(self, value: Mapping[str, Any], index: Sequence[str] | None) -> dict[str, list[float]]:
        """The vectors of a put, by path.

        Raises:
            ValueError: Too many texts for one item (over ``VECTOR_FLOATS_MAX`` numbers).
            EmbeddingError: The embeddings failed or gave the wrong shape.
        """
        pairs = self.texts(value, index)
        if not pairs:
            return {}
        if len(pairs) * self.dims > VECTOR_FLOATS_MAX:
            raise ValueError(
                f"the item has {len(pairs)} texts to embed; at most {VECTOR_FLOATS_MAX // self.dims} fit one item "
                f"(store.index.dims is {self.dims})"
            )
        # The same text at several paths is embedded once, as LangGraph does.
        distinct = list(dict.fromkeys(text for _, text in pairs))
        vectors = _check_vectors(
            await self._call(self._embeddings.aembed_documents(distinct)), len(distinct), self.dims
        )
        by_text = dict(zip(distinct, vectors, strict=True))
        return {path: by_text[text] for path, text in pairs}

    async def embed_query(self, query: str) -> list[float]:
        """The vector of a search's ``query``."""
        vector = await self._call(self._embeddings.aembed_query(query))
        return _check_vectors([vector], 1, self.dims)[0]

    @staticmethod
    async def _call(awaitable: Any) -> Any:
        try:
            return await asyncio.wait_for(awaitable, EMBED_TIMEOUT)
        except TimeoutError:
            raise EmbeddingError(f"store.index.embed did not answer within {EMBED_TIMEOUT:.0f} s") from None
        except Exception as error:
            raise EmbeddingError(f"store.index.embed failed: {error!r}"[:1000]) from None


def rank(
    records: Sequence[dict[str, Any]], query: Sequence[float], *, limit: int, offset: int
) -> list[tuple[dict[str, Any], float | None]]:
    """The page of ``records`` (in the order the filter found them) ranked by ``query``, as LangGraph ranks."""
    scored: list[tuple[float, int, dict[str, Any]]] = []
    scoreless: list[dict[str, Any]] = []
    for position, record in enumerate(records):
        vectors = record.get("vectors") or {}
        if not vectors:
            scoreless.append(record)
            continue
        scored.append((max(cosine(query, v) for v in vectors.values()), position, record))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    kept: list[tuple[dict[str, Any], float | None]] = [(r, s) for s, _, r in scored[offset : offset + limit]]
    if scoreless and len(kept) < limit:
        kept.extend((record, None) for record in scoreless[: limit - len(kept)])
    return kept


def _in_thread(awaitable: Any) -> Any:
    import concurrent.futures

    async def wait() -> Any:
        return await awaitable

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wait()).result()


def load_index(settings: StoreIndexSettings | None) -> StoreIndex | None:
    """``store.index`` loaded (``None`` when there is none)."""
    return StoreIndex(settings) if settings is not None else None
