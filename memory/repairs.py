"""SQLFixAgent's repair memory: past repairs (a question, its wrong SQL, the fixed SQL).

It lives in LangGraph's store (`BaseStore`), under `REPAIR_NAMESPACE`: the store the graph was
compiled with (a persistent one in production, the LangGraph server's own under `langgraph dev`),
else an in-memory store of the run's own (`store_of`). The SQLRefiner retrieves the repairs
whose questions are most like the current one: by the store's semantic search when the store has
an embedding index, else lexically (BM25).

The paper builds this memory by running the SQL generator over a training set and keeping its
mistakes with the gold SQL as the fix; `seed_repair_memory` loads such pairs, and
`Context.repair_memory_file` loads them from a JSON file. Those are shared on purpose: they go
under `SHARED_NAMESPACE`, which every run reads.

A repair a run records (`Context.record_repairs`) holds a user's question, SQL and the
reviewer's reason, which may quote their data. It is kept under a namespace of its own
(`recorded_namespace`) named by the user, the database and, by default, the conversation
thread: another user, another database or another thread never reads it, unless
`Context.repair_memory_scope` shares it on purpose ('user': every thread of that user on that
database; 'database': every user of that database).
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from macsql.memory.similarity import BM25Index

REPAIR_NAMESPACE = ("macsql", "sqlfix", "repairs")
SHARED_NAMESPACE = (*REPAIR_NAMESPACE, "shared")
"""Seeded repairs (training data, `Context.repair_memory_file`): read by every run."""
_RECORDED = (*REPAIR_NAMESPACE, "recorded")
_ALL_USERS = "all-users"
_PAGE = 500

# The files already loaded into each store, by the store object itself: an id() could be reused
# by a new store once the old one is gone, which would then never be seeded.
_seeded: weakref.WeakKeyDictionary[BaseStore, set[tuple[str, float]]] = weakref.WeakKeyDictionary()
_seed_lock = threading.Lock()

RepairPair = Mapping[str, Any] | Sequence[str]


_RUN_STORE_KEY = "_macsql_repair_store"


def store_of(runtime: Any) -> BaseStore:
    """The graph's store; for a graph compiled without one, an in-memory store of the run's own,
    kept on its Context object (one eval, one `ask`, one server request: what a run shares),
    so that nothing a run records outlives it or reaches another run in the process."""
    store = getattr(runtime, "store", None)
    if store is not None:
        return store
    context = getattr(runtime, "context", None)
    if not hasattr(context, "__dict__"):  # no Context object (none, or JSON): this call's own
        return InMemoryStore()
    kept: BaseStore = vars(context).setdefault(_RUN_STORE_KEY, InMemoryStore())
    return kept


def _normalise_pair(pair: RepairPair) -> dict[str, str]:
    if isinstance(pair, Mapping):
        value = {
            "question": pair.get("question"),
            "wrong_sql": pair.get("wrong_sql") or pair.get("predicted") or pair.get("pred"),
            "fixed_sql": pair.get("fixed_sql")
            or pair.get("gold")
            or pair.get("query")
            or pair.get("SQL"),
            "db_id": pair.get("db_id"),
            "evidence": pair.get("evidence"),
            "error": pair.get("error") or pair.get("reason"),
        }
    else:
        question, wrong, fixed, *rest = pair
        value = {"question": question, "wrong_sql": wrong, "fixed_sql": fixed}
        value["db_id"] = rest[0] if rest else ""
    out = {k: " ".join(str(v or "").split()) for k, v in value.items()}
    if not (out["question"] and out["wrong_sql"] and out["fixed_sql"]):
        raise ValueError(f"a repair needs a question, a wrong SQL and a fixed SQL: {pair!r}")
    return out


def _key(repair: Mapping[str, str]) -> str:
    text = "\x1f".join(repair.get(k, "") for k in ("db_id", "question", "wrong_sql", "fixed_sql"))
    return hashlib.sha1(text.encode()).hexdigest()


def seed_repair_memory(
    store: BaseStore,
    pairs: Iterable[RepairPair],
    namespace: tuple[str, ...] = SHARED_NAMESPACE,
) -> int:
    """Put past repairs into the store (by default the shared namespace); returns how many.
    Idempotent: a key is the content hash.

    A pair is a mapping (question, wrong_sql, fixed_sql, and optionally db_id, evidence, error;
    `predicted` and `gold`/`query`/`SQL` are accepted as names) or a tuple
    (question, wrong_sql, fixed_sql[, db_id]).
    """
    count = 0
    for pair in pairs:
        repair = _normalise_pair(pair)
        store.put(namespace, _key(repair), repair, index=_indexed_fields(repair))
        count += 1
    return count


def _label(text: str) -> str:
    """A namespace label: a store refuses periods and empty labels."""
    cleaned = "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:40].strip("-")
    return cleaned or "none"


def recorded_namespace(
    scope: str, user: str | None, database: str, thread: str | None
) -> tuple[str, ...] | None:
    """Where a run's recorded repairs are written and read, or None when there is none: the
    'thread' scope (the default) with no thread id keeps nothing across runs.

    `database` is the database as the run names it (a path or URL, hashed here: it may carry a
    password)."""
    digest = hashlib.sha256(database.encode()).hexdigest()[:16]
    stem = database.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0]
    db_label = f"{_label(stem)}-{digest}"
    user_label = _label(user or "anonymous")
    if scope == "database":
        return (*_RECORDED, _ALL_USERS, db_label)
    if scope == "user":
        return (*_RECORDED, user_label, db_label)
    if not thread:
        return None
    return (*_RECORDED, user_label, db_label, _label(thread))


def _indexed_fields(repair: Mapping[str, str]) -> list[str]:
    """What a store with an embedding index embeds: the question, and the evidence when there
    is one (retrieval asks with both). A store without an index ignores this."""
    return ["question", "evidence"] if repair.get("evidence") else ["question"]


def load_repair_pairs(path: str | Path) -> list[dict[str, Any]]:
    """Repairs from a JSON list, or JSON lines, of mappings."""
    text = Path(path).expanduser().read_text("utf-8").strip()
    if text.startswith("["):
        items = json.loads(text)
    else:
        items = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [dict(item) for item in items]


def ensure_seeded(store: BaseStore, path: str | None) -> None:
    """Load `path` into `store` once per process (per file version)."""
    if not path:
        return
    resolved = Path(path).expanduser().resolve()
    version = (str(resolved), resolved.stat().st_mtime)
    with _seed_lock:
        loaded = _seeded.setdefault(store, set())
        if version in loaded:
            return
        seed_repair_memory(store, load_repair_pairs(resolved))
        loaded.add(version)


def record_repair(
    store: BaseStore, repair: Mapping[str, Any], namespace: tuple[str, ...] | None
) -> None:
    """Remember a repair that passed the check, for later questions in `namespace` (from
    `recorded_namespace`; None keeps nothing)."""
    if namespace is not None:
        seed_repair_memory(store, [repair], namespace)


def all_repairs(
    store: BaseStore, namespaces: Sequence[tuple[str, ...]] = (SHARED_NAMESPACE,)
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for namespace in namespaces:
        offset = 0
        while True:
            page = store.search(namespace, limit=_PAGE, offset=offset)
            items.extend(dict(item.value) for item in page)
            if len(page) < _PAGE:
                break
            offset += _PAGE
    return items


def _repair_text(repair: Mapping[str, Any]) -> str:
    return f"{repair.get('question', '')} {repair.get('evidence', '')}"


def retrieve_similar_repairs(
    store: BaseStore,
    question: str,
    k: int,
    *,
    evidence: str = "",
    namespaces: Sequence[tuple[str, ...]] = (SHARED_NAMESPACE,),
) -> list[dict[str, Any]]:
    """The `k` past repairs whose questions are most like `question`, most similar first, from
    `namespaces` (the shared one, and the run's own `recorded_namespace`).

    Repairs that share no word with the question are left out: an unrelated example only adds
    noise to the prompt.
    """
    if k <= 0:
        return []
    query = f"{question} {evidence}".strip()
    if getattr(store, "index_config", None):  # the store embeds: use its semantic search
        found = [
            item
            for namespace in namespaces
            for item in store.search(namespace, query=query, limit=k)
        ]
        found.sort(key=lambda item: item.score or 0.0, reverse=True)
        return [{**item.value, "score": round(item.score or 0.0, 4)} for item in found[:k]]
    repairs = all_repairs(store, namespaces)
    if not repairs:
        return []
    index = BM25Index([_repair_text(r) for r in repairs])
    return [
        {**repairs[i], "score": round(score, 4)} for i, score in index.top(query, k) if score > 0
    ]
