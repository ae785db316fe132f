"""The libraries' floor that the overhead benchmarks compare macsql with: `floor_graph.py`'s
graph runs the same steps as MAC-SQL (a failing first SQL goes through the Refiner and back to
the executor), over the real OpenAI client too, and `floor_serve.py` serves its no-op graph
beside macsql's graphs."""

from __future__ import annotations

import importlib.util
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from macsql.testing.scripted import ScriptedChatModel, ScriptedOpenAIServer

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
GOLD = "SELECT count(*) FROM singer"


def _module(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # LangGraph reads the state's annotations in the module
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "concert" / "concert.sqlite"
    path.parent.mkdir()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE singer (name TEXT)")
        conn.executemany("INSERT INTO singer VALUES (?)", [("a",), ("b",), ("c",)])
    return path


def _fenced(sql: str) -> str:
    return f"SQL\n```sql\n{sql}\n```\nQuestion Solved."


def test_a_failing_first_sql_is_refined_and_run_again(db: Path) -> None:
    floor = _module("floor_graph")
    decomposer = ScriptedChatModel(responder=[_fenced("SELECT nope FROM singer")])
    refiner = ScriptedChatModel(responder=[_fenced(GOLD)])
    out = floor.build_floor_graph(decomposer, refiner).invoke(
        {"question": "How many singers?", "db": str(db)}
    )
    assert (out["sql"], out["rows"], out["error"], out["tries"]) == (GOLD, [(3,)], "", 1)
    assert "[Question] How many singers?" in refiner.prompts[0]
    assert "no such column: nope" in refiner.prompts[0]


def test_the_script_answers_a_questions_file_over_the_openai_client(
    db: Path, tmp_path: Path
) -> None:
    questions = tmp_path / "questions.json"
    questions.write_text('[{"question": "How many singers?", "db_id": "concert"}]')
    replies = {"decomposer": _fenced("SELECT nope FROM singer"), "refiner": _fenced(GOLD)}
    with ScriptedOpenAIServer(replies) as server:
        argv = [sys.executable, str(BENCHMARKS / "floor_graph.py"), "--questions", str(questions)]
        argv += ["--base-url", server.base_url, "--database-dir", str(db.parent.parent)]
        done = subprocess.run([*argv, "--out", str(tmp_path / "run")], capture_output=True)
        assert done.returncode == 0, done.stderr.decode()
        assert server.requests == 2
    assert (tmp_path / "run" / "pred.sql").read_text() == GOLD + "\n"


def test_the_served_floor_graph_sits_beside_macsqls_and_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from macsql.serving import engine

    serve = _module("floor_serve")
    served = engine.graph_paths()
    monkeypatch.setattr(engine, "graph_paths", lambda: serve.with_floor(served))
    graphs = engine.engine_config(None)["graphs"]
    assert graphs == {**served, "floor": serve.FLOOR_GRAPH}
    path, name = graphs["floor"].rsplit(":", 1)
    spec = importlib.util.spec_from_file_location("served_floor", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["served_floor"] = module
    spec.loader.exec_module(module)
    assert getattr(module, name).invoke({"question": "q"}) == {"question": "q", "status": "ok"}
