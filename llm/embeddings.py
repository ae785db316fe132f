"""Embedding models by name: `provider:name` for langchain's `init_embeddings`, or a name given
to `register_embeddings` for an object built elsewhere (tests, custom models).

Schema linking and R^3's k-shot examples read `Context` fields that name one.
"""

from __future__ import annotations

import threading

from langchain_core.embeddings import Embeddings

_registered: dict[str, Embeddings] = {}
_lock = threading.Lock()
_version = 0


def register_embeddings(name: str, embeddings: Embeddings) -> None:
    """Make a Context field naming `name` use an existing Embeddings object."""
    global _version
    with _lock:
        _registered[name] = embeddings
        _version += 1


def unregister_embeddings(name: str) -> None:
    global _version
    with _lock:
        _registered.pop(name, None)
        _version += 1


def registry_version() -> int:
    """Changes whenever a registration does, so that caches built on a name can tell."""
    return _version


def embeddings_named(name: str) -> Embeddings:
    if name in _registered:
        return _registered[name]
    from langchain.embeddings import init_embeddings

    return init_embeddings(name)
