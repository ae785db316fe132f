"""Conversations, measured: SParC dev with the scripted conversation model, and the size of one
thread's saved state over 200 turns.

1. ``macsql eval --dataset sparc`` over SParC dev with the scripted model that follows each
   interaction's gold from what the rewriter is shown (`tools.scripted_conversations`), with
   the model's own earlier SQL and with the gold (teacher forcing). Question and interaction EX
   are 100 when nothing of a conversation is lost. Prints the command's own output.
2. One `macsql chat`-style thread (the MAC-SQL graph, macsql's SQLite state file) asked 200
   questions whose results range from 1 row to the row cap of cells 400 characters long
   (`--max-rows` raises the cap); prints the thread's saved bytes (checkpoints and pending
   writes) as the turns go, and the same for LangGraph's own `SqliteSaver`, which keeps every
   checkpoint of every step.

No model, no network.

    python benchmarks/bench_multiturn.py [--skip-sparc] [--turns 200] [--max-rows 100] [--data DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(
    os.environ.get("MACSQL_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data"
)
"""Like the tests: `MACSQL_DATA_DIR`, else `../shared/data` beside the checkout."""


def sparc_runs(data: Path, root: Path) -> int:
    from macsql.cli.main import main as macsql
    from macsql.evals.datasets import load_dataset
    from macsql.testing.scripted_conversations import gold_conversation_model

    dataset = load_dataset("sparc", data / "sparc")
    for previous in ("own", "gold"):
        print(f"== SParC dev, scripted conversation model, --previous-sql {previous}")
        with gold_conversation_model(dataset, "scripted-conversations") as model:
            code = macsql(
                ["eval", "--dataset", "sparc", "--data-dir", str(data / "sparc"),
                 "--model", "scripted-conversations", "--previous-sql", previous,
                 "--out", str(root / f"sparc-{previous}"), "--overwrite", "--no-progress"]
            )  # fmt: skip
        print(f"rewrites that matched no interaction: {model.lost}")
        if code:
            return code
        print()
    return 0


def _big_db(path: Path, rows: int = 5000) -> str:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, payload TEXT)")
        conn.executemany(
            "INSERT INTO t VALUES (?, ?)", [(i, f"value-{i}-".ljust(400, "x")) for i in range(rows)]
        )
    conn.close()
    return str(path)


def _responder() -> dict[str, Callable[[str], str]]:
    def rewrite(prompt: str) -> str:
        newest = prompt.split("Newest message:", 1)[1].splitlines()[0].strip()
        return f"Question: {newest}\nBuilds on the previous SQL: no"

    def write(prompt: str) -> str:
        asked = prompt.rsplit("[Question]", 1)[1].splitlines()[0]
        rows = int(re.search(r"first (\d+) rows", asked).group(1))  # type: ignore[union-attr]
        return f"```sql\nSELECT id, payload FROM t WHERE id < {rows}\n```\nQuestion Solved."

    return {"contextualizer": rewrite, "decomposer": write}


def _thread_bytes(state_file: Path, thread: str) -> tuple[int, int]:
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


def thread_size(root: Path, turns: int, max_rows: int, saver_kind: str) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from macsql.core.context import Context
    from macsql.graph.macsql_graph import builder
    from macsql.llm.models import registered_chat_model
    from macsql.memory.persistence import open_persistence
    from macsql.testing.scripted import ScriptedChatModel

    db = _big_db(root / f"big-{saver_kind}.sqlite")
    state_file = root / f"state-{saver_kind}.sqlite"
    context = Context(model="bench-thread", dataset_style="spider", max_rows=max_rows)
    sizes = [1, 5000, 100, 20, 2000, 50, 300]  # rows asked for; the row cap bounds the result
    marks = {1, 10, 50, 100, 150, 200, turns}
    label = "macsql's thread store" if saver_kind == "macsql" else "LangGraph's SqliteSaver"
    print(f"== one thread, {turns} turns, row cap {max_rows}, cells of 400 characters: {label}")
    print(f"{'turn':>6} {'rows':>6} {'checkpoints':>12} {'saved KB':>10}")
    model = ScriptedChatModel(responder=_responder())
    config: dict[str, Any] = {"configurable": {"thread_id": "long"}}
    started = time.perf_counter()
    with registered_chat_model("bench-thread", model):
        if saver_kind == "macsql":
            with open_persistence(str(state_file)) as persistence:
                graph = builder.compile(checkpointer=persistence.checkpointer)
                _ask_all(graph, config, context, db, state_file, turns, sizes, marks)
        else:
            conn = sqlite3.connect(state_file, check_same_thread=False)
            graph = builder.compile(checkpointer=SqliteSaver(conn))
            _ask_all(graph, config, context, db, state_file, turns, sizes, marks)
            conn.close()
    print(f"({time.perf_counter() - started:.1f} s)")


def _ask_all(
    graph: Any,
    config: dict[str, Any],
    context: Any,
    db: str,
    state_file: Path,
    turns: int,
    sizes: list[int],
    marks: set[int],
) -> None:
    for turn in range(1, turns + 1):
        rows = sizes[turn % len(sizes)]
        question = f"Question {turn}: show the first {rows} rows"
        out = graph.invoke({"question": question, "db": db}, config, context=context)
        if out["status"] != "ok":
            raise SystemExit(f"turn {turn} failed: {out.get('error')}")
        if turn in marks:
            count, size = _thread_bytes(state_file, "long")
            print(f"{turn:>6} {len(out['rows']):>6} {count:>12} {size / 1024:>10.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-sparc", action="store_true")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--baseline-turns", type=int, default=50)
    parser.add_argument("--max-rows", type=int, default=100)
    parser.add_argument("--keep", default=None, help="keep the runs and state files here")
    parser.add_argument("--data", default=str(DATA), help="the folder holding sparc/ and spider/")
    args = parser.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="macsql-multiturn-"))
    root.mkdir(parents=True, exist_ok=True)
    if not args.skip_sparc:
        code = sparc_runs(Path(args.data), root)
        if code:
            return code
    thread_size(root, args.turns, args.max_rows, "macsql")
    print()
    thread_size(root, args.baseline_turns, args.max_rows, "langgraph")
    return 0


if __name__ == "__main__":
    sys.exit(main())
