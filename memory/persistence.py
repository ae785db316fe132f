"""Where conversations (the checkpointer) and SQLFixAgent's repair memory (the store) live.

One URL chooses both: a `postgresql://` URL puts them on that server (LangGraph's
`PostgresSaver` and `PostgresStore`, tables created by `.setup()`), for deployments of more than
one process; anything else is a SQLite file (`SqliteSaver`, `SqliteStore`), for one machine.
Either saver keeps only each thread's newest checkpoint (`graph.thread_store`), so a thread's
saved state stays bounded however long the conversation.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore
from langgraph.store.sqlite import SqliteStore

from macsql.memory.threads import PruningSqliteSaver, pruning_postgres_saver


@dataclass
class Persistence:
    checkpointer: BaseCheckpointSaver[Any]
    store: BaseStore
    where: str
    """The file, or the server with its password hidden, for messages."""


def is_postgres_url(url: str) -> bool:
    return url.split(":", 1)[0].split("+", 1)[0] in ("postgresql", "postgres")


def _libpq_url(url: str) -> str:
    """psycopg's own form of an SQLAlchemy-style URL (`postgresql+psycopg://` has a driver)."""
    scheme, rest = url.split("://", 1)
    return f"postgresql://{rest}" if "+" in scheme or scheme == "postgres" else url


@contextmanager
def open_persistence(url: str) -> Iterator[Persistence]:
    """The checkpointer and store at `url` (a PostgreSQL URL or a SQLite file path), open for
    the block; their tables are created on first use."""
    with ExitStack() as stack:
        saver: BaseCheckpointSaver[Any]
        store: BaseStore
        if is_postgres_url(url):
            from langgraph.store.postgres import PostgresStore

            conninfo = _libpq_url(url)
            pg_saver = stack.enter_context(pruning_postgres_saver().from_conn_string(conninfo))
            pg_saver.setup()
            saver = pg_saver
            store = stack.enter_context(PostgresStore.from_conn_string(conninfo))
            where = url.split("@", 1)[-1]
        else:
            path = Path(url).expanduser()
            path.parent.mkdir(parents=True, exist_ok=True)
            # LangGraph may run nodes on worker threads; the savers lock around the connection.
            conn = stack.enter_context(sqlite3.connect(path, check_same_thread=False))
            sqlite_saver = PruningSqliteSaver(conn)
            sqlite_saver.setup()
            saver = sqlite_saver
            store_conn = stack.enter_context(
                sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            )
            store = SqliteStore(store_conn)
            where = str(path)
        store.setup()
        yield Persistence(saver, store, where)
