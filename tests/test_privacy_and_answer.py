"""`Context.send_rows_to_model` and `Context.answer` (issue 17).

The privacy test runs every pipeline through every agent that reads a result (MAC-SQL's Refiner
on BIRD's NULL feedback, SQLFixAgent's reviewer and SQLRefiner, R^3's reviewers and writer, the
answer node) against a database holding sentinel values, and reads every prompt the model
server received. With the switch on, the same runs do show the sentinels: the check can fail.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conversation_script import ANSWERER

from macsql.core.context import Context
from macsql.graph.registry import get_pipeline, pipeline_names
from macsql.testing.scripted import ScriptedOpenAIServer

SENTINELS = ("ZEBRA-7731", "QUOKKA-5520")
FIRST_SQL = "SELECT holder, note FROM account"
FIXED_SQL = "SELECT holder FROM account"
ANSWER = "There are two holders."


def respond_to_every_agent(prompt: str) -> str:
    if prompt.startswith(("You are the Decomposer", "You are the SQL writer")):
        return f"```sql\n{FIRST_SQL}\n```\nQuestion Solved."
    if prompt.startswith("You are the Refiner"):
        return f"```sql\n{FIXED_SQL}\n```"
    if prompt.startswith("You are a database administrator checking"):
        return '{"verdict": "error", "reason": "the note is not asked for"}'
    if prompt.startswith("Reword a user's question"):
        return '{"paraphrases": ["Who holds an account?"]}'
    if prompt.startswith("You are the SQLRefiner"):
        return '{"choice": 0, "explanation": "drop the note"}\n```sql\n' + FIXED_SQL + "\n```"
    if prompt.startswith("A ") and "Choose 1 reviewers" in prompt:
        return '{"reviewers": ["bank auditor"]}'
    if prompt.startswith("You are a bank auditor"):
        return "The query returns what was asked."
    if prompt.startswith(ANSWERER):
        return ANSWER
    raise AssertionError(f"unexpected prompt {prompt[:80]!r}")


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(respond_to_every_agent) as running:
        yield running


def make_accounts_db(path: Path) -> str:
    """A small database whose cells are sentinels no prompt template contains."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE account (id INTEGER PRIMARY KEY, holder TEXT, note TEXT)")
        db.executemany(
            "INSERT INTO account VALUES (?, ?, ?)",
            [(1, SENTINELS[0], None), (2, SENTINELS[1], "kept")],
        )
    return str(path)


