"""Shared fixtures: data locations, an isolated cache, scripted models."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from macsql.database.schema import clear_schema_cache
from macsql.graph.context import Context
from macsql.llm.models import registered_chat_model
from macsql.llm.scripted import ScriptedChatModel

SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA = Path(os.environ.get("MACSQL_DATA_DIR", SHARED / "data"))
SPIDER = DATA / "spider"
BIRD = DATA / "bird_dev"


def spider_eval_args(out: Path, *options: str, data_dir: Path = SPIDER) -> list[str]:
    """`macsql eval` arguments for Spider without a progress bar, writing under `out`, in one
    process unless `options` ask for more (the command's default follows the cores)."""
    return [
        "eval",
        "--dataset",
        "spider",
        "--data-dir",
        str(data_dir),
        "--processes",
        "1",
        *options,
        "--out",
        str(out),
        "--no-progress",
    ]


def wrong_then_fixed(wrong_sql: str, fixed_sql: str) -> Callable[[str], str]:
    """A responder for MAC-SQL whose Decomposer writes `wrong_sql` and whose Refiner then writes
    `fixed_sql`: one trip round the repair loop. Any other prompt fails the test."""

    def respond(prompt: str) -> str:
        if prompt.startswith("You are the Refiner"):
            return f"The last SQL failed; this one fixes it.\n```sql\n{fixed_sql}\n```"
        if prompt.startswith("You are the Decomposer"):
            return f"```sql\n{wrong_sql}\n```\nQuestion Solved."
        raise AssertionError(f"unexpected prompt {prompt[:60]!r}")

    return respond


def spider_db(db_id: str) -> Path:
    return SPIDER / "database" / db_id / f"{db_id}.sqlite"


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Caches (schemas, demo database) go to a temp dir, never the developer's home."""
    previous = os.environ.get("MACSQL_CACHE_DIR")
    os.environ["MACSQL_CACHE_DIR"] = str(tmp_path_factory.mktemp("macsql-cache"))
    yield
    if previous is None:
        os.environ.pop("MACSQL_CACHE_DIR", None)
    else:
        os.environ["MACSQL_CACHE_DIR"] = previous


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real model, whatever the developer's shell exports."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def fresh_schema_cache() -> Iterator[None]:
    clear_schema_cache()
    yield
    clear_schema_cache()


@pytest.fixture
def scripted() -> Iterator[object]:
    """`scripted(replies, **context_fields)` -> (model, Context) with the model registered."""
    registered: list[object] = []

    def make(replies: object, **fields: object) -> tuple[ScriptedChatModel, Context]:
        name = f"scripted:test-{len(registered)}"
        model = ScriptedChatModel(responder=replies)
        manager = registered_chat_model(name, model)
        manager.__enter__()
        registered.append(manager)
        return model, Context(model=name, **fields)  # type: ignore[arg-type]

    yield make
    for manager in registered:
        manager.__exit__(None, None, None)  # type: ignore[attr-defined]


# --- PostgreSQL (issue 4): MACSQL_PG_URL fixtures; the logic lives in tests/pg_support.py ---
# --- MySQL/MariaDB (issue 18): MACSQL_MYSQL_URL fixtures; the logic lives in tests/mysql_support.py
from mysql_support import mysql_admin_url, mysql_spider  # noqa: E402, F401
from pg_support import pg_admin_url, pg_spider  # noqa: E402, F401
