"""R^3 (graph `r3`) with scripted models: consensus, bounded review and debug loops, the
writer's history, generated reviewer personas reviewing in parallel, and k-shot selection."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SPIDER
from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.memory import InMemorySaver

from macsql.core.context import Agent, Context
from macsql.graph.r3_graph import builder as r3_builder
from macsql.graph.registry import get_pipeline
from macsql.llm.embeddings import register_embeddings, unregister_embeddings
from macsql.llm.models import registered_chat_model
from macsql.memory.examples import FewShotSelector, load_pool, selector_for
from macsql.memory.similarity import BM25Index
from macsql.nodes.r3.writer import normalise_sql, same_sql, truncate_history
from macsql.prompts import load_prompt
from macsql.testing.scripted import ScriptedChatModel

TRAIN = SPIDER / "train_spider.json"
QUESTION = "List the names of singers from France, youngest first."
GOOD_SQL = "SELECT name FROM singer WHERE country = 'France' ORDER BY age"


def opening(template: str) -> str:
    """The literal start of a prompt template: its first line, up to any placeholder."""
    return load_prompt(template).template.split("$", 1)[0].splitlines()[0]


# The writer's three steps share an agent; the newest message of its history says which it is.
WRITER = opening("r3_writer")
DEBUG = opening("r3_writer_debug")
REVISE = opening("r3_writer_revise")

PERSONAS = [
    "database engineer who checks joins and keys",
    "music industry analyst who knows how singers are listed",
    "quality engineer who checks the ordering of results",
]


@pytest.fixture()
def db(tmp_path: Path) -> str:
    path = tmp_path / "singers.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
        INSERT INTO singer VALUES (1, 'Ana', 'France', 30), (2, 'Bo', 'Japan', 25),
                                  (3, 'Cy', 'France', 21);
        """
    )
    conn.commit()
    conn.close()
    return str(path)


def fenced(sql: str, before: str = "Thinking it through.") -> str:
    return f"{before}\n```sql\n{sql}\n```"


class Script:
    """Answers by the calling agent (the writer: by its step) and records prompts per step."""

    def __init__(self, **handlers: Callable[[str], str] | str) -> None:
        self.handlers = handlers
        self.prompts: dict[str, list[str]] = {}

    def by_agent(self) -> dict[str, Callable[[str], str]]:
        return {
            Agent.WRITER: lambda prompt: self._answer(self._writer_step(prompt), prompt),
            Agent.PERSONA: lambda prompt: self._answer("persona", prompt),
            Agent.REVIEWER: lambda prompt: self._answer("reviewer", prompt),
        }

    @staticmethod
    def _writer_step(prompt: str) -> str:
        return max(
            ("writer", 0),
            ("debug", prompt.rfind(DEBUG)),
            ("revise", prompt.rfind(REVISE)),
            key=lambda x: x[1],
        )[0]

    def _answer(self, step: str, prompt: str) -> str:
        self.prompts.setdefault(step, []).append(prompt)
        handler = self.handlers[step]
        return handler(prompt) if callable(handler) else handler


def persona_reply(personas: list[str] = PERSONAS) -> str:
    return json.dumps({"reviewers": personas})


def run(
    db: str, script: Script, **context: Any
) -> tuple[dict[str, Any], dict[str, Any], Any, dict[str, Any]]:
    """Run r3; its output, final state, the compiled graph and the config (for history)."""
    graph = r3_builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with registered_chat_model("scripted:r3", ScriptedChatModel(responder=script.by_agent())):
        out = graph.invoke(
            {"question": QUESTION, "db": db},
            config,
            context=Context(model="scripted:r3", dataset_style="spider", **context),
        )
    return out, _answered(graph, config), graph, config


