"""Conversations and SQLFixAgent's repair memory on PostgreSQL (`PostgresSaver`, `PostgresStore`),
shared by separate processes. Needs MACSQL_PG_URL (see tests/pg_support.py: fails under CI=true
without it, skips elsewhere). Each test run uses a database of its own, dropped afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conversation_script import ASKED, CONCERT, REWRITER, SQL, STANDALONE, respond
from pg_support import require_pg_url, writable_engine
from sqlalchemy import text
from test_cli_chat import _chat
from test_privacy_and_answer import make_accounts_db, respond_to_every_agent

from macsql.database.loaders.postgres import database_url
from macsql.testing.scripted import ScriptedOpenAIServer

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def state_url() -> Iterator[str]:
    admin = require_pg_url()
    name = f"convo_state_{uuid.uuid4().hex[:8]}"
    engine = writable_engine(admin)
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield database_url(admin, name)
    finally:
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()


def test_a_conversation_started_in_one_process_continues_in_another(state_url: str) -> None:
    with ScriptedOpenAIServer(respond) as server:
        first = _chat(server, state_url, [ASKED[0]], "--thread", "pg-chat", "--no-answer")
        assert SQL[ASKED[0]] in first
        second = _chat(server, state_url, [ASKED[1]], "--thread", "pg-chat", "--no-answer")
    assert f"(understood as: {STANDALONE[ASKED[1]][0]})" in second
    (rewrite,) = [p for p in server.prompts if p.startswith(REWRITER)]
    assert ASKED[0] in rewrite and SQL[ASKED[0]] in rewrite


_REPAIR_RUN = """
import json, sys
from macsql.core.context import Context
from macsql.memory.persistence import open_persistence
from macsql.graph.registry import get_builder

url, base_url, db, thread = sys.argv[1:5]
with open_persistence(url) as kept:
    graph = get_builder("sqlfix").compile(checkpointer=kept.checkpointer, store=kept.store)
    context = Context(
        model="openai:scripted", base_url=base_url, api_key="test-key", dataset_style="spider",
        num_paraphrases=1, max_repair_attempts=1, record_repairs=True,
        repair_memory_scope="database",  # shared on purpose: another thread, another process
    )
    out = graph.invoke(
        {"question": "Who holds an account?", "db": db},
        {"configurable": {"thread_id": thread}},
        context=context,
    )
print(json.dumps({"repaired": out.get("repaired"), "sql": out.get("sql")}))
"""


def test_a_repair_recorded_by_one_process_is_retrieved_by_another(
    state_url: str, tmp_path: Path
) -> None:
    db = make_accounts_db(tmp_path / "accounts.sqlite")
    with ScriptedOpenAIServer(respond_to_every_agent) as server:
        results = []
        for thread in ("pg-repair-1", "pg-repair-2"):
            done = subprocess.run(
                [sys.executable, "-c", _REPAIR_RUN, state_url, server.base_url, db, thread],
                capture_output=True,
                text=True,
                timeout=240,
            )
            assert done.returncode == 0, done.stderr
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert [r["repaired"] for r in results] == [True, True]
    first, second = [p for p in server.prompts if p.startswith("You are the SQLRefiner")]
    assert "Repair 1" not in first  # the memory was empty
    assert "Repair 1" in second and "Fixed SQL: SELECT holder FROM account" in second


def test_a_thread_on_postgres_keeps_one_checkpoint_and_can_be_forgotten(state_url: str) -> None:
    """macsql's PostgreSQL saver prunes a thread to its newest checkpoint (issue 28)."""
    from macsql.core.context import Context
    from macsql.graph.registry import get_builder
    from macsql.memory.persistence import open_persistence
    from macsql.memory.threads import forget_thread, list_threads

    config = {"configurable": {"thread_id": "pg-bounded"}}
    with ScriptedOpenAIServer(respond) as server, open_persistence(state_url) as kept:
        context = Context(
            model="openai:scripted", base_url=server.base_url, api_key="k", dataset_style="spider"
        )
        graph = get_builder("macsql").compile(checkpointer=kept.checkpointer, store=kept.store)
        for question in ASKED:
            graph.invoke({"question": question, "db": CONCERT}, config, context=context)
        engine = writable_engine(state_url)
        with engine.connect() as conn:
            count = conn.execute(
                text("SELECT count(*) FROM checkpoints WHERE thread_id = 'pg-bounded'")
            ).scalar_one()
        engine.dispose()
        assert count == 1
        values = graph.get_state(config).values
        assert [t["question"] for t in values["turns"]] == ASKED and "rows" not in values
        (info,) = [t for t in list_threads(kept.checkpointer) if t.thread_id == "pg-bounded"]
        assert info.turns == 3 and info.last_question == ASKED[2]
        assert forget_thread(kept.checkpointer, "pg-bounded")
        assert graph.get_state(config).values == {}