@pytest.fixture(scope="module")
def accounts(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_accounts_db(tmp_path_factory.mktemp("privacy") / "accounts.sqlite")


def _context(server: ScriptedOpenAIServer, **changes: Any) -> Context:
    settings: dict[str, Any] = {
        "dataset_style": "bird",  # an empty or NULL result sends MAC-SQL to the Refiner
        "num_value_examples": 0,  # value examples in the schema have their own setting
        "answer": True,
        "num_paraphrases": 1,
        "max_repair_attempts": 1,
        "num_reviewers": 1,
        "max_review_turns": 1,
    }
    settings.update(changes)
    return Context(
        model="openai:scripted", base_url=server.base_url, api_key="test-key", **settings
    )


def _agents_prompted(prompts: list[str]) -> set[str]:
    starts = {
        "decomposer/writer": ("You are the Decomposer", "You are the SQL writer"),
        "refiner": ("You are the Refiner",),
        "sqlfix reviewer": ("You are a database administrator checking",),
        "sqlfix refiner": ("You are the SQLRefiner",),
        "r3 reviewer": ("You are a bank auditor",),
        "answer": (ANSWERER,),
    }
    return {name for name, s in starts.items() for p in prompts if p.startswith(s)}


@pytest.mark.parametrize("send_rows", [False, True])
def test_no_prompt_of_any_pipeline_holds_a_result_value_when_rows_are_private(
    send_rows: bool, server: ScriptedOpenAIServer, accounts: str
) -> None:
    for name in pipeline_names():
        out = get_pipeline(name).invoke(
            {"question": "Who holds an account?", "db": accounts},
            context=_context(server, send_rows_to_model=send_rows),
        )
        assert out["status"] == "ok", (name, out.get("error"))
        assert out["answer"] == ANSWER
    prompts = server.prompts
    assert _agents_prompted(prompts) == {
        "decomposer/writer",
        "refiner",
        "sqlfix reviewer",
        "sqlfix refiner",
        "r3 reviewer",
        "answer",
    }
    leaking = [p for p in prompts if any(s in p for s in SENTINELS)]
    if send_rows:
        assert leaking, "the sentinels never reached a prompt: the test could not fail"
        return
    assert leaking == []
    # What the agents get instead: the result's shape.
    shapes = [p for p in prompts if "(values are not shown)" in p]
    assert any("holder (text)" in p for p in shapes)


def _answer_prompt(server: ScriptedOpenAIServer) -> str:
    (prompt,) = [p for p in server.prompts if p.startswith(ANSWERER)]
    return prompt


def _responder(sql: str) -> Any:
    def respond(prompt: str) -> str:
        if prompt.startswith("You are the Decomposer"):
            return f"```sql\n{sql}\n```"
        if prompt.startswith(ANSWERER):
            return ANSWER
        raise AssertionError(prompt[:80])

    return respond


def _ask(db: str, sql: str, **changes: Any) -> tuple[dict[str, Any], ScriptedOpenAIServer]:
    """One MAC-SQL run whose Decomposer writes `sql`, with the answer on unless changed."""
    with ScriptedOpenAIServer(_responder(sql)) as server:
        out = get_pipeline("macsql").invoke(
            {"question": "Which accounts are there?", "db": db},
            context=_context(server, **{"dataset_style": "spider", **changes}),
        )
    return out, server


def test_answer_on_a_normal_result_shows_only_the_preview(accounts: str) -> None:
    out, server = _ask(accounts, "SELECT id, holder FROM account ORDER BY id")
    assert out["answer"] == ANSWER
    prompt = _answer_prompt(server)
    assert SENTINELS[0] in prompt and SENTINELS[1] in prompt
    result = prompt.split("[Result]", 1)[1]
    assert result.startswith("\n2 row(s)\n") and "shown" not in result
    assert "never compute, estimate or invent" in prompt
    assert out["usage"]["answer"]["calls"] == 1


def test_answer_on_a_truncated_result_says_so_and_sees_only_the_preview(accounts: str) -> None:
    out, server = _ask(
        accounts, "SELECT id, holder FROM account ORDER BY id", answer_preview_rows=1
    )
    assert out["rows"] == [[1, SENTINELS[0]], [2, SENTINELS[1]]]
    prompt = _answer_prompt(server)
    assert SENTINELS[0] in prompt and SENTINELS[1] not in prompt
    assert "2 row(s), first 1 shown" in prompt


def test_answer_on_an_empty_result_says_nothing_matched(accounts: str) -> None:
    out, server = _ask(accounts, "SELECT holder FROM account WHERE id > 99")
    assert out["rows"] == [] and out["status"] == "ok"
    assert "returned no rows" in _answer_prompt(server)


def test_answer_without_rows_describes_the_shape_only(accounts: str) -> None:
    _, server = _ask(accounts, "SELECT id, holder FROM account", send_rows_to_model=False)
    prompt = _answer_prompt(server)
    assert not any(s in prompt for s in SENTINELS)
    assert "2 row(s); columns: id (integer), holder (text)" in prompt


def test_answer_is_off_by_default_and_adds_no_call(accounts: str) -> None:
    out, server = _ask(accounts, "SELECT holder FROM account", answer=False)
    assert "answer" not in out
    assert server.requests == 1


def test_a_failed_run_is_answered_without_a_model_call(accounts: str) -> None:
    out, server = _ask(accounts, "SELECT nope FROM account", max_try_times=1)
    assert out["status"] == "failed"
    assert out["answer"].startswith("I could not answer this from the database")
    assert server.requests == 1


def test_answer_tokens_stream(accounts: str) -> None:
    with ScriptedOpenAIServer(_responder("SELECT holder FROM account")) as server:
        chunks = [
            (chunk.content, meta.get("langgraph_node"))
            for chunk, meta in get_pipeline("macsql").stream(
                {"question": "Who holds an account?", "db": accounts},
                context=_context(server, dataset_style="spider"),
                stream_mode="messages",
            )
        ]
    answer_chunks = [text for text, node in chunks if node == "answer" and text]
    assert len(answer_chunks) > 1  # the server sends 16 characters at a time
    assert "".join(answer_chunks) == ANSWER
