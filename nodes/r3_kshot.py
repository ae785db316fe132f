"""R^3's k-shot examples: the training questions most similar to the question, with their SQL.

The default similarity is lexical (Okapi BM25 over word tokens): it works offline and needs no
model. Any langchain `Embeddings` can replace it (cosine similarity of question embeddings, as
in the paper), by name through `Context.few_shot_embeddings`, or directly through
`FewShotSelector(examples, embeddings=...)`; that path is langchain_core's
`SemanticSimilarityExampleSelector` over an `InMemoryVectorStore`.

`BM25Index` is also what SQLFixAgent's repair memory uses to find similar past repairs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.embeddings import Embeddings
from langgraph.runtime import Runtime

from macsql.graph.context import R3Context, context_of
from macsql.graph.state import FewShot, R3State
from macsql.nodes.events import emit
from macsql.nodes.lexical_similarity import BM25Index

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


_registered_embeddings: dict[str, Embeddings] = {}
_clients: dict[str, Embeddings] = {}
"""One client per embeddings name in a process: a client per question was a new connection
(and, with a cache keyed by object, a new whole-schema embedding) every time."""
_selectors: dict[tuple[str, float, str], FewShotSelector] = {}
_selectors_lock = threading.Lock()


def register_embeddings(name: str, embeddings: Embeddings) -> None:
    """Make `Context.few_shot_embeddings = name` use an existing Embeddings object."""
    with _selectors_lock:
        _registered_embeddings[name] = embeddings
        for key in [k for k in _selectors if k[2] == name]:
            del _selectors[key]


def unregister_embeddings(name: str) -> None:
    with _selectors_lock:
        _registered_embeddings.pop(name, None)
        for key in [k for k in _selectors if k[2] == name]:
            del _selectors[key]


def embeddings_named(name: str) -> Embeddings:
    """The embeddings a name means: a registered object, 'glove' (offline word vectors, the
    `glove` extra), or 'provider:name' through langchain's init_embeddings; built once per
    name and process."""
    with _selectors_lock:
        if name in _registered_embeddings:
            return _registered_embeddings[name]
        client = _clients.get(name)
    if client is not None:
        return client
    if name == "glove":
        from macsql.llm.word_vectors import GloveEmbeddings

        client = GloveEmbeddings()
    else:
        from langchain.embeddings import init_embeddings

        client = init_embeddings(name)
    with _selectors_lock:
        return _clients.setdefault(name, client)


def selector_for(pool_path: str, embeddings_name: str | None = None) -> FewShotSelector:
    """One selector per pool file (and embeddings), built once and reused across questions."""
    path = Path(pool_path).expanduser().resolve()
    key = (str(path), path.stat().st_mtime, embeddings_name or "")
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


def kshot_node(state: R3State, runtime: Runtime[R3Context]) -> R3State:
    """Choose `k_shot` examples from `few_shot_pool`; nothing when either is unset."""
    context = context_of(runtime, R3Context)
    if context.k_shot <= 0 or not context.few_shot_pool:
        return {"few_shots": [], "few_shot_error": None}
    emit(runtime, "kshot", "start", k=context.k_shot, pool=context.few_shot_pool)
    try:
        selector = selector_for(context.few_shot_pool, context.few_shot_embeddings)
        chosen = selector.select(state.get("question") or "", context.k_shot)
    except Exception as exc:  # missing file, bad JSON, embeddings unreachable
        message = f"k-shot examples unavailable: {type(exc).__name__}: {exc}"
        emit(runtime, "kshot", "error", error=message)
        return {"few_shots": [], "few_shot_error": message}
    emit(runtime, "kshot", "done", questions=[e.question for e in chosen])
    return {"few_shots": [e.to_dict() for e in chosen], "few_shot_error": None}
