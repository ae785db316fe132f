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
from macsql.linking.terms import STOPWORDS

TOP_COLUMNS = 300
"""Columns the embeddings rank per question (the rest count as unranked)."""
WORDS_PER_WORD = 2
WORD_COSINE_SIGMAS = 2.0
"""A schema word stands in for a question word at a cosine this many standard deviations over
the mean cosine between the schema's own words, or more: near synonyms and close relatives
("vocalist" and "singer"), not mere topical neighbours. Measured in the embeddings' own units,
so every model is held to the same bar: cosines of one model sit higher and spread wider than
another's (GloVe 50d: mean 0.15, deviation 0.23 between the catalog's words; all-MiniLM-L6-v2:
0.24 and 0.08), and a fixed cosine is strict for one and loose for the other. 2.0 is the fixed
0.6 first chosen for GloVe, in GloVe's units on the catalog (0.15 + 1.99 × 0.23)."""
MIN_WORD_COSINE = 0.6
"""The bar when the schema has fewer than two words to measure the embeddings' scale with."""
MAX_SAMPLED_WORDS = 1500
"""Schema words the scale is measured on, at most (evenly spaced): a bounded cost per schema."""
EXPAND_KNOWN = True
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
    memo: dict[Any, Any] = schema.__dict__.setdefault("_link_vectors", {})
    with _lock:
        documents = memo.get("column_documents")
    if documents is None:
        documents = column_documents(schema)
        with _lock:
            documents = memo.setdefault("column_documents", documents)
    keys, docs = documents
    return keys, _cached_matrix(schema, embeddings, name, "columns", docs)


def question_texts(asked: str) -> list[str]:
    """The question, then its content words (at most 16): one embedding call for all."""
    seen: list[str] = []
    for word in re.findall(r"[A-Za-z][A-Za-z'-]+", asked):
        lowered = word.lower()
        if lowered not in STOPWORDS and len(lowered) > 2 and lowered not in seen:
            seen.append(lowered)
    return [asked, *seen[:16]]


def _normalised(vectors: Any) -> Any:
    import numpy as np

    matrix = np.asarray(vectors, dtype="float32")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _cached_matrix(
    schema: SchemaInfo, embeddings: Embeddings, name: str, kind: str, texts: list[str]
) -> Any:
    """Normalised embeddings of `texts`, once per schema object and, for named embeddings,
    once per text and embeddings on disk."""
    import numpy as np

    memo: dict[Any, tuple[Any, Embeddings]] = schema.__dict__.setdefault("_link_vectors", {})
    memo_key = (kind, name or id(embeddings))
    with _lock:
        hit = memo.get(memo_key)
    if hit is not None:
        return hit[0]
    path = vectors_path(schema, f"{name}\0{kind}", texts) if name else None
    matrix = None
    if path is not None and path.is_file():
        with contextlib.suppress(OSError, ValueError):
            matrix = np.load(path)
            if matrix.shape[0] != len(texts):
                matrix = None
    if matrix is None:
        matrix = _normalised(embeddings.embed_documents(texts)) if texts else np.zeros((0, 1))
        if path is not None:
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp.npy")
                np.save(tmp, matrix)
                tmp.replace(path)
    with _lock:
        memo.setdefault(memo_key, (matrix, embeddings))
    return matrix


def word_threshold(schema: SchemaInfo, words: Any, key: Any) -> float:
    """The cosine at which a schema word stands in for a question word, for these embeddings:
    WORD_COSINE_SIGMAS standard deviations over the mean cosine between the schema's words
    (`words`, normalised rows), computed once per schema and embeddings."""
    import numpy as np

    memo: dict[Any, Any] = schema.__dict__.setdefault("_link_vectors", {})
    memo_key = ("threshold", key)
    with _lock:
        hit = memo.get(memo_key)
    if hit is not None:
        return float(hit)
    sample = words[:: max(1, -(-words.shape[0] // MAX_SAMPLED_WORDS))]
    if sample.shape[0] < 2:
        return MIN_WORD_COSINE
    pairs = (sample @ sample.T)[np.triu_indices(sample.shape[0], 1)]
    threshold = float(pairs.mean() + WORD_COSINE_SIGMAS * pairs.std())
    with _lock:
        memo.setdefault(memo_key, threshold)
    return threshold


def question_semantics(
    schema: SchemaInfo,
    asked: str,
    vocabulary: list[str],
    embeddings: Embeddings,
    name: str = "",
) -> tuple[dict[tuple[str, str], float], list[str]]:
    """One embedding call for the question and its words, then:

    - the TOP_COLUMNS columns most similar to the question (half the sentence's cosine, half
      the best of its words');
    - the schema's name words nearest to each question word that is not one of them
      ("vocalists" -> "singer"): at most WORDS_PER_WORD each, at a cosine of `word_threshold`
      or more (in the model's own scale: WORD_COSINE_SIGMAS deviations over the mean cosine
      between the schema's words). Linking then reads the question as if it had said them too."""
    import numpy as np

    keys, matrix = schema_vectors(schema, embeddings, name)
    words = _cached_matrix(schema, embeddings, name, "words", vocabulary)
    texts = question_texts(asked)
    query = _normalised(embeddings.embed_documents(texts))
    columns: dict[tuple[str, str], float] = {}
    if keys:
        sims = matrix @ query.T
        score = 0.5 * sims[:, 0] + (0.5 * sims[:, 1:].max(axis=1) if sims.shape[1] > 1 else 0.0)
        top = np.argsort(-score, kind="stable")[:TOP_COLUMNS]
        columns = {keys[i]: round(float(score[i]), 4) for i in top if score[i] > 0}
    known = set(vocabulary)
    expansions: list[str] = []
    if vocabulary and len(texts) > 1:
        floor = word_threshold(schema, words, name or id(embeddings))
        sims = words @ query[1:].T  # vocabulary × question words
        for j, word in enumerate(texts[1:]):
            if not EXPAND_KNOWN and (word in known or word.rstrip("s") in known):
                continue
            column = sims[:, j]
            for i in np.argsort(-column, kind="stable")[: WORDS_PER_WORD + 1]:
                if column[i] >= floor and vocabulary[i] != word.rstrip("s"):
                    expansions.append(vocabulary[i])
    return columns, expansions
