"""Embedding similarity between a question and a schema's columns, for linking.

A schema's column embeddings are computed once per schema version: kept on the schema object
(a cached schema serves every question on its database) and, for named embeddings, in a file
beside the value index, keyed by the embeddings' name and the text of every column, so every
process, and every later run, reads them instead of paying for them again. A question costs
one `embed_documents` call: the question and its content words, each compared with every
column (a word of the question may name a column the sentence as a whole does not).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from macsql.database.cache_paths import cache_root
from macsql.database.schema import SchemaInfo
from macsql.nodes.link_terms import STOPWORDS

TOP_COLUMNS = 300
"""Columns the embeddings rank per question (the rest count as unranked)."""
_lock = threading.Lock()


def column_documents(schema: SchemaInfo) -> tuple[list[tuple[str, str]], list[str]]:
    """Each column as the text embedded: its table, name, readable name and description."""
    keys, docs = [], []
    for table in schema.tables:
        for col in table.columns:
            keys.append((table.name, col.name))
            text = f"{table.name} {col.name} {col.full_name} {col.description[:200]}"
            docs.append(" ".join(text.replace("_", " ").split()))
    return keys, docs


def vectors_path(schema: SchemaInfo, name: str, docs: list[str]) -> Path:
    digest = hashlib.sha256("\0".join([name, *docs]).encode()).hexdigest()[:24]
    safe = re.sub(r"[^\w.-]+", "_", schema.db_name)[:60]
    return cache_root() / "value_index" / "embeddings" / f"{safe}-{digest}.npy"


def schema_vectors(schema: SchemaInfo, embeddings: Embeddings, name: str) -> tuple[list[Any], Any]:
    """(column keys, normalised matrix): from the schema object, the disk, or the model."""
    import numpy as np

    memo: dict[Any, tuple[list[Any], Any, Embeddings]] = schema.__dict__.setdefault(
        "_link_vectors", {}
    )
    # An unnamed object is told apart by identity; the memo holds it, so the id stays its.
    memo_key = name or ("object", id(embeddings))
    with _lock:
        hit = memo.get(memo_key)
    if hit is not None:
        return hit[0], hit[1]
    keys, docs = column_documents(schema)
    path = vectors_path(schema, name, docs) if name else None
    matrix = None
    if path is not None and path.is_file():
        with contextlib.suppress(OSError, ValueError):
            matrix = np.load(path)
            if matrix.shape[0] != len(keys):
                matrix = None
    if matrix is None:
        raw = np.asarray(embeddings.embed_documents(docs), dtype="float32")
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        matrix = raw / np.where(norms == 0, 1.0, norms)
        if path is not None:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp.npy")
                np.save(tmp, matrix)
                tmp.replace(path)
    with _lock:
        memo.setdefault(memo_key, (keys, matrix, embeddings))
    return keys, matrix


def question_texts(asked: str) -> list[str]:
    """The question, then its content words (at most 16): one embedding call for all."""
    seen: list[str] = []
    for word in re.findall(r"[A-Za-z][A-Za-z'-]+", asked):
        lowered = word.lower()
        if lowered not in STOPWORDS and len(lowered) > 2 and lowered not in seen:
            seen.append(lowered)
    return [asked, *seen[:16]]


def column_similarity(
    schema: SchemaInfo, asked: str, embeddings: Embeddings, name: str = ""
) -> dict[tuple[str, str], float]:
    """The TOP_COLUMNS columns most similar to the question: half the sentence's cosine, half
    the best of its words'."""
    import numpy as np

    keys, matrix = schema_vectors(schema, embeddings, name)
    if not keys:
        return {}
    query = np.asarray(embeddings.embed_documents(question_texts(asked)), dtype="float32")
    norms = np.linalg.norm(query, axis=1, keepdims=True)
    query = query / np.where(norms == 0, 1.0, norms)
    sims = matrix @ query.T
    score = 0.5 * sims[:, 0] + (0.5 * sims[:, 1:].max(axis=1) if sims.shape[1] > 1 else 0.0)
    top = np.argsort(-score, kind="stable")[:TOP_COLUMNS]
    return {keys[i]: round(float(score[i]), 4) for i in top if score[i] > 0}
