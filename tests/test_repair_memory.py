"""SQLFixAgent's repair memory in a store with an embedding index, and its seeding per store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.memory import InMemoryStore

from macsql.memory import repairs as sqlfix_memory
from macsql.memory.repairs import (
    all_repairs,
    ensure_seeded,
    retrieve_similar_repairs,
    seed_repair_memory,
)

REPAIRS = [
    ("How many concerts were there in 2014?", "SELECT count(*) FROM concert", "SELECT 1"),
    ("List the singers from Japan by age.", "SELECT name FROM singer", "SELECT 2"),
    ("What is the total budget of all departments?", "SELECT budget FROM department", "SELECT 3"),
]


class KeywordEmbedding(Embeddings):
    """Deterministic: one dimension per keyword, counting the words that start with it."""

    KEYWORDS = ("concert", "singer", "japan", "budget", "department", "age", "year")

    def _embed(self, text: str) -> list[float]:
        words = re.findall(r"[a-z]+", text.lower())
        return [float(sum(w.startswith(k) for w in words)) for k in self.KEYWORDS]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def _indexed_store() -> InMemoryStore:
    dims = len(KeywordEmbedding.KEYWORDS)
    return InMemoryStore(index={"dims": dims, "embed": KeywordEmbedding()})


def test_semantic_search_finds_the_similar_repair_not_the_first_one() -> None:
    store = _indexed_store()
    seed_repair_memory(store, REPAIRS)
    found = retrieve_similar_repairs(store, "Sum the budget of each department", k=1)
    assert [r["fixed_sql"] for r in found] == ["SELECT 3"]
    assert found[0]["score"] > 0.9
    ranked = retrieve_similar_repairs(store, "Which singers come from Japan?", k=3)
    assert ranked[0]["fixed_sql"] == "SELECT 2"
    assert ranked[0]["score"] > ranked[1]["score"]


def test_evidence_is_embedded_too() -> None:
    store = _indexed_store()
    seed_repair_memory(
        store,
        [
            *REPAIRS,
            {
                "question": "Show the oldest ones",
                "evidence": "oldest refers to the largest age of a singer",
                "wrong_sql": "SELECT name FROM singer",
                "fixed_sql": "SELECT 4",
            },
        ],
    )
    found = retrieve_similar_repairs(
        store, "Who are the youngest?", k=1, evidence="youngest refers to the smallest age"
    )
    assert found[0]["fixed_sql"] == "SELECT 4"


def test_a_new_store_is_seeded_even_when_it_reuses_an_old_ones_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a store is gone, a new one may get its id(); CPython does not promise when, so
    every id() the memory module takes is made equal, as if each store reused the last one's."""
    monkeypatch.setattr(sqlfix_memory, "id", lambda obj: 1, raising=False)
    memory = tmp_path / "repairs.json"
    memory.write_text(
        json.dumps([{"question": q, "wrong_sql": w, "fixed_sql": f} for q, w, f in REPAIRS])
    )
    first, second = InMemoryStore(), InMemoryStore()
    ensure_seeded(first, str(memory))
    ensure_seeded(second, str(memory))
    assert len(all_repairs(first)) == len(all_repairs(second)) == 3
    seed_repair_memory(second, [("Another question", "SELECT 5", "SELECT 6")])
    ensure_seeded(second, str(memory))  # once per store and file version: nothing reloaded
    assert len(all_repairs(second)) == 4


def test_without_a_graph_store_a_run_keeps_its_repairs_to_itself() -> None:
    """No process-wide fallback: two runs (two Context objects) never share a store, and one
    run's nodes share one."""
    from types import SimpleNamespace

    from macsql.core.context import Context
    from macsql.memory.repairs import store_of

    first, second = Context(), Context()
    one = store_of(SimpleNamespace(store=None, context=first))
    assert store_of(SimpleNamespace(store=None, context=first)) is one
    assert store_of(SimpleNamespace(store=None, context=second)) is not one
    given = InMemoryStore()
    assert store_of(SimpleNamespace(store=given, context=first)) is given
    # A context given as JSON (a server) has nowhere to keep one: the call gets its own.
    as_json = SimpleNamespace(store=None, context={"model": "m"})
    assert store_of(as_json) is not store_of(as_json)
