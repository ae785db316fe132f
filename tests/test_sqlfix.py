"""SQLFixAgent (graph `sqlfix`) with scripted models: review, candidates, selection, self-fix,
failure memory (Reflexion) and repair memory; and SQLFixAgent as a repair stage after macsql."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from macsql.core.context import Agent, Context
from macsql.graph.registry import get_pipeline, pipeline_names
from macsql.graph.sqlfix_graph import builder as sqlfix_builder
from macsql.llm.models import registered_chat_model
from macsql.memory.repairs import (
    REPAIR_NAMESPACE,
    all_repairs,
    retrieve_similar_repairs,
    seed_repair_memory,
)
from macsql.nodes.sqlfix.query_crafter import parse_paraphrases
from macsql.nodes.sqlfix.reviewer import parse_verdict
from macsql.testing.scripted import ScriptedChatModel

QUESTION = "List the names of singers from France, youngest first."
GOOD_SQL = "SELECT name FROM singer WHERE country = 'France' ORDER BY age"
WRONG_SQL = "SELECT name FROM singer WHERE country = 'France'"  # ignores the ordering
PARAPHRASES = [
    "Which French singers are there, from the youngest to the oldest?",
    "Give the names of singers whose country is France, sorted by age ascending.",
    "Name every singer from France, ordered from youngest to oldest.",
]

# The name each test's script gives an agent.
AGENTS = {
    "reviewer": Agent.REVIEWER,
    "crafter": Agent.QUERY_CRAFTER,
    "refiner": Agent.SQL_REFINER,
    "decomposer": Agent.DECOMPOSER,
    "sql_tool": Agent.SQL_TOOL,
    "macsql_refiner": Agent.REFINER,
}


@pytest.fixture()
def db(tmp_path: Path) -> str:
    path = tmp_path / "singers.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
        CREATE TABLE concert (concert_id INTEGER PRIMARY KEY,
                              singer_id INTEGER REFERENCES singer(singer_id), year INTEGER);
        INSERT INTO singer VALUES (1, 'Ana', 'France', 30), (2, 'Bo', 'Japan', 25),
                                  (3, 'Cy', 'France', 21), (4, 'Di', 'Peru', 50);
        INSERT INTO concert VALUES (1, 1, 2014), (2, 1, 2015), (3, 3, 2015);
        """
    )
    conn.commit()
    conn.close()
    return str(path)


def sql_reply(sql: str) -> str:
    return f"SQL\n```sql\n{sql}\n```\nQuestion Solved."


def asked_question(prompt: str) -> str:
    """The [Question] line of the task part of a prompt (the last one)."""
    return prompt.rsplit("[Question] ", 1)[1].splitlines()[0].strip()


class Script:
    """A responder that answers by the calling agent and records each agent's prompts."""

    def __init__(self, **handlers: Callable[[str], str] | str) -> None:
        self.handlers = handlers
        self.prompts: dict[str, list[str]] = {}

    def by_agent(self) -> dict[str, Callable[[str], str]]:
        return {agent: self._answerer(name) for name, agent in AGENTS.items()}

    def _answerer(self, name: str) -> Callable[[str], str]:
        def answer(prompt: str) -> str:
            self.prompts.setdefault(name, []).append(prompt)
            handler = self.handlers[name]
            return handler(prompt) if callable(handler) else handler

        return answer