def _answered(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The thread's state when the turn was answered, before `close_turn` emptied the working
    keys (dialogue, reviews) that these tests read."""
    return next(s for s in graph.get_state_history(config) if s.next == ("close_turn",)).values


def test_consensus_in_round_one_ends_the_loop(db: str) -> None:
    script = Script(
        writer=fenced(GOOD_SQL),
        persona=persona_reply(),
        reviewer="The query is correct.",
        # The same query, written differently: equal after sqlglot normalisation.
        revise=fenced("select NAME from singer where country='France' order by age;", "I keep it."),
    )
    out, _, _, _ = run(db, script)
    assert out["consensus"] is True and out["review_turns"] == 1
    assert len(script.prompts["writer"]) == 1 and len(script.prompts["revise"]) == 1
    assert len(script.prompts["persona"]) == 1 and len(script.prompts["reviewer"]) == 3
    assert out["sql"] == GOOD_SQL and out["rows"] == [["Cy"], ["Ana"]] and out["attempts"] == 1
    assert out["usage"]["writer"]["calls"] == 2 and out["usage"]["reviewer"]["calls"] == 3
    assert out["usage"]["persona"]["calls"] == 1


def test_disagreement_runs_to_max_review_turns_and_stops(db: str) -> None:
    revisions = iter(
        [f"SELECT name FROM singer WHERE age < {limit} ORDER BY age" for limit in (40, 35, 29)]
    )
    script = Script(
        writer=fenced(GOOD_SQL),
        persona=persona_reply(),
        reviewer="Filter by age instead.",
        revise=lambda _p: fenced(next(revisions), "Revised."),
    )
    out, _, _, _ = run(db, script, max_review_turns=3)
    assert out["consensus"] is False and out["review_turns"] == 3
    assert len(script.prompts["revise"]) == 3 and len(script.prompts["reviewer"]) == 9
    assert len(script.prompts["persona"]) == 1  # professions are generated once
    # Every SQL, including the last revision, was executed; the last revision is returned.
    assert out["attempts"] == 4
    assert out["sql"] == "SELECT name FROM singer WHERE age < 29 ORDER BY age"
    assert out["rows"] == [["Cy"], ["Bo"]]
    # Round k's reviewers saw round k's SQL.
    assert (
        "age < 40" in script.prompts["reviewer"][3] and "age < 35" in script.prompts["reviewer"][6]
    )


def test_a_debug_error_is_appended_to_the_history(db: str) -> None:
    broken = "SELECT nme FROM singer WHERE country = 'France' ORDER BY age"
    script = Script(
        writer=fenced(broken),
        debug=fenced(GOOD_SQL, "The column is called name."),
        persona=persona_reply(),
        reviewer="Correct.",
        revise=fenced(GOOD_SQL, "Agreed."),
    )
    out, state, _, _ = run(db, script)
    (debug_prompt,) = script.prompts["debug"]
    # H = [(x, S), y, e]: the task, the broken reply, then the database's error.
    assert debug_prompt.index(WRITER) < debug_prompt.index(broken) < debug_prompt.index(DEBUG)
    assert "no such column: nme" in debug_prompt
    roles = [m["role"] for m in state["history"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert "no such column: nme" in state["history"][2]["content"]
    assert out["debug_turns"] == 1 and out["consensus"] is True and out["sql"] == GOOD_SQL
    # The revise prompt carries the whole history, the debug turn included.
    assert "no such column: nme" in script.prompts["revise"][0]


def test_debugging_stops_after_max_debug_turns(db: str) -> None:
    script = Script(
        writer=fenced("SELECT nme FROM singer"),
        debug=fenced("SELECT nme FROM singer", "Still this."),
        persona=persona_reply(),
        reviewer="The column nme does not exist; use name.",
        revise=fenced("SELECT nme FROM singer", "I keep it."),
    )
    out, _, _, _ = run(db, script, max_debug_turns=2, max_review_turns=1)
    assert len(script.prompts["debug"]) == 2 and out["debug_turns"] == 2
    assert out["status"] == "failed" and out["attempts"] == 3


def test_three_personas_are_generated_and_all_three_review_in_parallel(db: str) -> None:
    comments = {p: f"Comment from the {p.split()[0]} reviewer." for p in PERSONAS}

    def review(prompt: str) -> str:
        persona = next(p for p in PERSONAS if f"You are a {p}." in prompt)
        return comments[persona]

    script = Script(
        writer=fenced(GOOD_SQL),
        persona=persona_reply(),
        reviewer=review,
        revise=fenced(GOOD_SQL, "I keep it."),
    )
    out, state, graph, config = run(db, script)
    (persona_prompt,) = script.prompts["persona"]
    assert (
        GOOD_SQL in persona_prompt and "singer" in persona_prompt and "exactly 3" in persona_prompt
    )
    assert out["personas"] == PERSONAS
    # Each persona is a reviewer's system prompt, and each reviewer saw the result table.
    seen = sorted(next(p for p in PERSONAS if p in r) for r in script.prompts["reviewer"])
    assert seen == sorted(PERSONAS)
    assert all('| "Cy" |' in r and GOOD_SQL in r for r in script.prompts["reviewer"])
    # The writer got all three comments.
    for comment in comments.values():
        assert comment in script.prompts["revise"][0]
    assert [r["persona"] for r in state["reviews"]] == PERSONAS
    # The three reviews ran as parallel Send tasks in one step.
    steps = [s.next for s in graph.get_state_history(config)]
    assert ("reviewer", "reviewer", "reviewer") in steps


def test_missing_personas_are_filled_and_recorded(db: str) -> None:
    script = Script(
        writer=fenced(GOOD_SQL),
        persona=persona_reply(PERSONAS[:1]),
        reviewer="Fine.",
        revise=fenced(GOOD_SQL),
    )
    out, state, _, _ = run(db, script)
    assert len(out["personas"]) == 3 and out["personas"][0] == PERSONAS[0]
    assert "1 of 3" in state["persona_fallback"] and len(script.prompts["reviewer"]) == 3
    assert [(f["agent"], f["kind"]) for f in out["fallbacks"]] == [("persona", "unreadable_reply")]


def test_program_of_thoughts_asks_for_python_before_sql(db: str) -> None:
    script = Script(
        writer=fenced(GOOD_SQL, "```python\nrows = [r for r in singer]\n```"),
        persona=persona_reply(),
        reviewer="Fine.",
        revise=fenced(GOOD_SQL),
    )
    out, _, _, _ = run(db, script, program_of_thoughts=True)
    assert "```python" in script.prompts["writer"][0] and "never run" in script.prompts["writer"][0]
    assert out["sql"] == GOOD_SQL  # the python block is text only; the SQL is what runs
    script = Script(
        writer=fenced(GOOD_SQL), persona=persona_reply(), reviewer="ok", revise=fenced(GOOD_SQL)
    )
    run(db, script)
    assert "```python" not in script.prompts["writer"][0]


@pytest.mark.needs_data("spider")
def test_kshot_returns_the_most_similar_training_questions() -> None:
    pool = load_pool(TRAIN)
    assert len(pool) == 7000 and pool[0].sql == "SELECT count(*) FROM head WHERE age > 56"
    selector = selector_for(str(TRAIN))
    chosen = selector.select("How many department heads are older than 56?", 3)
    assert chosen[0].question == "How many heads of the departments are older than 56 ?"
    assert chosen[0].db_id == "department_management"
    chosen = selector.select(
        "Give the names and headquarters of every company by market value, highest first.", 2
    )
    assert {c.question for c in chosen} == {
        "Show all company names and headquarters in the descending order of market value.",
        "What are the names and headquarters of all companies ordered by descending market value?",
    }
    # The question itself is never its own example.
    asked = pool[0].question
    assert all(c.question != asked for c in selector.select(asked, 5))


@pytest.mark.needs_data("spider")
def test_kshot_examples_reach_the_writer_prompt(db: str) -> None:
    script = Script(
        writer=fenced(GOOD_SQL), persona=persona_reply(), reviewer="ok", revise=fenced(GOOD_SQL)
    )
    run(db, script, k_shot=2, few_shot_pool=str(TRAIN))
    prompt = script.prompts["writer"][0]
    examples = re.findall(r"Question: (.+)", prompt)
    assert len(examples) == 2
    expected = selector_for(str(TRAIN)).select(QUESTION, 2)
    assert examples == [e.question for e in expected]
    assert expected[0].sql in prompt
    # k = 0 (the default) shows none.
    script = Script(
        writer=fenced(GOOD_SQL), persona=persona_reply(), reviewer="ok", revise=fenced(GOOD_SQL)
    )
    run(db, script, few_shot_pool=str(TRAIN))
    assert "Question: " not in script.prompts["writer"][0]


class BagOfWords(Embeddings):
    """A tiny deterministic embedding: counts of a fixed vocabulary."""

    VOCAB = ("pet", "dog", "cat", "owner", "car", "price", "song", "singer")

    def __init__(self) -> None:
        self.calls = 0

    def _embed(self, text: str) -> list[float]:
        words = re.findall(r"[a-z]+", text.lower())
        return [float(sum(w.startswith(v) for w in words)) for v in self.VOCAB]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self._embed(text)


def test_kshot_uses_pluggable_embeddings(tmp_path: Path) -> None:
    pool = tmp_path / "pool.json"
    items = [
        {"question": "How many dogs does each owner have?", "query": "SELECT 1", "db_id": "pets"},
        {
            "question": "What is the price of the cheapest car?",
            "query": "SELECT 2",
            "db_id": "cars",
        },
        {"question": "Which singer sang the most songs?", "query": "SELECT 3", "db_id": "music"},
    ]
    pool.write_text(json.dumps(items))
    embeddings = BagOfWords()
    direct = FewShotSelector(load_pool(pool), embeddings)
    assert [e.sql for e in direct.select("Count the songs of every singer", 1)] == ["SELECT 3"]
    register_embeddings("bag", embeddings)
    try:
        by_name = selector_for(str(pool), "bag")
        assert by_name.select("list pet owners with a dog", 2)[0].sql == "SELECT 1"
        assert by_name.embeddings is embeddings
    finally:
        unregister_embeddings("bag")


def test_history_is_truncated_to_the_budget() -> None:
    history = [{"role": "user", "content": "T" * 100}]
    for i in range(5):
        history.append({"role": "assistant", "content": f"reply {i} " + "r" * 40})
        history.append({"role": "user", "content": f"error {i} " + "e" * 40})
    sent, dropped = truncate_history(history, budget=10_000)
    assert sent == history and dropped == 0
    sent, dropped = truncate_history(history, budget=300)
    assert sent[0] == history[0] and sent[-1] == history[-1]
    assert sum(len(m["content"]) for m in sent) <= 300 and dropped > 0
    assert sent[1]["role"] == "assistant"  # roles still alternate after the task
    assert sent[1:] == history[-(len(sent) - 1) :]  # the newest turns are the ones kept
    sent, dropped = truncate_history(history, budget=10)  # too small: task and last stay
    assert sent == [history[0], history[-1]] and dropped == len(history) - 2


def test_sql_normalisation_for_consensus() -> None:
    assert same_sql(
        "select T1.name from singer as T1 where T1.age>20;",
        "SELECT t1.NAME FROM singer AS t1 WHERE t1.age > 20",
        "sqlite",
    )
    assert not same_sql("SELECT name FROM singer", "SELECT name FROM singer LIMIT 1", "sqlite")
    # Unparseable SQL is compared by its text, white space collapsed, case kept.
    assert normalise_sql("SELEC  broken  SQL", "sqlite") == "SELEC broken SQL"


def test_bm25_prefers_rare_shared_words() -> None:
    index = BM25Index(["the cat sat", "a dog barked", "the cat and the dog"])
    assert [i for i, _ in index.top("dog barked loudly", 2)] == [1, 2]


def test_r3_is_registered_and_runs_through_the_registry(db: str) -> None:
    script = Script(
        writer=fenced(GOOD_SQL), persona=persona_reply(), reviewer="ok", revise=fenced(GOOD_SQL)
    )
    with registered_chat_model("scripted:r3reg", ScriptedChatModel(responder=script.by_agent())):
        out = get_pipeline("r3").invoke(
            {"question": QUESTION, "db": db},
            context=Context(model="scripted:r3reg", dataset_style="spider"),
        )
    assert out["sql"] == GOOD_SQL and out["consensus"] is True
    assert not {"history", "reviews", "tries"} & set(out)


def test_a_second_question_in_the_same_thread_starts_afresh(db: str) -> None:
    script = Script(
        writer=fenced(GOOD_SQL), persona=persona_reply(), reviewer="ok", revise=fenced(GOOD_SQL)
    )
    graph = r3_builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "same"}}
    with registered_chat_model("scripted:r3again", ScriptedChatModel(responder=script.by_agent())):
        context = Context(model="scripted:r3again", dataset_style="spider")
        for _ in range(2):
            out = graph.invoke({"question": QUESTION, "db": db}, config, context=context)
            state = _answered(graph, config)
            assert out["consensus"] is True and out["review_turns"] == 1
            assert len(state["reviews"]) == 3 and len(state["history"]) == 4
            # The turn closed: the thread keeps neither the dialogue nor the reviews.
            saved = graph.get_state(config).values
            assert saved["reviews"] == [] and saved["history"] == []
    # The second writer saw only its own question's history, not the first run's reviews.
    assert script.prompts["revise"][1].count(REVISE) == 1


def test_consensus_compares_literals_case_sensitively() -> None:
    from macsql.nodes.r3.writer import same_sql

    assert same_sql(
        "select name from singer where country = 'France'",
        "SELECT Name FROM singer WHERE Country = 'France';",
        "sqlite",
    )
    assert not same_sql(
        "SELECT name FROM singer WHERE country = 'France'",
        "SELECT name FROM singer WHERE country = 'france'",
        "sqlite",
    )
