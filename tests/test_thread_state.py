"""What a conversation thread keeps (issue 28): each turn's question, SQL and outcome, a failed
turn as failed, never result rows (unless `thread_rows`), and one bounded checkpoint.

The model is in-process (`ScriptedChatModel`, by agent); the database is generated.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from macsql.core.context import Agent, Context
from macsql.graph.macsql_graph import builder
from macsql.llm.models import registered_chat_model
from macsql.memory.persistence import open_persistence
from macsql.memory.threads import PruningInMemorySaver, forget_thread, list_threads
from macsql.nodes.common.close_turn import UNFINISHED
from macsql.testing.scripted import ScriptedChatModel

MODEL = "scripted-thread-state"
REWRITES = "Question: {q}\nBuilds on the previous SQL: no"
MARKER = "cell-value-"
"""Every result cell starts with it: a saved state that holds it holds result rows."""


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def big_db(tmp_path: Path) -> str:
    """`t(id, payload)`: 3,000 rows of 400-character cells that say nothing else."""
    path = tmp_path / "big.sqlite"
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, payload TEXT)")
        conn.executemany(
            "INSERT INTO t VALUES (?, ?)",
            [(i, (MARKER + str(i)).ljust(400, "x")) for i in range(1, 3001)],
        )
    conn.close()
    return str(path)


def _question(i: int, rows: int) -> str:
    return f"Question number {i}: list the first {rows} payloads"


def _asked(prompt: str) -> str:
    return prompt.rsplit("[Question]", 1)[1].splitlines()[0].strip()


class World:
    """The scripted model: the rewriter repeats the newest message (its prompts are kept);
    the Decomposer answers a question by its fate: 'ok' (SQL returning the rows it asks for),
    'fail' (the model call fails) or 'crash' (the process is interrupted)."""

    def __init__(self) -> None:
        self.fates: dict[str, str] = {}
        self.rewrites: list[str] = []

    def rewriter(self, prompt: str) -> str:
        self.rewrites.append(prompt)
        return REWRITES.format(q=prompt.split("Newest message:", 1)[1].splitlines()[0].strip())

    def decomposer(self, prompt: str) -> Any:
        question = _asked(prompt)
        fate = self.fates.get(question, "ok")
        if fate == "fail":
            return RuntimeError("the model server is down")
        if fate == "crash":
            return KeyboardInterrupt()
        rows = int(re.search(r"first (\d+) payloads", question).group(1))  # type: ignore[union-attr]
        return f"```sql\nSELECT id, payload FROM t WHERE id <= {rows}\n```\nQuestion Solved."

    def model(self) -> ScriptedChatModel:
        return ScriptedChatModel(
            responder={Agent.CONTEXTUALIZER: self.rewriter, Agent.DECOMPOSER: self.decomposer}
        )


@pytest.fixture
def world() -> Iterator[World]:
    state = World()
    with registered_chat_model(MODEL, state.model()):
        yield state


def _context(**changes: Any) -> Context:
    return Context(model=MODEL, dataset_style="spider", max_try_times=1, **changes)


def _ask(graph: Any, thread: str, question: str, db: str, **changes: Any) -> dict[str, Any] | None:
    config = {"configurable": {"thread_id": thread}}
    try:
        return graph.invoke({"question": question, "db": db}, config, context=_context(**changes))
    except KeyboardInterrupt:
        return None


def _shown_outcomes(rewrite_prompt: str) -> dict[str, str]:
    """question -> the outcome line the rewriter was shown for it."""
    shown: dict[str, str] = {}
    question = None
    for line in rewrite_prompt.splitlines():
        if m := re.match(r"\d+\. User: (.*)", line):
            question = m.group(1)
        elif question and (m := re.match(r"\s+Outcome: (.*)", line)):
            shown[question] = m.group(1)
    return shown


def test_a_failed_turn_is_shown_failed_to_the_next_rewriter(world: World, big_db: str) -> None:
    graph = builder.compile(checkpointer=PruningInMemorySaver())
    first, second, third = (_question(i, 2) for i in range(1, 4))
    world.fates[second] = "fail"
    assert _ask(graph, "t", first, big_db)["status"] == "ok"  # type: ignore[index]
    failed = _ask(graph, "t", second, big_db)
    assert failed is not None and failed["status"] == "failed"
    _ask(graph, "t", third, big_db)
    shown = _shown_outcomes(world.rewrites[-1])
    assert shown[first] == "ok"
    assert shown[second].startswith("failed:") and "down" in shown[second]


def test_a_run_that_never_finished_is_shown_unfinished(world: World, big_db: str) -> None:
    graph = builder.compile(checkpointer=PruningInMemorySaver())
    first, second, third = (_question(i, 2) for i in range(1, 4))
    world.fates[second] = "crash"
    _ask(graph, "t", first, big_db)
    assert _ask(graph, "t", second, big_db) is None
    _ask(graph, "t", third, big_db)
    assert _shown_outcomes(world.rewrites[-1]) == {first: "ok", second: UNFINISHED}


@pytest.mark.parametrize("seed", range(3))
def test_every_turn_is_shown_as_it_went(world: World, big_db: str, seed: int) -> None:
    """Seeded sequences of fates: each turn the rewriter sees, it sees as it went."""
    rng = random.Random(seed)
    graph = builder.compile(checkpointer=PruningInMemorySaver())
    truth: dict[str, str] = {}
    asked: list[str] = []
    history_turns = rng.choice([2, 3, 6])
    for i in range(1, 13):
        question = _question(i, rng.randint(1, 5))
        fate = rng.choice(["ok", "ok", "fail", "crash"])
        world.fates[question] = fate
        before = len(world.rewrites)
        _ask(graph, "gen", question, big_db, history_turns=history_turns)
        if asked:  # a follow-up: the rewriter saw the earlier turns, the newest ones only
            shown = _shown_outcomes(world.rewrites[before])
            assert list(shown) == asked[-history_turns:]
            for q, outcome in shown.items():
                expected = truth[q]
                assert outcome == expected or outcome.startswith(expected), (q, outcome)
        asked.append(question)
        truth[question] = {"ok": "ok", "fail": "failed:", "crash": UNFINISHED}[fate]


def _thread_bytes(state_file: Path, thread: str) -> tuple[int, int]:
    """(checkpoints, bytes) a thread holds in a SQLite state file, writes included."""
    conn = sqlite3.connect(state_file)
    try:
        count, size = conn.execute(
            "SELECT count(*), coalesce(sum(length(checkpoint) + length(metadata)), 0) "
            "FROM checkpoints WHERE thread_id = ?",
            (thread,),
        ).fetchone()
        (writes,) = conn.execute(
            "SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?", (thread,)
        ).fetchone()
        return count, size + writes
    finally:
        conn.close()


def _saved_text(graph: Any, thread: str) -> str:
    saved = graph.checkpointer.get_tuple({"configurable": {"thread_id": thread}})
    return json.dumps(saved.checkpoint["channel_values"], default=str)


def test_rows_are_returned_but_never_saved_unless_asked(world: World, big_db: str) -> None:
    graph = builder.compile(checkpointer=PruningInMemorySaver())
    out = _ask(graph, "rows", _question(1, 50), big_db)
    assert out is not None and len(out["rows"]) == 50 and MARKER in out["rows"][0][1]
    values = graph.get_state({"configurable": {"thread_id": "rows"}}).values
    assert "rows" not in values
    assert MARKER not in _saved_text(graph, "rows")  # nor in any execution record
    assert values["turns"][-1]["sql"] == out["sql"]
    # Asked for, the last result's rows are saved, and read back.
    out = _ask(graph, "rows", _question(2, 3), big_db, thread_rows=True)
    values = graph.get_state({"configurable": {"thread_id": "rows"}}).values
    assert values["rows"] == out["rows"] and len(values["rows"]) == 3  # type: ignore[index]
    # The next turn without the setting saves none again.
    _ask(graph, "rows", _question(3, 3), big_db)
    assert "rows" not in graph.get_state({"configurable": {"thread_id": "rows"}}).values


def test_a_threads_saved_state_is_one_bounded_checkpoint(
    world: World, big_db: str, tmp_path: Path
) -> None:
    state_file = tmp_path / "chat.sqlite"
    sizes = []
    with open_persistence(str(state_file)) as persistence:
        graph = builder.compile(checkpointer=persistence.checkpointer)
        for i in range(1, 13):
            # Results from 1 row to the row cap, of 400-character cells.
            out = _ask(graph, "long", _question(i, [1, 100, 3000][i % 3]), big_db)
            assert out is not None and out["status"] == "ok"
            count, size = _thread_bytes(state_file, "long")
            assert count == 1
            sizes.append(size)
        assert MARKER not in _saved_text(graph, "long")
        (info,) = list_threads(persistence.checkpointer)
        assert info.thread_id == "long" and info.turns == 7  # history_turns (6) + this one
        assert forget_thread(persistence.checkpointer, "long")
        assert list_threads(persistence.checkpointer) == []
        assert not forget_thread(persistence.checkpointer, "long")
    # Once the history is full, the state no longer grows, whatever the result sizes.
    assert max(sizes[7:]) - min(sizes[7:]) < 512, sizes
    assert max(sizes) < 64 * 1024, sizes


def test_messages_are_bounded_too(world: World, big_db: str) -> None:
    """A host that sends one human message per turn (a chat UI on a server thread)."""
    graph = builder.compile(checkpointer=PruningInMemorySaver())
    config = {"configurable": {"thread_id": "messages"}}
    for i in range(1, 9):
        graph.invoke(
            {"messages": [HumanMessage(_question(i, 1))], "db": big_db},
            config,
            context=_context(history_turns=2),
        )
    messages = graph.get_state(config).values["messages"]
    assert [m.content for m in messages] == [_question(i, 1) for i in (6, 7, 8)]


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_late_save_of_an_older_checkpoint_keeps_the_newest_and_its_writes(
    kind: str, tmp_path: Path
) -> None:
    """Checkpoints are written in the background and can arrive out of order: the save of an
    older one must not delete the newest, nor the newest's pending writes (an interrupt)."""
    import sqlite3

    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    from macsql.memory.threads import PruningInMemorySaver, PruningSqliteSaver

    if kind == "sqlite":
        saver: Any = PruningSqliteSaver(sqlite3.connect(tmp_path / "s.sqlite"))
        saver.setup()
    else:
        saver = PruningInMemorySaver()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    older, newer = empty_checkpoint(), empty_checkpoint()
    older["id"], newer["id"] = str(uuid6(clock_seq=1)), str(uuid6(clock_seq=2))
    assert older["id"] < newer["id"]
    saved = saver.put(config, newer, {}, {})
    saver.put_writes(saved, [("__interrupt__", "approve this")], "task")
    saver.put(config, older, {}, {})  # arrives last

    latest = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert latest is not None and latest.checkpoint["id"] == newer["id"]
    assert [w[1] for w in latest.pending_writes] == ["__interrupt__"]
    assert [c.checkpoint["id"] for c in saver.list({"configurable": {"thread_id": "t"}})] == [
        newer["id"]
    ]
