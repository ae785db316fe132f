"""langchain's LLM cache in a SQLite file, reading back only chat replies.

langchain_core defines the cache interface (`BaseCache`) and ships only an in-memory cache; its
SQLite cache lives in langchain-community, which is being sunset and takes 1.7 s to import. So
the cache is our own, on SQLAlchemy, in the very table that langchain-community's `SQLiteCache`
writes (existing cache files keep working). Entries are revived with `langchain_core.load.loads`
allowed exactly the classes a chat reply is made of (a `ChatGeneration` holding an `AIMessage`):
a tampered cache file cannot construct anything else, and no warning is printed on a hit.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core._api import LangChainBetaWarning
from langchain_core.caches import BaseCache
from langchain_core.load import dumps, loads
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, Generation
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, delete, select
from sqlalchemy.dialects.sqlite import insert

CACHED_CLASSES = (ChatGeneration, ChatGenerationChunk, AIMessage, AIMessageChunk, Generation)

_ENTRIES = Table(
    "full_llm_cache",  # langchain-community's SQLiteCache table, column for column
    MetaData(),
    Column("prompt", String, primary_key=True),
    Column("llm", String, primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("response", String),
)


class ChatReplySQLiteCache(BaseCache):
    """A SQLite-file cache whose lookups revive only chat generations and AI messages."""

    def __init__(self, database_path: str) -> None:
        self.engine = create_engine(f"sqlite:///{database_path}")
        _ENTRIES.metadata.create_all(self.engine)

    def lookup(self, prompt: str, llm_string: str) -> list[Any] | None:
        stmt = (
            select(_ENTRIES.c.response)
            .where(_ENTRIES.c.prompt == prompt, _ENTRIES.c.llm == llm_string)
            .order_by(_ENTRIES.c.idx)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).fetchall()
        if not rows:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LangChainBetaWarning)  # `loads` is "beta"
                return [loads(row[0], allowed_objects=list(CACHED_CLASSES)) for row in rows]
        except Exception:  # an entry of another kind, or an old format: treat as a miss
            return None

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Generation]) -> None:
        if not return_val:
            return
        rows = [
            {"prompt": prompt, "llm": llm_string, "idx": i, "response": dumps(generation)}
            for i, generation in enumerate(return_val)
        ]
        stmt = insert(_ENTRIES).values(rows)
        stmt = stmt.on_conflict_do_update(
            index_elements=["prompt", "llm", "idx"], set_={"response": stmt.excluded.response}
        )
        with self.engine.begin() as conn:
            conn.execute(stmt)

    def clear(self, **kwargs: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(_ENTRIES))


def sqlite_llm_cache(path: str | Path) -> ChatReplySQLiteCache:
    """The cache for `--cache FILE`; the file and its folder are created when missing."""
    file = Path(path).expanduser()
    file.parent.mkdir(parents=True, exist_ok=True)
    return ChatReplySQLiteCache(database_path=str(file))


def enable_llm_cache(path: str | Path) -> ChatReplySQLiteCache:
    """Answer identical model calls from `path` from now on (process-wide, as langchain does)."""
    from langchain_core.globals import set_llm_cache

    cache = sqlite_llm_cache(path)
    set_llm_cache(cache)
    return cache
