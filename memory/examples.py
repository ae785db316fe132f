"""Few-shot examples: a pool of training questions with their SQL, and the examples most like
a new question (R^3's k-shot).

The default similarity is lexical (Okapi BM25 over word tokens): it works offline and needs no
model. Any langchain `Embeddings` can replace it (cosine similarity of question embeddings, as
in the paper), by name through `Context.few_shot_embeddings`, or directly through
`FewShotSelector(examples, embeddings=...)`; that path is langchain_core's
`SemanticSimilarityExampleSelector` over an `InMemoryVectorStore`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.embeddings import Embeddings

from macsql.core.records import FewShot
from macsql.llm.embeddings import embeddings_named, registry_version
from macsql.memory.similarity import BM25Index

if TYPE_CHECKING:
    from langchain_core.example_selectors import SemanticSimilarityExampleSelector


@dataclass(frozen=True)
class FewShotExample:
    question: str
    sql: str
    db_id: str = ""
    evidence: str = ""

    def to_dict(self) -> FewShot:
        return {
            "question": self.question,
            "sql": self.sql,
            "db_id": self.db_id,
            "evidence": self.evidence,
        }


def load_pool(path: str | Path) -> list[FewShotExample]:
    """Examples from a Spider (`query`) or BIRD (`SQL`) style JSON list."""
    items = json.loads(Path(path).expanduser().read_text("utf-8"))
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a JSON list of examples")
    pool = []
    for item in items:
        question = str(item.get("question") or "").strip()
        sql = str(item.get("query") or item.get("SQL") or item.get("sql") or "").strip()
        if question and sql:
            pool.append(
                FewShotExample(
                    question=question,
                    sql=" ".join(sql.split()),
                    db_id=str(item.get("db_id") or ""),
                    evidence=str(item.get("evidence") or "").strip(),
                )
            )
    return pool


class FewShotSelector:
    """Picks the examples whose questions are most like a new question."""

    def __init__(
        self, examples: Sequence[FewShotExample], embeddings: Embeddings | None = None
    ) -> None:
        self.examples = list(examples)
        self.embeddings = embeddings
        self._index: BM25Index | None = None
        self._semantic: SemanticSimilarityExampleSelector | None = None
        self._lock = threading.Lock()

    def select(self, question: str, k: int) -> list[FewShotExample]:
        """The `k` most similar examples, most similar first. The question itself would leak
        its answer and a repeated question adds nothing, so neither is chosen."""
        if k <= 0 or not self.examples:
            return []
        if self.embeddings is not None:
            return self._select_by_embeddings(question, k)
        with self._lock:
            if self._index is None:
                self._index = BM25Index([e.question for e in self.examples])
        scores = self._index.scores(question)
        asked = _normalized(question)
        ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        chosen: list[FewShotExample] = []
        seen: set[str] = set()
        for i in ranked:
            example = self.examples[i]
            text = _normalized(example.question)
            if text == asked or text in seen:
                continue
            seen.add(text)
            chosen.append(example)
            if len(chosen) == k:
                break
        return chosen

    def _select_by_embeddings(self, question: str, k: int) -> list[FewShotExample]:
        """langchain's semantic-similarity selector over an in-memory vector store of the
        pool's questions (each question once, its first example), built on first use."""
        # The vector store imports numpy: only a pool with embeddings pays for it.
        from langchain_core.example_selectors import SemanticSimilarityExampleSelector
        from langchain_core.vectorstores import InMemoryVectorStore

        assert self.embeddings is not None
        with self._lock:
            if self._semantic is None:
                first: dict[str, int] = {}
                for position, example in enumerate(self.examples):
                    first.setdefault(_normalized(example.question), position)
                self._semantic = SemanticSimilarityExampleSelector.from_examples(
                    [
                        {"question": self.examples[i].question, "position": str(i)}
                        for i in first.values()
                    ],
                    self.embeddings,
                    InMemoryVectorStore,
                    k=k,
                    input_keys=["question"],
                )
        asked = _normalized(question)
        per_call = self._semantic.model_copy(
            update={
                "k": k,
                "vectorstore_kwargs": {
                    "filter": lambda doc: _normalized(doc.page_content) != asked
                },
            }
        )
        chosen = per_call.select_examples({"question": question})
        return [self.examples[int(example["position"])] for example in chosen]


def _normalized(question: str) -> str:
    return " ".join(question.lower().split())


_selectors: dict[tuple[str, float, str, int], FewShotSelector] = {}
_selectors_lock = threading.Lock()


def selector_for(pool_path: str, embeddings_name: str | None = None) -> FewShotSelector:
    """One selector per pool file (and embeddings), built once and reused across questions."""
    path = Path(pool_path).expanduser().resolve()
    key = (str(path), path.stat().st_mtime, embeddings_name or "", registry_version())
    with _selectors_lock:
        cached = _selectors.get(key)
    if cached is not None:
        return cached
    embeddings = embeddings_named(embeddings_name) if embeddings_name else None
    selector = FewShotSelector(load_pool(path), embeddings)
    with _selectors_lock:
        return _selectors.setdefault(key, selector)


def format_examples(examples: Iterable[FewShot]) -> str:
    """The examples as the writer sees them: question (and evidence), then SQL."""
    blocks = []
    for i, ex in enumerate(examples, 1):
        lines = [f"Example {i} (database {ex.get('db_id') or 'unknown'})"]
        lines.append(f"Question: {ex['question']}")
        if ex.get("evidence"):
            lines.append(f"Evidence: {ex['evidence']}")
        lines.append(f"```sql\n{ex['sql']}\n```")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
