"""langchain's SQLite LLM cache, reading back only chat replies.

`langchain_community.cache.SQLiteCache` revives cached entries with `langchain_core.load.loads`
and its broad default allowlist, and warns about it on every hit. Our agents cache only chat
replies (a `ChatGeneration` holding an `AIMessage`), so entries are revived with exactly those
classes: no warning on stderr, and a tampered cache file cannot construct anything else.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from langchain_community.cache import SQLiteCache
from langchain_core._api import LangChainBetaWarning
from langchain_core.load import loads
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, Generation
from sqlalchemy import Select, select
from sqlalchemy.orm import Session

CACHED_CLASSES = (ChatGeneration, ChatGenerationChunk, AIMessage, AIMessageChunk, Generation)


class ChatReplySQLiteCache(SQLiteCache):
    """A `SQLiteCache` whose lookups revive only chat generations and AI messages."""

    def lookup(self, prompt: str, llm_string: str) -> list[Any] | None:
        stmt: Select[Any] = (
            select(self.cache_schema.response)
            .where(self.cache_schema.prompt == prompt)
            .where(self.cache_schema.llm == llm_string)
            .order_by(self.cache_schema.idx)
        )
        with Session(self.engine) as session:
            rows = session.execute(stmt).fetchall()
        if not rows:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LangChainBetaWarning)  # `loads` is "beta"
                return [loads(row[0], allowed_objects=list(CACHED_CLASSES)) for row in rows]
        except Exception:  # an entry of another kind, or an old format: treat as a miss
            return None


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
