"""The side-by-side benchmark's server answers both sides alike: macsql's agents by their header,
the official MAC-SQL code's (which sends none) by the shape of its prompts; and its patch of
the official checkout fits, or stops the run."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_official.py"
GOLD = ["SELECT count(*) FROM singer", "SELECT name FROM stadium"]
QUESTIONS = ["How many singers are there?", "Name every stadium."]


def _bench() -> ModuleType:
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_official", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dev(tmp_path: Path) -> Path:
    """Two questions: the first gets a failing first answer (every other one does)."""
    dev = tmp_path / "spider" / "dev.json"
    dev.parent.mkdir()
    items = [
        {"question": q, "query": g, "db_id": "concert_singer"}
        for q, g in zip(QUESTIONS, GOLD, strict=True)
    ]
    dev.write_text(json.dumps(items), encoding="utf-8")
    return dev


# Prompts shaped like the official code's: a worked example first (with its own question and
# schema), then the question asked.
EXAMPLE = "【Schema】\n# Table: example_table\n[\n  (a, a.)\n]\n【Question】\nAn example?\n"
OFFICIAL_SELECTOR = (
    f"Pick the tables.\n{EXAMPLE}【Answer】\n```json\n{{}}\n```\n\n【DB_ID】 concert_singer\n"
    "【Schema】\n# Table: singer\n[\n  (Name, name.)\n]\n# Table: stadium\n[\n  (Name, name.)\n]\n"
    f"【Foreign keys】\n\n【Question】\n{QUESTIONS[1]}\n【Evidence】\n\n【Answer】\n"
)
OFFICIAL_DECOMPOSER = (
    f"Decompose.\n{EXAMPLE}Sub question 1: x\n\n【Database schema】\n# Table: singer\n"
    f"【Foreign keys】\n\n【Question】\n{QUESTIONS[0]}\n【Evidence】\n\n"
    "Decompose the question into sub questions, step by step:\n"
)
OFFICIAL_REFINER = (
    f"【Instruction】\nFix it.\n【Query】\n-- {QUESTIONS[0]}\n【Evidence】\n\n【Database info】\n"
    "# Table: singer\n【old SQL】\n```sql\nSELECT no_such_column FROM singer\n```\n"
    "【SQLite error】 \nno such column\n【correct SQL】\n"
)
# and like macsql's: the question after "[Question]" in the part after "Your task."
MACSQL_DECOMPOSER = f"[Question] An example?\nYour task.\n[Question] {QUESTIONS[0]}\n"


def _sql(reply: str) -> str:
    return reply.split("```sql\n", 1)[1].split("\n```", 1)[0]


def test_official_prompts_are_told_apart_and_answered_like_macsql_ones(tmp_path: Path) -> None:
    replies, calls = _bench().responders(_dev(tmp_path))
    official = replies[""]

    selected = json.loads(official(OFFICIAL_SELECTOR).split("```json\n")[1].split("\n```")[0])
    assert selected == {"singer": "keep_all", "stadium": "keep_all"}
    first = official(OFFICIAL_DECOMPOSER)
    assert first.startswith(f"Sub question 1: {QUESTIONS[0]}\nSQL\n```sql\n")
    assert "no_such_column" in _sql(first) and GOLD[0] in _sql(first)
    assert _sql(official(OFFICIAL_REFINER)) == GOLD[0]
    assert official("Hello world!") == "Hello!"
    assert _sql(replies["decomposer"](MACSQL_DECOMPOSER)) == _sql(first)
    assert calls == {
        ("official", "selector"): 1,
        ("official", "decomposer"): 1,
        ("official", "refiner"): 1,
        ("official", "ping"): 1,
        ("macsql", "decomposer"): 1,
    }


def test_the_question_after_the_wrong_one_is_answered_right_at_once(tmp_path: Path) -> None:
    replies, _ = _bench().responders(_dev(tmp_path))
    second = OFFICIAL_DECOMPOSER.replace(QUESTIONS[0], QUESTIONS[1])
    assert _sql(replies[""](second)) == GOLD[1]


def test_the_server_routes_by_header_and_counts_per_side(tmp_path: Path) -> None:
    _dev(tmp_path)
    env = {**os.environ, "MACSQL_DATA_DIR": str(tmp_path)}
    server = subprocess.Popen(
        [sys.executable, str(BENCH), "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        base_url = server.stdout.readline().strip()  # type: ignore[union-attr]

        def ask(prompt: str, headers: dict[str, str]) -> str:
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]})
            request = urllib.request.Request(
                f"{base_url}/engines/m/chat/completions",
                data=body.encode(),
                headers={"Content-Type": "application/json", **headers},
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                return str(json.load(response)["choices"][0]["message"]["content"])

        official = ask(OFFICIAL_REFINER, {})
        mine = ask(MACSQL_DECOMPOSER, {"X-Macsql-Agent": "refiner"})
        assert _sql(official) == _sql(mine) == GOLD[0]
        server.stdin.write("counts\n")  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]
        counts = json.loads(server.stdout.readline())  # type: ignore[union-attr]
        assert counts == [["macsql", "refiner", 1], ["official", "refiner", 1]]
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=30)


def _checkout(root: Path, api_type: str = "azure") -> Path:
    (root / "core").mkdir(parents=True)
    (root / "run.py").write_text("from tools import *\nimport time\ntime.sleep(3)\n")
    (root / "core" / "agents.py").write_text("time.sleep(0.2)\nx = 1\ntime.sleep(3)\n")
    (root / "core" / "llm.py").write_text("time.sleep(20)\n")
    (root / "core" / "api_config.py").write_text(f'openai.api_type = "{api_type}"\n')
    return root


def test_the_patch_points_the_copy_at_the_server_and_leaves_the_checkout(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "checkout")
    work = _bench().patched_copy(checkout, tmp_path / "runs")
    assert (work / "run.py").read_text() == "from core.utils import *\nimport time\ntime.sleep(0)\n"
    assert (work / "core" / "agents.py").read_text() == "time.sleep(0)\nx = 1\ntime.sleep(0)\n"
    assert (work / "core" / "llm.py").read_text() == "time.sleep(0)\n"
    assert (work / "core" / "api_config.py").read_text() == 'openai.api_type = "open_ai"\n'
    assert (work / "data" / "spider").is_symlink()
    assert (checkout / "core" / "llm.py").read_text() == "time.sleep(20)\n"


def test_a_patch_that_no_longer_fits_stops_the_run(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "checkout", api_type="open_ai")
    with pytest.raises(SystemExit, match=r"api_config\.py"):
        _bench().patched_copy(checkout, tmp_path / "runs")