def run(
    db: str,
    script: Script,
    *,
    sql: str | None = None,
    store: InMemoryStore | None = None,
    **context: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the sqlfix graph; its output and its internal state when the turn was answered
    (before `close_turn` emptied the working keys these tests read)."""
    graph = sqlfix_builder.compile(checkpointer=InMemorySaver(), store=store or InMemoryStore())
    payload: dict[str, Any] = {"question": QUESTION, "db": db}
    if sql is not None:
        payload["sql"] = sql
    config = {"configurable": {"thread_id": "t"}}
    model = ScriptedChatModel(responder=script.by_agent())
    with registered_chat_model("scripted:sqlfix", model):
        out = graph.invoke(
            payload,
            config,
            context=Context(model="scripted:sqlfix", dataset_style="spider", **context),
        )
    answered = next(s for s in graph.get_state_history(config) if s.next == ("close_turn",))
    return out, answered.values


def verdict(word: str, reason: str = "") -> str:
    return (
        "SELECT: the names, as asked. FROM singer: right table. WHERE country = 'France': "
        f"matches. ORDER BY: ...\n{json.dumps({'verdict': word, 'reason': reason})}"
    )


PARAPHRASE_REPLY = json.dumps({"paraphrases": PARAPHRASES})


def test_review_pass_keeps_the_sql(db: str) -> None:
    script = Script(reviewer=verdict("pass", "every clause matches"))
    out, _ = run(db, script, sql=GOOD_SQL + ";")
    assert out["sql"] == GOOD_SQL
    assert out["status"] == "ok" and out["rows"] == [["Cy"], ["Ana"]]
    assert out["review"]["verdict"] == "pass" and out["review"]["source"] == "model"
    assert out["repaired"] is False and out["attempts"] == 1
    # Only the reviewer was asked, with the SQL and its executed result.
    assert list(script.prompts) == ["reviewer"] and len(script.prompts["reviewer"]) == 1
    prompt = script.prompts["reviewer"][0]
    assert GOOD_SQL in prompt and '| "Cy" |' in prompt and "clause" in prompt
    assert out["usage"]["reviewer"]["calls"] == 1 and "query_crafter" not in out["usage"]


def test_sql_tool_writes_the_sql_when_none_is_given(db: str) -> None:
    script = Script(decomposer=sql_reply(GOOD_SQL), reviewer=verdict("pass"))
    out, _ = run(db, script)
    assert out["sql"] == GOOD_SQL and out["original_sql"] == GOOD_SQL
    assert out["usage"]["decomposer"]["calls"] == 1

    # Any model can be the SQLTool; it gets the plain text-to-SQL prompt.
    script = Script(sql_tool=f"```sql\n{GOOD_SQL}\n```", reviewer=verdict("pass"))
    with registered_chat_model("scripted:tool", ScriptedChatModel(responder=script.by_agent())):
        out, _ = run(db, script, sql_generator="scripted:tool")
    assert out["sql"] == GOOD_SQL
    assert out["usage"]["sql_tool"]["calls"] == 1 and "decomposer" not in out["usage"]


def test_execution_error_is_detected_without_a_review_call(db: str) -> None:
    script = Script(
        crafter=PARAPHRASE_REPLY,
        decomposer=sql_reply(GOOD_SQL),
        refiner='{"choice": 1, "explanation": "it filters France and sorts by age"}',
    )
    out, _ = run(db, script, sql="SELECT nme FROM singer")
    assert "reviewer" not in script.prompts
    assert out["review"]["source"] == "execution" and "nme" in out["review"]["reason"]
    assert out["sql"] == GOOD_SQL and out["repaired"] is True


def _two_candidates_repair() -> tuple[dict[str, str], Script]:
    """A review that finds an error, two paraphrases whose SQL differ, and a choice of the
    second; a question that is no paraphrase (the first stage's) gets the wrong SQL."""
    candidates = {
        PARAPHRASES[0]: "SELECT name FROM singer WHERE country = 'France' ORDER BY age DESC",
        PARAPHRASES[1]: GOOD_SQL,
    }
    script = Script(
        reviewer=verdict("error", "no ORDER BY"),
        crafter=json.dumps({"paraphrases": PARAPHRASES[:2]}),
        decomposer=lambda p: sql_reply(candidates.get(asked_question(p), WRONG_SQL)),
        refiner='{"choice": 2, "explanation": "ascending age"}',
    )
    return candidates, script


def test_detected_error_triggers_paraphrase_candidates_and_a_selection(db: str) -> None:
    candidates = {
        PARAPHRASES[0]: "SELECT name FROM singer WHERE country = 'France' ORDER BY age DESC",
        PARAPHRASES[1]: "SELECT nme FROM singer",  # does not execute: dropped
        PARAPHRASES[2]: GOOD_SQL,  # the same rows in another order: a different candidate
    }
    script = Script(
        reviewer=verdict("error", "the question asks for the youngest first; no ORDER BY"),
        crafter=PARAPHRASE_REPLY,
        decomposer=lambda p: sql_reply(candidates[asked_question(p)]),
        refiner='Candidate 2 sorts ascending by age.\n{"choice": 2, "explanation": "youngest '
        'first means ascending age"}',
    )
    out, state = run(db, script, sql=WRONG_SQL, num_paraphrases=3)
    # n paraphrases, one SQLTool call for each.
    assert (
        len(script.prompts["crafter"]) == 1 and "3 different ways" in script.prompts["crafter"][0]
    )
    assert [asked_question(p) for p in script.prompts["decomposer"]] == PARAPHRASES
    # The one that failed to execute was dropped; the rest kept, one per distinct result.
    assert [c["sql"] for c in state["candidates"]] == [
        candidates[PARAPHRASES[0]],
        GOOD_SQL,
    ]
    assert [d["question"] for d in state["dropped_candidates"]] == [PARAPHRASES[1]]
    refiner_prompt = script.prompts["refiner"][0]
    assert "Candidate 1" in refiner_prompt and "Candidate 2" in refiner_prompt
    assert "Candidate 3" not in refiner_prompt and "SELECT nme" not in refiner_prompt
    assert "no ORDER BY" in refiner_prompt  # the reviewer's finding
    # The selection is final: executed, passed the check.
    assert out["sql"] == GOOD_SQL and out["repaired"] is True and out["repair_attempts"] == 1
    assert out["rows"] == [["Cy"], ["Ana"]] and out["attempts"] == 2
    assert "youngest first" in out["explanation"]


def test_a_refiner_reply_that_names_no_candidate_says_so(db: str) -> None:
    script = Script(
        reviewer=verdict("error", "no ordering"),
        crafter=json.dumps({"paraphrases": PARAPHRASES[:1]}),
        decomposer=sql_reply(GOOD_SQL),
        refiner=f"I'd go with the one that sorts by age:\n```sql\n{GOOD_SQL}\n```",
    )
    out, state = run(db, script, sql=WRONG_SQL, num_paraphrases=1)
    assert out["sql"] == GOOD_SQL and state["repair_choice"] == 0
    notes = [f for f in out["fallbacks"] if f["agent"] == "sql_refiner"]
    assert [f["kind"] for f in notes] == ["unreadable_reply"]
    assert "named no candidate" in notes[0]["detail"]


def test_duplicate_results_are_kept_once(db: str) -> None:
    script = Script(
        reviewer=verdict("error", "no ordering"),
        crafter=PARAPHRASE_REPLY,
        decomposer=lambda p: sql_reply(
            GOOD_SQL if asked_question(p) != PARAPHRASES[1] else GOOD_SQL + " ASC"
        ),
        refiner='{"choice": 1, "explanation": "sorted by age"}',
    )
    _, state = run(db, script, sql=WRONG_SQL)
    assert len(state["candidates"]) == 1
    assert state["candidates"][0]["paraphrases"] == PARAPHRASES


def test_all_candidates_failing_triggers_the_self_fix(db: str) -> None:
    own_fix = "SELECT name FROM singer WHERE country = 'France' ORDER BY age ASC"
    script = Script(
        reviewer=verdict("error", "missing ORDER BY age"),
        crafter=PARAPHRASE_REPLY,
        decomposer=sql_reply("SELECT name FROM singers_table"),  # never executes
        refiner='None of them ran.\n{"choice": 0, "explanation": "adding the ordering"}\n'
        f"```sql\n{own_fix}\n```",
    )
    out, state = run(db, script, sql=WRONG_SQL)
    assert state["candidates"] == [] and len(state["dropped_candidates"]) == 3
    assert "no candidate query executed" in script.prompts["refiner"][0]
    assert state["repair_choice"] == 0
    assert out["sql"] == own_fix and out["repaired"] is True and out["rows"] == [["Cy"], ["Ana"]]


def test_failure_memory_is_reflected_on_in_the_second_attempt(db: str) -> None:
    failing = "SELECT name FROM singer WHERE country = 'france' ORDER BY age"  # no rows
    replies = iter(
        [
            f'{{"choice": 0, "explanation": "lower-case value"}}\n```sql\n{failing}\n```',
            '{"choice": 1, "explanation": "the value is capitalised in the data"}',
        ]
    )
    script = Script(
        reviewer=verdict("error", "no ordering"),
        crafter=json.dumps({"paraphrases": PARAPHRASES[:1]}),
        decomposer=sql_reply(GOOD_SQL),
        refiner=lambda _p: next(replies),
    )
    out, state = run(db, script, sql=WRONG_SQL, num_paraphrases=1)
    first, second = script.prompts["refiner"]
    assert "(none: this is the first attempt)" in first and failing not in first
    # The failed attempt, with the check's feedback, is in the second attempt's prompt.
    assert "Attempt 1:" in second and failing in second
    assert "returned no rows" in second and "lower-case value" in second
    assert state["failure_memory"][0]["sql"] == failing
    assert out["sql"] == GOOD_SQL and out["repair_attempts"] == 2 and out["repaired"] is True


def test_repairs_stop_after_max_attempts_and_keep_the_original(db: str) -> None:
    script = Script(
        reviewer=verdict("error", "no ordering"),
        crafter=json.dumps({"paraphrases": []}),
        refiner="```sql\nSELECT name FROM singer WHERE age > 99\n```",  # never any rows
    )
    out, state = run(db, script, sql=WRONG_SQL, max_repair_attempts=2)
    assert len(script.prompts["refiner"]) == 2 and out["repair_attempts"] == 2
    assert len(state["failure_memory"]) == 2
    assert "Attempt 2:" not in script.prompts["refiner"][1]
    # No repair passed: the original, which ran, stays the answer.
    assert out["sql"] == WRONG_SQL and out["status"] == "ok" and out["repaired"] is False
    assert out["attempts"] == 3


PAST_REPAIRS = [
    {
        "question": "How many concerts took place in 2014?",
        "wrong_sql": "SELECT count(*) FROM concert",
        "fixed_sql": "SELECT count(*) FROM concert WHERE year = 2014",
        "db_id": "concert_singer",
    },
    {
        "question": "List the singers from Japan ordered by age, youngest first.",
        "wrong_sql": "SELECT name FROM singer WHERE country = 'Japan'",
        "fixed_sql": "SELECT name FROM singer WHERE country = 'Japan' ORDER BY age",
        "db_id": "concert_singer",
    },
    {
        "question": "What is the total budget of all departments?",
        "wrong_sql": "SELECT budget FROM department",
        "fixed_sql": "SELECT sum(budget) FROM department",
        "db_id": "department_management",
    },
]


def test_repair_memory_retrieves_the_most_similar_past_repair() -> None:
    store = InMemoryStore()
    assert seed_repair_memory(store, PAST_REPAIRS) == 3
    assert seed_repair_memory(store, PAST_REPAIRS[:1]) == 1  # idempotent: same key
    assert len(all_repairs(store)) == 3
    found = retrieve_similar_repairs(store, QUESTION, k=2)
    assert found[0]["question"] == PAST_REPAIRS[1]["question"]
    # A repair with no word in common is not retrieved at all.
    assert all(r["db_id"] != "department_management" for r in found)
    found = retrieve_similar_repairs(store, "total budget of the departments", k=1)
    assert [r["fixed_sql"] for r in found] == ["SELECT sum(budget) FROM department"]
    # Tuples work too: (question, wrong_sql, fixed_sql[, db_id]).
    seed_repair_memory(
        store, [("Count the heads", "SELECT * FROM head", "SELECT count(*) FROM head")]
    )
    assert store.search(REPAIR_NAMESPACE, limit=10)[0] is not None
    assert len(all_repairs(store)) == 4


def test_refiner_prompt_shows_the_most_similar_repair_from_the_graph_store(db: str) -> None:
    store = InMemoryStore()
    seed_repair_memory(store, PAST_REPAIRS)
    script = Script(
        reviewer=verdict("error", "no ordering"),
        crafter=json.dumps({"paraphrases": PARAPHRASES[:1]}),
        decomposer=sql_reply(GOOD_SQL),
        refiner='{"choice": 1, "explanation": "like the Japan repair"}',
    )
    out, state = run(db, script, sql=WRONG_SQL, store=store, num_similar_repairs=1)
    prompt = script.prompts["refiner"][0]
    repair_block = prompt.split("[Similar repairs", 1)[1].split("[Candidates]", 1)[0]
    assert PAST_REPAIRS[1]["question"] in repair_block
    assert PAST_REPAIRS[1]["fixed_sql"] in repair_block
    assert PAST_REPAIRS[0]["question"] not in repair_block
    assert [r["question"] for r in state["similar_repairs"]] == [PAST_REPAIRS[1]["question"]]
    assert out["repaired"] is True


def test_repair_memory_file_seeds_and_passing_repairs_are_recorded(db: str, tmp_path: Path) -> None:
    memory = tmp_path / "repairs.jsonl"
    memory.write_text("\n".join(json.dumps(r) for r in PAST_REPAIRS[:2]))
    store = InMemoryStore()
    script = Script(
        reviewer=verdict("error", "no ordering"),
        crafter=json.dumps({"paraphrases": PARAPHRASES[:1]}),
        decomposer=sql_reply(GOOD_SQL),
        refiner='{"choice": 1, "explanation": "sorted"}',
    )
    run(
        db,
        script,
        sql=WRONG_SQL,
        store=store,
        repair_memory_file=str(memory),
        record_repairs=True,
    )
    assert PAST_REPAIRS[1]["fixed_sql"] in script.prompts["refiner"][0]
    recorded = [r for r in all_repairs(store, [REPAIR_NAMESPACE]) if r["question"] == QUESTION]
    assert recorded and recorded[0]["wrong_sql"] == WRONG_SQL
    assert recorded[0]["fixed_sql"] == GOOD_SQL and recorded[0]["error"] == "no ordering"


def test_reply_parsers() -> None:
    assert parse_verdict('blah {"verdict": "ERROR", "reason": "x"}') == ("error", "x")
    assert parse_verdict("All good.\nVerdict: pass") == ("pass", "")
    assert parse_verdict("I am not sure.") is None
    text = "1. First wording?\n2. Second wording?\n- Third wording?\n- First wording?"
    assert parse_paraphrases(text, "Original?", 5) == [
        "First wording?",
        "Second wording?",
        "Third wording?",
    ]
    assert parse_paraphrases('{"paraphrases": ["Original?", "Other?"]}', "original?", 3) == [
        "Other?"
    ]


def test_sqlfix_runs_as_a_repair_stage_after_macsql(db: str) -> None:
    assert {"sqlfix", "r3", "macsql+sqlfix"} <= set(pipeline_names())
    script = Script(
        decomposer=sql_reply(WRONG_SQL),
        reviewer=verdict("error", "no ordering"),
        crafter=json.dumps({"paraphrases": PARAPHRASES[:1]}),
        refiner=f'{{"choice": 0, "explanation": "sort"}}\n```sql\n{GOOD_SQL}\n```',
    )
    graph = get_pipeline("macsql+sqlfix")
    with registered_chat_model("scripted:stage", ScriptedChatModel(responder=script.by_agent())):
        out = graph.invoke(
            {"question": QUESTION, "db": db},
            context=Context(model="scripted:stage", dataset_style="spider"),
        )
    # macsql's SQL is what the reviewer saw; the repair is the answer.
    assert WRONG_SQL in script.prompts["reviewer"][0]
    assert out["original_sql"] == WRONG_SQL and out["sql"] == GOOD_SQL and out["repaired"]
    # Usage adds up both stages: macsql's Decomposer call and the SQLTool's one.
    assert out["usage"]["decomposer"]["calls"] == 2
    assert out["usage"]["reviewer"]["calls"] == 1 and out["usage"]["sql_refiner"]["calls"] == 1
    # The output is sqlfix's narrow one: no internal key leaks out.
    assert not {"candidates", "failure_memory", "tries", "schema_text"} & set(out)


def test_stage_ends_when_macsql_wrote_no_sql(db: str) -> None:
    script = Script(decomposer="I cannot answer that.", macsql_refiner="Nor can I.")
    graph = get_pipeline("macsql+sqlfix")
    with registered_chat_model("scripted:stage2", ScriptedChatModel(responder=script.by_agent())):
        out = graph.invoke(
            {"question": QUESTION, "db": db},
            context=Context(model="scripted:stage2", dataset_style="spider", max_try_times=2),
        )
    assert out["sql"] == "" and out["status"] == "failed"
    assert "reviewer" not in script.prompts and len(script.prompts["macsql_refiner"]) == 1


def test_zero_repair_attempts_only_detects(db: str) -> None:
    script = Script(reviewer=verdict("error", "no ordering"))
    out, _ = run(db, script, sql=WRONG_SQL, max_repair_attempts=0)
    assert list(script.prompts) == ["reviewer"]
    assert out["review"]["verdict"] == "error" and out["sql"] == WRONG_SQL
    assert out["repaired"] is False and out["repair_attempts"] == 0


def test_with_approval_no_statement_runs_before_a_person_approved_it(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every SQL the database sees, the QueryCrafter's candidates included, passed a pause
    first; and no pause shows a query that already ran."""
    from langgraph.types import Command

    from macsql.nodes.common import executor

    candidates, script = _two_candidates_repair()
    timeline: list[tuple[str, str]] = []
    real_execute = executor.execute_sql

    def recorded(db_ref: Any, sql: str, **kwargs: Any) -> Any:
        timeline.append(("ran", sql))
        return real_execute(db_ref, sql, **kwargs)

    monkeypatch.setattr(executor, "execute_sql", recorded)
    graph = sqlfix_builder.compile(checkpointer=InMemorySaver(), store=InMemoryStore())
    config = {"configurable": {"thread_id": "approve-all"}}
    context = Context(
        model="scripted:approve", dataset_style="spider", approve_sql=True, num_paraphrases=2
    )
    payload: Any = {"question": QUESTION, "db": db, "sql": WRONG_SQL}
    with registered_chat_model("scripted:approve", ScriptedChatModel(responder=script.by_agent())):
        for _ in range(20):
            out = graph.invoke(payload, config, context=context)
            pauses = out.get("__interrupt__") or []
            if not pauses:
                break
            (pause,) = pauses
            timeline.append(("asked", pause.value["sql"]))
            payload = Command(resume=True)
    assert out["status"] == "ok" and out["sql"] == GOOD_SQL
    asked = [sql for kind, sql in timeline if kind == "asked"]
    # The reviewed SQL, both crafted candidates, and the chosen repair: four pauses.
    assert asked == [WRONG_SQL, *candidates.values(), GOOD_SQL]
    approved: list[str] = []
    for kind, sql in timeline:
        if kind == "asked":
            assert sql not in [s for k, s in timeline[: timeline.index((kind, sql))] if k == "ran"]
            approved.append(sql)
        else:
            assert sql in approved, f"{sql!r} ran without being approved"
            approved.remove(sql)  # one approval, one run


def test_macsql_then_sqlfix_asks_once_about_the_sql_its_first_stage_ran(db: str) -> None:
    """MAC-SQL + SQLFixAgent: the SQL the MAC-SQL stage ran was approved there, so the
    SQLFixAgent stage reviews it without a second pause; its candidates and repair still pause."""
    from langgraph.types import Command

    from macsql.graph.macsql_sqlfix_graph import builder as macsql_sqlfix_builder

    candidates, script = _two_candidates_repair()
    graph = macsql_sqlfix_builder.compile(checkpointer=InMemorySaver(), store=InMemoryStore())
    config = {"configurable": {"thread_id": "approve-once"}}
    context = Context(
        model="scripted:approve-once", dataset_style="spider", approve_sql=True, num_paraphrases=2
    )
    asked: list[str] = []
    payload: Any = {"question": QUESTION, "db": db}
    with registered_chat_model(
        "scripted:approve-once", ScriptedChatModel(responder=script.by_agent())
    ):
        for _ in range(20):
            out = graph.invoke(payload, config, context=context)
            pauses = out.get("__interrupt__") or []
            if not pauses:
                break
            asked += [pause.value["sql"] for pause in pauses]
            payload = Command(resume=True)
    assert out["status"] == "ok" and out["sql"] == GOOD_SQL
    assert asked == [WRONG_SQL, *candidates.values(), GOOD_SQL]
