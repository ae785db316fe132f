"""Lexical similarity (BM25) over short texts: offline, no model, no index files.

Used to pick k-shot examples by question (R^3) and past repairs by question (SQLFixAgent).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"[a-z0-9]+")
# Words so common in questions that they say nothing about which examples are alike.
_STOPWORD_TEXT = """
a an the of in on at to for by with and or is are was were be been what which who whom
whose how many much do does did that this these those there their its it as from all each
every me show list give find return
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _fold(token: str) -> str:
    """A light plural folding, so that 'singers' matches 'singer'."""
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens, plurals folded, without the commonest question words."""
    return [_fold(t) for t in _TOKEN.findall((text or "").lower()) if t not in _STOPWORDS]


class BM25Index:
    """Okapi BM25 over a fixed list of documents (k1=1.5, b=0.75)."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._docs = [Counter(tokenize(d)) for d in documents]
        self._lengths = [sum(c.values()) for c in self._docs]
        self._avg = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        df: Counter[str] = Counter()
        for doc in self._docs:
            df.update(doc.keys())
        n = len(self._docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def __len__(self) -> int:
        return len(self._docs)

    def scores(self, query: str) -> list[float]:
        terms = tokenize(query)
        out = []
        for doc, length in zip(self._docs, self._lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self._avg) if self._avg else self.k1
            score = 0.0
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    score += self._idf[term] * tf * (self.k1 + 1) / (tf + norm)
            out.append(score)
        return out

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """The `k` best (index, score) pairs, best first; ties keep the documents' order."""
        ranked = sorted(enumerate(self.scores(query)), key=lambda item: (-item[1], item[0]))
        return ranked[: max(k, 0)]
