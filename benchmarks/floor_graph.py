"""The floor of the design card's libraries: a MAC-SQL-shaped LangGraph program with almost no
code of its own, to tell what the libraries cost from what macsql's code costs.

Run: python benchmarks/floor_graph.py --questions FILE --base-url URL --out DIR

It is what the target of "per-question overhead" can be measured against: the same graph shape
as macsql's MAC-SQL graph on Spider's small schemas (a Decomposer node, an executor node, a
Refiner node looping back to the executor, up to three tries, a conditional route after each
execution), the model called through `langchain-openai`'s `ChatOpenAI` (or, in-process, a
`ScriptedChatModel`), and nothing else: no schema read or rendered, no prompt beyond the
question, the SQL taken from the reply's first ```sql fence by `str.split`, `sqlite3` on a
cached connection, no guard, no linking, no budget, no deadline. Whatever it costs per question
is a lower bound for any program built on LangGraph and langchain-openai that runs the same
steps; macsql runs more.

As a script, it answers a Spider-style questions file (a JSON list with `question`, `db_id`)
in a fresh process, one question after another, and writes `pred.sql` (one SQL per line, as
`macsql score` reads) into `--out`: `bench_official.py --floor` runs it as a third side beside
the official code and `macsql eval`. `bench_overhead.py --cases floor,floorclient` runs its
graph in-process beside macsql's. `noop_graph`, one node that does nothing, is what
`bench_server.py --floor` serves beside macsql's graphs: what the server engine adds to a run
of any graph.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph

MAX_TRIES = 3
AGENT_HEADER = "X-Macsql-Agent"


class FloorState(TypedDict, total=False):
    question: str
    db: str
    sql: str
    error: str
    tries: int
    rows: list[Any]


def _sql_of(reply: str) -> str:
    return reply.split("```sql", 1)[-1].split("```", 1)[0].strip()


def build_floor_graph(decomposer: BaseChatModel, refiner: BaseChatModel) -> Any:
    """The compiled floor graph; each model answers its agent's calls."""
    connections: dict[str, sqlite3.Connection] = {}

    def prompt(state: FloorState) -> str:
        return f"Your task.\n[Question] {state['question']}\n"

    def decompose(state: FloorState) -> dict[str, Any]:
        reply = decomposer.invoke(prompt(state))
        return {"sql": _sql_of(str(reply.content)), "tries": 0}

    def execute(state: FloorState) -> dict[str, Any]:
        db = state["db"]
        conn = connections.get(db)
        if conn is None:
            conn = connections[db] = sqlite3.connect(db, check_same_thread=False)
        try:
            return {"rows": conn.execute(state["sql"]).fetchall(), "error": ""}
        except sqlite3.Error as exc:
            return {"rows": [], "error": str(exc)}

    def refine(state: FloorState) -> dict[str, Any]:
        reply = refiner.invoke(prompt(state) + f"[SQL] {state['sql']}\n[Error] {state['error']}")
        return {"sql": _sql_of(str(reply.content)), "tries": state["tries"] + 1}

    def route(state: FloorState) -> str:
        return "refiner" if state["error"] and state["tries"] < MAX_TRIES else END

    builder = StateGraph(FloorState)
    builder.add_node("decomposer", decompose)
    builder.add_node("executor", execute)
    builder.add_node("refiner", refine)
    builder.add_edge(START, "decomposer")
    builder.add_edge("decomposer", "executor")
    builder.add_conditional_edges("executor", route, ["refiner", END])
    builder.add_edge("refiner", "executor")
    return builder.compile()


def openai_floor_graph(base_url: str) -> Any:
    """The floor graph with `ChatOpenAI` clients, one per agent (the scripted server tells the
    agents apart by a header, as it does macsql's)."""
    from langchain_openai import ChatOpenAI

    def client(agent: str) -> ChatOpenAI:
        return ChatOpenAI(
            model="scripted",
            base_url=base_url,
            api_key="sk-bench",  # type: ignore[arg-type]
            default_headers={AGENT_HEADER: agent},
            max_retries=0,
        )

    return build_floor_graph(client("decomposer"), client("refiner"))


class NoopState(TypedDict, total=False):
    question: str
    db: str
    status: str


def _answer(state: NoopState) -> dict[str, Any]:
    return {"status": "ok"}


def build_noop_graph() -> Any:
    """One node that answers "ok" at once: what a server adds to a run, less than any graph."""
    builder = StateGraph(NoopState)
    builder.add_node("answer", _answer)
    builder.add_edge(START, "answer")
    return builder.compile()


# Served by `floor_serve.py` as the graph `floor`.
noop_graph = build_noop_graph()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--database-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    graph = openai_floor_graph(args.base_url)
    lines = []
    for item in json.loads(args.questions.read_text(encoding="utf-8")):
        db = args.database_dir / item["db_id"] / f"{item['db_id']}.sqlite"
        out = graph.invoke({"question": item["question"].strip(), "db": str(db)})
        lines.append(" ".join(out["sql"].split()))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pred.sql").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
