"""``store`` of ``langgraph.json``: ``store.index``, the embeddings a store search's ``query`` ranks items by.

Read as LangGraph's server reads it: ``dims`` (the length of every vector), ``embed`` (a function given as
``./path.py:function`` or ``module:function``, or a provider string such as ``openai:text-embedding-3-small``) and
``fields`` (the JSON paths of the text embedded; ``["$"]``, the whole value, when absent). Reading imports nothing;
a provider string whose packages are not installed is refused here, naming what to install.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DIMS_MAX = 4096
"""The longest embedding vector ``store.index.dims`` may name."""
FIELDS_MAX = 100
"""The most paths ``store.index.fields`` (or a put's ``index``) may list."""

# Providers of LangChain's init_embeddings, and the package each needs beside langchain.
_PROVIDERS = {
    "openai": "langchain_openai",
    "azure_openai": "langchain_openai",
    "google_vertexai": "langchain_google_vertexai",
    "google_genai": "langchain_google_genai",
    "bedrock": "langchain_aws",
    "cohere": "langchain_cohere",
    "mistralai": "langchain_mistralai",
    "huggingface": "langchain_huggingface",
    "ollama": "langchain_ollama",
}


@dataclass(frozen=True)
class StoreIndexSettings:
    """``store.index``.

    Args:
        dims: The length of every embedding vector.
        embed: ``("path", file, function)``, ``("module", module, function)`` or ``("provider", spec, "")``.
        fields: The JSON paths embedded when a put names none.
    """

    dims: int
    embed: tuple[str, str, str]
    fields: tuple[str, ...] = ("$",)

    @property
    def embed_text(self) -> str:
        """``embed`` as written (a path made absolute)."""
        kind, where, function = self.embed
        return where if kind == "provider" else f"{where}:{function}"


def parse_store(store: Any, base: Path) -> StoreIndexSettings | None:
    """``store`` of ``langgraph.json``; ``None`` when it has no ``index``.

    Raises:
        ValueError: A key is wrong; the message names it.
    """
    if store is None:
        return None
    if not isinstance(store, dict):
        raise ValueError("key 'store' must be an object")
    for key in store:
        if key == "ttl":
            raise ValueError("store.ttl defaults are not supported (a put's ttl is)")
        if key != "index":
            raise ValueError(f"store.{key} is unknown; known: index")
    index = store.get("index")
    if index is None:
        return None
    if not isinstance(index, dict):
        raise ValueError("store.index must be an object with 'dims', 'embed' and optionally 'fields'")
    for key in index:
        if key not in ("dims", "embed", "fields"):
            raise ValueError(f"store.index.{key} is unknown; known: dims, embed, fields")
    dims = index.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= DIMS_MAX:
        raise ValueError(f"store.index.dims must be a whole number from 1 to {DIMS_MAX}, got {dims!r}"[:300])
    return StoreIndexSettings(
        dims=dims, embed=_embed(index.get("embed"), base), fields=check_fields(index.get("fields"))
    )


def check_fields(fields: Any, where: str = "store.index.fields") -> tuple[str, ...]:
    """The JSON paths of ``fields`` (``("$",)`` when ``None``), each one LangGraph's ``tokenize_path`` reads."""
    if fields is None:
        return ("$",)
    if not isinstance(fields, list) or not fields or len(fields) > FIELDS_MAX:
        raise ValueError(f"{where} must be a list of 1 to {FIELDS_MAX} field paths (strings)")
    for number, path in enumerate(fields):
        if not isinstance(path, str) or not path or len(path) > 1024:
            raise ValueError(f"{where}[{number}] must be a non-empty string of at most 1024 characters")
        if path.count("[") != path.count("]") or path.count("{") != path.count("}"):
            raise ValueError(f"{where}[{number}]: {path[:100]!r} has unbalanced brackets")
    return tuple(fields)


def _embed(embed: Any, base: Path) -> tuple[str, str, str]:
    if not isinstance(embed, str) or ":" not in embed:
        raise ValueError(
            "store.index.embed must be './path.py:function', 'module:function' or a provider string such as "
            f"'openai:text-embedding-3-small', got {embed!r}"[:400]
        )
    where, _, function = embed.rpartition(":")
    if where.endswith(".py") or "/" in where:
        file = (base / where).resolve()
        if not file.is_file():
            raise ValueError(f"store.index.embed: file '{where}' does not exist ({file})")
        if not function.isidentifier():
            raise ValueError(f"store.index.embed: {function!r} is not a function name")
        return ("path", str(file), function)
    provider = where.strip()
    if provider in _PROVIDERS:
        missing = [p for p in ("langchain", _PROVIDERS[provider]) if importlib.util.find_spec(p) is None]
        if missing:
            packages = " ".join("'langchain>=0.3.9'" if p == "langchain" else p.replace("_", "-") for p in missing)
            raise ValueError(
                f"store.index.embed {embed!r} needs a model of the provider '{provider}', loaded by LangChain's "
                f"init_embeddings; run: pip install {packages}, or give a function as './path.py:function'"
            )
        return ("provider", embed, "")
    if not all(part.isidentifier() for part in where.split(".")) or not function.isidentifier():
        raise ValueError(
            f"store.index.embed {embed!r} is neither 'module:function', './path.py:function' nor a provider string "
            f"(known providers: {', '.join(sorted(_PROVIDERS))})"
        )
    return ("module", where, function)
